"""HTML to coarse markdown, and markdown to text, as OpenClaw 2026.9.6's `web_fetch` does them
without Readability (its `htmlToMarkdown` / `htmlFragmentToMarkdown`, its html-scanner and
entity decoding, `markdownToText`, `normalizeWhitespace`): what it shows of an HTML error page
(`Web fetch failed (404): ...`).

Only titles, links, headings (`# ...`), list items (`- ...`) and line breaks are rendered;
`script`, `style` and `noscript` are skipped with their content, comments dropped, other tags
dropped with their text kept, entities decoded once (named ones only with their `;`). A
scanner, not a parser: it reads malformed markup as OpenClaw's does. Pure; linear in the input
(nesting is capped at 32 contexts).
"""

from __future__ import annotations

import re
from html.entities import html5
from typing import Final, NamedTuple

from attrs import define, field

__all__ = ["html_to_markdown", "markdown_to_text", "normalize_whitespace"]

_RAW_TEXT_TAGS: Final = ("script", "style", "noscript")
_BLOCK_BREAK_TAGS: Final = frozenset(
    ["p", "div", "section", "article", "header", "footer", "table", "tr", "ul", "ol"]
)
_MAX_DEPTH: Final = 32
# JavaScript's \s, and its trim()'s set (Python's would also take \x1c-\x1f and \x85).
_JS_SPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_NOT_SPACE: Final = re.compile(f"[^{_JS_SPACE}]")
_HEADING: Final = re.compile(r"^h[1-6]$")
_ENTITY: Final = re.compile(r"&(?:#x([0-9a-f]+)|#(\d+)|([a-z][a-z0-9]+));", re.IGNORECASE)
_LEGACY_NAMES: Final = re.compile(r"^(?:amp|quot|apos|lt|gt)$", re.IGNORECASE)
_NBSP: Final = re.compile("&nbsp;", re.IGNORECASE)


def _at(text: str, index: int) -> str:
    """`text[index]`, or "" past either end (JavaScript's `undefined`)."""
    return text[index] if 0 <= index < len(text) else ""


def _space(ch: str) -> bool:
    return ch in (" ", "\n", "\r", "\t", "\f") and ch != ""


def _name_char(ch: str) -> bool:
    return ch != "" and ((ch.isascii() and ch.isalnum()) or ch in ".-_:")


def _name_start(ch: str) -> bool:
    return ch != "" and ch.isascii() and ch.isalpha()


def _boundary(ch: str) -> bool:
    return not ch or _space(ch) or ch in (">", "/")


def _lower(ch: str) -> str:
    return ch.lower() if "A" <= ch <= "Z" else ch


def _js_trim(text: str) -> str:
    return text.strip(_JS_SPACE)


# --- entities ------------------------------------------------------------------------------


def _decode_html_entities(text: str) -> str:
    """Semicolon-terminated named and numeric entities decoded once (OpenClaw's
    `decodeHtmlEntities`)."""
    if "&" not in text:
        return text

    def decode(match: re.Match[str]) -> str:
        entity = match.group(0)
        hexa, decimal, name = match.groups()
        if hexa is None and decimal is None:
            found = html5.get(f"{name};")
            if found is None and _LEGACY_NAMES.match(name):
                found = html5.get(f"{name.lower()};")
            return entity if found is None else found
        code = int(hexa, 16) if hexa is not None else int(decimal)
        if 0 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
            return chr(code)
        return entity

    return _ENTITY.sub(decode, text)


def _decode_entities(text: str) -> str:
    return _decode_html_entities(_NBSP.sub("\u00a0", text)).replace("\u00a0", " ")


# --- the scanner (OpenClaw's html-scanner, its "render" mode) -------------------------------


def _starts_with_closing_tag(html: str, start: int, tag: str) -> bool:
    if _at(html, start) != "<" or _at(html, start + 1) != "/":
        return False
    for offset, ch in enumerate(tag):
        if _lower(_at(html, start + 2 + offset)) != ch:
            return False
    return _boundary(_at(html, start + 2 + len(tag)))


def _raw_text_open_tag(html: str, start: int) -> str | None:
    if _at(html, start) != "<" or _at(html, start + 1) == "/":
        return None
    for tag in _RAW_TEXT_TAGS:
        matches = all(_lower(_at(html, start + 1 + i)) == ch for i, ch in enumerate(tag))
        if matches and _boundary(_at(html, start + 1 + len(tag))):
            return tag
    return None


