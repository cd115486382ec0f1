"""The first steps of OpenClaw 2026.9.6's text redaction (`redactText`), before its patterns:
the parameters of structured `Authorization` headers (Digest, AWS4, ...: `***`), secret URL
query values (masked), and form bodies' secret values (`***`); with the masks they share
(`maskToken`: the first 6 and last 4 UTF-16 units of a token of 18 or more, else `***`).

Ported from the dist's `redact-*.mjs`, `structured-auth-redaction-*.mjs` and
`redact-sensitive-url-*.mjs`; texts here are plain Python strings (code points), as these
steps run OpenClaw's Unicode (`u`) expressions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ._jsregex import from_utf16_units, js_regex, slice_utf16_safe, utf16_units

__all__ = [
    "mask_token",
    "mask_units",
    "redact_form_body",
    "redact_structured_auth",
    "redact_url_query",
    "split_secret_value",
]

_INVISIBLE: Final = r"\p{C}\u00A0\u1680\u2000-\u200A\u202F\u205F\u3000\u115F\u1160\u3164\uFFA0"
_KEY: Final = rf"[{_INVISIBLE}+]*(?:[A-Za-z_]|%[0-9A-Fa-f]{{2}})(?:[A-Za-z0-9_.-]|%[0-9A-Fa-f]{{2}}|[{_INVISIBLE}+])*"
_VALUE: Final = r"[^&\s<>]*"
_PAIR: Final = f"{_KEY}={_VALUE}"
_SEPARATOR: Final = r"[\p{C}\p{Z}\u115F\u1160\u3164\uFFA0+]"
_BODY_SECRET_KEYS: Final = frozenset(
    [
        "access_token",
        "auth_token",
        "awssecretaccesskey",
        "aws_secret_access_key",
        "hook_token",
        "refresh_token",
        "id_token",
        "token",
        "api_key",
        "apikey",
        "client_secret",
        "app_secret",
        "password",
        "pass",
        "passwd",
        "auth",
        "jwt",
        "session",
        "code",
        "signature",
        "x_amz_signature",
        "x_amz_security_token",
        "secret",
        "secretaccesskey",
        "credential",
        "private_key",
        "authorization",
        "key",
        "card_number",
        "card_cvc",
        "card_cvv",
        "cvc",
        "cvv",
        "security_code",
        "payment_credential",
        "shared_payment_token",
    ]
)
_URL_SECRET_NAMES: Final = frozenset(
    [
        "token",
        "key",
        "api_key",
        "apikey",
        "secret",
        "access_token",
        "auth_token",
        "password",
        "pass",
        "passwd",
        "auth",
        "jwt",
        "session",
        "id_token",
        "code",
        "client_secret",
        "app_secret",
        "hook_token",
        "refresh_token",
        "signature",
        "x_amz_signature",
        "x_amz_security_token",
        "private_key",
        "credential",
        "authorization",
        "sig",
        "x_api_key",
        "x_access_token",
        "x_auth_token",
    ]
)
_JS_TRIM: Final = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_QUOTES: Final = "\"'`"
_MIN_LENGTH: Final = 18


def _re(source: str, flags: str = "u") -> re.Pattern[str]:
    return js_regex(source, flags)


# --- masks --------------------------------------------------------------------------------


def mask_token(token: str) -> str:
    """OpenClaw's `maskToken`: `***` for a token under 18 UTF-16 units, else its first 6 and
    last 4 units around `…` (never splitting a surrogate pair)."""
    return from_utf16_units(mask_units(utf16_units(token)))


def mask_units(units: str) -> str:
    """`mask_token` on a string of UTF-16 units."""
    if units == "***":
        return units
    if len(units) < _MIN_LENGTH:
        return "***"
    return f"{slice_utf16_safe(units, 0, 6)}…{slice_utf16_safe(units, -4)}"


def split_secret_value(token: str) -> tuple[str, str, int, int]:
    """OpenClaw's `splitSecretValueForMask`: (the maskable part, the suffix kept, where the
    masked span starts and ends in `token`)."""
    trailing = _re(r"([\"'`,;)}\]]+)$")
    opening = token[:1]
    if opening and opening in _QUOTES:
        closing = token.rfind(opening)
        if closing > 0:
            suffix = token[closing + 1 :]
            if _re(r"^[\"'`,;)}\]]*$").search(suffix):
                return token[1:closing], suffix, 0, closing + 1
        rest = token[1:]
        found = trailing.search(rest)
        delim = found.group(1) if found else ""
        keep = bool(delim) and len(delim) < len(rest)
        maskable = rest[: -len(delim)] if keep else rest
        return maskable, delim if keep else "", 0, 1 + len(maskable)
    found = trailing.search(token)
    delim = found.group(1) if found else ""
    maskable = token[: -len(delim)] if delim and len(delim) < len(token) else token
    return maskable, "" if maskable == token else delim, 0, len(maskable)


# --- URL query and form body values --------------------------------------------------------


def _decode_uri_component(text: str) -> str:
    """JavaScript's `decodeURIComponent` (ValueError where it throws URIError)."""
    if "%" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] != "%":
            out.append(text[i])
            i += 1
            continue
        first = _hex_byte(text, i)
        if first < 0x80:
            out.append(chr(first))
            i += 3
            continue
        size = (
            2
            if 0xC0 <= first < 0xE0
            else 3
            if 0xE0 <= first < 0xF0
            else 4
            if 0xF0 <= first < 0xF8
            else 0
        )
        if not size:
            raise ValueError("URI malformed")
        raw = bytes([first] + [_hex_byte(text, i + 3 * k) for k in range(1, size)])
        out.append(raw.decode("utf-8"))  # strict: overlong, surrogates, ... raise
        i += 3 * size
    return "".join(out)


