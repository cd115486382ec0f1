"""OpenClaw 2026.9.6's redaction of a tool payload's text (`redactToolPayloadText`), as its
gateway runs it without `logging.redactPatterns`: the text is left alone unless its prefilter
finds a hint of a credential; then structured Authorization parameters, secret URL query
values and form values (`_redact_forms`), then each of its default patterns
(`_redact_patterns`: environment and config assignments, JSON fields, CLI flags, headers,
URL userinfo, PEM private keys, vendor tokens), then its AWS secret access key scanner.

A match's secret part (its last non-empty group) is masked as OpenClaw masks it: the first 6
and last 4 UTF-16 units around `…` when 18 units or longer, else `***`; quotes and trailing
delimiters kept; a PEM block keeps its first and last line around `…redacted…`. The patterns
run over UTF-16 units as JavaScript's do, in 16,384-unit chunks for a text over 32,768 units
(but those OpenClaw never chunks). OpenClaw also masks the exact values of secrets its
gateway resolved (its secret registry); clawlane keeps no such registry.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterator
from typing import Final

import attrs

from ._jsregex import JS_SPACE, from_utf16_units, js_regex, utf16_units
from ._redact_forms import (
    mask_units,
    redact_form_body,
    redact_structured_auth,
    redact_url_query,
    split_secret_value,
)
from ._redact_patterns import DEFAULT_PATTERNS

__all__ = ["redact_tool_payload_text"]

_CHUNK_THRESHOLD: Final = 32768
_CHUNK_SIZE: Final = 16384
_BASE64_LOOKBEHIND: Final = "(?<!;base64,[A-Za-z0-9+/=]*)"
_B64: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_AWS_CHARS: Final = _B64
_SPACES: Final = frozenset("\t\n\x0b\x0c\r \xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {
    chr(c) for c in range(0x2000, 0x200B)
}
_INVISIBLE: Final = r"\p{C}\u00A0\u1680\u2000-\u200A\u202F\u205F\u3000\u115F\u1160\u3164\uFFA0"
_PREFILTER: Final = "|".join(
    (
        r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|AUTH|COOKIE|SIGNATURE|CREDENTIAL|CARD|CVC|CVV|PAYMENT|PRIVATE KEY",
        r"security[-_]?code|\bpass\s*[=:]|\bpassphrase\s*[=:]|_(?:password|pass|passphrase|passwd)\s*[=:]|jwt\s*[=:]|session=|code=|\bsig\s*=",
        r"\bBearer\s+",
        r":\/\/[^\/\s:@]*:[^\s@]+@",
        r"sk-|gh[opsur]_|github_pat_|glpat-|gloas-|gldt-|glcbt-|glptt-|glft-|glimt-|glagent-|glwt-|glsoat-|glffct-|glrt-|glrtr-|GR1348941|_gitlab_session=|xox[baprs]-|xapp-|hooks\.slack\.com|discord|gsk_|AIza|ya29\.|1\/\/0|eyJ|pplx-|fal_|fc-|bb_live_|gAAAA|[sr]k_(?:live|test)_|SG\.|npm_|pypi-|do[opr]_v1_|dp\.(?:ct|pt|sa|st|scim|audit)\.|dckr_|bkua_|CCIPAT_|sbp_|dapi[0-9a-f]|dd[pw]_|glsa_|nfp_|CFPAT-|ATCTT3|ATATT|ATBB|BBDC-|HRKU-|pat-(?:eu|na)1-|apify_api_|FlyV1|fio-u-|tvly-|exa_|syt_|retaindb_|mem0_|brv_|xai-|fw-|fw_|fpk_",
        r"(?:^|[^A-Za-z0-9_])(?:am_|sk_)",
        r"A[KS]IA[A-Z0-9]|AKID|LTAI|hf_|api_org_|r8_",
        r"\bbot\d{6,}:|\b\d{6,}:[A-Za-z0-9_-]{20,}",
        rf"%[0-9A-Fa-f]{{2}}[{_INVISIBLE}+A-Za-z0-9_%.-]*=",
    )
)
_SCHEME_CHARS: Final = frozenset(string.ascii_letters + string.digits + "+.-")
_FORM_KEY_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_%.-"


@attrs.frozen
class _Pattern:
    regex: re.Pattern[str] | None  # None: the PEM scanner
    shell: bool
    form: bool
    whole: bool
    base64_guard: bool
    literal: str | None  # text every match holds (lowered when case-insensitive)
    folded: bool


_BOUNDARIES: Final = ("\\b", "(^|[^A-Za-z0-9])", "(^|[^A-Za-z0-9_])")


def _required_literal(source: str, folded: bool) -> str | None:
    """The literal a pattern's every match starts with (after a boundary), if any: a quick
    test that spares running it over a text without it."""
    rest = source
    for boundary in _BOUNDARIES:
        rest = rest.removeprefix(boundary)
    if rest.startswith("(") and not rest.startswith("(?"):
        rest = rest[1:]
    literal, i = [], 0
    while i < len(rest):
        c = rest[i]
        if c == "\\" and rest[i + 1 : i + 2] in (".", "/", "-"):
            literal.append(rest[i + 1])
            i += 2
        elif c.isascii() and (c.isalnum() or c in "_- "):
            literal.append(c)
            i += 1
        else:
            break
    stop = rest[i : i + 1]
    if stop in ("|", ")"):
        return None
    if stop in ("?", "*", "{"):
        literal = literal[:-1]
    text = "".join(literal)
    return (text.lower() if folded else text) if len(text) >= 2 else None


@functools.cache
def _patterns() -> tuple[_Pattern, ...]:
    compiled = []
    for source, flags, marks in DEFAULT_PATTERNS:
        kinds = marks.split()
        plain = source.replace(_BASE64_LOOKBEHIND, "")
        regex = None if "pem" in kinds else js_regex(plain, flags)
        folded = "i" in flags
        compiled.append(
            _Pattern(
                regex,
                shell="shell" in kinds,
                form="form" in kinds,
                whole="whole" in kinds,
                base64_guard=_BASE64_LOOKBEHIND in source,
                literal=None if regex is None else _required_literal(plain, folded),
                folded=folded,
            )
        )
    return tuple(compiled)


# --- the prefilter -------------------------------------------------------------------------


@functools.cache
def _invisible_or_plus() -> re.Pattern[str]:
    return js_regex(f"[{_INVISIBLE}+]", "u")


def _key_equals(text: str) -> bool:
    """The prefilter's two look-behinds at an `=`: a form key with an invisible character
    or `+` in it (`(?<=(?:\\+|[inv])(?:[inv+]*[key])+[inv+]*=)`, `(?<=[key][inv+]+=)`)."""
    other = _invisible_or_plus()
    for p in (i for i, c in enumerate(text) if c == "="):
        j = p - 1
        while j >= 0 and other.fullmatch(text[j]):
            j -= 1
        if j < p - 1 and j >= 0 and text[j] in _FORM_KEY_CHARS:
            return True
        start, last_key = p, -1
        while start > 0 and (
            text[start - 1] in _FORM_KEY_CHARS or other.fullmatch(text[start - 1])
        ):
            start -= 1
            if last_key < 0 and text[start] in _FORM_KEY_CHARS:
                last_key = start
        if last_key > 0 and any(other.fullmatch(c) for c in text[start:last_key]):
            return True
    return False


def _prefiltered(text: str) -> bool:
    # ASCII folding first (quicker); JavaScript's Unicode folding adds only ſ and K
    if js_regex(f"(?:{_PREFILTER})", "i").search(text):
        return True
    return ("\u017f" in text or "\u212a" in text) and bool(
        js_regex(f"(?:{_PREFILTER})", "iu").search(text)
    )


def _could_match(text: str) -> bool:
    """OpenClaw's `couldMatchDefaultRedactPatterns` (its cheap test before redacting)."""
    return _prefiltered(text) or ("=" in text and _key_equals(text)) or _aws_could_match(text)


