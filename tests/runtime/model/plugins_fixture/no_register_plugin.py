"""A module that is not a plugin: it has no register()."""

from __future__ import annotations

VALUE = 1
