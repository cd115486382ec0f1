"""The text cap of OpenClaw 2026.9.6's chat display projection, on a history row.

OpenClaw's display (`chat.history`, whose `maxChars` defaults to 8,000 characters, and
`session.message`, always 8,000) cuts each text of a message it shows
(`sanitizeChatHistoryMessage`): a message's string content and each text block's text, a
thinking block's thinking, to `max_chars` UTF-16 code units (never splitting a surrogate
pair), followed by `\\n...(truncated)...`. A tool's payload is cut at the same length with
nothing after it: the texts of a tool result message (role `toolResult`, or a message naming
a tool call), and the content of tool call and tool result blocks. A message cut so is
marked in its `__openclaw` block (`truncated: true`, `reason: "display-cap"`).

A call made through Tool Search's `tool_call` (`_nested_tool`) shows its result as a tool
result block, which OpenClaw caps as a message of its own: its result's texts are cut with
nothing after them and the block carries the mark, not its row.

`cap_row` applies it to a row `history_row` made; pure functions.
"""

from __future__ import annotations

from typing import Any, Final

from ._nested_tool import NESTED_TOOL_TYPE

__all__ = ["DISPLAY_MAX_CHARS", "TRUNCATED", "cap_row"]

DISPLAY_MAX_CHARS: Final = 8000
TRUNCATED: Final = "\n...(truncated)..."
_TOOL_ROLES: Final = frozenset({"toolresult", "tool_result", "tool", "function"})
_TOOL_KEYS: Final = ("toolName", "tool_name", "toolCallId", "tool_call_id")
_TOOL_BLOCKS: Final = frozenset(
    {"toolcall", "tool_call", "tooluse", "tool_use", "toolresult", "tool_result"}
)


def cap_row(row: dict[str, Any], max_chars: int = DISPLAY_MAX_CHARS) -> dict[str, Any]:
    """`row` (a history row, changed in place) with its texts capped at `max_chars` as
    OpenClaw's display caps them, marked `truncated` in its `__openclaw` when cut."""
    content = row.get("content")
    if row.get("customType") == NESTED_TOOL_TYPE and isinstance(content, list):
        # its result, capped as a message of its own (the mark on the block)
        row["content"] = [
            cap_row(dict(b), max_chars) if isinstance(b, dict) and b.get("role") else b
            for b in content
        ]
    role = str(row.get("role", "")).lower()
    exact = role in _TOOL_ROLES or any(isinstance(row.get(k), str) for k in _TOOL_KEYS)
    cut = False
    for field in ("content", "text"):
        value = row.get(field)
        if isinstance(value, str):
            row[field], was_cut = _cap(value, max_chars, exact=exact)
            cut |= was_cut
        elif field == "content" and isinstance(value, list):
            capped = [_cap_block(block, max_chars, exact=exact) for block in value]
            row["content"] = [block for block, _ in capped]
            cut |= any(was_cut for _, was_cut in capped)
    if cut:
        meta = row.get("__openclaw")
        meta = dict(meta) if isinstance(meta, dict) else {}
        reason = meta.get("reason")
        row["__openclaw"] = meta | {
            "truncated": True,
            "reason": reason if isinstance(reason, str) else "display-cap",
        }
    return row


def _cap_block(block: Any, max_chars: int, *, exact: bool) -> tuple[Any, bool]:
    """A content block with its texts capped (a copy when cut), and whether it was."""
    if not isinstance(block, dict):
        return block, False
    kind = block.get("type")
    exact = exact or (isinstance(kind, str) and kind.strip().lower() in _TOOL_BLOCKS)
    out, cut = dict(block), False
    if exact and isinstance(out.get("content"), list):
        capped = [_cap_block(item, max_chars, exact=True) for item in out["content"]]
        out["content"] = [item for item, _ in capped]
        cut |= any(was_cut for _, was_cut in capped)
    for field in ("text", "content"):
        if isinstance(out.get(field), str):
            out[field], was_cut = _cap(out[field], max_chars, exact=exact)
            cut |= was_cut
    for field in ("partialJson", "arguments"):
        if isinstance(out.get(field), str) and not exact:
            out[field], was_cut = _cap(out[field], max_chars, exact=False)
            cut |= was_cut
    if isinstance(out.get("thinking"), str):
        out["thinking"], was_cut = _cap(out["thinking"], max_chars, exact=False)
        cut |= was_cut
    return (out, True) if cut else (block, False)


def _cap(text: str, max_chars: int, *, exact: bool) -> tuple[str, bool]:
    """`text` cut to `max_chars` UTF-16 code units (a surrogate pair kept whole), with the
    marker unless `exact`; and whether it was cut."""
    if len(text) <= max_chars // 2:
        return text, False  # (fewer code points than half: fewer code units than the cap)
    units = text.encode("utf-16-le")
    if len(units) <= 2 * max_chars:
        return text, False
    head = units[: 2 * max_chars]
    if 0xD8 <= head[-1] <= 0xDB:  # a high surrogate, its pair cut off: left out
        head = head[:-2]
    prefix = head.decode("utf-16-le")
    return (prefix if exact else prefix + TRUNCATED), True
