"""The audit log: metadata-only records of runs and tool calls, what `audit.list` and
`audit.activity.list` read (OpenClaw 2026.9.6's audit ledger).

One table in the gateway's store, `audit_events`, on either backend: `sequence` numbers the
rows in the order they were written (SQLite's `AUTOINCREMENT`, PostgreSQL's identity: one
order for every node of a cluster), and `source_id` (time, run, event seq, action) is
unique, so an event recorded twice is kept once. `event_id` is a random UUID, not indexed:
an index of random keys touches a random page per row, twice the cost of an insert (the
source id starts with the time, so its index grows at its end). No text of a prompt, a reply, a tool's
arguments or its result is kept: the tool call's id is kept as its SHA-256.

Bounded as OpenClaw bounds it: rows older than 30 days (`RETENTION_MS`) are dropped, up to
`PRUNE_BATCH` at a time, with each insert, and when the table holds more than `MAX_ROWS`
the oldest go, down to `MAX_ROWS - PRUNE_BATCH`; a listing never shows a row older than the
retention either. The count is kept by the writer (`AuditBounds`: read once, then counted
as rows go in and out, read again every `RECOUNT_EVERY` inserts, since other nodes insert
too).

The rows go in inside a batch of the store's writer under a savepoint: a failure of the
audit statements is rolled back alone and reported in its result, never failing the run
rows, transcripts and journal rows of the same batch. The recorder's rows travel as
`AddAudit` writes (`Store.add_audit`), which each backend gathers per batch (`AuditBatch`)
and inserts as the batch ends: one multi-row statement per up to 256 rows on SQLite (in
power-of-two sizes, so the statements stay prepared), one `unnest` of arrays on PostgreSQL
(`PG_INSERT`); the batch's other multi-row inserts are not cut by them. `AuditTable.inserter`
is the same as a function for `Store.write`.

Every read is a checkpoint and raises `StoreError` when the database fails.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

import attrs

from ._ops import AddAudit, SqlConnection

__all__ = [
    "COLUMNS",
    "INSERT_HEAD",
    "INSERT_TAIL",
    "MAX_ROWS",
    "PG_INSERT",
    "PG_SCHEMA",
    "RETENTION_MS",
    "SQLITE_SCHEMA",
    "AuditBatch",
    "AuditBounds",
    "AuditFilter",
    "AuditPage",
    "AuditTable",
]

log = logging.getLogger("clawlane.audit")

_T = TypeVar("_T")

RETENTION_MS: Final = 30 * 86_400_000
MAX_ROWS: Final = 100_000
PRUNE_BATCH: Final = 1024
RECOUNT_EVERY: Final = 20_000
_CHUNK: Final = 400
"""Rows a multi-row INSERT carries (`len(COLUMNS)` parameters each: within both servers'
parameter limits)."""

COLUMNS: Final = (
    "event_id",
    "source_id",
    "source_sequence",
    "occurred_at",
    "kind",
    "action",
    "status",
    "error_code",
    "actor_type",
    "actor_id",
    "agent_id",
    "session_key",
    "session_id",
    "run_id",
    "tool_call_id",
    "tool_name",
)
"""What a row holds besides its `sequence`, in the order `AuditTable.insert` takes it
(`event_id` is made there: a row handed in starts at `source_id`)."""


def _schema(sequence: str) -> tuple[str, ...]:
    return (
        f"""CREATE TABLE IF NOT EXISTS audit_events(
    sequence {sequence},
    event_id TEXT NOT NULL,
    source_id TEXT NOT NULL UNIQUE,
    source_sequence BIGINT NOT NULL,
    occurred_at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    action TEXT NOT NULL,
    status TEXT NOT NULL,
    error_code TEXT,
    actor_type TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    agent_id TEXT,
    session_key TEXT,
    session_id TEXT,
    run_id TEXT,
    tool_call_id TEXT,
    tool_name TEXT
)""",
        "CREATE INDEX IF NOT EXISTS audit_events_time ON audit_events(occurred_at, sequence)",
        "CREATE INDEX IF NOT EXISTS audit_events_agent ON audit_events(agent_id, sequence)",
    )


SQLITE_SCHEMA: Final = _schema("INTEGER PRIMARY KEY AUTOINCREMENT")
PG_SCHEMA: Final = _schema("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY")
"""The table and its indexes, made by each backend as it opens the store (SQLite: with its
schema; PostgreSQL: a migration). By time and by agent, whose keys grow at the end; not by
session or run, as OpenClaw's: their keys are scattered, and each such index cost more than
the rest of a row's insert together (a session's or a run's events are found by a scan of
the table's at most `MAX_ROWS` rows, newest first)."""

