"""The store's SQLite side: the schema, the operations on the write channel, and the
blocking work the store runs in worker threads (opening connections, `write_batch`, reads).

`write_batch` applies a batch of operations in one transaction (the group commit of
`actors.store._store`): session row upserts, transcript entries and run journal rows go to SQLite
in multi-row statements, one SQLite step per statement rather than per row. The entries'
rows of the transcripts' search index (`actors.store._search.sqlite_index`) go in with
them, from the one place entries are inserted. Nothing here touches trio; the store hands
these functions to `trio.to_thread.run_sync`.

Fencing: a batch with fenced writes reads the stored tokens of their sessions once
(`session_fences`), checks each fenced write against them (`actors.store._ops.Fences`),
and writes the raised tokens back in the same transaction; `BEGIN IMMEDIATE` already
holds the database's write lock, so nobody writes between the check and the commit.

Errors: `sqlite3.Error` from the blocking functions (the store maps them to `StoreError`);
`open_writer` raises `StoreError` itself for a database it cannot use (not WAL, an
unsupported schema version). An operation's `Waiter` reports a failure as a `StoreError`.

`SqliteBackend` puts these together behind the store's backend seam (`actors.store._ops.
StoreBackend`); the operations themselves live in `actors.store._ops` (re-exported here).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from .._errors import StoreError
from . import _audit, _journal, _search, _usage
from ._ops import (
    AddAudit,
    AddUsage,
    Append,
    Barrier,
    Call,
    Delete,
    Fences,
    Group,
    Op,
    PutRow,
    PutRun,
    SqlConnection,
    Waiter,
    Write,
    fenced_keys,
    list_query,
    put_checked,
)

__all__ = [
    "SCHEMA_VERSION",
    "Append",
    "Barrier",
    "Call",
    "Delete",
    "Group",
    "Op",
    "PutRow",
    "PutRun",
    "SqliteBackend",
    "Waiter",
    "Write",
    "close_all",
    "fetch_blobs",
    "fetch_pairs",
    "fetch_rows",
    "open_reader",
    "open_writer",
    "write_batch",
]

_T = TypeVar("_T")

_NULLS: Final[dict[None, None]] = {}
sqlite3.register_adapter(bytes, bytes)  # (`bytes(b) is b`)
sqlite3.register_adapter(type(None), _NULLS.get)  # (None for any key: NULL)
"""The sqlite3 module adapts every parameter that is not an int, float, str or bytearray:
with no adapter registered for its type it asks the protocol for `__adapt__`, which raises
and clears an AttributeError each time (about 2,500 instructions a parameter, for each
body and each NULL a batch binds: some 14 a run). These adapters hand the value back as it
is, so the same values are bound (and stored) after a dict look-up. They are the sqlite3
module's, for every connection of the process: none changes what it binds."""

SCHEMA_VERSION: Final = 2
"""1: sessions, entries, the run journal; 2: `session_fences` (made by `_SCHEMA`'s
`IF NOT EXISTS`, so a version 1 file only has its number raised). The usage aggregates
(`_usage.SCHEMA`) and the audit log (`_audit.SQLITE_SCHEMA`) are made the same way,
whatever the version."""
_MIGRATES: Final = frozenset({"1"})
"""Schema versions `open_writer` brings up to `SCHEMA_VERSION`."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions(
    key TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    row BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_updated_at ON sessions(updated_at);
CREATE INDEX IF NOT EXISTS sessions_agent_updated_at ON sessions(agent_id, updated_at);
CREATE TABLE IF NOT EXISTS entries(
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry_id TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY(session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_fences(
    session_key TEXT PRIMARY KEY,
    token BIGINT NOT NULL
);
"""

_UPSERT_SESSION: Final = """
INSERT INTO sessions(key, agent_id, session_id, updated_at, row) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET
    agent_id = excluded.agent_id,
    session_id = excluded.session_id,
    updated_at = excluded.updated_at,
    row = excluded.row
"""


