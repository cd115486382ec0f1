"""Line diffs as OpenClaw 2026.9.6's file tools report them.

OpenClaw's `edit` (and `write`) put two renderings of a change in a result's details: `patch`,
a unified diff with file headers only (`--- path` / `+++ path`, hunks of 4 context lines), and
`diff`, its terminal view: one line per changed or context line, `+12 text` / `-12 text` /
` 12 text` with the line number padded to the width of the longer file's line count, and
` ... ` rows where unchanged lines are left out. Both come from the `diff` npm package (jsdiff
9), whose line diff is Myers' algorithm with its own choices among equally short scripts;
another algorithm would describe the same change with other hunks. So `diff_lines` follows
jsdiff's search step for step (its diagonals, the preference for a removal over an insertion
when both reach as far, the pruning at the graph's edges), in our own code.

Lines are split after each LF or CRLF, the line break belonging to the line; equal lines are
equal strings. Everything here is pure and allocation-bounded by the inputs' line counts
(`max_edit_length` caps the search where a caller wants a cheap give-up).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = [
    "Change",
    "DiffHunk",
    "diff_lines",
    "display_diff",
    "format_patch",
    "structured_patch",
    "unified_patch",
]

CONTEXT_LINES: Final = 4
_NO_NEWLINE: Final = "\\ No newline at end of file"
_BREAK: Final = re.compile(r"(\n|\r\n)")


class Change(NamedTuple):
    """A run of lines kept, added or removed, as jsdiff's change objects."""

    value: str
    lines: int
    added: bool
    removed: bool


class DiffHunk(NamedTuple):
    """One hunk of a unified diff: lines prefixed ` `, `-`, `+` (or the no-newline marker)."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: tuple[str, ...]


def _tokenize(text: str) -> list[str]:
    """Lines with their breaks; no empty token (jsdiff's line tokenizer, then removeEmpty)."""
    parts = _BREAK.split(text)
    if not parts[-1]:
        parts.pop()
    lines: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            lines[-1] += part
        else:
            lines.append(part)
    return [line for line in lines if line]


class _Component(NamedTuple):
    size: int
    added: bool
    removed: bool
    previous: _Component | None


class _Path:
    __slots__ = ("last", "old_pos")

    def __init__(self, old_pos: int, last: _Component | None) -> None:
        self.old_pos = old_pos
        self.last = last


def _extend(path: _Path, added: bool, removed: bool, step: int) -> _Path:
    last = path.last
    if last is not None and last.added == added and last.removed == removed:
        return _Path(path.old_pos + step, _Component(last.size + 1, added, removed, last.previous))
    return _Path(path.old_pos + step, _Component(1, added, removed, last))


def _follow_snake(path: _Path, new: Sequence[str], old: Sequence[str], diagonal: int) -> int:
    """Walk `path` down its diagonal over equal lines; returns its new position."""
    old_pos = path.old_pos
    new_pos = old_pos - diagonal
    common = 0
    while (
        new_pos + 1 < len(new) and old_pos + 1 < len(old) and old[old_pos + 1] == new[new_pos + 1]
    ):
        new_pos += 1
        old_pos += 1
        common += 1
    if common:
        path.last = _Component(common, False, False, path.last)
    path.old_pos = old_pos
    return new_pos


def _changes(last: _Component | None, new: Sequence[str], old: Sequence[str]) -> list[Change]:
    components: list[_Component] = []
    while last is not None:
        components.append(last)
        last = last.previous
    components.reverse()
    out: list[Change] = []
    new_pos = old_pos = 0
    for component in components:
        if component.removed:
            value = "".join(old[old_pos : old_pos + component.size])
            old_pos += component.size
        else:
            value = "".join(new[new_pos : new_pos + component.size])
            new_pos += component.size
            if not component.added:
                old_pos += component.size
        out.append(Change(value, component.size, component.added, component.removed))
    return out


def diff_lines(old: str, new: str, *, max_edit_length: int | None = None) -> list[Change] | None:
    """The changes turning `old` into `new`, line by line, as jsdiff's `diffLines` gives
    them; None when more than `max_edit_length` lines would have to change."""
    old_tokens, new_tokens = _tokenize(old), _tokenize(new)
    old_len, new_len = len(old_tokens), len(new_tokens)
    most = old_len + new_len if max_edit_length is None else min(old_len + new_len, max_edit_length)
    best: dict[int, _Path | None] = {0: _Path(-1, None)}
    start = best[0]
    assert start is not None
    new_pos = _follow_snake(start, new_tokens, old_tokens, 0)
    if start.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
        return _changes(start.last, new_tokens, old_tokens)
    lowest, highest = -(old_len + new_len + 2), old_len + new_len + 2  # the graph's edges
    edit_length = 1
    while edit_length <= most:
        for diagonal in range(max(lowest, -edit_length), min(highest, edit_length) + 1, 2):
            remove, add = best.get(diagonal - 1), best.get(diagonal + 1)
            if remove is not None:
                best[diagonal - 1] = None
            can_add = add is not None and 0 <= add.old_pos - diagonal < new_len
            can_remove = remove is not None and remove.old_pos + 1 < old_len
            if not can_add and not can_remove:
                best[diagonal] = None
                continue
            # From the path that got further into `old`; a removal when both got as far.
            if (
                add is not None
                and can_add
                and (remove is None or not can_remove or remove.old_pos < add.old_pos)
            ):
                path = _extend(add, True, False, 0)
            else:
                assert remove is not None
                path = _extend(remove, False, True, 1)
            new_pos = _follow_snake(path, new_tokens, old_tokens, diagonal)
            if path.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
                return _changes(path.last, new_tokens, old_tokens)
            best[diagonal] = path
            if path.old_pos + 1 >= old_len:
                highest = min(highest, diagonal - 1)
            if new_pos + 1 >= new_len:
                lowest = max(lowest, diagonal + 1)
        edit_length += 1
    return None


def _split_lines(text: str) -> list[str]:
    """`text`'s lines, each keeping its LF (jsdiff's patch splitter)."""
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def structured_patch(
    old: str, new: str, *, context: int = CONTEXT_LINES, max_edit_length: int | None = None
) -> list[DiffHunk] | None:
    """The hunks of a unified diff of `old` to `new` (jsdiff's `structuredPatch`); None when
    the diff gave up (`max_edit_length`)."""
    changes = diff_lines(old, new, max_edit_length=max_edit_length)
    if changes is None:
        return None
    runs = [(_split_lines(c.value), c.added, c.removed) for c in changes]
    runs.append(([], False, False))
    hunks: list[DiffHunk] = []
    old_start = new_start = 0
    current: list[str] = []
    old_line = new_line = 1
    for index, (lines, added, removed) in enumerate(runs):
        if added or removed:
            if not old_start:
                old_start, new_start = old_line, new_line
                if index > 0:
                    before = runs[index - 1][0][-context:] if context > 0 else []
                    current = [" " + line for line in before]
                    old_start -= len(current)
                    new_start -= len(current)
            current += [("+" if added else "-") + line for line in lines]
            if added:
                new_line += len(lines)
            else:
                old_line += len(lines)
            continue
        if old_start:
            if len(lines) <= context * 2 and index < len(runs) - 2:
                current += [" " + line for line in lines]
            else:
                size = min(len(lines), context)
                current += [" " + line for line in lines[:size]]
                hunks.append(
                    DiffHunk(
                        old_start,
                        old_line - old_start + size,
                        new_start,
                        new_line - new_start + size,
                        _mark_line_ends(current),
                    )
                )
                old_start = new_start = 0
                current = []
        old_line += len(lines)
        new_line += len(lines)
    return hunks


def _mark_line_ends(lines: list[str]) -> tuple[str, ...]:
    """Each line without its LF; one that had none is followed by the no-newline marker."""
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line[:-1])
        else:
            out += (line, _NO_NEWLINE)
    return tuple(out)