INSERT_HEAD: Final = "INSERT INTO audit_events(" + ", ".join(COLUMNS) + ") VALUES "
INSERT_TAIL: Final = "ON CONFLICT(source_id) DO NOTHING"
"""A multi-row insert is `INSERT_HEAD`, its rows' `(?, ...)`, then `INSERT_TAIL`."""
_ROW: Final = "(" + ", ".join("?" * len(COLUMNS)) + ")"
_PG_TYPES: Final = ["text", "text", "bigint", "bigint"] + ["text"] * (len(COLUMNS) - 4)
PG_INSERT: Final = (
    f"INSERT INTO audit_events({', '.join(COLUMNS)}) "
    f"SELECT {', '.join(f'c{i}' for i in range(len(COLUMNS)))} FROM unnest("
    + ", ".join(f"%b::{t}[]" for t in _PG_TYPES)
    + f") WITH ORDINALITY AS t({', '.join(f'c{i}' for i in range(len(COLUMNS)))}, n) "
    f"ORDER BY n {INSERT_TAIL}"
)
"""PostgreSQL's insert of a batch's rows in one statement: an array a column (`COLUMNS`,
in that order), the rows in their order (`sequence` numbers them so)."""
_EXPIRED: Final = (
    "DELETE FROM audit_events WHERE sequence IN (SELECT sequence FROM audit_events "
    "WHERE occurred_at < ? ORDER BY occurred_at, sequence LIMIT ?)"
)
_OVERFLOW: Final = "SELECT sequence FROM audit_events ORDER BY sequence DESC LIMIT 1 OFFSET "
_SELECT: Final = (
    "SELECT sequence, event_id, source_sequence, occurred_at, kind, action, status, "
    "error_code, actor_type, actor_id, agent_id, session_key, session_id, run_id, "
    "tool_call_id, tool_name FROM audit_events"
)


class _Reader(Protocol):
    """What `AuditTable` needs of the `Store`: its readers."""

    async def read(self, fn: Callable[[SqlConnection], _T]) -> _T: ...


