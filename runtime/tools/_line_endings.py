"""Line endings as OpenClaw 2026.9.6's file tools treat them.

`read` shows a file with its CRLF line endings as LF (`read_view_line`: a lone CR is kept, a
UTF-8 BOM at the start dropped), so what a model copies from it into `edit`'s `oldText` has LF
where the file has CRLF. `edit` therefore matches on the file's text with every line ending, CRLF or
lone CR, made LF (`normalize_to_lf`, applied to `oldText` and `newText` too), and writes the
result back with the endings the file had (`restore_line_endings`): each line that was there
keeps its own; a line the replacement adds takes the ending of the lines it replaced, the last
ones first, or that of the line it sits on, or of the line before, or the file's first (CRLF
when the file's first line break is one, else LF). Nothing of a file's own endings changes
outside what the replacement touches, whatever mix it has.

These are OpenClaw's rules (`line-endings.ts`, `edit-replacements.ts`), in our own code. Offsets
are in code points here and in UTF-16 units there; each is used only within one string, so
the results are the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = [
    "BOM",
    "Replacement",
    "detect_line_ending",
    "normalize_to_lf",
    "read_view_line",
    "restore_line_endings",
    "splice",
]

BOM: Final = "\ufeff"
_UTF8_BOM: Final = BOM.encode()

_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
"""A line of the file with its ending, CRLF, CR or LF (the last one may have none)."""
_LF_LINE: Final = re.compile(r"[^\n]*\n|[^\n]+")
"""A line of LF-normalized text with its LF."""


def read_view_line(line: bytes, *, first: bool) -> bytes:
    """One line of a UTF-8 file, up to and with its LF, as `read` shows it: CRLF as LF (a lone
    CR kept), and on the `first` line no BOM."""
    if first:
        line = line.removeprefix(_UTF8_BOM)
    return line[:-2] + b"\n" if line.endswith(b"\r\n") else line


def normalize_to_lf(text: str) -> str:
    """`text` with every line ending, CRLF or a lone CR, made LF: what `edit` matches on."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def detect_line_ending(content: str) -> str:
    """The file's own line ending: CRLF when its first line break is one, else LF."""
    lf = content.find("\n")
    crlf = content.find("\r\n")
    return "\r\n" if lf != -1 and crlf != -1 and crlf < lf else "\n"


class Replacement(NamedTuple):
    """`length` characters at `start` of the normalized text replaced by `new_text` (LF)."""

    start: int
    length: int
    new_text: str


class _Span(NamedTuple):
    start: int
    end: int


class _Group(NamedTuple):
    """Lines `first` to `last` (exclusive) of the normalized text, touched by `replacements`."""

    first: int
    last: int
    replacements: list[Replacement]


def _ending(line: str | None) -> str | None:
    if line is None:
        return None
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return None


def _restore(normalized: str, sources: Sequence[str], fallback: str) -> str:
    """`normalized` with its n-th LF made the ending of `sources[n]` (past the end, the last
    source's); `fallback` where that line has none."""
    parts = normalized.split("\n")
    out = [parts[0]]
    for n, part in enumerate(parts[1:]):
        source = sources[n] if n < len(sources) else (sources[-1] if sources else None)
        out.append(_ending(source) or fallback)
        out.append(part)
    return "".join(out)


def _line_range(lines: Sequence[_Span], start: int, end: int) -> tuple[int, int]:
    """The lines (first, last exclusive) that the span `start`..`end` touches."""
    lower, upper = 0, len(lines)
    while lower < upper:
        middle = (lower + upper) // 2
        if lines[middle].end <= start:
            lower = middle + 1
        else:
            upper = middle
    if lower >= len(lines) or start < lines[lower].start:
        raise ValueError("Replacement range is outside the base content.")
    last = lower
    while last < len(lines) and lines[last].end < end:
        last += 1
    if last >= len(lines):
        raise ValueError("Replacement range is outside the base content.")
    return lower, last + 1


