"""The ``openai-completions`` transport: POST {baseUrl}/chat/completions, streamed.

Request: ``stream: true`` with ``stream_options.include_usage``; the system prompt as a
``system`` message; assistant tool calls as ``tool_calls`` (arguments as JSON text); tool
results as ``tool`` messages (their images follow in one ``user`` message, since a tool
message holds text only); tools as ``{"type": "function", "function": {...}}``.

Stream: ``data:`` lines of ``chat.completion.chunk`` objects, then ``data: [DONE]``. Text in
``delta.content``; reasoning in ``delta.reasoning_content`` (DeepSeek, vLLM) or
``delta.reasoning`` (OpenRouter, Ollama); tool calls in ``delta.tool_calls``, assembled by
``index`` (ids and names arrive once, arguments in fragments); ``finish_reason`` on the last
choice chunk; usage in a final chunk with no choices; an ``{"error": {...}}`` object for a
failure after the 200.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

import msgspec

from ._http import (
    HttpProvider,
    ModelParams,
    classify_error,
    encode_body,
    error_from_payload,
    parse_params,
)
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
    ToolResultMessage,
    ToolSpec,
    Usage,
    UsageCost,
    UsageDelta,
    UserMessage,
)

__all__ = ["OpenAICompletionsProvider", "normalize_model_id", "tool_call_id"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def normalize_model_id(model: str) -> str:
    """OpenAI-compatible ids are taken as written (``openai/gpt-oss-120b`` is a real id on
    several gateways), only trimmed."""
    return model.strip()


_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def tool_call_id(raw: str) -> str:
    """A transcript tool-call id as Chat Completions accepts it (at most 40 characters).

    Ids from the Responses transport are ``call_id|item_id``: the call id is kept.
    """
    if "|" in raw:
        raw = _ID_UNSAFE.sub("_", raw.split("|", 1)[0])
    return raw[:40]


# --- request body -----------------------------------------------------------------------


class _TextPart(msgspec.Struct, tag="text", tag_field="type"):
    text: str


class _ImageUrl(msgspec.Struct):
    url: str


class _ImagePart(msgspec.Struct, tag="image_url", tag_field="type"):
    image_url: _ImageUrl


class _Function(msgspec.Struct):
    name: str
    arguments: str


class _ToolCall(msgspec.Struct, tag="function", tag_field="type"):
    id: str
    function: _Function


class _SystemMessage(msgspec.Struct, tag="system", tag_field="role"):
    content: str


class _UserMessage(msgspec.Struct, tag="user", tag_field="role"):
    content: str | list[_TextPart | _ImagePart]


class _AssistantMessage(msgspec.Struct, tag="assistant", tag_field="role", omit_defaults=True):
    content: str | None  # always sent: some compatible servers want the key, even as null
    tool_calls: list[_ToolCall] | None = None


class _ToolMessage(msgspec.Struct, tag="tool", tag_field="role"):
    tool_call_id: str
    content: str


_Message = _SystemMessage | _UserMessage | _AssistantMessage | _ToolMessage


class _FunctionSpec(msgspec.Struct):
    name: str
    description: str
    parameters: dict[str, Any]


class _ToolSpec(msgspec.Struct, tag="function", tag_field="type"):
    function: _FunctionSpec


class _StreamOptions(msgspec.Struct):
    include_usage: bool


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    messages: list[_Message]
    stream: bool
    stream_options: _StreamOptions
    tools: list[_ToolSpec] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None


_args_encoder = msgspec.json.Encoder()


def _image_part(image: ImageContent) -> _ImagePart:
    return _ImagePart(_ImageUrl(f"data:{image.mimeType};base64,{image.data}"))


def convert_messages(system_prompt: str, messages: list[Message]) -> list[_Message]:
    """pi-ai messages as Chat Completions messages."""
    out: list[_Message] = []
    if system_prompt:
        out.append(_SystemMessage(system_prompt))
    images: list[ImageContent] = []  # from tool results, sent after the run of tool messages
    for message in messages:
        if images and not isinstance(message, ToolResultMessage):
            out.append(_tool_images(images))
            images = []
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                out.append(_UserMessage(message.content))
            else:
                out.append(
                    _UserMessage(
                        [
                            _TextPart(part.text)
                            if isinstance(part, TextContent)
                            else _image_part(part)
                            for part in message.content
                        ]
                    )
                )
        elif isinstance(message, AssistantMessage):
            text = "".join(part.text for part in message.content if isinstance(part, TextContent))
            calls = [
                _ToolCall(
                    tool_call_id(part.id),
                    _Function(part.name, _args_encoder.encode(part.arguments).decode()),
                )
                for part in message.content
                if isinstance(part, ToolCallContent)
            ]
            if text or calls:  # thinking is not replayed: Chat Completions has no field for it
                out.append(_AssistantMessage(text or None, calls or None))
        else:
            out.append(
                _ToolMessage(
                    tool_call_id(message.toolCallId),
                    "\n".join(
                        part.text for part in message.content if isinstance(part, TextContent)
                    ),
                )
            )
            images.extend(part for part in message.content if isinstance(part, ImageContent))
    if images:
        out.append(_tool_images(images))
    return out


def _tool_images(images: list[ImageContent]) -> _UserMessage:
    parts: list[_TextPart | _ImagePart] = [_TextPart("Attached image(s) from tool result:")]
    parts.extend(_image_part(image) for image in images)
    return _UserMessage(parts)


def _convert_tools(tools: list[ToolSpec]) -> list[_ToolSpec] | None:
    if not tools:
        return None
    return [_ToolSpec(_FunctionSpec(t.name, t.description, t.parameters)) for t in tools]


def build_body(request: ModelRequest, *, max_tokens_field: str = "max_completion_tokens") -> bytes:
    """The JSON body of one streamed Chat Completions request."""
    params: ModelParams = parse_params(request.params)
    effort = params.effort
    max_tokens = params.maxTokens
    body = _Body(
        model=normalize_model_id(request.model),
        messages=convert_messages(request.system_prompt, request.messages),
        stream=True,
        stream_options=_StreamOptions(include_usage=True),
        tools=_convert_tools(request.tools),
        temperature=params.temperature,
        top_p=params.topP,
        max_tokens=max_tokens if max_tokens_field == "max_tokens" else None,
        max_completion_tokens=max_tokens if max_tokens_field != "max_tokens" else None,
        stop=params.stop_list,
        seed=params.seed,
        presence_penalty=params.presencePenalty,
        frequency_penalty=params.frequencyPenalty,
        parallel_tool_calls=params.parallelToolCalls,
        reasoning_effort=effort if request.reasoning and effort and effort != "off" else None,
    )
    return encode_body(body, params.extraBody)


# --- stream -----------------------------------------------------------------------------


class _FunctionDelta(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: _FunctionDelta | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _Choice(msgspec.Struct):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    cost: float | None = None  # what the call cost in USD (OpenRouter and other routers)


class _Error(msgspec.Struct):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class _Chunk(msgspec.Struct):
    # Inbound provider payloads ignore unknown fields on purpose: providers add fields
    # without notice, and a new field must never break a stream.
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: _Error | None = None


_chunk_decoder = msgspec.json.Decoder(_Chunk)

_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "error",
}


class _ToolState:
    __slots__ = ("args", "id", "index", "name", "started")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name = ""
        self.args: list[str] = []
        self.started = False


class CompletionsParser:
    """Chat Completions chunks → deltas (see `StreamParser`)."""

    def __init__(self) -> None:
        self.done = False
        self._tools: dict[int, _ToolState] = {}
        self._order: list[_ToolState] = []
        self._last: _ToolState | None = None  # for servers that omit tool-call indexes
        self._ended = False
        self._finish: str | None = None
        self._usage: Usage | None = None

    def feed(self, event: SSEEvent, out: list[ModelDelta]) -> None:
        data = event.data
        if data == b"[DONE]":
            self._complete(out)
            return
        if event.event == "error":
            raise error_from_payload(data)
        chunk = _chunk_decoder.decode(data)
        if chunk.error is not None:
            err = chunk.error
            raise classify_error(
                err.message or "provider error",
                error_type=err.type,
                code=None if err.code is None else str(err.code),
            )
        if chunk.choices:
            for choice in chunk.choices:
                if choice.index != 0:
                    continue  # n > 1 is never requested
                delta = choice.delta
                if delta is not None:
                    thinking = delta.reasoning_content or delta.reasoning
                    if thinking:
                        out.append(ThinkingDelta(thinking))
                    if delta.content:
                        out.append(TextDelta(delta.content))
                    if delta.tool_calls:
                        for call in delta.tool_calls:
                            self._tool_delta(call, out)
                if choice.finish_reason:
                    self._finish = choice.finish_reason
                    self._end_tools(out)
        if chunk.usage is not None:
            self._usage = _usage(chunk.usage)

    def finish(self, out: list[ModelDelta]) -> None:
        if self._finish is None:
            raise ProviderError("network", "the stream ended before the model finished")
        self._complete(out)  # some compatible servers never send [DONE]

    def _tool_delta(self, call: _ToolCallDelta, out: list[ModelDelta]) -> None:
        if call.index is not None:
            state = self._tools.get(call.index)
        elif call.id and (self._last is None or self._last.id != call.id):
            state = None
        else:
            state = self._last
        if state is None:
            state = _ToolState(len(self._order))
            if call.index is not None:
                self._tools[call.index] = state
            self._order.append(state)
        self._last = state
        if call.id and not state.id:
            state.id = call.id
        function = call.function
        if function is None:
            return
        if function.name and not state.name:
            state.name = function.name
        if not state.started:
            if function.arguments:
                state.args.append(function.arguments)
            if state.name:
                state.started = True
                out.append(ToolCallStart(state.index, self._id(state), state.name))
                if state.args:
                    out.append(ToolCallArgsDelta(state.index, "".join(state.args)))
        elif function.arguments:
            state.args.append(function.arguments)
            out.append(ToolCallArgsDelta(state.index, function.arguments))

    @staticmethod
    def _id(state: _ToolState) -> str:
        if not state.id:
            state.id = f"call_{state.index}"
        return state.id

    def _end_tools(self, out: list[ModelDelta]) -> None:
        if self._ended:
            return
        self._ended = True
        for state in self._order:
            if not state.started:
                raise ProviderError("malformed", f"tool call {state.index} has no name")
            out.append(ToolCallEnd(state.index, state.id, state.name, "".join(state.args) or "{}"))

    def _complete(self, out: list[ModelDelta]) -> None:
        self._end_tools(out)
        reason = _FINISH.get(self._finish or "stop", "stop")
        if reason == "stop" and self._order:
            reason = "toolUse"
        if self._usage is not None:
            out.append(UsageDelta(self._usage))
        out.append(StopDelta(reason))
        self.done = True


def _usage(raw: _Usage) -> Usage:
    prompt = raw.prompt_tokens or 0
    output = raw.completion_tokens or 0
    details = raw.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    cost = raw.cost
    reported = cost is not None and math.isfinite(cost) and cost >= 0
    return Usage(
        input=max(prompt - cached, 0),
        output=output,
        cacheRead=cached,
        cacheWrite=0,
        totalTokens=prompt + output,
        cost=UsageCost(total=cost) if reported and cost is not None else UsageCost(),
    )


# --- the provider -----------------------------------------------------------------------


class OpenAICompletionsProvider(HttpProvider):
    """``api: openai-completions`` (OpenAI and the many servers that copy its chat API).

    Auth: ``Authorization: Bearer <apiKey>`` when a key is configured. The token limit goes
    out as ``max_completion_tokens`` to api.openai.com and as ``max_tokens`` elsewhere
    (compatible servers rarely know the newer name).
    """

    api_name: ClassVar[str] = "openai-completions"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL

    def _endpoint(self, base_url: str) -> str:
        return f"{base_url}/chat/completions"

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def _encode_request(self, request: ModelRequest) -> bytes:
        field = "max_completion_tokens" if "api.openai.com" in self.base_url else "max_tokens"
        return build_body(request, max_tokens_field=field)

    def _new_parser(self, request: ModelRequest) -> CompletionsParser:
        return CompletionsParser()
