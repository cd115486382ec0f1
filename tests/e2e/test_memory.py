"""Memory that must come back: a session's actor, its transcript and its runs' writes are
freed by reference counting when the session is deleted, not left for the cycle collector
(which the gateway runs rarely: see `transports._startup.tune_gc`)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

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
