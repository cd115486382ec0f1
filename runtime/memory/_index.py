"""One agent's memory index: a SQLite file with an FTS5 table of its memory files' chunks.

`MemoryIndex.sync` brings the index up to date with the workspace incrementally: it stats every
memory file and re-chunks only the files whose size or modification time changed (written by
the agent's `write`, `edit`, `apply_patch` or by anyone on disk), and drops the chunks of files
that are gone. `search` syncs first, so a search always sees the files as they are. The text
indexed is bounded by `max_bytes`: `MEMORY.md` and `USER.md` first, then dated notes newest
first, then the rest; files past the budget are left out (and counted in `status`).

A corrupt index (not a database, a malformed image, a schema it does not know) is deleted and
rebuilt from the files, which are the truth; `status().rebuilt` says why it last was.

Embeddings (the vector side, `_embed`): each chunk may carry one, filed under the endpoint and
model that made it; a cache keyed by the chunk text's hash keeps them across re-chunking and
rebuilt chunks (at most `EMBEDDING_CACHE_MAX`, least recently used dropped), so unchanged
text is never embedded twice. Vectors are stored as float32 blobs; `vector_search` compares a
query with all of a model's vectors in memory (`_vectors.VectorTable`: a numpy matrix with the
`memory` extra), read from the file once and then kept current as chunks are dropped or
embedded, not read again on every change. So are the chunks each model has not embedded yet
(`chunks_for_embedding`, `pending_embeddings`: a hybrid search asks before each search): their
ids are read from the file once and then kept current as chunks are written and embedded, so
a search finds nothing to embed without scanning the chunks.

Everything here blocks (SQLite, file I/O): callers run it in a worker thread. One lock per
index serializes its users.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from ._backend import (
    IndexStatus,
    KeywordHit,
    VectorHit,
    day_text,
    embeddings_stored,
    keyword_hits,
    plan_sync,
    relevance_score,
    tokens,
)
from ._chunks import chunk_markdown
from ._files import list_memory_files
from ._vectors import NUMPY, VectorTable

__all__ = [
    "DEFAULT_MAX_INDEX_BYTES",
    "IndexStatus",
    "KeywordHit",
    "MemoryIndex",
    "VectorHit",
    "tokens",
]

DEFAULT_MAX_INDEX_BYTES: Final = 64 * 1024 * 1024
SNIPPET_MAX_CHARS: Final = 700
_SCHEMA_VERSION: Final = "1"
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    day TEXT, indexed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, text TEXT NOT NULL, embedding BLOB, model TEXT
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(text, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS embedding_cache (
    model TEXT NOT NULL, hash TEXT NOT NULL, embedding BLOB NOT NULL, used INTEGER NOT NULL,
    PRIMARY KEY (model, hash)
);
"""
EMBEDDING_CACHE_MAX: Final = 50_000
"""Cached embeddings kept per index (OpenClaw's bound); the least recently used go first."""