def _raw_text_open_tag_start(html: str, start: int, end: int) -> int:
    span = html[start:end]
    offset = span.find("<")
    while offset != -1:
        if _raw_text_open_tag(html, start + offset):
            return start + offset
        offset = span.find("<", offset + 1)
    return -1


def _starts_like_tag(html: str, start: int) -> bool:
    after = _at(html, start + 1)
    return after in ("!", "?", "/") or _name_start(after)


def _tag_end(html: str, start: int) -> tuple[int, int | None]:
    """Where the tag opened at `start` ends (its `>`), else -1 and where a raw-text element
    it runs into starts."""
    after_equals = False
    raw_in_quote: int | None = None
    i = start + 1
    while i < len(html):
        ch = html[i]
        if after_equals and _space(ch):
            i += 1
            continue
        if after_equals and ch in ('"', "'"):
            quote_end = html.find(ch, i + 1)
            if raw_in_quote is None:
                found = _raw_text_open_tag_start(
                    html, i + 1, len(html) if quote_end == -1 else quote_end
                )
                if found != -1:
                    raw_in_quote = found
            if quote_end == -1:
                return -1, raw_in_quote
            i = quote_end + 1
            after_equals = False
            continue
        after_equals = False
        if _raw_text_open_tag(html, i):
            return -1, i
        if ch == ">":
            return i, None
        if ch == "=":
            after_equals = True
        i += 1
    return -1, raw_in_quote


def _self_closing(raw: str) -> bool:
    trimmed = raw.rstrip()
    if not trimmed.endswith("/"):
        return False
    before_slash = _at(trimmed, len(trimmed) - 2)
    separated = any(_space(ch) for ch in trimmed[:-1])
    return not before_slash or _space(before_slash) or before_slash in ('"', "'") or not separated


def _skip_comment(html: str, start: int) -> int:
    if _at(html, start + 4) == ">":
        return start + 5
    if html.startswith("->", start + 4):
        return start + 6
    end = html.find("--", start + 4)
    while end != -1:
        bracket = end + 3 if _at(html, end + 2) == "!" else end + 2
        if _at(html, bracket) == ">":
            return bracket + 1
        end = html.find("--", end + 1)
    return len(html)


class _Token(NamedTuple):
    closing: bool
    name: str
    raw: str
    self_closing: bool


def _read_tag(html: str, start: int) -> tuple[_Token | None, int] | None:
    if html.startswith("<!--", start):
        return None, _skip_comment(html, start)
    end, raw_start = _tag_end(html, start)
    if end == -1:
        return None if raw_start is None else (None, raw_start)
    raw = html[start + 1 : end]
    pos = 0
    closing = _at(raw, 0) == "/"
    if closing:
        pos = 1
    if not _name_start(_at(raw, pos)):
        return None, end + 1
    name_start = pos
    while pos < len(raw) and not _space(raw[pos]) and raw[pos] not in ("/", ">"):
        pos += 1
    name = "".join("\ufffd" if ch == "\0" else _lower(ch) for ch in raw[name_start:pos])
    return _Token(closing, name, raw, _self_closing(raw)), end + 1


def _raw_text_end(html: str, tag: str, content_start: int) -> int:
    """Where the raw-text element `tag` whose content starts at `content_start` ends."""
    if tag == "script":
        state = "data"
        cursor = content_start
        while cursor < len(html):
            if state == "data" and html.startswith("<!--", cursor):
                state = "escaped"
                cursor += 2
                continue
            if state != "data" and html.startswith("-->", cursor):
                state = "data"
                cursor += 3
                continue
            if html[cursor] == "<":
                if _starts_with_closing_tag(html, cursor, tag):
                    if state == "double-escaped":
                        state = "escaped"
                        cursor += len(tag) + 2
                        continue
                    close_end = _tag_end(html, cursor)[0]
                    return len(html) if close_end == -1 else close_end + 1
                if state == "escaped" and _raw_text_open_tag(html, cursor) == "script":
                    state = "double-escaped"
                    cursor += len(tag)
            cursor += 1
        return len(html)
    close_start = html.find("</", content_start)
    while close_start != -1:
        if _starts_with_closing_tag(html, close_start, tag):
            close_end = _tag_end(html, close_start)[0]
            return len(html) if close_end == -1 else close_end + 1
        close_start = html.find("</", close_start + 2)
    return len(html)


