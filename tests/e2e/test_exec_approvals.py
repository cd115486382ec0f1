"""The exec policy and exec approvals in real runs on a real gateway (the local model's
`[[tool:exec ...]]` directives): each mode (deny, allowlist hit and miss, ask with allow-once,
allow-always then no prompt the second time, deny, a timeout under each askFallback), a
headless run, an abort; nothing runs before an allow (a marker file the command would make).
The host approvals document's compare-and-set and the approval methods' refusals; answers and
request records validated against OpenClaw's schemas."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model import Config
from tests.conftest import frame_checker, local_config, open_client, running_gateway
from tests.e2e._events import next_event, recorder_events
from transports import GatewayClient, GatewayRequestError
from transports.methods._exec_approvals import exec_desk
from transports.server._gateway import Gateway

TOUCH = os.path.realpath(shutil.which("touch") or "/usr/bin/touch")
RUN = '[[tool:exec {"command": "touch marker.txt"}]]'
OPERATOR = ["operator.read", "operator.write"]
"""A connection that may run agents but not answer approvals."""
APPROVER = ["operator.approvals"]


def marker(tmp_path: Path) -> Path:
    return tmp_path / "state" / "workspaces" / "main" / "marker.txt"


def config(**exec_keys: Any) -> Config:
    return local_config(tools__exec=exec_keys)


def reply(final: dict[str, Any]) -> str:
    return str(final["result"]["payloads"][0]["text"])


async def run(client: GatewayClient, run_id: str) -> dict[str, Any]:
    final: dict[str, Any] = await client.request(
        "agent", {"message": RUN, "idempotencyKey": run_id}, expect_final=True
    )
    return final


async def start_run(
    nursery: trio.Nursery, client: GatewayClient, run_id: str, done: dict[str, Any]
) -> None:
    async def go() -> None:
        done["final"] = await run(client, run_id)

    nursery.start_soon(go)
    await trio.lowlevel.checkpoint()


def check_requested(payload: dict[str, Any]) -> None:
    assert set(payload) == {"approvalKind", "id", "request", "createdAtMs", "expiresAtMs"}
    assert payload["approvalKind"] == "exec"
    assert payload["expiresAtMs"] > payload["createdAtMs"] > 0
    request = payload["request"]
    assert request["command"] == "touch marker.txt" and request["host"] == "gateway"
    assert request["resolvedPath"] == TOUCH and request["agentId"] == "main"
    fields = {k: v for k, v in request.items() if k != "allowedDecisions"}
    frame_checker().validate("ExecApprovalRequestParams", fields)


async def set_document(client: GatewayClient, file: dict[str, Any]) -> dict[str, Any]:
    current = await client.request("exec.approvals.get", {})
    written: dict[str, Any] = await client.request(
        "exec.approvals.set", {"file": file, "baseHash": current["hash"]}
    )
    return written


async def ask_and_answer(
    gw: Gateway, tmp_path: Path, decision: str, run_id: str = "r1"
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Run from a connection that cannot answer; answer from one that can. The run's final,
    the requested and resolved events."""
    run_events, on_event = recorder_events()
    done: dict[str, Any] = {}
    async with (
        open_client(gw, scopes=OPERATOR, on_event=on_event) as runner,
        open_client(gw, scopes=APPROVER) as approver,
        trio.open_nursery() as nursery,
    ):
        await start_run(nursery, runner, run_id, done)
        requested = await next_event(approver, "exec.approval.requested")
        check_requested(requested)
        assert not marker(tmp_path).exists(), "the command ran before the approval"
        listed = await approver.request("exec.approval.list")
        assert [a["id"] for a in listed] == [requested["id"]]
        answer = await approver.request(
            "exec.approval.resolve", {"id": requested["id"], "decision": decision}
        )
        assert answer == {"ok": True}
        resolved = await next_event(approver, "exec.approval.resolved")
    assert not [e for (e, _p, _s) in run_events if e.startswith("exec.approval")]
    return done["final"], requested, resolved


