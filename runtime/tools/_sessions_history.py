"""`sessions_history`'s view of a transcript: bounded and redacted as OpenClaw 2026.9.6's.

`sanitize_history` takes a session's messages (the active branch, as plain data: the rows
`chat.history` reads) and returns what the tool shows another session, as OpenClaw's
`sessions_history` (`openclaw-tools-*.mjs`) makes it of what its `chat.history` answers:

- tool results (role `toolResult` or `tool`) only when asked for (`stripToolMessages`);
- each message (`sanitizeHistoryMessage`): `details`, `usage` and `cost` left out (which
  counts as truncated); its string content, its `text`, and each content block's `text`,
  a thinking block's `thinking` and a block's `partialJson` redacted with OpenClaw's
  `redactToolPayloadText` (`runtime.tools._redact`) and then cut at 4,000 UTF-16 units
  (never splitting a surrogate pair), followed by `\\n…(truncated)…`; everything else, tool
  call arguments included, as it is;
- at most 81,920 bytes of JSON (`SESSIONS_HISTORY_MAX_BYTES`): the oldest messages dropped
  until the rest fit, the newest always kept (`capArrayByJsonBytes`); with an `anchor` (a
  message's `__openclaw.id`, `messageId`) the messages kept outward from it, one older then
  one newer while each fits (`capSessionsHistoryAroundMessage`); then, if still over, only
  the newest, or if even that is too large a placeholder in its stead
  (`enforceSessionsHistoryHardCap`); sizes as `JSON.stringify` in UTF-8;
- OpenClaw's flags: `truncated` (anything cut or dropped), `droppedMessages`,
  `contentTruncated`, `contentRedacted`, `bytes` (the JSON size of the messages shown).

Before that, the parts of `chat.history`'s display projection
(`sanitizeChatHistoryContentBlock`) that keep private data out, which OpenClaw applies on
this path: a block's `thinkingSignature` and `openclawReasoningReplay` are left out, an
image/audio/video block's inline payload and local paths are left out (`omitted: true` and
the payload's decoded size as `bytes`), as are an attachment block's, and a `sessions_yield`
call's private `message` argument. (Not taken from it: the rewriting of media URL
references, and its 8,000-character display cut, `runtime.sessions._display_cap`.) With an
`anchor` the window around that message is read first as `chat.history` reads it: `window`
messages (default 200) around it. Pure functions.
"""

from __future__ import annotations

import decimal
import json
import math
from typing import Any, Final

import attrs

from ._jsregex import from_utf16_units, slice_utf16_safe, utf16_units
from ._redact import redact_tool_payload_text

__all__ = [
    "HistoryView",
    "history_view",
    "json_utf8_bytes",
    "sanitize_history",
    "truncate_history_text",
]

TEXT_MAX: Final = 4000
BYTES_MAX: Final = 81920
WINDOW_DEFAULT: Final = 200
TRUNCATED_MARKER: Final = "\n…(truncated)…"
TOO_LARGE: Final = "[sessions_history omitted: message too large]"
_MEDIA_TYPES: Final = frozenset({"image", "audio", "video"})
_MEDIA_PRIVATE: Final = ("data", "blob", "path", "file", "filePath", "localPath")


@attrs.frozen
class HistoryView:
    """The sanitized messages and OpenClaw's summary flags."""

    messages: list[Any]
    truncated: bool
    dropped_messages: bool
    content_truncated: bool
    content_redacted: bool
    bytes: int

    def flags(self) -> dict[str, Any]:
        return {
            "truncated": self.truncated,
            "droppedMessages": self.dropped_messages,
            "contentTruncated": self.content_truncated,
            "contentRedacted": self.content_redacted,
            "bytes": self.bytes,
        }


# --- JSON sizes ----------------------------------------------------------------------------


def _js_number(value: float) -> str:
    """A number as JavaScript's `JSON.stringify` writes it."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    normal = decimal.Decimal(repr(abs(value))).normalize()
    _, digit_tuple, exponent = normal.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    k, n = len(digits), exponent + len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{sign}{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return f"{sign}0.{'0' * -n}{digits}"
    mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{sign}{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


def _js_json(value: Any) -> str:
    """`JSON.stringify(value)` for plain data (keys in insertion order)."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_js_json(str(k))}:{_js_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_js_json(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def json_utf8_bytes(value: Any) -> int:
    """OpenClaw's `jsonUtf8Bytes`: the UTF-8 size of `JSON.stringify(value)` (a lone
    surrogate written as its `\\uXXXX` escape)."""
    text = _js_json(value)
    lone = sum(1 for c in text if "\ud800" <= c <= "\udfff")
    return len(text.encode("utf-8", "surrogatepass")) + 3 * lone


# --- one message ---------------------------------------------------------------------------


