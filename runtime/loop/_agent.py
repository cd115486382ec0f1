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
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

import attrs
import msgspec
import trio

from ..hooks._events import HookUsage, LlmInputEvent, LlmOutputEvent
from ..hooks._registry import HookRegistry
from ..llm._retry import IdleTimeoutError, stream_with_retry, watchdog_deadline
from ..llm._types import (
    AssistantContent,
    AssistantMessage,
    InputProvenance,
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
from ..telemetry import STATE
from ._traced import TracedProvider, traced_tool_call

log = logging.getLogger("clawlane.loop")

Emit = Callable[[str, dict[str, Any]], None]
"""`emit(stream, data)`: synchronous and non-blocking (the hub stamps, encodes, fans out)."""


YIELD_SKIPPED: Final = "skipped: the turn ended (sessions_yield)"


@attrs.frozen
class TurnYield:
    """A tool ended the run's turn (`sessions_yield`): the private context for the
    session's next turn (the run's host keeps it as a hidden message: `runtime.agent`'s
    `run_notes`), and the waiting reply the call asked for (if any)."""

    message: str
    acknowledgment: str | None = None


@attrs.frozen
class NestedCall:
    """A call made inside another call (Tool Search's `tool_call` running its target): what
    the transcript keeps of it for display, never for the model (OpenClaw's nested tool
    activity; its row: `runtime.agent`'s `run_notes`). Times in epoch ms."""

    tool_call_id: str
    parent_tool_call_id: str
    tool_name: str
    input: Any
    result: Any
    """As clients were shown it (`{content, details?, isError}`)."""
    is_error: bool
    started_at: int
    ended_at: int


@attrs.frozen
class ToolOutcome:
    """What a tool call produced, already sanitised for emitting and persisting."""

    message: ToolResultMessage
    result: Any
    meta: str | None = None
    yielded: TurnYield | None = None
    """The call ended the turn: no further tool call or model turn in this run."""
    nested: tuple[NestedCall, ...] = ()
    """The calls it made inside itself, in order."""
    kept: tuple[Callable[[], None], ...] = ()
    """What the call asked to run once its result is kept (`runtime.tools.ToolContext`
    `on_kept`): `_run_tool_calls` runs it right after appending `message` to the run's
    messages; a run aborted before never does."""


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


@attrs.define(eq=False)
class SteerInbox:
    """Messages steered into a running run; taken at the next model/tool boundary.

    `close()` is called when the run can no longer take messages; whatever is left is
    returned so the owner can queue it as follow-ups. Synchronous; one trio thread.
    """

    _items: list[str] = attrs.field(factory=list)
    _keys: list[str | None] = attrs.field(factory=list)
    _provenance: list[InputProvenance | None] = attrs.field(factory=list)
    _closed: bool = False
    taken_keys: list[str | None] = attrs.field(factory=list)
    """The `key` of each message `take` returned, in order (the steered run's id: its
    transcript row carries it)."""

    def offer(
        self, text: str, key: str | None = None, provenance: InputProvenance | None = None
    ) -> bool:
        """Steer `text` in (`provenance`: who routed it here when no person did, kept on
        its user message). False when the run takes no more."""
        if self._closed:
            return False
        self._items.append(text)
        self._keys.append(key)
        self._provenance.append(provenance)
        return True

    def pending(self) -> bool:
        return bool(self._items)

    def take(self) -> list[UserMessage]:
        """The messages steered in since the last `take`, as user messages."""
        items, self._items = self._items, []
        keys, self._keys = self._keys, []
        marks, self._provenance = self._provenance, []
        self.taken_keys.extend(keys)
        now = now_ms()
        return [
            UserMessage(content=text, timestamp=now, provenance=mark)
            for text, mark in zip(items, marks, strict=True)
        ]

    def close(self) -> list[str]:
        self._closed = True
        items, self._items, self._keys, self._provenance = self._items, [], [], []
        return items


def _take_steered(inp: AgentRunInput) -> list[UserMessage]:
    return inp.steer_inbox.take() if inp.steer_inbox is not None else []


def _append_steered(
    steered: list[UserMessage], transcript: list[Message], progress: RunProgress
) -> None:
    transcript.extend(steered)
    progress.messages.extend(steered)


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
    idle_timeout: float | None = None
    max_attempts: int = 3
    session_id: str = ""
    hooks: HookRegistry | None = None
    steer_inbox: SteerInbox | None = None
    resume: Sequence[Message] = ()
    """Messages this run already produced after `user_message` (a retry after compaction
    continues from them instead of starting over)."""
    history_clean: bool = False
    """`history` is as a provider sees it already (`provider_clean`): it is sent as it is,
    not walked again (the session knows, as its context grows)."""
    history_tokens: int | None = None
    """`history`'s size by `estimate_message_tokens`, when known (with `history_clean`)."""


@attrs.define
class RunProgress:
    """What a run has produced so far; written as the run goes."""

    messages: list[Message] = attrs.field(factory=list)
    text: str = ""
    usage: Usage = attrs.field(factory=Usage)
    stop_reason: StopReason = "stop"
    turns: int = 0
    streamed_output: bool = False
    yielded: TurnYield | None = None
    """A tool ended the turn (`sessions_yield`); the run ended after its result."""
    nested: list[tuple[int, NestedCall]] = attrs.field(factory=list)
    """The calls made inside the run's tool calls, each with the number of `messages` there
    were when it ended (its row goes before the result of the call that made it)."""


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


def provider_history(messages: Sequence[Message]) -> list[Message]:
    """The transcript as a provider may see it: assistant turns that ended in an error are
    dropped, and tool calls without a result (a run cut short mid-tool) are removed."""
    answered: set[str] | None = None
    out: list[Message] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            if m.stopReason == "error":
                continue
            content = m.content
            if len(content) == 1 and type(content[0]) is TextContent:
                out.append(m)  # the common case: a plain answer
                continue
            if answered is None:
                answered = {r.toolCallId for r in messages if isinstance(r, ToolResultMessage)}
            if any(isinstance(c, ToolCallContent) and c.id not in answered for c in content):
                kept = [
                    c
                    for c in m.content
                    if not (isinstance(c, ToolCallContent) and c.id not in answered)
                ]
                if not kept:
                    continue
                m = msgspec.structs.replace(m, content=kept, stopReason="stop")
        out.append(m)
    return out


def provider_clean(messages: Sequence[Message]) -> bool:
    """Whether `provider_history` keeps `messages` whole: no assistant turn that ended in
    an error, every tool call answered among them. Two clean runs of messages make a clean
    whole (a run's tool results answer its own calls), so a session keeps this as its
    context grows instead of walking it all for every run."""
    calls: set[str] = set()
    for m in messages:
        if isinstance(m, AssistantMessage):
            if m.stopReason == "error":
                return False
            content = m.content
            if len(content) == 1 and type(content[0]) is TextContent:
                continue
            calls.update(c.id for c in content if isinstance(c, ToolCallContent))
        elif isinstance(m, ToolResultMessage):
            calls.discard(m.toolCallId)
    return not calls


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(c.text for c in message.content if isinstance(c, TextContent))


async def run_agent(inp: AgentRunInput, emit: Emit, progress: RunProgress) -> RunProgress:
    """Run the attempt loop to completion. Raises `ProviderError` when the model fails.

    Each model turn goes through `stream_with_retry`: retryable failures before any output
    are retried with backoff; the LLM idle watchdog (`idle_timeout`) aborts a silent stream.
    """
    clean = inp.history_clean
    transcript: list[Message] = [
        *(inp.history if clean else provider_history(inp.history)),
        inp.user_message,
        *provider_history(inp.resume),
    ]
    known = (len(inp.history), inp.history_tokens) if clean and inp.history_tokens else None
    if hasattr(inp.tools, "run_messages"):  # the calls see the run's messages so far
        inp.tools.run_messages = _messages_so_far(inp.user_message, progress)
    specs = inp.tools.specs()
    hooks = inp.hooks
    while True:
        progress.turns += 1
        request = ModelRequest(
            model=inp.model_id,
            system_prompt=inp.system_prompt,
            messages=transcript,
            tools=specs,
            params=inp.params,
            known_tokens=known,
        )
        if hooks is not None and hooks.has("llm_input"):
            await _fire_llm_input(hooks, inp, transcript)
        turn_text, thinking, calls, stop = await _model_turn(inp, request, emit, progress)
        assistant = _assistant_message(inp, turn_text, thinking, calls, stop, progress.usage)
        transcript.append(assistant)
        progress.messages.append(assistant)
        if hooks is not None and hooks.has("llm_output"):
            await _fire_llm_output(hooks, inp, turn_text, assistant, progress.usage)
        progress.stop_reason = assistant.stopReason
        if not calls:
            steered = _take_steered(inp)
            if not steered:
                return progress
            _append_steered(steered, transcript, progress)
            if progress.turns >= inp.max_iterations:
                progress.stop_reason = "length"
                return progress
            continue
        await _run_tool_calls(inp, calls, emit, transcript, progress)
        if progress.yielded is not None:
            return progress  # OpenClaw's yield: the turn ends after the tool's result
        steered = _take_steered(inp)
        if steered:
            _append_steered(steered, transcript, progress)
        if progress.turns >= inp.max_iterations:
            progress.stop_reason = "length"
            return progress


async def _model_turn(
    inp: AgentRunInput, request: ModelRequest, emit: Emit, progress: RunProgress
) -> tuple[list[str], list[str], list[ToolCallContent], StopReason]:
    """Stream one model turn out as events: (its text pieces, its thinking pieces, its tool
    calls, its stop reason). Raises `IdleTimeoutError` when the watchdog fired."""
    turn_text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCallContent] = []
    stop: StopReason = "stop"
    window = inp.idle_timeout if inp.idle_timeout is not None and inp.idle_timeout > 0 else None
    # One watchdog scope per model turn, its deadline pushed per delta (see
    # `stream_with_retry`): the loop body below must stay free of awaits.
    watchdog = trio.CancelScope(
        deadline=watchdog_deadline(window) if window is not None else math.inf
    )
    provider = inp.provider
    if STATE.on:  # a span per provider request (`_traced`)
        provider = TracedProvider(provider, inp.provider_id)
    stream = stream_with_retry(
        provider,
        request,
        idle_timeout=window,
        max_attempts=inp.max_attempts,
        watchdog=watchdog if window is not None else None,
    )
    with watchdog:
        async with contextlib.aclosing(stream) as deltas:  # type: ignore[type-var]
            async for delta in deltas:
                if isinstance(delta, TextDelta):
                    if not delta.text:
                        continue
                    piece = delta.text
                    if not turn_text and progress.text and not progress.text.endswith("\n\n"):
                        # A later model turn (after a tool or a steered message) starts a
                        # new paragraph of the run's text, as OpenClaw joins them.
                        piece = "\n\n" + piece
                    turn_text.append(delta.text)
                    progress.text += piece
                    progress.streamed_output = True
                    emit("assistant", {"text": progress.text, "delta": piece})
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
    if watchdog.cancelled_caught:
        assert window is not None
        raise IdleTimeoutError(window)
    return turn_text, thinking, calls, stop


