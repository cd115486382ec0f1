"""The store's PostgreSQL backend (`PostgresBackend`): the same tables, rows and group
commit as the SQLite one (`actors.store._sqlite`), on a server several gateway processes share.

psycopg 3, blocking, in the store's worker threads (as `sqlite3` is): one writer connection
takes each batch in one transaction, readers run beside it on connections of their own
(each statement its own snapshot, in autocommit). A batch costs a few statements whatever
its size: the rows, entries and journal rows of a run of writes go in as arrays
(`INSERT ... SELECT * FROM unnest(...)`), one statement per table, one round trip each.
The arrays go in PostgreSQL's binary format (`%b`): psycopg builds a text array literal in
Python, about 20 µs of the gateway's CPU per row with a `bytea` in it, against about 2 µs
for the binary one (and the server parses it for less).

Schema: `schema_version(version)` records the migrations applied; `open` applies the
missing ones in one transaction under an advisory lock (nodes starting together do not
race), and refuses a database migrated by a newer clawlane. Session rows, transcript
entries and journal rows hold the same bytes as in SQLite (`bytea`), so the shapes read
back are the same.

Fencing: a batch with fenced writes first makes sure each of their sessions has a
`session_fences` row (inserting the first write's token where there is none), then reads
and locks those rows (`SELECT ... FOR UPDATE`, in key order: two nodes writing the same
sessions wait for each other instead of both passing the check), checks each fenced write
against them (`actors.store._ops.Fences`) and writes the raised tokens back, all in the
batch's transaction. The fences of sessions deleted more than a day ago are pruned behind a
horizon a write without a row is checked against (`FENCE_HORIZON_US`).

Left running without autovacuum (or between its passes), the tables stay their size:
session rows are rewritten in place (HOT updates: `sessions.list`'s indexes hold the minute
of `updated_at`, `_LISTED`), and the run journal, whose every row is deleted minutes after
it was written, is vacuumed by the writer after each prune (`_vacuum_journal`).

A connection that breaks (the server restarted, the connection terminated) fails the
batch or read in progress with `psycopg.Error` (the store's `StoreError`); the writer
connects again at its next batch and a broken reader is dropped, so writes and reads
resume when the server is back. A commit cut off mid-way (COMMIT sent, no answer) may
have committed: `write_batch` raises `CommitUnknown`, and the store asks the server, once
it can be reached, whether the batch's transaction committed (`pg_xact_status` of the id
each batch reads as it begins) before it tells the writes' callers either way.

Errors: `psycopg.Error` from the blocking calls (the store maps it to `StoreError`);
`open` raises `StoreError` itself, in one line, for a server it cannot reach and for an
unsupported schema version.
"""

from __future__ import annotations

import functools
import logging
import select
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .._errors import StoreError
from . import _audit, _memory, _usage
from ._ops import (
    AddAudit,
    AddUsage,
    Append,
    Call,
    CommitUnknown,
    Fences,
    Group,
    PutRow,
    PutRun,
    SqlConnection,
    SqlCursor,
    Write,
    fenced_keys,
    list_query,
    put_checked,
)
from ._search import PG_SCHEMA as _SEARCH_SCHEMA

__all__ = ["SCHEMA_VERSION", "PostgresBackend", "server_location"]

_T = TypeVar("_T")

log = logging.getLogger("clawlane.store")

