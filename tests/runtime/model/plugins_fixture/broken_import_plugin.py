"""A plugin whose module fails while it is imported."""

from __future__ import annotations

raise RuntimeError("broken_import_plugin cannot be imported")
