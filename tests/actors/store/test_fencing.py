"""Fencing tokens on the store's durable writes in a cluster, on SQLite and PostgreSQL:
a write carrying a token older than the one the store holds for its session is refused
(`FencedOut`, not applied) while the rest of its batch commits; `advance_fence` records a
new owner's token up front; the tokens survive reopening the store; and a session actor
whose lease moved on sees its run's commit refused and the run end `error`."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import msgspec
import psycopg
import pytest
import trio
import trio.testing

from actors import Fence, FencedOut, PostgresBackend, StoreError, open_store, open_supervisor
from actors.store import WriteGroup
from actors.store import _journal as journal
from actors.store._pg import _PRUNE_FENCES, FENCE_HORIZON_US
from runtime.llm._types import UserMessage
from runtime.model._generation import build_generation
from runtime.sessions._sessions import (
    MessageEntry,
    SessionRow,
    TranscriptBuilder,
    TranscriptEntry,
    new_session_row,
)
from tests.actors._databases import Db, db, pg_url
from tests.actors._helpers import Sink, submit
from tests.conftest import local_config

__all__ = ["db", "pg_url"]  # the fixtures, used by name

TIMEOUT = 30


def row(key: str, updated: int = 1, **fields: object) -> SessionRow:
    base = new_session_row(key, now_ms=updated, session_id=f"sid-{key}")
    return msgspec.structs.replace(base, **fields)


def messages(builder: TranscriptBuilder, *texts: str) -> list[TranscriptEntry]:
    return [builder.add_message(UserMessage(content=t, timestamp=1)) for t in texts]


def texts(entries: list[TranscriptEntry]) -> list[str]:
    out = []
    for e in entries:
        assert isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
        assert isinstance(e.message.content, str)
        out.append(e.message.content)
    return out


class Heard:
    """A commit callback that keeps what it heard."""

    def __init__(self) -> None:
        self.errors: list[StoreError | None] = []

    def __call__(self, error: StoreError | None) -> None:
        self.errors.append(error)


async def fences(db: Db) -> list[tuple[Any, ...]]:
    sql = "SELECT session_key, token FROM session_fences ORDER BY session_key"
    return await trio.to_thread.run_sync(db.query, sql)


async def test_an_older_token_is_refused_and_the_rest_of_its_batch_commits(db: Db) -> None:
    a, b = "agent:main:a", "agent:main:b"
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.put_session_durable(row(a, 1, label="five"), fence=Fence(a, 5))
            stale, other, plain = Heard(), Heard(), Heard()
            # One batch: the writer is parked, so these four go in one transaction.
            store.put_session_nowait(row(a, 2, label="three"), fence=Fence(a, 3), on_commit=stale)
            store.put_session_nowait(row(b, 3, label="b"), fence=Fence(b, 1), on_commit=other)
            store.commit_nowait(WriteGroup(row=row("agent:main:c", 4), on_commit=plain))  # unfenced
            await store.flush()  # a refused write is not a failed one
            assert len(stale.errors) == 1
            refused = stale.errors[0]
            assert isinstance(refused, FencedOut)
            assert (refused.key, refused.token, refused.current) == (a, 3, 5)
            assert a in str(refused) and "3" in str(refused) and "5" in str(refused)
            assert other.errors == [None] and plain.errors == [None]
            got = await store.get_session(a)
            assert got is not None and got.label == "five"
            assert [r.key for r in await store.list_sessions()] == [
                "agent:main:c",
                b,
                a,
            ]
            stats = store.statistics()
            assert stats.fenced_out == 1 and stats.failed_commits == 0 and not stats.failing
            # The durable twin raises it; entries with an old token are not appended.
            with pytest.raises(FencedOut, match="lease moved to another node"):
                await store.put_session_durable(row(a, 5), fence=Fence(a, 4))
            builder = TranscriptBuilder()
            await store.append_entries("sid-a", messages(builder, "new"), fence=Fence(a, 5))
            await store.append_entries("sid-a", messages(builder, "old"), fence=Fence(a, 2))
            assert texts(await store.load_entries("sid-a")) == ["new"]
        assert await fences(db) == [(a, 5), (b, 1)]


async def test_advance_fence_refuses_older_tokens_before_any_write(db: Db) -> None:
    key = "agent:main:s"
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.advance_fence(Fence(key, 7))
            with pytest.raises(FencedOut):
                await store.commit_durable(WriteGroup(row=row(key, 1), fence=Fence(key, 5)))
            assert await store.get_session(key) is None
            await store.commit_durable(
                WriteGroup(row=row(key, 2, label="seven"), fence=Fence(key, 7))
            )
            await store.put_session_durable(row(key, 3, label="eight"), fence=Fence(key, 8))
            got = await store.get_session(key)
            assert got is not None and got.label == "eight"
            with pytest.raises(FencedOut):  # an owner whose own lease is stale
                await store.advance_fence(Fence(key, 6))
        assert await fences(db) == [(key, 8)]


async def test_a_refused_group_applies_none_of_its_writes(db: Db) -> None:
    key = "agent:main:g"
    builder = TranscriptBuilder()
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.advance_fence(Fence(key, 2))
            heard = Heard()
            store.commit_nowait(
                WriteGroup(
                    row=row(key, 1),
                    session_id="sid-g",
                    entries=messages(builder, "one", "two"),
                    on_commit=heard,
                    fence=Fence(key, 1),
                ),
            )
            await store.flush()
            assert len(heard.errors) == 1 and isinstance(heard.errors[0], FencedOut)
            assert await store.get_session(key) is None
            assert await store.load_entries("sid-g") == []
            assert store.statistics().rows_written == 0
            assert store.statistics().entries_written == 0


async def test_fencing_tokens_survive_reopening_the_store(db: Db) -> None:
    key = "agent:main:d"
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.put_session_durable(row(key, 1), fence=Fence(key, 9))
        async with open_store(backend=db.backend()) as store:
            with pytest.raises(FencedOut):
                await store.put_session_durable(row(key, 2, label="late"), fence=Fence(key, 8))
            got = await store.get_session(key)
            assert got is not None and got.label is None


async def test_unfenced_writes_leave_no_fencing_rows(db: Db) -> None:
    builder = TranscriptBuilder()
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.put_session_durable(row("agent:main:x"))
            await store.commit_durable(
                WriteGroup(
                    row=row("agent:main:y"), session_id="sid-y", entries=messages(builder, "hi")
                )
            )
            await store.append_entries("sid-x", messages(builder, "there"))
            await store.flush()
            assert store.statistics().fenced_out == 0
        assert await fences(db) == []


async def test_a_version_1_sqlite_file_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = Db("sqlite", path=path)
    with trio.fail_after(TIMEOUT):
        async with open_store(path):
            pass

        def downgrade() -> None:
            db.query("DROP TABLE session_fences")
            db.query("UPDATE meta SET value = '1' WHERE key = 'schema_version'")

        await trio.to_thread.run_sync(downgrade)
        async with open_store(path) as store:
            await store.advance_fence(Fence("agent:main:m", 3))
        version = await trio.to_thread.run_sync(
            db.query, "SELECT value FROM meta WHERE key = 'schema_version'"
        )
        assert version == [("2",)]
        assert await fences(db) == [("agent:main:m", 3)]


# --- a session actor whose lease moved on -------------------------------------------------


async def test_a_run_of_an_actor_fenced_out_ends_error_and_its_writes_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    gen = build_generation(local_config(), 1)
    key = "agent:main:f"
    with trio.fail_after(TIMEOUT):
        async with (
            open_store(tmp_path / "db.sqlite") as store,
            open_supervisor(generation=gen, store=store, workspace_root=tmp_path / "ws") as sup,
        ):
            sink = Sink()
            sup.hub.attach(sink, scoped=False, can_read=True)
            actor = await sup.session(key, "main")
            actor.fence = Fence(key, 1)
            await store.advance_fence(Fence(key, 1))
            first = await submit(sup, "f", "r1", "hello")
            await first.done.wait()
            assert first.status == "ok"
            await store.advance_fence(Fence(key, 2))  # another node took the lease
            second = await submit(sup, "f", "r2", "are you there")
            await second.done.wait()
            assert second.status == "error"
            assert "lease moved to another node" in (second.error or "")
            ends = [e["data"] for e in sink.agent("r2") if e["data"].get("phase") == "error"]
            assert len(ends) == 1 and "lease moved" in ends[0]["error"]
            assert store.statistics().fenced_out == 1
            # No further write of the actor reaches the store.
            third = await submit(sup, "f", "r3", "again")
            await third.done.wait()
            assert third.status == "error" and "lease moved" in (third.error or "")
            assert third.final is not None and third.final["meta"]["stored"] is False
            with pytest.raises(FencedOut):
                await actor.save_row(label="x")
            await store.flush()
            assert store.statistics().fenced_out == 1  # refused once, then never sent
            stored = await store.get_session(key)
            assert stored is not None and stored.label is None
    warned = [r.getMessage() for r in caplog.records if "no further write" in r.getMessage()]
    assert len(warned) == 1  # once for the session, naming its key and both tokens
    assert key in warned[0] and "token 1" in warned[0] and "token 2" in warned[0]


async def test_the_supervisors_backlog_keeps_each_writes_fence(tmp_path: Path) -> None:
    gen = build_generation(local_config(), 1)
    key = "agent:main:q"
    builder = TranscriptBuilder()
    with trio.fail_after(TIMEOUT):
        async with (
            open_store(tmp_path / "db.sqlite", queue_max=0) as store,
            open_supervisor(generation=gen, store=store, workspace_root=tmp_path / "ws") as sup,
        ):
            await store.advance_fence(Fence(key, 2))
            await trio.testing.wait_all_tasks_blocked()
            heard = [Heard() for _ in range(3)]
            # The first write goes to the waiting writer; the others find the channel full
            # and wait in the backlog, each with its fence.
            for i in range(3):
                sup.store_commit(
                    WriteGroup(row=row(key, i), on_commit=heard[i], fence=Fence(key, 1))
                )
            sup.store_commit(WriteGroup(row=row(key, 9, label="stale"), fence=Fence(key, 1)))
            sup.store_commit(
                WriteGroup(
                    session_id="sid-q", entries=messages(builder, "stale"), fence=Fence(key, 1)
                )
            )
            sup.store_commit(WriteGroup(row=row("agent:main:other", 1), fence=None))
            assert sup.statistics().persist_backlog == 5
            await sup.writes.drain()
            await store.flush()
            assert all(isinstance(h.errors[0], FencedOut) for h in heard)
            assert store.statistics().fenced_out == 5
            assert await store.get_session(key) is None
            assert await store.load_entries("sid-q") == []
            assert await store.get_session("agent:main:other") is not None


async def test_two_nodes_on_one_postgres_schema_the_older_owner_is_refused(pg_url: str) -> None:
    db = Db("postgres", url=pg_url)
    key = "agent:main:n"
    with trio.fail_after(TIMEOUT):
        async with (
            open_store(backend=db.backend()) as old,
            open_store(backend=db.backend()) as new,
        ):
            await old.advance_fence(Fence(key, 5))
            await old.put_session_durable(row(key, 1, label="old"), fence=Fence(key, 5))
            await new.advance_fence(Fence(key, 6))  # the lease moved: nothing written yet
            with pytest.raises(FencedOut):
                await old.put_session_durable(row(key, 2, label="late"), fence=Fence(key, 5))
            await new.put_session_durable(row(key, 3, label="new"), fence=Fence(key, 6))
            got = await old.get_session(key)
            assert got is not None and got.label == "new"


async def test_postgres_prunes_the_fences_of_sessions_gone_behind_a_horizon(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fence row per session key ever used would grow forever: the rows of sessions
    deleted more than a day ago go, and the horizon they leave refuses a write that still
    carries a token from before it."""
    db = Db("postgres", url=pg_url)
    backend = db.backend()
    assert isinstance(backend, PostgresBackend)
    monkeypatch.setattr(journal, "PRUNE_INTERVAL_S", 0.0)  # every batch prunes the journal
    now = int(time.time() * 1_000_000)
    old, recent = now - 2 * FENCE_HORIZON_US, now - FENCE_HORIZON_US // 24
    kept, gone, lately = "agent:main:kept", "agent:main:gone", "agent:main:lately"
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=backend) as store:
            await store.put_session_durable(row(kept), fence=Fence(kept, old))
            await store.put_session_durable(row(gone), fence=Fence(gone, old))
            await store.put_session_durable(row(lately), fence=Fence(lately, recent))
            assert await store.delete_session(gone) and await store.delete_session(lately)
            backend.fence_prune_interval_s = 0.0  # and the fences, from now on
            await store.put_session_durable(row("agent:main:other"))
            listed = dict(await fences(db))
            assert listed == {kept: old, lately: recent}  # a session there is, or gone lately
            (horizon,) = await trio.to_thread.run_sync(db.query, "SELECT token FROM fence_horizon")
            assert old < horizon[0] <= int(time.time() * 1_000_000) - FENCE_HORIZON_US
            with pytest.raises(FencedOut):  # a writer from before the prune
                await store.put_session_durable(row(gone, 2), fence=Fence(gone, old))
            assert await store.get_session(gone) is None
            await store.put_session_durable(row(gone, 3), fence=Fence(gone, now))  # a new lease
            assert dict(await fences(db))[gone] == now


