"""`GET /metrics` on a real gateway: the Prometheus text format (parsed back with
prometheus-client's own parser), the token it needs, and figures that follow what the
gateway did: runs by status, durations, time to first event, provider errors, lanes,
the store, generations and their failures, slow-consumer closes. Label sets stay bounded."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._raw import hold_commits
from transports import GatewayRequestError
from transports.server._gateway import Gateway

TOKEN = "metrics-token"


def base_url(gw: Gateway) -> str:
    return f"http://127.0.0.1:{gw.listeners[0].socket.getsockname()[1]}"


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(gw: Gateway, token: str | None = TOKEN, path: str = "/metrics") -> Samples:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=base_url(gw)) as http:
        res = await http.get(path, headers=headers)
    assert res.status_code == 200, res.text
    assert res.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples: Samples = {}
    for family in text_string_to_metric_families(res.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


@pytest.fixture
async def gw(tmp_path: Path) -> Any:
    async with running_gateway(tmp_path, token=TOKEN) as gateway:
        yield gateway


async def test_metrics_need_the_token(gw: Gateway) -> None:
    with trio.fail_after(10):
        async with httpx.AsyncClient(base_url=base_url(gw)) as http:
            missing = await http.get("/metrics")
            wrong = await http.get("/metrics", headers={"authorization": "Bearer nope"})
            right = await http.get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    for refused in (missing, wrong):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert refused.json() == {"error": {"message": "Unauthorized", "type": "unauthorized"}}
    assert right.status_code == 200


async def test_a_gateway_without_auth_serves_metrics_openly(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, local_config(gateway__auth__mode="none")) as gw:
        with trio.fail_after(10):
            samples = await scrape(gw, token=None, path="/api/diagnostics/prometheus")
    assert value(samples, "clawlane_ready") == 1


async def test_runs_are_counted_by_status_with_durations_and_first_events(gw: Gateway) -> None:
    with trio.fail_after(30):
        before = await scrape(gw)
        async with open_client(gw, token=TOKEN) as client:
            for i in range(3):
                await client.request(
                    "agent",
                    {"message": f"hello {i}", "idempotencyKey": f"ok-{i}", "sessionKey": "m1"},
                    expect_final=True,
                )
            with pytest.raises(GatewayRequestError):
                await client.request(
                    "agent",
                    {"message": "[[fail:auth]]", "idempotencyKey": "bad", "sessionKey": "m2"},
                    expect_final=True,
                )
        after = await scrape(gw)
    started = "clawlane_runs_started_total"
    assert value(after, started) - value(before, started) == 4
    ended = "clawlane_runs_ended_total"
    assert value(after, ended, status="ok") - value(before, ended, status="ok") == 3
    assert value(after, ended, status="error") - value(before, ended, status="error") == 1
    assert value(after, "clawlane_run_duration_seconds_count", status="ok") == 3
    assert value(after, "clawlane_run_duration_seconds_bucket", status="ok", le="+Inf") == 3
    assert value(after, "clawlane_run_first_event_seconds_count") == 3  # the failure had none
    assert value(after, "clawlane_provider_errors_total", kind="auth") == 1
    assert value(after, "clawlane_provider_errors_total", kind="rate_limit") == 0
    assert value(after, "clawlane_events_emitted_total") > value(
        before, "clawlane_events_emitted_total"
    )
    assert value(after, "clawlane_replay_bytes") > value(before, "clawlane_replay_bytes")
    assert value(after, "clawlane_replay_runs_retained") == 4  # ended, kept for replay
    assert value(after, "clawlane_lane_wait_seconds_count", lane="main") == 4
    assert value(after, "clawlane_lane_capacity", lane="main") == 8
    assert value(after, "clawlane_store_commits_total") >= 1
    assert value(after, "clawlane_store_commit_seconds_count") >= 1
    assert value(after, "clawlane_http_requests_total", route="metrics", code="2xx") >= 1


async def test_idle_sessions_contexts_are_counted_and_dropped_past_the_bound(
    gw: Gateway,
) -> None:
    with trio.fail_after(30):
        async with open_client(gw, token=TOKEN) as client:
            for n in (1, 2, 3):
                await client.request(
                    "agent",
                    {"message": "hello", "idempotencyKey": f"c-{n}", "sessionKey": f"c{n}"},
                    expect_final=True,
                )
                await trio.testing.wait_all_tasks_blocked()
                if n == 1:
                    held = await scrape(gw)
                    gw.supervisor.idle_contexts.max_bytes = 1  # one held context is past it
        after = await scrape(gw)
    assert value(held, "clawlane_session_idle_context_bytes") > 0
    assert value(held, "clawlane_session_contexts_dropped_total") == 0
    assert value(after, "clawlane_session_contexts_dropped_total") >= 1


async def test_connections_are_counted_by_role(gw: Gateway) -> None:
    with trio.fail_after(10):
        async with open_client(gw, token=TOKEN), open_client(gw, token=TOKEN):
            samples = await scrape(gw)
    assert value(samples, "clawlane_connections", role="operator") == 2
    assert value(samples, "clawlane_connections", role="pending") == 0


async def test_a_failed_publish_is_counted_and_the_generation_stays(gw: Gateway) -> None:
    with trio.fail_after(20):
        async with open_client(gw, token=TOKEN) as client:
            snap = await client.request("config.get")
            bad = {"agents": {"defaults": {"model": {"primary": "nowhere/none"}}}}
            with pytest.raises(GatewayRequestError):
                await client.request(
                    "config.patch", {"raw": json.dumps(bad), "baseHash": snap["hash"]}
                )
            samples = await scrape(gw)
    assert value(samples, "clawlane_generation") == 1
    assert value(samples, "clawlane_generation_publish_failures_total") == 1
    assert value(samples, "clawlane_generation_publishes_total") == 0


async def test_a_slow_consumer_close_is_counted(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, token=TOKEN, max_buffered_bytes=8192) as gw:
        with trio.fail_after(20):
            async with open_client(gw, token=TOKEN) as client:
                # The reply's events are far more than 8 KiB (the hello alone is near 4): cut off.
                with pytest.raises(Exception):  # noqa: B017 (how it breaks is the client's)
                    await client.request(
                        "agent",
                        {"message": "x " * 3000, "idempotencyKey": "slow", "sessionKey": "s"},
                        expect_final=True,
                    )
            await gw.wait_all_closed()  # the close is counted as the connection goes
            samples = await scrape(gw)
    assert value(samples, "clawlane_slow_consumer_closes_total") == 1


async def test_label_sets_are_bounded(gw: Gateway) -> None:
    """No run id, session key or message ever becomes a label."""
    with trio.fail_after(30):
        async with open_client(gw, token=TOKEN) as client:
            for i in range(5):
                await client.request(
                    "agent",
                    {"message": f"m{i}", "idempotencyKey": f"id-{i}", "sessionKey": f"k{i}"},
                    expect_final=True,
                )
        samples = await scrape(gw)
    values = {v for _, labels in samples for _, v in labels}
    forbidden = {f"{p}{i}" for i in range(5) for p in ("id-", "k", "agent:main:k", "m")}
    assert values.isdisjoint(forbidden), values & forbidden
    assert not any("agent:" in v for v in values)
    assert len(samples) < 600


async def test_lane_occupancy_waits_and_queued_runs_follow_the_gateway(tmp_path: Path) -> None:
    """One slot in the main lane: a stalled run holds it, a run of another session waits
    for it, and a second message to the stalled session waits in that session's queue."""
    config = local_config(
        agents__defaults__maxConcurrent=1,
        messages__queue__mode="followup",
        messages__queue__debounceMs=0,
    )
    async with running_gateway(tmp_path, config, token=TOKEN) as gw:
        with trio.fail_after(30):
            async with open_client(gw, token=TOKEN) as client:
                for key, session, message in [
                    ("held", "a", "[[stall]]"),
                    ("waits", "b", "next"),
                    ("queued", "a", "after"),
                ]:
                    await client.request(
                        "agent", {"message": message, "idempotencyKey": key, "sessionKey": session}
                    )
                await trio.testing.wait_all_tasks_blocked()
                busy = await scrape(gw)
                await client.request("chat.abort", {"sessionKey": "agent:main:a", "runId": "held"})
                for run_id in ("waits", "queued"):
                    await client.request("agent.wait", {"runId": run_id, "timeoutMs": 20_000})
            idle = await scrape(gw)
    assert value(busy, "clawlane_lane_capacity", lane="main") == 1
    assert value(busy, "clawlane_lane_in_use", lane="main") == 1
    assert value(busy, "clawlane_lane_waiting", lane="main") == 1
    assert value(busy, "clawlane_runs_queued") == 1
    assert value(busy, "clawlane_runs_active") == 3
    assert value(busy, "clawlane_sessions_busy") == 2
    assert value(busy, "clawlane_events_delivered_total") >= 1  # the held run's start
    assert value(idle, "clawlane_lane_in_use", lane="main") == 0
    assert value(idle, "clawlane_lane_waiting", lane="main") == 0
    assert value(idle, "clawlane_runs_queued") == 0
    # The run of session b waited for the slot: its wait is in a bucket above 0.
    waits = value(idle, "clawlane_lane_wait_seconds_count", lane="main")
    at_once = value(idle, "clawlane_lane_wait_seconds_bucket", lane="main", le="0.001")
    assert waits >= 3 and at_once < waits
    assert value(idle, "clawlane_events_delivered_total") > value(
        busy, "clawlane_events_delivered_total"
    )


async def test_store_queue_depth_counts_writes_not_yet_committed(
    gw: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = hold_commits(gw.supervisor.store, monkeypatch)
    with trio.fail_after(20):
        async with open_client(gw, token=TOKEN) as client, trio.open_nursery() as nursery:
            # A new session's row is written before the run is accepted: the ack waits.
            params = {"message": "hi", "idempotencyKey": "held-write", "sessionKey": "fresh"}
            nursery.start_soon(partial(client.request, "agent", params, expect_final=True))
            await trio.testing.wait_all_tasks_blocked()
            held = await scrape(gw)
            release.set()
        await gw.supervisor.store.flush()  # the run's own writes at its end too
        after = await scrape(gw)
    assert value(held, "clawlane_store_queue_depth") >= 1
    assert value(after, "clawlane_store_queue_depth") == 0
    assert value(after, "clawlane_store_commit_seconds_count") > value(
        held, "clawlane_store_commit_seconds_count"
    )