async def test_deny_mode_refuses_every_command(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, config(mode="deny")) as gw, open_client(gw) as client:
        with trio.fail_after(20):
            final = await run(client, "d")
            assert await client.request("exec.approval.list") == []
    assert "denied by policy" in reply(final)
    assert not marker(tmp_path).exists()


async def test_allowlist_mode_runs_a_listed_command_and_refuses_the_others(
    tmp_path: Path,
) -> None:
    async with (
        running_gateway(tmp_path, config(mode="allowlist")) as gw,
        open_client(gw) as client,
    ):
        with trio.fail_after(20):
            missed = await run(client, "miss")
            assert not marker(tmp_path).exists()
            assert "not on the exec allowlist" in reply(missed)
            await set_document(
                client, {"version": 1, "agents": {"main": {"allowlist": [{"pattern": TOUCH}]}}}
            )
            await run(client, "hit")
            assert await client.request("exec.approval.list") == []
    assert marker(tmp_path).exists()


async def test_ask_mode_waits_for_allow_once(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, config(mode="ask")) as gw:
        with trio.fail_after(20):
            final, requested, resolved = await ask_and_answer(gw, tmp_path, "allow-once")
    assert final["status"] == "ok" and marker(tmp_path).exists()
    assert requested["request"]["allowedDecisions"] == ["allow-once", "allow-always", "deny"]
    assert (requested["request"]["security"], requested["request"]["ask"]) == (
        "allowlist",
        "on-miss",
    )
    assert resolved["id"] == requested["id"]
    assert (resolved["decision"], resolved["terminalReason"]) == ("allow-once", "user")


async def test_allow_always_adds_an_entry_and_the_next_run_is_not_asked(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path, config(mode="ask")) as gw:
        with trio.fail_after(30):
            await ask_and_answer(gw, tmp_path, "allow-always")
            assert marker(tmp_path).exists()
            marker(tmp_path).unlink()
            async with open_client(gw) as admin:
                document = await admin.request("exec.approvals.get", {})
                again = await run(admin, "r2")  # no approver needed: it is on the allowlist
                history = await admin.request("approval.history", {"kind": "exec"})
    entries = document["file"]["agents"]["main"]["allowlist"]
    assert [(e["pattern"], e["source"]) for e in entries] == [(TOUCH, "allow-always")]
    assert entries[0]["argPattern"] == r"^marker\.txt$"
    assert document["exists"] is True
    assert again["status"] == "ok" and marker(tmp_path).exists()
    assert len(history["items"]) == 1
    frame_checker().validate("ApprovalHistoryResult", history)


async def test_a_denied_command_never_runs_and_the_model_sees_why(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, config(mode="ask")) as gw:
        with trio.fail_after(20):
            final, _requested, resolved = await ask_and_answer(gw, tmp_path, "deny")
            async with open_client(gw) as admin:
                document = await admin.request("exec.approvals.get", {})
    assert "denied the command" in reply(final)
    assert not marker(tmp_path).exists()
    assert (resolved["decision"], resolved["terminalReason"]) == ("deny", "user")
    assert document["exists"] is False


