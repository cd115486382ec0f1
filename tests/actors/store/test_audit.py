"""The audit log's writes on both backends (`Store.add_audit`): the audit rows of a batch
go in together as it ends, without cutting its other multi-row inserts; a failing audit
insert loses the batch's audit rows alone; the log stays within its bounds."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio
import trio.testing

from actors import AuditFilter, AuditTable, open_store
from actors.store import Store, WriteGroup, _audit
from runtime.sessions import new_session_row
from tests.actors._databases import Db, db, pg_url

__all__ = ["db", "pg_url"]  # the fixtures, used by name

T0 = 1_767_225_600_000


def _rows(n: int, start_ms: int, run: str = "r") -> list[tuple[Any, ...]]:
    return [
        (
            f"{start_ms + i}:{run}{i}:1:agent.run.started",
            1,
            start_ms + i,
            "agent_run",
            "agent.run.started",
            "started",
            None,
            "agent",
            "main",
            "main",
            f"agent:main:{run}",
            "sid",
            f"{run}{i}",
            "sha256:00" if i % 2 else None,
            "read" if i % 2 else None,
        )
        for i in range(n)
    ]


def _trace(conn: Any, to: Any) -> None:
    conn.set_trace_callback(to)  # a sqlite3.Connection's


async def _one_batch(store: Store, submit: list[Any]) -> list[object]:
    """Run the async calls `submit` so that the writer commits them in one batch: it is
    held in a `Store.write` of its own while they are enqueued. Their results, in order."""
    gate = threading.Event()
    results: list[object] = [None] * len(submit)

    async def one(i: int) -> None:
        results[i] = await submit[i]()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(store.write, lambda conn: gate.wait(10))
        await trio.testing.wait_all_tasks_blocked()
        for i in range(len(submit)):
            nursery.start_soon(one, i)
        await trio.testing.wait_all_tasks_blocked()
        gate.set()
    return results


async def test_a_batchs_audit_rows_go_in_together_and_beside_its_runs_writes(db: Db) -> None:
    """Two recorders' writes between four sessions' groups, committed in one batch: every
    row of each is there, the audit rows in the order each write gave them; on SQLite the
    batch's session rows and audit rows are one multi-row statement each (an audit write
    does not cut the gathered inserts, as a `Store.write` between them does)."""
    statements: list[str] = []
    with trio.fail_after(20):
        async with open_store(backend=db.backend()) as store:
            if db.kind == "sqlite":  # the writer's connection, as a `Store.write` gets it
                await store.write(lambda conn: _trace(conn, statements.append))

            def group(i: int) -> Any:
                row = new_session_row(f"agent:main:g{i}", now_ms=T0, session_id=f"sid-g{i}")
                return lambda: store.commit_durable(WriteGroup(row=row))

            first, second = _rows(3, T0, "a"), _rows(5, T0 + 100, "b")
            results = await _one_batch(
                store,
                [
                    group(0),
                    lambda: store.add_audit(first, T0 + 1_000),
                    group(1),
                    lambda: store.add_audit(second, T0 + 1_000),
                    group(2),
                    group(3),
                ],
            )
            if db.kind == "sqlite":
                await store.write(lambda conn: _trace(conn, None))
            page = await AuditTable(store).list(AuditFilter(limit=50), T0 + 1_000)
            sessions = await store.list_sessions()
    assert results[1] is True and results[3] is True
    assert sorted(r.key for r in sessions) == [f"agent:main:g{i}" for i in range(4)]
    listed = [(e["runId"], e.get("toolName")) for e in page.events][::-1]
    assert [x for x in listed if x[0].startswith("a")] == [
        ("a0", None),
        ("a1", "read"),
        ("a2", None),
    ]
    assert [x for x in listed if x[0].startswith("b")] == [
        ("b0", None),
        ("b1", "read"),
        ("b2", None),
        ("b3", "read"),
        ("b4", None),
    ]
    assert len({e["eventId"] for e in page.events}) == 8
    if db.kind == "sqlite":
        inserts = [s for s in statements if s.startswith("INSERT INTO")]
        assert sum(s.startswith("INSERT INTO sessions") for s in inserts) == 1
        assert sum(s.startswith("INSERT INTO audit_events") for s in inserts) == 1


async def test_a_failing_audit_insert_loses_the_batchs_audit_rows_alone(db: Db) -> None:
    with trio.fail_after(20):
        async with open_store(backend=db.backend()) as store:
            row = new_session_row("agent:main:k", now_ms=T0, session_id="sid-k")
            results = await _one_batch(
                store,
                [
                    lambda: store.add_audit(_rows(2, T0), T0),
                    lambda: store.add_audit([("x",)], T0),  # too few columns: refused
                    lambda: store.commit_durable(WriteGroup(row=row)),
                ],
            )
            assert results[:2] == [False, False]
            assert await store.add_audit(_rows(1, T0 + 5, "later"), T0) is True
            page = await AuditTable(store).list(AuditFilter(), T0)
            kept = await store.get_session("agent:main:k")
    assert kept is not None
    assert [e["runId"] for e in page.events] == ["later0"]


async def test_the_log_stays_within_its_rows_and_age(db: Db, monkeypatch: Any) -> None:
    monkeypatch.setattr(_audit, "MAX_ROWS", 50)
    monkeypatch.setattr(_audit, "PRUNE_BATCH", 8)
    now = 10 * _audit.RETENTION_MS
    with trio.fail_after(20):
        async with open_store(backend=db.backend()) as store:
            assert await store.add_audit(_rows(5, now - _audit.RETENTION_MS - 100, "old"), now)
            assert await store.add_audit(_rows(60, now - 1000), now)
            assert await store.add_audit(_rows(60, now - 1000)[-10:], now)  # kept once
            page = await AuditTable(store).list(AuditFilter(limit=500), now)
            (count,) = (await _count(store))[0]
    assert len(page.events) == count == 42  # beyond 50: down to 50 - 8; the old ones expired
    assert {e["runId"] for e in page.events} == {f"r{i}" for i in range(18, 60)}


async def _count(store: Store) -> list[Any]:
    return await store.read(lambda c: c.execute("SELECT COUNT(*) FROM audit_events").fetchall())


@pytest.mark.parametrize("n", [1, 255, 257, 700])
async def test_any_number_of_rows_goes_in_on_sqlite(tmp_path: Any, n: int) -> None:
    """SQLite's statements come in power-of-two sizes of up to 256 rows."""
    with trio.fail_after(20):
        async with open_store(tmp_path / "s.db") as store:
            assert await store.add_audit(_rows(n, T0), T0)
            page = await AuditTable(store).list(AuditFilter(limit=500), T0)
            (count,) = (await _count(store))[0]
    assert count == n and len(page.events) == min(n, 500)
