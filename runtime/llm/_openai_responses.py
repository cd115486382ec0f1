"""The ``openai-responses`` transport: POST {baseUrl}/responses, streamed.

Request: ``stream: true, store: false``; the system prompt as ``instructions``; user and
assistant text as ``message`` items; assistant tool calls as ``function_call`` items and tool
results as ``function_call_output`` items, both keyed by ``call_id`` (images from a tool
result follow in a ``user`` message); tools flat as ``{"type": "function", name, ...}``;
reasoning models get ``reasoning: {effort, summary: "auto"}`` so summaries stream.

Stream: typed events, one per SSE event (the ``event:`` name equals the JSON ``type``):
``response.output_text.delta``, ``response.refusal.delta``,
``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta``,
``response.output_item.added`` / ``.done`` (a ``function_call`` item opens and closes a tool
call), ``response.function_call_arguments.delta`` / ``.done``, and one terminal event:
``response.completed`` (with usage), ``response.incomplete``, ``response.failed`` or ``error``.
Other events (created, in_progress, content_part.*, ...) are skipped.

Tool-call ids are ``call_id|item_id``, as pi-ai writes them into transcripts; only the
``call_id`` goes back to the API (an ``fc_`` item id without its reasoning item is rejected).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from ._http import HttpProvider, classify_error, encode_body, error_from_payload, parse_params
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

__all__ = ["OpenAIResponsesProvider", "call_id"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def call_id(raw: str) -> str:
    """The Responses ``call_id`` of a transcript tool-call id (at most 64 characters)."""
    return raw.split("|", 1)[0][:64]


# --- request body -----------------------------------------------------------------------


class _InputText(msgspec.Struct, tag="input_text", tag_field="type"):
    text: str


class _InputImage(msgspec.Struct, tag="input_image", tag_field="type"):
    image_url: str
    detail: str = "auto"


class _MessageItem(msgspec.Struct, tag="message", tag_field="type"):
    role: str
    content: str | list[_InputText | _InputImage]


class _FunctionCallItem(msgspec.Struct, tag="function_call", tag_field="type"):
    call_id: str
    name: str
    arguments: str


class _FunctionOutputItem(msgspec.Struct, tag="function_call_output", tag_field="type"):
    call_id: str
    output: str


_InputItem = _MessageItem | _FunctionCallItem | _FunctionOutputItem


class _FunctionTool(msgspec.Struct, tag="function", tag_field="type"):
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = False


class _Reasoning(msgspec.Struct):
    effort: str
    summary: str = "auto"


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    input: list[_InputItem]
    stream: bool
    store: bool
    instructions: str | None = None
    tools: list[_FunctionTool] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    parallel_tool_calls: bool | None = None
    reasoning: _Reasoning | None = None


_args_encoder = msgspec.json.Encoder()


def _image(image: ImageContent) -> _InputImage:
    return _InputImage(f"data:{image.mimeType};base64,{image.data}")


def convert_messages(messages: list[Message]) -> list[_InputItem]:
    """pi-ai messages as Responses input items."""
    items: list[_InputItem] = []
    for message in messages:
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                items.append(_MessageItem("user", [_InputText(message.content)]))
            else:
                items.append(
                    _MessageItem(
                        "user",
                        [
                            _InputText(part.text) if isinstance(part, TextContent) else _image(part)
                            for part in message.content
                        ],
                    )
                )
        elif isinstance(message, AssistantMessage):
            # Thinking is not replayed: without its encrypted reasoning item it means nothing.
            text: list[str] = []
            for part in message.content:
                if isinstance(part, TextContent):
                    text.append(part.text)
                elif isinstance(part, ToolCallContent):
                    if text:
                        items.append(_MessageItem("assistant", "".join(text)))
                        text = []
                    items.append(
                        _FunctionCallItem(
                            call_id(part.id),
                            part.name,
                            _args_encoder.encode(part.arguments).decode(),
                        )
                    )
            if text:
                items.append(_MessageItem("assistant", "".join(text)))
        else:
            output = "\n".join(
                part.text for part in message.content if isinstance(part, TextContent)
            )
            images = [part for part in message.content if isinstance(part, ImageContent)]
            if not output and images:
                output = "(see attached image)"
            items.append(_FunctionOutputItem(call_id(message.toolCallId), output))
            if images:
                parts: list[_InputText | _InputImage] = [
                    _InputText("Attached image(s) from tool result:")
                ]
                parts.extend(_image(image) for image in images)
                items.append(_MessageItem("user", parts))
    return items


def _convert_tools(tools: list[ToolSpec]) -> list[_FunctionTool] | None:
    if not tools:
        return None
    return [_FunctionTool(t.name, t.description, t.parameters) for t in tools]


def build_body(request: ModelRequest) -> bytes:
    """The JSON body of one streamed Responses request."""
    params = parse_params(request.params)
    effort = params.effort
    reasoning = None
    if request.reasoning and effort != "off":
        reasoning = _Reasoning(effort or "medium")
    body = _Body(
        model=request.model.strip(),
        input=convert_messages(request.messages),
        stream=True,
        store=False,
        instructions=request.system_prompt or None,
        tools=_convert_tools(request.tools),
        temperature=params.temperature,
        top_p=params.topP,
        max_output_tokens=params.maxTokens,
        parallel_tool_calls=params.parallelToolCalls,
        reasoning=reasoning,
    )
    return encode_body(body, params.extraBody)


# --- stream -----------------------------------------------------------------------------
# Inbound structs ignore unknown fields on purpose: the API adds fields without notice.


class _Type(msgspec.Struct):
    type: str = ""


class _TextEvent(msgspec.Struct):
    delta: str = ""


class _SummaryPartEvent(msgspec.Struct):
    summary_index: int = 0


class _OutputItem(msgspec.Struct):
    type: str = ""
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class _ItemEvent(msgspec.Struct):
    item: _OutputItem
    output_index: int = 0


class _ArgsEvent(msgspec.Struct):
    output_index: int = 0
    delta: str = ""
    arguments: str | None = None


class _InputDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: _InputDetails | None = None


class _Error(msgspec.Struct):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class _Incomplete(msgspec.Struct):
    reason: str | None = None


class _Response(msgspec.Struct):
    status: str | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    incomplete_details: _Incomplete | None = None


class _ResponseEvent(msgspec.Struct):
    response: _Response


_type_decoder = msgspec.json.Decoder(_Type)
_text_decoder = msgspec.json.Decoder(_TextEvent)
_summary_part_decoder = msgspec.json.Decoder(_SummaryPartEvent)
_item_decoder = msgspec.json.Decoder(_ItemEvent)
_args_decoder = msgspec.json.Decoder(_ArgsEvent)
_response_decoder = msgspec.json.Decoder(_ResponseEvent)


class _ToolState:
    __slots__ = ("args", "ended", "id", "index", "name")

    def __init__(self, index: int, id: str, name: str) -> None:
        self.index = index
        self.id = id
        self.name = name
        self.args: list[str] = []
        self.ended = False


class ResponsesParser:
    """Responses API events → deltas (see `StreamParser`)."""

    def __init__(self) -> None:
        self.done = False
        self._tools: dict[int, _ToolState] = {}  # by output_index
        self._thinking = False  # a reasoning summary part has streamed
        self._handlers: dict[str, Callable[[bytes, list[ModelDelta]], None]] = {
            "response.output_text.delta": self._text,
            "response.refusal.delta": self._text,
            "response.reasoning_summary_text.delta": self._reasoning,
            "response.reasoning_text.delta": self._reasoning,
            "response.reasoning_summary_part.added": self._summary_part,
            "response.output_item.added": self._item_added,
            "response.function_call_arguments.delta": self._args_delta,
            "response.function_call_arguments.done": self._args_done,
            "response.output_item.done": self._item_done,
            "response.completed": self._completed,
            "response.incomplete": self._completed,
            "response.failed": self._failed,
            "error": self._error,
        }

    def feed(self, event: SSEEvent, out: list[ModelDelta]) -> None:
        name = event.event
        if name == "message":  # a server that does not name its events
            name = _type_decoder.decode(event.data).type
        handler = self._handlers.get(name)
        if handler is not None:
            handler(event.data, out)

    def finish(self, out: list[ModelDelta]) -> None:
        raise ProviderError("network", "the stream ended before response.completed")

    # --- handlers --------------------------------------------------------------------------

    def _text(self, data: bytes, out: list[ModelDelta]) -> None:
        delta = _text_decoder.decode(data).delta
        if delta:
            out.append(TextDelta(delta))

    def _reasoning(self, data: bytes, out: list[ModelDelta]) -> None:
        delta = _text_decoder.decode(data).delta
        if delta:
            self._thinking = True
            out.append(ThinkingDelta(delta))

    def _summary_part(self, data: bytes, out: list[ModelDelta]) -> None:
        if self._thinking:  # separate summary parts as pi-ai does
            out.append(ThinkingDelta("\n\n"))
            self._thinking = False

    def _item_added(self, data: bytes, out: list[ModelDelta]) -> None:
        event = _item_decoder.decode(data)
        item = event.item
        if item.type != "function_call":
            return
        if not item.name:
            raise ProviderError("malformed", "function_call item without a name")
        state = _ToolState(len(self._tools), f"{item.call_id or ''}|{item.id or ''}", item.name)
        self._tools[event.output_index] = state
        out.append(ToolCallStart(state.index, state.id, state.name))
        if item.arguments:
            state.args.append(item.arguments)
            out.append(ToolCallArgsDelta(state.index, item.arguments))

    def _args_delta(self, data: bytes, out: list[ModelDelta]) -> None:
        event = _args_decoder.decode(data)
        state = self._tools.get(event.output_index)
        if state is None:
            raise ProviderError("malformed", "arguments for a function call that never started")
        if event.delta:
            state.args.append(event.delta)
            out.append(ToolCallArgsDelta(state.index, event.delta))

    def _args_done(self, data: bytes, out: list[ModelDelta]) -> None:
        event = _args_decoder.decode(data)
        state = self._tools.get(event.output_index)
        if state is not None and event.arguments is not None:
            state.args = [event.arguments]  # the authoritative whole

    def _item_done(self, data: bytes, out: list[ModelDelta]) -> None:
        event = _item_decoder.decode(data)
        if event.item.type != "function_call":
            return
        state = self._tools.get(event.output_index)
        if state is None:
            raise ProviderError("malformed", "a function call ended that never started")
        if event.item.arguments is not None:
            state.args = [event.item.arguments]
        self._end(state, out)

    def _end(self, state: _ToolState, out: list[ModelDelta]) -> None:
        if not state.ended:
            state.ended = True
            out.append(ToolCallEnd(state.index, state.id, state.name, "".join(state.args) or "{}"))

    def _completed(self, data: bytes, out: list[ModelDelta]) -> None:
        response = _response_decoder.decode(data).response
        for state in self._tools.values():
            self._end(state, out)
        reason: StopReason = "stop"
        if response.status == "incomplete":
            details = response.incomplete_details
            reason = (
                "error" if details is not None and details.reason == "content_filter" else "length"
            )
        elif self._tools:
            reason = "toolUse"
        if response.usage is not None:
            out.append(UsageDelta(_usage(response.usage)))
        out.append(StopDelta(reason))
        self.done = True

    def _failed(self, data: bytes, out: list[ModelDelta]) -> None:
        error = _response_decoder.decode(data).response.error
        if error is None:
            raise ProviderError("server", "response.failed without error details")
        raise classify_error(
            error.message or "response failed",
            error_type=error.type,
            code=None if error.code is None else str(error.code),
        )

    def _error(self, data: bytes, out: list[ModelDelta]) -> None:
        # Documented flat ({type, code, message, param}); seen nested under "error" too.
        raise error_from_payload(data)


def _usage(raw: _Usage) -> Usage:
    prompt = raw.input_tokens or 0
    output = raw.output_tokens or 0
    details = raw.input_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    return Usage(
        input=max(prompt - cached, 0),
        output=output,
        cacheRead=cached,
        cacheWrite=0,
        totalTokens=prompt + output,
    )


# --- the provider -----------------------------------------------------------------------


class OpenAIResponsesProvider(HttpProvider):
    """``api: openai-responses``. Auth: ``Authorization: Bearer <apiKey>``."""

    api_name: ClassVar[str] = "openai-responses"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL

    def _endpoint(self, base_url: str) -> str:
        return f"{base_url}/responses"

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def _encode_request(self, request: ModelRequest) -> bytes:
        return build_body(request)

    def _new_parser(self, request: ModelRequest) -> ResponsesParser:
        return ResponsesParser()
