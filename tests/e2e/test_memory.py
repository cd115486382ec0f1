"""Memory that must come back: a session's actor, its transcript and its runs' writes are
freed by reference counting when the session is deleted, and a run's state (its request,
tools, progress, the model's error) when it ends, not left for the cycle collector (which
the gateway runs rarely: see `transports.server._startup.tune_gc`). A cycle per run held each
run's whole context until a full collection: under steady load the soak read tens of
MiB/min of growth from it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio

from tests.conftest import open_client, running_gateway


async def test_a_deleted_session_leaves_no_reference_cycle_behind(tmp_path: Path) -> None:
    key = "agent:main:mem"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw) as client:
                for i in range(3):
                    final = await client.request(
                        "agent",
                        {
                            "message": f"turn {i} " + "x" * 10_000,
                            "idempotencyKey": f"mem-{i}",
                            "sessionKey": key,
                        },
                        expect_final=True,
                    )
                    assert final["status"] == "ok"
                actor = gw.supervisor.peek_session(key)
                assert actor is not None
                ref = weakref.ref(actor)
                del actor
                gc.disable()  # only reference counting may free it
                try:
                    await client.request("sessions.delete", {"key": key})
                    await trio.testing.wait_all_tasks_blocked()
                    assert ref() is None, [type(r).__name__ for r in gc.get_referrers(ref())]
                finally:
                    gc.enable()


async def _cycles_left_by(step: Callable[[int], Awaitable[None]]) -> list[str]:
    """The gateway's objects a collection finds in cycles after `step(1..3)` (`step(0)`
    first builds what is built once: caches, the lane)."""
    await step(0)
    await trio.testing.wait_all_tasks_blocked()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage
    try:
        for i in range(1, 4):
            await step(i)
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        return [
            type(o).__qualname__
            for o in gc.garbage
            if type(o).__module__.startswith(("actors", "runtime", "transports"))
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize(
    "message",
    [
        "[[deltas:5]] a plain reply",
        "[[tool:session_status {}]] a tool turn",
        "[[fail:server]] the model fails",
        "[[overflow:100000:2]] the context overflows after two deltas",
    ],
)
async def test_a_finished_run_leaves_no_reference_cycle_behind(
    tmp_path: Path, message: str
) -> None:
    async with running_gateway(tmp_path) as gw, open_client(gw) as client:
        with trio.fail_after(20):

            async def run(i: int) -> None:
                params = {"message": message, "idempotencyKey": f"cyc-{i}"}
                await client.request("agent", {**params, "sessionKey": f"agent:main:c{i}"})
                await client.request("agent.wait", {"runId": f"cyc-{i}", "timeoutMs": 10_000})

            assert await _cycles_left_by(run) == []


async def test_chat_runs_aborts_and_resets_leave_no_reference_cycle_behind(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw, open_client(gw) as client:
        with trio.fail_after(20):

            async def session(i: int) -> None:
                key = f"agent:main:chat{i}"
                sent = {"sessionKey": key, "message": "[[deltas:3]] hi", "idempotencyKey": f"c{i}"}
                await client.request("chat.send", sent)
                await client.request("agent.wait", {"runId": f"c{i}", "timeoutMs": 10_000})
                stalled = {"sessionKey": key, "message": "[[stall]] x", "idempotencyKey": f"s{i}"}
                await client.request("agent", stalled)
                await client.request("chat.abort", {"sessionKey": key})
                await client.request("agent.wait", {"runId": f"s{i}", "timeoutMs": 10_000})
                await client.request("sessions.reset", {"key": key})

            assert await _cycles_left_by(session) == []
