"""The store on PostgreSQL where it differs from SQLite (the shared contract is in
`test_store.py`, run on both): reaching the server, the schema's version, a refused commit,
connections cut under load (a restart), the run journal and the cron tables, the config."""

from __future__ import annotations

import time
import urllib.parse
from pathlib import Path

import msgspec
import psycopg
import pytest
import trio

from actors import (
    AcceptedRun,
    PostgresBackend,
    RunQuery,
    SqliteBackend,
    SqliteCronStore,
    StoreError,
    accepted_row,
    open_store,
    open_store_backend,
)
from actors.store import WriteGroup
from actors.store import _journal as journal
from actors.store import _pg as pg_ops
from actors.store._journal import JournalRow as JournalRowT
from actors.store._journal import RunIdentity, RunOutcome, ended_row
from runtime.model import ConfigError, parse_config
from runtime.sessions._sessions import SessionRow, new_session_row
from tests._tcp_proxy import open_tcp_proxy
from tests.actors._databases import Db, pg_database_url, pg_url, terminate_connections

__all__ = ["pg_database_url", "pg_url"]  # the fixtures, used by name

TIMEOUT = 30


def row(key: str, updated: int = 1, **fields: object) -> SessionRow:
    base = new_session_row(key, now_ms=updated, session_id=f"sid-{key}")
    return msgspec.structs.replace(base, **fields)


async def test_a_server_that_cannot_be_reached_is_one_line_naming_it() -> None:
    with trio.fail_after(TIMEOUT):
        with pytest.raises(StoreError) as info:
            async with open_store(backend=PostgresBackend("postgresql://nobody@127.0.0.1:1/x")):
                pass
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cannot reach PostgreSQL at postgresql://127.0.0.1:1/x: ")
    assert isinstance(info.value.__cause__, psycopg.OperationalError)


async def test_the_schema_is_migrated_once_and_a_newer_one_is_refused(pg_url: str) -> None:
    db = Db("postgres", url=pg_url)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:  # nodes starting together: one migrates
            for _ in range(3):
                nursery.start_soon(_open_and_close, pg_url)
        versions = await trio.to_thread.run_sync(db.query, "SELECT version FROM schema_version")
        assert versions == [(v,) for v in range(1, pg_ops.SCHEMA_VERSION + 1)]
        await trio.to_thread.run_sync(db.query, "INSERT INTO schema_version VALUES (99)")
        with pytest.raises(StoreError, match="unsupported schema version 99"):
            await _open_and_close(pg_url)


async def _open_and_close(url: str) -> None:
    async with open_store(backend=PostgresBackend(url)):
        pass


async def test_a_refused_commit_fails_its_batch_and_the_store_keeps_working(pg_url: str) -> None:
    db = Db("postgres", url=pg_url)
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            await trio.to_thread.run_sync(
                db.query,
                "ALTER TABLE sessions ADD CONSTRAINT refuse CHECK (key <> 'agent:main:bad')",
            )
            with pytest.raises(StoreError, match="refuse") as info:
                await store.put_session_durable(row("agent:main:bad"))
            assert isinstance(info.value.__cause__, psycopg.errors.CheckViolation)
            store.put_session_nowait(row("agent:main:innocent"))
            with pytest.raises(StoreError):
                await store.put_session_durable(row("agent:main:bad"))
            assert await store.get_session("agent:main:innocent") is None  # rolled back together
            await store.put_session_durable(row("agent:main:good"))
            assert await store.get_session("agent:main:good") is not None
            assert store.statistics().failed_commits == 2