# --- PEM blocks and AWS secret access keys -------------------------------------------------


def _pem_blocks(text: str) -> Iterator[tuple[int, int]]:
    """OpenClaw's PEM scanner: the spans of `-----BEGIN ... PRIVATE KEY-----` to the next
    `-----END ... PRIVATE KEY-----` (letters case-insensitive)."""
    phase, dashes, keyword, at, start, suffix = "search", 0, "BEGIN ", 0, 0, ""
    opened: tuple[int, int] | None = None
    match_end = 0
    index = 0
    while index < len(text):
        if phase == "search" and dashes == 0:
            index = text.find("-", index)
            if index < 0:
                return
        char = text[index].upper() if "a" <= text[index] <= "z" else text[index]
        if phase == "search":
            if char == "-":
                dashes = min(5, dashes + 1)
            elif dashes == 5 and char in ("B", "E"):
                phase, keyword, at, start = (
                    "keyword",
                    "BEGIN " if char == "B" else "END ",
                    1,
                    index - 5,
                )
            else:
                dashes = 0
        elif phase == "keyword":
            if char != keyword[at]:
                phase, dashes, suffix = "search", int(char == "-"), ""
            else:
                at += 1
                if at == len(keyword):
                    phase, suffix = "label", ""
        elif phase == "label":
            if "A" <= char <= "Z" or char == " ":
                suffix = (suffix + char)[-11:]
            elif char == "-" and suffix == "PRIVATE KEY":
                phase, dashes = "close", 1
            else:
                phase, dashes, suffix = "search", int(char == "-"), ""
        elif char != "-":
            phase, dashes, suffix = "search", 0, ""
        else:
            dashes += 1
            if dashes == 5:
                phase, suffix = "search", ""
                if opened is None:
                    if keyword == "BEGIN " and start >= match_end:
                        opened = (start, index + 1)
                elif keyword == "END " and start > opened[1]:
                    yield opened[0], index + 1
                    opened, match_end = None, index + 1
        index += 1