def _hex_byte(text: str, at: int) -> int:
    digits = text[at + 1 : at + 3]
    if (
        text[at : at + 1] != "%"
        or len(digits) != 2
        or not all(c in "0123456789abcdefABCDEF" for c in digits)
    ):
        raise ValueError("URI malformed")
    return int(digits, 16)


def _lower(text: str) -> str:
    return text.strip(_JS_TRIM).lower()


def _url_param_name(name: str) -> tuple[str, bool]:
    """OpenClaw's `normalizeUrlQueryParamName`: (the name decoded and lowered with `-` as
    `_`, whether an encoding was left unresolved)."""
    sep = _re(_SEPARATOR)
    current = sep.sub("", name)
    for _ in range(9):
        try:
            decoded = sep.sub("", _decode_uri_component(current))
        except ValueError:
            return _lower(current).replace("-", "_"), "%" in current
        if decoded == current:
            return _lower(current).replace("-", "_"), False
        current = decoded
    return _lower(current).replace("-", "_"), "%" in current


def _sensitive_url_param(name: str) -> bool:
    value, unresolved = _url_param_name(name)
    return (
        unresolved
        or value in _URL_SECRET_NAMES
        or bool(_re(r"(?:^|_)token(?:_[a-f0-9]{16,})?$").search(value))
    )


def _body_key_name(key: str) -> str:
    sep = _re(_SEPARATOR)
    stripped = sep.sub("", key)
    try:
        return sep.sub("", _decode_uri_component(stripped)).lower().replace("-", "_")
    except ValueError:
        return stripped.lower().replace("-", "_")


def _sensitive_key(key: str) -> bool:
    return _sensitive_url_param(key) or _body_key_name(key) in _BODY_SECRET_KEYS


def _obfuscated(key: str) -> bool:
    return bool(_re("%[0-9A-Fa-f]{2}").search(key) or _re(f"[{_INVISIBLE}+]").search(key))


_PAIR_PATTERNS: Final = {
    "url": (rf"([?&])({_KEY})=([^&#\s<>]*)", "u", 2),
    "encoded": (rf"(^|[\s:({{\[,=\"'`&])({_KEY})=({_VALUE})", "u", 2),
    "context": (
        rf"(\b(?:body|form(?:[-_\s]?body)?)\s*[:=]\s*([\"'\x60]?))({_KEY})=({_VALUE})([\"'\x60]?)",
        "iu",
        3,
    ),
}


