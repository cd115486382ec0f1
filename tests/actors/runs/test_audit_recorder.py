"""The audit recorder's queue: events wait in order while the writer is busy or absent, a
full queue drops what comes (counted, the run goes on), and the writer takes what waits in
one batch per store commit."""

from __future__ import annotations

import time
from pathlib import Path

import trio

from actors import open_store
from actors.runs import AuditRecorder
from actors.store import AuditFilter, AuditTable


def _start(rec: AuditRecorder, t: int, run: str) -> None:
    rec.record(run, 1, t, "lifecycle", {"phase": "start", "startedAt": t}, "main", "k", "s")


async def test_a_full_queue_drops_and_counts_and_the_rest_go_in_order(tmp_path: Path) -> None:
    t = int(time.time() * 1000)
    with trio.fail_after(10):
        async with open_store(tmp_path / "s.db") as store:
            rec = AuditRecorder(store, lambda: True, queue_max=2)
            for i in range(3):  # no writer yet: the third finds the queue full
                _start(rec, t + i, f"r{i}")
            stats = rec.statistics()
            assert (stats.dropped, stats.pending, stats.recorded) == (1, 2, 0)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(rec.run)
                await rec.flush()
                for i in range(3, 6):  # the writer waits for them: woken, one batch or more
                    _start(rec, t + i, f"r{i}")
                await rec.flush()
                nursery.cancel_scope.cancel()
            page = await AuditTable(store).list(AuditFilter(), t + 10)
    assert [e["runId"] for e in page.events] == ["r5", "r4", "r3", "r1", "r0"]
    stats = rec.statistics()
    assert (stats.dropped, stats.pending, stats.recorded, stats.failed) == (1, 0, 5, 0)
