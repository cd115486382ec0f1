"""Shared transport pieces (`runtime.llm._http`): error classes, Retry-After, timeouts, params."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import msgspec
import pytest
import trio

from runtime.llm._http import (
    MAX_ERROR_BODY,
    classify_status,
    is_context_overflow,
    make_timeout,
    map_transport_error,
    parse_params,
    parse_retry_after,
)
from runtime.llm._registry import create_provider
from runtime.llm._types import ModelProvider, ModelRequest, ProviderError, UserMessage

from ._sse_server import Pause, Script, SSEServer, json_error, sse
from ._streams import collect_error

MakeProvider = Callable[[str], ModelProvider]
REQUEST = ModelRequest(model="m", system_prompt="", messages=[UserMessage("hi", timestamp=1)])


def openai_error(
    message: str, type: str = "invalid_request_error", code: str | None = None
) -> bytes:
    return msgspec.json.encode(
        {"error": {"message": message, "type": type, "param": None, "code": code}}
    )


def anthropic_error(type: str, message: str) -> bytes:
    return msgspec.json.encode({"type": "error", "error": {"type": type, "message": message}})


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (401, openai_error("Incorrect API key provided", code="invalid_api_key"), "auth"),
        (403, anthropic_error("permission_error", "Your API key does not have permission"), "auth"),
        (429, openai_error("Rate limit reached", "requests", "rate_limit_exceeded"), "rate_limit"),
        (
            429,
            anthropic_error(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
            "rate_limit",
        ),
        (
            429,
            openai_error(
                "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
            ),
            "auth",
        ),
        (503, openai_error("The engine is currently overloaded", "server_error"), "overloaded"),
        (529, anthropic_error("overloaded_error", "Overloaded"), "overloaded"),
        (500, anthropic_error("api_error", "Internal server error"), "server"),
        (502, b"<html>Bad gateway</html>", "server"),
        (408, b"", "timeout"),
        (
            413,
            anthropic_error(
                "request_too_large", "Request exceeds the maximum allowed number of bytes."
            ),
            "context_overflow",
        ),
        (
            400,
            openai_error(
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                code="context_length_exceeded",
            ),
            "context_overflow",
        ),
        (
            400,
            openai_error(
                "Your input exceeds the context window of this model. Please adjust your input and try again."
            ),
            "context_overflow",
        ),
        (
            400,
            anthropic_error(
                "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
            ),
            "context_overflow",
        ),
        (
            400,
            anthropic_error(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again",
            ),
            "context_overflow",
        ),
        (
            400,
            anthropic_error(
                "invalid_request_error", "messages: text content blocks must be non-empty"
            ),
            "bad_request",
        ),
        (404, anthropic_error("not_found_error", "model: claude-nope"), "bad_request"),
        (302, b"", "unknown"),
    ],
)
def test_statuses_and_bodies_are_classified(status: int, body: bytes, kind: str) -> None:
    error = classify_status(status, {}, body)
    assert (error.kind, error.status) == (kind, status)
    assert error.message.startswith(f"HTTP {status}")


def test_the_error_message_comes_from_the_body() -> None:
    error = classify_status(529, {}, anthropic_error("overloaded_error", "Overloaded"))
    assert error.message == "HTTP 529: Overloaded"
    assert error.retryable


def test_overflow_markers_are_case_insensitive() -> None:
    assert is_context_overflow("Prompt is too long")
    assert is_context_overflow("", code="context_length_exceeded")
    assert not is_context_overflow("Rate limit reached for requests")


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}, now=now) == 30.0
    assert parse_retry_after({"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None


def test_429_takes_retry_after_from_the_headers() -> None:
    error = classify_status(429, httpx.Headers({"Retry-After": "12"}), b"")
    assert (error.kind, error.retry_after) == ("rate_limit", 12.0)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ConnectTimeout("connect"), "timeout"),
        (httpx.ReadTimeout("read"), "timeout"),
        (httpx.PoolTimeout("pool"), "timeout"),
        (httpx.ConnectError("refused"), "network"),
        (httpx.ReadError("reset"), "network"),
        (httpx.RemoteProtocolError("peer closed connection"), "network"),
        (httpx.DecodingError("bad gzip"), "malformed"),
        (httpx.UnsupportedProtocol("ftp"), "bad_request"),
    ],
)
def test_transport_errors_are_mapped(exc: httpx.HTTPError, kind: str) -> None:
    assert map_transport_error(exc).kind == kind


def test_timeouts_default_and_follow_timeout_seconds() -> None:
    default = make_timeout(None)
    assert (default.connect, default.read) == (10.0, 300.0)
    assert make_timeout(45).read == 45
    assert make_timeout(0).read == 300.0


def test_params_are_validated_with_their_key_named() -> None:
    assert parse_params({"temperature": 1, "maxTokens": 10, "unknown": object()}).temperature == 1.0
    with pytest.raises(ProviderError) as info:
        parse_params({"maxTokens": "lots"})
    assert info.value.kind == "bad_request"
    assert "maxTokens" in info.value.message


async def test_bad_params_fail_the_stream_before_any_request(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    request = msgspec.structs.replace(REQUEST, params={"temperature": "hot"})
    with trio.fail_after(5):
        _, exc = await collect_error(make_provider("openai-responses").stream(request))
    assert exc.kind == "bad_request"
    assert server.requests == []


async def test_a_refused_connection_is_a_network_error() -> None:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()  # nothing listens there now
    provider = create_provider(
        "gone", "openai-completions", base_url=f"http://127.0.0.1:{port}/v1", api_key=None
    )
    with trio.fail_after(5):
        _, exc = await collect_error(provider.stream(REQUEST))
        await provider.aclose()
    assert (exc.kind, exc.retryable) == ("network", True)


async def test_timeout_seconds_bounds_a_silent_read(server: SSEServer) -> None:
    provider = create_provider(
        "slow", "anthropic-messages", base_url=server.url, api_key="k", timeout_seconds=0.2
    )
    with trio.fail_after(5):
        script = server.push(Script(chunks=[Pause()]))
        _, exc = await collect_error(provider.stream(REQUEST))
        await script.disconnected.wait()
        await provider.aclose()
    assert exc.kind == "timeout"


async def test_a_json_body_instead_of_a_stream_is_classified(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(
            json_error(200, {"error": {"message": "Overloaded", "type": "overloaded_error"}}),
            json_error(200, {"id": "chatcmpl-1", "choices": []}),
        )
        provider = make_provider("openai-completions")
        _, first = await collect_error(provider.stream(REQUEST))
        _, second = await collect_error(provider.stream(REQUEST))
    assert first.kind == "overloaded"
    assert second.kind == "malformed"


@pytest.mark.parametrize("stalls", [False, True], ids=["complete-body", "stalled-body"])
async def test_a_stream_left_early_leaves_no_async_generator_to_the_collector(
    server: SSEServer, make_provider: MakeProvider, stalls: bool
) -> None:
    """httpx nests async generators under `aiter_bytes`; one left suspended is finalised by
    the garbage collector, and trio warns (an error under this suite's filters) in whatever
    task runs next. The transport must end them itself, for a failure mid-body and for an
    error body read only in part."""
    malformed = [sse({"choices": [{"delta": {"content": "ok"}}]}), b"data: {not json\n\n"]
    big_error = b'{"error": {"message": "' + b"x" * (MAX_ERROR_BODY * 2) + b'"}}'
    tail: list[bytes | Pause] = [Pause()] if stalls else []
    server.push(
        Script(chunks=[*malformed, *tail]),
        Script(
            status=500,
            headers=[("content-type", "application/json")],
            chunks=[big_error[:MAX_ERROR_BODY], big_error[MAX_ERROR_BODY:], *tail],
        ),
    )
    provider = make_provider("openai-completions")
    with warnings.catch_warnings(record=True) as caught, trio.fail_after(5):
        warnings.simplefilter("always")
        _, first = await collect_error(provider.stream(REQUEST))
        _, second = await collect_error(provider.stream(REQUEST))
        kinds = (first.kind, second.kind)
        del first, second  # their tracebacks hold the frames
        gc.collect()
        await trio.lowlevel.checkpoint()
    assert kinds == ("malformed", "server")
    leaked = [str(w.message) for w in caught if "garbage collected" in str(w.message)]
    assert leaked == []
