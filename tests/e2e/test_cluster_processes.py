"""Background jobs on a cluster of two gateways (this process, one PostgreSQL, one Redis): a
job stays on the node whose run started it, and `process` reaches it from the node serving
its session now.

- a job started on A, its session moved to B: `process list` through B shows it (its line
  says where it runs), `poll`, `log` and `kill` through B act on it on A, and no process of
  its tree is left (a `setsid` grandchild included);
- written to through B, the job ends on A by itself: its completion event and wake go to B,
  the session's owner, which runs the wake there (the session stays on B);
- polled through B once it ended (heartbeats off, so its completion waits on B), it is
  collected on A and B takes its completion back, as OpenClaw's poll does; a subagent's job
  on A refuses its `sessions_yield` through B until a poll through B returned its end;
- A gone, its job is listed through B as ended `failed` (`node-lost`, its line naming A), and
  `poll` says A is gone: nothing hangs; the session is told once, as a completion;
- the session deleted through B: A kills its job there.

The model is the `local` one, driven by `[[tool:...]]` directives. Process liveness is read
from the OS in a bounded loop; cross-node state with `wait_for`. Skipped, saying why, when
Redis or PostgreSQL cannot be reached.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio

from runtime.tools import Job
from tests._procs import assert_all_gone, running, tool_directive, turn_text
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, Node, two_nodes, wait_for
from tests.e2e.test_sessions_chat import Watch
from transports import Gateway, GatewayClient

__all__ = ["pg_url"]  # the fixture, used by name

KEY = "agent:main:main"
WORK = "agent:main:work"
# Prints its setsid grandchild's pid, then waits: a tree a group kill cannot reach.
ESCAPING = "setsid sleep 300 & echo child $!; sleep 300"


def _session_id(text: str) -> str:
    found = re.search(r"Command still running \(session ([0-9a-z-]+), pid (\d+)\)", text)
    assert found is not None, text
    return found.group(1)


def _job(gw: Gateway, sid: str, key: str = KEY) -> Job:
    processes = gw.supervisor.processes
    assert processes is not None
    job = processes.get(key, sid)
    assert job is not None
    return job


def _owns(node: Node, key: str = KEY) -> bool:
    router = node.gw.router
    return router is not None and key in router.leases.held


async def _start_on_a_then_move(a: Node, at_a: GatewayClient, command: str, key: str = KEY) -> str:
    """A background job of `key` started by a turn on A; then A lets the session go (idle),
    so B takes it with its next request. The job's session id."""
    exec_call = tool_directive("exec", command=command, background=True)
    sid = _session_id(await turn_text(at_a, key, exec_call, "a1"))
    assert _owns(a, key)
    assert a.gw.router is not None
    await a.gw.router.leases.let_go(key)
    assert not _owns(a, key)
    return sid


def _user_texts(history: dict[str, Any]) -> list[str]:
    return [
        m["content"][0]["text"] if isinstance(m["content"], list) else m["content"]
        for m in history["messages"]
        if m["role"] == "user"
    ]


async def _process(client: GatewayClient, run_id: str, key: str = KEY, **args: Any) -> str:
    return await turn_text(client, key, tool_directive("process", **args), run_id)


async def test_a_job_started_on_a_is_listed_polled_and_killed_through_b(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN) as at_a,
                open_client(b.gw, scopes=ADMIN) as at_b,
            ):
                sid = await _start_on_a_then_move(a, at_a, ESCAPING)
                job = _job(a.gw, sid)
                assert job.pid is not None
                while "child" not in job.output.text():
                    await job.changed.wait()
                pids = [job.pid, int(job.output.text().split()[1])]
                listed = await _process(at_b, "b1", action="list")
                assert _owns(b) and not _owns(a)  # the run ran on B
                assert f"{sid} running" in listed and "[on node-a]" in listed
                polled = await _process(at_b, "b2", action="poll", sessionId=sid)
                assert "child" in polled and "Process still running." in polled
                logged = await _process(at_b, "b3", action="log", sessionId=sid)
                assert f"child {pids[1]}" in logged
                killed = await _process(at_b, "b4", action="kill", sessionId=sid)
                assert f"Termination requested for session {sid}." in killed
                await assert_all_gone(pids)
                await wait_for(lambda: not job.running, "the job ended on A", timeout_s=10)
                after = await _process(at_b, "b5", action="poll", sessionId=sid)
                assert "Process stopped by request" in after
                assert f"{sid} completed" in await _process(at_b, "b6", action="list")
                cleared = await _process(at_b, "b7", action="clear", sessionId=sid)
                assert f"Cleared session {sid}." in cleared
                assert a.gw.supervisor.processes is not None
                assert a.gw.supervisor.processes.get(KEY, sid) is None


async def test_a_jobs_end_on_a_wakes_the_session_on_its_owner_b(
    tmp_path: Path, pg_url: str
) -> None:
    w = Watch()
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN) as at_a,
                open_client(b.gw, scopes=ADMIN, on_event=w) as at_b,
            ):
                command = "echo started; read x; echo got $x"
                sid = await _start_on_a_then_move(a, at_a, command)
                write = await _process(at_b, "b1", action="write", sessionId=sid, data="hi\n")
                assert f"Wrote 3 bytes to session {sid}." in write
                assert _owns(b)
                # The job ends on A by itself: its end is queued on B, which owns the
                # session, and its wake runs there.
                wake = await w.until(
                    lambda e, p: (
                        e == "agent"
                        and p["runId"].startswith("heartbeat-")
                        and p["sessionKey"] == KEY
                        and p["stream"] == "lifecycle"
                    )
                )
                await w.ended(wake["runId"])
                assert _owns(b) and not _owns(a)
                assert not a.gw.supervisor.services.system_events.has(KEY)
                history = await at_b.request("chat.history", {"sessionKey": KEY})
    users = _user_texts(history)
    assert users[-1].startswith("An async command you ran earlier has completed.")
    assert f"Exec completed ({sid[:8]}, code 0) :: started got hi" in users[-1]


