"""The store's backend seam: the operations on the write channel (what `actors._store`
enqueues and its writer hands to the backend in batches) and the interface a backend
implements (`StoreBackend`): the SQL side of the store, run in worker threads.

Two backends implement it: `actors._sqlite.SqliteBackend` (one file, the embedded default)
and `actors._pg.PostgresBackend` (a PostgreSQL server, for several gateway processes). The
store actor (channel, group commit, waiters, statistics) is the same for both.

Errors: a backend's blocking calls raise its driver's errors (`StoreBackend.errors`: the
store maps them to `StoreError`) or `StoreError` itself; an operation's `Waiter` reports
a failure as a `StoreError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import attrs
import trio

from ._errors import StoreError
from ._journal import JournalRow

__all__ = [
    "Append",
    "Barrier",
    "Call",
    "Delete",
    "Group",
    "Op",
    "PutRow",
    "PutRun",
    "SqlConnection",
    "SqlCursor",
    "StoreBackend",
    "Waiter",
    "Write",
    "list_query",
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
    cause: BaseException | None = None
    result: object = None
    callback: Callable[[StoreError | None], None] | None = None
    """Called in the writer task once the commit is done (or failed), instead of a task
    waiting; it must not block. One that raises is logged."""
    done: bool = False
    _event: trio.Event | None = None

    def error(self) -> StoreError | None:
        if self.cause is None:
            return None
        what = self.message if self.subject is None else f"{self.message} {self.subject!r}"
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


@attrs.frozen(eq=False)
class PutRow:
    key: str
    agent_id: str
    session_id: str
    updated_at: int
    body: bytes
    waiter: Waiter | None = None


@attrs.frozen(eq=False)
class Append:
    session_id: str
    items: tuple[tuple[str, bytes], ...]
    waiter: Waiter | None = None


@attrs.frozen(eq=False)
class PutRun:
    run: JournalRow
    waiter: Waiter | None = None


@attrs.frozen(eq=False)
class Group:
    """Writes committed together (always in one transaction), with one waiter."""

    writes: tuple[PutRow | Append | PutRun, ...]
    waiter: Waiter | None = None


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
    began: a failed operation at an index at or above it makes the flush fail."""

    low: int
    waiter: Waiter


Write = PutRow | Append | PutRun | Group | Delete | Call
Op = PutRow | Append | PutRun | Group | Delete | Call | Barrier


class StoreBackend(Protocol):
    """The SQL side of the store. Every method but `location`/`errors`/`path` blocks and
    runs in a worker thread; the writer methods (`open`, `write_batch`, `close`) are called
    by one thread at a time, the reads on a reader of their own (at most one call a reader
    at a time).

    `errors`: the driver's exception types the blocking calls raise (mapped to
    `StoreError` by the store). `open` connects the writer and creates or migrates the
    schema (raising `StoreError` for a database it cannot use). `write_batch` applies the
    writes in one transaction and returns one result each (a `Delete`: whether a row went;
    a `Call`: its function's result); `next_seq` is the writer's memory of each
    transcript's next entry number (emptied when a batch rolls back); `prune` is
    `(before_ms, keep)` for the run journal. A reader is anything the read methods take;
    `reader_ok` says whether one is worth keeping after an error. `close` closes the
    writer and `readers` (best effort, never raises; also after a failed `open`).
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


def list_query(
    agent_id: str | None, updated_after_ms: int | None, limit: int | None, mark: str
) -> tuple[str, list[object]]:
    """`Store.list_sessions`' query with `mark` for a placeholder (`?`, `%s`): served by
    the `updated_at` index (or the `(agent_id, updated_at)` one), newest first."""
    clauses: list[str] = []
    params: list[object] = []
    if agent_id is not None:
        clauses.append(f"agent_id = {mark}")
        params.append(agent_id)
    if updated_after_ms is not None:
        clauses.append(f"updated_at > {mark}")
        params.append(updated_after_ms)
    sql = "SELECT row FROM sessions"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY updated_at DESC"
    if limit is not None:
        sql += f" LIMIT {mark}"
        params.append(max(limit, 0))
    return sql, params