def truncate_history_text(text: str, max_chars: int = TEXT_MAX) -> tuple[str, bool, bool]:
    """OpenClaw's `truncateHistoryText`: (the text redacted and cut, whether it was cut,
    whether redaction changed it)."""
    sanitized = redact_tool_payload_text(text)
    redacted = sanitized != text
    units = utf16_units(sanitized)
    if len(units) <= max_chars:
        return sanitized, False, redacted
    return (
        from_utf16_units(slice_utf16_safe(units, 0, max_chars)) + TRUNCATED_MARKER,
        True,
        redacted,
    )


class _Marks:
    def __init__(self) -> None:
        self.truncated = False
        self.redacted = False

    def text(self, text: str) -> str:
        out, truncated, redacted = truncate_history_text(text)
        self.truncated |= truncated
        self.redacted |= redacted
        return out


def _spread(value: dict[str, Any] | list[Any]) -> dict[str, Any]:
    """JavaScript's `{ ...value }` (an array's items under their indexes)."""
    return dict(value) if isinstance(value, dict) else {str(i): v for i, v in enumerate(value)}


def _block(block: Any, marks: _Marks) -> Any:
    """OpenClaw's `sanitizeHistoryContentBlock`."""
    if not isinstance(block, (dict, list)):
        return block
    entry = _spread(block)
    if isinstance(entry.get("text"), str):
        entry["text"] = marks.text(entry["text"])
    if entry.get("type") == "thinking" and isinstance(entry.get("thinking"), str):
        entry["thinking"] = marks.text(entry["thinking"])
    if isinstance(entry.get("partialJson"), str):
        entry["partialJson"] = marks.text(entry["partialJson"])
    return entry


def _message(message: Any) -> tuple[Any, bool, bool]:
    """OpenClaw's `sanitizeHistoryMessage`: (the message, truncated, redacted)."""
    if not isinstance(message, (dict, list)):
        return message, False, False
    entry = _spread(message)
    marks = _Marks()
    for private in ("details", "usage", "cost"):
        if private in entry:
            del entry[private]
            marks.truncated = True
    content = entry.get("content")
    if isinstance(content, str):
        entry["content"] = marks.text(content)
    elif isinstance(content, list):
        entry["content"] = [_block(b, marks) for b in content]
    if isinstance(entry.get("text"), str):
        entry["text"] = marks.text(entry["text"])
    return entry, marks.truncated, marks.redacted


# --- chat.history's private-data projection ------------------------------------------------


