"""JavaScript regular expressions run by Python's `re`, for ports of OpenClaw's redaction.

`js_regex(source, flags)` compiles a JavaScript pattern so that it matches as JavaScript
would: `\\d`, `\\w` and `\\b` are ASCII, `\\s` is JavaScript's whitespace, `.` stops at every
line terminator, `$` is the end of the input only, `\\p{C}` and `\\p{Z}` are Unicode's categories (Node's),
and case-insensitive matching folds as JavaScript's: without the `u` flag ASCII letters only
(its non-Unicode folding never maps a non-ASCII character to an ASCII one), with it also ſ
to s and K (Kelvin) to k, but not İ or ı to i as Python's Unicode folding would. A pattern without
`u` matches UTF-16 code units: run it on `utf16_units(text)` (a surrogate pair as two code
points) and turn the result back with `from_utf16_units`. Only the syntax OpenClaw's patterns
use is translated; anything else raises `ValueError`.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from ._js_unicode import CATEGORY_RANGES

__all__ = [
    "JS_SPACE",
    "from_utf16_units",
    "js_regex",
    "slice_utf16_safe",
    "utf16_len",
    "utf16_units",
]

JS_SPACE: Final = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WORD: Final = "A-Za-z0-9_"


def utf16_units(text: str) -> str:
    """`text` with each character above U+FFFF as its two surrogates (JavaScript's units)."""
    if text.isascii() or max(text) <= "\uffff":
        return text
    return "".join(
        c if c <= "\uffff" else chr(0xD7C0 + (ord(c) >> 10)) + chr(0xDC00 + (ord(c) & 0x3FF))
        for c in text
    )


def from_utf16_units(text: str) -> str:
    """`utf16_units` undone: each high surrogate followed by a low one joined again."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def utf16_len(text: str) -> int:
    """`text.length` in JavaScript."""
    return len(text) + sum(1 for c in text if c > "\uffff") if not text.isascii() else len(text)


def slice_utf16_safe(units: str, start: int, end: int | None = None) -> str:
    """OpenClaw's `sliceUtf16Safe` on a string of UTF-16 units."""
    n = len(units)
    frm = max(n + start, 0) if start < 0 else min(start, n)
    to = n if end is None else (max(n + end, 0) if end < 0 else min(end, n))
    if to <= frm:
        return ""
    if 0 < frm < n and _low(units[frm]) and _high(units[frm - 1]):
        frm += 1
    if 0 < to < n and _high(units[to - 1]) and _low(units[to]):
        to -= 1
    return units[frm:to]


def _high(c: str) -> bool:
    return "\ud800" <= c <= "\udbff"


def _low(c: str) -> bool:
    return "\udc00" <= c <= "\udfff"


@functools.cache
def _category(major: str) -> str:
    """`\\p{C}` or `\\p{Z}` as class ranges (Node 24's Unicode: `_js_unicode`)."""
    return "".join(
        f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in CATEGORY_RANGES[major]
    )


_FOLDED: Final = {"s": "\u017f", "k": "\u212a"}  # ſ and K (Kelvin) fold to s and k


def _escape(source: str, i: int, in_class: bool, fold: bool) -> tuple[str, int]:
    """The translation of the escape at `source[i]` (after its backslash) and where it ends."""
    c = source[i]
    if c == "p" and source[i + 1 : i + 2] == "{" and source[i + 2 : i + 4] in ("C}", "Z}"):
        body = _category(source[i + 2])
        return (body if in_class else f"[{body}]"), i + 4
    if c == "s":
        return (JS_SPACE if in_class else f"[{JS_SPACE}]"), i + 1
    if c == "S" and not in_class:
        return f"[^{JS_SPACE}]", i + 1
    if fold and c in "wWbB":  # JavaScript's u+i word characters take in ſ and K
        word = _WORD + "".join(_FOLDED.values())
        if in_class and c == "w":
            return word, i + 1
        if not in_class:
            return {
                "w": f"[{word}]",
                "W": f"[^{word}]",
                "b": f"(?:(?<=[{word}])(?![{word}])|(?<![{word}])(?=[{word}]))",
                "B": f"(?:(?<=[{word}])(?=[{word}])|(?<![{word}])(?![{word}]))",
            }[c], i + 1
    if in_class and c in "DWSbB":
        raise ValueError(f"\\{c} in a character class")
    if c in "dDwWbB":  # ASCII, as JavaScript's, under re.ASCII
        return f"\\{c}", i + 1
    if c in "xu":
        width = 2 if c == "x" else 4
        return f"\\{c}{source[i + 1 : i + 1 + width]}", i + 1 + width
    if c.isdigit() and not in_class:
        end = i
        while end < len(source) and source[end].isdigit():
            end += 1
        return f"(?:\\{source[i:end]})", end
    if c in "nrtvf":
        return f"\\{c}", i + 1
    if c.isalnum():
        raise ValueError(f"unsupported escape \\{c}")
    return re.escape(c), i + 1


def _class_end(body: str, negated: bool, fold: bool) -> str:
    """A translated class, with ſ and K added where s and k are in it (folding)."""
    if fold:
        for letter, extra in _FOLDED.items():
            if re.fullmatch(f"[{body}]", letter, re.IGNORECASE | re.ASCII):
                literal_dash = body.endswith("-") and not body.endswith("\\-")
                body = f"{body[:-1]}{extra}-" if literal_dash else body + extra
    return f"[{'^' if negated else ''}{body}]"


def _translate(source: str, fold: bool) -> str:
    out: list[str] = []
    body: list[str] | None = None  # inside a class: its translated content
    negated = False
    i = 0
    while i < len(source):
        c = source[i]
        if c == "\\":
            piece, i = _escape(source, i + 1, body is not None, fold)
            (out if body is None else body).append(piece)
            continue
        if body is not None:
            if c == "]":
                out.append(_class_end("".join(body), negated, fold))
                body = None
            else:
                body.append("\\" + c if c in "[&~|" else c)
        elif c == "[":
            body, negated = [], source.startswith("^", i + 1)
            i += 1 if negated else 0
            if source.startswith("]", i + 1):  # `[]` never occurs in OpenClaw's patterns
                raise ValueError("empty class")
        elif c == ".":
            out.append("[^\n\r\u2028\u2029]")
        elif c == "$":
            out.append(r"\Z")
        elif c == "(" and source.startswith("(?<", i) and source[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        elif fold and c.lower() in _FOLDED:
            out.append(f"[{c}{_FOLDED[c.lower()]}]")
        else:
            out.append(c)
        i += 1
    return "".join(out)


@functools.cache
def js_regex(source: str, flags: str = "") -> re.Pattern[str]:
    """`new RegExp(source, flags)` (the `g` and `d` flags make no difference here)."""
    if set(flags) - set("gimsuyd") or "m" in flags or "s" in flags or "y" in flags:
        raise ValueError(f"unsupported flags {flags!r}")
    options = re.ASCII | (re.IGNORECASE if "i" in flags else 0)
    return re.compile(_translate(source, fold="i" in flags and "u" in flags), options)
