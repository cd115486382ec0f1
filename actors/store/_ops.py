"""The store's backend seam: the operations on the write channel (what `actors.store._store`
enqueues and its writer hands to the backend in batches) and the interface a backend
implements (`StoreBackend`): the SQL side of the store, run in worker threads.

Two backends implement it: `actors.store._sqlite.SqliteBackend` (one file, the embedded default)
and `actors.store._pg.PostgresBackend` (a PostgreSQL server, for several gateway processes). The
store actor (channel, group commit, waiters, statistics) is the same for both.

Fencing (cluster mode): a session's writes may carry a `Fence`, the session key and the
fencing token of the lease its node holds (`actors.cluster._primitives.Leases`). Each backend keeps
the highest token it has seen per key (`session_fences`) and, inside the batch's
transaction, refuses a fenced write whose token is lower (its result is a `FencedOut`, the
rest of the batch commits); `Fences` is that check, shared by the backends. A batch with no
fenced write costs no query.

Errors: a backend's blocking calls raise its driver's errors (`StoreBackend.errors`: the
store maps them to `StoreError`) or `StoreError` itself; an operation's `Waiter` reports
a failure as a `StoreError` (a refused fenced write: `FencedOut`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import attrs
import trio

from runtime.sessions import SessionRow, TranscriptEntry

from .._errors import FencedOut, StoreError
from ._journal import END_UNLESS_ENDED, JournalRow

__all__ = [
    "AddAudit",
    "AddUsage",
    "Append",
    "Barrier",
    "Call",
    "CommitUnknown",
    "Delete",
    "Fence",
    "Fences",
    "Group",
    "Op",
    "PutRow",
    "PutRun",
    "SqlConnection",
    "SqlCursor",
    "StoreBackend",
    "Waiter",
    "Write",
    "WriteGroup",
    "end_unless_ended",
    "fenced_keys",
    "list_query",
    "put_checked",
]

_T = TypeVar("_T")


class SqlCursor(Protocol):
    """What `SqlConnection.execute` returns (a `sqlite3.Cursor`, a `psycopg.Cursor`)."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class SqlConnection(Protocol):
    """The connection `Store.write` and `Store.read` hand to another module's function:
    `execute(sql, params)` with `?` placeholders and portable SQL, on either backend."""

    def execute(self, sql: str, parameters: Any = ..., /) -> SqlCursor: ...


# --- operations on the write channel ------------------------------------------------------


@attrs.define(eq=False)
class Waiter:
    """Woken when the operation it belongs to has been committed (or has failed).

    Cheap when nobody waits (a commit callback, at thousands of runs a second): the event
    is made by the first `wait`, the error message only when there is an error."""

    message: str = ""
    subject: str | None = None
    """Appended to `message` (quoted) in the error, when given."""
    store: str | None = None
    """The store whose commit failed (its location), named in the error."""
    cause: BaseException | None = None
    result: object = None
    callback: Callable[[StoreError | None], None] | None = None
    """Called in the writer task once the commit is done (or failed), instead of a task
    waiting; it must not block. One that raises is logged."""
    done: bool = False
    _event: trio.Event | None = None

    def error(self) -> StoreError | None:
        cause = self.cause
        if cause is None:
            return None
        if isinstance(cause, FencedOut):  # its own message names the session and tokens
            return FencedOut(cause.key, cause.token, cause.current)
        what = self.message if self.subject is None else f"{self.message} {self.subject!r}"
        what = what if self.store is None else f"{what} in {self.store}"
        error = StoreError(f"{what}: {self.cause}")
        error.__cause__ = self.cause
        return error

    def set(self) -> None:
        self.done = True
        if self._event is not None:
            self._event.set()

    async def wait_done(self) -> None:
        """Wait until the commit is done or failed. A checkpoint."""
        if self.done:
            await trio.lowlevel.checkpoint()
            return
        if self._event is None:
            self._event = trio.Event()
        await self._event.wait()

    async def wait(self) -> object:
        await self.wait_done()
        error = self.error()
        if error is not None:
            raise error
        return self.result


@attrs.frozen
class Fence:
    """What a durable write of session `key` carries in cluster mode: the fencing `token`
    of the lease its node holds on the session (`actors.cluster._primitives.Lease.token`). The store
    refuses a write whose token is older than the newest it has seen for `key`."""

    key: str
    token: int


@attrs.frozen(eq=False)
class PutRow:
    key: str
    agent_id: str
    session_id: str
    updated_at: int
    body: bytes
    waiter: Waiter | None = None
    fence: Fence | None = None


@attrs.frozen(eq=False)
class Append:
    session_id: str
    items: tuple[tuple[str, bytes], ...]
    waiter: Waiter | None = None
    fence: Fence | None = None


@attrs.frozen(eq=False)
class PutRun:
    run: JournalRow
    waiter: Waiter | None = None
    fence: Fence | None = None