async def test_cut_connections_fail_writes_with_store_error_and_writes_resume(
    pg_url: str,
) -> None:
    """What a PostgreSQL restart does to a running store: the writer's and the readers'
    connections are cut. A write then either commits on a connection made again (the dead
    one was seen before use) or fails with `StoreError` (it died as it was used), never in
    silence; the next ones commit, reads come back at once, and nothing committed is lost."""
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=PostgresBackend(pg_url)) as store:
            for i in range(100):
                await store.put_session_durable(row(f"agent:main:{i}", i))
            assert len(await store.list_sessions()) == 100  # a reader is open too
            cut = await trio.to_thread.run_sync(terminate_connections, pg_url)
            assert cut == 2
            expected = {f"agent:main:{i}" for i in range(100)} | {"agent:main:after"}
            try:
                await store.put_session_durable(row("agent:main:during", 1000))
                expected.add("agent:main:during")
            except StoreError:
                assert store.statistics().failed_commits == 1
            # The server is back (it never left): the reader that was cut is replaced, and
            # the read is answered, not failed.
            assert len(await store.list_sessions()) == len(expected) - 1
            await store.put_session_durable(row("agent:main:after", 1001))
            assert not store.statistics().failing
            assert {r.key for r in await store.list_sessions()} == expected


def _through(url: str, port: int) -> str:
    """`url` with its server replaced by a proxy on loopback `port`."""
    parts = urllib.parse.urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{port}"))


async def test_after_a_link_cut_and_healed_the_first_read_and_write_succeed(pg_url: str) -> None:
    """A link to PostgreSQL cut (every connection closed, none let through) and healed:
    while it is cut, writes and reads fail as a store outage naming PostgreSQL; once it is
    healed, the first read and the first write succeed, although the reader kept from
    before died unnoticed during the cut (it is replaced, the read is not failed)."""
    server = urllib.parse.urlsplit(pg_url)
    with trio.fail_after(TIMEOUT):
        async with open_tcp_proxy(server.hostname or "127.0.0.1", server.port or 5432) as proxy:
            url = _through(pg_url, proxy.port)
            async with open_store(backend=PostgresBackend(url)) as store:
                await store.put_session_durable(row("agent:main:before", 1))
                assert [r.key for r in await store.list_sessions()] == ["agent:main:before"]
                proxy.cut()  # the kept reader dies here, unused
                with pytest.raises(StoreError):
                    await store.put_session_durable(row("agent:main:during", 2))
                proxy.heal()
                healed_at = trio.current_time()
                keys = {r.key for r in await store.list_sessions()}
                await store.put_session_durable(row("agent:main:after", 3))
                assert trio.current_time() - healed_at < 1.0
                assert keys == {"agent:main:before"}
                proxy.cut()
                with pytest.raises(StoreError, match=r"read from postgresql://\S+ failed"):
                    await store.list_sessions()
                proxy.heal()
                keys = {r.key for r in await store.list_sessions()}
                assert keys == {"agent:main:before", "agent:main:after"}


async def test_the_run_journal_and_cron_tables_work_on_postgres(pg_url: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=PostgresBackend(pg_url)) as store:
            run = accepted_row(
                RunIdentity("run-1", "agent", "agent:main:a", "sid-agent:main:a", "main", 5),
                request=AcceptedRun(message="hello"),
            )
            await store.commit_durable(WriteGroup(run=run, row=row("agent:main:a")))
            runs = await store.load_runs(since_ms=0)
            assert [(r.run_id, r.state, r.accepted().message) for r in runs] == [
                ("run-1", "accepted", "hello")
            ]
            cron = SqliteCronStore(store)  # portable SQL: the same class on PostgreSQL
            await cron.open()
            await cron.put_run({"jobId": "j", "runId": "r1", "ts": 3, "status": "ok"})
            await cron.put_run({"jobId": "j", "runId": "r2", "ts": 4, "status": "error"})
            entries, total = await cron.list_runs(RunQuery(statuses=("ok",)))
            assert total == 1 and entries[0]["runId"] == "r1"
            assert await cron.delete_job("nope") is False
            assert await cron.load_jobs() == []