SCHEMA_VERSION: Final = 9
_LISTED_MS: Final = 60_000
_LISTED: Final = f"updated_at / {_LISTED_MS}"
"""`sessions.listed_at`, the column `sessions.list`'s indexes hold: the minute of
`updated_at`, not `updated_at` itself. Every run writes its session's row (twice); were an
indexed column to change each time, PostgreSQL would add a row version to every index per
write, and only VACUUM would take the dead ones away. With the minute indexed, the writes of
a session within one minute leave the indexes alone (HOT updates, in the room `fillfactor`
keeps on each page), and the dead versions are pruned from the page as it is next read,
autovacuum or not. A list reads the index by minute and sorts each minute's rows by
`updated_at` (`list_query(..., listed_ms=...)`): the same order as before."""
_MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (  # 1: the SQLite store's tables (`actors.store._sqlite`, `actors.store._journal`)
        """CREATE TABLE sessions(
            key TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            updated_at BIGINT NOT NULL,
            row BYTEA NOT NULL
        )""",
        # `sessions.list`: newest first, all or one agent's (100,000 rows: index order)
        "CREATE INDEX sessions_updated_at ON sessions(updated_at)",
        "CREATE INDEX sessions_agent_updated_at ON sessions(agent_id, updated_at)",
        """CREATE TABLE entries(
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            entry_id TEXT NOT NULL,
            body BYTEA NOT NULL,
            PRIMARY KEY(session_id, seq)
        )""",
        """CREATE TABLE runs(
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id TEXT NOT NULL,
            ended_at BIGINT,
            body BYTEA NOT NULL
        )""",
    ),
    (  # 2: the fencing tokens of the sessions' leases (cluster mode)
        """CREATE TABLE session_fences(
            session_key TEXT PRIMARY KEY,
            token BIGINT NOT NULL
        )""",
    ),
    (  # 3: documents the nodes share whole, the device pairing store (`actors.store._documents`)
        """CREATE TABLE shared_documents(
            name TEXT PRIMARY KEY,
            version BIGINT NOT NULL,
            body BYTEA NOT NULL
        )""",
    ),
    (  # 4: the token below which pruned `session_fences` rows refuse (`_PRUNE_FENCES`)
        """CREATE TABLE fence_horizon(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            token BIGINT NOT NULL
        )""",
        "INSERT INTO fence_horizon(id, token) VALUES (1, 0)",
    ),
    (  # 5: `sessions.list` ordered through the minute of `updated_at` (`_LISTED`)
        "ALTER TABLE sessions SET (fillfactor = 50)",
        f"ALTER TABLE sessions ADD COLUMN listed_at BIGINT GENERATED ALWAYS AS ({_LISTED}) STORED",
        "DROP INDEX sessions_updated_at",
        "DROP INDEX sessions_agent_updated_at",
        "CREATE INDEX sessions_listed_at ON sessions(listed_at)",
        "CREATE INDEX sessions_agent_listed_at ON sessions(agent_id, listed_at)",
    ),
    _usage.SCHEMA,  # 6: the usage aggregates, kept as runs end (`actors.store._usage`)
    _SEARCH_SCHEMA,  # 7: full-text search over the transcripts (`actors.store._search`)
    _audit.PG_SCHEMA,  # 8: the audit log of runs and tool calls (`actors.store._audit`)
    _memory.PG_SCHEMA,  # 9: the agents' memory indexes (`actors.store._memory`)
)
_LOCK_KEY: Final = 0x636C61776C616E65  # "clawlane": one migration at a time per database