def _spans(normalized: str) -> list[_Span]:
    return [_Span(m.start(), m.end()) for m in _LF_LINE.finditer(normalized)]


def _groups(lines: Sequence[_Span], replacements: Sequence[Replacement]) -> list[_Group]:
    """The replacements, in order, grouped by the lines they touch (overlapping ranges merge)."""
    groups: list[_Group] = []
    for replacement in sorted(replacements, key=lambda r: r.start):
        first, last = _line_range(lines, replacement.start, replacement.start + replacement.length)
        if groups and first < groups[-1].last:
            current = groups[-1]
            groups[-1] = _Group(current.first, max(current.last, last), current.replacements)
            current.replacements.append(replacement)
        else:
            groups.append(_Group(first, last, [replacement]))
    return groups


def splice(text: str, replacements: Sequence[Replacement]) -> str:
    """`text` with `replacements` (in order, not overlapping) made."""
    parts: list[str] = []
    cursor = 0
    for replacement in replacements:
        parts += (text[cursor : replacement.start], replacement.new_text)
        cursor = replacement.start + replacement.length
    parts.append(text[cursor:])
    return "".join(parts)


def restore_line_endings(
    original: str, normalized: str, replacements: Sequence[Replacement]
) -> str:
    """`original` with `replacements` (found in `normalized`, its `normalize_to_lf`) made,
    every line keeping the ending it had (see the module docstring). Raises ValueError when a
    replacement lies outside `normalized` or `normalized` is not `original`'s."""
    source = _LINE.findall(original)
    lines = _spans(normalized)
    if len(source) != len(lines):
        raise ValueError(
            "Cannot preserve original line endings because the base content has a "
            "different line count."
        )
    file_ending = detect_line_ending(original)
    out: list[str] = []
    done = 0
    for group in _groups(lines, replacements):
        out += source[done : group.first]
        start = lines[group.first].start
        text = normalized[start : lines[group.last - 1].end]
        sources = source[group.first : group.last]
        fallback = _fallback(source, group.first, file_ending)
        restored = [
            _restored_replacement(r, start, text, sources, fallback, source, lines, file_ending)
            for r in group.replacements
        ]
        out.append(splice(_restore(text, sources, fallback), restored))
        done = group.last
    out += source[done:]
    final = "".join(out)
    if normalize_to_lf(final) != splice(normalized, sorted(replacements, key=lambda r: r.start)):
        raise ValueError("Line-ending restoration changed the normalized edit result.")
    return final


def _fallback(source: Sequence[str], first: int, file_ending: str) -> str:
    """The ending for a line with none, among the lines from `first`: that line's, else the
    line before's, else the file's."""
    before = source[first - 1] if first > 0 else None
    here = source[first] if first < len(source) else None
    return _ending(here) or _ending(before) or file_ending


def _restored_replacement(
    replacement: Replacement,
    start: int,
    text: str,
    sources: Sequence[str],
    fallback: str,
    source: Sequence[str],
    lines: Sequence[_Span],
    file_ending: str,
) -> Replacement:
    """`replacement` placed in its group's restored text (which begins at `start` of the
    normalized text and is `text` there), its new text given the endings of what it replaces."""
    relative = replacement.start - start
    relative_end = relative + replacement.length
    at = len(_restore(text[:relative], sources, fallback))
    to = len(_restore(text[:relative_end], sources, fallback))
    first, last = _line_range(lines, replacement.start, replacement.start + replacement.length)
    replaced = source[first:last]
    own_fallback = _fallback(source, first, file_ending)
    consumed = text.count("\n", relative, relative_end)
    endings = replaced[:consumed] if consumed > 0 else replaced[:1]
    skip = max(0, len(endings) - replacement.new_text.count("\n"))
    new_text = _restore(replacement.new_text, endings[skip:], own_fallback)
    return Replacement(at, to - at, new_text)
