"""Background commands over a real gateway, driven by the `local` model's `[[tool:...]]`
directives: `exec` hands back a session id, `process` polls, writes and reads its log, its end
wakes the session with OpenClaw's completion event, and no process outlives a run's abort, its
session's deletion, the gateway's shutdown or its crash (a `setsid` grandchild included).

Process liveness is read from the OS (`os.kill(pid, 0)` and /proc) in a bounded loop: waiting
for the kernel, not for another task.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import trio
import trio.testing

from runtime.tools import Job
from tests._procs import assert_all_gone, running, tool_directive, turn_text
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_crash_recovery import client, gateway_process, kill9, write_config
from tests.e2e.test_sessions_chat import Watch
from transports import Gateway

# The job prints its setsid grandchild's pid, then waits: a tree a group kill cannot reach.
ESCAPING = "setsid sleep 300 & echo $!; sleep 300"


def _session_id(text: str) -> str:
    found = re.search(r"Command still running \(session ([0-9a-z-]+), pid (\d+)\)", text)
    assert found is not None, text
    return found.group(1)


async def _job_pids(gw: Gateway, key: str, sid: str) -> list[int]:
    """The job's keeper and the grandchild pid it printed (once it has printed it)."""
    processes = gw.supervisor.processes
    assert processes is not None
    job = processes.get(key, sid)
    assert job is not None and job.pid is not None
    while not job.output.text().strip():
        await job.changed.wait()
    return [job.pid, int(job.output.text().split()[0])]


def _job(gw: Gateway, key: str, sid: str) -> Job:
    processes = gw.supervisor.processes
    assert processes is not None
    job = processes.get(key, sid)
    assert job is not None
    return job