def _visit(text: str, kind: str, visit: Callable[[int, int, str], None]) -> None:
    """OpenClaw's `visitSensitiveAssignments`: each secret value's span and maskable part."""
    if not text or (kind == "url" and "?" not in text):
        return
    if kind == "encoded" and "%" not in text and not _obfuscated(text):
        return
    if kind == "context" and not ("body" in text.lower() or "form" in text.lower()):
        return  # (quicker than OpenClaw's test for `=` or `:`; neither word folds oddly)

    def pair(key: str, token: str, offset: int) -> None:
        if kind == "encoded" and not _obfuscated(key):
            return
        if not _sensitive_key(key):
            return
        maskable, _, start, end = split_secret_value(token)
        visit(offset + start, offset + end, maskable)

    if kind == "form":
        cursor = 0
        for part in text.split("&"):
            equals = part.find("=")
            if equals >= 0:
                pair(part[:equals], part[equals + 1 :], cursor + equals + 1)
            cursor += len(part) + 1
        return
    source, flags, at = _PAIR_PATTERNS[kind]
    for m in _re(source, flags).finditer(text):
        prefix, key = m.group(1) or "", m.group(at) or ""
        pair(key, m.group(at + 1) or "", m.start() + len(prefix) + len(key) + 1)


def _redact_assignments(text: str, kind: str) -> str:
    parts: list[str] = []
    cursor = 0

    def visit(start: int, end: int, maskable: str) -> None:
        nonlocal cursor
        parts.append(text[cursor:start] if start > cursor else "")
        parts.append(mask_token(maskable) if kind == "url" else "***")
        cursor = end

    _visit(text, kind, visit)
    return "".join(parts) + text[cursor:] if parts else text


def redact_url_query(text: str) -> str:
    """Secret URL query values masked (`maskToken`)."""
    return _redact_assignments(text, "url")


def _form_line(text: str) -> str:
    if "=" not in text:  # no pair to redact (quicker than OpenClaw's steps, same answer)
        return text
    text = _redact_assignments(_redact_assignments(text, "encoded"), "context")
    if "&" not in text:
        return text
    if _re(f"^{_PAIR}(?:&{_PAIR})+$").search(text):
        return _redact_assignments(text, "form")

    def body(m: re.Match[str]) -> str:
        redacted = _redact_assignments(m.group(2), "form")
        return m.group(0) if redacted == m.group(2) else f"{m.group(1) or ''}{redacted}"

    text = _re(rf"(^|[\s:({{\[,=\"'`])({_PAIR}(?:&{_PAIR})+)").sub(body, text)
    return _redact_assignments(_redact_assignments(text, "encoded"), "context")


def redact_form_body(text: str) -> str:
    """Form bodies' (and `body=`/`form=` pairs', and encoded keys') secret values as `***`."""
    if "=" not in text:
        return text
    if re.search("\r\n|\r|\n", text):
        segments = re.split("(\r\n|\r|\n)", text)
        return "".join(s if s in ("\r\n", "\r", "\n") else _form_line(s) for s in segments)
    return _form_line(text)


# --- structured Authorization headers ------------------------------------------------------

_TOKEN_CHARS: Final = "A-Za-z0-9!#$%&'*+.^_`|~-"
_SERIAL_TAB: Final = r"\\{1,64}t"
_INDENT: Final = rf"(?:[ \t]+|{_SERIAL_TAB})"
_OPTIONAL_WS: Final = rf"(?:[ \t]*\r?\n{_INDENT}|[ \t]*\\{{1,64}}r\\{{1,64}}n{_INDENT}|[ \t]*\\{{1,64}}n{_INDENT}|[ \t]*{_SERIAL_TAB}[ \t]*|[ \t]*)"
_REQUIRED_WS: Final = rf"(?:[ \t]*\r?\n{_INDENT}|[ \t]*\\{{1,64}}r\\{{1,64}}n{_INDENT}|[ \t]*\\{{1,64}}n{_INDENT}|[ \t]*{_SERIAL_TAB}[ \t]*|[ \t]+)"
_QUOTE: Final = r"(?:\\{1,64}[\"']|[\"']|)"
_AUTH_HEADER: Final = rf"(^|[^A-Za-z0-9_-]|\\{{1,64}}[rn])(?:Proxy-)?Authorization{_QUOTE}[ \t]*[:=]{_OPTIONAL_WS}{_QUOTE}([{_TOKEN_CHARS}]+){_REQUIRED_WS}"
_FIELD_STOP: Final = "\r\n;\\\"'}]"


def _at(value: str, i: int) -> str:
    return value[i] if 0 <= i < len(value) else ""


