"""JavaScript strings and the text budgets OpenClaw 2026.9.6 measures them with, for the tools
that must cut text where OpenClaw cuts it (`read`'s pages).

A JavaScript string is a sequence of UTF-16 code units: lengths, indexes and slices count
units, and a slice may split a surrogate pair. Here such a string is a Python `str` of code
units (`units`: one character per unit, a pair as two surrogate characters), so that the
same index arithmetic holds; `text` turns it back into text as Node's
`Buffer.from(s, "utf16le").toString("utf16le")` does (a lone surrogate becomes U+FFFD), and
`utf8_length` counts its bytes as `Buffer.byteLength` does (a lone surrogate: 3).

`estimate_chars` is OpenClaw's CJK-aware character estimate (estimateStringCharsWithMinimum-
RawWeight), `slice_to_budget` its budget slicing (sliceToolResultTextToBudget), `Budget` the
model budget of a context window (resolveToolResultBudget) and `fits_budget` its check
(toolResultFitsBudget). Everything is pure.
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from decimal import ROUND_HALF_UP, Decimal
from typing import Final, NamedTuple

__all__ = [
    "Budget",
    "estimate_chars",
    "fits_budget",
    "format_size",
    "js_round",
    "slice_to_budget",
    "text",
    "truncate_utf8_prefix",
    "units",
    "utf8_length",
]


_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_PAIR: Final = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")


def js_round(value: float) -> int:
    """JavaScript's `Math.round`: halves up (2.5 -> 3, -2.5 -> -2), not to even as `round`."""
    return math.floor(value + 0.5)


def units(s: str) -> str:
    """`s` as a string of UTF-16 code units."""
    if s.isascii() or _ASTRAL.search(s) is None:
        return s
    code_units = array("H", s.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder != "little":
        code_units.byteswap()
    return "".join(map(chr, code_units))


def text(u: str) -> str:
    """A code-unit string as text: pairs joined, a lone surrogate as U+FFFD."""
    if u.isascii() or _SURROGATE.search(u) is None:
        return u
    return u.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf8_length(u: str) -> int:
    """The UTF-8 bytes of a code-unit string (`Buffer.byteLength`)."""
    if u.isascii():
        return len(u)
    size = len(u.encode("utf-8", "surrogatepass"))  # 3 bytes a surrogate unit
    if _SURROGATE.search(u) is None:
        return size
    return size - 2 * len(_PAIR.findall(u))  # a pair is 4 bytes, not 6


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def truncate_utf8_prefix(u: str, max_bytes: int) -> str:
    """The longest prefix of `u` within `max_bytes` UTF-8 bytes (OpenClaw's
    truncateUtf8Prefix: a character cut in two is dropped, as a unit string)."""
    if max_bytes <= 0:
        return ""
    if len(u) <= max_bytes and utf8_length(u) <= max_bytes:
        return u
    data = text(u[:max_bytes]).encode("utf-8")
    end = max_bytes
    while end > 0 and end < len(data) and _continuation(data[end]):
        end -= 1
    return units(data[:end].decode("utf-8", "replace"))


def format_size(count: int) -> str:
    """OpenClaw's formatSize: `512B`, `32.0KB`, `1.5MB` (JavaScript's toFixed rounding)."""
    if count < 1024:
        return f"{count}B"
    if count < 1024 * 1024:
        return f"{_to_fixed(count / 1024)}KB"
    return f"{_to_fixed(count / (1024 * 1024))}MB"


def _to_fixed(value: float) -> str:
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


# --- the CJK-aware estimate ----------------------------------------------------------------

_CATEGORIES: Final = (
    ((183, 183), (12288, 12703), (19968, 40869), (44032, 55215), (65281, 65376)),
    (
        (4352, 4607),
        (11904, 12287),
        (12704, 19967),
        (40870, 40959),
        (40960, 42239),
        (42752, 42759),
        (43360, 43391),
        (55216, 55295),
        (63744, 64255),
    ),
    (
        (711, 711),
        (713, 715),
        (729, 729),
        (746, 747),
        (773, 773),
        (803, 803),
        (65040, 65103),
        (65377, 65500),
        (65504, 65510),
    ),
    ((119648, 119665),),
    (
        (94176, 94207),
        (110576, 110591),
        (110592, 110959),
        (127488, 127743),
        (131072, 195103),
        (196608, 210047),
    ),
)
_BUCKETS: Final = tuple(
    re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in ranges) + "]")
    for ranges in _CATEGORIES
)


def estimate_chars(u: str, minimum_raw_weight: int = 1) -> int:
    """OpenClaw's estimate of a text's size in characters (weight 1 or 2 per raw unit):
    each unit, plus more for CJK and other characters that cost more tokens."""
    w = minimum_raw_weight
    if u.isascii():
        return len(u) * w
    points = text(u)  # pairs as code points; lone surrogates weigh nothing either way
    common, rare, two, three, supplementary = (len(b.findall(points)) for b in _BUCKETS)
    return (
        len(u) * w
        + common * (4 - w)
        + rare * (12 - w)
        + two * (8 - w)
        + three * (12 - 2 * w)
        + supplementary * (16 - 2 * w)
    )


class Budget(NamedTuple):
    """The model budget for one tool result (OpenClaw's resolveToolResultBudget)."""

    max_chars: int
    max_context_chars: int

    @classmethod
    def for_context_window(cls, tokens: int | None) -> Budget | None:
        if tokens is None or tokens <= 0:
            return None
        tokens = math.floor(tokens)
        cap = 64_000 if tokens >= 200_000 else 32_000 if tokens >= 100_000 else 16_000
        max_chars = min(math.floor(tokens * 0.3) * 4, max(1, cap))
        return cls(max_chars, max(1024, math.floor(max(1, tokens) * 2 * 0.5)))


def fits_budget(u: str, budget: Budget | None) -> bool:
    if budget is None:
        return True
    chars = estimate_chars(u)
    return chars <= budget.max_chars and (
        chars * 2 <= budget.max_context_chars or estimate_chars(u, 2) <= budget.max_context_chars
    )


def _slice_safe(u: str, end: int) -> str:
    """`u[:end]` without a dangling high surrogate (OpenClaw's sliceUtf16Safe from 0)."""
    end = min(end, len(u))
    if end <= 0:
        return ""
    if end < len(u) and "\ud800" <= u[end - 1] <= "\udbff" and "\udc00" <= u[end] <= "\udfff":
        end -= 1
    return u[:end]


def slice_to_budget(u: str, max_chars: float, minimum_raw_weight: int = 1) -> str:
    """The longest head of `u` whose estimate is within `max_chars` (a binary search, as
    OpenClaw's sliceToolResultTextToBudget measures it)."""
    budget = max(0, math.floor(max_chars))
    if len(u) <= budget and estimate_chars(u, minimum_raw_weight) <= budget:
        return u
    best = ""
    low, high = 0, min(len(u), budget)
    measured_length = measured_chars = 0
    while low <= high:
        midpoint = (low + high) // 2
        candidate = _slice_safe(u, midpoint)
        start, end = sorted((measured_length, len(candidate)))
        delta = estimate_chars(u[start:end], minimum_raw_weight)
        measured_chars += delta if len(candidate) >= measured_length else -delta
        measured_length = len(candidate)
        if measured_chars <= budget:
            best = candidate
            low = midpoint + 1
        else:
            high = midpoint - 1
    return best
