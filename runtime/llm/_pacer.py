"""Many tasks' short sleeps on one timer: the `local` model's pacing at thousands of streams.

`trio.sleep` is a cancel scope with a deadline: entering it, registering the deadline, and
firing it by cancellation cost ~25 µs, which at 10,000 streams each pacing 20 deltas a
second is several CPU seconds per second. A `Pacer` keeps the sleepers in a heap instead:
a sleep is a heap push and a park (`trio.lowlevel.wait_task_rescheduled`); one driver task
wakes every sleeper that is due, in batches, `QUANTUM_S` late at most.

The driver is someone else's task (`run`, started by whoever owns a nursery for the whole
run: the supervisor); `pace_sleep` uses the pacer of the current trio run when one is
driven, else plain `trio.sleep`. Cancelling a sleeper works as for `trio.sleep`. When the
driver stops, the sleepers still waiting wake at once.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Final

import trio

__all__ = ["QUANTUM_S", "Pacer", "pace_sleep"]

QUANTUM_S: Final = 0.001
"""How late a paced sleep may end: sleepers due within one quantum wake together."""
WAKE_BATCH: Final = 64
"""Sleepers woken per scheduler round at most. When more are due (the process cannot keep
up with the pacing), the rest wake in the next rounds, after what the woken ones produced
has been written out: the sleeps stretch, but nothing waits behind thousands of others."""

_current: trio.lowlevel.RunVar[Pacer | None] = trio.lowlevel.RunVar("clawlane_pacer", None)


class Pacer:
    """Sleeps on one timer. Use from one trio run; `run` drives it."""

    def __init__(self) -> None:
        # (deadline, tie, [task]); the task is replaced by None when its sleep is cancelled
        self._heap: list[tuple[float, int, list[trio.lowlevel.Task | None]]] = []
        self._tie = itertools.count()
        self._scope: trio.CancelScope | None = None
        self._target = math.inf
        self._driving = False

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, cell in self._heap if cell[0] is not None)

    async def sleep(self, seconds: float) -> None:
        """Sleep `seconds` (up to `QUANTUM_S` more). A checkpoint; cancellable."""
        if seconds <= 0 or not self._driving:
            await trio.sleep(max(seconds, 0.0))
            return
        deadline = trio.current_time() + seconds
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

    async def run(self) -> None:
        """Drive the timer until cancelled, as the current run's pacer (when another pacer
        drives already, wait and do nothing). Wakes whoever still sleeps when it stops."""
        if _current.get() is not None:
            await trio.sleep_forever()
        _current.set(self)
        self._driving = True
        heap = self._heap
        try:
            while True:
                while heap and heap[0][2][0] is None:
                    heapq.heappop(heap)
                self._target = heap[0][0] + QUANTUM_S if heap else math.inf
                with trio.CancelScope(deadline=self._target) as scope:
                    self._scope = scope
                    await trio.sleep_forever()
                self._scope = None
                now = trio.current_time()
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


async def pace_sleep(seconds: float) -> None:
    """`trio.sleep(seconds)` on the current run's pacer when one is driven. A checkpoint."""
    pacer = _current.get()
    if pacer is None:
        await trio.sleep(seconds)
    else:
        await pacer.sleep(seconds)