class MemoryIndex:
    """The index of one agent's memory files (see the module docstring). No I/O until used."""

    def __init__(
        self,
        db_path: Path,
        workspace: Path,
        *,
        max_bytes: int = DEFAULT_MAX_INDEX_BYTES,
        numpy: bool = NUMPY,
    ) -> None:
        self.db_path = db_path
        self.workspace = workspace
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._skipped = 0
        self._rebuilt: str | None = None
        self.revision = 0
        """Bumped whenever the chunks or their embeddings change."""
        self._vectors: dict[str, VectorTable] = {}
        """The vectors in memory, by model (loaded when first searched)."""
        self.numpy = numpy
        """Vector tables use numpy (False: the pure-Python side, as without the extra)."""
        self._pending: dict[str, set[int]] = {}
        """The ids of the chunks each model has not embedded (loaded when first asked for)."""
        self._data_version: int | None = None
        """SQLite's `data_version` when the vectors and pending ids were last known current:
        it moves when another connection (another worker process on this state dir)
        commits."""

    # --- the database ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.db_path, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('schema', ?)", (_SCHEMA_VERSION,))
            elif row[0] != _SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"unknown index schema {row[0]!r}")
            db.execute("PRAGMA quick_check").fetchone()
        except BaseException:
            db.close()
            raise
        self._db = db
        return db

    def close(self) -> None:
        """Close the database (it opens again when next used) and forget the vectors in
        memory (read again when next searched)."""
        self._vectors.clear()
        self._pending.clear()
        self._data_version = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def _rebuild(self, why: str) -> None:
        """Delete the index file and start again from the files."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.db_path}{suffix}")
        self._rebuilt = why
        self._vectors.clear()
        self.revision += 1

    # --- keeping it current ---------------------------------------------------------------

    def sync(self) -> int:
        """Bring the index up to date with the files; the number of files (re)indexed or
        dropped. A corrupt index is rebuilt. Blocking."""
        with self.lock:
            try:
                return self._sync()
            except sqlite3.DatabaseError as exc:
                self._rebuild(f"index rebuilt after a database error: {exc}")
                return self._sync()

    def _sync(self) -> int:
        db = self._connect()
        on_disk = dict(list_memory_files(self.workspace))
        known = {
            row[0]: (row[1], row[2], bool(row[3]))
            for row in db.execute("SELECT path, mtime_ns, size, indexed FROM files")
        }
        plan = plan_sync(on_disk, known, self.max_bytes)
        added = 0
        db.execute("BEGIN")
        try:
            for rel in plan.removed:
                self._drop(db, rel)
            for rel, st, fits in plan.changed:
                self._drop(db, rel)
                if fits:
                    self._add(db, rel, st)
                    added += 1
                else:
                    db.execute(
                        "INSERT INTO files VALUES (?, ?, ?, ?, 0)",
                        (rel, st.st_mtime_ns, st.st_size, day_text(rel)),
                    )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            self._pending.clear()  # they may have taken changes the file did not
            raise
        self._skipped = plan.skipped
        if added or plan.removed:
            self.revision += 1
        return added + len(plan.removed)

    def _drop(self, db: sqlite3.Connection, rel: str) -> None:
        ids = [row[0] for row in db.execute("SELECT id FROM chunks WHERE path = ?", (rel,))]
        for table in self._vectors.values():
            for i in ids:
                table.discard(i)
        for pending in self._pending.values():
            pending.difference_update(ids)
        db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", ((i,) for i in ids))
        db.execute("DELETE FROM chunks WHERE path = ?", (rel,))
        db.execute("DELETE FROM files WHERE path = ?", (rel,))

    def _add(self, db: sqlite3.Connection, rel: str, st: os.stat_result) -> None:
        try:
            text = (self.workspace / rel).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return
        db.execute(
            "INSERT INTO files VALUES (?, ?, ?, ?, 1)",
            (rel, st.st_mtime_ns, st.st_size, day_text(rel)),
        )
        for chunk in chunk_markdown(text):
            cur = db.execute(
                "INSERT INTO chunks (path, start_line, end_line, text) VALUES (?, ?, ?, ?)",
                (rel, chunk.start_line, chunk.end_line, chunk.text),
            )
            chunk_id = cur.lastrowid
            assert chunk_id is not None  # an INSERT's row
            db.execute("INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", (chunk_id, chunk.text))
            for pending in self._pending.values():
                pending.add(chunk_id)

    # --- searching ------------------------------------------------------------------------

    def keyword_search(self, query: str, *, limit: int, sync: bool = True) -> list[KeywordHit]:
        """The chunks matching `query`'s words (bm25 over the bodies), and the first chunk of
        each file whose path matches (filename hits), best first; syncs first. Blocking."""
        if sync:
            self.sync()
        with self.lock:
            try:
                return self._keyword(query, limit)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "fts5" in str(exc):
                    return []
                self._rebuild(f"index rebuilt after a database error: {exc}")
                self._sync()
                return self._keyword(query, limit)

    def _keyword(self, query: str, limit: int) -> list[KeywordHit]:
        db = self._connect()
        words = list(dict.fromkeys(tokens(query)))
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        # FTS5's own `rank` (bm25) ordered and limited inside the table, then the few rows:
        # about twice as fast as joining every match to `chunks` first.
        ranked = db.execute(
            "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
            (match, limit),
        ).fetchall()
        marks = ",".join("?" * len(ranked))
        rows = {
            row[0]: row
            for row in db.execute(
                f"SELECT id, path, start_line, end_line, text FROM chunks WHERE id IN ({marks})",
                [rowid for rowid, _rank in ranked],
            )
        }
        found = [(*rows[i], _bm25_score(rank)) for i, rank in ranked if i in rows]
        paths = [row[0] for row in db.execute("SELECT path FROM files WHERE indexed = 1")]

        def first_chunk(rel: str) -> tuple[int, int, int, str] | None:
            row = db.execute(
                "SELECT id, start_line, end_line, text FROM chunks WHERE path = ?"
                " ORDER BY start_line LIMIT 1",
                (rel,),
            ).fetchone()
            return None if row is None else (row[0], row[1], row[2], row[3])

        return keyword_hits(query, words, found, paths, first_chunk)

    def chunks_for_embedding(self, model: str, limit: int) -> list[tuple[int, str]]:
        """Chunks without an embedding from `model`: (id, text), by id; the first `limit`.
        Nothing read but their rows (none when every chunk is embedded). Blocking."""
        with self.lock:
            db = self._connect()
            ids = sorted(self._pending_ids(db, model))[: max(0, limit)]
            out: list[tuple[int, str]] = []
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                out.extend(
                    db.execute(
                        f"SELECT id, text FROM chunks WHERE id IN ({marks})"
                        " AND (embedding IS NULL OR model IS NOT ?) ORDER BY id",
                        (*part, model),
                    )
                )
            return out

    def pending_embeddings(self, model: str) -> int:
        """How many chunks have no embedding from `model` yet. Blocking."""
        with self.lock:
            return len(self._pending_ids(self._connect(), model))

    def _pending_ids(self, db: sqlite3.Connection, model: str) -> set[int]:
        """The ids of the chunks `model` has not embedded: read from the file when first
        asked for (or when another process wrote to it since), then kept current by this
        index's writes. Call under `lock`."""
        self._current(db)
        pending = self._pending.get(model)
        if pending is None:
            pending = {
                row[0]
                for row in db.execute(
                    "SELECT id FROM chunks WHERE embedding IS NULL OR model IS NOT ?", (model,)
                )
            }
            self._pending[model] = pending
        return pending

    def _current(self, db: sqlite3.Connection) -> None:
        """Forget the vectors and pending ids in memory if another connection has written to
        the file since they were read (`PRAGMA data_version`)."""
        (version,) = db.execute("PRAGMA data_version").fetchone()
        if version != self._data_version:
            self._vectors.clear()
            self._pending.clear()
            self._data_version = version

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """The cached embeddings of these text hashes by `model`. Blocking."""
        with self.lock:
            db = self._connect()
            out: dict[str, bytes] = {}
            for start in range(0, len(hashes), 500):
                part = list(hashes[start : start + 500])
                marks = ",".join("?" * len(part))
                out.update(
                    db.execute(
                        "SELECT hash, embedding FROM embedding_cache"
                        f" WHERE model = ? AND hash IN ({marks})",
                        (model, *part),
                    ).fetchall()
                )
            return out

    def store_embeddings(
        self, model: str, rows: Iterable[tuple[int, str, bytes]], *, cache: bool = True, now: int
    ) -> None:
        """Keep the embeddings of chunks (id, text hash, float32 bytes), and cache them by
        hash unless `cache` is off. Blocking."""
        rows = list(rows)
        with self.lock:
            db = self._connect()
            db.execute("BEGIN")
            try:
                db.executemany(
                    "UPDATE chunks SET embedding = ?, model = ? WHERE id = ?",
                    ((blob, model, i) for i, _h, blob in rows),
                )
                if cache:
                    db.executemany(
                        "INSERT OR REPLACE INTO embedding_cache VALUES (?, ?, ?, ?)",
                        ((model, h, blob, now) for _i, h, blob in rows),
                    )
                    (count,) = db.execute("SELECT count(*) FROM embedding_cache").fetchone()
                    if count > EMBEDDING_CACHE_MAX:
                        db.execute(
                            "DELETE FROM embedding_cache WHERE rowid IN (SELECT rowid FROM"
                            " embedding_cache ORDER BY used LIMIT ?)",
                            (count - EMBEDDING_CACHE_MAX,),
                        )
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                self._vectors.clear()  # they may hold vectors the file does not
                self._pending.clear()
                raise
            embeddings_stored(self._vectors, self._pending, model, rows)
            self.revision += 1

    def vector_table(self, model: str) -> VectorTable:
        """The vectors of the chunks `model` embedded, in memory: read from the file when
        first asked for, then kept current by the index, and read again when another
        process has written to the index file since. Call under `lock`. Blocking."""
        db = self._connect()
        self._current(db)
        table = self._vectors.get(model)
        if table is None:
            table = VectorTable(numpy=self.numpy)
            table.load(
                db.execute(
                    "SELECT id, embedding FROM chunks WHERE model = ? AND embedding IS NOT NULL",
                    (model,),
                )
            )
            self._vectors[model] = table
        return table

    def vector_search(self, model: str, query: Sequence[float], limit: int) -> list[VectorHit]:
        """The `limit` chunks `model` embedded closest to `query` (a unit vector), best
        first. Blocking."""
        with self.lock:
            try:
                return self._vector_search(model, query, limit)
            except sqlite3.DatabaseError as exc:
                self._rebuild(f"index rebuilt after a database error: {exc}")
                self._sync()
                return self._vector_search(model, query, limit)

    def _vector_search(self, model: str, query: Sequence[float], limit: int) -> list[VectorHit]:
        found = self.vector_table(model).search(query, limit)
        if not found:
            return []
        db = self._connect()
        marks = ",".join("?" * len(found))
        rows = {
            row[0]: row
            for row in db.execute(
                f"SELECT id, path, start_line, end_line, text FROM chunks WHERE id IN ({marks})",
                [i for i, _score in found],
            )
        }
        return VectorHit.of(found, rows)

    def status(self) -> IndexStatus:
        """What the index holds now (without syncing). Blocking."""
        with self.lock:
            try:
                db = self._connect()
                files, indexed_bytes = db.execute(
                    "SELECT count(*), coalesce(sum(size), 0) FROM files WHERE indexed = 1"
                ).fetchone()
                (chunks,) = db.execute("SELECT count(*) FROM chunks").fetchone()
            except sqlite3.DatabaseError:
                files = chunks = indexed_bytes = 0
            db_bytes = sum(
                _size(Path(f"{self.db_path}{suffix}")) for suffix in ("", "-wal", "-shm")
            )
            return IndexStatus(
                files=files,
                chunks=chunks,
                indexed_bytes=indexed_bytes,
                max_bytes=self.max_bytes,
                db_bytes=db_bytes,
                skipped_files=self._skipped,
                db_path=str(self.db_path),
                rebuilt=self._rebuilt,
            )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _bm25_score(rank: float) -> float:
    """An FTS5 bm25 rank (negative: better) as OpenClaw maps it into (0, 1)."""
    if rank != rank or rank in (float("inf"), float("-inf")):
        return 0.001
    return relevance_score(-rank) if rank < 0 else 1 / (1 + rank)
