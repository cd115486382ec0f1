from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from actors import Store, StoreClosedError, StoreError, open_store
from actors.store._ops import list_query
from actors.store._pg import SCHEMA_VERSION as PG_SCHEMA_VERSION
from runtime.llm._types import UserMessage
from runtime.sessions._sessions import (
    MessageEntry,
    SessionRow,
    TranscriptBuilder,
    TranscriptEntry,
    decode_session_row,
    new_session_row,
)
from tests.actors._databases import Db, db, pg_url

__all__ = ["db", "pg_url"]  # the fixtures, used by name

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 30


def row(key: str, updated: int = 1, **fields: object) -> SessionRow:
    base = new_session_row(key, now_ms=updated, session_id=f"sid-{key}")
    return msgspec.structs.replace(base, **fields)


def messages(builder: TranscriptBuilder, *texts: str) -> list[TranscriptEntry]:
    return [builder.add_message(UserMessage(content=t, timestamp=1)) for t in texts]


def texts(entries: list[TranscriptEntry]) -> list[str]:
    out = []
    for e in entries:
        assert isinstance(e, MessageEntry)
        assert isinstance(e.message, UserMessage)
        assert isinstance(e.message.content, str)
        out.append(e.message.content)
    return out


def query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Run `sql` on a fresh connection of our own (call it in a worker thread)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def test_rows_and_entries_survive_close_and_reopen(db: Db) -> None:
    b = TranscriptBuilder()
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.put_session(row("agent:main:a", 1, label="first"))
            await store.put_session(row("agent:main:b", 2))
            await store.append_entries("sid-agent:main:a", messages(b, "one", "two"))
            await store.append_entries("sid-agent:main:a", messages(b, "three"))
        async with open_store(backend=db.backend()) as store:
            got = await store.get_session("agent:main:a")
            assert got == row("agent:main:a", 1, label="first")
            assert [r.key for r in await store.list_sessions()] == ["agent:main:b", "agent:main:a"]
            entries = await store.load_entries("sid-agent:main:a")
            assert texts(entries) == ["one", "two", "three"]
            assert [e.parentId for e in entries[1:]] == [e.id for e in entries[:-1]]
            await store.append_entries("sid-agent:main:a", messages(b, "four"))
            assert texts(await store.load_entries("sid-agent:main:a"))[-1] == "four"
    if db.path is None:
        versions = await trio.to_thread.run_sync(db.query, "SELECT version FROM schema_version")
        assert versions == [(v,) for v in range(1, PG_SCHEMA_VERSION + 1)]
        return
    path = db.path
    mode, version = await trio.to_thread.run_sync(
        lambda: (
            query(path, "PRAGMA journal_mode")[0][0],
            query(path, "SELECT value FROM meta WHERE key = 'schema_version'")[0][0],
        )
    )
    assert (mode, version) == ("wal", "2")


