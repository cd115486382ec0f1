"""Retries, the idle watchdog and aborts: `stream_with_retry` over the real transports.

Loopback tests use real time (MockClock's autojump would fire timeouts while a real socket is
merely waiting); the fake-provider tests use the `autojump_clock` fixture.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import pytest
import trio
import trio.testing

from runtime.llm._retry import (
    IdleTimeoutError,
    backoff_delay,
    resolve_idle_timeout,
    stream_with_retry,
)
from runtime.llm._types import (
    ModelDelta,
    ModelProvider,
    ModelRequest,
    ProviderError,
    StopDelta,
    TextDelta,
    UserMessage,
)
from runtime.model._config import llm_idle_timeout_seconds, parse_config

from ._sse_server import Pause, Script, SSEServer, json_error, sse
from ._streams import (
    AnthropicStream,
    ResponsesStream,
    chat_chunk,
    chat_text,
    collect,
    collect_error,
    text_of,
)

MakeProvider = Callable[[str], ModelProvider]
APIS = ["openai-completions", "openai-responses", "anthropic-messages"]

REQUEST = ModelRequest(model="m", system_prompt="", messages=[UserMessage("hi", timestamp=1)])


def text_stream(api: str, words: list[str]) -> list[bytes]:
    """A complete text answer in the api's wire format."""
    if api == "openai-completions":
        return chat_text(words)
    if api == "openai-responses":
        return ResponsesStream().created().message(0, words).completed().chunks
    return AnthropicStream().start().text(words).stop().chunks


def first_text(api: str, word: str) -> list[bytes]:
    """The opening of an answer, up to and including one text delta."""
    if api == "openai-completions":
        return [chat_chunk({"role": "assistant", "content": ""}), chat_chunk({"content": word})]
    if api == "openai-responses":
        return ResponsesStream().created().message(0, [word]).chunks[:6]  # up to the delta
    return AnthropicStream().start().text([word]).chunks[:3]


