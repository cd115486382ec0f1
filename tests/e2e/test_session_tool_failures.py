"""The session tools' failures on a real gateway answer as OpenClaw 2026.9.6's do
(`tests/_session_failures.py`): its texts, statuses, extra fields (`runId`, `sessionKey`,
`role`), a thrown tool's envelope where OpenClaw's tool throws, and error results; driven by
the `local` model's `[[tool:...]]` directives and read as a client asking for tool events
sees them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.agent import MISSING_FOR_MODE
from runtime.model import Config
from tests._session_failures import (
    ANY_AGENT_CASES,
    DEFAULT_CASES,
    SELF_CASES,
    Case,
    Thrown,
    check,
    chunks,
    directives,
)
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import recorder_events, run_events


async def _results(tmp_path: Path, config: Config, cases: list[Case]) -> list[tuple[str, Any]]:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                for n, key in enumerate(("agent:main:other", "agent:main:room:thread:7")):
                    await client.request(
                        "agent",
                        {"message": "hi", "sessionKey": key, "idempotencyKey": f"o{n}"},
                        expect_final=True,
                    )
                for n, chunk in enumerate(chunks(cases)):
                    await client.request(
                        "agent",
                        {"message": directives(chunk), "idempotencyKey": f"calls-{n}"},
                        expect_final=True,
                    )
    return [
        (p["data"]["name"], p["data"]["result"] | {"isError": p["data"]["isError"]})
        for n in range(len(chunks(cases)))
        for p in run_events(events, f"calls-{n}", "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] != "tool_call"
    ]


@pytest.mark.parametrize(
    ("config", "cases"),
    [
        pytest.param({}, DEFAULT_CASES, id="default"),
        pytest.param({"tools__sessions": {"visibility": "self"}}, SELF_CASES, id="self"),
        pytest.param(
            {"agents__defaults__subagents": {"allowAgents": ["*"]}}, ANY_AGENT_CASES, id="any"
        ),
    ],
)
async def test_session_tool_failures_answer_as_openclaw(
    tmp_path: Path, config: dict[str, Any], cases: list[Case]
) -> None:
    check(cases, await _results(tmp_path, local_config(**config), cases))


async def test_subagents_wait_answers_when_the_first_listed_task_ends(tmp_path: Path) -> None:
    """OpenClaw's wait ends when any listed task has ended (or needs attention), not when
    all have: the stalled one stays running, listed, not completed."""
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                spawns = [
                    '[[tool:sessions_spawn {"task": "[[stall]]"}]]',
                    '[[tool:sessions_spawn {"task": "[[delay:200]] [[reply:quick]]"}]]',
                ]
                await client.request(
                    "agent", {"message": " ".join(spawns), "idempotencyKey": "s"}, expect_final=True
                )
                slow, fast = [
                    p["data"]["result"]["details"]
                    for p in run_events(events, "s", "tool")
                    if p["data"]["phase"] == "result" and p["data"]["name"] == "sessions_spawn"
                ]
                ids = [slow["runId"], fast["runId"]]
                wait = {"action": "wait", "taskIds": ids, "timeoutSeconds": 20}
                await client.request(
                    "agent",
                    {
                        "message": directives([("subagents", wait, Thrown(""))]),
                        "idempotencyKey": "w",
                    },
                    expect_final=True,
                )
                await client.request("chat.abort", {"sessionKey": slow["childSessionKey"]})
    [waited] = [
        p["data"]["result"]["details"]
        for p in run_events(events, "w", "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] == "subagents"
    ]
    assert waited["reason"] == "completed" and waited["completed"] == [fast["runId"]]
    assert [t["taskId"] for t in waited["tasks"]] == ids
    assert waited["tasks"][0]["status"] == "running" and "unavailable" not in waited


async def test_a_send_to_a_configured_agents_missing_main_session_starts_it(
    tmp_path: Path,
) -> None:
    """As OpenClaw's: the send's run makes the agent's main session (steering it first is
    refused: it is missing)."""
    config = local_config(agents__list=[{"id": "main", "default": True}, {"id": "ops"}])
    events, on_event = recorder_events()
    steer = {"sessionKey": "agent:ops:main", "message": "x", "mode": "steer"}
    send = {"agentId": "ops", "message": "[[reply:pong]]"}
    message = directives(
        [("sessions_send", steer, Thrown("")), ("sessions_send", send, Thrown(""))]
    )
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                await client.request(
                    "agent", {"message": message, "idempotencyKey": "m"}, expect_final=True
                )
                listed = await client.request("sessions.list", {})
    steered, sent = [
        p["data"]["result"]["details"]
        for p in run_events(events, "m", "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] == "sessions_send"
    ]
    assert steered["error"] == MISSING_FOR_MODE and steered["sessionKey"] == "agent:ops:main"
    assert sent["status"] == "ok" and sent["reply"] == "pong"
    assert sent["sessionKey"] == "agent:ops:main"
    assert "agent:ops:main" in {row["key"] for row in listed["sessions"]}
