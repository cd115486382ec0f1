"""Many tasks' short sleeps on one timer: the `local` model's pacing at thousands of streams.

`trio.sleep` is a cancel scope with a deadline: entering it, registering the deadline, and
firing it by cancellation cost ~25 µs, which at 10,000 streams each pacing 20 deltas a
second is several CPU seconds per second. A `Pacer` keeps the sleepers in a heap instead:
a sleep is a heap push and a park (`trio.lowlevel.wait_task_rescheduled`); one driver task
wakes every sleeper that is due, in batches, `QUANTUM_S` late at most.

The same driver keeps idle watchdogs (`IdleWatch`, `watch_idle`): a model stream's cancel
scope that fires after a window of silence. Moving a cancel scope's deadline costs ~6 µs (a
context manager and a heap push inside trio), and `stream_with_retry` moved it every half
second of a stream that delivers; a watch is told of each delta by one attribute store
(`last`), and the driver looks at it once per window.

The driver is someone else's task (`run`, started by whoever owns a nursery for the whole
run: the supervisor); `pace_sleep` uses the pacer of the current trio run when one is
driven, else plain `trio.sleep`. Cancelling a sleeper works as for `trio.sleep`. When the
driver stops, the sleepers still waiting wake at once and the watches are dropped (their
scopes no longer fire: the driver stops when the gateway does).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Awaitable, Callable
from typing import Final

import trio

__all__ = [
    "QUANTUM_S",
    "IdleWatch",
    "Pacer",
    "pace_sleep",
    "pace_sleeper",
    "pacer_driven",
    "watch_idle",
]

QUANTUM_S: Final = 0.001
"""How late a paced sleep may end: sleepers due within one quantum wake together."""
WAKE_BATCH: Final = 64
"""Sleepers woken per scheduler round at most. When more are due (the process cannot keep
up with the pacing), the rest wake in the next rounds, after what the woken ones produced
has been written out: the sleeps stretch, but nothing waits behind thousands of others."""

_current: trio.lowlevel.RunVar[Pacer | None] = trio.lowlevel.RunVar("clawlane_pacer", None)


class IdleWatch:
    """An idle watchdog on a pacer's timer: `scope` is cancelled once `window` seconds
    pass (up to `QUANTUM_S` more) with `last`, the time of the latest sign of life on the
    run's clock, not moving. Set `last` for each one; `close` ends the watch."""

    __slots__ = ("_pacer", "closed", "last", "scope", "window")

    def __init__(self, pacer: Pacer, scope: trio.CancelScope, window: float, last: float) -> None:
        self._pacer = pacer
        self.scope = scope
        self.window = window
        self.last = last
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._pacer._closed_watches += 1


