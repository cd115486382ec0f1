"""One task that fires the deadlines of many small buffers (chat delta throttles, block
coalescers): each item says when it is due (`due_ms`) and flushes itself (`poll`).

The task sleeps while nothing is pending and wakes at the earliest deadline, so a buffer
waiting out its interval costs no task of its own and no periodic wake-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import trio


class Deadline(Protocol):
    def due_ms(self) -> int | None:
        """When the item wants `poll`, in its clock's milliseconds; None when not pending."""
        ...

    def poll(self, now_ms: int) -> None:
        """Flush what is due. Synchronous, never blocks."""
        ...


_T = TypeVar("_T", bound=Deadline)


class DeadlineFlusher(Generic[_T]):
    """Polls items at their deadlines. `add` is not a checkpoint; `run` runs until cancelled."""

    def __init__(self, clock_ms: Callable[[], int]) -> None:
        self._clock = clock_ms
        self._pending: set[_T] = set()
        self._wake = trio.Event()

    def add(self, item: _T) -> None:
        self._pending.add(item)
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            while self._pending:
                dues = [d for item in self._pending if (d := item.due_ms()) is not None]
                if dues:
                    wait_ms = max(0, min(dues) - self._clock())
                    with trio.move_on_after(wait_ms / 1000.0):
                        await self._wake.wait()
                        self._wake = trio.Event()
                now = self._clock()
                for item in list(self._pending):
                    due = item.due_ms()
                    if due is not None and now >= due:
                        item.poll(now)
                self._pending = {item for item in self._pending if item.due_ms() is not None}