@attrs.frozen(eq=False)
class WriteGroup:
    """Writes that commit together, in one transaction, or not at all: what travels from a
    run's end, a session's change or an admission down to the store.

    - `run`: a run journal row (`_journal`); `row`: the session's row; `entries`: transcript
      entries appended to `session_id`. Any may be absent.
    - `on_commit`: called once, from the writer, with None when the transaction committed or
      the `StoreError` when it failed (`FencedOut` when `fence` was refused); it must not
      block. (`Store.commit_durable` waits instead and takes none.)
    - `fence`: the session's lease token; with it the group is refused whole when the store
      holds a newer token for that key.
    - `usage`: the run's usage aggregates (`actors.store._usage`), added in the same
      transaction; the backends merge a batch's usage rows and upsert them once, at the
      batch's end (a run's own statements would cut the batch's multi-row inserts).
    - `calls`: other modules' statements run in the same transaction, after the rest."""

    run: JournalRow | None = None
    row: SessionRow | None = None
    session_id: str | None = None
    entries: Sequence[TranscriptEntry] = ()
    on_commit: Callable[[StoreError | None], None] | None = None
    fence: Fence | None = None
    usage: AddUsage | None = None
    calls: Sequence[Callable[[SqlConnection], object]] = ()


@attrs.frozen(eq=False)
class AddUsage:
    """Rows to add to the usage aggregates (`actors.store._usage`: `usage_write` makes
    them, `UsageBatch` merges a batch's and upserts them): `buckets` in `usage_buckets`'
    column order, `tools` in `usage_tools`' (lists or tuples; not changed once made)."""

    buckets: Sequence[Sequence[Any]]
    tools: Sequence[Sequence[Any]]


@attrs.frozen(eq=False)
class AddAudit:
    """Rows for the audit log (`actors.store._audit`: `COLUMNS` without `event_id`, as of
    `now_ms`), handed to the writer by `Store.add_audit`. The backends gather a batch's
    (`_audit.AuditBatch`) and insert them as the batch ends, in multi-row statements under
    one savepoint: they never cut the batch's other multi-row inserts, as a `Call` would.
    Its result: whether its rows went in (False: the batch's audit statements failed and
    were rolled back alone, the rest of the batch committed)."""

    rows: Sequence[tuple[Any, ...]]
    now_ms: int
    waiter: Waiter | None = None


@attrs.frozen(eq=False)
class Group:
    """Writes committed together (always in one transaction), with one waiter. A fenced
    group is refused whole (its parts' own fences are not looked at). A fenced group with
    no writes only advances its key's token (`Store.advance_fence`)."""

    writes: tuple[PutRow | Append | PutRun | AddUsage | Call, ...]
    waiter: Waiter | None = None
    fence: Fence | None = None


@attrs.frozen(eq=False)
class Delete:
    key: str
    delete_transcript: bool
    waiter: Waiter | None = None


@attrs.frozen(eq=False)
class Call:
    """Another module's own statements (`Store.write`), run inside the batch's transaction."""

    fn: Callable[[SqlConnection], object]
    waiter: Waiter | None = None


@attrs.frozen(eq=False)
class Barrier:
    """A flush marker. `low` is the number of operations already processed when the flush
    began: a failed operation at an index at or above it makes the flush fail. `hold`: it
    also waits for the commits taken before it whose outcome is still unknown (a flush);
    a read's marker does not (whatever the database holds is what it reads)."""

    low: int
    waiter: Waiter
    hold: bool = True


class CommitUnknown(Exception):
    """`StoreBackend.write_batch` lost its connection as the batch committed (COMMIT was
    sent, no answer came back): the batch may have committed. `results` are what
    `write_batch` returns if it did; `cause` is the driver's error. `resolve()` (blocking,
    in the writer's thread) asks the database: True committed, False not, None cannot tell
    yet; it raises the driver's errors while the database cannot be reached."""

    def __init__(
        self, results: list[object], cause: Exception, resolve: Callable[[], bool | None]
    ) -> None:
        super().__init__(str(cause))
        self.results = results
        self.cause = cause
        self.resolve = resolve


Write = PutRow | Append | PutRun | Group | Delete | Call | AddAudit
Op = PutRow | Append | PutRun | Group | Delete | Call | AddAudit | Barrier