class Pacer:
    """Sleeps (and idle watches) on one timer. Use from one trio run; `run` drives it."""

    def __init__(self) -> None:
        # (deadline, tie, [task]); the task is replaced by None when its sleep is cancelled
        self._heap: list[tuple[float, int, list[trio.lowlevel.Task | None]]] = []
        self._tie = itertools.count()
        self._scope: trio.CancelScope | None = None
        self._target = math.inf
        self._driving = False
        self._clock: trio.abc.Clock | None = None
        self._watches: list[tuple[float, int, IdleWatch]] = []
        self._closed_watches = 0
        """Closed watches still in `_watches` (a stream's ends long before its window):
        when they are most of it, `watch` sweeps them out, so the heap holds about the
        open watches, not every stream of the last window."""

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, cell in self._heap if cell[0] is not None)

    async def sleep(self, seconds: float) -> None:
        """Sleep `seconds` (up to `QUANTUM_S` more). A checkpoint; cancellable."""
        clock = self._clock
        if seconds <= 0 or not self._driving or clock is None:
            await trio.sleep(max(seconds, 0.0))
            return
        deadline = clock.current_time() + seconds
        cell: list[trio.lowlevel.Task | None] = [trio.lowlevel.current_task()]
        heapq.heappush(self._heap, (deadline, next(self._tie), cell))
        due = deadline + QUANTUM_S
        if due < self._target and self._scope is not None:
            self._target = due
            self._scope.deadline = due

        def abort(_: object) -> trio.lowlevel.Abort:
            cell[0] = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def watch(self, scope: trio.CancelScope, window: float) -> IdleWatch | None:
        """Cancel `scope` after `window` seconds without news (see `IdleWatch`), or None
        when this pacer is not driven. Not a checkpoint."""
        clock = self._clock
        if not self._driving or clock is None:
            return None
        now = clock.current_time()
        watch = IdleWatch(self, scope, window, now)
        if self._closed_watches > 64 and 2 * self._closed_watches > len(self._watches):
            self._watches = [entry for entry in self._watches if not entry[2].closed]
            heapq.heapify(self._watches)
            self._closed_watches = 0
        heapq.heappush(self._watches, (now + window, next(self._tie), watch))
        due = now + window + QUANTUM_S
        if due < self._target and self._scope is not None:
            self._target = due
            self._scope.deadline = due
        return watch

    def _check_watches(self, now: float) -> None:
        """Cancel the due watches' scopes that stayed idle; look again later at the rest."""
        watches = self._watches
        while watches and watches[0][0] <= now:
            _, tie, watch = heapq.heappop(watches)
            if watch.closed:
                self._closed_watches -= 1
                continue
            idle_until = watch.last + watch.window
            if idle_until <= now:
                watch.closed = True  # out of the heap: not counted
                watch.scope.cancel()
            else:
                heapq.heappush(watches, (idle_until, tie, watch))

    async def run(self) -> None:
        """Drive the timer until cancelled, as the current run's pacer (when another pacer
        drives already, wait and do nothing). Wakes whoever still sleeps when it stops."""
        if _current.get() is not None:
            await trio.sleep_forever()
        _current.set(self)
        self._clock = trio.lowlevel.current_clock()
        self._driving = True
        heap = self._heap
        try:
            while True:
                while heap and heap[0][2][0] is None:
                    heapq.heappop(heap)
                self._target = heap[0][0] + QUANTUM_S if heap else math.inf
                if self._watches:
                    self._target = min(self._target, self._watches[0][0] + QUANTUM_S)
                with trio.CancelScope(deadline=self._target) as scope:
                    self._scope = scope
                    await trio.sleep_forever()
                self._scope = None
                now = trio.current_time()
                self._check_watches(now)
                woken = 0
                while heap and heap[0][0] <= now:
                    task = heapq.heappop(heap)[2][0]
                    if task is not None:
                        trio.lowlevel.reschedule(task)
                        woken += 1
                        if woken >= WAKE_BATCH:
                            await trio.lowlevel.checkpoint()  # let them (and the writers) run
                            woken = 0
                            now = trio.current_time()
        finally:
            self._driving = False
            self._scope = None
            _current.set(None)
            for _, _, cell in heap:
                if cell[0] is not None:
                    trio.lowlevel.reschedule(cell[0])
            heap.clear()
            self._watches.clear()  # (their streams end with the run's tasks)
            self._closed_watches = 0


async def pace_sleep(seconds: float) -> None:
    """`trio.sleep(seconds)` on the current run's pacer when one is driven. A checkpoint."""
    await pace_sleeper()(seconds)


def pacer_driven() -> bool:
    """Whether the current trio run's pacer is driven (`watch_idle` gives watches)."""
    return _current.get() is not None


def watch_idle(scope: trio.CancelScope, window: float) -> IdleWatch | None:
    """An idle watch on the current run's pacer (see `IdleWatch`), or None when no pacer
    is driven (then move the scope's deadline instead). Not a checkpoint."""
    pacer = _current.get()
    return None if pacer is None else pacer.watch(scope, window)


def pace_sleeper() -> Callable[[float], Awaitable[None]]:
    """What `pace_sleep` sleeps with now: the current run's pacer's `sleep` when one is
    driven, else `trio.sleep`. For a stream that sleeps before every delta, to look the
    pacer up once (a sleep on a pacer that stopped since is a plain `trio.sleep`)."""
    pacer = _current.get()
    return trio.sleep if pacer is None else pacer.sleep