def _aws_could_match(text: str) -> bool:
    return (
        len(text) >= 40
        and bool(js_regex("[A-Za-z0-9/+=]{40}", "u").search(text))
        and bool(_aws_value().search(text))
    )


@functools.cache
def _aws_value() -> re.Pattern[str]:
    return js_regex(
        "(?=[A-Za-z0-9/+=]{0,39}[A-Z])(?=[A-Za-z0-9/+=]{0,39}[a-z])(?=[A-Za-z0-9/+=]{0,39}[0-9/+=])"
        "(?=[A-Za-z0-9/+=]{0,39}[G-Zg-z/+=])[A-Za-z0-9/+=]{40}",
        "u",
    )


@attrs.define
class _Url:
    start: int
    end: int
    closing: str | None
    closing_escapes: int
    authority_end: int = -1
    port_start: int = -1
    port_valid: bool = True
    has_at: bool = False
    query_or_fragment: bool = False


_CLOSING: Final = {'"': '"', "'": "'", "`": "`", "<": ">", "(": ")", "[": "]", "{": "}"}


def _aws_keys(text: str) -> Iterator[tuple[int, int]]:
    """OpenClaw's `matchAwsSecretAccessKeys`: 40-character runs that look like AWS secret
    access keys, outside public URLs and base64 data."""
    if not _aws_could_match(text):
        return
    run_start = scheme_start = -1
    url: _Url | None = None
    backslashes = 0
    runs: list[tuple[int, int, int, _Url | None]] = []
    for index in range(len(text) + 1):
        char = text[index] if index < len(text) else ""
        escape_depth = backslashes
        backslashes = backslashes + 1 if char == "\\" else 0
        if char and char in _AWS_CHARS:
            if run_start == -1:
                run_start = index
        elif run_start != -1:
            if index - run_start == 40:
                runs.append((run_start, index, run_start, url))
            elif index - run_start > 40 and char == "@" and text[index - 41] == "/":
                runs.append((index - 40, index, run_start, url))
            run_start = -1
        if index == len(text) or char in _SPACES:
            if url:
                url.end = min(url.end, index)
            yield from _aws_runs(text, runs)
            runs.clear()
            scheme_start, url = -1, None
            continue
        if url and index >= url.start:
            url = _track_url(url, char, index, escape_depth)
        if char in _SCHEME_CHARS:
            if scheme_start == -1:
                scheme_start = index
            continue
        if (
            (not url or (index >= url.end and not url.query_or_fragment))
            and char == ":"
            and text.startswith("//", index + 1)
            and scheme_start != -1
            and text[scheme_start] in string.ascii_letters
        ):
            opening = text[scheme_start - 1] if scheme_start > 0 else ""
            escapes, at = 0, scheme_start - 2
            while at >= 0 and text[at] == "\\":
                escapes, at = escapes + 1, at - 1
            url = _Url(index + 3, len(text), _CLOSING.get(opening), escapes)
        scheme_start = -1