def _assistant_message(
    inp: AgentRunInput,
    turn_text: list[str],
    thinking: list[str],
    calls: list[ToolCallContent],
    stop: StopReason,
    usage: Usage,
) -> AssistantMessage:
    content: list[AssistantContent] = []
    if thinking:
        content.append(ThinkingContent("".join(thinking)))
    if turn_text:
        content.append(TextContent("".join(turn_text)))
    content.extend(calls)
    return AssistantMessage(
        content=content,
        timestamp=now_ms(),
        api=inp.api,
        provider=inp.provider_id,
        model=inp.model_id,
        usage=usage,
        stopReason="toolUse" if calls else stop,
    )


async def _fire_llm_input(
    hooks: HookRegistry, inp: AgentRunInput, transcript: list[Message]
) -> None:
    await hooks.fire(
        "llm_input",
        LlmInputEvent(
            runId=inp.run_id,
            sessionId=inp.session_id,
            provider=inp.provider_id,
            model=inp.model_id,
            prompt=_user_text(inp.user_message),
            historyMessages=list(transcript[:-1]),
            systemPrompt=inp.system_prompt,
        ),
    )


async def _fire_llm_output(
    hooks: HookRegistry,
    inp: AgentRunInput,
    turn_text: list[str],
    assistant: AssistantMessage,
    usage: Usage,
) -> None:
    await hooks.fire(
        "llm_output",
        LlmOutputEvent(
            runId=inp.run_id,
            sessionId=inp.session_id,
            provider=inp.provider_id,
            model=inp.model_id,
            assistantTexts=["".join(turn_text)] if turn_text else [],
            lastAssistant=assistant,
            usage=HookUsage(input=usage.input, output=usage.output, total=usage.totalTokens),
        ),
    )


