"""A background command's end collected by `process poll`, over a real gateway on loopback, as
OpenClaw 2026.9.6 collects it (bash-tools: `finishedPollResult` acknowledges the job,
`acknowledgeNotifyOnExit` removes the one `Exec completed|failed` event its end queued):

- a poll that returns the end takes the queued completion back, so the heartbeat its end
  woke finds nothing to tell (`no-pending-event`): no second telling of what the model saw;
- a subagent's session, which no completion wakes, keeps the completion queued until a poll
  returns the end: `process log` does not collect it, `process poll` does.

The model is the `local` one, driven by `[[tool:...]]` directives. Waits are on events and on
the job's end.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio

from runtime.tools import Job
from tests._procs import tool_directive, turn_text
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_sessions_chat import Watch
from transports import Gateway

KEY = "agent:main:main"
CHILD = "agent:main:subagent:collect"


def _session_id(text: str) -> str:
    found = re.search(r"session ([0-9a-z-]+)", text)
    assert found is not None, text
    return found.group(1)


def _job(gw: Gateway, key: str, sid: str) -> Job:
    processes = gw.supervisor.processes
    assert processes is not None
    job = processes.get(key, sid)
    assert job is not None
    return job


def _queued(gw: Gateway, key: str) -> list[str | None]:
    return [e.context_key for e in gw.supervisor.services.system_events.peek(key)]


def _settled(p: dict[str, Any]) -> bool:
    """A heartbeat that was not put off because its session was busy."""
    return (p["status"], p.get("reason")) != ("skipped", "requests-in-flight")


async def test_a_poll_returning_the_end_takes_the_completion_back_before_its_heartbeat(
    tmp_path: Path,
) -> None:
    """The job ends while the turn polling it runs: its wake finds the session busy and is
    tried again once the turn ended, by when the poll took the completion back. Before, that
    heartbeat told the model again what its poll had shown it."""
    w = Watch()
    async with (
        running_gateway(tmp_path, local_config()) as gw,
        open_client(gw, on_event=w, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            start = tool_directive("exec", command="read x; echo got $x", background=True)
            sid = _session_id(await turn_text(client, KEY, start, "r1"))
            poll = tool_directive("process", action="poll", sessionId=sid, timeout=10000)
            write = tool_directive("process", action="write", sessionId=sid, data="hi\n")
            polled = await turn_text(client, KEY, write + poll + poll, "r2")  # output, then end
            assert "got hi" in polled and "Process exited with code 0." in polled
            assert _job(gw, KEY, sid).collected
            beat = await w.until(lambda e, p: e == "heartbeat" and _settled(p))
            assert (beat["status"], beat.get("reason")) == ("skipped", "no-pending-event"), beat
            assert _queued(gw, KEY) == []
            assert not any(
                e == "agent" and str(p["runId"]).startswith("heartbeat-") for e, p, _s in w.events
            )
            del gw


async def test_a_subagents_completion_stays_queued_until_a_poll_returns_the_end(
    tmp_path: Path,
) -> None:
    async with (
        running_gateway(tmp_path, local_config()) as gw,
        open_client(gw, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            start = tool_directive("exec", command="echo built", background=True)
            sid = _session_id(await turn_text(client, CHILD, start, "c1"))
            job = _job(gw, CHILD, sid)
            await job.done.wait()
            assert _queued(gw, CHILD) == [f"exec:{sid}"]  # no heartbeat wakes a subagent
            log = tool_directive("process", action="log", sessionId=sid)
            assert "built" in await turn_text(client, CHILD, log, "c2")
            assert _queued(gw, CHILD) == [f"exec:{sid}"] and not job.collected
            poll = tool_directive("process", action="poll", sessionId=sid)
            assert "Process exited with code 0." in await turn_text(client, CHILD, poll, "c3")
            assert _queued(gw, CHILD) == [] and job.collected
