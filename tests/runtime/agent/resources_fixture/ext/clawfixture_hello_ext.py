"""Fixture extension module (listed, never loaded by the resource discovery)."""

NAME = "hello"