def _track_url(url: _Url, char: str, index: int, escape_depth: int) -> _Url | None:
    if char == url.closing and escape_depth == url.closing_escapes:
        url.end = min(url.end, index)
        return None
    if char in "?#\"'<>`|()[]{}":
        url.end = min(url.end, index)
    url.query_or_fragment = url.query_or_fragment or char in ("?", "#")
    if url.authority_end == -1:
        url.has_at = url.has_at or char == "@"
        if char in "/?#":
            url.authority_end = index
        elif index < url.end:
            if char == ":":
                url.port_valid = url.port_valid and url.port_start == -1
                url.port_start = index
            elif url.port_start != -1 and not ("0" <= char <= "9"):
                url.port_valid = False
    return url


def _aws_runs(
    text: str, runs: list[tuple[int, int, int, _Url | None]]
) -> Iterator[tuple[int, int]]:
    for start, end, origin, ctx in runs:
        public = bool(
            ctx
            and not ctx.has_at
            and ctx.port_valid
            and (
                ctx.port_start == -1
                or (ctx.end if ctx.authority_end == -1 else ctx.authority_end) > ctx.port_start + 1
            )
        )
        before = text[start - 1] if start > 0 else ""
        after = text[end] if end < len(text) else ""
        port_credential = bool(
            ctx
            and ctx.port_start != -1
            and origin == ctx.port_start + 1
            and ctx.authority_end > origin
            and end > ctx.authority_end
            and after == "@"
        )
        if (
            (start == origin and (before == "_" or (before != "" and before in _AWS_CHARS)))
            or after == "_"
            or text[origin - 8 : origin] == ";base64,"
            or (public and not port_credential and ctx and start >= ctx.start and end <= ctx.end)
        ):
            continue
        if _aws_value().search(text[start:end]):
            yield start, end


# --- masking a match -----------------------------------------------------------------------


def _pem_masked(block: str) -> str:
    lines = [line for line in re.split(r"\r?\n", block) if line]
    return "***" if len(lines) < 2 else f"{lines[0]}\n…redacted…\n{lines[-1]}"


def _shell_reference(match: str, token: str) -> bool:
    """OpenClaw keeps `KEY=$KEY` / `KEY=${KEY:-...}` and an empty expansion tail as they are."""
    if re.fullmatch(r"[-=?+]\}", token):
        return True
    key = re.search(
        r"(?<![A-Za-z0-9_])([A-Z_][A-Z0-9_]*)(?![A-Za-z0-9_])[" + JS_SPACE + "]*[=:]", match
    )
    if not key or not re.fullmatch("[A-Z_][A-Z0-9_]*", key.group(1)):
        return False
    bare = re.fullmatch(r"\$([A-Z_][A-Z0-9_]*)", token)
    if bare:
        return bare.group(1) == key.group(1)
    braced = re.fullmatch(r"\$\{([A-Z_][A-Z0-9_]*)(?::[-=?+])?\}", token)
    return braced is not None and braced.group(1) == key.group(1)


