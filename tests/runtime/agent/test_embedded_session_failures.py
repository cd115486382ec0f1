"""The session tools' failures on the embedded runtime answer as OpenClaw 2026.9.6's do, the
same cases as on a gateway (`tests/_session_failures.py`), driven by the `local` model's
`[[tool:...]]` directives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.agent import MISSING_FOR_MODE
from runtime.agent._embedded import open_embedded_runtime
from runtime.model._config import parse_config
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


@pytest.mark.parametrize(
    ("config", "cases"),
    [
        pytest.param({}, DEFAULT_CASES, id="default"),
        pytest.param({"tools": {"sessions": {"visibility": "self"}}}, SELF_CASES, id="self"),
        pytest.param(
            {"agents": {"defaults": {"subagents": {"allowAgents": ["*"]}}}},
            ANY_AGENT_CASES,
            id="any",
        ),
    ],
)
async def test_session_tool_failures_answer_as_openclaw(
    tmp_path: Path, config: dict[str, Any], cases: list[Case]
) -> None:
    events: list[dict[str, Any]] = []
    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config(config), state_dir=tmp_path) as rt:
            await rt.run_turn("hi", session_key="other")
            await rt.run_turn("hi", session_key="room:thread:7")
            for chunk in chunks(cases):
                await rt.run_turn(directives(chunk), session_key="main", on_event=events.append)
    results = [
        (e["data"]["name"], e["data"]["result"] | {"isError": e["data"]["isError"]})
        for e in events
        if e["stream"] == "tool"
        and e["data"].get("phase") == "result"
        and e["data"]["name"] != "tool_call"
    ]
    check(cases, results)


async def test_a_send_to_a_configured_agents_missing_main_session_starts_it(
    tmp_path: Path,
) -> None:
    """As on a gateway (and OpenClaw): the send's run makes the agent's main session;
    steering it first is refused."""
    config = parse_config({"agents": {"list": [{"id": "main", "default": True}, {"id": "ops"}]}})
    steer = {"sessionKey": "agent:ops:main", "message": "x", "mode": "steer"}
    send = {"agentId": "ops", "message": "[[reply:pong]]"}
    message = directives(
        [("sessions_send", steer, Thrown("")), ("sessions_send", send, Thrown(""))]
    )
    events: list[dict[str, Any]] = []
    with trio.fail_after(30):
        async with open_embedded_runtime(config, state_dir=tmp_path) as rt:
            await rt.run_turn(message, session_key="main", on_event=events.append)
            made = await rt.session_row("agent:ops:main")
    steered, sent = [
        e["data"]["result"]["details"]
        for e in events
        if e["stream"] == "tool"
        and e["data"].get("phase") == "result"
        and e["data"]["name"] == "sessions_send"
    ]
    assert steered["error"] == MISSING_FOR_MODE and steered["sessionKey"] == "agent:ops:main"
    assert sent["status"] == "ok" and sent["reply"] == "pong"
    assert sent["sessionKey"] == "agent:ops:main"
    assert made is not None and made.agentId == "ops"
