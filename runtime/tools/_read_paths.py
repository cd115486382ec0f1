"""How OpenClaw 2026.9.6's file tools name and find the file a model asked for.

- `missing_path`: its required-parameter message for a blank `path` ("Missing required
  parameter: path (received: path=<empty-string>, content). Supply correct parameters before
  retrying."), the arguments received listed in its schema's order;
- `absolute`: the path as its messages name it (against the workspace, lexically resolved);
- `name_variants`: the spellings `read` tries when a file is missing (Unicode spaces as ASCII
  spaces, a macOS screenshot's narrow no-break space before AM/PM, straight and curly
  quotes, NFC and NFD): one that exists is read with "[Resolved filename: a -> b.]" first;
- `suggestions`: " Did you mean: a, b?" after "File not found: ...", up to three names in the
  same directory within 40% of the name's length in edits (case ignored), the nearest first.

Pure but for `suggestions`, which lists a directory.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any, Final

from ._edit_match import js_trim
from ._js_text import units

__all__ = ["absolute", "missing_path", "name_variants", "suggestions"]

_UNICODE_SPACES: Final = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_SCREENSHOT_SPACE: Final = re.compile(r" (?=(?:AM|PM)(?:\b|\.))", re.IGNORECASE | re.ASCII)


def missing_path(received: dict[str, Any], allow_empty: frozenset[str]) -> str | None:
    """OpenClaw's message when `path` is blank (None when it is not); `received` the
    arguments given, in order, `allow_empty` the string ones that may be empty."""
    if js_trim(received.get("path") or ""):
        return None
    shown = []
    for key, value in received.items():
        if value is None:
            continue
        if isinstance(value, str):
            blank = key not in allow_empty and not js_trim(value)
            shown.append(f"{key}=<empty-string>" if blank else key)
        elif isinstance(value, list):
            shown.append(f"{key}=<array>")
        else:
            kind = "boolean" if isinstance(value, bool) else "number"
            shown.append(f"{key}=<{kind}>")
    hint = f" (received: {', '.join(shown)})" if shown else ""
    return f"Missing required parameter: path{hint}. Supply correct parameters before retrying."


def absolute(workspace: Path, path: str) -> str:
    """The path as OpenClaw names it in messages: absolute, lexically resolved."""
    expanded = os.path.expanduser(path) if path == "~" or path.startswith("~/") else path
    return os.path.normpath(os.path.join(workspace, expanded))


def name_variants(path: str) -> list[str]:
    """Other spellings of `path`'s last component worth trying, in OpenClaw's order."""
    name = os.path.basename(path)
    parent = path[: len(path) - len(name)]
    spaced = _UNICODE_SPACES.sub(" ", name)
    found: dict[str, None] = {}
    for variant in (spaced, _SCREENSHOT_SPACE.sub("\u202f", spaced)):
        straight = re.sub("[\u2018\u2019]", "'", variant)
        curly = re.sub("['\u2018]", "\u2019", variant)
        for quoted in (straight, curly):
            found[parent + unicodedata.normalize("NFC", quoted)] = None
            found[parent + unicodedata.normalize("NFD", quoted)] = None
    found.pop(path, None)
    return list(found)


def suggestions(real: Path) -> str:
    """OpenClaw's " Did you mean: a, b?" for a missing file ("" when nothing is near)."""
    try:
        entries = os.listdir(real.parent)
    except OSError:
        return ""
    wanted = real.name.lower()
    most = max(1, len(units(wanted)) * 2 // 5)
    near = sorted(
        (distance, name.lower(), name)
        for name in entries
        if name != real.name and (distance := _edits(wanted, name.lower())) <= most
    )
    names = [name for _, _, name in near[:3]]
    return f" Did you mean: {', '.join(names)}?" if names else ""


def _edits(a: str, b: str) -> int:
    """Levenshtein distance over UTF-16 units."""
    a, b = units(a), units(b)
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
