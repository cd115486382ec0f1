"""The ``anthropic-messages`` transport against a loopback server speaking the real wire format."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
import trio

from runtime.llm._anthropic import build_body, normalize_model_id, tool_use_id
from runtime.llm._types import (
    AssistantMessage,
    ImageContent,
    ModelProvider,
    ModelRequest,
    StopDelta,
    TextContent,
    TextDelta,
    ThinkingContent,
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

from ._sse_server import Script, SSEServer, json_error
from ._streams import AnthropicStream, collect, collect_error, text_of, thinking_of

API = "anthropic-messages"
MakeProvider = Callable[[str], ModelProvider]


def hello(*, reasoning: bool = False, **params: object) -> ModelRequest:
    return ModelRequest(
        model="claude-sonnet-4-5",
        system_prompt="You are terse.",
        messages=[UserMessage("Say hello", timestamp=1)],
        reasoning=reasoning,
        params=dict(params),
    )


async def test_plain_text_streams_text_then_usage_then_stop(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = (
        AnthropicStream()
        .start(input_tokens=25, cache_read=100, cache_write=7)
        .ping()
        .text(["Hello", "!"])
        .stop()
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas = await collect(make_provider(API).stream(hello()))
    assert deltas == [
        TextDelta("Hello"),
        TextDelta("!"),
        UsageDelta(Usage(input=25, output=89, cacheRead=100, cacheWrite=7, totalTokens=221)),
        StopDelta("stop"),
    ]
    request = server.requests[0]
    assert (request.method, request.target) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == "sk-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.json()
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "messages": [{"role": "user", "content": "Say hello"}],
        "stream": True,
        "system": "You are terse.",
    }


async def test_several_tool_uses_stream_and_end(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = (
        AnthropicStream()
        .start()
        .text(["Let me check."])
        .tool_use(
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            "get_weather",
            ['{"location": "San', ' Francisco, CA"}'],
        )
        .tool_use("toolu_01A09q90qw90lq917835lq9", "get_time", [])
        .stop("tool_use")
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas = await collect(make_provider(API).stream(hello()))
    first, second = "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "toolu_01A09q90qw90lq917835lq9"
    assert deltas[:-2] == [
        TextDelta("Let me check."),
        ToolCallStart(0, first, "get_weather"),
        ToolCallArgsDelta(0, '{"location": "San'),
        ToolCallArgsDelta(0, ' Francisco, CA"}'),
        ToolCallEnd(0, first, "get_weather", '{"location": "San Francisco, CA"}'),
        ToolCallStart(1, second, "get_time"),
        ToolCallEnd(1, second, "get_time", "{}"),
    ]
    assert deltas[-1] == StopDelta("toolUse")


async def test_thinking_streams_and_signatures_are_skipped(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = AnthropicStream().start().thinking(["Let me ", "think."]).text(["42"]).stop()
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas = await collect(make_provider(API).stream(hello(reasoning=True, thinking="low")))
    assert thinking_of(deltas) == "Let me think."
    assert text_of(deltas) == "42"
    body = server.requests[0].json()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 8192 + 2048


async def test_an_overloaded_error_event_fails_after_the_partial_text(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = AnthropicStream().start().text(["par", "tial"]).error("overloaded_error", "Overloaded")
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert text_of(deltas) == "partial"
    assert (exc.kind, exc.message, exc.retryable) == ("overloaded", "Overloaded", True)


async def test_a_malformed_event_is_a_malformed_error(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = AnthropicStream().start().text(["ok"])
    stream.chunks.append(
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": "zero"}\n\n'
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert (text_of(deltas), exc.kind) == ("ok", "malformed")


async def test_a_stream_without_message_stop_is_a_network_error(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = AnthropicStream().start().text(["ok"])
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        _, exc = await collect_error(make_provider(API).stream(hello()))
    assert exc.kind == "network"


async def test_prompt_too_long_is_a_context_overflow(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 208310 tokens > 200000 maximum",
        },
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }
    with trio.fail_after(5):
        server.push(json_error(400, body))
        _, exc = await collect_error(make_provider(API).stream(hello()))
    assert (exc.kind, exc.status, exc.retryable) == ("context_overflow", 400, False)


async def test_529_is_overloaded_and_401_is_auth(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    provider = make_provider(API)
    with trio.fail_after(5):
        server.push(
            json_error(
                529,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
            json_error(
                401,
                {
                    "type": "error",
                    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                },
            ),
        )
        _, overloaded = await collect_error(provider.stream(hello()))
        _, auth = await collect_error(provider.stream(hello()))
    assert (overloaded.kind, overloaded.status) == ("overloaded", 529)
    assert (auth.kind, auth.status) == ("auth", 401)


async def test_tool_calls_and_results_round_trip_as_blocks(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    request = ModelRequest(
        model="opus-4.5",
        system_prompt="sys",
        messages=[
            UserMessage(
                [TextContent("Look:"), ImageContent("aGk=", "image/png"), TextContent("")],
                timestamp=1,
            ),
            AssistantMessage(
                [
                    ThinkingContent("unsigned, so not replayed"),
                    TextContent("Checking."),
                    ToolCallContent("toolu_01", "read", {"path": "a.txt"}),
                    ToolCallContent("call_a1|fc_0000", "ls", {}),
                ],
                timestamp=2,
                stopReason="toolUse",
            ),
            ToolResultMessage(
                "toolu_01", "read", [TextContent("contents")], isError=False, timestamp=3
            ),
            ToolResultMessage(
                "call_a1|fc_0000", "ls", [TextContent("denied")], isError=True, timestamp=4
            ),
            UserMessage("and now?", timestamp=5),
        ],
        tools=[
            ToolSpec(
                "read",
                "Read a file",
                {"type": "object", "properties": {"path": {"type": "string"}}},
            )
        ],
        params={"temperature": 0.5, "topK": 5, "maxTokens": 1024},
    )
    with trio.fail_after(5):
        server.push(Script(chunks=AnthropicStream().start().text(["ok"]).stop().chunks))
        await collect(make_provider(API).stream(request))
    body = server.requests[0].json()
    assert body["model"] == "claude-opus-4-5"
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "call_a1_fc_0000", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": [{"type": "text", "text": "contents"}],
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_a1_fc_0000",
                    "content": [{"type": "text", "text": "denied"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": "and now?"},
    ]
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]
    assert (body["temperature"], body["top_k"], body["max_tokens"]) == (0.5, 5, 1024)


def test_thinking_leaves_out_sampling_params_and_fits_a_configured_max() -> None:
    body = msgspec.json.decode(
        build_body(
            hello(reasoning=True, temperature=0.3, topP=0.9, maxTokens=4096, thinking="high")
        )
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096 - 1024}
    assert body["max_tokens"] == 4096
    assert "temperature" not in body and "top_p" not in body


def test_a_tool_loop_continuation_goes_without_thinking() -> None:
    # Unsigned thinking cannot be replayed, and with thinking on the API would reject the
    # assistant turn that called the tool ("Expected `thinking` or `redacted_thinking`").
    loop = msgspec.structs.replace(
        hello(reasoning=True),
        messages=[
            UserMessage("list files", timestamp=1),
            AssistantMessage(
                [ToolCallContent("toolu_1", "ls", {})], timestamp=2, stopReason="toolUse"
            ),
            ToolResultMessage("toolu_1", "ls", [TextContent("a.txt")], isError=False, timestamp=3),
        ],
    )
    assert "thinking" not in msgspec.json.decode(build_body(loop))
    fresh = msgspec.structs.replace(
        loop, messages=[*loop.messages, UserMessage("and?", timestamp=4)]
    )
    assert msgspec.json.decode(build_body(fresh))["thinking"]["type"] == "enabled"


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ("opus-4.5", "claude-opus-4-5"),
        ("Sonnet-4.5", "claude-sonnet-4-5"),
        (" claude-haiku-4-5 ", "claude-haiku-4-5"),
    ],
)
def test_model_aliases_are_normalised(configured: str, expected: str) -> None:
    assert normalize_model_id(configured) == expected


def test_tool_use_ids_are_made_acceptable() -> None:
    assert tool_use_id("call_a1|fc_0000") == "call_a1_fc_0000"
    assert len(tool_use_id("x" * 100)) == 64