class StoreBackend(Protocol):
    """The SQL side of the store. Every method but `location`/`errors`/`path` blocks and
    runs in a worker thread; the writer methods (`open`, `write_batch`, `close`) are called
    by one thread at a time, the reads on a reader of their own (at most one call a reader
    at a time).

    `errors`: the driver's exception types the blocking calls raise (mapped to
    `StoreError` by the store). `open` connects the writer and creates or migrates the
    schema (raising `StoreError` for a database it cannot use). `write_batch` applies the
    writes in one transaction and returns one result each (a `Delete`: whether a row went;
    a `Call`: its function's result; an `AddAudit`: whether its rows went in); `next_seq`
    is the writer's memory of each transcript's next entry number (emptied when a batch
    rolls back); `prune` is `(before_ms, keep)` for the run journal. A reader is anything
    the read methods take; `reader_ok` says whether one is worth keeping after an error.
    `close` closes the writer and `readers` (best effort, never raises; also after a failed
    `open`).
    """

    @property
    def location(self) -> str:
        """The file or server, for messages (never a password)."""
        ...

    @property
    def path(self) -> Any:
        """What `Store.path` reports (the SQLite file; the server's location)."""
        ...

    @property
    def errors(self) -> tuple[type[Exception], ...]: ...

    def open(self) -> None: ...
    def write_batch(
        self, writes: Sequence[Write], next_seq: dict[str, int], prune: tuple[int, int] | None
    ) -> list[object]: ...
    def open_reader(self) -> Any: ...
    def reader_ok(self, reader: Any) -> bool: ...
    def close_reader(self, reader: Any) -> None: ...
    def close(self, readers: Sequence[Any]) -> None: ...
    def get_rows(self, reader: Any, keys: Sequence[str]) -> dict[str, bytes]: ...
    def list_rows(
        self, reader: Any, agent_id: str | None, updated_after_ms: int | None, limit: int | None
    ) -> list[bytes]: ...
    def load_entries(self, reader: Any, session_id: str) -> list[bytes]: ...
    def load_runs(self, reader: Any) -> list[tuple[str, int | None, bytes]]: ...
    def call(self, reader: Any, fn: Callable[[SqlConnection], _T]) -> _T: ...


def fenced_keys(writes: Sequence[Write]) -> dict[str, int]:
    """The session keys the fenced writes of a batch name, each with the token of its first
    fenced write, in the order they come (empty: nothing to check, no query to make)."""
    found: dict[str, int] = {}
    for op in writes:
        if not isinstance(op, Delete | Call | AddAudit) and op.fence is not None:
            found.setdefault(op.fence.key, op.fence.token)
    return found


class Fences:
    """The fencing check of one batch (`write_batch`, in its transaction): `current` holds
    the token the store holds for each fenced key of the batch (read once, up front); each
    fenced write is checked in batch order by `refuse`, which keeps the highest token seen;
    `raised` is what to write back to `session_fences` before the commit."""

    __slots__ = ("current", "raised")

    def __init__(self, current: dict[str, int]) -> None:
        self.current = current
        self.raised: dict[str, int] = {}

    def refuse(self, fence: Fence) -> FencedOut | None:
        """The error of a write carrying `fence` if its token is older than the key's
        current one (it must not be applied), else None (the token is now the current)."""
        key, token = fence.key, fence.token
        current = self.current.get(key)
        if current is not None and token < current:
            return FencedOut(key, token, current)
        if current is None or token > current:
            self.current[key] = token
            self.raised[key] = token
        return None


def put_checked(
    op: PutRow | Append | PutRun | Group,
    fences: Fences | None,
    put: Callable[[PutRow | Append | PutRun | AddUsage | Call], None],
) -> FencedOut | None:
    """A row, entries or journal write of a batch (a `Group`'s writes together) handed to
    the backend's `put`, unless its fence is refused: then the refusal, and nothing is
    applied (the rest of the batch goes on). Both backends' `write_batch` use it."""
    if op.fence is not None:
        assert fences is not None
        refused = fences.refuse(op.fence)
        if refused is not None:
            return refused
    if isinstance(op, Group):
        for part in op.writes:
            put(part)
    else:
        put(op)
    return None


def list_query(
    agent_id: str | None,
    updated_after_ms: int | None,
    limit: int | None,
    mark: str,
    *,
    listed_ms: int | None = None,
) -> tuple[str, list[object]]:
    """`Store.list_sessions`' query with `mark` for a placeholder (`?`, `%s`), newest first:
    served by the `updated_at` index (or the `(agent_id, updated_at)` one); with
    `listed_ms`, by the indexes of a `listed_at` column holding `updated_at / listed_ms`
    (PostgreSQL's, `actors.store._pg._LISTED`), each step of it sorted by `updated_at`."""
    clauses: list[str] = []
    params: list[object] = []
    if agent_id is not None:
        clauses.append(f"agent_id = {mark}")
        params.append(agent_id)
    if updated_after_ms is not None:
        clauses.append(f"updated_at > {mark}")
        params.append(updated_after_ms)
        if listed_ms is not None:
            clauses.append(f"listed_at >= CAST({mark} AS BIGINT) / {int(listed_ms)}")
            params.append(updated_after_ms)
    sql = "SELECT row FROM sessions"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY " + ("listed_at DESC, " if listed_ms is not None else "") + "updated_at DESC"
    if limit is not None:
        sql += f" LIMIT {mark}"
        params.append(max(limit, 0))
    return sql, params


def end_unless_ended(row: JournalRow) -> Callable[[SqlConnection], bool]:
    """The statement (a `WriteGroup` call) that writes end row `row` again after its commit
    was reported failed: a commit cut off as it went through may have committed it (the
    connection lost after COMMIT was sent), and a run's end is written once. True when it
    wrote the row."""
    assert row.ended_at is not None

    def write(conn: SqlConnection) -> bool:
        args = (row.run_id, row.ended_at, row.body, row.run_id, row.run_id)
        return conn.execute(END_UNLESS_ENDED, args).rowcount == 1

    return write