def _masked_match(m: re.Match[str], pattern: _Pattern) -> str:
    """OpenClaw's `redactMatch` for a regular expression's match (UTF-16 units)."""
    match = m.group(0)
    if "PRIVATE KEY-----" in match:
        return _pem_masked(match)
    groups = [g or "" for g in m.groups()]
    chosen = max((i for i, g in enumerate(groups) if g), default=-1)
    token = groups[chosen] if chosen >= 0 else match
    if token == "***":
        return match
    start = 0 if token == match else m.start(chosen + 1) - m.start()
    secret, suffix = token, ""
    if pattern.form:
        boundary = re.search(r"&[A-Za-z_][A-Za-z0-9_.-]*=", token)
        if boundary:
            secret, suffix = token[: boundary.start()], token[boundary.start() :]
    maskable, kept, _, _ = split_secret_value(secret)
    if maskable == "***":
        return match
    if pattern.shell:
        if _shell_reference(match, token):
            return match
        masked = mask_units(token)
    else:
        masked = f"{mask_units(maskable)}{kept}{suffix}"
    return match[:start] + masked + match[start + len(token) :]


def _base64_data(text: str, at: int) -> bool:
    """Whether `at` follows `;base64,` and base64 characters (`(?<!;base64,[A-Za-z0-9+/=]*)`)."""
    start = at
    while start > 0 and text[start - 1] in _B64:
        start -= 1
    return text[start - 8 : start] == ";base64," and start >= 8


def _replace(text: str, pattern: _Pattern) -> str:
    """JavaScript's `text.replace(globalRegex, redactMatch)`."""
    assert pattern.regex is not None
    parts: list[str] = []
    last = pos = 0
    while pos <= len(text):
        m = pattern.regex.search(text, pos)
        if not m:
            break
        if pattern.base64_guard and _base64_data(text, m.end(1)):
            pos = m.start() + 1
            continue
        parts += [text[last : m.start()], _masked_match(m, pattern)]
        last = m.end()
        pos = m.end() if m.end() > m.start() else m.end() + 1
    return "".join(parts) + text[last:] if parts else text


def _apply(text: str, pattern: _Pattern) -> str:
    if pattern.regex is None:
        parts, last = [], 0
        for start, end in _pem_blocks(text):
            parts += [text[last:start], _pem_masked(text[start:end])]
            last = end
        return "".join(parts) + text[last:] if parts else text
    if pattern.whole or len(text) <= _CHUNK_THRESHOLD:
        return _replace(text, pattern)
    output: str | None = None
    for index in range(0, len(text), _CHUNK_SIZE):
        chunk = text[index : index + _CHUNK_SIZE]
        replaced = _replace(chunk, pattern)
        if output is not None:
            output += replaced
        elif replaced != chunk:
            output = text[:index] + replaced
    return text if output is None else output


def _apply_aws(text: str) -> str:
    parts, last = [], 0
    for start, end in _aws_keys(text):
        token = text[start:end]
        maskable, kept, _, _ = split_secret_value(token)
        parts += [text[last:start], f"{mask_units(maskable)}{kept}"]
        last = end
    return "".join(parts) + text[last:] if parts else text


def redact_tool_payload_text(text: str) -> str:
    """`text` redacted as OpenClaw's `redactToolPayloadText` (default logging config)."""
    if not text or not _could_match(text):
        return text
    units = utf16_units(redact_form_body(redact_url_query(redact_structured_auth(text))))
    lowered = units.lower()
    for pattern in _patterns():
        if pattern.literal and pattern.literal not in (lowered if pattern.folded else units):
            continue
        changed = _apply(units, pattern)
        if changed != units:
            units, lowered = changed, changed.lower()
    return from_utf16_units(_apply_aws(units))
