"""`progress_card` and `progressCard.get` / `.put` on a real gateway: a run driven by the
`local` model's `[[tool:progress_card ...]]` directive writes its session's card, an
operator connection is told (`progressCard.changed`) and reads it back; a client replaces
and clears it; the methods refuse what OpenClaw refuses. Answers and events validated
against OpenClaw's schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import frame_checker, local_config, open_client, running_gateway
from tests.e2e._events import next_event, recorder_events, run_events
from transports import GatewayRequestError

PLAN = [
    {"step": "Inspect", "status": "completed"},
    {"step": "Repair", "status": "in_progress"},
    {"step": "Verify", "status": "pending"},
]
MESSAGE = f"[[tool:progress_card {json.dumps({'plan': PLAN, 'markdown': 'On it.'})}]]"


async def test_a_runs_card_reaches_the_operators_and_a_client_replaces_it(
    tmp_path: Path,
) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with (
                open_client(gw, caps=["tool-events"], on_event=on_event) as runner,
                open_client(gw, scopes=["operator.read"]) as viewer,
            ):
                assert await viewer.request("progressCard.get", {"sessionKey": "main"}) == {
                    "card": None
                }
                await runner.request(
                    "agent", {"message": MESSAGE, "idempotencyKey": "card"}, expect_final=True
                )
                changed = await next_event(viewer, "progressCard.changed")
                frame_checker().validate("ProgressCardChangedEvent", changed)
                assert changed == {"sessionKey": "agent:main:main", "revision": 1}
                got = await viewer.request("progressCard.get", {"sessionKey": "main"})
                assert got["card"]["steps"] == PLAN and got["card"]["markdown"] == "On it."
                assert got["card"]["revision"] == 1
                done = [{**s, "status": "completed"} for s in PLAN]
                put = await runner.request(
                    "progressCard.put", {"sessionKey": "agent:main:main", "plan": done}
                )
                assert put["card"]["revision"] == 2 and "markdown" not in put["card"]
                assert (await next_event(viewer, "progressCard.changed"))["revision"] == 2
                stale = {"sessionKey": "main", "expectedRevision": 1}
                assert (await runner.request("progressCard.put", stale))["card"] == put["card"]
                cleared = await runner.request("progressCard.put", {**stale, "expectedRevision": 2})
                assert cleared == {"card": None}
                assert (await next_event(viewer, "progressCard.changed")) == {
                    "sessionKey": "agent:main:main",
                    "revision": None,
                }
                with pytest.raises(GatewayRequestError) as read_only:
                    await viewer.request("progressCard.put", {"sessionKey": "main"})
                assert "operator.write" in str(read_only.value)
    results = [
        d
        for p in run_events(events, "card", "tool")
        if (d := p["data"])["phase"] == "result" and d["name"] != "tool_call"
    ]
    assert [r["name"] for r in results] == ["progress_card"] and not results[0]["isError"]
    assert "Progress card updated (rev 1, 1/3 done)" in json.dumps(results[0]["result"])


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"plan": [{"step": "a", "status": "in_progress"}] * 2}, "at most one in_progress step"),
        ({"markdown": "x" * 8193}, "exceeds 8192 UTF-8 bytes"),
        ({"markdown": "x", "expectedRevision": 1}, "only valid when clearing a card"),
        ({"agentId": "ghost"}, "ghost"),
        ({"sessionKey": "agent:main:main", "agentId": "other"}, "other"),
    ],
)
async def test_progress_card_put_refuses_as_openclaw(
    tmp_path: Path, params: dict[str, Any], error: str
) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw) as client:
                with pytest.raises(GatewayRequestError) as refused:
                    await client.request("progressCard.put", {"sessionKey": "main", **params})
    assert refused.value.code == "INVALID_REQUEST" and error in str(refused.value)


async def test_sessions_reset_clears_the_card(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw) as client:
                await client.request(
                    "agent", {"message": "hi", "idempotencyKey": "first"}, expect_final=True
                )
                put = {"sessionKey": "main", "markdown": "a task"}
                assert (await client.request("progressCard.put", put))["card"]["revision"] == 1
                await client.request("sessions.reset", {"key": "main"})
                got = await client.request("progressCard.get", {"sessionKey": "main"})
                assert got == {"card": None}
                again = await client.request("progressCard.put", put)
                assert again["card"]["revision"] == 3  # the reset's clear counted


async def test_tools_update_plan_false_takes_progress_card_away(tmp_path: Path) -> None:
    """OpenClaw's `tools.updatePlan: false`: no run is offered the card tool (a call is
    refused as an unknown tool) and tools.effective does not list it."""
    events, on_event = recorder_events()
    async with running_gateway(tmp_path, local_config(tools__updatePlan=False)) as gw:
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                await client.request(
                    "agent", {"message": MESSAGE, "idempotencyKey": "off"}, expect_final=True
                )
                effective = await client.request("tools.effective", {"sessionKey": "main"})
                card = await client.request("progressCard.get", {"sessionKey": "main"})
    [result] = [
        d
        for p in run_events(events, "off", "tool")
        if (d := p["data"])["phase"] == "result" and d["name"] != "tool_call"
    ]
    assert result["isError"] and "not available" in json.dumps(result["result"])
    offered = {t["id"] for g in effective["groups"] for t in g["tools"]}
    assert "progress_card" not in offered and "ask_user" in offered
    assert card == {"card": None}