def _skip_horizontal(value: str, i: int) -> int:
    while _at(value, i) in (" ", "\t") and _at(value, i):
        i += 1
    return i


def _serial_end(value: str, i: int, letter: str) -> int | None:
    """Where `\\...<letter>` (1 to 64 backslashes) at `i` ends, or None."""
    slashes = 0
    while slashes < 64 and _at(value, i) == "\\":
        slashes, i = slashes + 1, i + 1
    return i + 1 if slashes and _at(value, i) == letter else None


def _serial_line_end(value: str, i: int) -> int | None:
    end = _serial_end(value, i, "n")
    if end is not None:
        return end
    r_end = _serial_end(value, i, "r")
    return None if r_end is None else _serial_end(value, r_end, "n")


def _skip_auth_ws(value: str, i: int) -> int:
    while True:
        i = _skip_horizontal(value, i)
        tab = _serial_end(value, i, "t")
        if tab is not None:
            i = tab
            continue
        if _at(value, i) == "\r" and _at(value, i + 1) == "\n":
            line: int | None = i + 2
        elif _at(value, i) == "\n":
            line = i + 1
        else:
            line = _serial_line_end(value, i)
        if line is None or (
            (_at(value, line) not in (" ", "\t") or not _at(value, line))
            and _serial_end(value, line, "t") is None
        ):
            return i
        i = line


def _param_name(value: str, i: int) -> tuple[str, int] | None:
    m = _re(f"[{_TOKEN_CHARS}]+").match(value, i)
    return (m.group(0).lower(), m.end()) if m else None


def _header_start(value: str, i: int) -> bool:
    prev = _at(value, i - 1) if i > 0 else ""
    serial = False
    if prev in ("n", "r") and prev:
        cursor, slashes = i - 2, 0
        while slashes < 64 and cursor >= 0 and value[cursor] == "\\":
            slashes, cursor = slashes + 1, cursor - 1
        serial = slashes > 0
    if not serial and prev and re.fullmatch("[A-Za-z0-9_-]", prev):
        return False
    candidate = value[i : i + 19].lower()
    name = (
        "proxy-authorization"
        if candidate == "proxy-authorization"
        else "authorization"
        if candidate.startswith("authorization")
        else None
    )
    if name is None:
        return False
    cursor, slashes = i + len(name), 0
    while slashes < 64 and _at(value, cursor) == "\\":
        slashes, cursor = slashes + 1, cursor + 1
    if _at(value, cursor) in ('"', "'") and _at(value, cursor):
        cursor += 1
    elif slashes:
        return False
    return _at(value, _skip_horizontal(value, cursor)) in (":", "=") and bool(
        _at(value, _skip_horizontal(value, cursor))
    )


def _next_param(value: str, start: int) -> int | None:
    cursor = start
    while True:
        cursor = _skip_auth_ws(value, cursor)
        if cursor > start and _header_start(value, cursor):
            return None
        if cursor >= len(value) or value[cursor] in "\r\n;":
            return None
        if value[cursor] == ",":
            cursor += 1
            continue
        param = _param_name(value, cursor)
        if param:
            equals = _skip_auth_ws(value, param[1])
            if _at(value, equals) == "=" and _at(value, equals + 1) != "=":
                return cursor
        while cursor < len(value):
            ws_end = _skip_auth_ws(value, cursor)
            if ws_end > cursor:
                cursor = ws_end
                continue
            if cursor > start and _header_start(value, cursor):
                return None
            char = value[cursor]
            if char in "\r\n;":
                return None
            cursor += 1
            if char == ",":
                break


def _field_end(value: str, start: int) -> int:
    cursor = start
    while cursor < len(value):
        ws_end = _skip_auth_ws(value, cursor)
        if ws_end > cursor:
            cursor = ws_end
            continue
        if cursor > start and _header_start(value, cursor):
            break
        if value[cursor] in _FIELD_STOP:
            break
        cursor += 1
    return cursor


