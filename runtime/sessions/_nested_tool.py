"""A call made through Tool Search's `tool_call`, as OpenClaw 2026.9.6 keeps it in a transcript.

OpenClaw writes each target call that `tool_call` ran as a row of its own, before the
`tool_call`'s result: a message entry whose message is a custom one (`role: "custom"`,
`customType: "openclaw.nested-tool.v1"`, `display: true`, `excludeFromContext: true`,
`content: ""`) with the call in its `details` (`runId`, `scopeId`: one per run,
`afterEntryId`: the entry before it, `startOrder`, `parentToolCallId`, `toolCallId`,
`toolName`, `input`, `result: {content, details?}`, `isError`, `startedAt`, `timestamp`).
The input is kept up to 8 KiB of JSON and the result up to 32 KiB, else a marker says it was
left out. The model never reads the row; the histories show it.

`nested_tool_message` makes the message; `history_row` is how a history shows any message of
a transcript (`chat.history`, `sessions_history`, `session.message`): as stored, but for the
nested tool row, whose content becomes the call's two blocks as OpenClaw's display projection
gives them (a `toolCall` block, then a `toolResult` block with the call's fields and result
content, the stored details left out) and which names its `runId`. Pure functions.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..llm._types import Message
from ._sessions import CustomMessage

__all__ = ["NESTED_TOOL_TYPE", "history_row", "nested_tool_message"]

NESTED_TOOL_TYPE: Final = "openclaw.nested-tool.v1"
INPUT_MAX_BYTES: Final = 8192
RESULT_MAX_BYTES: Final = 32768
INPUT_OMITTED: Final = "[Nested tool input omitted: exceeds display limit]"
RESULT_OMITTED: Final = "[Nested tool output omitted: exceeds display limit]"

_encode = msgspec.json.Encoder().encode


def nested_tool_message(
    *,
    run_id: str,
    scope_id: str,
    after_entry_id: str | None,
    start_order: int,
    parent_tool_call_id: str,
    tool_call_id: str,
    tool_name: str,
    input: Any,
    result: Any,
    is_error: bool,
    started_at: int,
    ended_at: int,
) -> CustomMessage:
    """OpenClaw's row for one call made through `tool_call` (`result`: the call's result as
    clients were shown it; its `content` and `details` are kept)."""
    shown = result if isinstance(result, dict) else {}
    kept: dict[str, Any] = {"content": list(shown.get("content") or [])}
    if shown.get("details") is not None:
        kept["details"] = shown["details"]
    details = {
        "runId": run_id,
        "scopeId": scope_id,
        "afterEntryId": after_entry_id,
        "startOrder": start_order,
        "parentToolCallId": parent_tool_call_id,
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "input": input if _fits(input, INPUT_MAX_BYTES) else INPUT_OMITTED,
        "result": kept
        if _fits(kept, RESULT_MAX_BYTES)
        else {"content": [{"type": "text", "text": RESULT_OMITTED}]},
        "isError": is_error,
        "startedAt": started_at,
        "timestamp": ended_at,
    }
    return CustomMessage(
        customType=NESTED_TOOL_TYPE,
        display=True,
        excludeFromContext=True,
        content="",
        details=details,
        timestamp=started_at,
    )


def _fits(value: Any, limit: int) -> bool:
    try:
        return len(_encode(value)) <= limit
    except (TypeError, msgspec.EncodeError):
        return False


def history_row(message: Message | CustomMessage) -> dict[str, Any]:
    """A transcript message as the histories show it (see the module docstring)."""
    row: dict[str, Any] = msgspec.to_builtins(message)
    if not isinstance(message, CustomMessage) or message.customType != NESTED_TOOL_TYPE:
        return row
    details = message.details if isinstance(message.details, dict) else {}
    call = {k: v for k, v in details.items() if k not in ("input", "result")}
    result = details.get("result")
    if not isinstance(result, dict):
        result = {}
    row.pop("details", None)
    row["content"] = [
        {
            "type": "toolCall",
            "id": call.get("toolCallId"),
            "runId": call.get("runId"),
            "name": call.get("toolName"),
            "arguments": details.get("input"),
            "parentToolCallId": call.get("parentToolCallId"),
            "timestamp": call.get("startedAt"),
        },
        {
            **call,
            "content": list(result.get("content") or []),
            "type": "toolResult",
            "role": "toolResult",
        },
    ]
    row["runId"] = call.get("runId")
    return row
