"""`exec` with `pty: true` over a real gateway, driven by the `local` model's `[[tool:...]]`
directives: the command sees a terminal of OpenClaw's size, a background one takes the keys
`process send-keys`/`submit` type at it, and a session's deletion kills its terminal job's whole
tree (a `setsid` child included).

Process liveness is read from the OS (`os.kill(pid, 0)` and /proc) in a bounded loop: waiting
for the kernel, not for another task.
"""

from __future__ import annotations

import re
from pathlib import Path

import trio

from runtime.tools import Job
from tests._procs import assert_all_gone, running, tool_directive, turn_text
from tests.conftest import open_client, running_gateway
from transports import Gateway


def _job(gw: Gateway, key: str, text: str) -> Job:
    found = re.search(r"Command still running \(session ([0-9a-z-]+), pid (\d+)\)", text)
    assert found is not None, text
    processes = gw.supervisor.processes
    assert processes is not None
    job = processes.get(key, found.group(1))
    assert job is not None and job.tty is not None
    return job


async def _until_output(job: Job, needle: bytes) -> None:
    while needle not in job.output.buf:
        assert job.running, job.output.text()
        await job.changed.wait()


async def test_exec_with_pty_runs_on_a_terminal(tmp_path: Path) -> None:
    key = "agent:main:main"
    command = "[ -t 0 ] && [ -t 1 ] && echo tty; stty size"
    async with running_gateway(tmp_path) as gw, open_client(gw) as client:
        with trio.fail_after(30):
            text = await turn_text(
                client, key, tool_directive("exec", command=command, pty=True), "t1"
            )
    assert "tty\r\n30 120" in text
    assert "Warning" not in text


async def test_a_background_terminal_takes_keys_and_dies_with_its_session(tmp_path: Path) -> None:
    key = "agent:main:work"
    async with running_gateway(tmp_path) as gw, open_client(gw) as client:
        with trio.fail_after(30):
            reader = "echo ready; read x; echo got:$x"
            started = tool_directive("exec", command=reader, pty=True, background=True)
            job = _job(gw, key, await turn_text(client, key, started, "k1"))
            await _until_output(job, b"ready")
            keys = tool_directive("process", action="send-keys", sessionId=job.id, literal="hey")
            assert f"Sent 3 bytes to session {job.id}." in await turn_text(client, key, keys, "k2")
            submit = tool_directive("process", action="submit", sessionId=job.id)
            assert "(sent CR)" in await turn_text(client, key, submit, "k3")
            await job.done.wait()
            poll = tool_directive("process", action="poll", sessionId=job.id)
            assert "got:hey" in await turn_text(client, key, poll, "k4")

            escaping = "setsid sleep 300 & echo pid:$!; read x"
            started = tool_directive("exec", command=escaping, pty=True, background=True)
            job = _job(gw, key, await turn_text(client, key, started, "k5"))
            await _until_output(job, b"\r\n")
            found = re.search(r"pid:(\d+)", job.output.text())
            assert found is not None and job.pid is not None
            pids = [job.pid, int(found.group(1))]
            assert all(running(pid) for pid in pids)
            deleted = await client.request("sessions.delete", {"key": "work"})
            assert deleted["deleted"] is True
            await job.done.wait()
            await assert_all_gone(pids)
