"""Applying an update's hunks to a file's text as OpenClaw 2026.9.6 does (its
apply-patch-update: computeReplacements, seekSequence, buildChangedLines).

Each hunk's `@@` context line, then its old lines, are looked for from where the previous hunk
ended: exactly, then ignoring trailing space, then surrounding space, then with Unicode
dashes, quotes and spaces read as ASCII (the first of these ways that finds anything decides:
one place, or a `Found N occurrences` error). A hunk whose old lines end with a blank line is
tried again without it. The file's line endings (CRLF, LF, CR, none at the end) and BOM are
kept: a changed line takes the ending of the line it replaces or of its neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from attrs import define

from ._errors import PatchError
from ._patch_parse import JS_SPACE, Hunk

__all__ = ["same_text", "update_text"]

_PUNCTUATION = str.maketrans(
    {
        **{chr(c): "-" for c in (*range(0x2010, 0x2016), 0x2212)},
        **{chr(c): "'" for c in range(0x2018, 0x201C)},
        **{chr(c): '"' for c in range(0x201C, 0x2020)},
        **{chr(c): " " for c in (0x00A0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000)},
    }
)
_NORMALIZERS: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    lambda s: s.rstrip(JS_SPACE),
    lambda s: s.strip(JS_SPACE),
    lambda s: s.strip(JS_SPACE).translate(_PUNCTUATION),
)


def _seek(lines: list[str], pattern: tuple[str, ...], start: int, at_end: bool) -> int | str:
    """Index of `pattern` in `lines` from `start`: an int, or "missing" / "N" (ambiguous)."""
    if not pattern:
        return start
    last = len(lines) - len(pattern)
    begin = max(start, last) if at_end else start
    if last < 0 or begin > last:
        return "missing"
    for norm in _NORMALIZERS:
        want = [norm(p) for p in pattern]
        found = [
            i
            for i in range(begin, last + 1)
            if all(norm(lines[i + k]) == want[k] for k in range(len(want)))
        ]
        if len(found) == 1:
            return found[0]
        if found:
            return str(len(found))
    return "missing"


@define
class _Line:
    text: str
    ending: str


def _split_source(contents: str) -> tuple[str, list[_Line]]:
    bom = "\ufeff" if contents.startswith("\ufeff") else ""
    lines = []
    for m in re.finditer(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", contents[len(bom) :]):
        raw = m.group(0)
        for ending in ("\r\n", "\r", "\n"):
            if raw.endswith(ending):
                lines.append(_Line(raw[: -len(ending)], ending))
                break
        else:
            lines.append(_Line(raw, ""))
    return bom, lines


def _at(lines: list[_Line], index: int) -> str:
    """The ending of `lines.at(index)` in JavaScript (negative from the end; "" if none)."""
    return lines[index].ending if -len(lines) <= index < len(lines) else ""


def _changed(
    source: list[_Line], start: int, old_count: int, new: tuple[str, ...], preferred: str
) -> list[_Line]:
    replaced = source[start : start + old_count]
    nearby = (
        next((line.ending for line in replaced if line.ending), "")
        or _at(source, start)
        or _at(source, start - 1)
        or preferred
    )
    out = []
    for i, text in enumerate(new):
        ending = nearby
        if len(replaced) == len(new):
            ending = replaced[i].ending
        elif i == len(new) - 1 and replaced:
            ending = replaced[-1].ending
        elif i < len(replaced) - 1:
            ending = replaced[i].ending
        out.append(_Line(text, ending))
    return out


def _hunk_lines(
    source: list[_Line], at: int, old: tuple[str, ...], new: tuple[str, ...], hunk: Hunk
) -> list[_Line]:
    """The new lines of a matched hunk: context lines kept from the file as they are."""
    preferred = next((line.ending for line in source if line.ending), "\n")
    out: list[_Line] = []
    old_start = new_start = 0
    for new_i, old_i in enumerate(hunk.context_old):
        if old_i is None or old_i >= len(old) or new_i >= len(new):
            continue
        out += _changed(source, at + old_start, old_i - old_start, new[new_start:new_i], preferred)
        out.append(source[at + old_i])
        old_start, new_start = old_i + 1, new_i + 1
    out += _changed(source, at + old_start, len(old) - old_start, new[new_start:], preferred)
    return out


def _not_found(found: str, shown: str, hunk: Hunk) -> PatchError:
    lines = "\n".join(hunk.old)
    if found == "missing":
        return PatchError(f"Failed to find expected lines in {shown}:\n{lines}")
    return PatchError(
        f"Found {found} occurrences of these lines in {shown}. The lines must be unique; "
        f"include more surrounding lines in the hunk:\n{lines}"
    )


def _context_index(texts: list[str], context: str, index: int, shown: str) -> int:
    found = _seek(texts, (context,), index, False)
    if found == "missing":
        raise PatchError(f"Failed to find context '{context}' in {shown}")
    if isinstance(found, str):
        raise PatchError(
            f"Found {found} occurrences of context '{context}' in {shown}. The context must be "
            "unique; use a more specific @@ context line."
        )
    return found + 1


def update_text(contents: str, hunks: tuple[Hunk, ...], shown: str) -> str:
    """`contents` with `hunks` applied, line endings kept. Raises `PatchError` (naming the file
    as `shown`) when a hunk's context or lines are missing or ambiguous."""
    bom, source = _split_source(contents)
    preferred = next((line.ending for line in source if line.ending), "\n")
    texts = [line.text for line in source]
    replacements: list[tuple[int, int, list[_Line]]] = []
    index = 0
    for hunk in hunks:
        if hunk.context:
            index = _context_index(texts, hunk.context, index, shown)
        if not hunk.old:
            at = index if hunk.context and not hunk.at_end else len(source)
            added = _changed(source, at, 0, hunk.new, preferred)
            if added and at == len(source) and source and not source[-1].ending:
                added[-1].ending = ""
            replacements.append((at, 0, added))
            index = at
            continue
        old, new = hunk.old, hunk.new
        found = _seek(texts, old, index, hunk.at_end)
        if found == "missing" and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = _seek(texts, old, index, hunk.at_end)
        if not isinstance(found, int):
            raise _not_found(found, shown, hunk)
        replacements.append((found, len(old), _hunk_lines(source, found, old, new, hunk)))
        index = found + len(old)
    result = list(source)
    # OpenClaw sorts by start (stable) and splices from the last: equal starts in reverse.
    for start, count, lines in reversed(sorted(replacements, key=lambda r: r[0])):
        result[start : start + count] = lines
    for line in result[:-1]:
        line.ending = line.ending or preferred
    return bom + "".join(line.text + line.ending for line in result)


def same_text(a: str, b: str) -> bool:
    """Whether two texts are the same once line breaks are `\\n` and both end with one (what
    OpenClaw calls no change)."""

    def norm(s: str) -> str:
        s = s.replace("\r\n", "\n").replace("\r", "\n")
        return s if not s or s.endswith("\n") else s + "\n"

    return norm(a) == norm(b)