_UPSERT_SESSIONS: Final = """
INSERT INTO sessions(key, agent_id, session_id, updated_at, row)
SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::bigint[], %b::bytea[])
ON CONFLICT(key) DO UPDATE SET
    agent_id = excluded.agent_id,
    session_id = excluded.session_id,
    updated_at = excluded.updated_at,
    row = excluded.row
"""
_INSERT_ENTRIES: Final = """
INSERT INTO entries(session_id, seq, entry_id, body)
SELECT * FROM unnest(%b::text[], %b::int[], %b::text[], %b::bytea[])
"""
_INSERT_RUNS: Final = """
INSERT INTO runs(run_id, ended_at, body)
SELECT r, e, b FROM unnest(%b::text[], %b::bigint[], %b::bytea[]) WITH ORDINALITY AS t(r, e, b, n)
ORDER BY n
"""
_ENSURE_FENCES: Final = """
INSERT INTO session_fences(session_key, token)
SELECT k, GREATEST(t, (SELECT token FROM fence_horizon WHERE id = 1))
FROM unnest(%b::text[], %b::bigint[]) AS u(k, t) ON CONFLICT(session_key) DO NOTHING
RETURNING session_key
"""
_HORIZON_NOW: Final = "SELECT token FROM fence_horizon WHERE id = 1 FOR SHARE"
_SETTLE_FENCES: Final = """
UPDATE session_fences SET token = %(horizon)s
WHERE session_key = ANY(%(keys)s) AND token < %(horizon)s
"""
_LOCK_FENCES: Final = """
SELECT f.session_key, f.token FROM unnest(%b::text[]) AS k(key)
CROSS JOIN LATERAL (
    SELECT session_key, token FROM session_fences WHERE session_key = k.key FOR UPDATE
) AS f
"""
"""One primary-key probe per key, locked in the order of the array (sorted by the caller:
every node locks in the same order). Written so that no plan can do otherwise: the
`FOR UPDATE` keeps the subquery from being flattened into a join the planner could make
a scan of the table. `session_key = ANY(%s)` read the whole table on every batch once
PostgreSQL cached a generic plan made while the table was small (a sequential scan
comparing each row with each key: 10-50 ms a batch at 3,000 sessions, the cause of the
benchmark's runs/s falling round after round; and more with every session)."""
_RAISE_FENCES: Final = """
UPDATE session_fences SET token = t.token
FROM unnest(%b::text[], %b::bigint[]) AS t(key, token) WHERE session_key = t.key
"""
"""`_SETTLE_FENCES` and this run with `prepare=False` (only for batches that made or
raised fences): planned each time for the table as it is and the keys given, never from a
generic plan cached when the table was small (`_LOCK_FENCES`)."""
_GET_ROWS: Final = """
SELECT s.key, s.row FROM unnest(%s::text[]) AS k(key)
CROSS JOIN LATERAL (SELECT key, row FROM sessions WHERE key = k.key OFFSET 0) AS s
"""
"""One primary-key probe per key whatever the plan cache holds (`_LOCK_FENCES`; the
`OFFSET 0` keeps the subquery from being flattened)."""
_XACT_ID: Final = "SELECT pg_current_xact_id()::text"
_XACT_STATUS: Final = "SELECT pg_xact_status(%s::xid8)"
_TERMINATE: Final = "SELECT pg_terminate_backend(%s, 1000)"
"""A batch's transaction id, read as it begins (one statement), is how the outcome of a
COMMIT that got no answer is found (`PostgresBackend._committed`): `pg_xact_status` says
whether it committed, once its backend has ended (terminated if need be: a second's wait)."""
_NEXT_SEQ: Final = "SELECT COALESCE(MAX(seq) + 1, 0) FROM entries WHERE session_id = %s"
_NEXT_SEQS: Final = """
SELECT s, (SELECT COALESCE(MAX(seq) + 1, 0) FROM entries WHERE session_id = s)
FROM unnest(%b::text[]) AS s
"""
# `actors.store._journal.PRUNE_CUT` and `PRUNE`, in PostgreSQL's placeholders
_PRUNE_CUT: Final = """
SELECT COALESCE(
    (SELECT MIN(id) FROM (
        SELECT id FROM runs WHERE ended_at IS NOT NULL AND ended_at >= %(since)s
        ORDER BY id DESC LIMIT %(keep)s
    ) AS recent),
    (SELECT MAX(id) + 1 FROM runs)
)
"""
_PRUNE: Final = """
DELETE FROM runs WHERE id < %(cut)s AND run_id IN (
    SELECT run_id FROM runs WHERE ended_at IS NOT NULL AND id < %(cut)s
)
"""
_PRUNE_FENCES: Final = """
WITH horizon AS (
    UPDATE fence_horizon SET token = GREATEST(token, %(cut)s) WHERE id = 1 RETURNING token
)
DELETE FROM session_fences AS f
WHERE f.token < (SELECT token FROM horizon)
AND NOT EXISTS (SELECT 1 FROM sessions AS s WHERE s.key = f.session_key)
"""
FENCE_HORIZON_US: Final = 86_400_000_000
"""A `session_fences` row whose token is older than this (a day) and whose session is gone
is deleted; the horizon is raised to that age, and a fenced write to a key without a row
is checked against it (`_ENSURE_FENCES` makes the row with the horizon when the write's
token is older): a writer with a token from before the prune is still refused, and the
table holds the sessions there are, not every session key ever used. Tokens are
microseconds of Redis's clock (`actors.cluster._redis`), whose fence keys live as long; a new
lease's token is its acquisition time, past any horizon."""
FENCE_PRUNE_INTERVAL_S: Final = 600.0
_NEXT_SEQ_MAX: Final = 200_000
_CONNECT_TIMEOUT_S: Final = 5