async def test_a_poll_through_b_collects_a_jobs_end_queued_on_b(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN) as at_a,
                open_client(b.gw, scopes=ADMIN) as at_b,
            ):
                await at_b.request("set-heartbeats", {"enabled": False})
                sid = await _start_on_a_then_move(a, at_a, "read x; echo got $x")
                await _process(at_b, "b1", action="write", sessionId=sid, data="hi\n")
                queued = b.gw.supervisor.services.system_events
                await wait_for(
                    lambda: [e.context_key for e in queued.peek(KEY)] == [f"exec:{sid}"],
                    "the end on A queued on B",
                    timeout_s=10,
                )
                polled = await _process(at_b, "b2", action="poll", sessionId=sid)
                assert "got hi" in polled and "Process exited with code 0." in polled
                assert _owns(b) and not queued.has(KEY)
                assert _job(a.gw, sid).collected
                assert not a.gw.supervisor.services.system_events.has(KEY)


async def test_a_subagents_job_on_a_holds_its_yield_through_b_until_polled(
    tmp_path: Path, pg_url: str
) -> None:
    solo = "agent:main:subagent:solo"
    wait = tool_directive("sessions_yield", waitFor="message")
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN) as at_a,
                open_client(b.gw, scopes=ADMIN) as at_b,
            ):
                sid = await _start_on_a_then_move(a, at_a, "read x; echo got $x", solo)
                refused = await turn_text(at_b, solo, wait, "b1")
                assert _owns(b, solo) and "Background exec is still running" in refused
                await _process(at_b, "b2", solo, action="write", sessionId=sid, data="hi\n")
                await _job(a.gw, sid, solo).done.wait()
                assert "Background exec" in await turn_text(at_b, solo, wait, "b3")
                poll = tool_directive("process", action="poll", sessionId=sid)
                polled = await turn_text(at_b, solo, poll + wait, "b4")
                assert "Process exited with code 0." in polled
                assert "Background exec" not in polled and "No pending child" in polled


async def test_a_job_of_a_node_gone_is_reported_failed_naming_it(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with open_client(a.gw, scopes=ADMIN) as at_a:
                sid = await _start_on_a_then_move(a, at_a, "sleep 300")
                pid = _job(a.gw, sid).pid
                assert pid is not None
            async with open_client(b.gw, scopes=ADMIN) as at_b:
                assert f"{sid} running" in await _process(at_b, "b1", action="list")
                await a.close()  # its jobs die with it
                assert not running(pid)
                router = b.gw.router
                assert router is not None
                await wait_for(lambda: "node-a" not in router.alive, "A gone", timeout_s=10)
                final = await at_b.request(
                    "agent",
                    {
                        "sessionKey": KEY,
                        "message": tool_directive("process", action="list"),
                        "idempotencyKey": "b2",
                    },
                    expect_final=True,
                )
                listed = str(final["result"]["payloads"][0]["text"])
                assert f"{sid} failed" in listed and "[node node-a lost]" in listed
                polled = await _process(at_b, "b3", action="poll", sessionId=sid)
                assert "node node-a" in polled and "gone" in polled
                killed = await _process(at_b, "b4", action="kill", sessionId=sid)
                assert f"No active session found for {sid}" in killed
                # Its session is told, as a completion, by B (the first live node), once A
                # stayed gone two lease TTLs: its heartbeat reads it.
                end = f"Exec finished (node=node-a id={sid[:8]}, node lost)"
                for _ in range(200):
                    history = await at_b.request("chat.history", {"sessionKey": KEY})
                    told = [t for t in _user_texts(history) if end in t]
                    if told:
                        break
                    await trio.sleep(0.05)
                assert len(told) == 1, "the lost job's end was not told to its session once"
                removed = await _process(at_b, "b5", action="remove", sessionId=sid)
                assert f"Removed session {sid}." in removed
                assert sid not in await _process(at_b, "b6", action="list")


async def test_deleting_the_session_through_b_kills_its_job_on_a(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN) as at_a,
                open_client(b.gw, scopes=ADMIN) as at_b,
            ):
                sid = await _start_on_a_then_move(a, at_a, ESCAPING, WORK)
                job = _job(a.gw, sid, WORK)
                while "child" not in job.output.text():
                    await job.changed.wait()
                assert job.pid is not None
                pids = [job.pid, int(job.output.text().split()[1])]
                assert f"{sid} running" in await _process(at_b, "b1", WORK, action="list")
                assert _owns(b, WORK)
                deleted = await at_b.request("sessions.delete", {"key": WORK})
                assert deleted["ok"] is True
                await assert_all_gone(pids)
                await wait_for(lambda: not job.running, "the job ended on A", timeout_s=10)
                assert job.exit_reason == "session-ended"
