"""The run journal in the store (`actors.store._journal`): rows written in the group commit
with what goes with them (atomically), loaded back after a restart, pruned to what the
idempotency cache would hold; a failed commit is reported to its caller, logged and
counted, and writes resume."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest
import trio

from actors import StoreError, open_store
from actors.store import WriteGroup
from actors.store._journal import (
    AcceptedRun,
    JournalRow,
    RunIdentity,
    RunOutcome,
    accepted_row,
    ended_row,
)
from runtime.llm._types import UserMessage
from runtime.sessions._sessions import TranscriptBuilder, new_session_row

TIMEOUT = 30


def accepted(run_id: str, at: int = 1, order: int = 0) -> JournalRow:
    return accepted_row(
        RunIdentity(run_id, "agent", "agent:main:j", "sid", "main", at),
        request=AcceptedRun(message=f"m-{run_id}", order=order),
    )


def ended(run_id: str, at: int) -> JournalRow:
    return ended_row(
        RunIdentity(run_id, "chat", "agent:main:j", "sid", "main", 1),
        ended_at=at,
        outcome=RunOutcome(status="ok", final={"payloads": [{"text": "hi"}]}),
    )


async def test_accepted_and_ended_rows_come_back_after_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    now = int(time.time() * 1000)
    with trio.fail_after(TIMEOUT):
        async with open_store(path) as store:
            await store.commit_durable(WriteGroup(run=accepted("a", order=2)))
            await store.commit_durable(WriteGroup(run=accepted("b", order=1)))
            await store.commit_durable(WriteGroup(run=accepted("c")))
            await store.commit_durable(WriteGroup(run=ended("c", now)))
            await store.commit_durable(WriteGroup(run=ended("old", now - 10_000_000)))
        async with open_store(path) as store:
            rows = await store.load_runs(since_ms=now - 60_000)
    by_id = {r.run_id: r for r in rows}
    assert set(by_id) == {"a", "b", "c"}  # "old" ended before the window
    assert by_id["a"].state == "accepted" and by_id["a"].accepted().message == "m-a"
    assert by_id["a"].accepted().order == 2
    assert by_id["c"].state == "ok" and by_id["c"].kind == "chat"
    assert by_id["c"].outcome().final == {"payloads": [{"text": "hi"}]}


async def test_a_group_commits_all_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    b = TranscriptBuilder()
    row = new_session_row("agent:main:g", now_ms=1, session_id="sid-g")
    with trio.fail_after(TIMEOUT):
        async with open_store(path) as store:
            await store.flush()

            def refuse_runs() -> None:
                conn = sqlite3.connect(path)
                conn.execute(
                    "CREATE TRIGGER refuse BEFORE INSERT ON runs "
                    "BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END"
                )
                conn.commit()
                conn.close()

            await trio.to_thread.run_sync(refuse_runs)
            entries = [b.add_message(UserMessage(content="x", timestamp=1))]
            with pytest.raises(StoreError, match="refused by trigger"):
                await store.commit_durable(
                    WriteGroup(run=accepted("g"), row=row, session_id="sid-g", entries=entries),
                )
            assert await store.get_session("agent:main:g") is None
            assert await store.load_entries("sid-g") == []
            assert store.statistics().failed_writes == 1


def run_ids(path: Path) -> list[tuple[str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT run_id FROM runs").fetchall()
    finally:
        conn.close()


async def test_ended_rows_are_pruned_beyond_the_cache_and_accepted_ones_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import actors.store._journal as journal

    monkeypatch.setattr(journal, "PRUNE_INTERVAL_S", 0.0)
    path = tmp_path / "db.sqlite"
    now = int(time.time() * 1000)
    with trio.fail_after(TIMEOUT):
        async with open_store(path) as store:
            store._runs_keep = 3
            await store.commit_durable(WriteGroup(run=accepted("open", at=now - 10_000_000)))
            await store.commit_durable(WriteGroup(run=accepted("ancient")))
            await store.commit_durable(WriteGroup(run=ended("ancient", now - 10_000_000)))
            for i in range(6):
                await store.commit_durable(WriteGroup(run=accepted(f"e{i}")))
                await store.commit_durable(WriteGroup(run=ended(f"e{i}", now - 1000 + i)))
            await store.commit_durable(WriteGroup(run=ended("last", now)))
            rows = await store.load_runs(since_ms=0)
            left = await trio.to_thread.run_sync(run_ids, tmp_path / "db.sqlite")
    assert sorted(r.run_id for r in rows) == ["e4", "e5", "last", "open"]
    # Pruned with their acceptance; the run that never ended keeps its row.
    assert sorted(run_id for (run_id,) in left) == ["e4", "e4", "e5", "e5", "last", "open"]


async def test_a_failed_commit_is_logged_once_per_interval_and_counted_then_writes_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import actors.store._sqlite as sqlite_module

    caplog.set_level(logging.WARNING)
    full = [True]
    original = sqlite_module.write_batch

    def write_batch(*args: object) -> list[object]:
        if full[0]:
            raise sqlite3.OperationalError("database or disk is full")
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_module, "write_batch", write_batch)
    with trio.fail_after(TIMEOUT):
        async with open_store(tmp_path / "db.sqlite") as store:
            for i in range(5):
                with pytest.raises(StoreError, match="disk is full"):
                    await store.commit_durable(WriteGroup(run=accepted(f"f{i}")))
            stats = store.statistics()
            assert stats.failed_commits == 5 and stats.failing
            assert stats.last_error == "OperationalError: database or disk is full"
            assert caplog.text.count("a commit of 1 writes failed") == 1
            full[0] = False
            await store.commit_durable(WriteGroup(run=accepted("ok")))
            assert not store.statistics().failing
            assert "writes resumed" in caplog.text
            assert [r.run_id for r in await store.load_runs(since_ms=0)] == ["ok"]


async def test_when_no_run_ended_recently_every_ended_run_is_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import actors.store._journal as journal

    monkeypatch.setattr(journal, "PRUNE_INTERVAL_S", 0.0)
    now = int(time.time() * 1000)
    with trio.fail_after(TIMEOUT):
        async with open_store(tmp_path / "db.sqlite") as store:
            for i in range(3):
                await store.commit_durable(WriteGroup(run=accepted(f"old{i}")))
                await store.commit_durable(WriteGroup(run=ended(f"old{i}", now - 10_000_000)))
            await store.commit_durable(WriteGroup(run=accepted("open")))
            await store.commit_durable(WriteGroup(run=accepted("later")))  # a batch that prunes
            left = await trio.to_thread.run_sync(run_ids, tmp_path / "db.sqlite")
    assert sorted(run_id for (run_id,) in left) == ["later", "open"]