class _Qmark:
    """A psycopg connection as an `SqlConnection`: `?` placeholders become `%s` (the cron
    store's portable SQL has no `%` and no `?` of its own)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Any = (), /) -> SqlCursor:
        return self._conn.execute(sql.replace("?", "%s"), parameters)


def server_location(url: str) -> str:
    """`postgresql://host:port/dbname` of a libpq URL or conninfo string, for messages (no
    user, no password). Raises `StoreError` when it is not one."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise StoreError(f"storage.postgres.url is not a PostgreSQL URL: {exc}") from exc
    host = info.get("host") or "localhost"
    port = info.get("port") or "5432"
    return f"postgresql://{host}:{port}/{info.get('dbname') or ''}"


def _alive(conn: psycopg.Connection[Any]) -> bool:
    """Whether `conn` may be used: not closed, not known broken, and its socket silent. An
    idle connection has nothing to say: a socket with something to read (end of file, or
    the server's goodbye) belongs to a connection that died while it was idle, say during
    a database restart or a cut link, and would fail the next statement sent on it. One
    non-blocking `select`, a few microseconds, once per batch or read."""
    if conn.closed or conn.broken:
        return False
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable


def _one_line(exc: BaseException) -> str:
    return "; ".join(part.strip() for part in str(exc).splitlines() if part.strip())


def _adopts(op: Write) -> bool:
    return isinstance(op, Group) and not op.writes and op.fence is not None


