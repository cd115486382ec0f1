"""The exporters against a real OTLP/HTTP receiver on loopback: spans continue a caller's
`traceparent`; a refusing or dead collector is counted in `health` and never raises into
the caller; the span queue is bounded and drops with a counter; a JSON log line logged
inside a span names its trace."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import AsyncIterator

import pytest
import trio

from runtime import telemetry
from runtime.telemetry import OtelSettings
from tests.runtime.telemetry._otlp_receiver import open_receiver


def _settings(base: str, **kw: object) -> OtelSettings:
    fields: dict[str, object] = {
        "service_name": "clawlane-test",
        "headers": {"x-token": "t"},
        "traces_url": f"{base}/v1/traces",
        "metrics_url": None,
        "logs_url": None,
        "sample_rate": None,
        "flush_interval_ms": 1000,
        "capture_content": False,
        "metric_prefix": "openclaw.",
        "export_timeout_s": 2.0,
    }
    fields.update(kw)
    return OtelSettings(**fields)  # type: ignore[arg-type]


@pytest.fixture
async def switched_off() -> AsyncIterator[None]:
    yield
    await telemetry.shutdown(timeout_s=2)
    assert not telemetry.STATE.on


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


async def test_a_span_continues_the_callers_traceparent(switched_off: None) -> None:
    async with open_receiver() as receiver:
        telemetry.configure(_settings(receiver.url))
        tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        span = telemetry.start_span("work", {"k": "v"}, traceparent=tp, server=True)
        with telemetry.current(span):
            child = telemetry.start_span("child")
            assert telemetry.traceparent_of(child) is not None
            child.end()
        span.end()
        bad = telemetry.start_span("fresh", traceparent="00-not-a-traceparent")
        bad.end()
        with trio.fail_after(20):
            await telemetry.shutdown(timeout_s=5)
            await receiver.wait_for(lambda: len(receiver.spans) == 3)
    work = receiver.span("work")
    assert work.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert work.parent_span_id == "b7ad6b7169203331"
    assert work.attributes == {"k": "v"} and work.resource["service.name"] == "clawlane-test"
    assert receiver.span("child").parent_span_id == work.span_id
    assert receiver.span("fresh").parent_span_id == ""  # malformed: a new trace


async def test_a_refusing_collector_is_counted_never_raised(switched_off: None) -> None:
    async with open_receiver() as receiver:
        receiver.status = 400  # not retryable: one attempt per batch
        telemetry.configure(_settings(receiver.url))
        for i in range(5):
            telemetry.start_span(f"s{i}").end()
        with trio.fail_after(20):
            await telemetry.shutdown(timeout_s=5)
    assert receiver.spans == [] and receiver.requests.get("/v1/traces", 0) >= 1


async def test_a_dead_collector_costs_the_caller_nothing_and_drops_with_a_counter(
    switched_off: None,
) -> None:
    telemetry.configure(_settings(_dead_url(), max_queue_items=10))
    t0 = time.perf_counter()
    for i in range(200):
        telemetry.start_span(f"s{i}", {"i": i}).end()
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, elapsed  # never waits on the collector
    health = telemetry.health()
    assert health is not None
    (traces,) = health["signals"]
    assert traces["signal"] == "traces" and traces["itemsDropped"] >= 180
    with trio.fail_after(20):
        await telemetry.shutdown(timeout_s=3)


async def test_the_queue_is_bounded_in_bytes_too(switched_off: None) -> None:
    telemetry.configure(_settings(_dead_url(), max_queue_bytes=4096, capture_content=True))
    for i in range(20):
        telemetry.start_span(f"s{i}", {"blob": "x" * 1000}).end()
    health = telemetry.health()
    assert health is not None and health["signals"][0]["itemsDropped"] >= 16


def test_off_nothing_is_captured_and_no_health() -> None:
    assert not telemetry.STATE.on
    assert telemetry.capture() is None and telemetry.health() is None


async def test_a_json_log_line_inside_a_span_names_its_trace(switched_off: None) -> None:
    from transports.server._logging import JsonFormatter

    def line() -> dict[str, object]:
        record = logging.LogRecord("clawlane.runs", logging.INFO, __file__, 1, "hi", (), None)
        decoded: dict[str, object] = json.loads(JsonFormatter().format(record))
        return decoded

    assert "traceId" not in line()  # off
    telemetry.configure(_settings(_dead_url()))
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    span = telemetry.start_span("work", traceparent=tp)
    assert "traceId" not in line()  # on, outside any span
    with telemetry.current(span):
        inside = line()
    span.end()
    assert inside["traceId"] == "0af7651916cd43dd8448eb211c80319c"
    assert isinstance(inside["spanId"], str) and len(inside["spanId"]) == 16


async def test_sample_rate_samples_root_spans_and_follows_a_callers_decision(
    switched_off: None,
) -> None:
    async with open_receiver() as receiver:
        telemetry.configure(_settings(receiver.url, sample_rate=0.0))
        telemetry.start_span("root").end()  # a new trace: sampled out
        sampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        telemetry.start_span("kept", traceparent=sampled).end()
        unsampled = "00-0af7651916cd43dd8448eb211c80319d-b7ad6b7169203331-00"
        telemetry.start_span("dropped", traceparent=unsampled).end()
        with trio.fail_after(20):
            await telemetry.shutdown(timeout_s=5)
            await receiver.wait_for(lambda: len(receiver.spans) >= 1)
    assert [s.name for s in receiver.spans] == ["kept"]


async def test_log_records_queue_bounded_and_dropped_with_a_counter(switched_off: None) -> None:
    telemetry.configure(
        _settings(_dead_url(), traces_url=None, logs_url=f"{_dead_url()}/v1/logs", max_queue_items=5)
    )
    logger = logging.getLogger("clawlane.telemetry-test")
    t0 = time.perf_counter()
    for i in range(50):
        logger.warning("line %d", i)
    assert time.perf_counter() - t0 < 1.0
    health = telemetry.health()
    assert health is not None
    (logs,) = health["signals"]
    assert logs["signal"] == "logs" and logs["itemsDropped"] >= 40
