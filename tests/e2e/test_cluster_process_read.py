"""A job's output read through another node is marked read only once the poll's result is
kept, on a cluster of two gateways (this process, one PostgreSQL, one Redis), as OpenClaw
2026.9.6 acknowledges a poll's result once its message is appended:

- a job on A printed a line; a poll through B returns it, its result held in an
  `after_tool_call` hook on B, and the run is aborted: the line stays unread on A, and the
  next poll through B shows it again; once that result is kept, B tells A up to where it
  was read (a `"read"` notice) and a third poll has no new output;
- the job's last output, returned with its end by a poll through B, is marked read on A
  with its collection (the `"collect"` notice's `upto`).

Skipped, saying why, when Redis or PostgreSQL cannot be reached.
"""

from __future__ import annotations

from pathlib import Path

import trio

from tests._procs import HeldResult, tool_directive
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, two_nodes, wait_for
from tests.e2e.test_cluster_processes import KEY, _job, _owns, _process, _start_on_a_then_move

__all__ = ["pg_url"]  # the fixture, used by name


async def test_an_abort_before_a_polls_result_is_kept_leaves_the_output_unread_on_its_node(
    tmp_path: Path, pg_url: str
) -> None:
    hold_process_result = HeldResult("process")
    held = hold_process_result.held

    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN) as at_a,
                open_client(b.gw, scopes=ADMIN) as at_b,
            ):
                await at_b.request("set-heartbeats", {"enabled": False})
                command = "echo first-line; read x; echo got $x"
                sid = await _start_on_a_then_move(a, at_a, command)
                job = _job(a.gw, sid)
                while b"first-line" not in job.output.pending:
                    await job.changed.wait()
                b.gw.supervisor.hooks.register(
                    "after_tool_call", hold_process_result, plugin_id="holder"
                )
                poll = tool_directive("process", action="poll", sessionId=sid)
                params = {"sessionKey": KEY, "message": poll, "idempotencyKey": "b1"}
                assert (await at_b.request("agent", params))["status"] == "accepted"
                await held.wait()  # the poll returned the line; its result is not kept yet
                assert _owns(b)
                await at_b.request("chat.abort", {"sessionKey": KEY, "runId": "b1"})
                waited = await at_b.request("agent.wait", {"runId": "b1", "timeoutMs": 10_000})
                assert waited["status"] == "timeout", waited  # an aborted end
                # A round trip to A after the abort: a "read" notice, had B sent one, would
                # have reached A before this ask.
                assert "first-line" in await _process(at_b, "b2", action="log", sessionId=sid)
                assert b"first-line" in job.output.pending
                polled = await _process(at_b, "b3", action="poll", sessionId=sid)
                assert "first-line" in polled and "Process still running." in polled
                await wait_for(lambda: not job.output.pending, "read on A", timeout_s=10)
                again = await _process(at_b, "b4", action="poll", sessionId=sid)
                assert "(no new output)" in again and "first-line" not in again
                # The end, with its last output: read and collected on A once kept.
                await _process(at_b, "b5", action="write", sessionId=sid, data="hi\n")
                await job.done.wait()
                ended = await _process(at_b, "b6", action="poll", sessionId=sid)
                assert "got hi" in ended and "Process exited with code 0." in ended
                await wait_for(
                    lambda: job.collected and not job.output.pending,
                    "collected and read on A",
                    timeout_s=10,
                )
