"""Where `edit`'s replacements go: OpenClaw 2026.9.6's matching rules, in our own code.

Every `oldText` of one call is looked up in the same text, the file as `read` shows it with
every line ending LF (`normalize_to_lf`), never in the result of an earlier replacement:

1. Exactly, when it occurs there; it must occur once (`Found 2 occurrences ...`).
2. Otherwise fuzzily: in the file's fuzzy view (`normalize_for_fuzzy_match`: NFKC, each line's
   trailing white space dropped, typographic quotes, dashes and spaces made ASCII), which must
   hold it once. The match is then mapped back onto the file through the boundaries of its
   grapheme clusters (`_graphemes`); one whose ends fall inside a cluster, or inside what one
   character of the file turned into, is refused as ambiguous rather than guessed.
3. Matches may not overlap. Replacing them all must change something; an `oldText` equal to
   its `newText` is no change, yet its target must still be found like any other.

`apply_edits` raises `EditError` (its message for the model, OpenClaw's words) or
`NoChangeError`. `candidate_hint` is the "Closest matching lines" note a not-found error
carries: the longest line of `oldText`, scored against the file's lines by edit distance.

Offsets here are code points; OpenClaw counts UTF-16 units. Where a count is shown to the
model or decides something (the hint's scores, columns and caps) it is taken in UTF-16 units
(`utf16_length`), so the same call gets the same answer.
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Final, NamedTuple

from ._graphemes import grapheme_spans
from ._js_text import js_round
from ._line_endings import Replacement, normalize_to_lf, splice

__all__ = [
    "Applied",
    "EditError",
    "NoChangeError",
    "TextEdit",
    "apply_edits",
    "candidate_hint",
    "js_trim",
    "normalize_for_fuzzy_match",
    "split_no_op_edits",
    "truncate_utf16",
    "utf16_length",
    "validate_no_op_targets",
]

JS_SPACE: Final = (
    "\t\n\x0b\x0c\r \xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's `trim` removes (its WhiteSpace and LineTerminator), not Python's set."""

_FOLD: Final = str.maketrans(
    {
        **dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b"), "'"),
        **dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f"), '"'),
        **dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-"),
        **dict.fromkeys(
            [0xA0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000],
            " ",
        ),
    }
)


class EditError(Exception):
    """An edit that cannot be made; the message is for the model."""


class NoChangeError(EditError):
    """The replacements leave the file as it was."""


class TextEdit(NamedTuple):
    old_text: str
    new_text: str


class Applied(NamedTuple):
    """The LF text matched on, the text after the replacements, and the replacements made
    (by position; offsets into `base`)."""

    base: str
    new: str
    replacements: list[Replacement]


def js_trim(text: str) -> str:
    return text.strip(JS_SPACE)


