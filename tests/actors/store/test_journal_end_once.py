"""A run's end row written again after its commit was reported failed (`Supervisor.
retry_journal`, through `end_unless_ended`) is written only when the run has no end row
yet: a group commit cut off after COMMIT was sent may have committed, and the journal holds
one end per run (the first). On SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Literal

import trio

from actors import open_store
from actors.store import WriteGroup, end_unless_ended
from actors.store._journal import JournalRow, RunIdentity, RunOutcome, ended_row
from tests.actors._databases import Db, db, pg_url
from tests.actors.store.test_journal import accepted

__all__ = ["db", "pg_url"]  # the fixtures, used by name

TIMEOUT = 30


def end(run_id: str, status: Literal["ok", "error"], at: int) -> JournalRow:
    return ended_row(
        RunIdentity(run_id, "agent", "agent:main:j", "sid", "main", 1),
        ended_at=at,
        outcome=RunOutcome(status=status, error=None if status == "ok" else "not stored"),
    )


async def test_an_end_written_again_is_written_once(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            for run_id in ("committed", "lost"):
                await store.commit_durable(WriteGroup(run=accepted(run_id)))
            # "committed": its end went through although its commit was reported failed
            await store.commit_durable(WriteGroup(run=end("committed", "ok", 10)))
            for run_id in ("committed", "lost"):
                retry = end_unless_ended(end(run_id, "error", 20))
                await store.commit_durable(WriteGroup(calls=(retry,)))
            # the same id accepted again (a new acceptance): its end is written
            await store.commit_durable(WriteGroup(run=accepted("committed", order=1)))
            again = end_unless_ended(end("committed", "error", 30))
            await store.commit_durable(WriteGroup(calls=(again,)))
    rows = await trio.to_thread.run_sync(db.query, "SELECT run_id, ended_at FROM runs ORDER BY id")
    assert rows == [
        ("committed", None),
        ("lost", None),
        ("committed", 10),
        ("lost", 20),
        ("committed", None),
        ("committed", 30),
    ]
