"""The attempt loop: model turns, tool dispatch, events. Knows nothing of sockets.

`run_agent` drives one run: it asks the model for a turn, streams the turn's deltas out as
events through the `emit` callback (`assistant`, `thinking`, `tool` streams), runs the tools
the model called, appends their results and asks again, until the model stops or the
iteration cap is reached. Lifecycle events are the caller's: whoever owns the run owns its
one terminal event (see `actors`).

Progress is written into the caller's `RunProgress` as it happens, so that a run cut short
(abort, timeout, shutdown, provider error) still has its partial text and messages.

Cancellation: `run_agent` is a checkpoint throughout; cancelling it closes the model stream at
once and kills running tools (their own cancellation).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs
import msgspec

from .llm._types import (
    AssistantContent,
    AssistantMessage,
    Message,
    ModelProvider,
    ModelRequest,
    ProviderError,
    StopDelta,
    StopReason,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCallContent,
    ToolCallEnd,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UsageDelta,
    UserMessage,
)

Emit = Callable[[str, dict[str, Any]], None]
"""`emit(stream, data)`: synchronous and non-blocking (the hub stamps, encodes, fans out)."""


@attrs.frozen
class ToolOutcome:
    """What a tool call produced, already sanitised for emitting and persisting."""

    message: ToolResultMessage
    result: Any
    meta: str | None = None


class ToolRunner(Protocol):
    """The tools a run may use (policy already applied)."""

    def specs(self) -> list[ToolSpec]: ...

    async def call(self, call: ToolCallContent, emit: Emit) -> ToolOutcome:
        """Run one tool call; emits `tool` `update` events; never raises but Cancelled."""
        ...


class NoTools:
    """A run with no tools: any call the model makes gets an error result."""

    def specs(self) -> list[ToolSpec]:
        return []

    async def call(self, call: ToolCallContent, emit: Emit) -> ToolOutcome:
        text = f"tool {call.name!r} is not available"
        message = ToolResultMessage(
            toolCallId=call.id,
            toolName=call.name,
            content=[TextContent(text)],
            isError=True,
            timestamp=now_ms(),
        )
        return ToolOutcome(message=message, result=text)


@attrs.frozen
class AgentRunInput:
    run_id: str
    provider: ModelProvider
    provider_id: str
    model_id: str
    api: str
    system_prompt: str
    history: Sequence[Message]
    user_message: UserMessage
    params: dict[str, Any] = attrs.field(factory=dict)
    tools: ToolRunner = attrs.field(factory=NoTools)
    max_iterations: int = 16
    emit_thinking: bool = False


@attrs.define
class RunProgress:
    """What a run has produced so far; written as the run goes."""

    messages: list[Message] = attrs.field(factory=list)
    text: str = ""
    usage: Usage = attrs.field(factory=Usage)
    stop_reason: StopReason = "stop"
    turns: int = 0
    streamed_output: bool = False


def now_ms() -> int:
    return int(time.time() * 1000)


def _add_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        input=a.input + b.input,
        output=a.output + b.output,
        cacheRead=a.cacheRead + b.cacheRead,
        cacheWrite=a.cacheWrite + b.cacheWrite,
        totalTokens=a.totalTokens + b.totalTokens,
    )


_args_decoder = msgspec.json.Decoder(dict[str, Any])


def _parse_args(text: str) -> dict[str, Any]:
    try:
        return _args_decoder.decode(text or "{}")
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {"_raw": text}


async def run_agent(inp: AgentRunInput, emit: Emit, progress: RunProgress) -> RunProgress:
    """Run the attempt loop to completion. Raises `ProviderError` when the model fails."""
    transcript: list[Message] = [*inp.history, inp.user_message]
    specs = inp.tools.specs()
    while True:
        progress.turns += 1
        request = ModelRequest(
            model=inp.model_id,
            system_prompt=inp.system_prompt,
            messages=transcript,
            tools=specs,
            params=inp.params,
        )
        turn_text: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCallContent] = []
        stop: StopReason = "stop"
        async with contextlib.aclosing(inp.provider.stream(request)) as deltas:  # type: ignore[type-var]
            async for delta in deltas:
                if isinstance(delta, TextDelta):
                    if not delta.text:
                        continue
                    turn_text.append(delta.text)
                    progress.text += delta.text
                    progress.streamed_output = True
                    emit("assistant", {"text": progress.text, "delta": delta.text})
                elif isinstance(delta, ThinkingDelta):
                    thinking.append(delta.text)
                    if inp.emit_thinking:
                        emit("thinking", {"text": "".join(thinking), "delta": delta.text})
                elif isinstance(delta, ToolCallEnd):
                    calls.append(
                        ToolCallContent(
                            id=delta.id, name=delta.name, arguments=_parse_args(delta.arguments)
                        )
                    )
                elif isinstance(delta, UsageDelta):
                    progress.usage = _add_usage(progress.usage, delta.usage)
                elif isinstance(delta, StopDelta):
                    stop = delta.reason
        content: list[AssistantContent] = []
        if thinking:
            content.append(ThinkingContent("".join(thinking)))
        if turn_text:
            content.append(TextContent("".join(turn_text)))
        content.extend(calls)
        assistant = AssistantMessage(
            content=content,
            timestamp=now_ms(),
            api=inp.api,
            provider=inp.provider_id,
            model=inp.model_id,
            usage=progress.usage,
            stopReason="toolUse" if calls else stop,
        )
        transcript.append(assistant)
        progress.messages.append(assistant)
        progress.stop_reason = assistant.stopReason
        if not calls:
            return progress
        for call in calls:
            emit(
                "tool",
                {
                    "phase": "start",
                    "name": call.name,
                    "toolCallId": call.id,
                    "args": call.arguments,
                },
            )
            outcome = await inp.tools.call(call, emit)
            data: dict[str, Any] = {
                "phase": "result",
                "name": call.name,
                "toolCallId": call.id,
                "isError": outcome.message.isError,
                "result": outcome.result,
            }
            if outcome.meta is not None:
                data["meta"] = outcome.meta
            emit("tool", data)
            transcript.append(outcome.message)
            progress.messages.append(outcome.message)
        if progress.turns >= inp.max_iterations:
            progress.stop_reason = "length"
            return progress


__all__ = [
    "AgentRunInput",
    "Emit",
    "NoTools",
    "ProviderError",
    "RunProgress",
    "ToolOutcome",
    "ToolRunner",
    "now_ms",
    "run_agent",
]
