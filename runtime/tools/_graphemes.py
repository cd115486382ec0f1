"""Extended grapheme clusters, for `edit`'s fuzzy matching.

OpenClaw's `edit` maps a match found in its fuzzy view of a file (NFKC, trailing spaces
trimmed) back to the file through boundaries it takes one user-perceived character at a time
(`Intl.Segmenter`, grapheme granularity): a match may start or end only where a cluster does.
`grapheme_spans` cuts text into the same clusters by the rules of Unicode's UAX #29 (extended
clusters, with the Indic conjunct rule of Unicode 15.1), with the character classes derived
from `unicodedata`'s general categories and a few explicit ranges rather than the full
Grapheme_Cluster_Break table, which the standard library does not carry:

- Extend: nonspacing and enclosing marks (Mn, Me), ZWNJ, tag characters, emoji skin-tone
  modifiers, halfwidth kana voicing marks; SpacingMark: the other spacing marks (Mc) and
  Thai/Lao AM. (Unicode's SpacingMark leaves out a dozen Myanmar and Tai Tham vowel signs;
  here they join the cluster before them.)
- Control: other controls and format characters (Cc, Cf, Zl, Zp) but ZWNJ, ZWJ, the tags and
  the prepended concatenation marks (Prepend).
- Hangul jamo and syllables by their ranges, regional indicators in pairs, emoji ZWJ
  sequences with the Extended_Pictographic ranges, and the conjunct consonants and viramas
  of Devanagari, Bengali, Gujarati, Oriya, Telugu and Malayalam.

Offsets are in code points.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right
from enum import Enum, auto
from typing import Final

__all__ = ["grapheme_spans"]


class _Kind(Enum):
    OTHER = auto()
    CR = auto()
    LF = auto()
    CONTROL = auto()
    EXTEND = auto()
    ZWJ = auto()
    SPACING_MARK = auto()
    PREPEND = auto()
    REGIONAL = auto()
    L = auto()
    V = auto()
    T = auto()
    LV = auto()
    LVT = auto()


def _ranges(*pairs: tuple[int, int]) -> tuple[list[int], list[int]]:
    """Sorted inclusive ranges as (starts, ends) for `_within`."""
    ordered = sorted(pairs)
    return [a for a, _ in ordered], [b for _, b in ordered]


def _within(table: tuple[list[int], list[int]], cp: int) -> bool:
    index = bisect_right(table[0], cp) - 1
    return index >= 0 and cp <= table[1][index]


_PREPEND: Final = _ranges(
    (0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
    (0x0D4E, 0x0D4E), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x111C2, 0x111C3),
    (0x1193F, 0x1193F), (0x11941, 0x11941), (0x11A3A, 0x11A3A), (0x11A84, 0x11A89),
    (0x11D46, 0x11D46), (0x11F02, 0x11F02),
)  # fmt: skip
_EXTEND_MC: Final = _ranges(
    (0x09BE, 0x09BE), (0x09D7, 0x09D7), (0x0B3E, 0x0B3E), (0x0B57, 0x0B57), (0x0BBE, 0x0BBE),
    (0x0BD7, 0x0BD7), (0x0CC2, 0x0CC2), (0x0CD5, 0x0CD6), (0x0D3E, 0x0D3E), (0x0D57, 0x0D57),
    (0x0DCF, 0x0DCF), (0x0DDF, 0x0DDF), (0x1B35, 0x1B35), (0x302E, 0x302F),
    (0x1D165, 0x1D165), (0x1D16E, 0x1D172),
)  # fmt: skip
"""Spacing marks that are Grapheme_Extend (Extend, not SpacingMark)."""
_EXTEND_OTHER: Final = _ranges(
    (0x200C, 0x200C), (0xFF9E, 0xFF9F), (0x1F3FB, 0x1F3FF), (0xE0020, 0xE007F)
)
_PICTOGRAPHIC: Final = _ranges(
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049), (0x2122, 0x2122),
    (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA), (0x231A, 0x231B), (0x2328, 0x2328),
    (0x2388, 0x2388), (0x23CF, 0x23CF), (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2),
    (0x25AA, 0x25AB), (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712), (0x2714, 0x2714),
    (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721), (0x2728, 0x2728), (0x2733, 0x2734),
    (0x2744, 0x2744), (0x2747, 0x2747), (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755),
    (0x2757, 0x2757), (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C), (0x2B50, 0x2B50),
    (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D), (0x3297, 0x3297), (0x3299, 0x3299),
    (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F), (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171),
    (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E), (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5),
    (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A), (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A),
    (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA), (0x1F400, 0x1F53D), (0x1F546, 0x1F64F),
    (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF),
    (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)  # fmt: skip
_CONSONANT: Final = _ranges(
    (0x0915, 0x0939), (0x0958, 0x095F), (0x0978, 0x097F), (0x0995, 0x09A8), (0x09AA, 0x09B0),
    (0x09B2, 0x09B2), (0x09B6, 0x09B9), (0x09DC, 0x09DD), (0x09DF, 0x09DF), (0x09F0, 0x09F1),
    (0x0A95, 0x0AA8), (0x0AAA, 0x0AB0), (0x0AB2, 0x0AB3), (0x0AB5, 0x0AB9), (0x0AF9, 0x0AF9),
    (0x0B15, 0x0B28), (0x0B2A, 0x0B30), (0x0B32, 0x0B33), (0x0B35, 0x0B39), (0x0B5C, 0x0B5D),
    (0x0B5F, 0x0B5F), (0x0B71, 0x0B71), (0x0C15, 0x0C28), (0x0C2A, 0x0C39), (0x0C58, 0x0C5A),
    (0x0D15, 0x0D3A),
)  # fmt: skip
"""Indic_Conjunct_Break=Consonant."""
_LINKERS: Final = frozenset(map(chr, (0x094D, 0x09CD, 0x0ACD, 0x0B4D, 0x0C4D, 0x0D4D)))
"""Indic_Conjunct_Break=Linker (the viramas)."""


def _kind(ch: str) -> _Kind:
    cp = ord(ch)
    if cp < 0x7F:  # ASCII: the common case
        if ch == "\r":
            return _Kind.CR
        if ch == "\n":
            return _Kind.LF
        return _Kind.CONTROL if cp < 0x20 else _Kind.OTHER
    if cp == 0x200D:
        return _Kind.ZWJ
    if 0xAC00 <= cp <= 0xD7A3:
        return _Kind.LV if (cp - 0xAC00) % 28 == 0 else _Kind.LVT
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return _Kind.L
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return _Kind.V
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return _Kind.T
    if 0x1F1E6 <= cp <= 0x1F1FF:
        return _Kind.REGIONAL
    if _within(_PREPEND, cp):
        return _Kind.PREPEND
    if _within(_EXTEND_OTHER, cp) or _within(_EXTEND_MC, cp):
        return _Kind.EXTEND
    category = unicodedata.category(ch)
    if category in ("Mn", "Me"):
        return _Kind.EXTEND
    if category == "Mc" or cp in (0x0E33, 0x0EB3):
        return _Kind.SPACING_MARK
    if category in ("Cc", "Cf", "Zl", "Zp"):
        return _Kind.CONTROL
    return _Kind.OTHER


_BREAKING: Final = frozenset((_Kind.CR, _Kind.LF, _Kind.CONTROL))
_JAMO_AFTER: Final = {
    _Kind.L: frozenset((_Kind.L, _Kind.V, _Kind.LV, _Kind.LVT)),
    _Kind.LV: frozenset((_Kind.V, _Kind.T)),
    _Kind.V: frozenset((_Kind.V, _Kind.T)),
    _Kind.LVT: frozenset((_Kind.T,)),
    _Kind.T: frozenset((_Kind.T,)),
}


class _State:
    """What the rules that look further back than one character need to know."""

    __slots__ = ("conjunct", "pictograph", "regional_odd")

    def __init__(self) -> None:
        self.regional_odd = False  # an odd run of regional indicators ends here
        self.pictograph = 0  # 1: Extended_Pictographic Extend*; 2: ... then ZWJ
        self.conjunct = 0  # 1: Consonant (Extend|Linker)*; 2: ... with a Linker

    def joins(self, prev: _Kind, kind: _Kind, ch: str) -> bool:
        """Whether no cluster boundary lies between `prev` and `ch` (of `kind`)."""
        if prev is _Kind.CR and kind is _Kind.LF:
            return True
        if prev in _BREAKING or kind in _BREAKING:
            return False
        if kind in _JAMO_AFTER.get(prev, ()):
            return True
        if kind in (_Kind.EXTEND, _Kind.ZWJ, _Kind.SPACING_MARK) or prev is _Kind.PREPEND:
            return True
        if self.conjunct == 2 and _within(_CONSONANT, ord(ch)):
            return True
        if self.pictograph == 2 and _within(_PICTOGRAPHIC, ord(ch)):
            return True
        return prev is _Kind.REGIONAL and kind is _Kind.REGIONAL and self.regional_odd

    def advance(self, prev: _Kind | None, kind: _Kind, ch: str) -> None:
        cp = ord(ch)
        self.regional_odd = kind is _Kind.REGIONAL and not (
            prev is _Kind.REGIONAL and self.regional_odd
        )
        if _within(_PICTOGRAPHIC, cp):
            self.pictograph = 1
        elif self.pictograph == 1 and kind in (_Kind.EXTEND, _Kind.ZWJ):
            self.pictograph = 2 if kind is _Kind.ZWJ else 1
        else:
            self.pictograph = 0
        if _within(_CONSONANT, cp):
            self.conjunct = 1
        elif self.conjunct and ch in _LINKERS:
            self.conjunct = 2
        elif not (self.conjunct and kind in (_Kind.EXTEND, _Kind.ZWJ)):
            self.conjunct = 0


def grapheme_spans(text: str) -> list[tuple[int, int]]:
    """The extended grapheme clusters of `text` as (start, end) offsets, in order."""
    spans: list[tuple[int, int]] = []
    state = _State()
    start = 0
    prev: _Kind | None = None
    for index, ch in enumerate(text):
        kind = _kind(ch)
        if prev is not None and not state.joins(prev, kind, ch):
            spans.append((start, index))
            start = index
        state.advance(prev, kind, ch)
        prev = kind
    if text:
        spans.append((start, len(text)))
    return spans