# --- blocking work, run in worker threads ------------------------------------------------


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def open_writer(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = _connect(path)
    try:
        (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        if str(mode).lower() != "wal":
            raise StoreError(f"{path}: cannot switch to WAL mode (journal_mode={mode})")
        conn.execute("BEGIN IMMEDIATE")
        try:
            schema = (_SCHEMA + _journal.SCHEMA).split(";") + list(_usage.SCHEMA)
            schema += list(_search.SQLITE_SCHEMA)  # (its triggers' bodies hold semicolons)
            for statement in schema + list(_audit.SQLITE_SCHEMA):
                if statement.strip():
                    conn.execute(statement)
            found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if found is None:
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            elif found[0] in _MIGRATES:
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )
            elif found[0] != str(SCHEMA_VERSION):
                raise StoreError(f"{path}: unsupported schema version {found[0]}")
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
    except BaseException:
        conn.close()
        raise
    return conn


def open_reader(path: Path) -> sqlite3.Connection:
    conn = _connect(path)
    conn.execute("PRAGMA query_only=ON")
    return conn


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the error that got us here is the one worth reporting


_INSERT_ENTRY_HEAD: Final = "INSERT INTO entries(session_id, seq, entry_id, body) VALUES "
_UPSERT_HEAD: Final = "INSERT INTO sessions(key, agent_id, session_id, updated_at, row) VALUES "
_UPSERT_TAIL: Final = _UPSERT_SESSION[_UPSERT_SESSION.index("ON CONFLICT") :]
_NEXT_SEQ_MAX: Final = 200_000
_ROWS_PER_STATEMENT: Final = 256
_statements: dict[tuple[str, int], str] = {}


def _insert_rows(
    conn: sqlite3.Connection, head: str, tail: str, width: int, values: Sequence[tuple[Any, ...]]
) -> None:
    """Insert `values` with multi-row `INSERT ... VALUES (...), (...)` statements of up to
    `_ROWS_PER_STATEMENT` rows: one SQLite step per statement, so the writer thread takes
    the GIL back once per statement, not once per row (each of those hand-overs costs the
    event loop thread a switch: ~10 % of a gateway's CPU at 3,000 runs a second).
    Statements come in power-of-two sizes, so the few there are stay prepared.
    """
    i = 0
    while i < len(values):
        size = min(_ROWS_PER_STATEMENT, 1 << ((len(values) - i).bit_length() - 1))
        chunk = values[i : i + size]
        i += size
        conn.execute(_statement(head, tail, width, size), [v for row in chunk for v in row])


def _insert_flat(
    conn: sqlite3.Connection, head: str, width: int, flat: list[Any], tail: str = ""
) -> int:
    """`_insert_rows` for values laid out flat already (`width` a row): no tuples to make
    and take apart in the writer thread. The rows inserted."""
    n = len(flat) // width
    i = added = 0
    while i < n:
        size = min(_ROWS_PER_STATEMENT, 1 << ((n - i).bit_length() - 1))
        sql = _statement(head, tail, width, size)
        added += max(conn.execute(sql, flat[i * width : (i + size) * width]).rowcount, 0)
        i += size
    return added


def _insert_audit(conn: sqlite3.Connection, ids: list[str], rows: Sequence[tuple[Any, ...]]) -> int:
    """A batch's audit rows (`_audit.Insert`), with their event ids, in multi-row statements."""
    width = len(_audit.COLUMNS)
    flat: list[Any] = []
    for event_id, row in zip(ids, rows, strict=True):
        flat.append(event_id)
        flat.extend(row)
    if len(flat) != width * len(rows):
        raise sqlite3.ProgrammingError(f"an audit row is not {width - 1} values")
    return _insert_flat(conn, _audit.INSERT_HEAD, width, flat, _audit.INSERT_TAIL)


def _statement(head: str, tail: str, width: int, size: int) -> str:
    sql = _statements.get((head, size))
    if sql is None:
        one = "(" + ", ".join("?" * width) + ")"
        sql = head + ", ".join([one] * size) + ("\n" + tail if tail else "")
        _statements[(head, size)] = sql
    return sql


class _Runs:
    """The writes of a batch gathered into runs of one kind, until something that must
    see them in the table (a delete, another module's statements, the commit) flushes them
    as multi-row statements."""

    __slots__ = ("audit", "conn", "entries", "next_seq", "rows", "runs", "usage")

    def __init__(
        self, conn: sqlite3.Connection, next_seq: dict[str, int], audit: _audit.AuditBounds
    ) -> None:
        self.conn = conn
        self.next_seq = next_seq
        self.rows: list[tuple[str, str, str, int, bytes]] = []
        self.entries: list[tuple[str, int, str, bytes]] = []
        self.runs: list[Any] = []  # flat: `_journal.WIDTH` values a row
        self.usage = _usage.UsageBatch()
        self.audit = _audit.AuditBatch(audit)  # inserted once, as the batch ends

    def put(self, op: PutRow | Append | PutRun | AddUsage | Call) -> None:
        if isinstance(op, PutRow):
            self.rows.append((op.key, op.agent_id, op.session_id, op.updated_at, op.body))
        elif isinstance(op, Append):
            self.append(op)
        elif isinstance(op, AddUsage):
            self.usage.add(op)
        elif isinstance(op, Call):  # a group's other statements, after what it wrote so far
            self.flush()
            op.fn(self.conn)
        else:
            run = op.run
            self.runs.extend((run.run_id, run.ended_at, run.body))

    def append(self, op: Append) -> None:
        sid = op.session_id
        seq = self.next_seq.get(sid)
        if seq is None:
            (seq,) = self.conn.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM entries WHERE session_id = ?",
                (sid,),
            ).fetchone()
        entries = self.entries
        for eid, body in op.items:
            entries.append((sid, seq, eid, body))
            seq += 1
        self.next_seq[sid] = seq

    def flush(self) -> None:
        conn, rows, entries, runs = self.conn, self.rows, self.entries, self.runs
        if rows:
            # The last write of a key in a run wins (an upsert of it twice in one statement
            # would be refused); the order of different keys does not matter.
            latest = {row[0]: row for row in rows}
            _insert_rows(conn, _UPSERT_HEAD, _UPSERT_TAIL, 5, list(latest.values()))
            rows.clear()
        if entries:
            _insert_rows(conn, _INSERT_ENTRY_HEAD, "", 4, entries)
            # (the one place entries are inserted: their messages are indexed here)
            index = functools.partial(_insert_rows, conn, _search.SQLITE_INSERT_HEAD, "", 5)
            _search.sqlite_index(conn, entries, index)
            entries.clear()
        if runs:
            _insert_flat(conn, _journal.PUT_HEAD, _journal.WIDTH, runs)
            runs.clear()
        self.usage.flush(conn.executemany)


