"""A subagent's `sessions_yield` refused while one of its background jobs runs or has a result
nobody polled, as OpenClaw 2026.9.6 refuses it (openclaw-tools.requester-yield: a subagent
session whose yield claims no child of its turn, whatever `waitFor`, gets this error while
`listRunningSessions` has a job of its process scope or `listFinishedSessions` one whose
`terminalPollObserved` is not set), on both hosts, driven by the `local` model's
`[[tool:...]]` directives:

- a spawned child that starts a job and yields for a message is refused: it does not pause,
  its task ends and is announced to its parent;
- the rule: a running job refuses, an ended one only logged still refuses, a poll that
  returned its end (or `clear`) lifts it; a session that is no subagent is never refused for
  its jobs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from runtime import open_embedded_runtime, parse_config
from runtime.agent import announce_key
from runtime.agent._session_views import BACKGROUND_EXEC_YIELD, NO_PENDING_CHILD
from tests._procs import tool_directive
from tests.conftest import open_client, running_gateway
from tests.e2e.test_session_tools import Watch, details, directive, spawn, tool_results
from tests.e2e.test_yield_handoff import text_of
from transports import Gateway, GatewayClient

MAIN = "agent:main:main"
SOLO = "agent:main:subagent:solo"
WAIT = directive("sessions_yield", {"waitFor": "message"})
REFUSED = {"status": "error", "error": BACKGROUND_EXEC_YIELD}
UNCLAIMED = {"status": "error", "error": NO_PENDING_CHILD}  # no task of this session to pause


def _exec(command: str) -> str:
    return tool_directive("exec", command=command, background=True)


def _process(action: str, sid: str, **more: Any) -> str:
    return tool_directive("process", action=action, sessionId=sid, **more)


async def test_a_spawned_child_with_a_running_job_is_refused_and_its_task_ends(
    tmp_path: Path,
) -> None:
    watch = Watch()
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            task = spawn(_exec("read x") + " " + WAIT, label="worker")
            await client.request(
                "agent", {"message": task, "idempotencyKey": "p1"}, expect_final=True
            )
            receipt = details(tool_results(watch.events, "p1")[0])
            child, task_id = receipt["childSessionKey"], receipt["runId"]
            await watch.ended(child, 1)
            history = await client.request("chat.history", {"sessionKey": child})
            started, refused = [m for m in history["messages"] if m["role"] == "toolResult"]
            assert started["toolName"] == "exec" and "Command still running" in text_of(started)
            assert refused["toolName"] == "sessions_yield" and refused["isError"]
            assert json.loads(text_of(refused)) == REFUSED
            # Not paused: its task ended with that turn and is told to its parent.
            await watch.ended(MAIN, 2)
    assert [p["runId"] for p in watch.ends(MAIN)] == ["p1", announce_key(child, task_id)]


async def _turn(client: GatewayClient, watch: Watch, key: str, message: str, run_id: str) -> Any:
    """Run a turn of `key`; the details of its last tool result."""
    await client.request(
        "agent", {"sessionKey": key, "message": message, "idempotencyKey": run_id},
        expect_final=True,
    )  # fmt: skip
    return tool_results(watch.events, run_id)[-1]["result"]["details"]


def _ended(gw: Gateway, sid: str) -> trio.Event:
    processes = gw.supervisor.processes
    assert processes is not None
    job = processes.get(SOLO, sid)
    assert job is not None
    return job.done


async def test_a_subagents_yield_waits_for_its_jobs_to_be_polled_to_their_end(
    tmp_path: Path,
) -> None:
    watch = Watch()
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            started = await _turn(client, watch, SOLO, _exec("read x; echo got $x"), "s1")
            sid = started["sessionId"]
            assert await _turn(client, watch, SOLO, WAIT, "s2") == REFUSED  # running
            await _turn(client, watch, SOLO, _process("write", sid, data="hi\n"), "s3")
            await _ended(gw, sid).wait()
            logged = _process("log", sid) + " " + WAIT
            assert await _turn(client, watch, SOLO, logged, "s4") == REFUSED  # not collected
            polled = _process("poll", sid) + " " + WAIT
            assert await _turn(client, watch, SOLO, polled, "s5") == UNCLAIMED
            other = (await _turn(client, watch, SOLO, _exec("echo other"), "s6"))["sessionId"]
            await _ended(gw, other).wait()
            assert await _turn(client, watch, SOLO, WAIT, "s7") == REFUSED
            cleared = _process("clear", other) + " " + WAIT
            assert await _turn(client, watch, SOLO, cleared, "s8") == UNCLAIMED
            # A session that is no subagent's is not refused for its jobs.
            plain = _exec("read x") + " " + directive("sessions_yield", {})
            assert await _turn(client, watch, MAIN, plain, "m1") == UNCLAIMED


async def test_the_embedded_runtime_refuses_the_yield_by_the_same_rule(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def last_result() -> Any:
        results = [
            p["data"]["result"]["details"]
            for p in seen
            if p["stream"] == "tool" and p["data"]["phase"] == "result"
        ]
        return results[-1]

    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:

            async def turn(message: str) -> Any:
                await rt.run_turn(message, session_key=SOLO, on_event=seen.append)
                return last_result()

            sid = (await turn(_exec("read x; echo got $x")))["sessionId"]
            assert await turn(WAIT) == REFUSED
            await turn(_process("write", sid, data="hi\n"))
            processes = rt.services.processes
            assert processes is not None
            job = processes.get(SOLO, sid)
            assert job is not None
            await job.done.wait()
            assert await turn(_process("log", sid) + " " + WAIT) == REFUSED
            assert await turn(_process("poll", sid) + " " + WAIT) == UNCLAIMED
