"""A background command's end is collected by `process poll` only once the poll's result is
kept, over a real gateway on loopback, as OpenClaw 2026.9.6 collects it (bash-tools:
`finishedPollResult` attaches `acknowledgeNotifyOnExit` to its result,
`acknowledgeInternalToolResult` runs it once the result's message is appended):

- a run aborted after its poll returned the job's end, before the poll's result was kept
  (held in an `after_tool_call` hook), leaves the job's queued completion in place and the
  job uncollected, so the model is still told of the end; a later poll whose result is kept
  collects it.

The model is the `local` one, driven by `[[tool:...]]` directives; a subagent's session (no
completion wakes it) keeps the completion queued where the test reads it. Waits are on
events and on the job's end.
"""

from __future__ import annotations

import re
from pathlib import Path

import trio

from runtime.tools import Job
from tests._procs import HeldResult, tool_directive, turn_text
from tests.conftest import local_config, open_client, running_gateway
from transports import Gateway

CHILD = "agent:main:subagent:abort-collect"


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


async def test_a_run_aborted_before_its_polls_result_is_kept_leaves_the_completion_queued(
    tmp_path: Path,
) -> None:
    """Before, the poll took the completion back as it returned: the abort that followed
    lost the end (no completion left to tell, the job marked collected)."""
    hold_process_result = HeldResult("process")
    held = hold_process_result.held

    async with (
        running_gateway(tmp_path, local_config()) as gw,
        open_client(gw, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            start = tool_directive("exec", command="echo built", background=True)
            sid = _session_id(await turn_text(client, CHILD, start, "c1"))
            job = _job(gw, CHILD, sid)
            await job.done.wait()
            assert _queued(gw, CHILD) == [f"exec:{sid}"]
            gw.supervisor.hooks.register("after_tool_call", hold_process_result, plugin_id="holder")
            poll = tool_directive("process", action="poll", sessionId=sid)
            params = {"sessionKey": CHILD, "message": poll, "idempotencyKey": "c2"}
            accepted = await client.request("agent", params)
            assert accepted["status"] == "accepted"
            await held.wait()  # the poll returned the end; its result is not kept yet
            await client.request("chat.abort", {"sessionKey": CHILD, "runId": "c2"})
            waited = await client.request("agent.wait", {"runId": "c2", "timeoutMs": 10_000})
            assert waited["status"] == "timeout", waited  # an aborted end
            assert _queued(gw, CHILD) == [f"exec:{sid}"] and not job.collected
            # A poll whose result is kept collects it.
            polled = await turn_text(client, CHILD, poll, "c3")
            assert "Process exited with code 0." in polled
            assert _queued(gw, CHILD) == [] and job.collected
