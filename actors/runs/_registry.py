"""Run states, `agent.wait` waiters and the idempotency cache.

`RunRegistry` knows every run from acceptance to a while after its end. `wait` resolves on
the run's terminal state; it only waits and never touches the run. A run id that is not yet
known is waited for until the timeout (it may be accepted meanwhile).

`IdempotencyCache` maps `agent:<key>` / `chat:<key>` to the cached response (the accepted
ack while the run is in flight, the final result after). Entries live 5 minutes; at most
1000 are kept (oldest evicted first).

Finished runs are kept 10 minutes (at most 10,000), and their finals are bounded in bytes
too: past `FINISHED_FINALS_MAX_BYTES` of reply text for all of them, the oldest finished
runs' finals lose their `payloads` (in place: the idempotency cache holds the same final,
so a repeated key still answers `ok`, once, with `meta.payloadsDropped: true` and no text,
and never starts a second run). The final has been delivered to whoever waited for it by
then (`on_done` runs first).
"""

from __future__ import annotations

import collections
import logging
import time
from typing import Any, Final

import attrs
import trio

from .._metrics import RunMetrics
from ._record import RunRecord
from ._runlog import log_run_ended
from ._stability import StabilityRecorder

log = logging.getLogger("clawlane.registry")

DEDUPE_TTL_S: Final = 300.0
DEDUPE_MAX: Final = 1000
FINISHED_RUN_TTL_S: Final = 600.0
FINISHED_RUN_MAX: Final = 10_000
FINISHED_FINALS_MAX_BYTES: Final = 16 * 1024 * 1024


def _final_size(final: dict[str, Any] | None) -> int:
    """What a final's payloads weigh, roughly (their text and media URLs, in characters)."""
    if not final:
        return 0
    size = 0
    for p in final.get("payloads") or ():
        if isinstance(p, dict):
            size += 64
            for v in p.values():
                if isinstance(v, str):
                    size += len(v)
                elif isinstance(v, list):
                    size += sum(len(u) for u in v if isinstance(u, str))
    return size


@attrs.frozen
class RegistryStatistics:
    known_runs: int
    active_runs: int
    waiters: int
    dedupe_entries: int
    final_bytes: int = 0
    """Reply text the finished runs' finals hold (bounded by `FINISHED_FINALS_MAX_BYTES`)."""


def _set_event() -> trio.Event:
    ev = trio.Event()
    ev.set()
    return ev


@attrs.define(eq=False)
class CachedResponse:
    """A cached response. A placeholder (`ready` not set) reserves the key while the first
    request is still being accepted; duplicates wait on `ready`."""

    ok: bool
    payload: Any
    error: Any = None
    terminal: bool = False
    stored: float = attrs.field(factory=time.monotonic)
    ready: trio.Event = attrs.field(factory=_set_event)

    @classmethod
    def placeholder(cls) -> CachedResponse:
        return cls(ok=True, payload=None, ready=trio.Event())

    def settle(self, payload: Any) -> None:
        """The reserving request was accepted: duplicates get `payload` (the ack)."""
        self.payload = payload
        self.ready.set()

    def abandon(self, error: Any = None) -> None:
        """The reserving request ended without being accepted: duplicates waiting on it get
        `error` (a `GatewayError`), or, with none, are told to retry. The caller removes
        the key from the cache."""
        if error is not None:
            self.ok, self.error = False, error
        self.ready.set()


class IdempotencyCache:
    """A TTL + size bounded map. Not thread-safe; one trio thread."""

    def __init__(self, *, ttl_s: float = DEDUPE_TTL_S, max_entries: int = DEDUPE_MAX) -> None:
        self._ttl = ttl_s
        self._max = max_entries
        self._entries: collections.OrderedDict[str, CachedResponse] = collections.OrderedDict()

    def get(self, key: str) -> CachedResponse | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if time.monotonic() - entry.stored > self._ttl:
            del self._entries[key]
            return None
        return entry

    def put(self, key: str, response: CachedResponse) -> None:
        self._entries[key] = response
        self._entries.move_to_end(key)
        self._sweep()

    def discard(self, key: str) -> None:
        self._entries.pop(key, None)

    def _sweep(self) -> None:
        entries = self._entries
        if not entries:
            return
        now = time.monotonic()
        while entries:
            key = next(iter(entries))
            if len(entries) > self._max or now - entries[key].stored > self._ttl:
                del entries[key]
            else:
                break

    def __len__(self) -> int:
        return len(self._entries)