def _skip_raw_text_element(html: str, start: int, tag: str) -> int:
    opener_end = _tag_end(html, start)[0]
    return _raw_text_end(html, tag, start + len(tag) + 1 if opener_end == -1 else opener_end + 1)


def _skip_unsupported_attribute(raw: str, start: int) -> int:
    pos = start
    while pos < len(raw) and not _space(raw[pos]):
        if raw[pos] in ('"', "'"):
            value_end = raw.find(raw[pos], pos + 1)
            pos = len(raw) if value_end == -1 else value_end + 1
            continue
        pos += 1
    return pos


def _attribute(raw: str, name: str) -> str | None:
    """The value of attribute `name` in a tag's text, entities decoded."""
    target = name.lower()
    pos = 0
    while pos < len(raw) and not _space(raw[pos]):
        pos += 1
    while pos < len(raw):
        while pos < len(raw) and (_space(raw[pos]) or raw[pos] == "/"):
            pos += 1
        attr_start = pos
        while pos < len(raw) and _name_char(raw[pos]):
            pos += 1
        if pos == attr_start:
            pos = _skip_unsupported_attribute(raw, pos)
            continue
        attr_name = raw[attr_start:pos].lower()
        while pos < len(raw) and _space(raw[pos]):
            pos += 1
        value = ""
        if _at(raw, pos) == "=":
            pos += 1
            while pos < len(raw) and _space(raw[pos]):
                pos += 1
            quote = _at(raw, pos)
            if quote in ('"', "'") and quote:
                value_end = raw.find(quote, pos + 1)
                if value_end == -1:
                    value, pos = raw[pos + 1 :], len(raw)
                else:
                    value, pos = raw[pos + 1 : value_end], value_end + 1
            else:
                value_start = pos
                while pos < len(raw) and not _space(raw[pos]) and raw[pos] not in "\"'=<>`":
                    pos += 1
                value = raw[value_start:pos]
        if attr_name == target:
            return _decode_entities(value)
    return None


# --- the renderer --------------------------------------------------------------------------


@define
class _Context:
    kind: str
    parts: list[str] = field(factory=list)
    href: str | None = None
    has_text: bool = False
    level: int = 1


@define
class _State:
    title: str | None = None


def normalize_whitespace(value: str) -> str:
    """OpenClaw's `normalizeWhitespace`: no CR, no spaces before a newline, at most one blank
    line, runs of spaces and tabs as one space, trimmed."""
    text = value.replace("\r", "")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    return _js_trim(text)


def _append(stack: list[_Context], value: str) -> None:
    context = stack[-1]
    context.parts.append(value)
    if context.kind == "anchor" and _NOT_SPACE.search(value):
        context.has_text = True


def _close(context: _Context, parent: _Context, state: _State) -> None:
    label = normalize_whitespace("".join(context.parts))
    if not label and context.kind != "title" and not (context.kind == "anchor" and context.href):
        return
    if context.kind == "title":
        if state.title is None:
            state.title = label or None
    elif context.kind == "anchor":
        if parent.kind == "title":
            parent.parts.append(label)
        elif context.href and label:
            parent.parts.append(f"[{label}]({context.href})")
        else:
            parent.parts.append(label or context.href or "")
    elif context.kind == "heading":
        if parent.kind == "title":
            parent.parts.append(label)
        elif parent.kind == "anchor":
            parent.parts.append(label)
            parent.has_text = parent.has_text or bool(label)
        else:
            parent.parts.append(f"\n{'#' * context.level} {label}\n")
    elif context.kind == "list-item":
        if parent.kind == "title":
            parent.parts.append(label)
        else:
            if parent.kind == "anchor":
                parent.has_text = parent.has_text or bool(label)
            parent.parts.append(f"\n- {label}")


def _close_top(stack: list[_Context], state: _State) -> None:
    if len(stack) >= 2:
        context = stack.pop()
        _close(context, stack[-1], state)


def _close_through(stack: list[_Context], kind: str, state: _State) -> None:
    for i in range(len(stack) - 1, 0, -1):
        if stack[i].kind == kind:
            while len(stack) > i:
                _close_top(stack, state)
            return


def _push(stack: list[_Context], context: _Context, state: _State) -> None:
    while len(stack) >= _MAX_DEPTH:
        _close_top(stack, state)
    stack.append(context)


def _close_open_anchor_with_text(stack: list[_Context], state: _State) -> bool:
    for i in range(len(stack) - 1, 0, -1):
        if stack[i].kind == "anchor":
            if not stack[i].has_text:
                return False
            while len(stack) > i:
                _close_top(stack, state)
            return True
    return False


