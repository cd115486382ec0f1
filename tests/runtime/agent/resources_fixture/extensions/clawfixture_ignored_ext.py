"""Conventional-folder extension: ignored while package.json lists extensions."""

NAME = "ignored"