async def test_reads_see_writes_enqueued_before_them(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            for i in range(50):
                store.put_session_nowait(row(f"agent:main:{i}", i))
                store.append_entries_nowait("sid", messages(TranscriptBuilder(), str(i)))
            assert store.statistics().pending == 100
            assert (await store.get_session("agent:main:49")) is not None
            assert len(await store.load_entries("sid")) == 50
            assert store.statistics().pending == 0
            assert await store.get_session("agent:main:nope") is None
            assert await store.load_entries("nope") == []


async def test_group_commit_batches_many_writes_into_few_transactions(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend(), batch_max=512) as store:
            for i in range(1000):
                store.put_session_nowait(row(f"agent:main:{i}", i))
            assert store.statistics().pending == 1000
            await store.flush()
            stats = store.statistics()
            assert stats.rows_written == 1000
            assert stats.pending == 0
            assert stats.commits == 2  # 512 + 488: one transaction per drained batch
            assert stats.last_batch_size == 488
            assert len(await store.list_sessions()) == 1000


async def test_durable_put_is_visible_to_a_fresh_connection_when_it_returns(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            for i in range(100):
                store.put_session_nowait(row(f"agent:main:{i}", i))
            durable = row("agent:main:durable", 500, status="running", lastRunId="run-1")
            await store.put_session_durable(durable)
            found = await trio.to_thread.run_sync(
                db.query, "SELECT row FROM sessions WHERE key = ?", ("agent:main:durable",)
            )
            count = await trio.to_thread.run_sync(db.query, "SELECT COUNT(*) FROM sessions")
            assert decode_session_row(found[0][0]) == durable
            assert count == [(101,)]


async def test_concurrent_writers_from_many_tasks(db: Db) -> None:
    tasks, rounds = 20, 50

    async def writer(store: Store, n: int) -> None:
        key = f"agent:main:w{n}"
        b = TranscriptBuilder()
        for i in range(1, rounds + 1):
            await store.append_entries(f"sid-{key}", messages(b, f"{n}-{i}"))
            await store.put_session(row(key, i, totalTokens=i))

    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            async with trio.open_nursery() as nursery:
                for n in range(tasks):
                    nursery.start_soon(writer, store, n)
            await store.flush()
            stats = store.statistics()
            assert stats.rows_written == stats.entries_written == tasks * rounds
            assert stats.commits < 2 * tasks * rounds
            for n in range(tasks):
                key = f"agent:main:w{n}"
                got = await store.get_session(key)
                assert got is not None
                assert got.totalTokens == rounds
                entries = await store.load_entries(f"sid-{key}")
                assert texts(entries) == [f"{n}-{i}" for i in range(1, rounds + 1)]


async def test_list_sessions_orders_filters_and_limits(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.put_session(row("agent:main:a", 10))
            await store.put_session(row("agent:ops:b", 30))
            await store.put_session(row("agent:main:c", 20))
            await store.put_session(row("agent:main:a", 40, label="moved"))  # upsert
            keys = [r.key for r in await store.list_sessions()]
            assert keys == ["agent:main:a", "agent:ops:b", "agent:main:c"]
            assert [r.key for r in await store.list_sessions(limit=2)] == keys[:2]
            assert [r.key for r in await store.list_sessions(agent_id="ops")] == ["agent:ops:b"]
            recent = await store.list_sessions(updated_after_ms=20, agent_id="main")
            assert [r.key for r in recent] == ["agent:main:a"]
            assert recent[0].label == "moved"
            assert await store.list_sessions(limit=0) == []


async def test_delete_session_with_and_without_its_transcript(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            b = TranscriptBuilder()
            for key in ["agent:main:x", "agent:main:y"]:
                await store.put_session(row(key))
                await store.append_entries(f"sid-{key}", messages(b, "hi"))
            assert await store.delete_session("agent:main:x") is True
            assert await store.delete_session("agent:main:y", delete_transcript=False) is True
            assert await store.delete_session("agent:main:y") is False
            assert await store.list_sessions() == []
            assert await store.load_entries("sid-agent:main:x") == []
            assert texts(await store.load_entries("sid-agent:main:y")) == ["hi"]
            # a transcript appended after a delete starts again from the beginning
            await store.append_entries("sid-agent:main:x", messages(b, "again"))
            assert texts(await store.load_entries("sid-agent:main:x")) == ["again"]


async def test_a_full_channel_blocks_submitters_and_nowait_raises(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend(), queue_max=4) as store:
            await trio.testing.wait_all_tasks_blocked()
            accepted = 0
            with pytest.raises(trio.WouldBlock):
                while True:
                    store.put_session_nowait(row(f"agent:main:{accepted}"))
                    accepted += 1
            # the parked writer takes one at once, the channel holds 4
            assert accepted == 5
            assert store.statistics().pending == accepted
            await store.put_session(row("agent:main:late"))  # blocks until there is room
            await store.flush()
            assert store.statistics().rows_written == accepted + 1


async def test_a_failed_commit_raises_store_error_and_the_store_keeps_working(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"

    def install_trigger() -> None:
        conn = sqlite3.connect(path)
        with conn:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON sessions WHEN NEW.key = 'agent:main:bad' "
                "BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END"
            )
        conn.close()

    with trio.fail_after(TIMEOUT):
        async with open_store(path) as store:
            await trio.to_thread.run_sync(install_trigger)
            with pytest.raises(StoreError, match="refused by trigger") as info:
                await store.put_session_durable(row("agent:main:bad"))
            assert isinstance(info.value.__cause__, sqlite3.IntegrityError)

            # a fire-and-forget write that fails is reported by the next flush
            store.put_session_nowait(row("agent:main:bad"))
            with pytest.raises(StoreError, match="refused by trigger"):
                await store.flush()
            await store.flush()  # the failure has been reported; nothing new failed

            # writes in the failed transaction are rolled back together
            store.put_session_nowait(row("agent:main:innocent"))
            with pytest.raises(StoreError):
                await store.put_session_durable(row("agent:main:bad"))
            assert await store.get_session("agent:main:innocent") is None

            await store.put_session_durable(row("agent:main:good"))
            assert await store.get_session("agent:main:good") is not None
            stats = store.statistics()
            assert stats.failed_commits == 3
            assert stats.pending == 0


async def test_closed_store_refuses_use(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            pass
        with pytest.raises(StoreClosedError):
            await store.put_session(row("agent:main:a"))
        with pytest.raises(StoreClosedError):
            store.put_session_nowait(row("agent:main:a"))
        with pytest.raises(StoreClosedError):
            await store.get_session("agent:main:a")


async def test_cancelling_the_store_block_still_commits_what_was_enqueued(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        with trio.CancelScope() as scope:
            async with open_store(backend=db.backend()) as store:
                for i in range(300):
                    store.put_session_nowait(row(f"agent:main:{i}", i))
                scope.cancel()
                await trio.lowlevel.checkpoint()
        assert scope.cancelled_caught
        async with open_store(backend=db.backend()) as store:
            assert len(await store.list_sessions()) == 300


async def test_an_unsupported_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with trio.fail_after(TIMEOUT):
        async with open_store(path):
            pass

        def bump() -> None:
            conn = sqlite3.connect(path)
            with conn:
                conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
            conn.close()

        await trio.to_thread.run_sync(bump)
        with pytest.raises(StoreError, match="unsupported schema version 99"):
            async with open_store(path):
                pass


async def test_a_corrupt_row_is_a_store_error(db: Db) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await store.put_session_durable(row("agent:main:a"))
            await trio.to_thread.run_sync(db.query, "UPDATE sessions SET row = ?", (b"{}",))
            with pytest.raises(StoreError, match="corrupt"):
                await store.get_session("agent:main:a")
            with pytest.raises(StoreError, match="corrupt"):
                await store.list_sessions()


_CRASH_CHILD = """
import sys
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.store._store import open_store
from runtime.sessions._sessions import TranscriptBuilder, new_session_row
from runtime.llm._types import UserMessage


async def noise(store):
    for i in range(10**9):
        await store.put_session(new_session_row(f"agent:main:noise{i % 500}", now_ms=i))


async def main():
    async with open_store(Path(sys.argv[1]), batch_max=64) as store, trio.open_nursery() as n:
        n.start_soon(noise, store)
        row = new_session_row("agent:main:crash", now_ms=0, session_id="crash")
        builder = TranscriptBuilder()
        for i in range(1, 10**9):
            entries = [
                builder.add_message(UserMessage(content=f"{i}:{j}:" + "x" * 3000, timestamp=i))
                for j in range(4)
            ]
            await store.append_entries("crash", entries)
            await store.put_session_durable(msgspec.structs.replace(row, totalTokens=i))
            print(i, flush=True)


trio.run(main)
"""


async def test_a_killed_writer_leaves_no_torn_entries(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    wanted = 40
    with trio.fail_after(60):
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CRASH_CHILD, str(path)],
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        assert proc.stdout is not None
        buffer = b""
        committed = 0
        try:
            while committed < wanted:
                chunk = await proc.stdout.receive_some()
                assert chunk, "the writer process ended early"
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                if lines:
                    committed = int(lines[-1])
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            await proc.stdout.aclose()
        assert proc.returncode == -signal.SIGKILL

        (integrity,) = await trio.to_thread.run_sync(query, path, "PRAGMA integrity_check")
        assert integrity == ("ok",)
        async with open_store(path) as store:
            got = await store.get_session("agent:main:crash")
            assert got is not None
            assert got.totalTokens >= committed
            entries = await store.load_entries("crash")  # every body decodes
            # appends are atomic, and each was enqueued before its durable put
            assert len(entries) % 4 == 0
            assert len(entries) >= 4 * got.totalTokens
            assert [e.parentId for e in entries[1:]] == [e.id for e in entries[:-1]]
            for i, entry in enumerate(entries):
                assert isinstance(entry, MessageEntry)
                assert isinstance(entry.message, UserMessage)
                assert entry.message.content == f"{i // 4 + 1}:{i % 4}:" + "x" * 3000


async def test_list_sessions_of_100_000_rows_reads_an_index_in_order(db: Db) -> None:
    """100,000 rows listed newest first from the `updated_at` index, never a sort of the
    whole table: the query plan says so (the time it takes is printed, not asserted: a loaded
    machine is not a slow plan). PostgreSQL sorts the whole table when asked for all of it
    (its choice, and a fair one); a page of it (`limit`, what `sessions.list` asks) is read
    from the minute index, each minute's rows sorted."""
    total = 100_000
    with trio.fail_after(120):
        async with open_store(backend=db.backend(), batch_max=4096, queue_max=8192) as store:
            t0 = time.perf_counter()
            for i in range(total):
                try:
                    store.put_session_nowait(row(f"agent:main:{i}", i))
                except trio.WouldBlock:
                    await store.put_session(row(f"agent:main:{i}", i))
            await store.flush()
            t1 = time.perf_counter()
            rows = await store.list_sessions()
            t2 = time.perf_counter()
            print(
                f"{db.kind}: {total:,} rows written in {t1 - t0:.2f} s "
                f"({total / (t1 - t0):,.0f}/s with row encoding), listed in {t2 - t1:.3f} s"
            )
            assert len(rows) == total
            assert rows[0].key == f"agent:main:{total - 1}"
            assert rows[-1].key == "agent:main:0"
            assert len(await store.list_sessions(limit=50, updated_after_ms=total - 10)) == 9
        await trio.to_thread.run_sync(_assert_listed_from_an_index, db)


def _assert_listed_from_an_index(db: Db) -> None:
    if db.kind == "sqlite":
        sql, _ = list_query(None, None, None, "?")
        plan = " | ".join(str(r[-1]) for r in db.query("EXPLAIN QUERY PLAN " + sql))
        assert "USING INDEX sessions_updated_at" in plan and "TEMP B-TREE" not in plan, plan
        return
    db.query("ANALYZE sessions")
    sql, _ = list_query(None, None, 50, "?", listed_ms=60_000)
    plan = " | ".join(str(r[0]) for r in db.query("EXPLAIN " + sql.replace("?", "50")))
    assert "Index Scan Backward using sessions_listed_at" in plan, plan
    assert "Seq Scan" not in plan, plan
    nodes = [line.strip().removeprefix("->").strip() for line in plan.split(" | ")]
    assert not [n for n in nodes if n.startswith("Sort  (")], plan  # only Incremental Sort


async def test_concurrent_row_reads_share_one_query_and_each_gets_its_row(
    db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            for i in range(0, 1200, 2):  # every other key exists
                store.put_session_nowait(row(f"agent:main:k{i}", i + 1))
            reads: list[int] = []
            original = store._read

            async def counting_read(*args: object) -> object:
                reads.append(1)
                return await original(*args)  # type: ignore[arg-type]

            monkeypatch.setattr(store, "_read", counting_read)
            got: dict[int, SessionRow | None] = {}

            async def get(i: int) -> None:
                got[i] = await store.get_session(f"agent:main:k{i}")

            async with trio.open_nursery() as n:
                for i in range(1200):
                    n.start_soon(get, i)
            # one batch of 1,200 keys: three queries of at most 500 keys, not 1,200 reads
            assert len(reads) == 3
            for i in range(1200):
                found = got[i]
                if i % 2:
                    assert found is None
                else:
                    assert found is not None and found.key == f"agent:main:k{i}"
                    assert found.updatedAt == i + 1
            # the writes enqueued before the reads were all visible to them
            assert await store.get_session("agent:main:k1198") is not None


@pytest.mark.parametrize("n", [1, 2, 3, 255, 256, 257, 700])
async def test_a_batch_of_any_size_lands_whole_and_the_last_write_of_a_key_wins(
    db: Db, n: int
) -> None:
    builders = [TranscriptBuilder() for _ in range(7)]
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            for i in range(n):  # enqueued without a yield: they go in as few batches as fit
                store.put_session_nowait(row(f"agent:main:k{i % 50}", i + 1))
                store.append_entries_nowait(f"sid-{i % 7}", messages(builders[i % 7], f"m{i}"))
            await store.flush()
            assert store.statistics().entries_written == n
            for k in range(min(n, 50)):
                found = await store.get_session(f"agent:main:k{k}")
                last = max(i for i in range(n) if i % 50 == k)
                assert found is not None and found.updatedAt == last + 1
            for s in range(min(n, 7)):
                got = texts(await store.load_entries(f"sid-{s}"))
                assert got == [f"m{i}" for i in range(n) if i % 7 == s]


async def test_a_cancel_that_comes_while_the_file_opens_still_ends_open_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer always joins `open_store`'s own nursery: a scope cancelled while the file
    opens in its thread (a deadline, Ctrl-C at startup) ends the block, and what was
    enqueued lands. (Before: `nursery.start` in a cancelled scope kept the shielded writer
    in `start`'s nursery, waiting for a close that never came: a hang.)"""
    import actors.store._sqlite as sqlite_module

    real_open = sqlite_module.open_writer
    scope = trio.CancelScope()

    def open_and_get_cancelled(path: Path) -> Any:
        trio.from_thread.run_sync(scope.cancel)
        return real_open(path)

    monkeypatch.setattr(sqlite_module, "open_writer", open_and_get_cancelled)
    with trio.fail_after(TIMEOUT):
        with scope:
            async with open_store(tmp_path / "s.db") as store:
                store.put_session_nowait(row("agent:main:early", 1))
                await trio.sleep_forever()
        assert scope.cancelled_caught
        monkeypatch.setattr(sqlite_module, "open_writer", real_open)
        async with open_store(tmp_path / "s.db") as store:
            found = await store.get_session("agent:main:early")
            assert found is not None and found.updatedAt == 1