def utf16_length(text: str) -> int:
    """`text`'s length in UTF-16 code units (JavaScript's `length`)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def truncate_utf16(text: str, units: int) -> str:
    """The longest start of `text` of at most `units` UTF-16 units, never half a pair."""
    if utf16_length(text) <= units:
        return text
    used = 0
    for index, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            return text[:index]
    return text


def normalize_for_fuzzy_match(text: str) -> str:
    """The fuzzy view: NFKC, each line without trailing white space, typographic quotes,
    dashes and spaces folded to ASCII."""
    lines = unicodedata.normalize("NFKC", text).split("\n")
    return "\n".join(line.rstrip(JS_SPACE) for line in lines).translate(_FOLD)


# --- mapping the fuzzy view back -------------------------------------------------------------


class _Bound(NamedTuple):
    """Where a fuzzy offset lies in the original: a match starting there starts at `start`,
    one ending there ends at `end` (None: nowhere safe)."""

    start: int | None
    end: int | None


_Bounds = dict[int, _Bound | None]


def _nfkc_bounds(text: str, nfkc: str) -> _Bounds | None:
    """Offsets of `nfkc` (`text`'s NFKC) at grapheme boundaries of `text`, mapped to `text`;
    None when clusters normalized one by one do not add up to `nfkc`."""
    bounds: _Bounds = {}
    parts: list[str] = []
    offset = 0
    for start, end in grapheme_spans(text):
        part = unicodedata.normalize("NFKC", text[start:end])
        parts.append(part)
        here = bounds.get(offset) or _Bound(None, None)
        if not part:
            bounds[offset] = _Bound(end, start if here.end is None else here.end)
            continue
        bounds[offset] = _Bound(
            start if here.start is None else here.start, start if here.end is None else here.end
        )
        offset += len(part)
        bounds[offset] = _Bound(end, end)
    return bounds if "".join(parts) == nfkc else None


def _fuzzy_bounds(text: str, fuzzy: str) -> _Bounds | None:
    """Offsets of `fuzzy` (`normalize_for_fuzzy_match(text)`) mapped to `text`."""
    nfkc = unicodedata.normalize("NFKC", text)
    inner = _nfkc_bounds(text, nfkc)
    if inner is None:
        return None
    bounds: _Bounds = {}
    source = fuzzy_at = 0
    while source <= len(nfkc):
        newline = nfkc.find("\n", source)
        source_end = len(nfkc) if newline == -1 else newline
        kept_end = source + len(nfkc[source:source_end].rstrip(JS_SPACE))
        for offset in range(source, kept_end + 1):
            bound = inner.get(offset)
            if bound is not None:
                bounds[fuzzy_at + offset - source] = bound
        line_end = fuzzy_at + kept_end - source
        if kept_end < source_end:  # trimmed: start after the spaces, end before them
            before, after = inner.get(kept_end), inner.get(source_end)
            bounds[line_end] = _Bound(
                after.start if after else None, before.end if before else None
            )
        if newline == -1:
            break
        bounds[line_end + 1] = inner.get(source_end + 1)
        fuzzy_at = line_end + 1
        source = source_end + 1
    if bounds and max(bounds) > len(fuzzy):
        return None
    return bounds


class _FuzzyFile:
    """A file's fuzzy view, its boundaries computed the first time a fuzzy match needs them."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.text = normalize_for_fuzzy_match(content)
        self._bounds: _Bounds | None = None
        self._mapped = False

    def original_span(self, start: int, length: int) -> tuple[int, int] | None:
        if not self._mapped:
            self._bounds = _fuzzy_bounds(self.content, self.text)
            self._mapped = True
        if self._bounds is None:
            return None
        first, last = self._bounds.get(start), self._bounds.get(start + length)
        if first is None or last is None or first.start is None or last.end is None:
            return None
        return first.start, last.end - first.start


class _Match(NamedTuple):
    start: int
    length: int
    fuzzy: bool
    unsafe: bool = False


_MISSING: Final = _Match(-1, 0, False)


def _find(content: str, old: str, fuzzy: _FuzzyFile | None) -> _Match:
    exact = content.find(old)
    if exact != -1:
        return _Match(exact, len(old), False)
    fuzzy_text = fuzzy.text if fuzzy is not None else normalize_for_fuzzy_match(content)
    fuzzy_old = normalize_for_fuzzy_match(old)
    if not fuzzy_old:
        return _Match(-1, 0, True, unsafe=True)
    at = fuzzy_text.find(fuzzy_old)
    if at == -1:
        return _MISSING
    span = fuzzy.original_span(at, len(fuzzy_old)) if fuzzy is not None else None
    if span is None:
        return _Match(-1, 0, True, unsafe=True)
    return _Match(span[0], span[1], True)


# --- the rules -------------------------------------------------------------------------------


def _not_found(path: str, index: int, total: int, content: str, old: str) -> EditError:
    what = "Could not find the exact text" if total == 1 else f"Could not find edits[{index}]"
    return EditError(
        f"{what} in {path}. The old text must match exactly including all whitespace and "
        f"newlines.{candidate_hint(content, old)}"
    )


def _duplicate(path: str, index: int, total: int, count: int) -> EditError:
    if total == 1:
        return EditError(
            f"Found {count} occurrences of the text in {path}. The text must be unique. "
            "Please provide more context to make it unique."
        )
    return EditError(
        f"Found {count} occurrences of edits[{index}] in {path}. Each oldText must be unique. "
        "Please provide more context to make it unique."
    )


def _unsafe(path: str, index: int, total: int) -> EditError:
    what = "The fuzzy match" if total == 1 else f"The fuzzy match for edits[{index}]"
    return EditError(
        f"{what} in {path} crosses an ambiguous Unicode-normalization or trimmed-whitespace "
        "boundary. Copy the exact source text or use a span whose normalized boundaries map "
        "cleanly."
    )


def apply_edits(normalized: str, edits: Sequence[TextEdit], path: str) -> Applied:
    """Make `edits` in `normalized` (LF text) by the rules above. Raises `EditError` naming
    the first edit that breaks one (by its index in `edits`), `NoChangeError` when nothing
    would change."""
    lf = [TextEdit(normalize_to_lf(e.old_text), normalize_to_lf(e.new_text)) for e in edits]
    total = len(lf)
    for index, edit in enumerate(lf):
        if not edit.old_text:
            where = "oldText" if total == 1 else f"edits[{index}].oldText"
            raise EditError(f"{where} must not be empty in {path}.")
    fuzzy = _FuzzyFile(normalized) if any(e.old_text not in normalized for e in lf) else None
    matched: list[tuple[int, Replacement]] = []
    for index, edit in enumerate(lf):
        match = _find(normalized, edit.old_text, fuzzy)
        if fuzzy is not None and match.fuzzy:
            fuzzy_old = normalize_for_fuzzy_match(edit.old_text)
            count = fuzzy.text.count(fuzzy_old) if fuzzy_old else 0
        else:
            count = normalized.count(edit.old_text)
        if count > 1:
            raise _duplicate(path, index, total, count)
        if match.unsafe:
            raise _unsafe(path, index, total)
        if match.start == -1:
            raise _not_found(path, index, total, normalized, edit.old_text)
        matched.append((index, Replacement(match.start, match.length, edit.new_text)))
    matched.sort(key=lambda m: m[1].start)
    for (before, earlier), (after, later) in itertools.pairwise(matched):
        if earlier.start + earlier.length > later.start:
            raise EditError(
                f"edits[{before}] and edits[{after}] overlap in {path}. Merge them into one "
                "edit or target disjoint regions."
            )
    replacements = [r for _, r in matched]
    new = splice(normalized, replacements)
    if new == normalized:
        if total == 1:
            raise NoChangeError(
                f"No changes made to {path}. The replacement produced identical content. This "
                "might indicate an issue with special characters or the text not existing as "
                "expected."
            )
        raise NoChangeError(
            f"No changes made to {path}. The replacements produced identical content."
        )
    return Applied(normalized, new, replacements)


def split_no_op_edits(
    normalized: str, edits: Sequence[TextEdit], path: str
) -> tuple[list[TextEdit], list[TextEdit]]:
    """(no-ops, real edits): an edit whose `oldText` is its `newText` changes nothing, but its
    target must be found as if it were removed (each checked on its own)."""
    no_ops: list[TextEdit] = []
    real: list[TextEdit] = []
    for edit in edits:
        if edit.old_text == edit.new_text:
            apply_edits(normalized, [TextEdit(edit.old_text, "")], path)
            no_ops.append(edit)
        else:
            real.append(edit)
    return no_ops, real


def validate_no_op_targets(
    normalized: str, no_ops: Sequence[TextEdit], real: Sequence[TextEdit], path: str
) -> None:
    """The no-ops' targets must not overlap one another, nor (those found exactly) the real
    edits' targets: checked as one call removing them all, numbered in that call."""
    if no_ops:
        apply_edits(normalized, [TextEdit(e.old_text, "") for e in no_ops], path)
    exact = [e for e in no_ops if normalize_to_lf(e.old_text) in normalized]
    if exact and real:
        apply_edits(normalized, [TextEdit(e.old_text, "") for e in (*exact, *real)], path)


# --- the not-found hint ----------------------------------------------------------------------

_HINT_LIMIT: Final = 3
_HINT_MAX_LINES: Final = 1000
_HINT_MAX_SCAN: Final = 131072
_HINT_LINE: Final = 120
_HINT_MIN_SCORE: Final = 0.45
_INDENT: Final = re.compile(r"[ \t]*")


def _bounded_lines(text: str, max_lines: int, max_scan: int) -> list[str]:
    lines = truncate_utf16(text, max_scan).split("\n")[:max_lines]
    return [truncate_utf16(line, _HINT_LINE) for line in lines]


def _units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | data[i + 1] << 8 for i in range(0, len(data), 2)]


