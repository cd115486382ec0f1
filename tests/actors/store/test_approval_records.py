"""The approvals' rows in the store, on SQLite and on PostgreSQL: ended approvals written
without waiting and read back newest first by kind and page (those past 30 days pruned), and
the standing grants: minted (replacing the same operation's, the expired pruned), used only
while neither revoked nor expired, revoked once; two stores on one database (two nodes) see
one ledger, so a revoke through one stops a use through the other."""

from __future__ import annotations

from typing import Any

import trio

from actors.store import ApprovalRecords, open_store
from actors.store._approval_records import HISTORY_TTL_MS
from tests.actors._databases import Db, db, pg_url

__all__ = ["db", "pg_url"]  # the fixtures, used by name

NOW = 1_800_000_000_000
DAY = 86_400_000


def record(approval_id: str, kind: str, ended: int) -> dict[str, Any]:
    return {
        "id": approval_id,
        "kind": kind,
        "request": {"command": "ls"},
        "endedAtMs": ended,
        "decision": "allow-always",
    }


async def test_ended_approvals_are_kept_thirty_days_newest_first(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            records = ApprovalRecords(store)
            await records.open()
            records.record_nowait(record("old", "exec", NOW - HISTORY_TTL_MS - 11 * DAY))
            for n, kind in enumerate(("exec", "plugin", "exec")):
                records.record_nowait(record(f"a{n}", kind, NOW - 10 * DAY + n))
            await store.flush()
            since = NOW - HISTORY_TTL_MS
            every = await records.history(kind=None, since_ms=since, offset=0, limit=10)
            execs = await records.history(kind="exec", since_ms=since, offset=0, limit=10)
            page = await records.history(kind=None, since_ms=since, offset=1, limit=1)
            found = await records.find("a1")
            pruned = await records.find("old")
    assert [r["id"] for r in every] == ["a2", "a1", "a0"]
    assert [r["id"] for r in execs] == ["a2", "a0"]
    assert [r["id"] for r in page] == ["a1"]
    assert found == record("a1", "plugin", NOW - 10 * DAY + 1)
    assert pruned is None  # 30 days older than the newer ones written after it


async def mint(records: ApprovalRecords, binding: str, expires: int | None = None) -> str:
    return await records.mint(
        minted_by="exec:1",
        agent_id="main",
        cron_job_id="job",
        job_revision="sha256:r",
        binding=binding,
        now_ms=NOW,
        expires_at_ms=expires,
    )


async def test_a_grant_is_used_until_revoked_and_a_new_one_replaces_it(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            records = ApprovalRecords(store)
            first = await mint(records, "b1")
            used = [await records.consume(first, NOW + n) for n in (1, 2)]
            expiring = await mint(records, "b2", expires=NOW + 10)
            late = await records.consume(expiring, NOW + 10)
            outcomes = [
                await records.revoke(first, revoked_by="op", now_ms=NOW + 3),
                await records.revoke(first, revoked_by="other", now_ms=NOW + 4),
                await records.revoke("nope", revoked_by="op", now_ms=NOW + 5),
            ]
            after_revoke = await records.consume(first, NOW + 6)
            revoked = await records.lookup("main", "job", "b1")
            second = await mint(records, "b1")
            current = await records.lookup("main", "job", "b1")
            ledger = await records.grants(10)
    assert used == [True, True] and late is False and after_revoke is False
    assert outcomes == ["revoked", "already-revoked", "not-found"]
    assert revoked is not None
    assert (revoked.use_count, revoked.last_used_at_ms) == (2, NOW + 2)
    assert (revoked.revoked_at_ms, revoked.revoked_by) == (NOW + 3, "op")
    assert current is not None and current.grant_id == second != first
    assert current.revoked_at_ms is None and current.use_count == 0
    assert {g.grant_id for g in ledger} == {second, expiring}  # the revoked one replaced


async def test_a_revoke_through_one_node_stops_a_use_through_the_other(pg_url: str) -> None:
    from actors.store import PostgresBackend

    with trio.fail_after(30):
        async with (
            open_store(backend=PostgresBackend(pg_url)) as a,
            open_store(backend=PostgresBackend(pg_url)) as b,
        ):
            on_a, on_b = ApprovalRecords(a), ApprovalRecords(b)
            grant = await mint(on_a, "shared")
            seen = await on_b.lookup("main", "job", "shared")
            assert await on_b.consume(grant, NOW + 1)
            assert await on_a.revoke(grant, revoked_by="op", now_ms=NOW + 2) == "revoked"
            assert not await on_b.consume(grant, NOW + 3)
    assert seen is not None and seen.grant_id == grant


async def test_an_edited_jobs_grants_match_no_definition_again(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            records = ApprovalRecords(store)
            await mint(records, "v1")
            await records.void_job("job")
            await records.void_job("job")
            voided = await records.lookup("main", "job", "v1")
    assert voided is not None and voided.job_revision == "void:sha256:r"
