"""Approvals across two gateways on one PostgreSQL and one Redis: an exec approval a run raises
on node A, whose only operator who may answer is on node B, waits for B (not `no-route`),
reaches B's operator as `exec.approval.requested`, is listed by B and resolved through B
(forwarded to A, which runs the command); the ended approval is read through B from the
shared store. A plugin approval a client asks on A is answered through B the same way.
Skipped, saying why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from actors import ExecApprovals
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e._events import next_event
from tests.e2e.test_cluster_nodes import two_nodes, wait_for
from transports import Gateway, GatewayClient, GatewayRequestError

__all__ = ["pg_url"]  # the fixture, used by name

APPROVER = ["operator.approvals"]
OPERATOR = ["operator.read", "operator.write"]
RUN = '[[tool:exec {"command": "touch marker.txt"}]]'


def desk(gw: Gateway) -> ExecApprovals:
    found = gw.actors.supervisor.services.exec_approver
    assert isinstance(found, ExecApprovals)
    return found


async def knows_an_approver_elsewhere(gw: Gateway) -> None:
    router = gw.router
    assert router is not None and router.approvals is not None
    joined = router.approvals
    await wait_for(lambda: joined.approvers_elsewhere() > 0, "the approver on B", timeout_s=10)


def marker(tmp_path: Path) -> Path:
    return tmp_path / "node-a" / "state" / "workspaces" / "main" / "marker.txt"


async def test_an_exec_approval_raised_on_a_is_listed_and_resolved_through_b(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, tools__exec={"mode": "ask"}) as nodes:
            a, b = nodes[0].gw, nodes[1].gw
            done: dict[str, Any] = {}
            async with (
                open_client(b, scopes=APPROVER) as approver,
                open_client(a, scopes=OPERATOR, on_event=lambda *_: None) as runner,
                trio.open_nursery() as nursery,
            ):
                await knows_an_approver_elsewhere(a)

                async def go() -> None:
                    done["final"] = await runner.request(
                        "agent",
                        {"message": RUN, "idempotencyKey": "c1", "sessionKey": "main"},
                        expect_final=True,
                    )

                nursery.start_soon(go)
                requested = await next_event(approver, "exec.approval.requested")
                raised_on_a = [x.id for x in desk(a).pending()]
                raised_on_b = [x.id for x in desk(b).pending()]
                listed = await approver.request("exec.approval.list")
                assert not marker(tmp_path).exists(), "the command ran before the approval"
                answer = await approver.request(
                    "exec.approval.resolve", {"id": requested["id"], "decision": "allow-once"}
                )
                resolved = await next_event(approver, "exec.approval.resolved")
            # The owner's record of the end went into its store as the approval ended
            # (`commit_nowait`): once that store has flushed, any node reads it.
            await a.supervisor.store.flush()
            async with open_client(b) as admin:
                got = await admin.request("approval.get", {"id": requested["id"]})
                history = await admin.request("approval.history", {"kind": "exec"})
                again = {"id": requested["id"], "decision": "allow-once"}
                repeated = await admin.request("exec.approval.resolve", again)
                with pytest.raises(GatewayRequestError, match="approval already resolved"):
                    await admin.request("exec.approval.resolve", {**again, "decision": "deny"})
    assert raised_on_a == [requested["id"]] and raised_on_b == []
    assert [item["id"] for item in listed] == [requested["id"]]
    assert answer == {"ok": True}
    assert (resolved["id"], resolved["decision"]) == (requested["id"], "allow-once")
    assert done["final"]["status"] == "ok" and marker(tmp_path).exists()
    assert got["approval"]["status"] == "allowed"
    assert [item["id"] for item in history["items"]] == [requested["id"]]
    assert repeated == {"ok": True}  # the same answer again, through B, from the store


async def ask_plugin(client: GatewayClient, got: dict[str, Any]) -> None:
    asked = {"title": "Deploy", "description": "ship it", "twoPhase": False}
    got["answer"] = await client.request("plugin.approval.request", asked)


async def test_a_plugin_approval_asked_on_a_is_answered_through_b(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes[0].gw, nodes[1].gw
            got: dict[str, Any] = {}
            async with (
                open_client(b, scopes=APPROVER) as reviewer,
                open_client(a, scopes=APPROVER) as plugin,
                trio.open_nursery() as nursery,
            ):
                await knows_an_approver_elsewhere(a)
                nursery.start_soon(ask_plugin, plugin, got)
                requested = await next_event(reviewer, "plugin.approval.requested")
                listed = await reviewer.request("plugin.approval.list")
                await reviewer.request(
                    "approval.resolve",
                    {"id": requested["id"], "kind": "plugin", "decision": "deny"},
                )
                await next_event(reviewer, "plugin.approval.resolved")
    assert [item["id"] for item in listed] == [requested["id"]]
    assert got["answer"]["decision"] == "deny" and got["answer"]["id"] == requested["id"]


async def test_approve_in_a_chat_on_b_answers_an_approval_raised_on_a(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url, tools__exec={"mode": "ask"}) as nodes:
            a, b = nodes[0].gw, nodes[1].gw
            done: dict[str, Any] = {}
            async with (
                open_client(b, scopes=APPROVER) as approver,
                open_client(b, on_event=lambda *_: None) as chatter,
                open_client(a, scopes=OPERATOR, on_event=lambda *_: None) as runner,
                trio.open_nursery() as nursery,
            ):
                await knows_an_approver_elsewhere(a)

                async def go() -> None:
                    done["final"] = await runner.request(
                        "agent",
                        {"message": RUN, "idempotencyKey": "s1", "sessionKey": "main"},
                        expect_final=True,
                    )

                nursery.start_soon(go)
                requested = await next_event(approver, "exec.approval.requested")
                await chatter.request(
                    "chat.send",
                    {
                        "sessionKey": "elsewhere",  # a session of B's: the command runs on B
                        "message": f"/approve {requested['id']} allow-once",
                        "idempotencyKey": "approve-1",
                        "deliver": False,
                    },
                )
                resolved = await next_event(approver, "exec.approval.resolved")
                assert b.router is not None
                forwarded_by_b = b.router.forwarded
    assert (resolved["id"], resolved["decision"]) == (requested["id"], "allow-once")
    assert done["final"]["status"] == "ok" and marker(tmp_path).exists()
    assert forwarded_by_b == 0  # the chat ran on B; the decision went to A as a notice
