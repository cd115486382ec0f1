"""What OpenClaw 2026.9.6's `write` tool says about a write: its result text and details.

A write whose bytes equal the file's is not made: "No changes made to <path>. The file already
has identical content." with details `{changed: false}`. Otherwise the result is "Successfully
wrote <N> bytes to <path>" (N the content's UTF-8 bytes, the path as the model gave it), with
details:

- a new file: `{changed: true, created: true, diff, patch, firstChangedLine}`, the diff from
  nothing (left out, `{changed, created}` only, past 20 000 line breaks);
- a file replaced: `{changed: true, created: false, diff, patch, firstChangedLine}` when its
  old text is known and small enough to diff: read (at most 1 MiB), valid UTF-8 without NUL
  (no U+FFFD or NUL in the decoded text), old and new together at most 1 MiB and 20 000 line
  breaks, and the line diff needing at most 2 000 changed lines; else `{changed: true,
  created: false}`;
- content over 1 MiB: `{changed: true, created}` without a diff.

`patch` is a unified diff with file headers only, 4 context lines; `diff` its numbered view
(`_line_diff`), both of the texts as they are (a BOM, CRLF kept). `firstChangedLine` is left
out when the diff shows no change line. Pure functions; the caller reads and writes the file.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final

from ._line_diff import display_diff, format_patch, structured_patch

__all__ = [
    "WRITE_DIFF_MAX_COMBINED_LINES",
    "WRITE_DIFF_MAX_EDIT_LENGTH",
    "WRITE_PRECHECK_READ_LIMIT_BYTES",
    "js_utf8",
    "unchanged_text",
    "write_details",
    "written_text",
]

WRITE_PRECHECK_READ_LIMIT_BYTES: Final = 1024 * 1024
WRITE_DIFF_MAX_COMBINED_LINES: Final = 20_000
WRITE_DIFF_MAX_EDIT_LENGTH: Final = 2_000

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def js_utf8(text: str) -> bytes:
    """`text` in UTF-8 as Node writes a string: a lone surrogate as U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text.encode("utf-8")
    units = text.encode("utf-16-le", "surrogatepass")
    return units.decode("utf-16-le", "replace").encode("utf-8")


def unchanged_text(path: str) -> str:
    return f"No changes made to {path}. The file already has identical content."


def written_text(path: str, data: bytes) -> str:
    return f"Successfully wrote {len(data)} bytes to {path}"


_LINE: Final = re.compile(r"[^\n]*\n|[^\n]+\Z")


def _surely_too_long(before: str, content: str) -> bool:
    """Whether the line diff must change more than `WRITE_DIFF_MAX_EDIT_LENGTH` lines: at
    least every line not matched by an equal line of the other text (a cheap bound; the diff
    would give up only after searching that far)."""
    old, new = Counter(_LINE.findall(before)), Counter(_LINE.findall(content))
    kept = sum((old & new).values())
    return old.total() + new.total() - 2 * kept > WRITE_DIFF_MAX_EDIT_LENGTH


def _diff_details(path: str, before: str, content: str, created: bool) -> dict[str, Any] | None:
    if not created and _surely_too_long(before, content):
        return None
    hunks = structured_patch(
        before, content, max_edit_length=None if created else WRITE_DIFF_MAX_EDIT_LENGTH
    )
    if hunks is None:
        return None
    diff, first = display_diff(before, content, hunks)
    details: dict[str, Any] = {
        "changed": True,
        "created": created,
        "diff": diff,
        "patch": format_patch(path, hunks),
    }
    if first is not None:
        details["firstChangedLine"] = first
    return details


def write_details(
    path: str, content: str, data: bytes, *, existed: bool, before: bytes | None
) -> dict[str, Any]:
    """The details of writing `content` (`data`, its bytes) to `path`: a file that `existed`
    and held `before` (None when it was not read: over `WRITE_PRECHECK_READ_LIMIT_BYTES`), or
    a new file."""
    if len(data) > WRITE_PRECHECK_READ_LIMIT_BYTES:
        return {"changed": True, "created": not existed}
    if not existed:
        if content.count("\n") > WRITE_DIFF_MAX_COMBINED_LINES:
            return {"changed": True, "created": True}
        details = _diff_details(path, "", content, created=True)
        assert details is not None  # no edit-length cap
        return details
    if before is None:
        return {"changed": True, "created": False}
    old = before.decode("utf-8", errors="replace")
    if (
        "\ufffd" not in old
        and "\0" not in old
        and len(before) + len(data) <= WRITE_PRECHECK_READ_LIMIT_BYTES
        and old.count("\n") + content.count("\n") <= WRITE_DIFF_MAX_COMBINED_LINES
    ):
        details = _diff_details(path, old, content, created=False)
        if details is not None:
            return details
    return {"changed": True, "created": False}
