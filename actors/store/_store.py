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
writer goes on with the next batch, so writes resume when the disk does. A commit that got
no answer (`CommitUnknown`: PostgreSQL's connection lost as it committed) is neither: its
callers wait while the writer asks the database whether it went through, before each batch
and every `RESOLVE_RETRY_S` until it can be reached (later batches go on meanwhile), and
then hear the truth; after `RESOLVE_WITHIN_S` without an answer it is reported failed,
its outcome unknown. Flushes wait for it too; reads do not.

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
import math
import time
from collections import deque
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
from ._counts import StoreStatistics, WriterCounts
from ._journal import JournalRow
from ._ops import (
    AddAudit,
    AddUsage,
    Append,
    Barrier,
    Call,
    CommitUnknown,
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
from ._readers import Readers
from ._sqlite import SqliteBackend
from ._traced import CommitTraces

log = logging.getLogger("clawlane.store")


DEFAULT_BATCH_MAX: Final = 512
DEFAULT_QUEUE_MAX: Final = 4096
_KEYS_PER_QUERY: Final = 500
RUNS_KEEP: Final = 1000
RUNS_TTL_MS: Final = 300_000
RESOLVE_WITHIN_S: Final = 30.0
"""How long the writer keeps asking whether a commit that got no answer went through (the
database away meanwhile), before its writes are reported failed with the outcome unknown."""
RESOLVE_RETRY_S: Final = 0.2

_T = TypeVar("_T")
_U = TypeVar("_U")


@attrs.frozen(eq=False)
class _Unresolved:
    """A batch whose commit got no answer (`CommitUnknown`), from operation `first` on:
    its callers hear how it went once the database says (or `deadline` passes)."""

    batch: list[Op]
    first: int
    unknown: CommitUnknown
    deadline: float


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
        self._readers = Readers(backend, lambda: self._closed, self._check_open)
        # writer bookkeeping: operations are numbered in the order the writer takes them
        self._taken = 0
        self._processed = 0
        self._last_failed = -1
        self._last_failure: BaseException | None = None
        self._pending = 0
        self._counts = WriterCounts(self._path)
        self._unresolved: deque[_Unresolved] = deque()  # oldest first
        self._held: list[Barrier] = []  # flushes that wait for them
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
        return self._counts.snapshot(pending=self._pending, unresolved=len(self._unresolved))

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

    async def load_run(self, run_id: str) -> JournalRow | None:
        """The journal's last row of `run_id` (what it is now), None when it has none (never
        accepted here, or pruned). Sees every write enqueued before the call. A
        checkpoint. Raises `StoreError` (also for a row that does not decode)."""

        def last(conn: SqlConnection) -> Any:
            return conn.execute(_journal.LAST_OF, (run_id,)).fetchone()

        found = await self.read(last)
        if found is None:
            return None
        _, ended_at, body = found
        return self._decode(
            lambda b: JournalRow.stored(run_id, ended_at, bytes(b)),
            body,
        )

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

    async def add_audit(self, rows: Sequence[tuple[Any, ...]], now_ms: int) -> bool:
        """Add `rows` to the audit log (`actors.store._audit`: `COLUMNS` without `event_id`)
        in the writer's next transaction, inserted with the batch's other audit rows as it
        ends (`AddAudit`), within the log's bounds as of `now_ms`. True once committed;
        False when the audit statements failed and were rolled back alone (the batch
        committed). A checkpoint; raises `StoreError` when the batch failed. Cancelled while
        waiting for the commit, the rows still go in."""
        waiter = Waiter(message="cannot record audit events")
        await self._submit(AddAudit(rows, now_ms, waiter))
        return bool(await waiter.wait())

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

    async def _barrier(self, *, hold: bool = True) -> Waiter | None:
        """Enqueue a flush marker; None (after a checkpoint) if nothing is pending.

        The writer parked in `receive` holds nothing and has processed everything taken,
        and the channel is empty: then there is nothing to wait for. `hold`: the commits
        whose outcome is unknown are pending too (`Barrier.hold`).
        """
        self._check_open()
        unresolved = hold and self._unresolved
        if self._receive.statistics().tasks_waiting_receive and not unresolved:
            await trio.lowlevel.checkpoint()
            return None
        waiter = Waiter(message="a write enqueued before this flush failed to commit")
        low = self._unresolved[0].first if unresolved else self._processed
        await self._submit(Barrier(low, waiter, hold))
        return waiter

    async def _read(self, query: Callable[[Any], _T]) -> _T:
        """`query(reader)` in a worker thread on a reader of the backend's (`Readers`: a
        dead one is replaced, a read retried once), once the writes enqueued before it are
        done (those whose commit got no answer are whatever the database holds)."""
        waiter = await self._barrier(hold=False)
        if waiter is not None:
            await waiter.wait_done()  # a failed earlier write is not this read's error
        return await self._readers.read(query)

    def _decode(self, decode: Callable[[_U], _T], data: _U) -> _T:
        try:
            return decode(data)
        except msgspec.DecodeError as exc:
            raise StoreError(f"corrupt data in {self._path}: {exc}") from exc

    async def _run_writer(self) -> None:
        """The writer task: commit batches until the channel is closed and drained. While
        commits that got no answer are unresolved, it asks about them before each batch
        and every `RESOLVE_RETRY_S` (`_resolve`).

        Shielded, so cancelling the surrounding scope never drops enqueued writes; it ends
        when `open_store` closes the channel.
        """
        with trio.CancelScope(shield=True):
            batch: list[Op] = []
            try:
                while True:
                    if self._unresolved:
                        await self._resolve()
                    with trio.move_on_after(RESOLVE_RETRY_S if self._unresolved else math.inf):
                        batch = [await self._receive.receive()]
                    while batch and len(batch) < self._batch_max:
                        try:
                            batch.append(self._receive.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    if batch and self._traces.pending:
                        await self._traces.commit(self._commit, batch)
                    elif batch:
                        await self._commit(batch)
                    batch = []
            except trio.EndOfChannel:
                await self._resolve(last=True)
            except BaseException as exc:
                # A bug, not a disk error: fail everyone still waiting, then crash loudly.
                self._closed = True
                while True:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                self._receive.close()
                for op in [*batch, *self._held, *(o for u in self._unresolved for o in u.batch)]:
                    self._wake(op, exc, None)
                raise

    async def _commit(self, batch: list[Op]) -> None:
        first = self._taken
        self._taken += len(batch)
        self._processed += len(batch)
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
            except CommitUnknown as unknown:  # told once the database says (`_resolve`)
                deadline = time.monotonic() + RESOLVE_WITHIN_S
                self._unresolved.append(_Unresolved(batch, first, unknown, deadline))
                self._counts.note_failure(unknown.cause)
                return
            except self._errors as exc:
                failure = exc
            else:
                self.commit_seconds.observe(time.perf_counter() - t0)
                self._counts.resumed()
        self._settle(batch, first, writes, results, failure)

    async def _resolve(self, *, last: bool = False) -> None:
        """Ask the backend whether the unresolved commits went through, oldest first, and
        tell their callers; stop at the first it cannot answer yet (the database still
        away), unless its deadline has passed or the store is closing (`last`): then its
        writes are reported failed, their outcome unknown. Then wake the flushes held."""
        while self._unresolved:
            item = self._unresolved[0]
            try:
                committed = await trio.to_thread.run_sync(item.unknown.resolve)
            except self._errors:
                committed = None
            if committed is None and not last and time.monotonic() < item.deadline:
                return
            self._unresolved.popleft()
            writes = [op for op in item.batch if not isinstance(op, Barrier)]
            failure: Exception | None = None
            if committed is None:
                failure = StoreError(
                    f"no answer to its commit, whose outcome is unknown: {item.unknown}"
                )
            elif not committed:
                failure = item.unknown.cause
            log.warning(
                "store %s: a commit of %d writes that got no answer %s",
                self._path,
                len(writes),
                "went through" if committed else "did not" if committed is False else "is unknown",
            )
            self._settle(item.batch, item.first, writes, item.unknown.results, failure, live=False)
        held, self._held = self._held, []
        for op in held:
            late = self._last_failed >= op.low
            self._wake(op, self._last_failure if late else None, None)

    def _settle(
        self,
        batch: list[Op],
        first: int,
        writes: list[Write],
        results: list[object],
        failure: Exception | None,
        *,
        live: bool = True,
    ) -> None:
        """Count a batch's commit (or its failure) and wake its callers (`live`: it was
        just made, not found out later). Flushes wait on for the unresolved commits taken
        before them (`_held`)."""
        if writes and failure is not None:
            self._counts.failed(failure, len(writes), failing=live)
            self._last_failed = max(self._last_failed, first + len(batch) - 1)
            self._last_failure = failure
        elif writes:
            self._counts.committed(writes, results)
        self._pending -= len(writes)
        result_of = dict(zip(map(id, writes), results, strict=True))
        for op in batch:
            if isinstance(op, Barrier):
                if failure is None and op.hold and self._unresolved:
                    self._held.append(op)
                    continue
                late = self._last_failed >= op.low
                self._wake(op, failure or (self._last_failure if late else None), None)
            else:
                result = result_of[id(op)]
                if isinstance(result, FencedOut):  # refused alone: not the store's failure
                    self._wake(op, result, None)
                else:
                    self._wake(op, failure, result)

    def _prune_now(self) -> tuple[int, int] | None:
        """Every `PRUNE_INTERVAL_S`: the journal's ended rows to drop with this batch."""
        now = time.monotonic()
        if now - self._last_prune < _journal.PRUNE_INTERVAL_S:
            return None
        self._last_prune = now
        return (int(time.time() * 1000) - self._runs_ttl_ms, self._runs_keep)

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
        readers = list(store._readers.kept)
        store._readers.kept.clear()
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(backend.close, readers)
