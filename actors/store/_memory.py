"""Memory search's index on PostgreSQL (`PostgresMemoryIndexes`): on a gateway whose store is
PostgreSQL, each agent's memory chunks live in the store's database instead of a SQLite file
in the state dir, searched with PostgreSQL's full-text search. It is the same index as
`runtime.memory.MemoryIndex` behind the same interface (`runtime.memory.IndexBackend`), with
the same rules (`runtime.memory.plan_sync`, `keyword_hits`): the same sync, the same hits,
the same ranking.

- Scope: every row belongs to a scope, this host (`host_identity`: its name and machine id),
  the agent and the absolute path of its workspace (`memory_scopes`). A node indexes and
  finds only the files of its own host's workspace, which its `memory_get` and `read` can
  open; nodes on other hosts index their own files under scopes of their own, and the
  workers of one host (`--workers N`, one state dir) share theirs, as they share the SQLite
  file. A scope not used for `SCOPE_TTL_MS` (30 days: a host or a workspace gone) is dropped
  with its rows when another scope is opened.
- Keywords: `memory_chunks.doc`, a generated `tsvector` (the `simple` configuration: lower
  case, no stemming, no stop words, as FTS5's `unicode61`) with a GIN index; the query's
  words joined by `or` (`websearch_to_tsquery`), as the SQLite index ORs them; ranked by
  bm25 as FTS5 ranks (`_memory_bm25.keyword_scores`: `ts_rank_cd` of each word as its
  frequency, the scope's counts read once per revision, the chunks only the commonest
  words match left unscored when they cannot reach the top), mapped into (0, 1) the same
  way (`relevance_score`).
- Sync: as the SQLite index's, by file size and modification time, bounded in indexed bytes.
  A sync that finds nothing changed is one read; one that changes files takes the scope's
  row lock (`FOR UPDATE`), plans again under it (two workers syncing at once: the second
  finds the first's work) and writes the chunks with `COPY`, in one transaction.
- Vectors: embeddings as little-endian float32 `bytea` (the SQLite index's blobs), fed to
  the same in-memory `VectorTable`; the scope's `revision`, raised by every change, tells a
  process that another one changed the scope since it read its vectors (read again). The ids
  of the chunks a model has not embedded yet are kept the same way (read once, then kept
  current as this index writes chunks and embeddings, read again after another process's
  change), so the check a hybrid search makes first is one read of the revision, not a scan.

Connections: a small pool (`POOL_KEEP` idle) of the store's reader connections (autocommit;
each change in a transaction of its own). A connection lost (the server restarted) is
dropped and the call tried once more on a new one; other `psycopg.Error`s reach the caller
(`memory_search` reports them as its error). Every method blocks: `MemoryService` calls them
in worker threads; one lock per index serializes its users.

`PG_SCHEMA` is the store's migration that makes the tables (`actors.store._pg._MIGRATIONS`).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import psycopg
from psycopg import pq

from runtime.memory import (
    NUMPY,
    IndexStatus,
    KeywordHit,
    VectorHit,
    VectorTable,
    chunk_markdown,
    embeddings_stored,
    keyword_hits,
    list_memory_files,
    plan_sync,
    relevance_score,
    tokens,
)

from ._memory_bm25 import Bm25Cache, keyword_scores

__all__ = [
    "EMBEDDING_CACHE_MAX",
    "PG_SCHEMA",
    "POOL_KEEP",
    "SCOPE_TTL_MS",
    "PostgresMemoryIndex",
    "PostgresMemoryIndexes",
    "host_identity",
]

_T = TypeVar("_T")

PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS memory_scopes(
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    revision BIGINT NOT NULL DEFAULT 0,
    used_at BIGINT NOT NULL,
    UNIQUE (host, agent_id, workspace)
)""",
    """CREATE TABLE IF NOT EXISTS memory_files(
    scope_id BIGINT NOT NULL REFERENCES memory_scopes(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    size BIGINT NOT NULL,
    indexed BOOLEAN NOT NULL,
    PRIMARY KEY (scope_id, path)
)""",
    """CREATE TABLE IF NOT EXISTS memory_chunks(
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope_id BIGINT NOT NULL,
    path TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    doc tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    doc_len INTEGER GENERATED ALWAYS AS (length(to_tsvector('simple', text))) STORED,
    embedding BYTEA,
    model TEXT,
    FOREIGN KEY (scope_id, path) REFERENCES memory_files ON DELETE CASCADE
)""",
    "CREATE INDEX IF NOT EXISTS memory_chunks_doc ON memory_chunks USING GIN(doc)",
    "CREATE INDEX IF NOT EXISTS memory_chunks_path ON memory_chunks(scope_id, path, start_line)",
    """CREATE TABLE IF NOT EXISTS memory_embedding_cache(
    scope_id BIGINT NOT NULL REFERENCES memory_scopes(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    embedding BYTEA NOT NULL,
    used BIGINT NOT NULL,
    PRIMARY KEY (scope_id, model, hash)
)""",
)
"""The PostgreSQL migration (`actors.store._pg._MIGRATIONS`); idempotent, as every migration
after the search's must be (a store from before that is migrated again from there)."""

