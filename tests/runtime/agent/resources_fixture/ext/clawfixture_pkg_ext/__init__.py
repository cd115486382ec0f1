"""Fixture extension package (listed, never loaded by the resource discovery)."""

NAME = "pkg"