def _quoted_end(value: str, start: int) -> int | None:
    slashes = 0
    while _at(value, start + slashes) == "\\":
        slashes += 1
    escaped = slashes > 0 and _at(value, start + slashes) == '"'
    quote = value[start] if _at(value, start) in ('"', "'") and _at(value, start) else None
    cursor = start + (slashes + 1 if escaped else 1)
    while cursor < len(value):
        char = value[cursor]
        if char in "\r\n":
            ws_end = _skip_auth_ws(value, cursor)
            if ws_end == cursor:
                break
            cursor = ws_end
            continue
        if escaped and char == "\\":
            slash_end = cursor + 1
            while _at(value, slash_end) == "\\":
                slash_end += 1
            if _at(value, slash_end) == '"':
                if (slash_end - cursor) % (2 * (slashes + 1)) == slashes:
                    return slash_end + 1
                cursor = slash_end + 1
                continue
            cursor = slash_end
            continue
        if not escaped and char == "\\" and cursor + 1 < len(value):
            cursor += 2
            continue
        if not escaped and char == quote:
            return cursor + 1
        cursor += 1
    return cursor if cursor > start + 1 else None


def _param_value_end(value: str, start: int, *, aws_scope: bool, signed: bool) -> int | None:
    slashes = 0
    while _at(value, start + slashes) == "\\":
        slashes += 1
    if (_at(value, start) in ('"', "'") and _at(value, start)) or (
        slashes > 0 and _at(value, start + slashes) == '"'
    ):
        return _quoted_end(value, start)
    if signed:
        m = _re(f":?[{_TOKEN_CHARS}]+(?:;:?[{_TOKEN_CHARS}]+)*").match(value, start)
        if not m:
            return None
        nxt = _at(value, m.end())
        return m.end() if nxt in ("", ",", " ", "\t", "\r", "\n") else None
    chars = f"{_TOKEN_CHARS[:-1]}:/-" if aws_scope else _TOKEN_CHARS
    m = _re(f"[{chars}]+").match(value, start)
    return m.end() if m else None


def _auth_ranges(value: str) -> list[tuple[int, int]]:
    """OpenClaw's `findStructuredAuthParamRanges`: the parameter spans of each header."""
    ranges = []
    for header in _re(_AUTH_HEADER, "giu").finditer(value):
        scheme = (header.group(2) or "").lower()
        cursor = range_start = range_end = header.end()
        direct = _param_name(value, cursor)
        equals = _skip_auth_ws(value, direct[1]) if direct else None
        if (
            direct is None
            or equals is None
            or _at(value, equals) != "="
            or _at(value, equals + 1) == "="
        ):
            uses_params = scheme in ("digest", "hawk") or scheme.startswith("aws4-")
            if _at(value, _skip_auth_ws(value, cursor)) != "," and not uses_params:
                continue
            first = _next_param(value, cursor)
            if first is None:
                continue
            cursor = first
        range_end = _param_spans(value, cursor, scheme, range_end)
        if range_end > range_start:
            ranges.append((range_start, range_end))
    return ranges


def _param_spans(value: str, cursor: int, scheme: str, range_end: int) -> int:
    """Where a header's parameters starting at `cursor` end (`range_end` at least)."""
    while True:
        param = _param_name(value, cursor)
        if not param:
            return range_end
        cursor = _skip_auth_ws(value, param[1])
        if _at(value, cursor) != "=":
            return range_end
        cursor = _skip_auth_ws(value, cursor + 1)
        end = _param_value_end(
            value,
            cursor,
            aws_scope=scheme.startswith("aws4-") and param[0] == "credential",
            signed=param[0] == "signedheaders",
        )
        if end is None:
            nxt = _next_param(value, cursor)
            if nxt is not None:
                cursor = nxt
                continue
            return max(range_end, _field_end(value, cursor))
        range_end = end
        sep = _skip_auth_ws(value, end)
        if _at(value, sep) != ",":
            if _at(value, sep) and _at(value, sep) not in _FIELD_STOP:
                nxt = _next_param(value, sep)
                if nxt is not None:
                    cursor = nxt
                    continue
                range_end = max(range_end, _field_end(value, sep))
            return range_end
        nxt = _next_param(value, sep + 1)
        if nxt is None:
            return range_end
        cursor = nxt


def redact_structured_auth(value: str) -> str:
    """The parameters of structured Authorization headers replaced by `***`."""
    ranges = _auth_ranges(value)
    if not ranges:
        return value
    merged: list[list[int]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    parts, cursor = [], 0
    for start, end in merged:
        parts += [value[cursor:start], "***"]
        cursor = end
    parts.append(value[cursor:])
    return "".join(parts)
