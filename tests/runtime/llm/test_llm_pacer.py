"""The pacer: many sleeps on one timer, cancellable, never early, and never stuck."""

from __future__ import annotations

import trio
import trio.testing

from runtime.llm._pacer import QUANTUM_S, Pacer, pace_sleep


async def test_sleeps_end_in_order_no_earlier_than_asked_and_at_most_a_quantum_late(
    autojump_clock: trio.testing.MockClock,
) -> None:
    pacer = Pacer()
    woke: list[tuple[float, float]] = []

    async def sleeper(seconds: float) -> None:
        start = trio.current_time()
        await pace_sleep(seconds)
        woke.append((seconds, trio.current_time() - start))

    async with trio.open_nursery() as n:
        n.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        async with trio.open_nursery() as sleepers:
            for seconds in (0.5, 0.05, 0.2, 0.05, 1.0, 0.0):
                sleepers.start_soon(sleeper, seconds)
        n.cancel_scope.cancel()
    assert [s for s, _ in woke] == [0.0, 0.05, 0.05, 0.2, 0.5, 1.0]
    assert all(s <= took <= s + QUANTUM_S + 1e-9 for s, took in woke)


async def test_a_cancelled_sleep_raises_cancelled_and_leaves_nothing_behind(
    autojump_clock: trio.testing.MockClock,
) -> None:
    pacer = Pacer()
    async with trio.open_nursery() as n:
        n.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(0.1) as scope:
            await pace_sleep(10)
        assert scope.cancelled_caught
        assert pacer.sleepers == 0
        await pace_sleep(0.01)  # the timer still serves the others
        n.cancel_scope.cancel()


async def test_when_the_driver_stops_sleepers_wake_and_later_sleeps_use_trio(
    autojump_clock: trio.testing.MockClock,
) -> None:
    pacer = Pacer()
    done = trio.Event()

    async def long_sleeper() -> None:
        await pace_sleep(100)
        done.set()

    async with trio.open_nursery() as n:
        driver = trio.CancelScope()

        async def drive() -> None:
            with driver:
                await pacer.run()

        n.start_soon(drive)
        await trio.testing.wait_all_tasks_blocked()
        n.start_soon(long_sleeper)
        await trio.testing.wait_all_tasks_blocked()
        assert pacer.sleepers == 1
        start = trio.current_time()
        driver.cancel()
        await done.wait()
        assert trio.current_time() - start < 1  # woken at the stop, not after 100 s
        before = trio.current_time()
        await pace_sleep(0.25)  # no driver now: plain trio.sleep
        assert trio.current_time() - before >= 0.25


async def test_a_second_pacer_in_the_same_run_does_not_drive(
    autojump_clock: trio.testing.MockClock,
) -> None:
    first, second = Pacer(), Pacer()
    async with trio.open_nursery() as n:
        n.start_soon(first.run)
        n.start_soon(second.run)
        await trio.testing.wait_all_tasks_blocked()
        assert [first._driving, second._driving].count(True) == 1
        await pace_sleep(0.1)
        n.cancel_scope.cancel()