async def test_a_write_racing_the_fence_prune_for_its_key_is_checked_against_the_new_horizon(
    pg_url: str,
) -> None:
    """The race the prune leaves when nothing settles it: a batch's insert of a missing
    fence row reads the horizon, then waits for a prune in flight that is deleting the row
    it conflicts with; when the prune commits, the row is made with the token of the write,
    under the old horizon. Here the prune is held open on a connection of the test while the
    store's write (a token from before the new horizon, for a session gone) waits on it:
    once it commits, the write must be refused, as it is without the race."""
    db = Db("postgres", url=pg_url)
    gone = "agent:main:gone"
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.put_session_durable(row(gone), fence=Fence(gone, 5))
            assert await store.delete_session(gone)
            pruner = await trio.to_thread.run_sync(
                lambda: psycopg.connect(pg_url, autocommit=False)
            )
            try:
                await trio.to_thread.run_sync(
                    pruner.execute, _PRUNE_FENCES, {"cut": 100}
                )  # deletes the row of `gone` (token 5 < 100), not committed yet
                outcome: list[BaseException | None] = []

                async def write() -> None:
                    try:
                        await store.put_session_durable(row(gone, 2), fence=Fence(gone, 7))
                    except FencedOut as exc:
                        outcome.append(exc)
                    else:
                        outcome.append(None)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(write)
                    await _until_waiting_on_a_lock(db)  # the writer's insert, on the prune
                    await trio.to_thread.run_sync(pruner.commit)
            finally:
                await trio.to_thread.run_sync(pruner.close)
            assert isinstance(outcome[0], FencedOut), outcome
            assert await store.get_session(gone) is None
            assert dict(await fences(db))[gone] == 100  # the horizon, not the stale token