async def test_the_config_chooses_the_backend(tmp_path: Path, pg_url: str) -> None:
    with pytest.raises(ConfigError, match=r"at storage\.backend:"):
        parse_config({"storage": {"backend": "mysql"}})
    with pytest.raises(ConfigError, match=r"at storage\.postgres\.url:"):
        parse_config({"storage": {"backend": "postgres"}})
    with trio.fail_after(TIMEOUT):
        async with open_store_backend(parse_config({}), tmp_path) as store:
            assert isinstance(store.backend, SqliteBackend)
            assert store.path == tmp_path / "clawlane.sqlite"
        config = parse_config(
            {"storage": {"backend": "postgres", "postgres": {"url": "${PG}"}}}, env={"PG": pg_url}
        )
        async with open_store_backend(config, tmp_path) as store:
            assert isinstance(store.backend, PostgresBackend)
            assert str(store.path) == "postgresql://127.0.0.1:5432/test"
            await store.put_session_durable(row("agent:main:a"))


async def _sizes(db: Db) -> dict[str, int]:
    """Bytes on disk: each table's heap and its indexes together."""
    sql = (
        "SELECT pg_relation_size('sessions'), pg_indexes_size('sessions'),"
        " pg_relation_size('runs'), pg_indexes_size('runs')"
    )
    (found,) = await trio.to_thread.run_sync(db.query, sql)
    return dict(zip(("sessions", "sessions_indexes", "runs", "runs_indexes"), found, strict=True))


