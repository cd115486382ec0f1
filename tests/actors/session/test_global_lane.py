"""The global lanes' slots: a cap, first come first served, capacity changes, cancellation."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors.session._global_lane import GlobalLane, Slots


async def test_at_most_capacity_holders_and_waiters_are_served_in_order() -> None:
    slots = Slots(2)
    order: list[int] = []
    inside = 0
    most = 0

    async def holder(i: int, release: trio.Event) -> None:
        nonlocal inside, most
        await slots.acquire()
        inside += 1
        most = max(most, inside)
        order.append(i)
        await release.wait()
        inside -= 1
        slots.release()

    releases = [trio.Event() for _ in range(5)]
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            for i in range(5):
                n.start_soon(holder, i, releases[i])
                await trio.testing.wait_all_tasks_blocked()
            assert order == [0, 1] and slots.statistics().tasks_waiting == 3
            with pytest.raises(trio.WouldBlock):
                slots.acquire_nowait()  # waiters come first, even for a free slot
            for r in releases:
                r.set()
                await trio.testing.wait_all_tasks_blocked()
    assert order == [0, 1, 2, 3, 4] and most == 2
    assert slots.statistics().borrowed_tokens == 0


async def test_a_larger_capacity_lets_waiters_in_and_a_smaller_one_drains() -> None:
    slots = Slots(1)
    slots.acquire_nowait()
    got: list[int] = []

    async def waiter(i: int) -> None:
        await slots.acquire()
        got.append(i)

    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            for i in range(3):
                n.start_soon(waiter, i)
                await trio.testing.wait_all_tasks_blocked()  # parked in this order
            slots.total_tokens = 3
            await trio.testing.wait_all_tasks_blocked()
            got.sort()  # the two woken together may resume in either order
            assert got == [0, 1] and slots.statistics().borrowed_tokens == 3
            slots.total_tokens = 1  # three holders, one waiter, one slot left to be
            slots.release()
            slots.release()
            await trio.testing.wait_all_tasks_blocked()
            assert got == [0, 1] and slots.statistics().borrowed_tokens == 1
            slots.release()  # now there is room: the waiter gets it
            await trio.testing.wait_all_tasks_blocked()
            assert got == [0, 1, 2]


async def test_a_cancelled_wait_takes_no_slot() -> None:
    lane = GlobalLane("main", 1)
    assert lane.try_acquire()
    with trio.move_on_after(0.01) as scope:
        async with lane.hold():
            pytest.fail("the slot was never free")
    assert scope.cancelled_caught
    stats = lane.statistics()
    assert (stats.in_use, stats.waiting) == (1, 0)
    lane.slots.release()
    async with lane.hold():
        assert lane.statistics().in_use == 1
    assert lane.statistics().in_use == 0 and lane.statistics().acquired == 2