def server_error_event(api: str) -> bytes:
    """A mid-stream internal error (a retryable class) in the api's wire format."""
    if api == "openai-completions":
        return sse(
            {
                "error": {
                    "message": "Internal server error",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
        )
    if api == "openai-responses":
        return sse(
            {
                "type": "error",
                "sequence_number": 9,
                "code": "server_error",
                "message": "Internal server error",
                "param": None,
            },
            event="error",
        )
    return sse(
        {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
        event="error",
    )


RATE_LIMITED = {
    "error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
}
SERVER_ERROR = {
    "error": {"message": "The server had an error processing your request.", "type": "server_error"}
}


# --- retries over the loopback server -----------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_429_then_success_is_retried(
    api: str, server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(
            json_error(429, RATE_LIMITED, [("retry-after", "0")]),
            Script(chunks=text_stream(api, ["after", " retry"])),
        )
        deltas = await collect(stream_with_retry(make_provider(api), REQUEST, base_delay=0.01))
    assert text_of(deltas) == "after retry"
    assert deltas[-1] == StopDelta("stop")
    assert len(server.requests) == 2


@pytest.mark.parametrize("api", APIS)
async def test_a_server_error_after_partial_output_is_not_retried(
    api: str, server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(
            Script(chunks=[*first_text(api, "partial"), server_error_event(api)]),
            Script(chunks=text_stream(api, ["must not be fetched"])),
        )
        deltas, exc = await collect_error(
            stream_with_retry(make_provider(api), REQUEST, base_delay=0.01)
        )
    assert deltas == [TextDelta("partial")]
    assert (exc.kind, exc.retryable) == ("server", True)  # retryable class, yet output was streamed
    assert len(server.requests) == 1


async def test_a_dropped_connection_after_partial_output_is_not_retried(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    api = "openai-completions"
    with trio.fail_after(5):
        server.push(
            Script(chunks=first_text(api, "partial"), truncate=True),
            Script(chunks=text_stream(api, ["must not be fetched"])),
        )
        deltas, exc = await collect_error(
            stream_with_retry(make_provider(api), REQUEST, base_delay=0.01)
        )
    assert (deltas, exc.kind) == ([TextDelta("partial")], "network")
    assert len(server.requests) == 1


async def test_500s_before_output_are_retried_up_to_max_attempts(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        server.push(
            *(json_error(500, SERVER_ERROR) for _ in range(3)), Script(chunks=chat_text(["late"]))
        )
        deltas, exc = await collect_error(
            stream_with_retry(
                make_provider("openai-completions"), REQUEST, max_attempts=3, base_delay=0.01
            )
        )
    assert (deltas, exc.kind, exc.status) == ([], "server", 500)
    assert len(server.requests) == 3


async def test_context_overflow_is_never_retried(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    overflow = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 250000 tokens > 200000 maximum",
        },
    }
    with trio.fail_after(5):
        server.push(
            json_error(400, overflow), Script(chunks=text_stream("anthropic-messages", ["no"]))
        )
        _, exc = await collect_error(
            stream_with_retry(make_provider("anthropic-messages"), REQUEST, base_delay=0.01)
        )
    assert exc.kind == "context_overflow"
    assert len(server.requests) == 1


# --- the idle watchdog and aborts: the server must see the client go ----------------------


@pytest.mark.parametrize("api", APIS)
async def test_a_stall_trips_the_idle_timeout_and_closes_the_stream(
    api: str, server: SSEServer, make_provider: MakeProvider
) -> None:
    stall = Pause()  # never released
    with trio.fail_after(5):
        script = server.push(Script(chunks=[*first_text(api, "so far"), stall]))
        deltas, exc = await collect_error(
            stream_with_retry(make_provider(api), REQUEST, idle_timeout=0.2)
        )
        await script.disconnected.wait()
    assert deltas == [TextDelta("so far")]
    assert isinstance(exc, IdleTimeoutError)
    assert (exc.kind, exc.message) == ("timeout", "LLM idle timeout: no chunk for 0.2s")
    assert stall.reached.is_set()


async def test_a_slow_consumer_does_not_trip_the_idle_timeout(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    # The window measures waiting for the provider, not the consumer's own work.
    got: list[ModelDelta] = []
    with trio.fail_after(5):
        server.push(Script(chunks=text_stream("openai-completions", ["a", "b", "c"])))
        async with aclosing(
            stream_with_retry(make_provider("openai-completions"), REQUEST, idle_timeout=0.1)
        ) as deltas:  # type: ignore[type-var]
            async for delta in deltas:
                got.append(delta)
                await trio.sleep(0.15)  # a busy consumer, longer than the window
    assert text_of(got) == "abc"


async def test_a_stall_before_any_output_times_out_without_a_retry(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    with trio.fail_after(5):
        script = server.push(Script(chunks=[Pause()]))
        deltas, exc = await collect_error(
            stream_with_retry(
                make_provider("anthropic-messages"), REQUEST, idle_timeout=0.2, base_delay=0.01
            )
        )
        await script.disconnected.wait()
    assert (deltas, exc.kind) == ([], "timeout")
    assert len(server.requests) == 1


async def test_pings_do_not_feed_the_idle_watchdog(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    # Anthropic keep-alives arrive, but no delta: the watchdog still fires.
    stream = AnthropicStream().start().ping()
    with trio.fail_after(5):
        script = server.push(Script(chunks=[*stream.chunks, Pause()]))
        _, exc = await collect_error(
            stream_with_retry(make_provider("anthropic-messages"), REQUEST, idle_timeout=0.2)
        )
        await script.disconnected.wait()
    assert exc.kind == "timeout"


@pytest.mark.parametrize("api", APIS)
async def test_an_abort_closes_the_http_stream_at_once(
    api: str, server: SSEServer, make_provider: MakeProvider
) -> None:
    got: list[ModelDelta] = []
    with trio.fail_after(5):
        script = server.push(Script(chunks=[*first_text(api, "one"), Pause()]))
        with trio.CancelScope() as run:
            async with aclosing(make_provider(api).stream(REQUEST)) as deltas:  # type: ignore[type-var]
                async for delta in deltas:
                    got.append(delta)
                    run.cancel()  # e.g. chat.abort
        assert run.cancelled_caught
        await script.disconnected.wait()
    assert got == [TextDelta("one")]
    assert not script.finished.is_set()


async def test_an_abort_through_the_retry_wrapper_closes_the_stream(
    server: SSEServer, make_provider: MakeProvider
) -> None:
    pause = Pause()
    with trio.fail_after(5):
        script = server.push(Script(chunks=[pause]))
        async with trio.open_nursery() as nursery:

            async def consume() -> None:
                await collect(
                    stream_with_retry(make_provider("openai-responses"), REQUEST, idle_timeout=30)
                )

            nursery.start_soon(consume)
            await pause.reached.wait()
            nursery.cancel_scope.cancel()
        await script.disconnected.wait()


# --- retry policy with a fake provider in virtual time ------------------------------------

Step = ModelDelta | float | ProviderError


class FakeProvider:
    """Each attempt plays one list of steps: a delta is yielded, a float slept, an error raised."""

    def __init__(self, *attempts: list[Step]) -> None:
        self.id = "fake"
        self.api = "fake"
        self.attempts = list(attempts)
        self.calls = 0
        self.started_at: list[float] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        steps = self.attempts[self.calls]
        self.calls += 1
        self.started_at.append(trio.current_time())
        for step in steps:
            if isinstance(step, float):
                await trio.sleep(step)
            elif isinstance(step, ProviderError):
                raise step
            else:
                yield step

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def test_retry_after_is_honoured(autojump_clock: trio.testing.MockClock) -> None:
    provider = FakeProvider(
        [ProviderError("rate_limit", "slow down", status=429, retry_after=5.0)],
        [TextDelta("ok"), StopDelta("stop")],
    )
    with trio.fail_after(60):
        deltas = await collect(stream_with_retry(provider, REQUEST, base_delay=0.5, max_delay=8.0))
    assert deltas == [TextDelta("ok"), StopDelta("stop")]
    assert provider.started_at[1] - provider.started_at[0] >= 5.0


async def test_a_retry_after_beyond_the_limit_is_not_waited_for(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = FakeProvider(
        [ProviderError("rate_limit", "quota window", status=429, retry_after=3600.0)], []
    )
    with trio.fail_after(60):
        _, exc = await collect_error(stream_with_retry(provider, REQUEST, max_retry_after=60.0))
    assert (exc.kind, provider.calls) == ("rate_limit", 1)
    assert trio.current_time() < 1.0


async def test_backoff_grows_exponentially_within_bounds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    network = ProviderError("network", "reset")
    provider = FakeProvider([network], [network], [network], [network], [TextDelta("ok")])
    with trio.fail_after(600):
        deltas = await collect(
            stream_with_retry(
                provider,
                REQUEST,
                max_attempts=5,
                base_delay=1.0,
                max_delay=3.0,
                rng=random.Random(7),
            )
        )
    assert deltas == [TextDelta("ok")]
    gaps = [b - a for a, b in zip(provider.started_at, provider.started_at[1:], strict=False)]
    for retry, gap in enumerate(gaps, start=1):
        ceiling = min(3.0, 2.0 ** (retry - 1))
        assert ceiling / 2 <= gap <= ceiling + 1e-9


async def test_the_idle_window_restarts_with_every_delta(
    autojump_clock: trio.testing.MockClock,
) -> None:
    slow: list[Step] = [
        TextDelta("a"),
        0.15,
        TextDelta("b"),
        0.15,
        TextDelta("c"),
        0.15,
        StopDelta("stop"),
    ]
    provider = FakeProvider(slow)
    with trio.fail_after(60):
        deltas = await collect(stream_with_retry(provider, REQUEST, idle_timeout=0.2))
    assert text_of(deltas) == "abc"


async def test_the_idle_timeout_is_final_even_though_timeouts_are_retryable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = FakeProvider([1000.0], [TextDelta("never")])
    with trio.fail_after(600):
        _, exc = await collect_error(stream_with_retry(provider, REQUEST, idle_timeout=120))
    assert (exc.kind, exc.message, provider.calls) == (
        "timeout",
        "LLM idle timeout: no chunk for 120s",
        1,
    )


async def test_a_provider_timeout_before_output_is_retried(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = FakeProvider([ProviderError("timeout", "read timeout")], [TextDelta("ok")])
    with trio.fail_after(60):
        deltas = await collect(stream_with_retry(provider, REQUEST))
    assert (deltas, provider.calls) == ([TextDelta("ok")], 2)


def test_backoff_delay_has_equal_jitter() -> None:
    rng = random.Random(1)
    delays = [backoff_delay(3, base_delay=0.5, max_delay=8.0, rng=rng) for _ in range(200)]
    assert all(1.0 <= d <= 2.0 for d in delays)
    assert len({round(d, 6) for d in delays}) > 100
    assert backoff_delay(40, base_delay=0.5, max_delay=8.0) <= 8.0


@pytest.mark.parametrize(
    ("idle", "provider_timeout", "expected"),
    [
        (None, None, 60.0),
        (0, None, None),
        (0, 300, None),
        (30, None, 30.0),
        (30, 300, 300.0),
        (300, 30, 300.0),
        (None, 300, 300.0),
    ],
)
def test_resolve_idle_timeout(
    idle: float | None, provider_timeout: float | None, expected: float | None
) -> None:
    assert resolve_idle_timeout(idle, provider_timeout) == expected


@pytest.mark.parametrize(
    ("idle", "run_timeout", "cron", "expected"),
    [
        (None, None, False, 60.0),  # neither configured: the default window
        (None, None, True, None),  # cron runs with neither configured: no watchdog
        (None, 600, False, 600.0),  # unset: the configured run timeout
        (None, 600, True, 600.0),
        (None, 0, False, None),  # a run timeout of 0 (none) means no watchdog either
        (5, 600, False, 5.0),  # set: wins over the run timeout
        (0, 600, False, None),  # 0 disables
    ],
)
def test_resolve_idle_timeout_falls_back_to_the_run_timeout(
    idle: float | None, run_timeout: float | None, cron: bool, expected: float | None
) -> None:
    assert resolve_idle_timeout(idle, run_timeout_seconds=run_timeout, cron=cron) == expected


@pytest.mark.parametrize(
    ("defaults", "expected"),
    [
        ({}, 60.0),
        ({"timeoutSeconds": 900}, 900.0),
        ({"timeoutSeconds": 900, "llm": {"idleTimeoutSeconds": 1}}, 1.0),
        ({"llm": {"idleTimeoutSeconds": 0}}, None),
        ({"timeoutSeconds": 0}, None),
    ],
)
def test_the_config_resolves_the_idle_window_with_the_same_rule(
    defaults: dict[str, Any], expected: float | None
) -> None:
    config = parse_config({"agents": {"defaults": defaults}})
    assert llm_idle_timeout_seconds(config.agents.defaults) == expected
    assert llm_idle_timeout_seconds(config.agents.defaults, provider_timeout_seconds=1200) == (
        None if expected is None else 1200.0
    )


async def test_with_a_pacer_driven_the_watchdog_scope_is_watched_not_moved(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from runtime.llm._pacer import QUANTUM_S, Pacer

    flowing: list[Step] = [TextDelta("a"), 0.15, TextDelta("b"), 0.15, TextDelta("c"), 0.15]
    stalled: list[Step] = [TextDelta("a"), 0.15, TextDelta("b"), 100.0, TextDelta("never")]
    pacer = Pacer()
    async with trio.open_nursery() as n:
        n.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        watchdog = trio.CancelScope(deadline=trio.current_time() + 0.2)  # armed, as callers do
        with watchdog:
            got = await collect(
                stream_with_retry(
                    FakeProvider(flowing), REQUEST, idle_timeout=0.2, watchdog=watchdog
                )
            )
            assert watchdog.deadline == math.inf  # set aside once, never moved per delta
        assert text_of(got) == "abc" and not watchdog.cancelled_caught
        got = []
        last = 0.0
        with trio.CancelScope() as watchdog:
            async with aclosing(
                stream_with_retry(
                    FakeProvider(stalled), REQUEST, idle_timeout=0.2, watchdog=watchdog
                )
            ) as deltas:  # type: ignore[type-var]
                async for delta in deltas:
                    got.append(delta)
                    last = trio.current_time()
        assert watchdog.cancelled_caught and text_of(got) == "ab"
        assert 0.2 <= trio.current_time() - last <= 0.2 + QUANTUM_S + 1e-9
        n.cancel_scope.cancel()
