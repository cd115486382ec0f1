"""The Store actor: the one owner of the database (session rows and transcripts).

Writes travel over a bounded trio memory channel to a single writer task. The writer takes
everything pending (up to `batch_max` operations) and commits it as one transaction in a
worker thread (group commit), so no trio task ever waits on the disk and one fsync covers
many writes. Reads run in worker threads on their own connections (WAL lets them run
beside the writer) after the writes enqueued before them have been committed.

The database runs in WAL mode with `synchronous=NORMAL`: a committed transaction survives
the process being killed (it may be lost on power failure, never torn).

Beside the session rows and transcripts the store keeps the run journal (`_journal`: one
row per accepted run, written when it is accepted and again when it ends, in the same group
commit as the rows and entries that go with it). A write that fails is never silent: its
waiter or commit callback gets the error, the failure is logged (at most once per
`FAILURE_LOG_INTERVAL_S`, with the count since) and counted in `statistics()`, and the
writer goes on with the next batch, so writes resume when the disk does.

The SQL side (the schema, the batch writer and the reads, all run in worker threads) is
a backend behind one interface (`actors.store._ops.StoreBackend`, beside the operations on
the write channel): `actors.store._sqlite` (one file, the default: `open_store(path)`) or
`actors.store._pg` (a PostgreSQL server: `open_store(backend=PostgresBackend(url))`, or
`actors.store._config.open_store_backend` from the config). The actor does not know which.

Fencing (cluster mode): the writes of a session may carry a `Fence` (its key and the
fencing token of its node's lease). The backends keep the newest token of each key and
refuse, in the batch's transaction, a fenced write with an older one: it is not applied,
its waiter or commit callback gets `FencedOut`, and the rest of the batch commits (a
refused write is not a failure of the store: nothing is rolled back, `failing` stays as
it was; `statistics().fenced_out` counts them). `advance_fence` records a new owner's
token before it writes anything. Unfenced writes (the single-process default) are never
checked and cost nothing more.

Errors (`actors._errors`):
- `StoreError`: a commit or a read failed (the backend's driver error, `sqlite3.Error` or
  `psycopg.Error`, mapped with `raise ... from`), or stored bytes do not decode, or the
  database cannot be opened (a file it cannot use, a server it cannot reach).
- `StoreClosedError` (a `StoreError`): the store was used after its context closed.
- `FencedOut` (a `StoreError`): a fenced write was refused (see Fencing above).
- `trio.WouldBlock` from the `*_nowait` methods when the write channel is full.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import msgspec
import trio

from runtime import telemetry
from runtime.sessions import (
    SessionRow,
    TranscriptEntry,
    decode_entries,
    decode_session_row,
    decode_session_rows,
    encode_entry,
    encode_session_row,
)

from .._errors import FencedOut, StoreClosedError, StoreError
from .._metrics import COMMIT_BUCKETS, Histogram
from . import _journal
from ._journal import JournalRow
from ._ops import (
    AddUsage,
    Append,
    Barrier,
    Call,
    Delete,
    Fence,
    Group,
    Op,
    PutRow,
    PutRun,
    SqlConnection,
    StoreBackend,
    Waiter,
    Write,
    WriteGroup,
)
from ._sqlite import SqliteBackend
from ._traced import CommitTraces

log = logging.getLogger("clawlane.store")


class _DeadReader(Exception):
    """A read failed and took its reader with it (`StoreError` in `error`)."""

    def __init__(self, error: StoreError) -> None:
        super().__init__(str(error))
        self.error = error
DEFAULT_BATCH_MAX: Final = 512
DEFAULT_QUEUE_MAX: Final = 4096
_MAX_READERS: Final = 4
_KEYS_PER_QUERY: Final = 500
FAILURE_LOG_INTERVAL_S: Final = 10.0
RUNS_KEEP: Final = 1000
RUNS_TTL_MS: Final = 300_000

_T = TypeVar("_T")
_U = TypeVar("_U")


@attrs.frozen
class StoreStatistics:
    """A snapshot of the writer.

    `pending`: writes submitted (including those waiting for channel space) and not yet
    committed or failed. `commits`: transactions committed. `rows_written` /
    `entries_written`: session rows upserted and transcript entries appended by them.
    `last_batch_size`: writes in the last committed transaction. `failed_commits`:
    transactions rolled back; `failed_writes`: the writes they held; `last_error`,
    `last_error_at_ms`: the last failure's message and time; `failing`: the last commit
    failed (writes have not resumed yet); `runs_written`: run journal rows;
    `fenced_out`: fenced writes refused (`FencedOut`), not counted as written.
    """

    pending: int
    commits: int
    rows_written: int
    entries_written: int
    last_batch_size: int
    failed_commits: int
    failed_writes: int = 0
    last_error: str | None = None
    last_error_at_ms: int | None = None
    failing: bool = False
    runs_written: int = 0
    fenced_out: int = 0


@attrs.define(eq=False)
class _RowBatch:
    """Session rows read together (`Store.get_session`): the keys, then what was found."""

    keys: set[str] = attrs.field(factory=set)
    done: trio.Event = attrs.field(factory=trio.Event)
    found: dict[str, bytes] = attrs.field(factory=dict)
    failure: StoreError | None = None


# --- the actor ---------------------------------------------------------------------------


class Store:
    """Session rows and transcripts in one database (a `StoreBackend`). Made by `open_store`.

    Backpressure: the write channel holds `queue_max` operations. When it is full,
    `put_session`, `append_entries`, `delete_session`, `flush` and reads that have to wait
    for pending writes block until the writer has taken a batch; the `*_nowait` twins raise
    `trio.WouldBlock` instead. Nothing is ever dropped.

    Every async method is a checkpoint. Cancelling a call before its write is enqueued
    withdraws it; cancelling it after (while waiting for the commit) does not: the write
    is still committed.
    """

    def __init__(
        self,
        backend: StoreBackend,
        *,
        batch_max: int,
        queue_max: int,
        runs_keep: int = RUNS_KEEP,
        runs_ttl_ms: int = RUNS_TTL_MS,
    ) -> None:
        self._backend = backend
        self._path = backend.location
        self._errors = backend.errors
        self._batch_max = batch_max
        self._send, self._receive = trio.open_memory_channel[Op](queue_max)
        self._closed = False
        self._readers: list[Any] = []
        self._reader_slots = trio.Semaphore(_MAX_READERS)
        # writer bookkeeping: operations are numbered in the order the writer takes them
        self._taken = 0
        self._processed = 0
        self._last_failed = -1
        self._last_failure: BaseException | None = None
        self._pending = 0
        self._commits = 0
        self._failed_commits = 0
        self._rows_written = 0
        self._entries_written = 0
        self._last_batch_size = 0
        self._failed_writes = 0
        self._last_error: str | None = None
        self._last_error_at: int | None = None
        self._failing = False
        self._runs_written = 0
        self._fenced_out = 0
        self._fenced_logged_at = float("-inf")
        self._failure_logged_at = float("-inf")
        self._failures_unlogged = 0
        self._runs_keep = runs_keep
        self._runs_ttl_ms = runs_ttl_ms
        self._last_prune = time.monotonic()
        self._next_seq: dict[str, int] = {}  # the writer thread's, between batches
        self._row_batch: _RowBatch | None = None  # what `get_session` callers join
        system = "sqlite" if isinstance(backend, SqliteBackend) else "postgresql"
        self._traces = CommitTraces(system)  # with telemetry on: the writes' traces
        self.commit_seconds = Histogram(COMMIT_BUCKETS)
        """Each committed batch: its transaction and the worker-thread hand-over."""

    @property
    def path(self) -> Path | str:
        """The SQLite file, or the PostgreSQL server (`host:port/dbname`, no password)."""
        return self._backend.path  # type: ignore[no-any-return]

    @property
    def backend(self) -> StoreBackend:
        return self._backend

    @property
    def closed(self) -> bool:
        """The store is closed (or its writer failed): nothing more can be written."""
        return self._closed

    def statistics(self) -> StoreStatistics:
        """Not a checkpoint."""
        return StoreStatistics(
            pending=self._pending,
            commits=self._commits,
            rows_written=self._rows_written,
            entries_written=self._entries_written,
            last_batch_size=self._last_batch_size,
            failed_commits=self._failed_commits,
            failed_writes=self._failed_writes,
            last_error=self._last_error,
            last_error_at_ms=self._last_error_at,
            failing=self._failing,
            runs_written=self._runs_written,
            fenced_out=self._fenced_out,
        )

    # --- writes ------------------------------------------------------------------------

    async def put_session(self, row: SessionRow, *, fence: Fence | None = None) -> None:
        """Enqueue an upsert of `row` (by `row.key`); return once it is enqueued.

        A checkpoint; blocks while the channel is full. A commit failure is not reported
        here: see `flush` and `statistics().failed_commits`. `fence` (this and every
        write method): the write is refused if the store holds a newer token for its key.
        """
        await self._submit(self._put_op(row, None, fence))

    def put_session_nowait(
        self,
        row: SessionRow,
        *,
        on_commit: Callable[[StoreError | None], None] | None = None,
        fence: Fence | None = None,
    ) -> None:
        """Like `put_session`, but never blocks: raises `trio.WouldBlock` when full.

        `on_commit` (optional) is called from the writer task once the transaction holding
        the row has committed (with None) or failed (with the `StoreError`; `FencedOut`
        when refused): the durable write of `put_session_durable` without a task waiting
        for it."""
        waiter = None
        if on_commit is not None:
            waiter = Waiter("cannot store session", row.key, callback=on_commit)
        self._submit_nowait(self._put_op(row, waiter, fence))

    async def put_session_durable(self, row: SessionRow, *, fence: Fence | None = None) -> None:
        """Upsert `row` and return after the transaction holding it has committed.

        A checkpoint. Raises `StoreError` if that commit failed (`FencedOut` if `fence`
        was refused). Cancelled while waiting for the commit, the row is still written.
        """
        waiter = Waiter("cannot store session", row.key)
        op = self._put_op(row, waiter, fence)
        try:
            self._submit_nowait(op)  # no yield for the enqueue: the commit wait is one
        except trio.WouldBlock:
            await self._submit(op)
        await waiter.wait()

    async def append_entries(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        fence: Fence | None = None,
    ) -> None:
        """Enqueue `entries` to be appended, in order, to the transcript of `session_id`.

        A checkpoint; blocks while the channel is full; all entries commit together.
        """
        if not entries:
            await trio.lowlevel.checkpoint()
            return
        await self._submit(self._append_op(session_id, entries, fence))

    def append_entries_nowait(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        fence: Fence | None = None,
    ) -> None:
        """Like `append_entries`, but never blocks: raises `trio.WouldBlock` when full."""
        if entries:
            self._submit_nowait(self._append_op(session_id, entries, fence))

    async def advance_fence(self, fence: Fence) -> None:
        """Record `fence.token` as the current token of `fence.key` (a node calls it right
        after taking the session's lease): from then on writes with an older token are
        refused, before this node has written anything. Returns once committed. A
        checkpoint. Raises `FencedOut` if the store already holds a newer token (this
        node's lease is itself stale), `StoreError` if the commit failed."""
        waiter = Waiter("cannot record the fencing token of session", fence.key)
        await self._submit(Group((), waiter, fence))
        await waiter.wait()

    # --- groups of writes, and the run journal (`_journal`) --------------------------------

    def commit_nowait(self, group: WriteGroup) -> None:
        """Enqueue `group`: its writes commit together, in one transaction (see
        `WriteGroup`); its `on_commit` hears how. Never blocks: raises `trio.WouldBlock`
        when the channel is full."""
        self._submit_nowait(self._group(group))

    async def commit(self, group: WriteGroup) -> None:
        """Like `commit_nowait`, but waits for channel space (not for the commit). A
        checkpoint."""
        await self._submit(self._group(group))

    async def commit_durable(self, group: WriteGroup) -> None:
        """Like `commit_nowait`, returning once the transaction has committed (`group`
        takes no `on_commit`). A checkpoint. Raises `StoreError` if the commit failed
        (`FencedOut` if refused); cancelled while waiting for the commit, the writes still
        go ahead."""
        assert group.on_commit is None
        op = self._group(group)
        assert op.waiter is not None
        try:
            self._submit_nowait(op)
        except trio.WouldBlock:
            await self._submit(op)
        await op.waiter.wait()

    async def save_turn(
        self,
        *,
        row: SessionRow | None = None,
        session_id: str | None = None,
        entries: Sequence[TranscriptEntry] = (),
    ) -> None:
        """A session's row and transcript entries, durably and together: the embedded
        runtime's `SessionStore` (`runtime.agent`). A checkpoint. Raises `StoreError`."""
        await self.commit_durable(WriteGroup(row=row, session_id=session_id, entries=entries))

    async def load_runs(self, *, since_ms: int) -> list[JournalRow]:
        """Each journaled run's last row: those still `accepted`, and those ended at or
        after `since_ms`; in the order they were last written. Sees every write enqueued
        before the call. A checkpoint."""
        found = await self._read(self._backend.load_runs)
        last: dict[str, JournalRow] = {}
        for run_id, ended_at, body in found:
            try:
                row = JournalRow.stored(run_id, ended_at, body)
            except msgspec.DecodeError as exc:
                log.warning(
                    "store %s: run %s: unreadable journal row skipped (%s)", self._path, run_id, exc
                )
                continue
            last.pop(row.run_id, None)
            last[row.run_id] = row
        return [r for r in last.values() if not r.ended or (r.ended_at or 0) >= since_ms]

    def _group(self, group: WriteGroup) -> Group:
        parts: list[PutRow | Append | PutRun | AddUsage | Call] = []
        if group.entries:
            assert group.session_id is not None
            parts.append(self._append_op(group.session_id, group.entries, None))
        if group.row is not None:
            parts.append(self._put_op(group.row, None, None))
        if group.usage is not None:
            parts.append(group.usage)
        parts.extend(Call(fn) for fn in group.calls)
        if group.run is not None:
            parts.append(PutRun(group.run))
            waiter = Waiter("cannot store run", group.run.run_id, callback=group.on_commit)
        else:
            subject = group.session_id or (group.row.key if group.row else "")
            waiter = Waiter("cannot store session", subject, callback=group.on_commit)
        return Group(tuple(parts), waiter, group.fence)

    async def delete_session(self, key: str, *, delete_transcript: bool = True) -> bool:
        """Delete the row of `key` (and its transcript); True if there was a row.

        Returns after the commit. A checkpoint. Raises `StoreError` if the commit failed.
        """
        waiter = Waiter("cannot delete session", key)
        await self._submit(Delete(key, delete_transcript, waiter))
        return bool(await waiter.wait())

    async def flush(self) -> None:
        """Wait until every write enqueued before this call has been committed.

        A checkpoint. Raises `StoreError` if any of the writes that were still uncommitted
        when it was called failed. Cancelling it withdraws nothing.
        """
        waiter = await self._barrier()
        if waiter is not None:
            await waiter.wait()

    async def write(self, fn: Callable[[SqlConnection], _T], *, what: str = "write") -> _T:
        """Run `fn(conn)` in the writer's next transaction (group commit with everything
        else) and return its result once that transaction has committed: the hook for
        modules with tables of their own (`actors.cron._store`). `conn.execute` takes `?`
        placeholders on either backend. `fn` runs in the writer thread and must raise
        nothing but the backend's errors (a failure rolls the batch back: `StoreError`
        here). A checkpoint; cancelled while waiting for the commit, the write still
        happens."""
        waiter = Waiter(message=f"cannot {what}")
        await self._submit(Call(fn, waiter))
        return await waiter.wait()  # type: ignore[return-value]

    async def read(self, fn: Callable[[SqlConnection], _T]) -> _T:
        """Run `fn(conn)` on a reader connection after the writes enqueued before it have
        committed (the read twin of `write`). A checkpoint; raises `StoreError`."""
        return await self._read(lambda reader: self._backend.call(reader, fn))

    # --- reads -------------------------------------------------------------------------

    async def get_session(self, key: str) -> SessionRow | None:
        """The row of `key`, or None. Sees every write enqueued before the call. A checkpoint.

        Concurrent calls share one read: the first caller waits one scheduler round for
        others to join, then reads every key asked for so far in one query (a burst of new
        sessions costs a few thread hops, not one each)."""
        self._check_open()
        batch = self._row_batch
        leader = batch is None
        if batch is None:
            batch = self._row_batch = _RowBatch()
        batch.keys.add(key)
        if leader:
            with trio.CancelScope(shield=True):  # the others wait on this read
                await trio.lowlevel.checkpoint()
                self._row_batch = None
                await self._read_rows(batch)
        await batch.done.wait()
        if batch.failure is not None:  # the shared read failed: the same error for each
            raise type(batch.failure)(str(batch.failure)) from batch.failure.__cause__
        blob = batch.found.get(key)
        return self._decode(decode_session_row, blob) if blob is not None else None

    async def _read_rows(self, batch: _RowBatch) -> None:
        keys = list(batch.keys)
        get_rows = self._backend.get_rows
        try:
            for i in range(0, len(keys), _KEYS_PER_QUERY):
                chunk = keys[i : i + _KEYS_PER_QUERY]
                batch.found.update(await self._read(functools.partial(get_rows, keys=chunk)))
        except StoreError as exc:
            batch.failure = exc
        batch.done.set()

    async def list_sessions(
        self,
        *,
        limit: int | None = None,
        agent_id: str | None = None,
        updated_after_ms: int | None = None,
    ) -> list[SessionRow]:
        """Rows, most recently updated first; optionally only one agent's, only those with
        `updatedAt > updated_after_ms`, at most `limit`. Sees every write enqueued before
        the call. A checkpoint.
        """
        list_rows = self._backend.list_rows
        blobs = await self._read(lambda r: list_rows(r, agent_id, updated_after_ms, limit))
        return self._decode(decode_session_rows, blobs)

    async def load_entries(self, session_id: str) -> list[TranscriptEntry]:
        """The transcript of `session_id` in append order. Sees every write enqueued before
        the call. A checkpoint.
        """
        load = self._backend.load_entries
        blobs = await self._read(lambda r: load(r, session_id))
        return self._decode(decode_entries, blobs)

    # --- internals ---------------------------------------------------------------------

    def _put_op(self, row: SessionRow, waiter: Waiter | None, fence: Fence | None) -> PutRow:
        body = encode_session_row(row)
        return PutRow(row.key, row.agentId, row.sessionId, row.updatedAt, body, waiter, fence)

    def _append_op(
        self, session_id: str, entries: Sequence[TranscriptEntry], fence: Fence | None
    ) -> Append:
        return Append(session_id, tuple((e.id, encode_entry(e)) for e in entries), None, fence)

    async def _submit(self, op: Op) -> None:
        self._check_open()
        counted = 0 if isinstance(op, Barrier) else 1
        self._pending += counted
        if telemetry.STATE.on:
            self._traces.note(op)
        try:
            await self._send.send(op)
        except BaseException as exc:
            self._traces.forget(op)
            self._pending -= counted
            if isinstance(exc, trio.ClosedResourceError | trio.BrokenResourceError):
                raise StoreClosedError(f"store {self._path} is closed") from exc
            raise

    def _submit_nowait(self, op: Write) -> None:
        self._check_open()
        if telemetry.STATE.on:
            self._traces.note(op)
        try:
            self._send.send_nowait(op)
        except (trio.ClosedResourceError, trio.BrokenResourceError) as exc:
            raise StoreClosedError(f"store {self._path} is closed") from exc
        self._pending += 1

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"store {self._path} is closed")

    async def _barrier(self) -> Waiter | None:
        """Enqueue a flush marker; None (after a checkpoint) if nothing is pending.

        The writer parked in `receive` holds nothing and has processed everything taken,
        and the channel is empty: then there is nothing to wait for.
        """
        self._check_open()
        if self._receive.statistics().tasks_waiting_receive:
            await trio.lowlevel.checkpoint()
            return None
        waiter = Waiter(message="a write enqueued before this flush failed to commit")
        await self._submit(Barrier(self._processed, waiter))
        return waiter

    async def _read(self, query: Callable[[Any], _T]) -> _T:
        """`query(reader)` in a worker thread on a reader of the backend's, once the writes
        enqueued before it are done. A kept reader that died while idle (a PostgreSQL
        connection cut while the database was away) is replaced before it is used; one that
        fails and is no longer usable is closed, not kept, and when it was a kept one the
        read is tried once more on a fresh connection (reads are idempotent): a blip that is
        over fails no read."""
        waiter = await self._barrier()
        if waiter is not None:
            await waiter.wait_done()  # a failed earlier write is not this read's error
        async with self._reader_slots:
            self._check_open()
            kept = self._readers.pop() if self._readers else None
            if kept is not None and not self._backend.reader_ok(kept):
                with trio.CancelScope(shield=True):  # died while idle: replaced before use
                    await trio.to_thread.run_sync(self._backend.close_reader, kept)
                kept = None
            if kept is not None:
                try:
                    return await self._read_on(kept, query)
                except _DeadReader:
                    pass  # it died unnoticed: once more, on a fresh connection
            try:
                return await self._read_on(None, query)
            except _DeadReader as dead:
                raise dead.error from dead.error.__cause__

    async def _read_on(self, conn: Any, query: Callable[[Any], _T]) -> _T:
        """`query` on `conn` (None: a fresh reader), which is kept for the next read unless
        it failed for good. Raises `StoreError`, or `_DeadReader` (carrying it) when the
        reader is no longer usable."""
        backend = self._backend
        keep = True
        try:
            if conn is None:
                conn = await trio.to_thread.run_sync(backend.open_reader)
            return await trio.to_thread.run_sync(query, conn)
        except self._errors as exc:
            keep = conn is not None and backend.reader_ok(conn)
            error = StoreError(f"read from {self._path} failed: {exc}")
            error.__cause__ = exc
            if not keep:
                raise _DeadReader(error) from exc
            raise error from exc
        finally:
            if conn is not None:
                if self._closed or not keep:
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(backend.close_reader, conn)
                else:
                    self._readers.append(conn)

    def _decode(self, decode: Callable[[_U], _T], data: _U) -> _T:
        try:
            return decode(data)
        except msgspec.DecodeError as exc:
            raise StoreError(f"corrupt data in {self._path}: {exc}") from exc

    async def _run_writer(self) -> None:
        """The writer task: commit batches until the channel is closed and drained.

        Shielded, so cancelling the surrounding scope never drops enqueued writes; it ends
        when `open_store` closes the channel.
        """
        with trio.CancelScope(shield=True):
            batch: list[Op] = []
            try:
                async for first in self._receive:
                    batch = [first]
                    while len(batch) < self._batch_max:
                        try:
                            batch.append(self._receive.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    if self._traces.pending:
                        await self._traces.commit(self._commit, batch)
                    else:
                        await self._commit(batch)
                    batch = []
            except BaseException as exc:
                # A bug, not a disk error: fail everyone still waiting, then crash loudly.
                self._closed = True
                while True:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                self._receive.close()
                for op in batch:
                    self._wake(op, exc, None)
                raise

    async def _commit(self, batch: list[Op]) -> None:
        first = self._taken
        self._taken += len(batch)
        writes = [op for op in batch if not isinstance(op, Barrier)]
        results: list[object] = [None] * len(writes)
        failure: Exception | None = None
        if writes:
            t0 = time.perf_counter()
            prune = self._prune_now()
            try:
                results = await trio.to_thread.run_sync(
                    self._backend.write_batch, writes, self._next_seq, prune
                )
            except self._errors as exc:
                failure = exc
                self._failed_commits += 1
                self._failed_writes += len(writes)
                self._last_failed = first + len(batch) - 1
                self._last_failure = exc
                self._report_failure(exc, len(writes))
            else:
                self.commit_seconds.observe(time.perf_counter() - t0)
                self._commits += 1
                self._last_batch_size = len(writes)
                self._count_written(writes, results)
                if self._failing:
                    log.warning("store %s: writes resumed", self._path)
                    self._failing = False
        self._processed += len(batch)
        self._pending -= len(writes)
        result_of = dict(zip(map(id, writes), results, strict=True))
        for op in batch:
            if isinstance(op, Barrier):
                late = self._last_failed >= op.low
                self._wake(op, failure or (self._last_failure if late else None), None)
            else:
                result = result_of[id(op)]
                if isinstance(result, FencedOut):  # refused alone: not the store's failure
                    self._wake(op, result, None)
                else:
                    self._wake(op, failure, result)

    def _count_written(self, writes: Sequence[Write], results: Sequence[object]) -> None:
        for op, result in zip(writes, results, strict=True):
            if isinstance(result, FencedOut):
                self._fenced_out += 1
                if op.waiter is None:
                    self._report_fenced(result)
                continue
            for part in op.writes if isinstance(op, Group) else (op,):
                if isinstance(part, PutRow):
                    self._rows_written += 1
                elif isinstance(part, Append):
                    self._entries_written += len(part.items)
                elif isinstance(part, PutRun):
                    self._runs_written += 1

    def _prune_now(self) -> tuple[int, int] | None:
        """Every `PRUNE_INTERVAL_S`: the journal's ended rows to drop with this batch."""
        now = time.monotonic()
        if now - self._last_prune < _journal.PRUNE_INTERVAL_S:
            return None
        self._last_prune = now
        return (int(time.time() * 1000) - self._runs_ttl_ms, self._runs_keep)

    def _report_fenced(self, refused: FencedOut) -> None:
        """Log a refused write nobody hears of (no waiter, no callback), at most one line
        per `FAILURE_LOG_INTERVAL_S`."""
        now = time.monotonic()
        if now - self._fenced_logged_at >= FAILURE_LOG_INTERVAL_S:
            self._fenced_logged_at = now
            log.warning("store %s: %s (%d refused in all)", self._path, refused, self._fenced_out)

    def _report_failure(self, exc: Exception, writes: int) -> None:
        """Log a failed commit: the first at once, then at most one line per interval
        (with the count since), so a full disk does not flood the log."""
        self._last_error = f"{type(exc).__name__}: {exc}"
        self._last_error_at = int(time.time() * 1000)
        self._failing = True
        self._failures_unlogged += 1
        now = time.monotonic()
        if now - self._failure_logged_at < FAILURE_LOG_INTERVAL_S:
            return
        log.error(
            "store %s: a commit of %d writes failed (%s); %d failed commits since the last "
            "report, %d in all; the writes are reported to their callers as not stored",
            self._path,
            writes,
            self._last_error,
            self._failures_unlogged,
            self._failed_commits,
        )
        self._failure_logged_at = now
        self._failures_unlogged = 0

    def _wake(self, op: Op, cause: BaseException | None, result: object) -> None:
        waiter = op.waiter
        if waiter is not None:
            waiter.cause = cause
            waiter.store = self._path if cause is not None else None
            waiter.result = result
            waiter.set()
            if waiter.callback is not None:
                try:
                    waiter.callback(waiter.error())
                except Exception:
                    log.exception("a commit callback failed")


@asynccontextmanager
async def open_store(
    path: Path | None = None,
    *,
    backend: StoreBackend | None = None,
    batch_max: int = DEFAULT_BATCH_MAX,
    queue_max: int = DEFAULT_QUEUE_MAX,
) -> AsyncIterator[Store]:
    """Open the database and run its writer task: the SQLite file at `path` (created if
    needed), or `backend` (e.g. `actors.store._pg.PostgresBackend`); exactly one of the two.

    `batch_max` caps the operations committed in one transaction; `queue_max` is the write
    channel's capacity (see `Store` on backpressure). Leaving the block, even by
    cancellation, commits everything enqueued, then closes the database; a `StoreError`
    raised here means the database could not be opened (a file it cannot use, a server it
    cannot reach) or has an unsupported schema.
    """
    if batch_max < 1 or queue_max < 0:
        raise ValueError("batch_max must be >= 1 and queue_max >= 0")
    if (path is None) == (backend is None):
        raise ValueError("open_store takes a path or a backend")
    if backend is None:
        assert path is not None
        backend = SqliteBackend(path)
    try:
        await trio.to_thread.run_sync(backend.open)
    except BaseException as exc:
        backend.close([])  # nothing to close but what `open` left half made: no wait
        if isinstance(exc, (*backend.errors, OSError)):
            raise StoreError(f"cannot open store {backend.location}: {exc}") from exc
        raise
    store = Store(backend, batch_max=batch_max, queue_max=queue_max)
    try:
        async with trio.open_nursery() as nursery:
            # start_soon, not start: `started()` in a scope cancelled meanwhile would leave
            # the shielded writer in `start`'s own nursery, waiting for the close below.
            nursery.start_soon(store._run_writer)
            try:
                yield store
            finally:
                store._closed = True
                store._send.close()  # the writer drains what is left, then ends
    finally:
        store._closed = True
        readers = list(store._readers)
        store._readers.clear()
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(backend.close, readers)
