"""A job's end collected through another node only once the poll's result is kept, on a cluster
of two gateways (this process, one PostgreSQL, one Redis), as OpenClaw 2026.9.6 acknowledges
a poll's result once its message is appended:

- a job on A ended, its completion queued on B (the session's owner); a poll through B
  returns the end, its result held in an `after_tool_call` hook on B, and the run is
  aborted: the completion stays queued on B and the job uncollected on A; a later poll
  through B whose result is kept collects it on A and takes the completion back on B.

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


async def test_an_abort_before_a_polls_result_is_kept_leaves_the_end_uncollected(
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
                sid = await _start_on_a_then_move(a, at_a, "read x; echo got $x")
                await _process(at_b, "b1", action="write", sessionId=sid, data="hi\n")
                queued = b.gw.supervisor.services.system_events
                await wait_for(
                    lambda: [e.context_key for e in queued.peek(KEY)] == [f"exec:{sid}"],
                    "the end on A queued on B",
                    timeout_s=10,
                )
                assert _owns(b)
                b.gw.supervisor.hooks.register(
                    "after_tool_call", hold_process_result, plugin_id="holder"
                )
                poll = tool_directive("process", action="poll", sessionId=sid)
                params = {"sessionKey": KEY, "message": poll, "idempotencyKey": "b2"}
                assert (await at_b.request("agent", params))["status"] == "accepted"
                await held.wait()  # the poll returned the end; its result is not kept yet
                await at_b.request("chat.abort", {"sessionKey": KEY, "runId": "b2"})
                waited = await at_b.request("agent.wait", {"runId": "b2", "timeoutMs": 10_000})
                assert waited["status"] == "timeout", waited  # an aborted end
                # A round trip to A after the abort: a "collect" notice, had B sent one,
                # would have reached A before this ask.
                assert "got hi" in await _process(at_b, "b3", action="log", sessionId=sid)
                assert [e.context_key for e in queued.peek(KEY)] == [f"exec:{sid}"]
                assert not _job(a.gw, sid).collected
                polled = await _process(at_b, "b4", action="poll", sessionId=sid)
                assert "Process exited with code 0." in polled
                assert not queued.has(KEY)
                await wait_for(lambda: _job(a.gw, sid).collected, "collected on A", timeout_s=10)
