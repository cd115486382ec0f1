"""The ``openai-responses`` transport against a loopback server speaking the real wire format."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import trio

from runtime.llm._openai_responses import build_body
from runtime.llm._types import (
    AssistantMessage,
    ImageContent,
    ModelProvider,
    ModelRequest,
    StopDelta,
    TextContent,
    TextDelta,
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
from ._streams import ResponsesStream, collect, collect_error, text_of, thinking_of

API = "openai-responses"
MakeProvider = Callable[[str], ModelProvider]


def hello(*, reasoning: bool = False) -> ModelRequest:
    return ModelRequest(
        model="gpt-5",
        system_prompt="You are terse.",
        messages=[UserMessage("Say hello", timestamp=1)],
        reasoning=reasoning,
    )


async def test_plain_text_streams_text_then_usage_then_stop(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = ResponsesStream().created().message(0, ["Hi", " there"]).completed()
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas = await collect(make_provider(API).stream(hello()))
    assert deltas == [
        TextDelta("Hi"),
        TextDelta(" there"),
        UsageDelta(Usage(input=32, output=87, cacheRead=4, cacheWrite=0, totalTokens=123)),
        StopDelta("stop"),
    ]
    request = server.requests[0]
    assert (request.method, request.target) == ("POST", "/v1/responses")
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.json()
    assert (body["stream"], body["store"], body["instructions"]) == (True, False, "You are terse.")
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Say hello"}],
        }
    ]
    assert "reasoning" not in body


async def test_several_function_calls_stream_and_end(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = (
        ResponsesStream()
        .created()
        .function_call(0, "call_a1", "get_weather", ['{"location":', '"Paris"}'])
        .function_call(1, "call_b2", "get_time", ["{}"])
        .completed()
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas = await collect(make_provider(API).stream(hello()))
    assert deltas[:-2] == [
        ToolCallStart(0, "call_a1|fc_0000", "get_weather"),
        ToolCallArgsDelta(0, '{"location":'),
        ToolCallArgsDelta(0, '"Paris"}'),
        ToolCallEnd(0, "call_a1|fc_0000", "get_weather", '{"location":"Paris"}'),
        ToolCallStart(1, "call_b2|fc_0001", "get_time"),
        ToolCallArgsDelta(1, "{}"),
        ToolCallEnd(1, "call_b2|fc_0001", "get_time", "{}"),
    ]
    assert deltas[-1] == StopDelta("toolUse")


async def test_reasoning_summaries_stream_as_thinking(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = (
        ResponsesStream()
        .created()
        .reasoning(0, [["**Greeting**", " the user"], ["Keep it short"]])
        .message(1, ["Hello"])
        .completed()
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas = await collect(make_provider(API).stream(hello(reasoning=True)))
    assert thinking_of(deltas) == "**Greeting** the user\n\nKeep it short"
    assert text_of(deltas) == "Hello"
    assert server.requests[0].json()["reasoning"] == {"effort": "medium", "summary": "auto"}


async def test_an_error_event_fails_after_the_partial_text(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = ResponsesStream().created().message(0, ["par", "tial"])
    # As the API sends it mid-stream (the documented flat shape has the same fields at top level).
    stream.chunks.append(
        sse(
            {
                "type": "error",
                "sequence_number": 2,
                "error": {
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                    "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                    "param": "input",
                },
            },
            event="error",
        )
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert text_of(deltas) == "partial"
    assert exc.kind == "context_overflow"


async def test_the_flat_error_event_is_classified(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = (
        ResponsesStream()
        .created()
        .event("error", code="rate_limit_exceeded", message="Rate limit reached", param=None)
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert (deltas, exc.kind) == ([], "rate_limit")


async def test_response_failed_is_classified(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = (
        ResponsesStream()
        .created()
        .failed("server_error", "The model failed to generate a response.")
    )
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        _, exc = await collect_error(make_provider(API).stream(hello()))
    assert (exc.kind, exc.retryable) == ("server", True)


async def test_response_incomplete_stops_for_length(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = ResponsesStream().created().message(0, ["trunc"]).incomplete("max_output_tokens")
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas = await collect(make_provider(API).stream(hello()))
    assert deltas == [TextDelta("trunc"), StopDelta("length")]


async def test_a_malformed_event_is_a_malformed_error(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = ResponsesStream().created().message(0, ["ok"])
    stream.chunks.append(b'event: response.output_text.delta\ndata: {"delta": 12\n\n')
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        deltas, exc = await collect_error(make_provider(API).stream(hello()))
    assert (text_of(deltas), exc.kind) == ("ok", "malformed")


async def test_a_stream_without_completion_is_a_network_error(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    stream = ResponsesStream().created().message(0, ["ok"])
    with trio.fail_after(5):
        server.push(Script(chunks=stream.chunks))
        _, exc = await collect_error(make_provider(API).stream(hello()))
    assert exc.kind == "network"


async def test_unnamed_events_are_dispatched_by_their_type(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    chunks = [
        sse({"type": "response.output_text.delta", "output_index": 0, "delta": "x"}),
        sse({"type": "response.completed", "response": {"status": "completed"}}),
    ]
    with trio.fail_after(5):
        server.push(Script(chunks=chunks))
        deltas = await collect(make_provider(API).stream(hello()))
    assert deltas == [TextDelta("x"), StopDelta("stop")]


async def test_overloaded_503_is_retryable(server: SSEServer, make_provider: MakeProvider) -> None:
    body = {
        "error": {
            "message": "The engine is currently overloaded, please try again later",
            "type": "server_error",
        }
    }
    with trio.fail_after(5):
        server.push(json_error(503, body))
        _, exc = await collect_error(make_provider(API).stream(hello()))
    assert (exc.kind, exc.status, exc.retryable) == ("overloaded", 503, True)


async def test_tool_calls_and_results_round_trip_as_items(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    request = ModelRequest(
        model="gpt-5",
        system_prompt="",
        messages=[
            UserMessage(
                [TextContent("What is this?"), ImageContent("aGk=", "image/jpeg")], timestamp=1
            ),
            AssistantMessage(
                [
                    TextContent("Let me look."),
                    ToolCallContent("call_a1|fc_0000", "lookup", {"q": "x"}),
                    ToolCallContent("toolu_01A09q90qw90lq917835lq9", "other", {}),
                ],
                timestamp=2,
                stopReason="toolUse",
            ),
            ToolResultMessage(
                "call_a1|fc_0000", "lookup", [TextContent("found")], isError=False, timestamp=3
            ),
            ToolResultMessage(
                "toolu_01A09q90qw90lq917835lq9",
                "other",
                [TextContent("boom")],
                isError=True,
                timestamp=4,
            ),
        ],
        tools=[ToolSpec("lookup", "Look up", {"type": "object"})],
        params={"maxTokens": 1000, "temperature": 1},
    )
    with trio.fail_after(5):
        server.push(Script(chunks=ResponsesStream().message(0, ["ok"]).completed().chunks))
        await collect(make_provider(API).stream(request))
    body = server.requests[0].json()
    assert "instructions" not in body
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {
                    "type": "input_image",
                    "image_url": "data:image/jpeg;base64,aGk=",
                    "detail": "auto",
                },
            ],
        },
        {"type": "message", "role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "call_a1", "name": "lookup", "arguments": '{"q":"x"}'},
        {
            "type": "function_call",
            "call_id": "toolu_01A09q90qw90lq917835lq9",
            "name": "other",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_a1", "output": "found"},
        {
            "type": "function_call_output",
            "call_id": "toolu_01A09q90qw90lq917835lq9",
            "output": "boom",
        },
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "lookup",
            "description": "Look up",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]
    assert (body["max_output_tokens"], body["temperature"]) == (1000, 1.0)


def test_reasoning_off_sends_no_reasoning_and_extra_body_is_merged() -> None:
    request = msgspec.structs.replace(
        hello(reasoning=True), params={"thinking": "off", "extraBody": {"service_tier": "flex"}}
    )
    body = msgspec.json.decode(build_body(request))
    assert "reasoning" not in body
    assert body["service_tier"] == "flex"