class PostgresBackend:
    """The store's backend on a PostgreSQL server (`StoreBackend`), given a libpq URL or
    conninfo string (`postgresql://user@host:5432/db`; `options=-csearch_path=...` picks a
    schema). No I/O until `open`."""

    errors: Final = (psycopg.Error,)

    def __init__(self, url: str) -> None:
        self._url = url
        self._location = server_location(url)
        self._writer: psycopg.Connection[Any] | None = None
        self.fence_prune_interval_s = FENCE_PRUNE_INTERVAL_S
        self._fences_pruned_at = time.monotonic()
        self._audit = _audit.AuditBounds()

    @property
    def location(self) -> str:
        return self._location

    @property
    def path(self) -> str:
        return self._location

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self._url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S)

    def open(self) -> None:
        try:
            self._writer = self._connect()
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"cannot reach PostgreSQL at {self._location}: {_one_line(exc)}"
            ) from exc
        with self._writer.transaction():
            self._writer.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            self._writer.execute(
                "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER PRIMARY KEY)"
            )
            found = self._writer.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = (found[0] if found else None) or 0
            if current > SCHEMA_VERSION:
                raise StoreError(f"{self._location}: unsupported schema version {current}")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[version - 1]:
                    self._writer.execute(statement)
                self._writer.execute("INSERT INTO schema_version(version) VALUES (%s)", (version,))

    def write_batch(
        self, writes: Sequence[Write], next_seq: dict[str, int], prune: tuple[int, int] | None
    ) -> list[object]:
        """Apply `writes` in one transaction (see `StoreBackend`); connects again first if
        the writer's connection was lost."""
        conn = self._writer
        if conn is None or not _alive(conn):
            next_seq.clear()
            conn = self._reconnect()
        if len(next_seq) > _NEXT_SEQ_MAX or any(_adopts(op) for op in writes):
            # A session taken over (`Store.advance_fence`): its transcript may have grown
            # on the node that had it, so the next entry numbers are read again.
            next_seq.clear()
        results: list[object] = []
        pending = _Gathered(conn, next_seq, self._audit)
        keys = fenced_keys(writes)
        pruned = 0
        xid: str | None = None  # the transaction's id: whether it committed, if unheard
        pid, committing = conn.info.backend_pid, False
        try:
            with conn.transaction():
                (xid,) = conn.execute(_XACT_ID).fetchone() or (None,)
                fences = self._lock_fences(conn, keys) if keys else None
                self._read_next_seqs(conn, writes, next_seq)
                for op in writes:
                    if isinstance(op, PutRow | Append | PutRun | Group):
                        results.append(put_checked(op, fences, pending.put))
                    elif isinstance(op, AddAudit):
                        pending.audit.add(op, len(results))
                        results.append(False)
                    else:
                        pending.flush()
                        results.append(self._other(conn, op, next_seq))
                pending.flush()
                pending.audit.flush(_Qmark(conn), pending.insert_audit, results)
                if fences is not None and fences.raised:
                    raised = fences.raised
                    args = (list(raised), list(raised.values()))
                    conn.execute(_RAISE_FENCES, args, prepare=False)
                if prune is not None:
                    pruned = self._prune(conn, *prune)
                committing = True
        except BaseException as exc:
            next_seq.clear()
            self._audit.forget()
            lost = conn.closed or conn.broken
            if committing and xid is not None and isinstance(exc, psycopg.Error) and lost:
                # COMMIT went out, no answer came back: it may have committed
                resolve = functools.partial(self._committed, xid, pid)
                raise CommitUnknown(results, exc, resolve) from exc
            raise
        if pruned:
            self._vacuum_journal(conn)
        return results

    def _reconnect(self) -> psycopg.Connection[Any]:
        """A new writer connection in place of one lost (closed first)."""
        conn, self._writer = self._writer, None
        if conn is not None:
            self.close_reader(conn)
        self._writer = self._connect()
        return self._writer

    def _committed(self, xid: str, pid: int) -> bool | None:
        """Whether transaction `xid`, whose COMMIT got no answer, committed (True) or not
        (False), asked on the writer's connection (made again if it was lost): None when
        the server cannot tell (the transaction is too old to be known). A transaction
        still in progress (its backend, `pid`, has not yet read the COMMIT or the end of
        its connection) is ended first: its backend is terminated and waited for (a
        second), so that the answer is final. Raises `psycopg.Error` while the server
        cannot be reached. Called by the store's writer (`CommitUnknown.resolve`)."""
        conn = self._writer
        if conn is None or not _alive(conn):
            conn = self._reconnect()
        for attempt in range(2):
            (status,) = conn.execute(_XACT_STATUS, (xid,)).fetchone() or (None,)
            if status != "in progress":
                break
            if attempt == 0:
                try:
                    conn.execute(_TERMINATE, (pid,))
                except psycopg.errors.InsufficientPrivilege:
                    return None  # not ours to end: asked again later
        return True if status == "committed" else False if status == "aborted" else None

    @staticmethod
    def _lock_fences(conn: psycopg.Connection[Any], keys: dict[str, int]) -> Fences:
        """Lock the `session_fences` rows of `keys` (made with the first write's token
        where missing) for the batch's fencing check; two statements whatever the count.

        A row made here may have raced a prune (`_PRUNE_FENCES`): the insert read the old
        horizon, then waited for the prune to delete the row it conflicted with. So the
        rows made are brought up to the horizon as it is now, read under a share lock (a
        prune in flight is waited for; one after cannot raise it until this commits).
        And a row the prune deleted between the insert and the lock is made again."""
        names = sorted(keys)
        found: dict[str, int] = {}
        for _ in range(3):
            wanted = [k for k in names if k not in found]
            made = conn.execute(_ENSURE_FENCES, (wanted, [keys[k] for k in wanted]))
            made_keys = [str(k) for (k,) in made.fetchall()]
            if made_keys:
                (horizon,) = conn.execute(_HORIZON_NOW).fetchone() or (0,)
                args = {"horizon": horizon, "keys": made_keys}
                conn.execute(_SETTLE_FENCES, args, prepare=False)
            found.update(conn.execute(_LOCK_FENCES, (wanted,)).fetchall())
            if len(found) == len(names):
                break
        return Fences(found)

    @staticmethod
    def _read_next_seqs(
        conn: psycopg.Connection[Any], writes: Sequence[Write], next_seq: dict[str, int]
    ) -> None:
        """The next entry numbers of the transcripts the batch appends to and this writer
        does not know yet, in one statement (a batch of first runs in as many sessions
        made one round trip each)."""
        wanted = {
            part.session_id
            for op in writes
            for part in (op.writes if isinstance(op, Group) else (op,))
            if isinstance(part, Append) and part.session_id not in next_seq
        }
        if wanted:
            rows = conn.execute(_NEXT_SEQS, (sorted(wanted),)).fetchall()
            next_seq.update((str(sid), int(seq)) for sid, seq in rows)

    @staticmethod
    def _other(conn: psycopg.Connection[Any], op: Write, next_seq: dict[str, int]) -> object:
        """A `Call` (another module's statements) or a `Delete` (whether a row went)."""
        if isinstance(op, Call):
            return op.fn(_Qmark(conn))
        assert not isinstance(op, PutRow | Append | PutRun | Group | AddAudit)
        found = conn.execute("SELECT session_id FROM sessions WHERE key = %s", (op.key,)).fetchone()
        if found is not None and op.delete_transcript:
            conn.execute("DELETE FROM entries WHERE session_id = %s", (found[0],))
            next_seq.pop(found[0], None)
        conn.execute("DELETE FROM sessions WHERE key = %s", (op.key,))
        return found is not None

    def _prune(self, conn: psycopg.Connection[Any], since: int, keep: int) -> int:
        """The journal's old ended rows (how many went); every `fence_prune_interval_s` the
        fences of sessions gone for longer than `FENCE_HORIZON_US`."""
        pruned = 0
        found = conn.execute(_PRUNE_CUT, {"since": since, "keep": keep}).fetchone()
        if found is not None and found[0] is not None:
            pruned = conn.execute(_PRUNE, {"cut": found[0]}).rowcount
        now = time.monotonic()
        if now - self._fences_pruned_at >= self.fence_prune_interval_s:
            self._fences_pruned_at = now
            cut = int(time.time() * 1_000_000) - FENCE_HORIZON_US
            conn.execute(_PRUNE_FENCES, {"cut": cut})
        return max(pruned, 0)

    @staticmethod
    def _vacuum_journal(conn: psycopg.Connection[Any]) -> None:
        """VACUUM the run journal after a prune took rows from it (the batch has committed).

        Every run writes two rows there and a prune deletes them a few minutes later: the
        table's churn is the store's own, at the rate of the runs, so the store reclaims it
        rather than trust autovacuum (off on some servers, and a minute or more behind on
        the others, while the next prune scans the dead rows). The table holds only the
        last minutes' runs, so this is milliseconds. A failure is logged: the batch's
        writes stand."""
        try:
            conn.execute("VACUUM (SKIP_LOCKED) runs")
        except psycopg.Error as exc:
            log.warning("store: the run journal was not vacuumed: %s", _one_line(exc))

    def open_reader(self) -> psycopg.Connection[Any]:
        return self._connect()

    def reader_ok(self, reader: psycopg.Connection[Any]) -> bool:
        return _alive(reader)

    def close_reader(self, reader: psycopg.Connection[Any]) -> None:
        try:
            reader.close()
        except psycopg.Error:
            pass  # best effort: nothing is pending on a reader

    def close(self, readers: Sequence[psycopg.Connection[Any]]) -> None:
        for conn in [*readers, *([self._writer] if self._writer is not None else [])]:
            self.close_reader(conn)
        self._writer = None

    def get_rows(self, reader: psycopg.Connection[Any], keys: Sequence[str]) -> dict[str, bytes]:
        return dict(reader.execute(_GET_ROWS, (list(keys),), binary=True).fetchall())

    def list_rows(
        self,
        reader: psycopg.Connection[Any],
        agent_id: str | None,
        updated_after_ms: int | None,
        limit: int | None,
    ) -> list[bytes]:
        sql, params = list_query(agent_id, updated_after_ms, limit, "%s", listed_ms=_LISTED_MS)
        return [blob for (blob,) in reader.execute(sql, params, binary=True).fetchall()]

    def load_entries(self, reader: psycopg.Connection[Any], session_id: str) -> list[bytes]:
        sql = "SELECT body FROM entries WHERE session_id = %s ORDER BY seq"
        return [blob for (blob,) in reader.execute(sql, (session_id,), binary=True).fetchall()]

    def load_runs(self, reader: psycopg.Connection[Any]) -> list[tuple[str, int | None, bytes]]:
        sql = "SELECT run_id, ended_at, body FROM runs ORDER BY id"
        return reader.execute(sql, binary=True).fetchall()

    def call(self, reader: psycopg.Connection[Any], fn: Callable[[SqlConnection], _T]) -> _T:
        return fn(_Qmark(reader))


