"""Submission order (`actors.runs._order`): a session's requests reach its lane in the order
their tickets were taken, however their preparations finish; other sessions never wait.
Unit tests, and a property test over arbitrary completion orders of both kinds of caller
(commit callbacks with `when_due`, tasks with `turn`)."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
import trio
import trio.testing
from hypothesis import given, settings

from actors.runs._order import SubmissionOrder, Ticket


def test_a_ticket_with_nothing_before_it_runs_its_action_at_once() -> None:
    order = SubmissionOrder()
    ran: list[str] = []
    ticket = order.reserve("k")
    assert ticket.due
    ticket.when_due(lambda: ran.append("a"))
    assert ran == ["a"] and ticket.released
    assert order.statistics().tickets == 0 and order.statistics().keys == 0


def test_later_actions_wait_for_earlier_tickets_then_run_in_order() -> None:
    order = SubmissionOrder()
    ran: list[str] = []
    a, b, c = (order.reserve("k") for _ in range(3))
    other = order.reserve("other")
    c.when_due(lambda: ran.append("c"))
    b.when_due(lambda: ran.append("b"))
    other.when_due(lambda: ran.append("other"))  # another session: not held back
    assert ran == ["other"] and order.statistics().deferred == 2
    a.release()  # e.g. its request failed validation
    assert ran == ["other", "b", "c"]
    assert order.statistics() == order.statistics().__class__(keys=0, tickets=0, deferred=0)


def test_an_action_that_raises_is_logged_and_the_next_one_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    order = SubmissionOrder()
    ran: list[str] = []
    a, b = order.reserve("k"), order.reserve("k")

    def broken() -> None:
        raise RuntimeError("boom")

    b.when_due(lambda: ran.append("b"))
    a.when_due(broken)
    assert ran == ["b"] and "boom" in caplog.text


async def test_tasks_wait_for_their_turn_in_reservation_order() -> None:
    order = SubmissionOrder()
    first, second, third = (order.reserve("k") for _ in range(3))
    reached: list[str] = []

    async def take(name: str, ticket: Ticket) -> None:
        try:
            await ticket.turn()
            reached.append(name)
        finally:
            ticket.release()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(take, "third", third)
            nursery.start_soon(take, "second", second)
            await trio.testing.wait_all_tasks_blocked()
            assert reached == []
            first.release()
            await trio.testing.wait_all_tasks_blocked()
            assert reached == ["second", "third"]


async def test_cancelling_a_waiting_task_lets_the_later_ones_go() -> None:
    order = SubmissionOrder()
    first, second, third = (order.reserve("k") for _ in range(3))
    reached: list[str] = []

    async def take(name: str, ticket: Ticket, scope: trio.CancelScope) -> None:
        with scope:
            try:
                await ticket.turn()
                reached.append(name)
            finally:
                ticket.release()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            s2, s3 = trio.CancelScope(), trio.CancelScope()
            nursery.start_soon(take, "second", second, s2)
            nursery.start_soon(take, "third", third, s3)
            await trio.testing.wait_all_tasks_blocked()
            s2.cancel()  # e.g. a `cancel` frame
            await trio.testing.wait_all_tasks_blocked()
            assert reached == []
            first.release()
    assert reached == ["third"]


# A request: its key, whether it submits (True) or gives its place up, and whether it is
# a callback caller or a task; the steps are the order in which preparations finish.
requests = st.lists(
    st.tuples(st.integers(0, 2), st.booleans(), st.booleans()), min_size=1, max_size=30
)


@settings(max_examples=200, deadline=None)
@given(requests, st.data())
def test_any_completion_order_submits_each_keys_requests_in_reservation_order(
    reqs: list[tuple[int, bool, bool]], data: st.DataObject
) -> None:
    finish_order = data.draw(st.permutations(range(len(reqs))))

    async def scenario() -> None:
        order = SubmissionOrder()
        tickets = [order.reserve(f"k{key}") for key, _, _ in reqs]
        submitted: list[int] = []

        async def as_task(i: int) -> None:
            try:
                await tickets[i].turn()
                submitted.append(i)
            finally:
                tickets[i].release()

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                for i in finish_order:
                    _, submits, task = reqs[i]
                    if not submits:
                        tickets[i].release()
                    elif task:
                        nursery.start_soon(as_task, i)
                    else:

                        def submit(i: int = i) -> None:
                            submitted.append(i)

                        tickets[i].when_due(submit)
                    await trio.testing.wait_all_tasks_blocked()
        for key in {k for k, _, _ in reqs}:
            mine = [i for i, (k, s, _) in enumerate(reqs) if k == key and s]
            assert [i for i in submitted if reqs[i][0] == key] == mine
        assert order.statistics().tickets == 0

    trio.run(scenario)