async def _until_waiting_on_a_lock(db: Db) -> None:
    """Poll the server until a backend of this schema waits on a lock: another process's
    state, which no event here announces."""
    sql = (
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        " AND query LIKE '%%INSERT INTO session_fences%%' AND datname = current_database()"
    )
    while True:
        (found,) = await trio.to_thread.run_sync(db.query, sql)
        if found[0]:
            return
        await trio.sleep(0.01)


async def test_a_node_that_takes_a_session_back_numbers_its_entries_after_the_other_nodes(
    pg_url: str,
) -> None:
    """Each node's writer keeps the next entry number of the transcripts it appends to; a
    session that went to the other node and came back (`advance_fence`) is read again, so
    its entries follow those the other node wrote meanwhile (no `entries_pkey` clash)."""
    db = Db("postgres", url=pg_url)
    key, sid = "agent:main:back", "sid-back"
    builder = TranscriptBuilder()
    with trio.fail_after(TIMEOUT):
        async with (
            open_store(backend=db.backend()) as a,
            open_store(backend=db.backend()) as b,
        ):
            for node, token, text in ((a, 4, "a1"), (b, 5, "b1"), (a, 6, "a2"), (b, 7, "b2")):
                await node.advance_fence(Fence(key, token))  # the session moves to `node`
                entries = messages(builder, text, text + "'")
                group = WriteGroup(session_id=sid, entries=entries, fence=Fence(key, token))
                await node.commit_durable(group)
            stored = texts(await a.load_entries(sid))
            assert stored == [m for t in ("a1", "b1", "a2", "b2") for m in (t, t + "'")]
