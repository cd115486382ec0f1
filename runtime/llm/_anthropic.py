"""The ``anthropic-messages`` transport: POST {baseUrl}/v1/messages, streamed.

Request: ``stream: true``; ``max_tokens`` always (the API requires it); the system prompt as
``system``; assistant tool calls as ``tool_use`` blocks (``input`` is the arguments object);
tool results as ``tool_result`` blocks in a ``user`` message (a run of results shares one
message); tools as ``{name, description, input_schema}``; reasoning as
``thinking: {type: "enabled", budget_tokens}`` (temperature, top_p and top_k are then left out,
as the API demands).

Stream: ``message_start`` (input usage), then per content block ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``thinking_delta``, ``input_json_delta``; signatures
and citations are skipped) / ``content_block_stop``; ``message_delta`` (stop reason, output
usage); ``message_stop``. ``ping`` is a keep-alive; ``error`` carries
``{"type": "error", "error": {"type": "overloaded_error", "message": ...}}``.

Thinking blocks are not replayed: `ThinkingContent` carries no signature, and the API rejects
an unsigned thinking block. For the same reason a turn that continues a tool loop (tool
results after an assistant turn with tool calls) is sent without ``thinking``: with thinking
on, the API insists that assistant turn start with its signed thinking block.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from ._http import HttpProvider, ModelParams, classify_error, encode_body, parse_params
from ._sse import SSEEvent
from ._types import (
    AssistantMessage,
    ImageContent,
    Message,
    ModelDelta,
    ModelRequest,
    ProviderError,
    StopDelta,
    StopReason,
    TextContent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallContent,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    Usage,
    UsageDelta,
    UserMessage,
)

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider", "normalize_model_id", "tool_use_id"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192

THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}

_ALIASES: dict[str, str] = {
    "opus-4.6": "claude-opus-4-6",
    "opus-4.5": "claude-opus-4-5",
    "sonnet-4.5": "claude-sonnet-4-5",
}


def normalize_model_id(model: str) -> str:
    """Anthropic model id from a configured one: OpenClaw's short aliases (``opus-4.5``,
    ``sonnet-4.5``, ``opus-4.6``) map to API ids; anything else is kept, trimmed."""
    trimmed = model.strip()
    return _ALIASES.get(trimmed.lower(), trimmed)


_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def tool_use_id(raw: str) -> str:
    """A transcript tool-call id as the API accepts it (``^[a-zA-Z0-9_-]+$``, at most 64)."""
    return _ID_UNSAFE.sub("_", raw)[:64] or "toolu_"


# --- request body -----------------------------------------------------------------------


class _Text(msgspec.Struct, tag="text", tag_field="type"):
    text: str


class _Base64(msgspec.Struct, tag="base64", tag_field="type"):
    media_type: str
    data: str


class _Image(msgspec.Struct, tag="image", tag_field="type"):
    source: _Base64


class _ToolUse(msgspec.Struct, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: dict[str, Any]


class _ToolResult(msgspec.Struct, tag="tool_result", tag_field="type"):
    tool_use_id: str
    content: list[_Text | _Image]
    is_error: bool


_Block = _Text | _Image | _ToolUse | _ToolResult


class _Message(msgspec.Struct):
    role: str
    content: str | list[_Block]


class _Tool(msgspec.Struct):
    name: str
    description: str
    input_schema: dict[str, Any]


class _Thinking(msgspec.Struct, tag="enabled", tag_field="type"):
    budget_tokens: int


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    max_tokens: int
    messages: list[_Message]
    stream: bool
    system: str | None = None
    tools: list[_Tool] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    thinking: _Thinking | None = None


def _image(image: ImageContent) -> _Image:
    return _Image(_Base64(image.mimeType, image.data))


def _parts(content: list[TextContent | ImageContent]) -> list[_Text | _Image]:
    # The API rejects empty text blocks.
    return [
        _Text(part.text) if isinstance(part, TextContent) else _image(part)
        for part in content
        if not isinstance(part, TextContent) or part.text
    ]


def convert_messages(messages: list[Message]) -> list[_Message]:
    """pi-ai messages as Anthropic messages."""
    out: list[_Message] = []
    results: list[_Block] | None = None  # the tool_result blocks of the current user message
    for message in messages:
        if isinstance(message, UserMessage):
            results = None
            if isinstance(message.content, str):
                out.append(_Message("user", message.content))
            else:
                content: list[_Block] = [*_parts(message.content)]
                out.append(_Message("user", content))
        elif isinstance(message, AssistantMessage):
            results = None
            blocks: list[_Block] = []
            for part in message.content:
                if isinstance(part, TextContent):
                    if part.text:
                        blocks.append(_Text(part.text))
                elif isinstance(part, ToolCallContent):
                    blocks.append(_ToolUse(tool_use_id(part.id), part.name, part.arguments))
            if blocks:
                out.append(_Message("assistant", blocks))
        else:
            block = _ToolResult(
                tool_use_id(message.toolCallId), _parts(message.content), message.isError
            )
            if results is None:
                results = [block]
                out.append(_Message("user", results))
            else:
                results.append(block)
    return out


def _convert_tools(tools: list[ToolSpec]) -> list[_Tool] | None:
    if not tools:
        return None
    return [_Tool(t.name, t.description, t.parameters) for t in tools]


def _thinking(request: ModelRequest, params: ModelParams) -> tuple[int, _Thinking | None]:
    """(max_tokens, thinking) for a request: the budget comes from ``thinkingBudget`` or the
    level; max_tokens grows by the budget unless it was configured, in which case the budget
    shrinks to fit (the API wants max_tokens > budget_tokens, and budgets of at least 1024)."""
    max_tokens = params.maxTokens or DEFAULT_MAX_TOKENS
    level = params.effort
    if not request.reasoning or level == "off" or _continues_tool_use(request.messages):
        return max_tokens, None
    budget = params.thinkingBudget or THINKING_BUDGETS.get(
        level or "medium", THINKING_BUDGETS["medium"]
    )
    if params.maxTokens is None:
        return max_tokens + budget, _Thinking(budget)
    budget = min(budget, max_tokens - 1024)
    if budget < 1024:
        return max_tokens, None
    return max_tokens, _Thinking(budget)


def _continues_tool_use(messages: list[Message]) -> bool:
    """Whether this turn answers tool results of an assistant turn that called tools.

    With thinking enabled the API requires that assistant turn to start with its signed
    thinking block, which transcripts cannot give back (`ThinkingContent` has no signature):
    such a turn goes out without thinking rather than be rejected.
    """
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return any(isinstance(part, ToolCallContent) for part in message.content)
        if isinstance(message, UserMessage):
            return False
    return False


def build_body(request: ModelRequest) -> bytes:
    """The JSON body of one streamed Messages request."""
    params = parse_params(request.params)
    max_tokens, thinking = _thinking(request, params)
    body = _Body(
        model=normalize_model_id(request.model),
        max_tokens=max_tokens,
        messages=convert_messages(request.messages),
        stream=True,
        system=request.system_prompt or None,
        tools=_convert_tools(request.tools),
        temperature=None if thinking else params.temperature,
        top_p=None if thinking else params.topP,
        top_k=None if thinking else params.topK,
        stop_sequences=params.stop_list,
        thinking=thinking,
    )
    return encode_body(body, params.extraBody)


# --- stream -----------------------------------------------------------------------------
# Inbound structs ignore unknown fields on purpose: the API adds fields without notice.


class _Type(msgspec.Struct):
    type: str = ""


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class _StartMessage(msgspec.Struct):
    usage: _Usage | None = None


class _MessageStart(msgspec.Struct):
    message: _StartMessage


class _ContentBlock(msgspec.Struct):
    type: str = ""
    id: str | None = None
    name: str | None = None
    text: str | None = None
    thinking: str | None = None
    input: msgspec.Raw = msgspec.Raw()


class _BlockStart(msgspec.Struct):
    index: int
    content_block: _ContentBlock


class _DeltaBody(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None


class _BlockDelta(msgspec.Struct):
    index: int
    delta: _DeltaBody


class _BlockStop(msgspec.Struct):
    index: int


class _MessageDeltaBody(msgspec.Struct):
    stop_reason: str | None = None


class _MessageDelta(msgspec.Struct):
    delta: _MessageDeltaBody
    usage: _Usage | None = None


class _ErrorBody(msgspec.Struct):
    type: str | None = None
    message: str | None = None


class _ErrorEvent(msgspec.Struct):
    error: _ErrorBody


_type_decoder = msgspec.json.Decoder(_Type)
_start_decoder = msgspec.json.Decoder(_MessageStart)
_block_start_decoder = msgspec.json.Decoder(_BlockStart)
_block_delta_decoder = msgspec.json.Decoder(_BlockDelta)
_block_stop_decoder = msgspec.json.Decoder(_BlockStop)
_message_delta_decoder = msgspec.json.Decoder(_MessageDelta)
_error_decoder = msgspec.json.Decoder(_ErrorEvent)

_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
    "refusal": "error",
}


class _ToolState:
    __slots__ = ("args", "id", "index", "initial", "name")

    def __init__(self, index: int, id: str, name: str, initial: bytes) -> None:
        self.index = index
        self.id = id
        self.name = name
        self.initial = initial  # the block's start `input` as JSON, used if no delta comes
        self.args: list[str] = []


class MessagesParser:
    """Anthropic Messages events → deltas (see `StreamParser`)."""

    def __init__(self) -> None:
        self.done = False
        self._blocks: dict[int, _ToolState] = {}  # open tool_use blocks by content index
        self._tools = 0
        self._usage = _Usage()
        self._stop: str | None = None
        self._handlers: dict[str, Callable[[bytes, list[ModelDelta]], None]] = {
            "content_block_delta": self._block_delta,
            "content_block_start": self._block_start,
            "content_block_stop": self._block_stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
            "error": self._error,
        }

    def feed(self, event: SSEEvent, out: list[ModelDelta]) -> None:
        name = event.event
        if name == "message":  # a server that does not name its events
            name = _type_decoder.decode(event.data).type
        handler = self._handlers.get(name)
        if handler is not None:  # ping and future event types are skipped
            handler(event.data, out)

    def finish(self, out: list[ModelDelta]) -> None:
        if self._stop is None:
            raise ProviderError("network", "the stream ended before message_stop")
        self._message_stop(b"", out)

    # --- handlers --------------------------------------------------------------------------

    def _message_start(self, data: bytes, out: list[ModelDelta]) -> None:
        usage = _start_decoder.decode(data).message.usage
        if usage is not None:
            self._merge_usage(usage)

    def _block_start(self, data: bytes, out: list[ModelDelta]) -> None:
        event = _block_start_decoder.decode(data)
        block = event.content_block
        if block.type == "text":
            if block.text:
                out.append(TextDelta(block.text))
        elif block.type == "thinking":
            if block.thinking:
                out.append(ThinkingDelta(block.thinking))
        elif block.type == "tool_use":
            if not block.id or not block.name:
                raise ProviderError("malformed", "tool_use block without id or name")
            initial = bytes(block.input)
            if initial == b"null":
                initial = b""
            state = _ToolState(self._tools, block.id, block.name, initial)
            self._tools += 1
            self._blocks[event.index] = state
            out.append(ToolCallStart(state.index, state.id, state.name))
        # redacted_thinking, server_tool_use, ... carry nothing we stream

    def _block_delta(self, data: bytes, out: list[ModelDelta]) -> None:
        event = _block_delta_decoder.decode(data)
        delta = event.delta
        kind = delta.type
        if kind == "text_delta":
            if delta.text:
                out.append(TextDelta(delta.text))
        elif kind == "thinking_delta":
            if delta.thinking:
                out.append(ThinkingDelta(delta.thinking))
        elif kind == "input_json_delta":
            state = self._blocks.get(event.index)
            if state is not None and delta.partial_json:
                state.args.append(delta.partial_json)
                out.append(ToolCallArgsDelta(state.index, delta.partial_json))

    def _block_stop(self, data: bytes, out: list[ModelDelta]) -> None:
        state = self._blocks.pop(_block_stop_decoder.decode(data).index, None)
        if state is not None:
            self._end(state, out)

    @staticmethod
    def _end(state: _ToolState, out: list[ModelDelta]) -> None:
        arguments = "".join(state.args) or state.initial.decode("utf-8", "replace") or "{}"
        out.append(ToolCallEnd(state.index, state.id, state.name, arguments))

    def _message_delta(self, data: bytes, out: list[ModelDelta]) -> None:
        event = _message_delta_decoder.decode(data)
        if event.delta.stop_reason is not None:
            self._stop = event.delta.stop_reason
        if event.usage is not None:
            self._merge_usage(event.usage)

    def _merge_usage(self, usage: _Usage) -> None:
        current = self._usage
        self._usage = _Usage(
            input_tokens=usage.input_tokens
            if usage.input_tokens is not None
            else current.input_tokens,
            output_tokens=usage.output_tokens
            if usage.output_tokens is not None
            else current.output_tokens,
            cache_creation_input_tokens=(
                usage.cache_creation_input_tokens
                if usage.cache_creation_input_tokens is not None
                else current.cache_creation_input_tokens
            ),
            cache_read_input_tokens=(
                usage.cache_read_input_tokens
                if usage.cache_read_input_tokens is not None
                else current.cache_read_input_tokens
            ),
        )

    def _message_stop(self, data: bytes, out: list[ModelDelta]) -> None:
        for state in self._blocks.values():  # blocks the server never closed
            self._end(state, out)
        self._blocks.clear()
        reason = _STOP.get(self._stop or "end_turn", "stop")
        if reason == "stop" and self._tools:
            reason = "toolUse"
        raw = self._usage
        usage = Usage(
            input=raw.input_tokens or 0,
            output=raw.output_tokens or 0,
            cacheRead=raw.cache_read_input_tokens or 0,
            cacheWrite=raw.cache_creation_input_tokens or 0,
        )
        usage = msgspec.structs.replace(
            usage, totalTokens=usage.input + usage.output + usage.cacheRead + usage.cacheWrite
        )
        out.append(UsageDelta(usage))
        out.append(StopDelta(reason))
        self.done = True

    def _error(self, data: bytes, out: list[ModelDelta]) -> None:
        error = _error_decoder.decode(data).error
        raise classify_error(error.message or "provider error", error_type=error.type)


# --- the provider -----------------------------------------------------------------------


class AnthropicProvider(HttpProvider):
    """``api: anthropic-messages``. Auth: ``x-api-key`` and ``anthropic-version: 2023-06-01``."""

    api_name: ClassVar[str] = "anthropic-messages"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL

    def _endpoint(self, base_url: str) -> str:
        # Tolerate a baseUrl that already ends in /v1.
        return f"{base_url}/messages" if base_url.endswith("/v1") else f"{base_url}/v1/messages"

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def _encode_request(self, request: ModelRequest) -> bytes:
        return build_body(request)

    def _new_parser(self, request: ModelRequest) -> MessagesParser:
        return MessagesParser()
