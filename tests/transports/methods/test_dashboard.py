"""The dashboard's server side: its three methods over a real WebSocket, the sampler behind
its chart, and `clawlane dashboard` handing the token over in the URL fragment."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tests.conftest import open_client
from transports import GatewayRequestError, main
from transports.cli._dashboard import dashboard_url
from transports.methods._dashboard import SERIES_SECONDS
from transports.server._gateway import Gateway


async def test_the_snapshot_shows_lanes_runs_and_connections(gateway: Gateway) -> None:
    with trio.fail_after(20):
        async with open_client(gateway) as client:
            await client.request(
                "agent",
                {"message": "[[stall]]", "idempotencyKey": "held", "sessionKey": "dash"},
            )
            await trio.testing.wait_all_tasks_blocked()
            snap = await client.request("clawlane.dashboard", {})
            await client.request("chat.abort", {"sessionKey": "agent:main:dash"})
    main_lane = next(lane for lane in snap["lanes"] if lane["name"] == "main")
    assert main_lane["capacity"] == 8 and main_lane["inUse"] == 1
    assert snap["runs"]["active"] == 1
    [run] = snap["runs"]["items"]
    assert run["runId"] == "held" and run["sessionKey"] == "agent:main:dash"
    assert run["status"] == "running"
    [conn] = snap["connections"]["items"]
    assert conn["clientId"] == "test" and "operator.read" in conn["scopes"]
    assert snap["generation"] == 1 and snap["publisher"] == {"published": 0, "failed": 0}


async def test_the_generation_history_keeps_failures_and_publishes(gateway: Gateway) -> None:
    with trio.fail_after(20):
        async with open_client(gateway) as client:
            snap = await client.request("config.get")
            bad = {"agents": {"defaults": {"model": {"primary": "nowhere/none"}}}}
            with pytest.raises(GatewayRequestError):
                await client.request(
                    "config.patch", {"raw": json.dumps(bad), "baseHash": snap["hash"]}
                )
            snap = await client.request("config.get")
            good = {"agents": {"defaults": {"maxConcurrent": 3}}}
            await client.request(
                "config.patch", {"raw": json.dumps(good), "baseHash": snap["hash"]}
            )
            history = await client.request("clawlane.generations", {})
    assert [h["status"] for h in history["history"]] == ["serving", "failed", "published"]
    failed, published = history["history"][1], history["history"][2]
    assert failed["reason"] == "config.patch" and "nowhere/none" in failed["message"]
    assert published["number"] == 2 and published["previous"] == 1
    assert history["serving"]["number"] == 2


async def test_the_sampler_turns_counters_into_rates(gateway: Gateway) -> None:
    sampler = gateway.sampler
    sampler.samples.clear()
    sampler.sample()
    with trio.fail_after(20):
        async with open_client(gateway) as client:
            for i in range(3):
                await client.request(
                    "agent",
                    {"message": "hi", "idempotencyKey": f"s{i}", "sessionKey": "series"},
                    expect_final=True,
                )
            sampler.sample()
            series = await client.request("clawlane.series", {})
            later = await client.request(
                "clawlane.series", {"sinceMs": series["samples"][-1]["ts"]}
            )
    [sample] = [s for s in series["samples"] if s["runsPerS"] > 0]
    assert sample["runsStartedPerS"] == sample["runsPerS"] > 0
    assert sample["firstEventMs"] is not None and sample["eventsPerS"] > 0
    assert later["samples"] == []
    assert sampler.samples.maxlen == SERIES_SECONDS


async def test_the_methods_need_read_access_and_valid_params(gateway: Gateway) -> None:
    with trio.fail_after(20):
        async with open_client(gateway, scopes=["operator.approvals"]) as client:
            with pytest.raises(GatewayRequestError) as refused:
                await client.request("clawlane.dashboard", {})
        async with open_client(gateway, scopes=["operator.read"]) as client:
            with pytest.raises(GatewayRequestError) as bad:
                await client.request("clawlane.series", {"since": 1})
            assert (await client.request("clawlane.generations", {}))["history"]
    assert refused.value.code == "FORBIDDEN" and "operator.read" in str(refused.value)
    assert bad.value.code == "INVALID_REQUEST" and "since" in str(bad.value)


def test_the_token_goes_in_the_fragment() -> None:
    url = dashboard_url("ws://127.0.0.1:18789", "a b&c=d")
    parts = urllib.parse.urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path, parts.query) == (
        "http",
        "127.0.0.1:18789",
        "/",
        "",
    )
    assert urllib.parse.parse_qs(parts.fragment) == {"token": ["a b&c=d"]}
    assert dashboard_url("wss://gw.example", None) == "https://gw.example/"


def test_clawlane_dashboard_reads_the_local_token_file(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.delenv("CLAWLANE_GATEWAY_TOKEN", raising=False)
    (tmp_path / "gateway-token").write_text("from-the-file")
    (tmp_path / "gateway-token").chmod(0o600)
    assert main(["dashboard", "--state-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "http://127.0.0.1:18789/#token=from-the-file"
    assert main(["dashboard", "--url", "ws://192.0.2.1:1", "--state-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "http://192.0.2.1:1/"  # not for a remote gateway