class _Gathered:
    """The writes of a batch gathered by table until something that must see them (a
    delete, another module's statements, the commit) flushes them: one statement per table.
    """

    __slots__ = ("audit", "conn", "entries", "next_seq", "rows", "runs", "usage")

    def __init__(
        self, conn: psycopg.Connection[Any], next_seq: dict[str, int], audit: _audit.AuditBounds
    ) -> None:
        self.conn = conn
        self.next_seq = next_seq
        self.rows: dict[str, PutRow] = {}  # the last write of a key wins
        self.entries: tuple[list[str], list[int], list[str], list[bytes]] = ([], [], [], [])
        self.runs: tuple[list[str], list[int | None], list[bytes]] = ([], [], [])
        self.usage = _usage.UsageBatch()
        self.audit = _audit.AuditBatch(audit)  # inserted once, as the batch ends

    def put(self, op: PutRow | Append | PutRun | AddUsage | Call) -> None:
        if isinstance(op, PutRow):
            self.rows.pop(op.key, None)
            self.rows[op.key] = op
        elif isinstance(op, Append):
            self.append(op)
        elif isinstance(op, AddUsage):
            self.usage.add(op)
        elif isinstance(op, Call):  # a group's other statements, after what it wrote so far
            self.flush()
            op.fn(_Qmark(self.conn))
        else:
            run_ids, ended, bodies = self.runs
            run_ids.append(op.run.run_id)
            ended.append(op.run.ended_at)
            bodies.append(op.run.body)

    def append(self, op: Append) -> None:
        sid = op.session_id
        seq = self.next_seq.get(sid)
        if seq is None:
            found = self.conn.execute(_NEXT_SEQ, (sid,)).fetchone()
            seq = int(found[0]) if found else 0
        sids, seqs, ids, bodies = self.entries
        for eid, body in op.items:
            sids.append(sid)
            seqs.append(seq)
            ids.append(eid)
            bodies.append(body)
            seq += 1
        self.next_seq[sid] = seq

    def flush(self) -> None:
        conn = self.conn
        if self.rows:
            rows = list(self.rows.values())
            self.rows.clear()
            columns = (
                [r.key for r in rows],
                [r.agent_id for r in rows],
                [r.session_id for r in rows],
                [r.updated_at for r in rows],
                [r.body for r in rows],
            )
            conn.execute(_UPSERT_SESSIONS, columns)
        if self.entries[0]:
            conn.execute(_INSERT_ENTRIES, self.entries)
            self.entries = ([], [], [], [])
        if self.runs[0]:
            conn.execute(_INSERT_RUNS, self.runs)
            self.runs = ([], [], [])
        self.usage.flush(self._executemany)

    def _executemany(self, sql: str, rows: list[list[Any]]) -> None:
        with self.conn.cursor() as cur:  # one round trip for all rows (psycopg's pipeline)
            cur.executemany(sql.replace("?", "%s"), rows)

    def insert_audit(self, ids: list[str], rows: Sequence[tuple[Any, ...]]) -> int:
        """A batch's audit rows (`_audit.Insert`) in one statement, an array a column."""
        width = len(_audit.COLUMNS) - 1
        if not rows:
            return 0
        if any(len(row) != width for row in rows):
            raise psycopg.ProgrammingError(f"an audit row is not {width} values")
        columns = [ids, *(list(c) for c in zip(*rows, strict=True))]
        return max(self.conn.execute(_audit.PG_INSERT, columns).rowcount, 0)