@pytest.mark.parametrize(
    ("keys", "runs"),
    [
        ({"mode": "ask", "askFallback": "deny"}, False),
        ({"mode": "ask", "askFallback": "full"}, False),  # a miss stays a miss
        ({"security": "allowlist", "ask": "always", "askFallback": "allowlist"}, True),
        ({"security": "full", "ask": "always", "askFallback": "full"}, True),
        ({"security": "full", "ask": "always", "askFallback": "deny"}, False),
    ],
)
async def test_an_unanswered_approval_times_out_into_the_fallback(
    tmp_path: Path, keys: dict[str, str], runs: bool
) -> None:
    async with running_gateway(tmp_path, config(**keys)) as gw:
        exec_desk(gw).ask_timeout_ms = 300
        done: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw) as admin,  # operator.admin satisfies operator.approvals
                trio.open_nursery() as nursery,
            ):
                if keys.get("askFallback") == "allowlist":
                    allowlist = [{"pattern": TOUCH}]
                    await set_document(
                        admin, {"version": 1, "agents": {"main": {"allowlist": allowlist}}}
                    )
                await start_run(nursery, runner, "late", done)
                requested = await next_event(admin, "exec.approval.requested")
                resolved = await next_event(admin, "exec.approval.resolved")
                waited = await admin.request("exec.approval.waitDecision", {"id": requested["id"]})
    assert (resolved["decision"], resolved["terminalReason"]) == ("deny", "timeout")
    assert (waited["decision"], waited["terminalReason"]) == (None, "timeout")
    assert marker(tmp_path).exists() == runs
    if not runs:
        assert "exec approval timed out" in reply(done["final"])


async def test_a_headless_run_is_refused_at_once(tmp_path: Path) -> None:
    async with (
        running_gateway(tmp_path, config(mode="ask")) as gw,
        open_client(gw, scopes=OPERATOR) as runner,  # no one holds operator.approvals
    ):
        with trio.fail_after(20):
            final = await run(runner, "alone")
    assert "Headless runs cannot wait for interactive exec approval" in reply(final)
    assert not marker(tmp_path).exists()


async def test_an_abort_cancels_the_pending_approval(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, config(mode="ask")) as gw:
        done: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw, scopes=APPROVER) as approver,
                trio.open_nursery() as nursery,
            ):
                await start_run(nursery, runner, "stopped", done)
                requested = await next_event(approver, "exec.approval.requested")
                aborted = await runner.request(
                    "chat.abort", {"sessionKey": "main", "runId": "stopped"}
                )
                assert aborted["aborted"] is True
                resolved = await next_event(approver, "exec.approval.resolved")
                with pytest.raises(GatewayRequestError, match="approval already resolved"):
                    await approver.request(
                        "exec.approval.resolve", {"id": requested["id"], "decision": "allow-once"}
                    )
                got = await approver.request("approval.get", {"id": requested["id"]})
    assert (resolved["decision"], resolved["terminalReason"]) == ("deny", "run-aborted")
    assert got["approval"]["status"] == "cancelled"
    frame_checker().validate("ApprovalGetResult", got)
    assert not marker(tmp_path).exists()