@attrs.frozen
class AuditFilter:
    """What a listing keeps (the params of `audit.list` / `audit.activity.list`): `after`
    and `before` bound `occurredAt` (inclusive), `cursor` is the `sequence` to list below."""

    limit: int = 100
    cursor: int | None = None
    agent_id: str | None = None
    session_key: str | None = None
    run_id: str | None = None
    kind: str | None = None
    status: str | None = None
    after: int | None = None
    before: int | None = None

    def where(self, now_ms: int) -> tuple[str, list[object]]:
        clauses = ["occurred_at >= ?"]
        args: list[object] = [now_ms - RETENTION_MS]
        for column, value in (
            ("agent_id", self.agent_id),
            ("session_key", self.session_key),
            ("run_id", self.run_id),
            ("kind", self.kind),
            ("status", self.status),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        if self.cursor is not None:
            clauses.append("sequence < ?")
            args.append(self.cursor)
        if self.after is not None:
            clauses.append("occurred_at >= ?")
            args.append(self.after)
        if self.before is not None:
            clauses.append("occurred_at <= ?")
            args.append(self.before)
        return " WHERE " + " AND ".join(clauses), args


@attrs.frozen
class AuditPage:
    """A listing: the events newest first (OpenClaw's shape, `AuditEvent` without the
    activity's `eventType`/`schemaVersion`), and the cursor of the next page (None: the
    last page)."""

    events: list[dict[str, Any]]
    next_cursor: int | None


def _event(row: Sequence[Any]) -> dict[str, Any]:
    (
        seq,
        event_id,
        source_seq,
        occurred,
        kind,
        action,
        status,
        error_code,
        actor_type,
        actor_id,
        agent_id,
        session_key,
        session_id,
        run_id,
        tool_call_id,
        tool_name,
    ) = row
    event: dict[str, Any] = {
        "eventId": str(event_id),
        "sequence": int(seq),
        "sourceSequence": int(source_seq),
        "occurredAt": int(occurred),
        "kind": str(kind),
        "action": str(action),
        "status": str(status),
    }
    if error_code is not None:
        event["errorCode"] = str(error_code)
    event["actor"] = {"type": str(actor_type), "id": str(actor_id)}
    event["agentId"] = str(agent_id or "unknown")
    if session_key:
        event["sessionKey"] = str(session_key)
    if session_id:
        event["sessionId"] = str(session_id)
    event["runId"] = str(run_id)
    if tool_call_id:
        event["toolCallId"] = str(tool_call_id)
    if tool_name:
        event["toolName"] = str(tool_name)
    event["redaction"] = "metadata_only"
    return event


def _event_ids(n: int) -> list[str]:
    """`n` random (version 4) UUIDs from one read of the system's randomness: `uuid.uuid4`
    reads it once each, which is most of an insert's time in Python (the GIL held)."""
    raw = os.urandom(16 * n).hex()
    variant = _VARIANT
    return [
        f"{raw[i : i + 8]}-{raw[i + 8 : i + 12]}-4{raw[i + 13 : i + 16]}-"
        f"{variant[raw[i + 16]]}{raw[i + 17 : i + 20]}-{raw[i + 20 : i + 32]}"
        for i in range(0, 32 * n, 32)
    ]


_VARIANT: Final = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}
"""A hex digit as a UUID's variant digit (its top two bits 10)."""


Insert = Callable[[list[str], Sequence[tuple[Any, ...]]], int]
"""How a writer inserts rows: `(event ids, rows without them)`, the rows inserted."""


class AuditBounds:
    """The writer's side of the bounds: the row count it has seen (the one writer thread
    keeps it, from insert to insert) and the inserts rolled back. One per writer: each
    backend has one for its batches' `AddAudit` rows, an `AuditTable` one for its
    `inserter`."""

    __slots__ = ("_count", "_since_count", "failures")

    def __init__(self) -> None:
        self._count: int | None = None
        self._since_count = 0
        self.failures = 0
        """Inserts rolled back (their rows are lost; the batch around them committed)."""

    def insert(
        self, conn: SqlConnection, rows: Sequence[tuple[Any, ...]], now_ms: int, insert: Insert
    ) -> int:
        """Insert `rows` (`COLUMNS` without `event_id`) with `insert` and drop what is
        beyond the bounds, under a savepoint. The rows inserted, or -1 when the statements
        failed (rolled back to the savepoint, logged and counted in `failures`)."""
        conn.execute("SAVEPOINT audit_events")
        try:
            added = max(insert(_event_ids(len(rows)), rows), 0)
            self._prune(conn, added, now_ms)
            conn.execute("RELEASE SAVEPOINT audit_events")
        except Exception as exc:  # the driver's error: these audit rows alone go
            conn.execute("ROLLBACK TO SAVEPOINT audit_events")
            conn.execute("RELEASE SAVEPOINT audit_events")
            self._count = None
            self.failures += 1
            log.warning("audit: %d events not recorded: %s", len(rows), exc)
            return -1
        return added

    def forget(self) -> None:
        """The transaction around the inserts rolled back: count again at the next one."""
        self._count = None

    def _prune(self, conn: SqlConnection, added: int, now_ms: int) -> None:
        expired = conn.execute(_EXPIRED, (now_ms - RETENTION_MS, PRUNE_BATCH)).rowcount
        self._since_count += added
        if self._count is None or self._since_count >= RECOUNT_EVERY:
            (count,) = conn.execute("SELECT COUNT(*) FROM audit_events").fetchone()
            self._count, self._since_count = int(count), 0
        else:
            self._count = max(0, self._count + added - max(expired, 0))
        if self._count > MAX_ROWS:
            found = conn.execute(f"{_OVERFLOW}{int(MAX_ROWS - PRUNE_BATCH)}").fetchone()
            if found is not None:
                cut = conn.execute("DELETE FROM audit_events WHERE sequence <= ?", (found[0],))
                self._count = max(0, self._count - max(cut.rowcount, 0))


