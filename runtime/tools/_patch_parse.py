"""Parsing `apply_patch`'s envelope as OpenClaw 2026.9.6 parses it (its parsePatchText).

The input (OpenClaw's format, from OpenAI's) is::

    *** Begin Patch
    *** Add File: path          then its lines, each starting with "+"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ optional context line    then hunk lines: " " context, "-" removed, "+" added;
                                "*** End of File" anchors a hunk at the end
    *** End Patch

(a `<<EOF` ... `EOF` heredoc around it is tolerated). `parse_patch` turns it into `FileOp`s
or raises `PatchError` with OpenClaw's words, naming the line. Whitespace is trimmed as
JavaScript's `trim` trims (`js_trim`), since that is what OpenClaw's parser does.
"""

from __future__ import annotations

import re
from typing import Final

from attrs import frozen

from ._errors import PatchError

__all__ = ["BEGIN", "END", "FileOp", "Hunk", "js_trim", "parse_patch"]

BEGIN: Final = "*** Begin Patch"
END: Final = "*** End Patch"
_ADD: Final = "*** Add File: "
_DELETE: Final = "*** Delete File: "
_UPDATE: Final = "*** Update File: "
_MOVE: Final = "*** Move to: "
_EOF: Final = "*** End of File"
_HEREDOCS: Final = ("<<EOF", "<<'EOF'", '<<"EOF"')

JS_SPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's `String.prototype.trim` removes (Python's `strip` differs: it also
removes U+001C..U+001F and U+0085, and keeps U+FEFF)."""


def js_trim(text: str) -> str:
    return text.strip(JS_SPACE)


@frozen
class Hunk:
    """One `@@` hunk of an update: its context line, the lines it expects and writes, which
    new lines are context (index into `old`), and whether it is anchored at the end."""

    context: str | None
    old: tuple[str, ...]
    new: tuple[str, ...]
    context_old: tuple[int | None, ...]
    at_end: bool


@frozen
class FileOp:
    """One file operation of a patch: `add` (with `contents`), `delete`, or `update` (with
    `hunks` and an optional `move_to`)."""

    kind: str
    path: str
    contents: str = ""
    hunks: tuple[Hunk, ...] = ()
    move_to: str | None = None


def parse_patch(text: str) -> list[FileOp]:
    """The operations of a patch envelope, in order. Raises `PatchError` naming the line."""
    trimmed = js_trim(text)
    if not trimmed:
        raise PatchError("Invalid patch: input is empty.")
    lines = _envelope(re.split(r"\r?\n", trimmed))
    ops: list[FileOp] = []
    rest = lines[1:-1]
    lineno = 2
    while rest:
        op, used = _one_op(rest, lineno)
        ops.append(op)
        lineno += used
        rest = rest[used:]
    return ops


def _boundary_error(lines: list[str]) -> str | None:
    first, last = js_trim(lines[0]), js_trim(lines[-1])
    if first == BEGIN and last == END:
        return None
    if first != BEGIN:
        return f"The first line of the patch must be '{BEGIN}'"
    return f"The last line of the patch must be '{END}'"


def _envelope(lines: list[str]) -> list[str]:
    error = _boundary_error(lines)
    if error is None:
        return lines
    if len(lines) >= 4 and lines[0] in _HEREDOCS and lines[-1].endswith("EOF"):
        inner = lines[1:-1]
        inner_error = _boundary_error(inner)
        if inner_error is None:
            return inner
        raise PatchError(inner_error)
    raise PatchError(error)


def _one_op(lines: list[str], lineno: int) -> tuple[FileOp, int]:
    first = js_trim(lines[0])
    if first.startswith(_ADD):
        used = 1
        contents: list[str] = []
        for line in lines[1:]:
            if not line.startswith("+"):
                break
            contents.append(line[1:] + "\n")
            used += 1
        return FileOp("add", first[len(_ADD) :], contents="".join(contents)), used
    if first.startswith(_DELETE):
        return FileOp("delete", first[len(_DELETE) :]), 1
    if first.startswith(_UPDATE):
        return _update_op(lines, lineno, first[len(_UPDATE) :])
    raise PatchError(
        f"Invalid patch hunk at line {lineno}: '{lines[0]}' is not a valid hunk header. "
        "Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', "
        "'*** Update File: {path}'"
    )


def _update_op(lines: list[str], lineno: int, path: str) -> tuple[FileOp, int]:
    rest = lines[1:]
    used = 1
    move_to = None
    if rest and js_trim(rest[0]).startswith(_MOVE):
        move_to = js_trim(rest[0])[len(_MOVE) :]
        rest, used = rest[1:], used + 1
    hunks: list[Hunk] = []
    while rest:
        if not js_trim(rest[0]):
            rest, used = rest[1:], used + 1
            continue
        if rest[0].startswith("***"):
            break
        hunk, n = _one_hunk(rest, lineno + used, first=not hunks)
        hunks.append(hunk)
        rest, used = rest[n:], used + n
    if not hunks:
        raise PatchError(
            f"Invalid patch hunk at line {lineno}: Update file hunk for path '{path}' is empty"
        )
    return FileOp("update", path, hunks=tuple(hunks), move_to=move_to), used


def _no_lines(lineno: int) -> PatchError:
    return PatchError(
        f"Invalid patch hunk at line {lineno}: Update hunk does not contain any lines"
    )


def _one_hunk(lines: list[str], lineno: int, *, first: bool) -> tuple[Hunk, int]:
    context: str | None = None
    start = 0
    if lines[0] == "@@":
        start = 1
    elif lines[0].startswith("@@ "):
        context, start = lines[0][3:], 1
    elif not first:
        raise PatchError(
            f"Invalid patch hunk at line {lineno}: Expected update hunk to start with a @@ "
            f"context marker, got: '{lines[0]}'"
        )
    if start >= len(lines):
        raise _no_lines(lineno + 1)
    old: list[str] = []
    new: list[str] = []
    context_old: list[int | None] = []
    at_end = False
    parsed = 0
    for line in lines[start:]:
        if line == _EOF:
            if parsed == 0:
                raise _no_lines(lineno + 1)
            at_end = True
            parsed += 1
            break
        marker, body = line[:1], line[1:]
        if marker in ("", " "):
            context_old.append(len(old))
            old.append(body)
            new.append(body)
        elif marker == "+":
            context_old.append(None)
            new.append(body)
        elif marker == "-":
            old.append(body)
        elif parsed == 0:
            raise PatchError(
                f"Invalid patch hunk at line {lineno + 1}: Unexpected line found in update "
                f"hunk: '{line}'. Every line should start with ' ' (context line), '+' (added "
                "line), or '-' (removed line)"
            )
        else:
            break
        parsed += 1
    return Hunk(context, tuple(old), tuple(new), tuple(context_old), at_end), parsed + start