EMBEDDING_CACHE_MAX: Final = 50_000
"""Cached embeddings kept per scope (as the SQLite index's); the least recently used go."""
SCOPE_TTL_MS: Final = 30 * 86_400_000
_USED_EVERY_MS: Final = 3_600_000
"""A scope in use has its `used_at` refreshed at most this often (by a sync)."""
POOL_KEEP: Final = 4

_OPEN_SCOPE: Final = """
INSERT INTO memory_scopes(host, agent_id, workspace, used_at) VALUES (%s, %s, %s, %s)
ON CONFLICT (host, agent_id, workspace) DO UPDATE SET used_at = excluded.used_at
RETURNING id, revision
"""
_PRUNE_SCOPES: Final = "DELETE FROM memory_scopes WHERE used_at < %s"
_USED: Final = "UPDATE memory_scopes SET used_at = GREATEST(used_at, %s) WHERE id = %s"
_KNOWN: Final = "SELECT path, mtime_ns, size, indexed FROM memory_files WHERE scope_id = %s"
_REVISION: Final = "SELECT revision FROM memory_scopes WHERE id = %s"
_BUMP: Final = "UPDATE memory_scopes SET revision = revision + 1 WHERE id = %s RETURNING revision"
_ROWS: Final = "SELECT id, path, start_line, end_line, text FROM memory_chunks WHERE id = ANY(%s)"
_FIRST_CHUNK: Final = """
SELECT id, start_line, end_line, text FROM memory_chunks
WHERE scope_id = %s AND path = %s ORDER BY start_line, id LIMIT 1
"""
_NEW_CHUNKS: Final = "SELECT id FROM memory_chunks WHERE scope_id = %s AND path = ANY(%s)"
_UNEMBEDDED: Final = "scope_id = %s AND (embedding IS NULL OR model IS DISTINCT FROM %s)"
_PENDING: Final = f"SELECT id FROM memory_chunks WHERE {_UNEMBEDDED}"
_PENDING_ROWS: Final = (
    f"SELECT id, text FROM memory_chunks WHERE id = ANY(%s) AND {_UNEMBEDDED} ORDER BY id"
)
_STORE_EMBEDDINGS: Final = """
UPDATE memory_chunks AS c SET embedding = u.e, model = %s
FROM unnest(%s::bigint[], %s::bytea[]) AS u(i, e) WHERE c.id = u.i AND c.scope_id = %s
"""
_CACHE: Final = """
INSERT INTO memory_embedding_cache(scope_id, model, hash, embedding, used)
SELECT %s, %s, h, e, %s FROM unnest(%s::text[], %s::bytea[]) AS u(h, e)
ON CONFLICT (scope_id, model, hash) DO UPDATE SET embedding = excluded.embedding,
    used = excluded.used
"""
_CACHE_PRUNE: Final = """
DELETE FROM memory_embedding_cache WHERE scope_id = %(s)s AND (model, hash) IN (
    SELECT model, hash FROM memory_embedding_cache WHERE scope_id = %(s)s
    ORDER BY used LIMIT GREATEST(0, (
        SELECT count(*) FROM memory_embedding_cache WHERE scope_id = %(s)s) - %(max)s)
)
"""


