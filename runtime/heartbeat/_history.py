"""What a chat's history hides of heartbeats, as OpenClaw's chat display projection does:
the heartbeat prompt's user message (OpenClaw's default prompt, its `heartbeat_respond`
variant, or an internal wake marker such as `[OpenClaw heartbeat poll]`, after any queued
`System:` lines the turn carried), and every assistant message that is only an
acknowledgment (`HEARTBEAT_OK` with at most 300 characters beside it, or `NO_REPLY`) and calls
no tool. The transcript keeps them (audit, replay, the model's context); only the view
(`chat.history`) leaves them out. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from runtime.llm import AssistantMessage, TextContent, UserMessage

from ._reply import (
    HEARTBEAT_PROMPT,
    HEARTBEAT_RESPONSE_TOOL_PROMPT,
    HEARTBEAT_TRANSCRIPT_MARKER,
    SILENT_TOKEN,
    strip_heartbeat_token,
)

__all__ = ["hidden_in_history", "is_heartbeat_prompt"]

_MARKERS: Final = (
    HEARTBEAT_TRANSCRIPT_MARKER,
    "[OpenClaw exec completion]",
    "[OpenClaw cron wake]",
    "[OpenClaw session event]",
)
_PROMPTS: Final = (HEARTBEAT_PROMPT, HEARTBEAT_RESPONSE_TOOL_PROMPT)


def _without_system_lines(text: str) -> str:
    """`text` without the `System:` block a turn's queued events put before its message."""
    if not text.startswith("System: "):
        return text
    head, sep, rest = text.partition("\n\n")
    if sep and all(line.startswith("System: ") for line in head.split("\n")):
        return rest
    return text


def is_heartbeat_prompt(text: str) -> bool:
    """Whether a user message's text is a heartbeat's prompt (see the module docstring)."""
    trimmed = _without_system_lines(text.strip()).strip()
    if not trimmed:
        return False
    if trimmed in _MARKERS:
        return True
    return any(trimmed == p or trimmed.startswith(f"{p}\n") for p in _PROMPTS)


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(c.text for c in message.content if isinstance(c, TextContent))


def _is_ack(message: AssistantMessage) -> bool:
    if not message.content or not all(isinstance(c, TextContent) for c in message.content):
        return False
    text = "".join(c.text for c in message.content if isinstance(c, TextContent)).strip()
    if text == SILENT_TOKEN:
        return True
    return bool(text) and strip_heartbeat_token(text, heartbeat=True).should_skip


def hidden_in_history(messages: Sequence[Any]) -> set[int]:
    """The indexes of `messages` (transcript messages, in order) a chat's history hides."""
    return {i for i, message in enumerate(messages) if _hidden(message)}


def _hidden(message: Any) -> bool:
    if isinstance(message, UserMessage):
        return is_heartbeat_prompt(_user_text(message))
    return isinstance(message, AssistantMessage) and _is_ack(message)