def _base64_size(payload: str) -> int:
    """OpenClaw's `estimateBase64DecodedBytes`."""
    length = sum(1 for c in payload if c > " ")
    if length == 0:
        return 0
    end = len(payload) - 1
    while end >= 0 and payload[end] <= " ":
        end -= 1
    padding = 0
    if end >= 0 and payload[end] == "=":
        padding, end = 1, end - 1
        while end >= 0 and payload[end] <= " ":
            end -= 1
        if end >= 0 and payload[end] == "=":
            padding = 2
    return max(0, length * 3 // 4 - padding)


def _media(entry: dict[str, Any]) -> None:
    """The private part of OpenClaw's `projectChatHistoryMediaBlock`: inline payloads and
    local paths of a media block (and of its `source` record) left out and marked."""
    kind = entry.get("type")
    top_payload = isinstance(entry.get("data"), str) or isinstance(entry.get("blob"), str)
    source = entry.get("source")
    records = [entry]
    if isinstance(source, dict):
        entry["source"] = source = dict(source)
        records.append(source)
    payload: str | None = None
    for record in records:
        found = record["data"] if isinstance(record.get("data"), str) else record.get("blob")
        if payload is None and isinstance(found, str):
            payload = found
        omitted = False
        for field in _MEDIA_PRIVATE:
            if field in record:
                del record[field]
                omitted = True
        if omitted:
            if record is entry or kind != "image":
                record["omitted"] = True
            if record is entry or kind != "audio":
                entry["omitted"] = True
    if payload is not None:
        audio_source = kind == "audio" and not top_payload and len(records) > 1
        (records[1] if audio_source else entry)["bytes"] = _base64_size(payload)


def _projected_block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    entry = dict(block)
    if entry.get("type") == "toolCall" and entry.get("name") == "sessions_yield":
        for field in ("arguments", "input"):
            value = entry.get(field)
            if isinstance(value, dict) and "message" in value:
                entry[field] = {k: v for k, v in value.items() if k != "message"}
    entry.pop("thinkingSignature", None)
    entry.pop("openclawReasoningReplay", None)
    if entry.get("type") in _MEDIA_TYPES:
        _media(entry)
    attachment = entry.get("attachment")
    if entry.get("type") == "attachment" and isinstance(attachment, dict):
        entry["attachment"] = {k: v for k, v in attachment.items() if k not in _MEDIA_PRIVATE}
    return entry


def _projected(message: Any) -> Any:
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    return {**message, "content": [_projected_block(b) for b in message["content"]]}


# --- the byte budget -----------------------------------------------------------------------


def _message_id(message: Any) -> str | None:
    meta = message.get("__openclaw") if isinstance(message, dict) else None
    value = meta.get("id") if isinstance(meta, dict) else None
    return value if isinstance(value, str) and value else None


def _message_seq(message: Any) -> int | None:
    meta = message.get("__openclaw") if isinstance(message, dict) else None
    seq = meta.get("seq") if isinstance(meta, dict) else None
    if isinstance(seq, bool) or not isinstance(seq, (int, float)) or seq != int(seq):
        return None
    return int(seq) if 0 < seq <= 2**53 - 1 else None


def _cap(items: list[Any], max_bytes: int) -> tuple[list[Any], int]:
    """OpenClaw's `capArrayByJsonBytes`: the oldest left out until the rest fit (the newest
    always kept)."""
    if not items:
        return items, 2
    parts = [json_utf8_bytes(item) for item in items]
    total = 2 + sum(parts) + len(items) - 1
    start = 0
    while total > max_bytes and start < len(items) - 1:
        total -= parts[start] + 1
        start += 1
    return items[start:], total


def _cap_around(items: list[Any], anchor: str, max_bytes: int) -> tuple[list[Any], int]:
    """OpenClaw's `capSessionsHistoryAroundMessage`."""
    at = next((i for i, item in enumerate(items) if _message_id(item) == anchor), None)
    if at is None:
        return _cap(items, max_bytes)
    start, end = at, at + 1
    total = json_utf8_bytes([items[at]])
    older, newer = start > 0, end < len(items)
    while older or newer:
        if older:
            candidate = total + json_utf8_bytes([items[start - 1]]) - 1
            if candidate <= max_bytes:
                start, total = start - 1, candidate
            else:
                older = False
        older = older and start > 0
        if newer:
            candidate = total + json_utf8_bytes([items[end]]) - 1
            if candidate <= max_bytes:
                end, total = end + 1, candidate
            else:
                newer = False
        newer = newer and end < len(items)
    return items[start:end], total


def _placeholder(source: Any) -> dict[str, Any]:
    seq, message_id = _message_seq(source), _message_id(source)
    placeholder: dict[str, Any] = {"role": "assistant", "content": TOO_LARGE}
    if seq is not None or message_id is not None:
        meta: dict[str, Any] = {}
        if seq is not None:
            meta["seq"] = seq
        if message_id is not None:
            meta["id"] = message_id
        placeholder["__openclaw"] = meta
    return placeholder


def _hard_cap(items: list[Any], total: int, max_bytes: int) -> tuple[list[Any], int, bool]:
    """OpenClaw's `enforceSessionsHistoryHardCap`."""
    if total <= max_bytes:
        return items, total, False
    last = items[-1:]
    size = json_utf8_bytes(last)
    if size <= max_bytes:
        return last, size, True
    placeholder = [_placeholder(last[0])]
    return placeholder, json_utf8_bytes(placeholder), True


# --- the view ------------------------------------------------------------------------------


def _window(messages: list[Any], anchor: str, size: int) -> list[Any]:
    """The `size` messages OpenClaw's `chat.history` reads around the one `anchor` names:
    it and `size - size // 2 - 1` older ones, moved back to end at the newest when near it.
    Empty when no message has that id."""
    at = next((i for i, m in enumerate(messages) if _message_id(m) == anchor), None)
    if at is None:
        return []
    start = min(max(0, at - (size - size // 2 - 1)), max(0, len(messages) - size))
    return messages[start : start + size]


def _is_tool(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") in ("toolResult", "tool")


def sanitize_history(
    messages: list[Any],
    *,
    include_tools: bool = False,
    max_bytes: int = BYTES_MAX,
    anchor: str | None = None,
    window: int | None = None,
) -> HistoryView:
    """The view of `messages` (oldest first) `sessions_history` returns (module docstring);
    `anchor` and `window`: the anchored view's message id and size."""
    if anchor is not None:
        messages = _window(messages, anchor, window or WINDOW_DEFAULT)
    return history_view(messages, include_tools=include_tools, max_bytes=max_bytes, anchor=anchor)


def history_view(
    messages: list[Any],
    *,
    include_tools: bool = False,
    max_bytes: int = BYTES_MAX,
    anchor: str | None = None,
) -> HistoryView:
    """What OpenClaw's `sessions_history` makes of the messages `chat.history` answered
    (already the window around `anchor`, when one is named)."""
    selected = [_projected(m) for m in messages if include_tools or not _is_tool(m)]
    sanitized = [_message(m) for m in selected]
    content_truncated = any(truncated for _, truncated, _ in sanitized)
    content_redacted = any(redacted for _, _, redacted in sanitized)
    items = [m for m, _, _ in sanitized]
    if anchor:
        capped, total = _cap_around(items, anchor, max_bytes)
    else:
        capped, total = _cap(items, max_bytes)
    dropped = len(capped) < len(selected)
    shown, total, hard_capped = _hard_cap(capped, total, max_bytes)
    return HistoryView(
        messages=shown,
        truncated=dropped or content_truncated or hard_capped,
        dropped_messages=dropped or hard_capped,
        content_truncated=content_truncated,
        content_redacted=content_redacted,
        bytes=total,
    )