def _open(stack: list[_Context], token: _Token, state: _State) -> None:
    """An opening tag: a line break for a block, a context for what is rendered."""
    name = token.name
    if name in _BLOCK_BREAK_TAGS and _close_open_anchor_with_text(stack, state):
        _append(stack, " ")
    if name in ("br", "hr"):
        _append(stack, "\n")
    elif token.self_closing:
        return
    elif name == "title":
        _push(stack, _Context("title"), state)
    elif name == "a":
        _close_through(stack, "anchor", state)
        _push(stack, _Context("anchor", href=_attribute(token.raw, "href")), state)
    elif _HEADING.match(name):
        _close_open_anchor_with_text(stack, state)
        _push(stack, _Context("heading", level=int(name[1])), state)
    elif name == "li":
        _close_open_anchor_with_text(stack, state)
        _push(stack, _Context("list-item"), state)


_CLOSES: Final = {"title": "title", "a": "anchor", "li": "list-item"}


def html_to_markdown(html: str) -> tuple[str, str | None]:
    """`html` as coarse markdown, and its `<title>` (OpenClaw's `htmlFragmentToMarkdown`)."""
    root = _Context("root")
    stack = [root]
    state = _State()
    i = 0
    while i < len(html):
        if html[i] != "<":
            next_tag = html.find("<", i)
            end = len(html) if next_tag == -1 else next_tag
            _append(stack, _decode_entities(html[i:end]))
            i = end
            continue
        raw_tag = _raw_text_open_tag(html, i)
        if raw_tag:
            i = _skip_raw_text_element(html, i, raw_tag)
            continue
        if not _starts_like_tag(html, i):
            _append(stack, "<")
            i += 1
            continue
        read = _read_tag(html, i)
        if read is None:
            raw_start = _raw_text_open_tag_start(html, i + 1, len(html))
            if raw_start == -1:
                break
            i = raw_start
            continue
        token, i = read
        if token is None:
            continue
        if token.closing:
            if token.name in _CLOSES:
                _close_through(stack, _CLOSES[token.name], state)
            elif _HEADING.match(token.name):
                _close_through(stack, "heading", state)
            elif token.name in _BLOCK_BREAK_TAGS:
                _append(stack, "\n")
        elif token.name in _RAW_TEXT_TAGS:
            i = _raw_text_end(html, token.name, i)
        else:
            _open(stack, token, state)
    while len(stack) > 1:
        _close_top(stack, state)
    return normalize_whitespace("".join(root.parts)), state.title


_S: Final = f"[{_JS_SPACE}]"
_IMAGE: Final = re.compile(r"!\[[^\]]*]\([^)]+\)")
_LINK: Final = re.compile(r"\[([^\]]+)]\([^)]+\)")
_CODE: Final = re.compile(r"`([^`]+)`")
# JavaScript's multiline ^: the start, or after any line terminator (CR and U+2028/9 too).
_LINE: Final = "(?:\\A|(?<=[\n\r\u2028\u2029]))"
_HEADING_MARK: Final = re.compile(f"{_LINE}#{{1,6}}{_S}+")
_BULLET: Final = re.compile(f"{_LINE}{_S}*[-*+]{_S}+")
_NUMBERED: Final = re.compile(rf"{_LINE}{_S}*\d+\.{_S}+", re.ASCII)


def markdown_to_text(markdown: str) -> str:
    """OpenClaw's `markdownToText`: images dropped, links to their text, fences and inline code
    to their content, heading marks and list markers removed, whitespace normalized."""
    text = _LINK.sub(r"\1", _IMAGE.sub("", markdown))
    unfenced: list[str] = []
    pos = 0
    while pos < len(text):
        opened = text.find("```", pos)
        if opened == -1:
            unfenced.append(text[pos:])
            break
        unfenced.append(text[pos:opened])
        after = opened + 3
        closed = text.find("```", after)
        if closed == -1:
            unfenced.append(text[opened:])
            break
        line_end = text.find("\n", after)
        start = after if line_end == -1 or line_end > closed else line_end + 1
        unfenced.append(text[start:closed])
        pos = closed + 3
    text = _CODE.sub(r"\1", "".join(unfenced))
    text = _NUMBERED.sub("", _BULLET.sub("", _HEADING_MARK.sub("", text)))
    return normalize_whitespace(text)
