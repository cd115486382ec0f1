"""A background command's output is marked read by `process poll` only once the poll's result
is kept, over a real gateway on loopback, as OpenClaw 2026.9.6 marks it (its poll's tool
result acknowledgement, as for the job's completion):

- a run aborted after its poll returned the job's output, before the poll's result was kept
  (held in an `after_tool_call` hook), leaves that output unread: the next poll shows it
  again; once that poll's result is kept, the output is read (a third poll has none).

The model is the `local` one, driven by `[[tool:...]]` directives. Waits are on events and
on the job's output.
"""

from __future__ import annotations

import re
from pathlib import Path

import trio

from runtime.tools import Job
from tests._procs import HeldResult, tool_directive, turn_text
from tests.conftest import local_config, open_client, running_gateway
from transports import Gateway

KEY = "agent:main:subagent:abort-read"


def _session_id(text: str) -> str:
    found = re.search(r"session ([0-9a-z-]+)", text)
    assert found is not None, text
    return found.group(1)


def _job(gw: Gateway, sid: str) -> Job:
    processes = gw.supervisor.processes
    assert processes is not None
    job = processes.get(KEY, sid)
    assert job is not None
    return job


async def test_a_run_aborted_before_its_polls_result_is_kept_leaves_the_output_unread(
    tmp_path: Path,
) -> None:
    """Before, the poll marked the output read as it returned: the abort that followed lost
    it (the next poll said "(no new output)")."""
    hold_process_result = HeldResult("process")
    held = hold_process_result.held

    async with (
        running_gateway(tmp_path, local_config()) as gw,
        open_client(gw, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            start = tool_directive("exec", command="echo first-line; read x", background=True)
            sid = _session_id(await turn_text(client, KEY, start, "c1"))
            job = _job(gw, sid)
            while b"first-line" not in job.output.pending:
                await job.changed.wait()
            gw.supervisor.hooks.register("after_tool_call", hold_process_result, plugin_id="holder")
            poll = tool_directive("process", action="poll", sessionId=sid)
            params = {"sessionKey": KEY, "message": poll, "idempotencyKey": "c2"}
            accepted = await client.request("agent", params)
            assert accepted["status"] == "accepted"
            await held.wait()  # the poll returned the output; its result is not kept yet
            await client.request("chat.abort", {"sessionKey": KEY, "runId": "c2"})
            waited = await client.request("agent.wait", {"runId": "c2", "timeoutMs": 10_000})
            assert waited["status"] == "timeout", waited  # an aborted end
            assert b"first-line" in job.output.pending  # still unread
            # The next poll shows it again; its result is kept: read.
            polled = await turn_text(client, KEY, poll, "c3")
            assert "first-line" in polled and "Process still running." in polled
            assert not job.output.pending
            again = await turn_text(client, KEY, poll, "c4")
            assert "(no new output)" in again and "first-line" not in again