def _quoted_name(name: str) -> str:
    """A file name as Git and GNU diff quote one that needs it (C escapes, UTF-8 octal)."""
    if not any(c < " " or c > "~" or c in '"\\' for c in name):
        return name
    escapes = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}
    escapes |= {0x22: '\\"', 0x5C: "\\\\"}
    out = ['"']
    for byte in name.encode("utf-8", "replace"):
        if byte in escapes:
            out.append(escapes[byte])
        elif 0x20 <= byte <= 0x7E:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def format_patch(path: str, hunks: Sequence[DiffHunk]) -> str:
    """A unified diff of one file with file headers only, as OpenClaw writes `patch`."""
    name = _quoted_name(path)
    out = [f"--- {name}", f"+++ {name}"]
    for hunk in hunks:
        old_start = hunk.old_start - 1 if hunk.old_lines == 0 else hunk.old_start
        new_start = hunk.new_start - 1 if hunk.new_lines == 0 else hunk.new_start
        out.append(f"@@ -{old_start},{hunk.old_lines} +{new_start},{hunk.new_lines} @@")
        out += hunk.lines
    return "\n".join(out) + "\n"


def unified_patch(path: str, old: str, new: str) -> str:
    """`format_patch` of the whole diff of `old` to `new`."""
    hunks = structured_patch(old, new)
    assert hunks is not None  # no edit-length cap
    return format_patch(path, hunks)


def display_diff(
    old: str, new: str, hunks: Sequence[DiffHunk] | None = None
) -> tuple[str, int | None]:
    """The numbered diff view OpenClaw shows (`diff` in a result's details) and the first
    changed line of the new text (None when nothing changed). `hunks` are `structured_patch`
    of the same texts when the caller has them already."""
    if hunks is None:
        hunks = structured_patch(old, new)
        assert hunks is not None
    old_count, new_count = old.count("\n") + 1, new.count("\n") + 1
    last_new = 0 if new == "" else new_count - int(new.endswith("\n"))
    width = len(str(max(old_count, new_count)))
    ellipsis = f" {'':>{width}} ..."
    out: list[str] = []
    first: int | None = None
    for index, hunk in enumerate(hunks):
        if index > 0 or hunk.new_start > 1:
            out.append(ellipsis)
        old_number, new_number = hunk.old_start, hunk.new_start
        for line in hunk.lines:
            prefix = line[:1]
            if prefix == "\\":
                continue
            if first is None and prefix != " ":
                first = new_number
            number = old_number if prefix == "-" else new_number
            out.append(f"{prefix}{number:>{width}} {line[1:]}")
            old_number += 0 if prefix == "+" else 1
            new_number += 0 if prefix == "-" else 1
        if index == len(hunks) - 1 and hunk.new_start + hunk.new_lines <= last_new:
            out.append(ellipsis)
    return "\n".join(out), first