def write_batch(
    conn: sqlite3.Connection,
    writes: Sequence[Write],
    next_seq: dict[str, int],
    prune: tuple[int, int] | None = None,
    audit: _audit.AuditBounds | None = None,
) -> list[object]:
    """Apply `writes` in one transaction; one result per write (delete: whether a row went).

    Row upserts, entry inserts and run journal rows are sent to SQLite in runs (multi-row
    statements) between deletes, so a batch costs a few statements, not a few per write.
    `next_seq` is the writer's memory of each transcript's next entry number across
    batches (filled from the table on first use); a rolled back batch empties it.
    `prune` (`(before_ms, keep)`): also drop ended journal rows older than `before_ms` or
    beyond the newest `keep`. The batch's audit rows (`AddAudit`) go in as it ends, within
    `audit`'s bounds (the writer's, kept across batches). Runs in the writer thread.
    """
    results: list[object] = []
    audit = audit if audit is not None else _audit.AuditBounds()
    pending = _Runs(conn, next_seq, audit)
    if len(next_seq) > _NEXT_SEQ_MAX:
        next_seq.clear()
    keys = fenced_keys(writes)
    conn.execute("BEGIN IMMEDIATE")
    try:
        fences = _read_fences(conn, keys) if keys else None
        for op in writes:
            if isinstance(op, PutRow | Append | PutRun | Group):
                results.append(put_checked(op, fences, pending.put))
            elif isinstance(op, AddAudit):
                pending.audit.add(op, len(results))
                results.append(False)
            elif isinstance(op, Call):
                pending.flush()
                results.append(op.fn(conn))  # a sqlite3.Connection is an SqlConnection
            else:
                pending.flush()
                results.append(_delete(conn, op, next_seq))
        pending.flush()
        pending.audit.flush(conn, functools.partial(_insert_audit, conn), results)
        if fences is not None and fences.raised:
            conn.executemany(_UPSERT_FENCE, list(fences.raised.items()))
        if prune is not None:
            since, keep = prune
            (cut,) = conn.execute(_journal.PRUNE_CUT, {"since": since, "keep": keep}).fetchone()
            if cut is not None:
                conn.execute(_journal.PRUNE, {"cut": cut})
        conn.execute("COMMIT")
    except BaseException:
        next_seq.clear()
        audit.forget()
        _rollback(conn)
        raise
    return results


