"""`RunTools` and a plugin that wants a tool call approved: the call waits for the run's
`ApprovalGate` and runs only when an operator allowed it; without a gate, or on a cron run, it
is refused unasked; an abort while waiting cancels it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from runtime.hooks._registry import HookRegistry
from runtime.llm._types import TextContent, ToolCallContent
from runtime.loop import ApprovalOutcome, RunTools
from runtime.protocol import PluginApprovalRequestParams
from runtime.tools import ToolPolicy, builtin_tools


@attrs.define
class Gate:
    """An `ApprovalGate` that answers `outcome` (or waits forever when None)."""

    outcome: ApprovalOutcome | None
    asked: list[tuple[PluginApprovalRequestParams, str]] = attrs.field(factory=list)
    cancelled: int = 0

    async def request(self, params: PluginApprovalRequestParams, *, run_id: str) -> ApprovalOutcome:
        self.asked.append((params, run_id))
        try:
            if self.outcome is None:
                await trio.sleep_forever()
            await trio.lowlevel.checkpoint()
        except trio.Cancelled:
            self.cancelled += 1
            raise
        assert self.outcome is not None
        return self.outcome


def runner(tmp_path: Path, gate: Gate | None, resolutions: list[str], **approval: Any) -> RunTools:
    hooks = HookRegistry()

    def guard(event: Any) -> Any:
        if event.toolName != "write":
            return None
        request = {"title": "Write", "description": "writes a file", **approval}
        return {"requireApproval": {**request, "onResolution": resolutions.append}}

    hooks.register("before_tool_call", guard, plugin_id="guard")

    async def deliver(text: str) -> None:
        await trio.lowlevel.checkpoint()

    return RunTools(
        tools=builtin_tools(),
        policy=ToolPolicy(profile="full"),
        workspace=tmp_path,
        agent_id="main",
        session_key="agent:main:main",
        session_id="s1",
        run_id="run-1",
        deliver_message=deliver,
        hooks=hooks,
        approvals=gate,
        trigger=approval.pop("trigger", "user"),
    )


WRITE = ToolCallContent(id="call-1", name="write", arguments={"path": "m.txt", "content": "ran"})


def text_of(outcome: Any) -> str:
    content = outcome.message.content
    return " ".join(c.text for c in content if isinstance(c, TextContent))


async def test_an_allowed_call_runs_with_what_the_gate_was_asked(tmp_path: Path) -> None:
    resolutions: list[str] = []
    gate = Gate(ApprovalOutcome("allow-once", "user", "plugin:1"))
    tools = runner(tmp_path, gate, resolutions, allowedDecisions=["allow-once"])
    outcome = await tools.call(WRITE, lambda stream, data: None)
    assert not outcome.message.isError and (tmp_path / "m.txt").read_text() == "ran"
    [(params, run_id)] = gate.asked
    assert run_id == "run-1"
    assert (params.toolName, params.toolCallId, params.pluginId) == ("write", "call-1", "guard")
    assert (params.agentId, params.sessionKey) == ("main", "agent:main:main")
    assert params.allowedDecisions == ["allow-once", "deny"]
    assert resolutions == ["allow-once"]


@pytest.mark.parametrize(
    ("outcome", "says", "told"),
    [
        (ApprovalOutcome("deny", "user"), "denied by the operator", "deny"),
        (ApprovalOutcome(None, "timeout"), "expired without a decision", "timeout"),
        (ApprovalOutcome(None, "no-route"), "no operator can approve it", "cancelled"),
    ],
)
async def test_a_call_not_allowed_never_runs_and_is_a_tool_error(
    tmp_path: Path, outcome: ApprovalOutcome, says: str, told: str
) -> None:
    resolutions: list[str] = []
    tools = runner(tmp_path, Gate(outcome), resolutions, timeoutBehavior="allow")
    result = await tools.call(WRITE, lambda stream, data: None)
    assert result.message.isError and says in text_of(result)
    assert not (tmp_path / "m.txt").exists()
    assert resolutions == [told]
    assert tools.failures == [("write", text_of(result), False)]


async def test_a_decision_the_request_did_not_offer_fails_closed(tmp_path: Path) -> None:
    resolutions: list[str] = []
    gate = Gate(ApprovalOutcome("allow-always", "user"))
    tools = runner(tmp_path, gate, resolutions, allowedDecisions=["allow-once"])
    result = await tools.call(WRITE, lambda stream, data: None)
    assert result.message.isError and not (tmp_path / "m.txt").exists()
    assert resolutions == ["timeout"]


async def test_without_a_gate_no_approver_is_available(tmp_path: Path) -> None:
    resolutions: list[str] = []
    result = await runner(tmp_path, None, resolutions).call(WRITE, lambda stream, data: None)
    assert result.message.isError and "no approver is available" in text_of(result)
    assert not (tmp_path / "m.txt").exists() and resolutions == ["cancelled"]


async def test_a_cron_run_asks_no_one(tmp_path: Path) -> None:
    resolutions: list[str] = []
    gate = Gate(ApprovalOutcome("allow-once", "user"))
    tools = runner(tmp_path, gate, resolutions, trigger="cron")
    result = await tools.call(WRITE, lambda stream, data: None)
    assert result.message.isError and "cron runs have no operator" in text_of(result)
    assert gate.asked == [] and not (tmp_path / "m.txt").exists()


async def test_an_invalid_request_is_refused_unasked(tmp_path: Path) -> None:
    resolutions: list[str] = []
    gate = Gate(ApprovalOutcome("allow-once", "user"))
    tools = runner(tmp_path, gate, resolutions, title="t" * 81)
    result = await tools.call(WRITE, lambda stream, data: None)
    assert result.message.isError and "approval request is invalid" in text_of(result)
    assert gate.asked == [] and resolutions == ["cancelled"]


async def test_an_abort_while_waiting_cancels_and_the_call_never_runs(tmp_path: Path) -> None:
    resolutions: list[str] = []
    gate = Gate(None)
    tools = runner(tmp_path, gate, resolutions)
    with trio.move_on_after(5) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tools.call, WRITE, lambda stream, data: None)
            await trio.testing.wait_all_tasks_blocked()
            assert len(gate.asked) == 1
            nursery.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert gate.cancelled == 1 and resolutions == ["cancelled"]
    assert not (tmp_path / "m.txt").exists()


async def test_a_call_no_plugin_wants_approved_runs_unasked(tmp_path: Path) -> None:
    gate = Gate(ApprovalOutcome("deny", "user"))
    tools = runner(tmp_path, gate, [])
    read = ToolCallContent(id="call-2", name="read", arguments={"path": "nothing.txt"})
    await tools.call(read, lambda stream, data: None)
    assert gate.asked == []