async def test_the_document_is_written_by_compare_and_set(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw, open_client(gw) as client:
        with trio.fail_after(20):
            empty = await client.request("exec.approvals.get", {})
            assert (empty["exists"], empty["file"]["version"]) == (False, 1)
            assert empty["resolvedDefaults"] == {
                "security": "full",
                "ask": "off",
                "askFallback": "deny",
                "autoAllowSkills": False,
            }
            file = {"version": 1, "defaults": {"security": "allowlist", "ask": "on-miss"}}
            written = await client.request(
                "exec.approvals.set", {"file": file, "baseHash": empty["hash"]}
            )
            assert written["exists"] is True and written["hash"] != empty["hash"]
            assert written["resolvedDefaults"]["security"] == "allowlist"
            with pytest.raises(GatewayRequestError, match="changed since last load"):
                await client.request(
                    "exec.approvals.set", {"file": file, "baseHash": empty["hash"]}
                )
            with pytest.raises(GatewayRequestError, match="base hash required"):
                await client.request("exec.approvals.set", {"file": file})
            bad = {"version": 1, "defaults": {"security": "open"}}
            with pytest.raises(GatewayRequestError, match=r"file\.defaults\.security"):
                await client.request(
                    "exec.approvals.set", {"file": bad, "baseHash": written["hash"]}
                )
            again = await client.request("exec.approvals.get", {})
    assert again["hash"] == written["hash"] and again["file"] == file


async def test_the_document_tightens_the_config(tmp_path: Path) -> None:
    """The config says full; the document says deny: deny wins."""
    async with running_gateway(tmp_path, config(mode="full")) as gw, open_client(gw) as client:
        with trio.fail_after(20):
            await set_document(client, {"version": 1, "defaults": {"security": "deny"}})
            final = await run(client, "tight")
    assert "denied by policy" in reply(final)
    assert not marker(tmp_path).exists()


async def test_bad_resolves_are_clear_errors(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, config(mode="ask")) as gw:
        done: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw, scopes=APPROVER) as approver,
                trio.open_nursery() as nursery,
            ):
                with pytest.raises(GatewayRequestError, match="unknown or expired approval id"):
                    await approver.request(
                        "exec.approval.resolve", {"id": "nope", "decision": "deny"}
                    )
                await start_run(nursery, runner, "bad", done)
                requested = await next_event(approver, "exec.approval.requested")
                approval_id = requested["id"]
                with pytest.raises(GatewayRequestError, match="invalid decision"):
                    await approver.request(
                        "exec.approval.resolve", {"id": approval_id, "decision": "maybe"}
                    )
                with pytest.raises(GatewayRequestError, match=r"missing scope.*approvals"):
                    await runner.request(
                        "exec.approval.resolve", {"id": approval_id, "decision": "allow-once"}
                    )
                assert not marker(tmp_path).exists()
                first = await approver.request(
                    "approval.resolve", {"id": approval_id, "kind": "exec", "decision": "deny"}
                )
                second = await approver.request(
                    "approval.resolve",
                    {"id": approval_id, "kind": "exec", "decision": "allow-once"},
                )
                with pytest.raises(GatewayRequestError, match="approval already resolved"):
                    await approver.request(
                        "exec.approval.resolve", {"id": approval_id, "decision": "allow-once"}
                    )
    assert first["applied"] is True and second["applied"] is False  # the first answer wins
    assert second["approval"]["status"] == "denied"
    for answer in (first, second):
        frame_checker().validate("ApprovalResolveResult", answer)
    assert not marker(tmp_path).exists()


async def slash(client: GatewayClient, text: str, key: str) -> str:
    """The reply to a slash command sent with `chat.send` on session `main`."""
    ack = await client.request(
        "chat.send", {"sessionKey": "main", "message": text, "idempotencyKey": key}
    )
    assert ack["runId"] == key
    async for event, payload, _seq in client.events:
        if event == "chat" and payload.get("runId") == key and payload["state"] == "final":
            message = payload["message"]
            assert message["model"] == "gateway-injected"
            return str(message["content"][0]["text"])
    raise AssertionError("connection closed before the reply")


async def test_approve_in_chat_send_resolves_the_pending_approval(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, config(mode="ask")) as gw:
        done: dict[str, Any] = {}
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=OPERATOR) as runner,
                open_client(gw, scopes=[*OPERATOR, *APPROVER]) as approver,
                trio.open_nursery() as nursery,
            ):
                usage = await slash(approver, "/approve", "s0")
                assert usage.startswith("Usage: /approve <id> <decision>")
                unknown = await slash(approver, "/approve nope deny", "s1")
                assert unknown == "❌ Failed to submit approval: unknown or expired approval id"
                await start_run(nursery, runner, "r1", done)
                requested = await next_event(approver, "exec.approval.requested")
                approval_id = requested["id"]
                refused = await slash(runner, f"/approve {approval_id} allow-once", "s2")
                assert refused == "❌ /approve requires operator.approvals for gateway clients."
                assert not marker(tmp_path).exists()
                answer = await slash(approver, f"/approve {approval_id} allow-once", "s3")
                assert answer == f"✅ Approval allow-once submitted for {approval_id}."
                again = await slash(approver, f"/approve deny {approval_id}", "s4")
                assert again == "❌ Failed to submit approval: approval already resolved"
    assert done["final"]["status"] == "ok" and marker(tmp_path).exists()
