"""What a chat's history hides of heartbeats, as OpenClaw's chat display projection does:
the heartbeat prompt's user message (OpenClaw's default prompt, its `heartbeat_respond`
variant, or an internal wake marker such as `[OpenClaw heartbeat poll]`, after any queued
`System:` lines the turn carried), and every assistant message that is only an
acknowledgment (`HEARTBEAT_OK` with at most 300 characters beside it, or `NO_REPLY`) and calls
no tool. The transcript keeps them (audit, replay, the model's context); only the view
(`chat.history`) leaves them out. `drop_heartbeat_turns` is the model's side: the heartbeat
turns that were only noise are left out of the context each model call is sent. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from runtime.llm import (
    AssistantMessage,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)

from ._reply import (
    HEARTBEAT_PROMPT,
    HEARTBEAT_RESPONSE_TOOL_PROMPT,
    HEARTBEAT_TRANSCRIPT_MARKER,
    SILENT_TOKEN,
    strip_heartbeat_token,
)

__all__ = [
    "drop_heartbeat_turns",
    "hidden_in_history",
    "holds_heartbeat_turns",
    "is_heartbeat_prompt",
]

_MARKERS: Final = (
    HEARTBEAT_TRANSCRIPT_MARKER,
    "[OpenClaw exec completion]",
    "[OpenClaw cron wake]",
    "[OpenClaw session event]",
)
_PROMPTS: Final = (HEARTBEAT_PROMPT, HEARTBEAT_RESPONSE_TOOL_PROMPT)
_HEAD: Final = min(len(p) for p in (*_MARKERS, *_PROMPTS))
_HEADS: Final = frozenset(p[:_HEAD] for p in (*_MARKERS, *_PROMPTS))
"""The first characters of every marker and prompt: a text that starts otherwise is none."""


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
    if trimmed[:_HEAD] not in _HEADS:
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


# --- the model's context ----------------------------------------------------------------------


def _calls(message: AssistantMessage) -> list[ToolCallContent]:
    return [c for c in message.content if isinstance(c, ToolCallContent)]


def _respond_calls(message: AssistantMessage, *, notify: bool) -> list[ToolCallContent]:
    return [
        c
        for c in _calls(message)
        if c.name == "heartbeat_respond" and (c.arguments.get("notify") in (True, "true")) == notify
    ]


def _answered(messages: Sequence[Any], index: int, calls: list[ToolCallContent]) -> bool:
    """Whether a result after `messages[index]` answers one of `calls` successfully."""
    ids = {c.id for c in calls}
    for message in messages[index + 1 :]:
        if not isinstance(message, ToolResultMessage):
            return False
        if not message.isError and message.toolCallId in ids:
            return True
    return False


def _past_results(messages: Sequence[Any], index: int) -> int:
    while index < len(messages) and isinstance(messages[index], ToolResultMessage):
        index += 1
    return index


def _span_end(messages: Sequence[Any], start: int) -> int | None:
    """Where the heartbeat turn that `messages[start]` (its prompt) opens ends, when all of
    it is heartbeat noise (OpenClaw's `resolveHeartbeatArtifactSpanEnd`); None: keep it."""
    index, terminal, output = start + 1, False, False
    while index < len(messages):
        message = messages[index]
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage) and _is_ack(message):
            terminal, index = True, _past_results(messages, index + 1)
        elif isinstance(message, AssistantMessage) and (
            visible := _respond_calls(message, notify=True)
        ):
            if _answered(messages, index, visible):
                return None  # an alert the model raised: kept
            index += 1
        elif isinstance(message, AssistantMessage) and _respond_calls(message, notify=False):
            terminal, index = True, _past_results(messages, index + 1)
        elif terminal or isinstance(message, ToolResultMessage):
            index += 1
        elif isinstance(message, AssistantMessage):
            output = output or not _calls(message)
            index += 1
        else:
            return None
    if output and not terminal:
        return None
    return index


def holds_heartbeat_turns(messages: Sequence[Any]) -> bool:
    """Whether any of `messages` is a heartbeat's prompt (`drop_heartbeat_turns` has
    something to look at). Pure."""
    return any(isinstance(m, UserMessage) and is_heartbeat_prompt(_user_text(m)) for m in messages)


def drop_heartbeat_turns(messages: Sequence[Any]) -> list[Any]:
    """`messages` without the heartbeat turns that were only noise: the prompt, an
    acknowledgment (or `heartbeat_respond` with `notify: false`) and the tool calls between,
    as OpenClaw filters a session's messages before each model call
    (`filterHeartbeatTranscriptArtifacts`). A heartbeat that raised an alert is kept. The
    prompts recognized are OpenClaw's default ones and its wake markers. Pure."""
    out: list[Any] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        end = None
        if isinstance(message, UserMessage) and is_heartbeat_prompt(_user_text(message)):
            end = _span_end(messages, i)
        if end is None:
            out.append(message)
            i += 1
        else:
            i = end
    return out