class AuditBatch:
    """The `AddAudit` rows of one write batch, gathered by the backend's writer (`add`, with
    the write's place among the batch's results) and inserted together as the batch ends
    (`flush`): one insert and one prune under one savepoint, whatever the number of writes.
    Each write's result is whether the rows went in: a failure loses the batch's audit rows
    together (one write a batch, as the recorder waits for each), never its other writes."""

    __slots__ = ("bounds", "now_ms", "rows", "slots")

    def __init__(self, bounds: AuditBounds) -> None:
        self.bounds = bounds
        self.rows: list[tuple[Any, ...]] = []
        self.slots: list[int] = []
        self.now_ms = 0

    def add(self, op: AddAudit, slot: int) -> None:
        self.rows.extend(op.rows)
        self.slots.append(slot)
        self.now_ms = max(self.now_ms, op.now_ms)

    def flush(self, conn: SqlConnection, insert: Insert, results: list[object]) -> None:
        """Insert what is held (see `AuditBounds.insert`) and set the results of its
        writes, then hold nothing."""
        if not self.slots:
            return
        added = self.bounds.insert(conn, self.rows, self.now_ms, insert) if self.rows else 0
        for slot in self.slots:
            results[slot] = added >= 0
        self.rows, self.slots, self.now_ms = [], [], 0


def _insert_chunks(conn: SqlConnection, ids: list[str], rows: Sequence[tuple[Any, ...]]) -> int:
    """`Insert` for any connection: multi-row statements of up to `_CHUNK` rows."""
    added = 0
    for i in range(0, len(rows), _CHUNK):
        chunk = rows[i : i + _CHUNK]
        args: list[Any] = []
        for event_id, row in zip(ids[i : i + _CHUNK], chunk, strict=True):
            args.append(event_id)
            args.extend(row)
        sql = INSERT_HEAD + ", ".join([_ROW] * len(chunk)) + " " + INSERT_TAIL
        added += max(conn.execute(sql, args).rowcount, 0)
    return added


class AuditTable:
    """The `audit_events` table of one store: `list` (on a reader) and `inserter` (a
    function for `Store.write`, run in the writer's transaction, keeping a row count of its
    own; the recorder's rows go as `AddAudit` writes instead, `Store.add_audit`)."""

    def __init__(self, store: _Reader) -> None:
        self._store = store
        self._bounds = AuditBounds()

    @property
    def failures(self) -> int:
        """Inserts rolled back (their rows are lost; the batch around them committed)."""
        return self._bounds.failures

    def inserter(
        self, rows: Sequence[tuple[Any, ...]], now_ms: int
    ) -> Callable[[SqlConnection], int]:
        """The function `Store.write` runs in the writer's transaction: insert `rows`
        (`COLUMNS` without `event_id`) and drop what is beyond the bounds, under a
        savepoint. It returns the rows inserted, or -1 when the statements failed (rolled
        back to the savepoint, logged and counted in `failures`)."""
        return lambda conn: self._bounds.insert(
            conn, rows, now_ms, lambda ids, chunk: _insert_chunks(conn, ids, chunk)
        )

    async def list(self, which: AuditFilter, now_ms: int) -> AuditPage:
        """A page of events, newest first (by `sequence`), with the next page's cursor."""
        where, args = which.where(now_ms)
        sql = f"{_SELECT}{where} ORDER BY sequence DESC LIMIT ?"
        args.append(which.limit + 1)
        rows = await self._store.read(lambda c: c.execute(sql, args).fetchall())
        more = len(rows) > which.limit
        events = [_event(r) for r in rows[: which.limit]]
        return AuditPage(events, events[-1]["sequence"] if more and events else None)
