"""One task that fires the deadlines of many small buffers (chat delta throttles, block
coalescers): each item says when it is due (`due_ms`) and flushes itself (`poll`).

The items wait in a heap by due time. The task sleeps while nothing is pending and wakes at
the earliest deadline; `add` wakes it only when the new deadline comes before the one it
sleeps for. So a buffer waiting out its interval costs no task of its own, no periodic
wake-ups, and nothing per other waiting buffer: at 10,000 streaming runs each `add` is
O(log n), not a pass over all of them.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Final, Generic, Protocol, TypeVar

import trio


class Deadline(Protocol):
    def due_ms(self) -> int | None:
        """When the item wants `poll`, in its clock's milliseconds; None when not pending."""
        ...

    def poll(self, now_ms: int) -> None:
        """Flush what is due. Synchronous, never blocks."""
        ...


_T = TypeVar("_T", bound=Deadline)

MAX_POLLS_PER_ROUND: Final = 64
"""Items flushed per scheduler round at most; more due ones go in the next rounds (with the
writers running in between), so a backlog never holds up everything else at once."""


class DeadlineFlusher(Generic[_T]):
    """Polls items at their deadlines. `add` is not a checkpoint; `run` runs until cancelled.

    `quantum_ms`: how late an item may be polled, so that one wake-up serves all that fall
    due within it (0: exactly at each deadline).

    Items are hashed by identity (`attrs` classes with `eq=False`); an item is in the heap
    at most once per distinct deadline, and a stale heap entry (the item flushed itself, or
    its deadline moved) is skipped when it comes up.
    """

    def __init__(self, clock_ms: Callable[[], int], *, quantum_ms: int = 0) -> None:
        self._clock = clock_ms
        self._quantum = quantum_ms
        self._heap: list[tuple[int, int, _T]] = []
        self._scheduled: dict[_T, int] = {}
        self._tie = itertools.count()
        self._wake = trio.Event()
        self._sleeping_until: float = math.inf

    def __len__(self) -> int:
        """Items waiting for their deadline."""
        return len(self._scheduled)

    def add(self, item: _T) -> None:
        """Schedule `item` for its current `due_ms()` (nothing when it has none)."""
        due = item.due_ms()
        if due is None:
            return
        known = self._scheduled.get(item)
        if known is not None and known <= due:
            return  # already due at or before then: `run` looks at it again when it is
        self._scheduled[item] = due
        heapq.heappush(self._heap, (due, next(self._tie), item))
        if due < self._sleeping_until:
            self._wake.set()

    async def run(self) -> None:
        heap = self._heap
        while True:
            if not heap:
                self._sleeping_until = math.inf
                await self._wake.wait()
                self._wake = trio.Event()
                continue
            now = self._clock()
            due = heap[0][0]
            if due > now:
                self._sleeping_until = due
                # Wake `quantum_ms` late: what falls due meanwhile is flushed in the same
                # wake-up, and entries of buffers that flushed themselves go in bulk.
                with trio.move_on_after((due - now + self._quantum) / 1000.0):
                    await self._wake.wait()
                self._wake = trio.Event()
                continue
            self._sleeping_until = now
            again: list[_T] = []
            polled = 0
            while heap and heap[0][0] <= now and polled < MAX_POLLS_PER_ROUND:
                due, _, item = heapq.heappop(heap)
                if self._scheduled.get(item) != due:
                    continue  # a stale entry: the item was scheduled again since
                del self._scheduled[item]
                if (actual := item.due_ms()) is not None and actual <= now:
                    item.poll(now)
                    polled += 1
                again.append(item)
            for item in again:  # still (or again) pending: by their new deadlines
                self.add(item)
            await trio.lowlevel.checkpoint()
