"""The pacer: many sleeps on one timer, cancellable, never early, and never stuck."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from runtime.llm._pacer import QUANTUM_S, Pacer, pace_sleep, watch_idle


@asynccontextmanager
async def driven_pacer() -> AsyncIterator[Pacer]:
    """A pacer whose timer task runs (and has parked) for the body, stopped after it."""
    pacer = Pacer()
    async with trio.open_nursery() as n:
        n.start_soon(pacer.run)
        await trio.testing.wait_all_tasks_blocked()
        yield pacer
        n.cancel_scope.cancel()


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
    async with driven_pacer() as pacer:
        with trio.move_on_after(0.1) as scope:
            await pace_sleep(10)
        assert scope.cancelled_caught
        assert pacer.sleepers == 0
        await pace_sleep(0.01)  # the timer still serves the others


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


async def test_a_crowd_due_at_once_wakes_in_rounds_so_others_run_between(
    mock_clock: trio.testing.MockClock,
) -> None:
    from runtime.llm._pacer import WAKE_BATCH

    crowd_size = 5 * 64
    pacer = Pacer()
    log: list[str] = []
    done = trio.Event()

    async def sleeper() -> None:
        await pace_sleep(1.0)
        log.append("s")

    async def spinner() -> None:
        while not done.is_set():
            log.append("|")
            await trio.lowlevel.checkpoint()

    with trio.fail_after(60):  # virtual time: only our jump moves it
        async with trio.open_nursery() as n:
            n.start_soon(pacer.run)
            await trio.testing.wait_all_tasks_blocked()
            async with trio.open_nursery() as crowd:
                for _ in range(crowd_size):
                    crowd.start_soon(sleeper)
                await trio.testing.wait_all_tasks_blocked()
                assert pacer.sleepers == crowd_size
                crowd.start_soon(spinner)  # runs once per scheduler round from now on
                mock_clock.jump(2.0)  # all of them are due at once
                while log.count("s") < crowd_size:
                    await trio.lowlevel.checkpoint()
                done.set()
            n.cancel_scope.cancel()
    # Between two turns of the spinner at most two rounds of sleepers ran (its place in a
    # round is random); woken all at once, one of the two sides would hold half the crowd.
    rounds = "".join(log).split("|")
    assert max(len(r) for r in rounds) <= 2 * WAKE_BATCH < crowd_size // 2
    assert sum(len(r) for r in rounds) == crowd_size


async def test_an_idle_watch_cancels_its_scope_a_window_after_the_last_sign_of_life(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with driven_pacer():
        with trio.CancelScope() as scope:
            watch = watch_idle(scope, 1.0)
            assert watch is not None
            for _ in range(5):  # 3 s in all, never 1 s without news
                await trio.sleep(0.6)
                watch.last = trio.current_time()
            last = watch.last
            await trio.sleep_forever()
        assert scope.cancelled_caught
        assert 1.0 <= trio.current_time() - last <= 1.0 + QUANTUM_S + 1e-9
        assert scope.deadline == math.inf  # the watch never moved it


async def test_a_closed_idle_watch_never_fires_and_none_is_made_without_a_driver(
    autojump_clock: trio.testing.MockClock,
) -> None:
    assert watch_idle(trio.CancelScope(), 1.0) is None  # no pacer driven: deadlines instead
    async with driven_pacer():
        with trio.CancelScope() as scope:
            watch = watch_idle(scope, 1.0)
            assert watch is not None
            watch.close()
            await trio.sleep(5)
        assert not scope.cancelled_caught


async def test_closed_watches_are_swept_out_so_the_heap_holds_about_the_open_ones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with driven_pacer() as pacer:
        kept = [watch_idle(trio.CancelScope(), 60.0) for _ in range(10)]
        for _ in range(1000):  # streams that end long before their window
            watch = watch_idle(trio.CancelScope(), 60.0)
            assert watch is not None
            watch.close()
        assert len(pacer._watches) < 200
        assert all(w is not None and not w.closed for w in kept)
