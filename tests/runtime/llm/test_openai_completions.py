"""The ``openai-completions`` transport against a loopback server speaking the real wire format."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import msgspec
import trio

from runtime.llm._openai_completions import CompletionsParser, build_body
from runtime.llm._sse import SSEEvent
from runtime.llm._types import (
    AssistantMessage,
    ImageContent,
    ModelDelta,
    ModelProvider,
    ModelRequest,
    StopDelta,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallContent,
    ToolCallEnd,
    ToolCallStart,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UsageDelta,
    UserMessage,
)

from ._sse_server import Script, SSEServer, json_error, sse
from ._streams import (
    CHAT_DONE,
    chat_chunk,
    chat_text,
    chat_tool_calls,
    chat_usage,
    collect,
    collect_error,
    text_of,
    thinking_of,
)

API = "openai-completions"
MakeProvider = Callable[[str], ModelProvider]


def hello(**params: object) -> ModelRequest:
    return ModelRequest(
        model="gpt-4o",
        system_prompt="You are terse.",
        messages=[UserMessage("Say hello", timestamp=1)],
        params=dict(params),
    )


async def test_plain_text_streams_text_then_usage_then_stop(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(Script(chunks=chat_text(["Hel", "lo", "!"])))
        deltas = await collect(make_provider(API).stream(hello()))
    assert deltas == [
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta("!"),
        UsageDelta(Usage(input=19, output=10, cacheRead=0, cacheWrite=0, totalTokens=29)),
        StopDelta("stop"),
    ]
    request = server.requests[0]
    assert (request.method, request.target) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    body = request.json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "gpt-4o"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hello"},
    ]


async def test_several_tool_calls_are_assembled_by_index(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(
            Script(
                chunks=chat_tool_calls(
                    [
                        (
                            "call_DdmO9pD3xa9XTPNJ32zg2hcA",
                            "get_weather",
                            ['{"lo', 'cation": "Par', 'is"}'],
                        ),
                        ("call_ABPtx1zAbq3iHkJ49tStSbXN", "get_time", ["{}"]),
                    ]
                )
            )
        )
        deltas = await collect(make_provider(API).stream(hello()))
    first, second = "call_DdmO9pD3xa9XTPNJ32zg2hcA", "call_ABPtx1zAbq3iHkJ49tStSbXN"
    assert deltas == [
        ToolCallStart(0, first, "get_weather"),
        ToolCallArgsDelta(0, '{"lo'),
        ToolCallArgsDelta(0, 'cation": "Par'),
        ToolCallArgsDelta(0, 'is"}'),
        ToolCallStart(1, second, "get_time"),
        ToolCallArgsDelta(1, "{}"),
        ToolCallEnd(0, first, "get_weather", '{"location": "Paris"}'),
        ToolCallEnd(1, second, "get_time", "{}"),
        UsageDelta(Usage(input=19, output=10, totalTokens=29)),
        StopDelta("toolUse"),
    ]


async def test_reasoning_content_streams_as_thinking(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    chunks = [
        chat_chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chat_chunk({"reasoning_content": "The user "}),
        chat_chunk({"reasoning_content": "greets."}),
        chat_chunk({"content": "Hi"}),
        chat_chunk({}, finish="stop"),
        chat_usage(prompt=10, completion=30, cached=4),
        CHAT_DONE,
    ]
    with trio.fail_after(5):
        server.push(Script(chunks=chunks))
        deltas = await collect(make_provider(API).stream(hello()))
    assert thinking_of(deltas) == "The user greets."
    assert text_of(deltas) == "Hi"
    assert deltas[-2:] == [
        UsageDelta(Usage(input=6, output=30, cacheRead=4, cacheWrite=0, totalTokens=40)),
        StopDelta("stop"),
    ]


async def test_a_mid_stream_error_object_fails_after_the_partial_text(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    error = {
        "error": {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
    with trio.fail_after(5):
        server.push(Script(chunks=[*chat_text(["par", "tial"])[:3], sse(error)]))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert deltas == [TextDelta("par"), TextDelta("tial")]
    assert exc.kind == "server"
    assert "processing your request" in exc.message


async def test_a_malformed_chunk_is_a_malformed_error(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(
            Script(chunks=[chat_chunk({"content": "ok"}), b'data: {"choices": [{"delta": \n\n'])
        )
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert deltas == [TextDelta("ok")]
    assert exc.kind == "malformed"
    assert not exc.retryable


async def test_a_stream_cut_before_the_finish_is_a_network_error(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(Script(chunks=[chat_chunk({"content": "cut"})], truncate=True))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert deltas == [TextDelta("cut")]
    assert exc.kind == "network"


async def test_a_stream_that_finishes_without_done_completes(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(Script(chunks=chat_text(["fine"])[:-1]))  # no [DONE], as some servers do
        deltas = await collect(make_provider(API).stream(hello()))
    assert deltas[0] == TextDelta("fine")
    assert deltas[-1] == StopDelta("stop")


async def test_a_context_overflow_400_is_its_own_class(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130313 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    with trio.fail_after(5):
        server.push(json_error(400, body))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert deltas == []
    assert (exc.kind, exc.status, exc.retryable) == ("context_overflow", 400, False)
    assert "maximum context length" in exc.message


async def test_a_rejected_key_is_an_auth_error(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    body = {
        "error": {
            "message": "Incorrect API key provided: sk-test. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    with trio.fail_after(5):
        server.push(json_error(401, body))
        _, exc = await collect_error(make_provider(API).stream(hello()))
    assert (exc.kind, exc.status, exc.retryable) == ("auth", 401, False)


async def test_a_429_carries_retry_after(server: SSEServer, make_provider: MakeProvider) -> None:
    body = {
        "error": {
            "message": "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): "
            "Limit 500, Used 500, Requested 1. Please try again in 120ms.",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    with trio.fail_after(5):
        server.push(json_error(429, body, [("retry-after-ms", "120"), ("retry-after", "1")]))
        _, exc = await collect_error(make_provider(API).stream(hello()))
    assert (exc.kind, exc.retryable, exc.retry_after) == ("rate_limit", True, 0.12)


async def test_tool_calls_and_results_round_trip_in_chat_format(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    request = ModelRequest(
        model="gpt-4o",
        system_prompt="sys",
        messages=[
            UserMessage("Weather in Paris?", timestamp=1),
            AssistantMessage(
                [
                    ThinkingContent("should call the tool"),
                    TextContent("Checking."),
                    ToolCallContent("call_1", "get_weather", {"location": "Paris"}),
                    ToolCallContent("call_2|fc_67890abcdef", "get_time", {}),
                ],
                timestamp=2,
                stopReason="toolUse",
            ),
            ToolResultMessage(
                "call_1", "get_weather", [TextContent("18°C")], isError=False, timestamp=3
            ),
            ToolResultMessage(
                "call_2|fc_67890abcdef",
                "get_time",
                [TextContent("noon"), ImageContent("aGk=", "image/png")],
                isError=False,
                timestamp=4,
            ),
            UserMessage([TextContent("thanks")], timestamp=5),
        ],
        tools=[ToolSpec("get_weather", "Weather by city", {"type": "object", "properties": {}})],
        params={"temperature": 0.2, "maxTokens": 256, "cacheRetention": "short"},
    )
    with trio.fail_after(5):
        server.push(Script(chunks=chat_text(["ok"])))
        await collect(make_provider(API).stream(request))
    body = server.requests[0].json()
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_1",
                    "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'},
                },
                {
                    "type": "function",
                    "id": "call_2",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather by city",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 256  # not api.openai.com: the name compatible servers know
    assert "cacheRetention" not in body and "max_completion_tokens" not in body


def test_the_openai_endpoint_gets_max_completion_tokens_and_reasoning_effort() -> None:
    request = msgspec.structs.replace(hello(maxTokens=99, reasoningEffort="high"), reasoning=True)
    body = msgspec.json.decode(build_body(request))
    assert body["max_completion_tokens"] == 99
    assert body["reasoning_effort"] == "high"
    assert "max_tokens" not in body


def _feed(parser: CompletionsParser, *payloads: bytes) -> list[ModelDelta]:
    out: list[ModelDelta] = []
    for payload in payloads:
        parser.feed(SSEEvent("message", payload.removeprefix(b"data: ").removesuffix(b"\n\n")), out)
    return out


def test_interleaved_tool_call_fragments_stay_with_their_index() -> None:
    out = _feed(
        CompletionsParser(),
        chat_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "a",
                        "type": "function",
                        "function": {"name": "x", "arguments": ""},
                    }
                ]
            }
        ),
        chat_chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "b",
                        "type": "function",
                        "function": {"name": "y", "arguments": "[1"},
                    }
                ]
            }
        ),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        chat_chunk({"tool_calls": [{"index": 1, "function": {"arguments": "]"}}]}),
        chat_chunk({}, finish="tool_calls"),
        CHAT_DONE,
    )
    ends = [d for d in out if isinstance(d, ToolCallEnd)]
    assert ends == [ToolCallEnd(0, "a", "x", "{}"), ToolCallEnd(1, "b", "y", "[1]")]


def test_tool_calls_without_index_are_told_apart_by_id() -> None:
    out = _feed(
        CompletionsParser(),
        chat_chunk({"tool_calls": [{"id": "a", "function": {"name": "x", "arguments": "{}"}}]}),
        chat_chunk({"tool_calls": [{"id": "b", "function": {"name": "y", "arguments": "{}"}}]}),
        chat_chunk({}, finish="stop"),
        CHAT_DONE,
    )
    assert [d for d in out if isinstance(d, ToolCallEnd)] == [
        ToolCallEnd(0, "a", "x", "{}"),
        ToolCallEnd(1, "b", "y", "{}"),
    ]
    assert out[-1] == StopDelta("toolUse")


def test_reasoning_field_of_openrouter_and_ollama_is_thinking() -> None:
    out = _feed(CompletionsParser(), chat_chunk({"reasoning": "hmm"}))
    assert out == [ThinkingDelta("hmm")]


async def test_parsing_works_over_a_mock_transport() -> None:
    # The unit seam: an httpx.MockTransport instead of the network.
    from runtime.llm._openai_completions import OpenAICompletionsProvider

    stream = b"".join(chat_text(["a", "b"]))

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

    provider = OpenAICompletionsProvider(
        "mock", base_url="http://mock/v1", api_key=None, transport=httpx.MockTransport(handler)
    )
    with trio.fail_after(5):
        deltas = await collect(provider.stream(hello()))
        await provider.aclose()
    assert text_of(deltas) == "ab"
