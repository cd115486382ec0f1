"""Plugin approvals in real runs on a real gateway: a plugin's `before_tool_call` that answers
`requireApproval` pauses the tool call until an operator connection answers it; nothing runs
before an allow. Allowed, denied, expired, abandoned by an abort, answered by a second
operator connection, raised with no one to answer; the events and answers validated against
OpenClaw's schemas; the methods' refusals."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import frame_checker, open_client, running_gateway
from tests.e2e._events import next_event, recorder_events
from transports import GatewayClient, GatewayRequestError
from transports.server._gateway import Gateway

WRITE = '[[tool:write {"path": "marker.txt", "content": "ran"}]]'
OPERATOR = ["operator.read", "operator.write"]
"""A connection that may run agents but not answer approvals."""
APPROVER = ["operator.approvals"]


def marker(tmp_path: Path) -> Path:
    return tmp_path / "state" / "workspaces" / "main" / "marker.txt"


def guard(gw: Gateway, resolutions: list[str] | None = None, **approval: Any) -> None:
    """A plugin that wants every `write` approved (with `approval`'s extra keys)."""

    def before_tool_call(event: Any) -> Any:
        if event.toolName != "write":
            return None
        request: dict[str, Any] = {
            "title": "Write a file",
            "description": "The agent writes marker.txt.",
        }
        request.update(approval)
        if resolutions is not None:
            request["onResolution"] = resolutions.append
        return {"requireApproval": request}

    gw.supervisor.hooks.register("before_tool_call", before_tool_call, plugin_id="guard")


def check_request(request: dict[str, Any]) -> None:
    """The request record against `PluginApprovalRequestParams` (OpenClaw's record is those
    params, normalized, and the run's id)."""
    fields = {k: v for k, v in request.items() if k != "runId"}
    frame_checker().validate("PluginApprovalRequestParams", fields)


def check_requested(payload: dict[str, Any]) -> None:
    assert set(payload) == {"approvalKind", "id", "request", "createdAtMs", "expiresAtMs"}
    assert payload["approvalKind"] == "plugin" and payload["id"].startswith("plugin:")
    assert payload["expiresAtMs"] > payload["createdAtMs"] > 0
    check_request(payload["request"])


def check_resolved(payload: dict[str, Any], decision: str, reason: str) -> None:
    assert set(payload) == {"id", "decision", "resolvedBy", "ts", "request", "terminalReason"}
    assert (payload["decision"], payload["terminalReason"]) == (decision, reason)
    frame_checker().validate("ApprovalDecision", payload["decision"])
    frame_checker().validate("ApprovalTerminalReason", payload["terminalReason"])
    check_request(payload["request"])


async def start_run(
    nursery: trio.Nursery, client: GatewayClient, run_id: str, done: dict[str, Any]
) -> None:
    async def run() -> None:
        done["final"] = await client.request(
            "agent", {"message": WRITE, "idempotencyKey": run_id}, expect_final=True
        )

    nursery.start_soon(run)
    await trio.lowlevel.checkpoint()


def reply(final: dict[str, Any]) -> str:
    return str(final["result"]["payloads"][0]["text"])


async def answer_first_request(
    gw: Gateway, decision: str, check: Callable[[dict[str, Any]], None] | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Start a run from a connection that cannot answer, answer its approval from one that
    can; the run's final, and the requested and resolved events."""
    run_events, on_event = recorder_events()
    done: dict[str, Any] = {}
    async with (
        open_client(gw, scopes=OPERATOR, on_event=on_event) as runner,
        open_client(gw, scopes=APPROVER) as approver,
        trio.open_nursery() as nursery,
    ):
        await start_run(nursery, runner, "r1", done)
        requested = await next_event(approver, "plugin.approval.requested")
        if check is not None:
            check(requested)
        answer = await approver.request(
            "plugin.approval.resolve", {"id": requested["id"], "decision": decision}
        )
        assert answer == {"ok": True}
        resolved = await next_event(approver, "plugin.approval.resolved")
    assert not [e for (e, _p, _s) in run_events if e.startswith("plugin.approval")]
    return done["final"], requested, resolved


async def test_an_allowed_call_runs_after_the_operator_allows_it(tmp_path: Path) -> None:
    resolutions: list[str] = []
    async with running_gateway(tmp_path) as gw:
        guard(gw, resolutions, severity="warning")

        def before_the_answer(requested: dict[str, Any]) -> None:
            check_requested(requested)
            assert not marker(tmp_path).exists(), "the tool ran before the approval"
            request = requested["request"]
            assert (request["toolName"], request["pluginId"], request["runId"]) == (
                "write",
                "guard",
                "r1",
            )
            assert request["allowedDecisions"] == ["allow-once", "allow-always", "deny"]

        with trio.fail_after(20):
            final, requested, resolved = await answer_first_request(
                gw, "allow-once", before_the_answer
            )
    assert final["status"] == "ok" and "write:" in reply(final)
    assert marker(tmp_path).read_text() == "ran"
    check_resolved(resolved, "allow-once", "user")
    assert resolved["id"] == requested["id"] and resolved["resolvedBy"] == "test"
    assert resolutions == ["allow-once"]


async def test_a_denied_call_never_runs_and_the_model_sees_why(tmp_path: Path) -> None:
    resolutions: list[str] = []
    async with running_gateway(tmp_path) as gw:
        guard(gw, resolutions)
        with trio.fail_after(20):
            final, _requested, resolved = await answer_first_request(gw, "deny")
            store = gw.supervisor.store
            rows = await store.list_sessions()
            entries = await store.load_entries(rows[0].sessionId)
    assert final["status"] == "ok"  # the run went on: the model answered after the error
    assert "write failed" in reply(final) and "denied by the operator" in reply(final)
    assert not marker(tmp_path).exists()
    check_resolved(resolved, "deny", "user")
    assert resolutions == ["deny"]
    results = [e.message for e in entries if type(e.message).__name__ == "ToolResultMessage"]  # type: ignore[union-attr]
    assert len(results) == 1 and results[0].isError  # type: ignore[union-attr]


@pytest.mark.parametrize("behavior", ["deny", "allow"])
async def test_an_unanswered_approval_expires_and_the_call_does_not_run(
    tmp_path: Path, behavior: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`timeoutBehavior: "allow"` is ignored, as in OpenClaw 2026.9 (deprecated): an approval
    no one answered never lets the call run."""
    resolutions: list[str] = []
    caplog.set_level(logging.WARNING, logger="clawlane.tools")
    async with running_gateway(tmp_path) as gw:
        guard(gw, resolutions, timeoutMs=300, timeoutBehavior=behavior)
        done: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw) as admin,  # operator.admin satisfies operator.approvals
                trio.open_nursery() as nursery,
            ):
                await start_run(nursery, runner, "late", done)
                requested = await next_event(admin, "plugin.approval.requested")
                resolved = await next_event(admin, "plugin.approval.resolved")
                waited = await admin.request(
                    "plugin.approval.waitDecision", {"id": requested["id"]}
                )
                assert await admin.request("plugin.approval.list") == []
    final = done["final"]
    assert "expired without a decision" in reply(final)
    assert not marker(tmp_path).exists()
    check_resolved(resolved, "deny", "timeout")
    assert resolved["resolvedBy"] is None
    assert waited == {
        "id": requested["id"],
        "decision": None,
        "createdAtMs": requested["createdAtMs"],
        "expiresAtMs": requested["expiresAtMs"],
        "terminalReason": "timeout",
    }
    assert resolutions == ["timeout"]
    warned = [r for r in caplog.records if "timeoutBehavior" in r.getMessage()]
    assert bool(warned) == (behavior == "allow")


async def test_a_plugins_timeout_reason_is_what_the_model_sees(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        guard(gw, timeoutMs=100, timeoutReason="Nobody approved the write; ask the user.")
        with trio.fail_after(20):
            async with open_client(gw) as client:
                final = await client.request(
                    "agent", {"message": WRITE, "idempotencyKey": "why"}, expect_final=True
                )
    assert "Nobody approved the write; ask the user." in reply(final)
    assert not marker(tmp_path).exists()


async def test_an_abort_cancels_the_pending_approval_and_the_call_never_runs(
    tmp_path: Path,
) -> None:
    resolutions: list[str] = []
    async with running_gateway(tmp_path) as gw:
        guard(gw, resolutions)
        done: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw, scopes=APPROVER) as approver,
                trio.open_nursery() as nursery,
            ):
                await start_run(nursery, runner, "stopped", done)
                requested = await next_event(approver, "plugin.approval.requested")
                aborted = await runner.request(
                    "chat.abort", {"sessionKey": "main", "runId": "stopped"}
                )
                assert aborted["aborted"] is True
                resolved = await next_event(approver, "plugin.approval.resolved")
                late = await approver.request(
                    "plugin.approval.waitDecision", {"id": requested["id"]}
                )
                with pytest.raises(GatewayRequestError, match="approval already resolved"):
                    await approver.request(
                        "plugin.approval.resolve", {"id": requested["id"], "decision": "allow-once"}
                    )
                assert await approver.request("plugin.approval.list") == []
    check_resolved(resolved, "deny", "run-aborted")
    assert (late["decision"], late["terminalReason"]) == (None, "run-aborted")
    meta = done["final"]["result"]["meta"]
    assert (meta["aborted"], meta["stopReason"], done["final"]["result"]["payloads"]) == (
        True,
        "rpc",
        [],
    )
    assert not marker(tmp_path).exists()
    assert resolutions == ["cancelled"]
    assert gw.approvals.statistics().cancelled == 1


async def test_the_runs_timeout_cancels_the_pending_approval(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        guard(gw)  # the approval would wait 2 minutes; the run may take 1 s
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw, scopes=APPROVER) as approver,
            ):
                final = await runner.request(
                    "agent",
                    {"message": WRITE, "idempotencyKey": "slow", "timeout": 1},
                    expect_final=True,
                )
                requested = await next_event(approver, "plugin.approval.requested")
                resolved = await next_event(approver, "plugin.approval.resolved")
    check_resolved(resolved, "deny", "run-aborted")
    assert resolved["id"] == requested["id"]
    assert final["result"]["meta"]["aborted"] is True
    assert not marker(tmp_path).exists()


async def test_a_second_operator_connection_answers_and_the_first_answer_wins(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path) as gw:
        guard(gw)
        done: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw, scopes=APPROVER, client_id="openclaw-tui") as first,
                open_client(gw, scopes=APPROVER, client_id="cli") as second,
                trio.open_nursery() as nursery,
            ):
                await start_run(nursery, runner, "two", done)
                requested = await next_event(first, "plugin.approval.requested")
                assert (await next_event(second, "plugin.approval.requested")) == requested
                answer = await second.request(
                    "plugin.approval.resolve", {"id": requested["id"], "decision": "allow-always"}
                )
                assert answer == {"ok": True}
                seen_first = await next_event(first, "plugin.approval.resolved")
                seen_second = await next_event(second, "plugin.approval.resolved")
                again = {"id": requested["id"], "decision": "allow-always"}
                assert await first.request("plugin.approval.resolve", again) == {"ok": True}
                other = {"id": requested["id"], "decision": "deny"}
                with pytest.raises(
                    GatewayRequestError, match="approval already resolved"
                ) as refused:
                    await first.request("plugin.approval.resolve", other)
                waited = await first.request(
                    "plugin.approval.waitDecision", {"id": requested["id"]}
                )
    assert seen_first == seen_second and seen_first["resolvedBy"] == "cli"
    check_resolved(seen_first, "allow-always", "user")
    assert refused.value.details == {"reason": "APPROVAL_ALREADY_RESOLVED"}
    assert (waited["decision"], waited["terminalReason"]) == ("allow-always", "user")
    assert marker(tmp_path).read_text() == "ran"
    assert "write:" in reply(done["final"])


async def test_with_no_operator_to_answer_the_call_is_refused_at_once(tmp_path: Path) -> None:
    """As OpenClaw: no connection that could approve means no approval route: the call is
    refused without waiting (not left hanging until the timeout)."""
    resolutions: list[str] = []
    async with running_gateway(tmp_path) as gw:
        guard(gw, resolutions, timeoutMs=600_000)
        with trio.fail_after(20):
            async with open_client(gw, scopes=OPERATOR) as runner:
                final = await runner.request(
                    "agent", {"message": WRITE, "idempotencyKey": "alone"}, expect_final=True
                )
    assert "no operator can approve it" in reply(final)
    assert not marker(tmp_path).exists()
    assert resolutions == ["cancelled"]
    assert gw.approvals.statistics().unrouted == 1


async def test_a_client_requests_an_approval_and_waits_for_the_decision(tmp_path: Path) -> None:
    """`plugin.approval.request` from a client: the other approvers are asked (not the
    asker); it answers the decision when there is one (`twoPhase`: `accepted` first);
    `waitDecision` waits for it too."""
    async with running_gateway(tmp_path) as gw:
        asked = {
            "title": "Pay invoice",
            "description": "Pay 49.99 EUR to Stripe",
            "scope": {"kind": "payment", "amount": "49.99", "currency": "EUR", "target": "Stripe"},
            "allowedDecisions": ["allow-once"],
            "timeoutMs": 60_000,
            "twoPhase": True,
        }
        frame_checker().validate("PluginApprovalRequestParams", asked)
        got: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=APPROVER, client_id="gateway-client") as plugin,
                open_client(gw, scopes=APPROVER, client_id="openclaw-tui") as reviewer,
                trio.open_nursery() as nursery,
            ):

                async def ask_and_wait() -> None:
                    got["accepted"] = await plugin.request("plugin.approval.request", asked)
                    got["waited"] = await plugin.request(
                        "plugin.approval.waitDecision", {"id": got["accepted"]["id"]}
                    )

                async def ask_once() -> None:
                    once = {**asked, "twoPhase": False}
                    got["final"] = await plugin.request("plugin.approval.request", once)

                nursery.start_soon(ask_and_wait)
                first = await next_event(reviewer, "plugin.approval.requested")
                nursery.start_soon(ask_once)
                second = await next_event(reviewer, "plugin.approval.requested")
                check_requested(first)
                assert first["request"]["allowedDecisions"] == ["allow-once", "deny"]
                assert first["request"]["scope"] == asked["scope"]
                assert first["request"]["runId"] is None  # a client's, not a run's
                assert await reviewer.request("plugin.approval.list") == [first, second]
                with pytest.raises(GatewayRequestError, match="allow-always is unavailable") as no:
                    await reviewer.request(
                        "plugin.approval.resolve", {"id": first["id"], "decision": "allow-always"}
                    )
                assert no.value.details == {"allowedDecisions": ["allow-once", "deny"]}
                for approval, decision in ((first, "allow-once"), (second, "deny")):
                    answer = {"id": approval["id"], "decision": decision}
                    await reviewer.request("plugin.approval.resolve", answer)
    accepted = got["accepted"]
    assert accepted == {
        "status": "accepted",
        "id": first["id"],
        "deliveryRoute": "approval-client",
        "createdAtMs": first["createdAtMs"],
        "expiresAtMs": first["expiresAtMs"],
    }
    assert accepted["expiresAtMs"] - accepted["createdAtMs"] == 60_000
    assert got["waited"] == {
        "id": first["id"],
        "decision": "allow-once",
        "createdAtMs": first["createdAtMs"],
        "expiresAtMs": first["expiresAtMs"],
        "terminalReason": "user",
    }
    assert got["final"] == {
        "id": second["id"],
        "decision": "deny",
        "createdAtMs": second["createdAtMs"],
        "expiresAtMs": second["expiresAtMs"],
    }


async def test_a_client_asking_with_no_one_else_to_answer_gets_no_decision_at_once(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw, scopes=APPROVER) as alone:
                answer = await alone.request(
                    "plugin.approval.request",
                    {"title": "t", "description": "d", "twoPhase": True},
                )
                assert await alone.request("plugin.approval.list") == []
    assert answer["decision"] is None and answer["id"].startswith("plugin:")
    assert answer["expiresAtMs"] - answer["createdAtMs"] == 120_000  # the default timeout


async def test_bad_requests_get_clear_errors(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as outsider,
                open_client(gw, scopes=APPROVER) as approver,
            ):
                resolve = {"id": "plugin:nope", "decision": "allow-once"}
                with pytest.raises(
                    GatewayRequestError, match=r"missing scope: operator\.approvals"
                ):
                    await outsider.request("plugin.approval.resolve", resolve)
                for method in ("plugin.approval.list", "plugin.approval.request"):
                    with pytest.raises(
                        GatewayRequestError, match=r"missing scope: operator\.approvals"
                    ):
                        await outsider.request(method, {"title": "t", "description": "d"})
                with pytest.raises(
                    GatewayRequestError, match="unknown or expired approval id"
                ) as unknown:
                    await approver.request("plugin.approval.resolve", resolve)
                assert unknown.value.details["reason"] == "APPROVAL_NOT_FOUND"
                bad = {"id": "plugin:nope", "decision": "maybe"}
                with pytest.raises(GatewayRequestError, match="invalid decision"):
                    await approver.request("plugin.approval.resolve", bad)
                with pytest.raises(GatewayRequestError, match="approval expired or not found"):
                    await approver.request("plugin.approval.waitDecision", {"id": "plugin:nope"})
                with pytest.raises(GatewayRequestError, match="id is required"):
                    await approver.request("plugin.approval.waitDecision", {"id": " "})
                too_long = {"title": "x" * 81, "description": "d"}
                with pytest.raises(
                    GatewayRequestError, match=r"invalid plugin\.approval\.request params"
                ):
                    await approver.request("plugin.approval.request", too_long)
                with pytest.raises(
                    GatewayRequestError, match=r"invalid plugin\.approval\.resolve params"
                ):
                    await approver.request("plugin.approval.resolve", {"id": "x"})


async def test_a_plugins_invalid_approval_request_refuses_the_call(tmp_path: Path) -> None:
    """A title past the 80 characters `plugin.approval.request` allows: refused unasked."""
    async with running_gateway(tmp_path) as gw:
        guard(gw, title="t" * 81)
        with trio.fail_after(20):
            async with open_client(gw) as client:
                final = await client.request(
                    "agent", {"message": WRITE, "idempotencyKey": "long"}, expect_final=True
                )
    assert "approval request is invalid" in reply(final)
    assert not marker(tmp_path).exists()