def host_identity() -> str:
    """This host as memory scopes name it: its host name and, where there is one, the first
    12 hex digits of a hash of its machine id (two hosts of one name stay apart)."""
    name = socket.gethostname()
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            machine = Path(path).read_text().strip()
        except OSError:
            continue
        if machine:
            return f"{name}/{hashlib.sha256(machine.encode()).hexdigest()[:12]}"
    return name


def _now_ms() -> int:
    return int(time.time() * 1000)


class _Pool:
    """Idle connections kept for the indexes (at most `keep`); a connection is taken for one
    call and given back unless it broke. Thread-safe."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], keep: int) -> None:
        self._connect = connect
        self._keep = keep
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()

    def take(self) -> psycopg.Connection[Any]:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not (conn.closed or conn.broken):
                    return conn
        return self._connect()

    def give(self, conn: psycopg.Connection[Any]) -> None:
        usable = not (conn.closed or conn.broken)
        if usable and conn.info.transaction_status == pq.TransactionStatus.IDLE:
            with self._lock:
                if len(self._idle) < self._keep:
                    self._idle.append(conn)
                    return
        _close(conn)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            _close(conn)


def _close(conn: psycopg.Connection[Any]) -> None:
    try:
        conn.close()
    except psycopg.Error:
        pass  # best effort: nothing is pending on it


class PostgresMemoryIndexes:
    """The agents' memory indexes in PostgreSQL: a `runtime.memory.IndexFactory` (called with
    an agent id and its workspace) for `MemoryService.use_indexes`. `connect` opens an
    autocommit connection to the store's database (`PostgresBackend.open_reader`);
    `location` names the server in `status` (no password). No I/O until an index is used."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        location: str,
        *,
        host: str | None = None,
        numpy: bool = NUMPY,
    ) -> None:
        self.pool = _Pool(connect, POOL_KEEP)
        self.location = location
        self.host = host or host_identity()
        self.numpy = numpy

    def __call__(self, agent_id: str, workspace: Path) -> PostgresMemoryIndex:
        return PostgresMemoryIndex(self, agent_id, workspace)

    def close(self) -> None:
        """Close the idle connections (an index used later opens new ones). Blocking."""
        self.pool.close()