async def test_a_background_job_is_polled_fed_and_its_end_wakes_the_session(
    tmp_path: Path,
) -> None:
    w = Watch()
    key = "agent:main:main"
    async with (
        running_gateway(tmp_path) as gw,
        open_client(gw, on_event=w, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            command = "echo started; read x; echo got $x; echo done"
            text = await turn_text(
                client, key, tool_directive("exec", command=command, background=True), "r1"
            )
            sid = _session_id(text)
            result = next(
                p["data"]
                for (e, p, _s) in w.events
                if e == "agent" and p["runId"] == "r1" and p["data"].get("phase") == "result"
            )
            assert result["result"]["details"]["status"] == "running"
            assert result["result"]["details"]["sessionId"] == sid
            poll = tool_directive("process", action="poll", sessionId=sid, timeout=5000)
            assert "started" in await turn_text(client, key, poll, "r2")
            listed = await turn_text(client, key, tool_directive("process", action="list"), "r3")
            assert f"{sid} running" in listed
            write = tool_directive("process", action="write", sessionId=sid, data="hi\n")
            assert f"Wrote 3 bytes to session {sid}." in await turn_text(client, key, write, "r4")
            # The job ends by itself: its end is queued as a system event of its session and
            # a heartbeat wake tells it there (OpenClaw's exec-event wake).
            wake = await w.until(
                lambda e, p: (
                    e == "agent"
                    and p["runId"].startswith("heartbeat-")
                    and p["sessionKey"] == key
                    and p["stream"] == "lifecycle"
                )
            )
            await w.ended(wake["runId"])
            history = await client.request("chat.history", {"sessionKey": key})
            log = tool_directive("process", action="log", sessionId=sid, offset=1, limit=1)
            assert "process: got hi" in await turn_text(client, key, log, "r5")
    users = [
        m["content"][0]["text"] if isinstance(m["content"], list) else m["content"]
        for m in history["messages"]
        if m["role"] == "user"
    ]
    event = f"Exec completed ({sid[:8]}, code 0) :: started got hi done"
    assert users[-1].startswith("An async command you ran earlier has completed.")
    assert event in users[-1]


async def test_abort_kills_the_runs_jobs_and_their_setsid_grandchildren(tmp_path: Path) -> None:
    w = Watch()
    key = "agent:main:main"
    async with (
        running_gateway(tmp_path) as gw,
        open_client(gw, on_event=w, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            message = tool_directive("exec", command=ESCAPING, background=True) + tool_directive(
                "exec", command=ESCAPING, yieldMs=60000
            )
            await client.request(
                "agent", {"sessionKey": key, "message": message, "idempotencyKey": "victim"}
            )

            # The second exec runs in the foreground: the run is in it once it printed.
            def tool_phase(phase: str, count: int = 1) -> Any:
                def seen(e: str, p: Any) -> bool:
                    calls = [
                        q["data"]
                        for (f, q, _s) in w.events
                        if f == "agent"
                        and q["runId"] == "victim"
                        and q["stream"] == "tool"
                        and q["data"]["phase"] == phase
                    ]
                    return len(calls) >= count

                return seen

            await w.until(tool_phase("start", 2))
            second = [
                p["data"]["toolCallId"]
                for (e, p, _s) in w.events
                if e == "agent"
                and p["runId"] == "victim"
                and p["stream"] == "tool"
                and p["data"]["phase"] == "start"
            ][1]
            await w.until(
                lambda e, p: (
                    e == "agent"
                    and p["runId"] == "victim"
                    and p["data"].get("phase") == "update"
                    and p["data"].get("toolCallId") == second
                )
            )
            processes = gw.supervisor.processes
            assert processes is not None
            [background] = processes.list(key)
            pids = await _job_pids(gw, key, background.id)
            foreground = next(j for j in processes._jobs.values() if not j.backgrounded)
            assert foreground.pid is not None
            pids.append(foreground.pid)
            pids.append(int(foreground.output.text().split()[0]))
            assert all(running(pid) for pid in pids)
            await client.request("chat.abort", {"sessionKey": key, "runId": "victim"})
            end = await w.ended("victim")
            assert end["data"]["aborted"] is True
            await assert_all_gone(pids)
            assert background.exit_reason == "aborted"
            assert not any(
                p["runId"].startswith("heartbeat-") for (e, p, _s) in w.events if e == "agent"
            )


async def test_deleting_a_session_kills_its_jobs(tmp_path: Path) -> None:
    key = "agent:main:work"
    async with running_gateway(tmp_path) as gw, open_client(gw) as client:
        with trio.fail_after(30):
            sid = _session_id(
                await turn_text(
                    client, key, tool_directive("exec", command=ESCAPING, background=True), "w1"
                )
            )
            pids = await _job_pids(gw, key, sid)
            job = _job(gw, key, sid)
            deleted = await client.request("sessions.delete", {"key": "work"})
            assert deleted["deleted"] is True
            await job.done.wait()
            await assert_all_gone(pids)
            processes = gw.supervisor.processes
            assert processes is not None and processes.list(key) == []


async def test_gateway_shutdown_kills_every_job(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, local_config()) as gw, open_client(gw) as client:
            pids: list[int] = []
            for n, key in enumerate(("agent:main:a", "agent:main:b")):
                text = await turn_text(
                    client, key, tool_directive("exec", command=ESCAPING, background=True), f"s{n}"
                )
                pids += await _job_pids(gw, key, _session_id(text))
            assert all(running(pid) for pid in pids)
        await assert_all_gone(pids)
        assert list((tmp_path / "state" / "processes").iterdir()) == []


async def test_nothing_a_crashed_gateway_started_runs_after_its_restart(tmp_path: Path) -> None:
    """Killed with SIGKILL, the gateway's keepers kill their trees (they die with it); a
    keeper killed too leaves its tree behind, which the next start kills (its record)."""
    state = tmp_path / "state"
    config = write_config(state)
    with trio.fail_after(60):
        async with gateway_process(state, config) as (url, proc):
            async with client(url) as (c, _frames):
                keepers, orphans = [], []
                for n in range(2):
                    key = f"agent:main:c{n}"
                    text = await turn_text(
                        c, key, tool_directive("exec", command=ESCAPING, background=True), f"c{n}"
                    )
                    keeper = re.search(r"pid (\d+)\)", text)
                    assert keeper is not None
                    keepers.append(int(keeper.group(1)))
                    poll = tool_directive(
                        "process", action="poll", sessionId=_session_id(text), timeout=5000
                    )
                    printed = re.search(r"process: (\d+)", await turn_text(c, key, poll, f"p{n}"))
                    assert printed is not None
                    orphans.append(int(printed.group(1)))
            os.kill(keepers[0], signal.SIGKILL)  # no keeper left to clean up after job 0
            await kill9(proc)
        await assert_all_gone([orphans[1]])  # job 1's keeper killed its tree
        assert running(orphans[0])
        async with gateway_process(state, config):
            await assert_all_gone([orphans[0]])


async def test_a_reset_forgets_ended_jobs_and_keeps_running_ones(tmp_path: Path) -> None:
    key = "agent:main:work"
    config = local_config(tools__exec__notifyOnExit=False)
    async with running_gateway(tmp_path, config) as gw, open_client(gw) as client:
        with trio.fail_after(30):
            ended = _session_id(
                await turn_text(
                    client, key, tool_directive("exec", command="echo hi", background=True), "e1"
                )
            )
            await _job(gw, key, ended).done.wait()
            running = _session_id(
                await turn_text(
                    client, key, tool_directive("exec", command="sleep 300", background=True), "e2"
                )
            )
            await client.request("sessions.reset", {"key": "work"})
            listed = await turn_text(client, key, tool_directive("process", action="list"), "e3")
            assert f"{running} running" in listed
            assert ended not in listed


async def test_the_tools_catalog_lists_process_as_available(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw, open_client(gw) as client:
        with trio.fail_after(30):
            catalog = await client.request("tools.catalog", {"agentId": "main"})
    runtime = {t["id"]: t for g in catalog["groups"] if g["id"] == "runtime" for t in g["tools"]}
    assert "tags" not in runtime["exec"] and "tags" not in runtime["process"]


async def test_a_completion_waits_for_its_busy_session(tmp_path: Path) -> None:
    w = Watch()
    key = "agent:main:main"
    async with (
        running_gateway(tmp_path) as gw,
        open_client(gw, on_event=w, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            message = tool_directive("exec", command="echo built", background=True) + "[[stall]]"
            await client.request(
                "agent", {"sessionKey": key, "message": message, "idempotencyKey": "busy"}
            )
            await w.started("busy", "tool")
            processes = gw.supervisor.processes
            assert processes is not None
            await w.until(lambda e, p: e == "agent" and p["data"].get("phase") == "result")
            [job] = processes.list(key)  # exec returned: its job is registered
            await job.done.wait()
            await trio.testing.wait_all_tasks_blocked()
            # The wake finds its session busy: a `requests-in-flight` skip, tried again.
            skipped = await w.until(lambda e, p: e == "heartbeat")
            assert (skipped["status"], skipped["reason"]) == ("skipped", "requests-in-flight")
            assert not any(
                p["runId"].startswith("heartbeat-") for (e, p, _s) in w.events if e == "agent"
            )
            await client.request("chat.abort", {"sessionKey": key, "runId": "busy"})
            await w.ended("busy")
            wake = await w.until(lambda e, p: e == "agent" and p["runId"].startswith("heartbeat-"))
            await w.ended(wake["runId"])
    ends = [
        n
        for n, (e, p, _s) in enumerate(w.events)
        if e == "agent" and p["stream"] == "lifecycle" and p["data"].get("phase") == "end"
    ]
    busy_end = next(n for n in ends if w.events[n][1]["runId"] == "busy")
    wake_start = next(
        n
        for n, (e, p, _s) in enumerate(w.events)
        if e == "agent" and p["runId"].startswith("heartbeat-")
    )
    assert busy_end < wake_start