async def test_rewritten_sessions_and_pruned_runs_keep_the_tables_their_size_without_autovacuum(
    pg_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a gateway left running does to its tables, with autovacuum off for them (as on
    the CI server; elsewhere, what happens between autovacuum's passes): each run rewrites
    its session's row and writes journal rows a prune deletes minutes later. The rows are
    rewritten in place (the list indexes hold the minute of `updated_at`, so a rewrite
    within the minute adds no index entry) and the journal is vacuumed after each prune:
    40 rewrites of every row leave both tables and their indexes about their first size
    (before, the session table and its indexes grew ~40x, the journal by every row). In a
    database of its own: another session's open snapshot in a shared one would keep the
    dead rows it measures."""
    monkeypatch.setattr(journal, "PRUNE_INTERVAL_S", 0.0)
    db = Db("postgres", url=pg_database_url)
    keys = [f"agent:main:{i}" for i in range(200)]
    now = int(time.time() * 1000)
    minute = now // 60_000 * 60_000
    with trio.fail_after(120):
        async with open_store(backend=db.backend()) as store:
            store._runs_keep = 10
            for table in ("sessions", "runs"):
                await trio.to_thread.run_sync(
                    db.query, f"ALTER TABLE {table} SET (autovacuum_enabled = false)"
                )
            first: dict[str, int] = {}
            for n in range(41):
                for i, key in enumerate(keys):
                    run_id = f"r{n}-{i}"
                    store.commit_nowait(
                        WriteGroup(run=_journal(run_id, key), row=row(key, minute + n))
                    )
                    store.commit_nowait(WriteGroup(run=_journal(run_id, key, now - 10_000_000)))
                await store.flush()
                if n == 0:
                    first = await _sizes(db)
            last = await _sizes(db)
            listed = await store.list_sessions()
    assert [r.updatedAt for r in listed] == [minute + 40] * len(keys)
    for part in ("sessions", "sessions_indexes"):
        assert last[part] <= 3 * first[part], (part, first, last)
    # the journal holds a round's rows at most (the last 10 ended ones are kept)
    for part in ("runs", "runs_indexes"):
        assert last[part] <= 4 * first[part] + 8192 * 4, (part, first, last)


def _journal(run_id: str, key: str, ended_at: int | None = None) -> JournalRowT:
    """A run's acceptance row, or with `ended_at` its end (`ok`)."""
    identity = RunIdentity(run_id, "agent", key, f"sid-{key}", "main", 1)
    if ended_at is None:
        return accepted_row(identity, request=AcceptedRun(message="m"))
    outcome = RunOutcome(status="ok", final={"payloads": [{"text": "hi"}]})
    return ended_row(identity, ended_at=ended_at, outcome=outcome)


async def test_sessions_list_newest_first_across_minutes(pg_url: str) -> None:
    """The list reads the index by minute and sorts within it: the order is `updatedAt`'s,
    newest first, for rows spread over minutes and written in any order, with a bound and a
    limit that cut through a minute."""
    db = Db("postgres", url=pg_url)
    stamps = [(i * 7_919_017) % 600_000 for i in range(300)]  # 10 minutes, shuffled
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=db.backend()) as store:
            for i, at in enumerate(stamps):
                store.put_session_nowait(row(f"agent:{'main' if i % 3 else 'ops'}:{i}", at))
            await store.flush()
            newest = sorted(stamps, reverse=True)
            assert [r.updatedAt for r in await store.list_sessions()] == newest
            after = newest[100] + 1  # mid-minute
            got = await store.list_sessions(updated_after_ms=after, limit=60)
            assert [r.updatedAt for r in got] == newest[:60]
            got = await store.list_sessions(updated_after_ms=after)
            assert [r.updatedAt for r in got] == [s for s in newest if s > after]
            ops = sorted((at for i, at in enumerate(stamps) if i % 3 == 0), reverse=True)
            got = await store.list_sessions(agent_id="ops", updated_after_ms=ops[40], limit=25)
            assert [r.updatedAt for r in got] == ops[:25]


_BY_KEY = {  # statement, the table it reads, its primary key's index
    "fence lock": (pg_ops._LOCK_FENCES, "session_fences", "session_fences_pkey"),
    "row read": (pg_ops._GET_ROWS, "sessions", "sessions_pkey"),
}


def _generic_plans(url: str, rows: int) -> dict[str, str]:
    """Each `_BY_KEY` statement's generic plan (the one PostgreSQL caches for a prepared
    statement) with `rows` rows in the tables, which are never analyzed (autovacuum off)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("session_fences", "sessions"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        conn.execute(
            "INSERT INTO session_fences SELECT 'agent:main:' || md5(g::text), g"
            " FROM generate_series(1, %s) AS g ON CONFLICT DO NOTHING",
            (rows,),
        )
        conn.execute(
            "INSERT INTO sessions(key, agent_id, session_id, updated_at, row)"
            " SELECT 'agent:main:' || md5(g::text), 'main', md5(g::text), g, '\\x00'"
            " FROM generate_series(1, %s) AS g ON CONFLICT DO NOTHING",
            (rows,),
        )
        conn.execute("SET plan_cache_mode = force_generic_plan")
        plans = {}
        for name, (sql, _, _) in _BY_KEY.items():
            conn.execute(f"PREPARE probe AS {sql.replace('%b', '$1').replace('%s', '$1')}")
            found = conn.execute("EXPLAIN EXECUTE probe('{agent:main:x}')").fetchall()
            plans[name] = "\n".join(line for (line,) in found)
            conn.execute("DEALLOCATE probe")
        return plans


async def test_reads_by_key_probe_the_primary_key_whatever_plan_is_cached(pg_url: str) -> None:
    """The fence lock (every batch) and the session row read look each key up in the
    primary key in any plan PostgreSQL may cache, at any table size. Before, the fence lock
    was `session_key = ANY(%s)`, whose generic plan at ~1,000 rows is a sequential scan
    comparing every row with every key; cached, it stayed as the table grew (10-50 ms a
    batch at 3,000 sessions)."""
    with trio.fail_after(TIMEOUT):
        async with open_store(backend=PostgresBackend(pg_url)):
            pass
        for rows in (0, 200, 1_000, 5_000):
            plans = await trio.to_thread.run_sync(_generic_plans, pg_url, rows)
            for name, (_, table, index) in _BY_KEY.items():
                assert f"Seq Scan on {table}" not in plans[name], (name, rows, plans[name])
                assert f"Index Scan using {index}" in plans[name], (name, rows, plans[name])
