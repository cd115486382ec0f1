"""OpenTelemetry end to end: a gateway with `diagnostics.otel` aimed at a real OTLP/HTTP
receiver on loopback (protobuf, decoded with opentelemetry-proto) and a provider that is a
real loopback HTTP server speaking OpenAI's format. One `agent` request carrying a
`traceparent` is one trace rooted at the caller's span: the RPC, the run, each model call
(whose `traceparent` the provider sees), the tool call and the store's commit, with their
attributes; metrics (what `/metrics` serves among them) and logs arrive; a compaction is a
span of its run. A dead collector does not stop runs. Across two cluster
nodes (PostgreSQL and Redis; skipped, saying why, when either is missing) a request
forwarded to the session's owner continues the trace there."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from runtime import telemetry
from runtime.model._config import Config, parse_config
from tests.actors._databases import pg_url
from tests.conftest import local_config, open_client
from tests.e2e._raw import raw_client
from tests.e2e.test_cluster_nodes import ADMIN, two_nodes
from tests.e2e.test_providers_e2e import provider_gateway
from tests.e2e.test_replies_prompts_compaction import ask, long_message
from tests.runtime.llm._sse_server import Script, SSEServer, json_error, open_sse_server
from tests.runtime.llm._streams import chat_text, chat_tool_calls
from tests.runtime.telemetry._otlp_receiver import histogram_count, open_receiver

__all__ = ["pg_url"]  # the fixture, used by name

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"


def _config(server: SSEServer, endpoint: str, **otel: Any) -> Config:
    return parse_config(
        {
            "agents": {"defaults": {"model": {"primary": "prov/m1"}}},
            "models": {
                "providers": {
                    "prov": {
                        "api": "openai-completions",
                        "baseUrl": f"{server.url}/v1",
                        "models": [{"id": "m1", "cost": {"input": 3.0, "output": 15.0}}],
                    }
                }
            },
            "diagnostics": {"otel": {"enabled": True, "endpoint": endpoint, **otel}},
        }
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def run_logs() -> Iterator[None]:
    """`clawlane.runs` at DEBUG (its `run started` line is logged inside the run)."""
    logger = logging.getLogger("clawlane.runs")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    yield
    logger.setLevel(level)


async def _agent(gw: Any, params: dict[str, Any], traceparent: str | None) -> dict[str, Any]:
    async with raw_client(gw) as raw:
        frame: dict[str, Any] = {"type": "req", "id": "t1", "method": "agent", "params": params}
        if traceparent is not None:
            frame["traceparent"] = traceparent
        await raw.ws.send_message(json.dumps(frame))
        return await raw.response("t1", 2)


async def test_one_agent_request_is_one_trace_from_the_callers_span_to_the_provider(
    tmp_path: Path, run_logs: None
) -> None:
    args = json.dumps({"path": "out.txt", "content": "hi"})
    async with open_receiver() as receiver, open_sse_server() as server:
        server.push(
            Script(chunks=chat_tool_calls([("call_1", "write", [args])])),
            Script(chunks=chat_text(["Wrote", " it"])),
        )
        config = _config(server, receiver.url, logs=True, flushIntervalMs=1000)
        with trio.fail_after(60):
            async with provider_gateway(tmp_path, config) as gw:
                assert telemetry.STATE.on
                final = await _agent(
                    gw, {"message": "write it", "idempotencyKey": "otel-1"}, TRACEPARENT
                )
                status = (await _status(gw))["clawlane"]["telemetry"]
            assert telemetry.health() is None  # the gateway's stop flushed and stopped it
    assert final["ok"] and final["payload"]["status"] == "ok"
    assert status["enabled"] is True
    assert {s["signal"] for s in status["signals"]} == {"traces", "metrics", "logs"}

    spans = [s for s in receiver.spans if s.trace_id == TRACE_ID]
    others = {(s.name, s.attributes.get("openclaw.gateway.rpc.method")) for s in receiver.spans}
    others -= {(s.name, s.attributes.get("openclaw.gateway.rpc.method")) for s in spans}
    assert others <= {("openclaw.gateway.rpc", "status"), ("clawlane.store.commit", None)}
    assert {s.name for s in spans} == {
        "openclaw.gateway.rpc",
        "openclaw.run",
        "openclaw.model.call",
        "openclaw.tool.execution",
        "clawlane.store.commit",
    }
    (rpc,) = [s for s in spans if s.name == "openclaw.gateway.rpc"]
    assert rpc.parent_span_id == CALLER_SPAN
    assert rpc.attributes["openclaw.gateway.rpc.method"] == "agent"
    assert rpc.resource["service.name"] == "openclaw"
    (run,) = [s for s in spans if s.name == "openclaw.run"]
    assert run.parent_span_id == rpc.span_id
    assert run.attributes["openclaw.outcome"] == "ok"
    assert run.attributes["openclaw.agent"] == "main"
    assert run.attributes["openclaw.model"] == "m1"
    assert run.attributes["openclaw.run.queued_ms"] >= 0
    assert run.attributes["openclaw.run.duration_ms"] >= 0
    assert run.attributes["openclaw.sessionId"]

    calls = [s for s in spans if s.name == "openclaw.model.call"]
    assert len(calls) == 2 and {c.parent_span_id for c in calls} == {run.span_id}
    for call in calls:
        assert call.attributes["gen_ai.operation.name"] == "chat"
        assert call.attributes["gen_ai.request.model"] == "m1"
        assert call.attributes["gen_ai.provider.name"] == "prov"
        assert "openclaw.model_call.time_to_first_byte_ms" in call.attributes
    assert calls[1].attributes["gen_ai.usage.input_tokens"] == 19
    assert calls[1].attributes["gen_ai.usage.output_tokens"] == 10
    seen = [r.headers.get("traceparent", "") for r in server.requests]
    assert sorted(seen) == sorted(f"00-{TRACE_ID}-{c.span_id}-01" for c in calls)

    (tool,) = [s for s in spans if s.name == "openclaw.tool.execution"]
    assert tool.parent_span_id == run.span_id
    assert tool.attributes["gen_ai.tool.name"] == "write"
    assert tool.attributes["openclaw.outcome"] == "ok"
    assert tool.attributes["openclaw.tool.duration_ms"] >= 0
    assert "gen_ai.tool.call.arguments" not in tool.attributes  # captureContent is off

    commits = [s for s in spans if s.name == "clawlane.store.commit"]
    assert commits and all(c.attributes["db.system.name"] == "sqlite" for c in commits)
    # The run's writes commit in a span of the run's, or (a quick run on a busy writer) in
    # the same batch as the request's acceptance, whose span is the batch's first trace.
    assert run.span_id in {c.parent_span_id for c in commits} or any(
        c.parent_span_id == rpc.span_id and c.attributes["clawlane.store.traced_writes"] >= 2
        for c in commits
    ), [(c.parent_span_id, c.attributes) for c in commits]

    for name in (
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "openclaw.run.duration_ms",
        "openclaw.tool.execution.duration_ms",
    ):
        assert histogram_count(receiver, name) > 0, (name, sorted(receiver.metrics))
    assert "openclaw.tokens" in receiver.metrics
    for lane_metric in ("openclaw.queue.lane.enqueue", "openclaw.queue.lane.dequeue"):
        assert lane_metric in receiver.metrics, sorted(receiver.metrics)
    (cost,) = receiver.metrics["openclaw.cost.usd"][-1].sum.data_points  # priced model
    assert cost.as_double > 0
    assert "openclaw.gateway.rpc.requests" in receiver.metrics
    assert histogram_count(receiver, "openclaw.gateway.rpc.handler_ms") > 0
    # what /metrics serves, mirrored: its counters and gauges under their own names
    (started,) = receiver.metrics["clawlane_runs_started"][-1].sum.data_points
    assert started.as_int >= 1 or started.as_double >= 1
    assert "clawlane_runs_active" in receiver.metrics

    logged = [r for r in receiver.logs if r.attributes.get("logger.name") == "clawlane.runs"]
    assert logged and logged[0].trace_id == TRACE_ID
    assert logged[0].body is None  # withheld without captureContent


async def _status(gw: Any) -> dict[str, Any]:
    async with raw_client(gw) as raw:
        rid = await raw.send("status", {})
        res = await raw.response(rid)
        assert res["ok"], res
        payload: dict[str, Any] = res["payload"]
        return payload


async def test_tool_content_goes_on_spans_only_with_capture_content(tmp_path: Path) -> None:
    args = json.dumps({"path": "o.txt", "content": "secret-ish"})
    async with open_receiver() as receiver, open_sse_server() as server:
        server.push(
            Script(chunks=chat_tool_calls([("call_2", "write", [args])])),
            Script(chunks=chat_text(["ok"])),
        )
        config = _config(server, receiver.url, captureContent=True, metrics=False)
        with trio.fail_after(60):
            async with provider_gateway(tmp_path, config) as gw:
                final = await _agent(gw, {"message": "go", "idempotencyKey": "otel-2"}, None)
    assert final["payload"]["status"] == "ok"
    tool = receiver.span("openclaw.tool.execution")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"])["content"] == "secret-ish"
    assert "gen_ai.tool.call.result" in tool.attributes
    rpc = receiver.span("openclaw.gateway.rpc")
    assert rpc.parent_span_id == ""  # no traceparent: a fresh trace rooted at the RPC
    assert receiver.metrics == {}


async def test_a_dead_collector_never_fails_or_stalls_a_run(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    async with open_sse_server() as server:
        for _ in range(3):
            server.push(Script(chunks=chat_text(["fine"])))
        config = _config(server, dead, logs=True, flushIntervalMs=1000)
        with trio.fail_after(30):
            async with provider_gateway(tmp_path, config) as gw:
                for i in range(3):
                    with trio.fail_after(10):
                        final = await _agent(
                            gw, {"message": "hi", "idempotencyKey": f"dead-{i}"}, TRACEPARENT
                        )
                    assert final["payload"]["status"] == "ok"
                health = telemetry.health()
                assert health is not None and health["enabled"] is True
                port = gw.listeners[0].socket.getsockname()[1]
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                    auth = {"authorization": f"Bearer {gw.auth.token}"}
                    scraped = (await http.get("/metrics", headers=auth)).text
                status = (await _status(gw))["clawlane"]["telemetry"]
                async with raw_client(gw) as raw:
                    rid = await raw.send("diagnostics.stability", {"type": "telemetry.exporter"})
                    stability = (await raw.response(rid))["payload"]
    # what `openclaw doctor`'s exporter check reads: one record per signal
    exporters = {e["target"]: e for e in stability["events"]}
    assert sorted(exporters) == ["logs", "metrics", "traces"]
    assert {e["source"] for e in exporters.values()} == {"otlp"}
    assert {e["outcome"] for e in exporters.values()} <= {"started", "failure"}
    for signal in ("traces", "metrics", "logs"):
        assert f'clawlane_telemetry_exporter_up{{signal="{signal}"}}' in scraped
        assert f'clawlane_telemetry_dropped_total{{signal="{signal}"}}' in scraped
    assert [s["signal"] for s in status["signals"]] == ["traces", "metrics", "logs"]
    assert all(s["url"].startswith(dead) for s in status["signals"])


async def test_status_says_telemetry_is_off_by_default(tmp_path: Path) -> None:
    async with open_sse_server() as server:
        config = parse_config(
            {"models": {"providers": {"prov": {"baseUrl": server.url, "models": [{"id": "m"}]}}}}
        )
        with trio.fail_after(30):
            async with provider_gateway(tmp_path, config) as gw:
                status = (await _status(gw))["clawlane"]["telemetry"]
    assert status == {"enabled": False}


async def test_a_forwarded_request_continues_the_trace_on_the_owner(
    tmp_path: Path, pg_url: str
) -> None:
    otel = {"enabled": True, "endpoint": "", "metrics": False}
    async with open_receiver() as receiver:
        otel["endpoint"] = receiver.url
        with trio.fail_after(60):
            async with two_nodes(tmp_path, pg_url, diagnostics__otel=otel) as nodes:
                a, b = nodes
                async with open_client(a.gw, scopes=ADMIN) as ca:
                    first = await ca.request(
                        "agent", {"message": "one", "idempotencyKey": "fw-1"}, expect_final=True
                    )
                    assert first["status"] == "ok"  # node A owns agent:main:main now
                final = await _agent(
                    b.gw, {"message": "two", "idempotencyKey": "fw-2"}, TRACEPARENT
                )
                assert final["payload"]["status"] == "ok"
                assert a.gw.registry.get("fw-2") is not None  # it ran on the owner
    spans = [s for s in receiver.spans if s.trace_id == TRACE_ID]
    rpcs = [s for s in spans if s.name == "openclaw.gateway.rpc"]
    (on_b,) = [s for s in rpcs if s.parent_span_id == CALLER_SPAN]
    (on_a,) = [s for s in rpcs if s.parent_span_id == on_b.span_id]
    assert on_a.attributes["clawlane.cluster.forwarded_from"].endswith("node-b")
    (run,) = [s for s in spans if s.name == "openclaw.run"]
    assert run.parent_span_id == on_a.span_id
    assert run.attributes["openclaw.run.id"] == "fw-2"


async def test_a_compaction_is_a_span_of_its_run(tmp_path: Path) -> None:
    async with open_receiver() as receiver:
        config = local_config(
            models__providers__local={
                "api": "local",
                "models": [{"id": "echo", "contextWindow": 6000}],  # budget 3000
            },
            diagnostics__otel={"enabled": True, "endpoint": receiver.url, "metrics": False},
            tools__deny=["*"],  # in a window this small the tool schemas alone fill it
        )
        with trio.fail_after(60):
            # the events go to a callback: unread, they would fill the client's bounded
            # event channel and stop its reader before the final arrives
            async with (
                provider_gateway(tmp_path, config) as gw,
                open_client(gw, on_event=lambda *e: None) as client,
            ):
                for i in range(40):
                    await ask(client, long_message(i), f"long-{i}", sessionKey="long")
                    row = await gw.supervisor.store.get_session("agent:main:long")
                    if row is not None and row.compactionCount >= 1:
                        break
                assert row is not None and row.compactionCount >= 1, "never compacted"
    compactions = [s for s in receiver.spans if s.name == "openclaw.compaction"]
    assert compactions
    runs = {s.span_id: s for s in receiver.spans if s.name == "openclaw.run"}
    for compaction in compactions:
        run = runs[compaction.parent_span_id]
        assert compaction.trace_id == run.trace_id
        assert compaction.attributes["openclaw.compaction.reason"]
        assert compaction.attributes["openclaw.compaction.completed"] is True
    summaries = [s for s in receiver.spans if s.name == "openclaw.model.call"]
    assert {c.span_id for c in compactions} <= {s.parent_span_id for s in summaries}


async def test_the_openai_http_route_continues_the_traceparent_header(tmp_path: Path) -> None:
    async with open_receiver() as receiver:
        config = local_config(
            gateway__http__endpoints__chatCompletions__enabled=True,
            diagnostics__otel={"enabled": True, "endpoint": receiver.url, "metrics": False},
        )
        body = {"messages": [{"role": "user", "content": "hi"}]}
        with trio.fail_after(30):
            async with provider_gateway(tmp_path, config) as gw:
                port = gw.listeners[0].socket.getsockname()[1]
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                    res = await http.post(
                        "/v1/chat/completions",
                        json=body,
                        headers={
                            "authorization": f"Bearer {gw.auth.token}",
                            "traceparent": TRACEPARENT,
                        },
                    )
    assert res.status_code == 200, res.text
    (rpc,) = [s for s in receiver.spans if s.name == "openclaw.gateway.rpc"]
    assert (rpc.trace_id, rpc.parent_span_id) == (TRACE_ID, CALLER_SPAN)
    (run,) = [s for s in receiver.spans if s.name == "openclaw.run"]
    assert run.parent_span_id == rpc.span_id


async def test_a_failed_model_call_marks_its_span_and_its_run(tmp_path: Path) -> None:
    async with open_receiver() as receiver, open_sse_server() as server:
        server.push(json_error(400, {"error": {"message": "bad request", "type": "invalid"}}))
        config = _config(server, receiver.url, metrics=False)
        with trio.fail_after(30):
            async with provider_gateway(tmp_path, config) as gw:
                final = await _agent(gw, {"message": "x", "idempotencyKey": "bad-1"}, None)
    assert final["payload"]["status"] == "error"
    (call,) = [s for s in receiver.spans if s.name == "openclaw.model.call"]
    assert call.status_code == 2 and call.attributes["error.type"]  # STATUS_CODE_ERROR
    (run,) = [s for s in receiver.spans if s.name == "openclaw.run"]
    assert run.status_code == 2 and run.attributes["openclaw.outcome"] == "error"


async def test_an_rpc_answered_with_an_error_has_a_failed_span(tmp_path: Path) -> None:
    async with open_receiver() as receiver:
        config = local_config(
            diagnostics__otel={"enabled": True, "endpoint": receiver.url, "metrics": False}
        )
        with trio.fail_after(30):
            async with provider_gateway(tmp_path, config) as gw, raw_client(gw) as raw:
                frame = {"type": "req", "id": "e1", "method": "sessions.patch", "params": {}}
                await raw.ws.send_message(json.dumps({**frame, "traceparent": TRACEPARENT}))
                answer = await raw.response("e1")
    assert answer["ok"] is False and answer["error"]["code"] == "INVALID_REQUEST"
    (rpc,) = [s for s in receiver.spans if s.trace_id == TRACE_ID]
    assert rpc.name == "openclaw.gateway.rpc" and rpc.parent_span_id == CALLER_SPAN
    assert rpc.status_code == 2 and rpc.attributes["error.type"] == "INVALID_REQUEST"
