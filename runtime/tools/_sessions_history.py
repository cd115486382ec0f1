"""`sessions_history`'s view of a transcript: bounded and redacted as OpenClaw's.

`sanitize_history` takes a session's messages (the active branch, as plain data) and returns
what the tool shows another session: tool results only when asked for, thinking signatures
and inline image data left out, credential-like text redacted, each text block cut at 4,000
characters, and the whole at most 80 KB (the oldest messages dropped first; a single message
too large for it replaced by a marker). The flags say what was done. With an `anchor` (a
message's `__openclaw.id`: `messageId`) it shows the window around that message instead, as
OpenClaw's anchored history: `window` messages (default 200) read around it, kept within
the budget outward from it. Pure functions.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import attrs

__all__ = ["HistoryView", "redact_credentials", "sanitize_history"]

TEXT_MAX: Final = 4000
BYTES_MAX: Final = 80 * 1024
WINDOW_DEFAULT: Final = 200
TRUNCATED_MARKER: Final = "\n…(truncated)"
TOO_LARGE: Final = "[sessions_history omitted: message too large]"
REDACTED: Final = "[REDACTED]"

_SECRETS: Final = re.compile(
    r"""(?x)
    \b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}            # API keys (OpenAI-style, and the like)
    | \bgh[pousr]_[A-Za-z0-9]{20,}               # GitHub tokens
    | \bxox[abposr]-[A-Za-z0-9-]{10,}            # Slack tokens
    | \bAKIA[0-9A-Z]{16}\b                       # AWS access key ids
    | \bBearer\s+[A-Za-z0-9._~+/=-]{16,}         # bearer credentials
    | \beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}   # JWTs
    """
)
_ASSIGNED: Final = re.compile(
    r"(?i)\b((?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token)"
    r"\s*[:=]\s*)([\"']?)[^\s\"']{6,}\2"
)


@attrs.frozen
class HistoryView:
    """The sanitized messages and OpenClaw's summary flags."""

    messages: list[dict[str, Any]]
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


def redact_credentials(text: str) -> tuple[str, bool]:
    """`text` with credential-like parts replaced by `[REDACTED]`, and whether any were."""
    out = _SECRETS.sub(REDACTED, text)
    out = _ASSIGNED.sub(lambda m: f"{m.group(1)}{REDACTED}", out)
    return out, out != text


class _Marks:
    truncated = False
    redacted = False


def _text(text: str, marks: _Marks) -> str:
    text, redacted = redact_credentials(text)
    marks.redacted |= redacted
    if len(text) > TEXT_MAX:
        marks.truncated = True
        text = text[:TEXT_MAX] + TRUNCATED_MARKER
    return text


def _block(block: Any, marks: _Marks) -> dict[str, Any] | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    out = dict(block)
    if kind == "text":
        out["text"] = _text(str(block.get("text", "")), marks)
    elif kind == "thinking":
        out.pop("thinkingSignature", None)
        out.pop("redacted", None)
        out["thinking"] = _text(str(block.get("thinking", "")), marks)
    elif kind == "image":
        out.pop("data", None)
        out["omitted"] = True
    elif kind == "toolCall":
        arguments = json.dumps(block.get("arguments", {}), ensure_ascii=False)
        if len(arguments) > TEXT_MAX or redact_credentials(arguments)[1]:
            out["arguments"] = {"_sanitized": _text(arguments, marks)}
    return out


def _message(message: dict[str, Any], marks: _Marks) -> dict[str, Any]:
    out = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        out["content"] = _text(content, marks)
    elif isinstance(content, list):
        out["content"] = [b for b in (_block(b, marks) for b in content) if b is not None]
    return out


def _size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False).encode())


def _message_id(message: dict[str, Any]) -> Any:
    meta = message.get("__openclaw")
    return meta.get("id") if isinstance(meta, dict) else None


def _window(messages: list[dict[str, Any]], anchor: str, size: int) -> list[dict[str, Any]]:
    """The `size` messages OpenClaw's `chat.history` reads around the one `anchor` names:
    it and `size - size // 2 - 1` older ones, moved back to end at the newest when near it.
    Empty when no message has that id."""
    at = next((i for i, m in enumerate(messages) if _message_id(m) == anchor), None)
    if at is None:
        return []
    start = min(max(0, at - (size - size // 2 - 1)), max(0, len(messages) - size))
    return messages[start : start + size]


def _around(shown: list[dict[str, Any]], at: int, max_bytes: int) -> tuple[list[int], bool]:
    """The indexes of `shown` kept outward from `at` (one older, then one newer, while each
    fits `max_bytes`), and whether any was left out."""
    total = 2 + _size(shown[at]) + 1
    start, end = at, at + 1
    older, newer = start > 0, end < len(shown)
    while older or newer:
        if older:
            size = _size(shown[start - 1]) + 1
            if total + size <= max_bytes:
                start, total = start - 1, total + size
            else:
                older = False
        older = older and start > 0
        if newer:
            size = _size(shown[end]) + 1
            if total + size <= max_bytes:
                end, total = end + 1, total + size
            else:
                newer = False
        newer = newer and end < len(shown)
    return list(range(start, end)), end - start < len(shown)


def sanitize_history(
    messages: list[dict[str, Any]],
    *,
    include_tools: bool = False,
    max_bytes: int = BYTES_MAX,
    anchor: str | None = None,
    window: int | None = None,
) -> HistoryView:
    """The view of `messages` (oldest first) `sessions_history` returns (module docstring);
    `anchor` and `window`: the anchored view's message id and size."""
    marks = _Marks()
    if anchor is not None:
        messages = _window(messages, anchor, window or WINDOW_DEFAULT)
    shown = [
        _message(m, marks)
        for m in messages
        if include_tools or m.get("role") not in ("toolResult", "tool")
    ]
    at = next((i for i, m in enumerate(shown) if _message_id(m) == anchor), None)
    if anchor is not None and at is not None and _size(shown[at]) + 3 <= max_bytes:
        kept_at, cut = _around(shown, at, max_bytes)
        around = [shown[i] for i in kept_at]
        return HistoryView(
            messages=around,
            truncated=cut or marks.truncated,
            dropped_messages=cut,
            content_truncated=marks.truncated,
            content_redacted=marks.redacted,
            bytes=2 + sum(_size(m) + 1 for m in around),
        )
    kept: list[dict[str, Any]] = []
    total = 2  # the list's brackets
    dropped = False
    for message in reversed(shown):  # newest first: the oldest go when the budget runs out
        size = _size(message)
        if size > max_bytes and not kept:
            message = {
                "role": message.get("role"),
                "content": [{"type": "text", "text": TOO_LARGE}],
                "timestamp": message.get("timestamp"),
            }
            size = _size(message)
            marks.truncated = True
        if total + size + 1 > max_bytes:
            dropped = True
            break
        kept.append(message)
        total += size + 1
    kept.reverse()
    return HistoryView(
        messages=kept,
        truncated=dropped or marks.truncated,
        dropped_messages=dropped,
        content_truncated=marks.truncated,
        content_redacted=marks.redacted,
        bytes=total,
    )