class RunRegistry:
    """Every known run by id, plus waiters for ids not yet known."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        self._finished: collections.OrderedDict[str, RunRecord] = collections.OrderedDict()
        self._appeared: dict[str, tuple[trio.Event, int]] = {}
        self._waiters = 0
        self.finals_max_bytes = FINISHED_FINALS_MAX_BYTES
        self._final_bytes = 0
        self._bulky: collections.deque[tuple[RunRecord, int]] = collections.deque()
        """Finished runs whose finals still hold their payloads, oldest first."""
        self.dedupe = IdempotencyCache()
        self.metrics = RunMetrics()
        self.stability = StabilityRecorder()
        """Runs' ends as diagnostic events (`diagnostics.stability`)."""

    def add(self, record: RunRecord) -> None:
        self._runs[record.run_id] = record
        self.metrics.started += 1
        pending = self._appeared.pop(record.run_id, None)
        if pending is not None:
            pending[0].set()

    def get(self, run_id: str) -> RunRecord | None:
        return self._runs.get(run_id)

    def active(self) -> list[RunRecord]:
        return [r for r in self._runs.values() if not r.ended]

    def finish(self, record: RunRecord) -> None:
        """Mark ended, wake waiters and call `on_done`. Called once, by the run's owner."""
        log_run_ended(record)  # the run's "ended" log line
        record.finished_mono = time.monotonic()
        record.done.set()
        started, ended = record.started_at, record.ended_at
        self.metrics.run_ended(
            record.status,
            duration_s=(ended - started) / 1000 if started is not None and ended else None,
            abort_reason=record.abort_reason,
            error_kind=record.error_kind,
            final=record.final,
        )
        self.stability.run_ended(record)
        callbacks, record.on_done = record.on_done, None
        for callback in callbacks or ():
            try:
                callback(record)
            except Exception:
                log.exception("a completion callback of run %s failed", record.run_id)
        self._finished[record.run_id] = record
        self._finished.move_to_end(record.run_id)
        size = _final_size(record.final)
        if size:
            self._bulky.append((record, size))
            self._final_bytes += size
            self._drop_finals()
        now = record.finished_mono
        while self._finished:
            rid, oldest = next(iter(self._finished.items()))
            assert oldest.finished_mono is not None
            if (
                len(self._finished) > FINISHED_RUN_MAX
                or now - oldest.finished_mono > FINISHED_RUN_TTL_S
            ):
                del self._finished[rid]
                if self._runs.get(rid) is oldest:
                    del self._runs[rid]
            else:
                break
        while (
            self._bulky and self._finished.get(self._bulky[0][0].run_id) is not (self._bulky[0][0])
        ):
            _, gone = self._bulky.popleft()  # forgotten: its final goes with it
            self._final_bytes -= gone

    def _drop_finals(self) -> None:
        """Drop the oldest finished runs' payloads until the rest fit the bound."""
        bulky = self._bulky
        while bulky and self._final_bytes > self.finals_max_bytes:
            record, size = bulky.popleft()
            self._final_bytes -= size
            final = record.final
            if final is not None:
                final["payloads"] = []
                meta = final.get("meta")
                if isinstance(meta, dict):
                    meta["payloadsDropped"] = True

    async def wait(self, run_id: str, timeout_s: float) -> RunRecord | None:
        """Wait for the run's end; None on timeout. A run that has ended answers whatever
        the timeout (0 included: a poll), as OpenClaw's cached terminal snapshot does. A
        checkpoint; never affects the run."""
        ended = self._runs.get(run_id)
        if ended is not None and ended.done.is_set():
            await trio.lowlevel.checkpoint()
            return ended
        self._waiters += 1
        try:
            with trio.move_on_after(timeout_s):
                record = self._runs.get(run_id)
                if record is None:
                    record = await self._wait_appeared(run_id)
                await record.done.wait()
                return record
            return None
        finally:
            self._waiters -= 1

    async def _wait_appeared(self, run_id: str) -> RunRecord:
        """Wait for `run_id` to be added. The event is forgotten with its last waiter, so ids
        that never appear leave nothing behind."""
        event, count = self._appeared.get(run_id, (trio.Event(), 0))
        self._appeared[run_id] = (event, count + 1)
        try:
            await event.wait()
        finally:
            event, count = self._appeared.get(run_id, (event, 1))
            if count <= 1 or event.is_set():
                self._appeared.pop(run_id, None)
            else:
                self._appeared[run_id] = (event, count - 1)
        record = self._runs.get(run_id)
        assert record is not None
        return record

    def statistics(self) -> RegistryStatistics:
        return RegistryStatistics(
            known_runs=len(self._runs),
            active_runs=sum(1 for r in self._runs.values() if not r.ended),
            waiters=self._waiters,
            dedupe_entries=len(self.dedupe),
            final_bytes=self._final_bytes,
        )