async def _run_tool_calls(
    inp: AgentRunInput,
    calls: list[ToolCallContent],
    emit: Emit,
    transcript: list[Message],
    progress: RunProgress,
) -> None:
    """Run a turn's tool calls in order, each with its `start` and `result` events; a message
    steered in meanwhile, or a call that ended the turn (`progress.yielded`), skips the rest
    (each gets an error result)."""
    for i, call in enumerate(calls):
        if progress.yielded is not None:
            _skip(calls[i:], YIELD_SKIPPED, transcript, progress)
            return
        if inp.steer_inbox is not None and inp.steer_inbox.pending():
            # A steering message arrived: the rest of this turn's tool calls are skipped.
            _skip(calls[i:], "skipped: the user sent a new message", transcript, progress)
            return
        emit(
            "tool",
            {"phase": "start", "name": call.name, "toolCallId": call.id, "args": call.arguments},
        )
        if STATE.on:
            outcome = await traced_tool_call(inp.tools, call, emit)
        else:
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
        message = outcome.message
        if outcome.yielded is not None:
            progress.yielded = outcome.yielded  # its context: a hidden message of the host's
        progress.nested.extend((len(progress.messages), n) for n in outcome.nested)
        transcript.append(message)
        progress.messages.append(message)
        _commit(outcome.kept)


def _commit(kept: Sequence[Callable[[], None]]) -> None:
    """Run what a call asked to run once its result is kept (its result is in)."""
    for commit in kept:
        try:
            commit()
        except Exception:
            log.exception("a tool result's commit failed")


def _skip(
    calls: list[ToolCallContent], why: str, transcript: list[Message], progress: RunProgress
) -> None:
    for skipped in calls:
        message = ToolResultMessage(
            toolCallId=skipped.id,
            toolName=skipped.name,
            content=[TextContent(why)],
            isError=True,
            timestamp=now_ms(),
        )
        transcript.append(message)
        progress.messages.append(message)


def _messages_so_far(user: Message, progress: RunProgress) -> Callable[[], tuple[Message, ...]]:
    """The run's messages so far, for its tool calls: its user message and what `progress`
    holds. Closes over these two only, not the run's input, which holds the tools the
    function is given to (a reference cycle, kept until the cyclic collector runs)."""
    return lambda: (user, *progress.messages)


__all__ = [
    "AgentRunInput",
    "Emit",
    "NestedCall",
    "NoTools",
    "ProviderError",
    "RunProgress",
    "ToolOutcome",
    "ToolRunner",
    "TurnYield",
    "now_ms",
    "provider_clean",
    "run_agent",
]