class PostgresMemoryIndex:
    """One agent's memory index in PostgreSQL (see the module docstring); made by
    `PostgresMemoryIndexes`. No I/O until used."""

    def __init__(self, indexes: PostgresMemoryIndexes, agent_id: str, workspace: Path) -> None:
        self.indexes = indexes
        self.agent_id = agent_id
        self.workspace = workspace
        self.max_bytes = 64 * 1024 * 1024
        self.lock = threading.Lock()
        self._scope: int | None = None
        self._revision = 0
        """The scope's revision as this index last knew it (its vectors are that one's)."""
        self._used_at = 0
        self._skipped = 0
        self._vectors: dict[str, VectorTable] = {}
        self._pending: dict[str, set[int]] = {}
        """The ids of the chunks each model has not embedded, as of `_revision`."""
        self._bm25 = Bm25Cache()

    # --- connections and the scope --------------------------------------------------------

    def _run(self, fn: Callable[[psycopg.Connection[Any], int], _T]) -> _T:
        """`fn(connection, scope id)` on a pooled connection, tried once more on a new one
        when the connection was lost or the scope went away. Call under `lock`."""
        pool = self.indexes.pool
        for attempt in (0, 1):
            conn = pool.take()
            try:
                out = fn(conn, self._scope_id(conn))
            except (psycopg.OperationalError, psycopg.InterfaceError):
                lost = conn.closed or conn.broken
                pool.give(conn)
                if not lost or attempt:
                    raise
                self._forget()
                continue
            except psycopg.errors.ForeignKeyViolation:
                pool.give(conn)
                if attempt:
                    raise
                self._forget()  # the scope was dropped (unused for long) under us
                continue
            except BaseException:
                pool.give(conn)
                raise
            pool.give(conn)
            return out
        raise AssertionError("unreachable")

    def _forget(self) -> None:
        self._scope = None
        self._vectors.clear()
        self._pending.clear()
        self._bm25.clear()

    def _scope_id(self, conn: psycopg.Connection[Any]) -> int:
        if self._scope is not None:
            return self._scope
        now = _now_ms()
        conn.execute(_PRUNE_SCOPES, (now - SCOPE_TTL_MS,))
        key = (self.indexes.host, self.agent_id, str(self.workspace.resolve()))
        row = conn.execute(_OPEN_SCOPE, (*key, now)).fetchone()
        assert row is not None
        self._scope, self._revision, self._used_at = row[0], row[1], now
        self._vectors.clear()
        self._pending.clear()
        return self._scope

    def close(self) -> None:
        """Forget the vectors in memory (read again when next searched); the connections
        are the factory's."""
        with self.lock:
            self._forget()

    # --- keeping it current ---------------------------------------------------------------

    def sync(self) -> int:
        """Bring the index up to date with the files; the number of files (re)indexed or
        dropped. Blocking."""
        with self.lock:
            return self._run(self._sync)

    def _sync(self, conn: psycopg.Connection[Any], scope: int) -> int:
        try:
            return self._sync_files(conn, scope)
        except BaseException:
            self._pending.clear()  # they may have taken changes the database did not
            raise

    def _sync_files(self, conn: psycopg.Connection[Any], scope: int) -> int:
        on_disk = dict(list_memory_files(self.workspace))
        plan = plan_sync(on_disk, _known(conn, scope), self.max_bytes)
        self._skipped = plan.skipped
        now = _now_ms()
        if plan.empty and now - self._used_at < _USED_EVERY_MS:
            return 0
        with conn.transaction():
            conn.execute(_USED, (now, scope))  # and the scope's row lock, to the end
            self._used_at = now
            plan = plan_sync(on_disk, _known(conn, scope), self.max_bytes)
            self._skipped = plan.skipped
            if plan.empty:
                return 0
            gone = [*plan.removed, *(rel for rel, _st, _fits in plan.changed)]
            if gone:
                self._drop(conn, scope, gone)
            added = self._add(conn, scope, plan.changed)
            if self._pending and plan.changed:
                paths = [rel for rel, _st, fits in plan.changed if fits]
                new = conn.execute(_NEW_CHUNKS, (scope, paths)).fetchall()
                for pending in self._pending.values():
                    pending.update(i for (i,) in new)
            self._bump(conn, scope)
        return added + len(plan.removed)

    def _drop(self, conn: psycopg.Connection[Any], scope: int, paths: list[str]) -> None:
        ids = conn.execute(
            "DELETE FROM memory_chunks WHERE scope_id = %s AND path = ANY(%s) RETURNING id",
            (scope, paths),
        ).fetchall()
        for table in self._vectors.values():
            for (i,) in ids:
                table.discard(i)
        for pending in self._pending.values():
            pending.difference_update(i for (i,) in ids)
        conn.execute(
            "DELETE FROM memory_files WHERE scope_id = %s AND path = ANY(%s)", (scope, paths)
        )

    def _add(
        self,
        conn: psycopg.Connection[Any],
        scope: int,
        changed: Iterable[tuple[str, os.stat_result, bool]],
    ) -> int:
        """Record the changed files (those that fit, indexed: their chunks) in one `COPY`
        each for files and chunks; the number indexed."""
        files: list[tuple[Any, ...]] = []
        chunks: list[tuple[Any, ...]] = []
        for rel, st, fits in changed:
            if fits:
                try:
                    raw = (self.workspace / rel).read_bytes()
                except OSError:
                    continue  # tried again at the next sync
                text = raw.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
                for c in chunk_markdown(text):
                    chunks.append((scope, rel, c.start_line, c.end_line, c.text))
            files.append((scope, rel, st.st_mtime_ns, st.st_size, fits))
        with conn.cursor() as cur:
            sql = "COPY memory_files (scope_id, path, mtime_ns, size, indexed) FROM STDIN"
            with cur.copy(sql) as copy:
                for row in files:
                    copy.write_row(row)
            sql = "COPY memory_chunks (scope_id, path, start_line, end_line, text) FROM STDIN"
            with cur.copy(sql) as copy:
                for row in chunks:
                    copy.write_row(row)
        return sum(1 for row in files if row[4])

    def _bump(self, conn: psycopg.Connection[Any], scope: int) -> None:
        """Raise the scope's revision (in the caller's transaction); the vectors in memory
        are dropped if another process had raised it since this one last looked."""
        row = conn.execute(_BUMP, (scope,)).fetchone()
        assert row is not None
        if row[0] != self._revision + 1:
            self._vectors.clear()
            self._pending.clear()
        self._revision = row[0]

    # --- searching ------------------------------------------------------------------------

    def keyword_search(self, query: str, *, limit: int, sync: bool = True) -> list[KeywordHit]:
        """The chunks matching `query`'s words (bm25), and the first chunk of each
        file whose path matches (filename hits), best first; syncs first. Blocking."""
        words = list(dict.fromkeys(tokens(query)))
        with self.lock:
            if sync:
                self._run(self._sync)
            if not words:
                return []
            return self._run(lambda conn, scope: self._keyword(conn, scope, query, words, limit))

    def _keyword(
        self,
        conn: psycopg.Connection[Any],
        scope: int,
        query: str,
        words: list[str],
        limit: int,
    ) -> list[KeywordHit]:
        scores = keyword_scores(conn, scope, words, limit, self._bm25)
        rows = {r[0]: r for r in conn.execute(_ROWS, ([i for i, _s in scores],))}
        ranked = [(*rows[i], relevance_score(float(s))) for i, s in scores if i in rows]
        paths = [
            r[0]
            for r in conn.execute(
                "SELECT path FROM memory_files WHERE scope_id = %s AND indexed", (scope,)
            )
        ]

        def first_chunk(rel: str) -> tuple[int, int, int, str] | None:
            row = conn.execute(_FIRST_CHUNK, (scope, rel)).fetchone()
            return None if row is None else (row[0], row[1], row[2], row[3])

        return keyword_hits(query, words, ranked, paths, first_chunk)

    def chunks_for_embedding(self, model: str, limit: int) -> list[tuple[int, str]]:
        """Chunks without an embedding from `model`: (id, text), by id; the first `limit`.
        Nothing read but the scope's revision and their rows (none when every chunk is
        embedded). Blocking."""

        def rows(conn: psycopg.Connection[Any], scope: int) -> list[tuple[int, str]]:
            ids = sorted(self._pending_ids(conn, scope, model))[: max(0, limit)]
            if not ids:
                return []
            return [(r[0], r[1]) for r in conn.execute(_PENDING_ROWS, (ids, scope, model))]

        with self.lock:
            return self._run(rows)

    def pending_embeddings(self, model: str) -> int:
        """How many chunks have no embedding from `model` yet. Blocking."""
        with self.lock:
            return self._run(lambda conn, scope: len(self._pending_ids(conn, scope, model)))

    def _pending_ids(self, conn: psycopg.Connection[Any], scope: int, model: str) -> set[int]:
        """The ids of the chunks `model` has not embedded: read when first asked for (or
        when another process changed the scope since), then kept current by this index's
        writes. Call under `lock`."""
        self._current(conn, scope)
        pending = self._pending.get(model)
        if pending is None:
            pending = {r[0] for r in conn.execute(_PENDING, (scope, model))}
            self._pending[model] = pending
        return pending

    def _current(self, conn: psycopg.Connection[Any], scope: int) -> None:
        """Forget the vectors and pending ids in memory if another process changed the scope
        since they were read (its revision moved)."""
        found = conn.execute(_REVISION, (scope,)).fetchone()
        revision = found[0] if found else -1
        if revision != self._revision:
            self._vectors.clear()
            self._pending.clear()
            self._revision = revision

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The cached embeddings of these text hashes by `model`. Blocking."""
        sql = (
            "SELECT hash, embedding FROM memory_embedding_cache"
            " WHERE scope_id = %s AND model = %s AND hash = ANY(%s)"
        )
        with self.lock:
            rows = self._run(
                lambda conn, scope: conn.execute(sql, (scope, model, list(hashes))).fetchall()
            )
            return {h: bytes(blob) for h, blob in rows}

    def store_embeddings(
        self, model: str, rows: Iterable[tuple[int, str, bytes]], *, cache: bool = True, now: int
    ) -> None:
        """Keep the embeddings of chunks (id, text hash, float32 bytes), and cache them by
        hash unless `cache` is off. Blocking."""
        rows = list(rows)
        with self.lock:
            try:
                self._run(lambda conn, scope: self._store(conn, scope, model, rows, cache, now))
            except BaseException:
                self._vectors.clear()  # they may hold vectors the database does not
                self._pending.clear()
                raise
            embeddings_stored(self._vectors, self._pending, model, rows)

    def _store(
        self,
        conn: psycopg.Connection[Any],
        scope: int,
        model: str,
        rows: list[tuple[int, str, bytes]],
        cache: bool,
        now: int,
    ) -> None:
        with conn.transaction():
            ids = [i for i, _h, _b in rows]
            blobs = [b for _i, _h, b in rows]
            conn.execute(_STORE_EMBEDDINGS, (model, ids, blobs, scope))
            if cache:
                by_hash = {h: b for _i, h, b in rows}
                conn.execute(_CACHE, (scope, model, now, list(by_hash), list(by_hash.values())))
                conn.execute(_CACHE_PRUNE, {"s": scope, "max": EMBEDDING_CACHE_MAX})
            self._bump(conn, scope)

    def vector_table(self, model: str) -> VectorTable:
        """The vectors of the chunks `model` embedded, in memory: read when first asked for,
        kept current by this index, read again when another process changed the scope since.
        Call under `lock`. Blocking."""
        return self._run(lambda conn, scope: self._table(conn, scope, model))

    def _table(self, conn: psycopg.Connection[Any], scope: int, model: str) -> VectorTable:
        self._current(conn, scope)
        table = self._vectors.get(model)
        if table is None:
            table = VectorTable(numpy=self.indexes.numpy)
            loaded = conn.execute(
                "SELECT id, embedding FROM memory_chunks"
                " WHERE scope_id = %s AND model = %s AND embedding IS NOT NULL",
                (scope, model),
            )
            table.load((i, bytes(blob)) for i, blob in loaded)
            self._vectors[model] = table
        return table

    def vector_search(self, model: str, query: Sequence[float], limit: int) -> list[VectorHit]:
        """The `limit` chunks `model` embedded closest to `query` (a unit vector), best
        first. Blocking."""
        with self.lock:
            found = self.vector_table(model).search(query, limit)
            if not found:
                return []
            sql = (
                "SELECT id, path, start_line, end_line, text FROM memory_chunks WHERE id = ANY(%s)"
            )
            rows = {
                r[0]: r
                for r in self._run(
                    lambda conn, _scope: conn.execute(sql, ([i for i, _s in found],)).fetchall()
                )
            }
        return VectorHit.of(found, rows)

    def status(self) -> IndexStatus:
        """What the index holds now (without syncing). Blocking."""
        with self.lock:
            files, indexed, chunks, size, scope = self._run(_status)
        return IndexStatus(
            files=files,
            chunks=chunks,
            indexed_bytes=indexed,
            max_bytes=self.max_bytes,
            db_bytes=size,
            skipped_files=self._skipped,
            db_path=f"{self.indexes.location} (memory_chunks, scope {scope})",
            rebuilt=None,
        )


def _known(conn: psycopg.Connection[Any], scope: int) -> dict[str, tuple[int, int, bool]]:
    return {row[0]: (row[1], row[2], row[3]) for row in conn.execute(_KNOWN, (scope,))}


def _status(conn: psycopg.Connection[Any], scope: int) -> tuple[int, int, int, int, int]:
    files = conn.execute(
        "SELECT count(*), COALESCE(sum(size), 0) FROM memory_files WHERE scope_id = %s AND indexed",
        (scope,),
    ).fetchone()
    chunks = conn.execute(
        "SELECT count(*), COALESCE(sum(pg_column_size(c.*)), 0) FROM memory_chunks AS c"
        " WHERE scope_id = %s",
        (scope,),
    ).fetchone()
    assert files is not None and chunks is not None
    return int(files[0]), int(files[1]), int(chunks[0]), int(chunks[1]), scope
