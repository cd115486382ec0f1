"""`PluginApprovals`: who is asked, how an approval ends (an operator's answer, first wins; its
deadline; no one to ask; the run that asked cancelled), what the operators are told, and the
bounds on what is kept."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import EventHub
from actors.approvals import (
    MAX_ENDED,
    ApprovalAlreadyResolved,
    ApprovalNotFound,
    ApprovalsFull,
    ApprovalStatistics,
    DecisionNotOffered,
    PluginApprovals,
    _plugin,
)
from runtime.protocol import PluginApprovalRequestParams
from tests.conftest import frame_checker


@attrs.define(eq=False)
class Conn:
    """A connection as the approvals see it; keeps the frames it is sent."""

    conn_id: str
    scopes: frozenset[str]
    role: str = "operator"
    frames: list[dict[str, Any]] = attrs.field(factory=list)

    @property
    def wants_tool_events(self) -> bool:
        return False

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes or "operator.admin" in self.scopes

    def push_event(self, frame: bytes) -> None:
        self.frames.append(json.loads(frame))

    def events(self, name: str) -> list[dict[str, Any]]:
        return [f["payload"] for f in self.frames if f["event"] == name]


def params(**extra: Any) -> PluginApprovalRequestParams:
    return PluginApprovalRequestParams(title="Deploy", description="to prod", **extra)


def setup(*conns: Conn) -> PluginApprovals:
    return PluginApprovals(EventHub(), {c.conn_id: c for c in conns}, now_ms=lambda: 1_000)


APPROVER = frozenset({"operator.approvals"})


async def test_the_approvers_are_asked_and_told_of_the_answer() -> None:
    approver = Conn("a", APPROVER)
    admin = Conn("b", frozenset({"operator.admin"}))
    reader = Conn("c", frozenset({"operator.read"}))
    node = Conn("d", APPROVER, role="node")
    approvals = setup(approver, admin, reader, node)
    approval = approvals.open(params(timeoutMs=5_000), run_id="r1")
    assert approval.pending and approvals.pending() == [approval]
    for conn in (approver, admin):
        [requested] = conn.events("plugin.approval.requested")
        assert requested == approval.view()
        assert requested["request"]["runId"] == "r1"
        assert (requested["createdAtMs"], requested["expiresAtMs"]) == (1_000, 6_000)
        frame_checker().check({"type": "event", **conn.frames[0]})
    assert reader.frames == [] and node.frames == []
    assert approvals.resolve(approval.id, "allow-once", resolved_by="tui") is True
    assert (approval.decision, approval.reason, approval.resolved_by) == (
        "allow-once",
        "user",
        "tui",
    )
    assert approval.done.is_set() and approvals.pending() == []
    [resolved] = admin.events("plugin.approval.resolved")
    assert resolved == {
        "id": approval.id,
        "decision": "allow-once",
        "resolvedBy": "tui",
        "ts": 1_000,
        "request": approval.request,
        "terminalReason": "user",
    }
    assert reader.frames == []


async def test_the_first_answer_wins() -> None:
    approver = Conn("a", APPROVER)
    approvals = setup(approver)
    approval = approvals.open(params())
    assert approvals.resolve(approval.id, "deny", resolved_by=None)
    assert approvals.resolve(approval.id, "deny", resolved_by="other") is False  # a repeat
    with pytest.raises(ApprovalAlreadyResolved):
        approvals.resolve(approval.id, "allow-once", resolved_by="other")
    assert (approval.decision, approval.resolved_by) == ("deny", None)
    assert len(approver.events("plugin.approval.resolved")) == 1


async def test_unknown_ids_and_decisions_not_offered_are_refused() -> None:
    approvals = setup(Conn("a", APPROVER))
    with pytest.raises(ApprovalNotFound):
        approvals.resolve("plugin:nope", "deny", resolved_by=None)
    approval = approvals.open(params(allowedDecisions=["allow-once"]))
    with pytest.raises(DecisionNotOffered) as refused:
        approvals.resolve(approval.id, "allow-always", resolved_by=None)
    assert refused.value.allowed == ("allow-once", "deny") and approval.pending


async def test_with_no_approver_it_ends_at_once_and_tells_no_one() -> None:
    asker = Conn("a", APPROVER)
    reader = Conn("b", frozenset({"operator.read", "operator.write"}))
    approvals = setup(asker, reader)
    approval = approvals.open(params(), requested_by="a")  # the asker is not asked
    assert (approval.decision, approval.reason) == (None, "no-route")
    assert asker.frames == [] and reader.frames == []
    with trio.fail_after(1):
        outcome = await setup(reader).request(params(), run_id="r")  # a run: no one either
    assert (outcome.decision, outcome.reason) == (None, "no-route")
    assert reader.frames == []
    assert approvals.statistics() == ApprovalStatistics(
        pending=0, raised=1, allowed=0, denied=0, expired=0, cancelled=0, unrouted=1
    )


async def test_a_runs_approval_waits_for_the_answer(autojump_clock: Any) -> None:
    approver = Conn("a", APPROVER)
    approvals = setup(approver)
    outcomes: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def ask() -> None:
            outcomes.append(await approvals.request(params(), run_id="r"))

        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        [requested] = approver.events("plugin.approval.requested")
        approvals.resolve(requested["id"], "allow-always", resolved_by="x")
    [outcome] = outcomes
    assert (outcome.decision, outcome.reason, outcome.approval_id) == (
        "allow-always",
        "user",
        requested["id"],
    )
    assert outcome.allowed


async def test_an_unanswered_approval_expires_at_its_deadline(autojump_clock: Any) -> None:
    approver = Conn("a", APPROVER)
    approvals = setup(approver)
    with trio.fail_after(10):
        outcome = await approvals.request(params(timeoutMs=2_000), run_id="r")
    assert trio.current_time() == pytest.approx(2.0)
    assert (outcome.decision, outcome.reason) == (None, "timeout")
    [resolved] = approver.events("plugin.approval.resolved")
    assert (resolved["decision"], resolved["terminalReason"]) == ("deny", "timeout")
    assert approvals.statistics().expired == 1


async def test_a_cancelled_run_cancels_its_approval(autojump_clock: Any) -> None:
    approver = Conn("a", APPROVER)
    approvals = setup(approver)
    with trio.move_on_after(1):
        await approvals.request(params(), run_id="r")
    [approval] = [approvals.get(p["id"]) for p in approver.events("plugin.approval.requested")]
    assert approval is not None and (approval.decision, approval.reason) == (None, "run-aborted")
    [resolved] = approver.events("plugin.approval.resolved")
    assert (resolved["decision"], resolved["terminalReason"]) == ("deny", "run-aborted")
    with pytest.raises(ApprovalAlreadyResolved):
        approvals.resolve(approval.id, "allow-once", resolved_by=None)


async def test_the_run_task_expires_approvals_no_one_waits_on(autojump_clock: Any) -> None:
    approver = Conn("a", APPROVER)
    approvals = setup(approver)
    async with trio.open_nursery() as nursery:
        await nursery.start(approvals.run)
        late = approvals.open(params(timeoutMs=3_000), requested_by="gone")
        soon = approvals.open(params(timeoutMs=1_000), requested_by="gone")
        await trio.sleep(1.5)
        assert (soon.reason, late.reason) == ("timeout", None)
        await trio.sleep(2)
        assert late.reason == "timeout" and approvals.pending() == []
        nursery.cancel_scope.cancel()


async def test_a_waiter_that_goes_away_leaves_the_approval_pending(autojump_clock: Any) -> None:
    approvals = setup(Conn("a", APPROVER))
    approval = approvals.open(params(), requested_by="b")
    with trio.move_on_after(1):
        await approvals.settle(approval)
    with trio.move_on_after(1):
        await approvals.wait(approval)
    assert approval.pending
    approvals.resolve(approval.id, "deny", resolved_by=None)
    assert (await approvals.wait(approval)).wait_answer()["terminalReason"] == "user"


async def test_ended_approvals_are_kept_ten_minutes_and_bounded(autojump_clock: Any) -> None:
    approvals = setup(Conn("a", APPROVER))
    first = approvals.open(params())
    approvals.resolve(first.id, "deny", resolved_by=None)
    await trio.sleep(_plugin.ENDED_TTL_S + 1)
    assert approvals.get(first.id) is None
    with pytest.raises(ApprovalNotFound):
        approvals.resolve(first.id, "deny", resolved_by=None)
    ids = []
    for _ in range(MAX_ENDED + 5):
        approval = approvals.open(params())
        approvals.resolve(approval.id, "deny", resolved_by=None)
        ids.append(approval.id)
    assert approvals.get(ids[0]) is None and approvals.get(ids[-1]) is not None
    assert len(approvals._ended) == MAX_ENDED


async def test_pending_approvals_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plugin, "MAX_PENDING", 2)
    approvals = setup(Conn("a", APPROVER))
    approvals.open(params())
    approvals.open(params())
    with pytest.raises(ApprovalsFull):
        approvals.open(params())
    outcome = await approvals.request(params(), run_id="r")
    assert outcome.reason == "no-route"


_ANSWERS = st.lists(
    st.tuples(st.integers(0, 2), st.sampled_from(["allow-once", "allow-always", "deny"])),
    max_size=12,
)


@given(_ANSWERS, st.sampled_from([None, ["allow-once"], ["deny"], ["allow-always", "deny"]]))
@settings(max_examples=200, deadline=None)
def test_any_answers_end_each_approval_once_with_the_first_offered_one(
    answers: list[tuple[int, str]], offered: list[str] | None
) -> None:
    async def main() -> None:
        approver = Conn("a", APPROVER)
        approvals = setup(approver)
        opened = [approvals.open(params(allowedDecisions=offered)) for _ in range(3)]
        first: dict[int, str] = {}
        for index, decision in answers:
            approval = opened[index]
            try:
                fresh = approvals.resolve(approval.id, decision, resolved_by=None)  # type: ignore[arg-type]
            except DecisionNotOffered:
                assert decision not in approval.allowed and index not in first
                continue
            except ApprovalAlreadyResolved:
                assert first[index] != decision
                continue
            assert fresh == (index not in first)
            first.setdefault(index, decision)
        resolved = approver.events("plugin.approval.resolved")
        assert sorted(p["id"] for p in resolved) == sorted(opened[i].id for i in first)
        for index, approval in enumerate(opened):
            assert approval.decision == first.get(index)
            assert approval.pending == (index not in first)

    trio.run(main)