_UPSERT_FENCE: Final = """
INSERT INTO session_fences(session_key, token) VALUES (?, ?)
ON CONFLICT(session_key) DO UPDATE SET token = excluded.token
"""
_READ_FENCES_HEAD: Final = "SELECT session_key, token FROM session_fences WHERE session_key IN "
_KEYS_PER_QUERY: Final = 500


def _read_fences(conn: sqlite3.Connection, keys: dict[str, int]) -> Fences:
    """The stored tokens of `keys` (those that have one), for the batch's fencing check."""
    names = list(keys)
    current: dict[str, int] = {}
    for i in range(0, len(names), _KEYS_PER_QUERY):
        chunk = names[i : i + _KEYS_PER_QUERY]
        sql = f"{_READ_FENCES_HEAD}({','.join('?' * len(chunk))})"
        current.update(conn.execute(sql, chunk).fetchall())
    return Fences(current)


def _delete(conn: sqlite3.Connection, op: Delete, next_seq: dict[str, int]) -> bool:
    """A session's row (and its transcript, when asked); whether there was a row."""
    found = conn.execute("SELECT session_id FROM sessions WHERE key = ?", (op.key,)).fetchone()
    if found is not None and op.delete_transcript:
        conn.execute("DELETE FROM entries WHERE session_id = ?", (found[0],))
        next_seq.pop(found[0], None)
    conn.execute("DELETE FROM sessions WHERE key = ?", (op.key,))
    return found is not None


def fetch_blobs(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> list[bytes]:
    return [blob for (blob,) in conn.execute(sql, params)]


def fetch_rows(
    conn: sqlite3.Connection, sql: str, params: Sequence[object]
) -> list[tuple[Any, ...]]:
    return conn.execute(sql, params).fetchall()


def fetch_pairs(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> dict[str, bytes]:
    return dict(conn.execute(sql, params).fetchall())


def close_all(conns: Sequence[sqlite3.Connection]) -> None:
    for conn in conns:
        try:
            conn.close()
        except sqlite3.Error:
            pass  # closing is best effort; every commit has already completed


_READ_ROWS_HEAD: Final = "SELECT key, row FROM sessions WHERE key IN "


class SqliteBackend:
    """The store's backend on one SQLite file (`StoreBackend`): a writer connection in WAL
    mode and reader connections beside it."""

    errors: Final = (sqlite3.Error,)

    def __init__(self, path: Path) -> None:
        self._path = path
        self._writer: sqlite3.Connection | None = None
        self._audit = _audit.AuditBounds()

    @property
    def location(self) -> str:
        return str(self._path)

    @property
    def path(self) -> Path:
        return self._path

    def open(self) -> None:
        self._writer = open_writer(self._path)

    def write_batch(
        self, writes: Sequence[Write], next_seq: dict[str, int], prune: tuple[int, int] | None
    ) -> list[object]:
        assert self._writer is not None, "write_batch before open"
        return write_batch(self._writer, writes, next_seq, prune, self._audit)

    def open_reader(self) -> sqlite3.Connection:
        return open_reader(self._path)

    def reader_ok(self, reader: sqlite3.Connection) -> bool:
        return True

    def close_reader(self, reader: sqlite3.Connection) -> None:
        close_all([reader])

    def close(self, readers: Sequence[sqlite3.Connection]) -> None:
        close_all([*readers, *([self._writer] if self._writer is not None else [])])
        self._writer = None

    def get_rows(self, reader: sqlite3.Connection, keys: Sequence[str]) -> dict[str, bytes]:
        sql = f"{_READ_ROWS_HEAD}({','.join('?' * len(keys))})"
        return fetch_pairs(reader, sql, keys)

    def list_rows(
        self,
        reader: sqlite3.Connection,
        agent_id: str | None,
        updated_after_ms: int | None,
        limit: int | None,
    ) -> list[bytes]:
        sql, params = list_query(agent_id, updated_after_ms, limit, "?")
        return fetch_blobs(reader, sql, params)

    def load_entries(self, reader: sqlite3.Connection, session_id: str) -> list[bytes]:
        sql = "SELECT body FROM entries WHERE session_id = ? ORDER BY seq"
        return fetch_blobs(reader, sql, (session_id,))

    def load_runs(self, reader: sqlite3.Connection) -> list[tuple[str, int | None, bytes]]:
        return fetch_rows(reader, _journal.LOAD, ())

    def call(self, reader: sqlite3.Connection, fn: Callable[[SqlConnection], _T]) -> _T:
        return fn(reader)
