"""The global lanes: how many runs may hold a model turn at once, gateway-wide.

A run takes a slot of its global lane (`main`, `subagent`, `cron`, `nested`) before its
turn and gives it back at its end (`GlobalLane.hold`). A free slot is taken without a
yield; the waits are counted (`statistics`, `wait_histogram`). The supervisor owns the
lanes and sets the main lane's capacity from each published generation.
"""

from __future__ import annotations

import attrs
import trio

from .._metrics import WAIT_BUCKETS, Histogram, HistogramSnapshot

__all__ = ["GlobalLane", "LaneStatistics", "SlotStatistics", "Slots"]


@attrs.frozen
class LaneStatistics:
    name: str
    capacity: int
    in_use: int
    waiting: int
    acquired: int
    wait_total_ms: float
    wait_max_ms: float


@attrs.frozen
class SlotStatistics:
    """As `trio.CapacityLimiter.statistics()` names them."""

    borrowed_tokens: int
    total_tokens: int
    tasks_waiting: int


class Slots:
    """A counting limiter: at most `total_tokens` holders, waiters served first come first
    served (a released slot is handed to the oldest waiter). Like `trio.CapacityLimiter`
    without the per-task bookkeeping a run does not need; a free slot is taken without a
    yield. Use from the trio thread."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._in_use = 0
        self._lot = trio.lowlevel.ParkingLot()

    @property
    def total_tokens(self) -> int:
        return self._capacity

    @total_tokens.setter
    def total_tokens(self, capacity: int) -> None:
        """A new capacity: waiters get the slots it adds at once; slots it removes go away
        as their holders release them."""
        self._capacity = capacity
        while self._lot and self._in_use < capacity:
            self._in_use += 1
            self._lot.unpark()

    def acquire_nowait(self) -> None:
        """Take a slot, or raise `trio.WouldBlock`. Not a checkpoint."""
        if self._in_use >= self._capacity or self._lot:
            raise trio.WouldBlock
        self._in_use += 1

    async def acquire(self) -> None:
        """Take a slot, waiting for one. A checkpoint; cancellable while waiting."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self.acquire_nowait()
        except trio.WouldBlock:
            await self._lot.park()  # the releaser hands its slot over
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()  # a taken slot is not lost

    def release(self) -> None:
        """Give a slot back (to the oldest waiter, when there is room). Not a checkpoint."""
        if self._lot and self._in_use <= self._capacity:
            self._lot.unpark()
        else:
            self._in_use -= 1

    def statistics(self) -> SlotStatistics:
        return SlotStatistics(self._in_use, self._capacity, len(self._lot))


class _Hold:
    """`GlobalLane.hold()`: wait for a slot (unless given one) and give it back at the end."""

    __slots__ = ("_acquired", "_lane")

    def __init__(self, lane: GlobalLane, acquired: bool) -> None:
        self._lane = lane
        self._acquired = acquired

    async def __aenter__(self) -> None:
        if not self._acquired:
            await self._lane.wait_for_slot()
            self._acquired = True

    async def __aexit__(self, *exc: object) -> None:
        self._lane.slots.release()


class GlobalLane:
    """A global lane: its slots plus how long runs waited for them."""

    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self.slots = Slots(capacity)
        self._acquired = 0
        self._wait_total = 0.0
        self._wait_max = 0.0
        self._waited = Histogram(WAIT_BUCKETS)  # only the waits (a free slot is not observed)

    def try_acquire(self) -> bool:
        """Take a free slot now (for `hold(acquired=True)`). Not a checkpoint."""
        try:
            self.slots.acquire_nowait()
        except trio.WouldBlock:
            return False
        self._acquired += 1
        return True

    async def wait_for_slot(self) -> None:
        """Take a slot, waiting as long as it takes (a checkpoint only when it waits;
        cancellable). The wait is counted in `statistics`."""
        if self.try_acquire():
            return
        t0 = trio.current_time()
        await self.slots.acquire()
        waited = trio.current_time() - t0
        self._acquired += 1
        self._wait_total += waited
        self._wait_max = max(self._wait_max, waited)
        self._waited.observe(waited)

    def hold(self, *, acquired: bool = False) -> _Hold:
        """`async with lane.hold():` wait for a slot and hold it; always released.
        `acquired`: the caller already took one with `try_acquire`."""
        return _Hold(self, acquired)

    def wait_histogram(self) -> HistogramSnapshot:
        """Every acquisition's wait: the slots taken at once count as waits of 0."""
        waited = self._waited.snapshot()
        return self._waited.snapshot(extra_zeros=self._acquired - waited.count)

    def statistics(self) -> LaneStatistics:
        s = self.slots.statistics()
        return LaneStatistics(
            name=self.name,
            capacity=s.total_tokens,
            in_use=s.borrowed_tokens,
            waiting=s.tasks_waiting,
            acquired=self._acquired,
            wait_total_ms=self._wait_total * 1000,
            wait_max_ms=self._wait_max * 1000,
        )