def levenshtein(left: Sequence[int], right: Sequence[int]) -> int:
    """Edit distance of two sequences (bit-parallel, Myers 1999 / Hyyrö)."""
    if not left:
        return len(right)
    if not right:
        return len(left)
    peq: dict[int, int] = {}
    for i, unit in enumerate(left):
        peq[unit] = peq.get(unit, 0) | 1 << i
    mask = (1 << len(left)) - 1
    top = 1 << (len(left) - 1)
    pv, mv, score = mask, 0, len(left)
    for unit in right:
        eq = peq.get(unit, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = (ph << 1 | 1) & mask
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
    return score


def _score(expected: str, candidate: str) -> float:
    left, right = _units(js_trim(expected)), _units(js_trim(candidate))
    longest = max(len(left), len(right))
    if longest == 0 or min(len(left), len(right)) / longest < _HINT_MIN_SCORE:
        return 0.0
    return 1 - levenshtein(left, right) / longest


def _first_difference(left: Sequence[int] | str, right: Sequence[int] | str) -> int:
    shared = min(len(left), len(right))
    for index in range(shared):
        if left[index] != right[index]:
            return index
    return -1 if len(left) == len(right) else shared


def _indentation(line: str) -> str:
    text = _indent(line)
    if not text:
        return "none"
    tabs = text.count("\t")
    spaces = len(text) - tabs
    return f"{spaces} spaces" if tabs == 0 else f"{spaces} spaces and {tabs} tabs"


def _indent(line: str) -> str:
    match = _INDENT.match(line)
    return match.group() if match else ""


def _difference(expected: str, found: str) -> str:
    if _indent(expected) != _indent(found):
        return (
            f"indentation differs (expected {_indentation(expected)}, found {_indentation(found)})"
        )
    expected_slashes, found_slashes = expected.count("\\"), found.count("\\")
    if expected_slashes != found_slashes:
        return f"escaping differs (expected {expected_slashes} backslashes, found {found_slashes})"
    at = _first_difference(_units(expected), _units(found))
    return (
        "this line matches; surrounding lines differ"
        if at == -1
        else f"first difference at column {at + 1}"
    )


def candidate_hint(content: str, old_text: str) -> str:
    """OpenClaw's "Closest matching lines" note for an `oldText` not found in `content`
    (both LF), or "" when no line of the file comes close to its longest line."""
    expected = ""
    for line in _bounded_lines(old_text, 32, 4096):
        if utf16_length(js_trim(line)) > utf16_length(js_trim(expected)):
            expected = line
    if not js_trim(expected):
        return ""
    scored = []
    for number, line in enumerate(_bounded_lines(content, _HINT_MAX_LINES, _HINT_MAX_SCAN), 1):
        score = _score(expected, line)
        if score >= _HINT_MIN_SCORE:
            scored.append((-score, number, line))
    if not scored:
        return ""
    scored.sort()
    shown = json.dumps(expected, ensure_ascii=False)
    blocks = []
    for negative, number, line in scored[:_HINT_LIMIT]:
        found = json.dumps(line, ensure_ascii=False)
        shown_units, found_units = _units(shown), _units(found)
        at = _first_difference(shown_units, found_units)
        marker = min(len(shown_units), len(found_units)) if at == -1 else at
        width = max(1, min(12, max(len(shown_units), len(found_units)) - marker))
        blocks.append(
            "\n".join(
                (
                    f"  near line {number} ({js_round(-negative * 100)}% match):",
                    f"    expected: {shown}",
                    f"    found:    {found}",
                    f"              {' ' * marker}{'^' * width}",
                    f"    hint: {_difference(expected, line)}",
                )
            )
        )
    return "\nClosest matching lines:\n" + "\n".join(blocks)
