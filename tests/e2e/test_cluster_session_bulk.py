"""Sessions changed in bulk through the node that does not own them: `sessions.patchMany`,
`sessions.groups.rename` / `delete` and `sessions.cleanup` have each session's change made
by its owner (`transports.methods._owners`), so the owner's next run keeps it (a change
written by the other node would be undone by the owner's next write of its row)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, Node, two_nodes
from tests.e2e.test_cluster_sessions import owner_of

__all__ = ["pg_url"]  # the fixture, used by name

KEY = "agent:main:owned-by-b"
PEER = "agent:main:direct:peer-1"
EMPTY = "agent:main:empty"
WRITE = ["operator.read", "operator.write"]


async def _run(client: Any, key: str, run_id: str) -> None:
    done = await client.request(
        "agent", {"message": "hi", "sessionKey": key, "idempotencyKey": run_id}, expect_final=True
    )
    assert done["status"] == "ok"


def _row(node: Node, key: str) -> Any:
    actor = node.gw.actors.supervisor.peek_session(key)
    assert actor is not None and actor.row is not None
    return actor.row


async def _stored(node: Node, key: str) -> Any:
    return await node.gw.actors.supervisor.store.get_session(key)


async def test_bulk_changes_through_a_are_made_by_the_owner_b(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(90):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=WRITE, on_event=lambda *_: None) as writer_a,
                open_client(a.gw, scopes=ADMIN, on_event=lambda *_: None) as admin_a,
                open_client(b.gw, scopes=ADMIN, on_event=lambda *_: None) as cb,
            ):
                await _run(cb, KEY, "b1")
                await _run(cb, PEER, "b2")
                assert owner_of(nodes, KEY) is b and owner_of(nodes, PEER) is b
                before = _row(b, KEY).updatedAt

                # patchMany through A (operator.write: the Control UI's fields)
                got = await writer_a.request(
                    "sessions.patchMany",
                    {
                        "targets": [{"key": KEY}, {"key": " "}, {"key": KEY, "agentId": "nope"}],
                        "patch": {"label": "from-a", "category": "team"},
                    },
                )
                oks = [o["ok"] for o in got["outcomes"]]
                assert oks == [True, False, False]
                assert got["outcomes"][0] == {"ok": True, "key": KEY}
                assert _row(b, KEY).label == "from-a" and _row(b, KEY).category == "team"
                assert a.gw.actors.supervisor.peek_session(KEY) is None  # no copy on A
                await _run(cb, KEY, "b3")
                stored = await _stored(b, KEY)
                assert stored.label == "from-a" and stored.category == "team"

                # the group renamed through A: B refiles its session, `updatedAt` kept
                kept = _row(b, KEY).updatedAt
                assert kept >= before
                renamed = await writer_a.request(
                    "sessions.groups.rename", {"name": "team", "to": "crew"}
                )
                assert renamed["updatedSessions"] == 1
                assert [g["name"] for g in renamed["groups"]] == ["crew"]
                assert _row(b, KEY).category == "crew" and _row(b, KEY).updatedAt == kept
                await _run(cb, KEY, "b4")
                assert (await _stored(b, KEY)).category == "crew"

                # the group deleted through A: B ungroups its session
                deleted = await writer_a.request("sessions.groups.delete", {"name": "crew"})
                assert deleted["updatedSessions"] == 1 and deleted["groups"] == []
                assert _row(b, KEY).category is None
                await _run(cb, KEY, "b5")
                stored = await _stored(b, KEY)
                assert stored.category is None and stored.label == "from-a"

                # cleanup through A: B deletes the retired direct session it owns
                cleaned = await admin_a.request("sessions.cleanup", {"fixDmScope": True})
                assert cleaned["dmScopeRetired"] == 1
                assert b.gw.actors.supervisor.peek_session(PEER) is None
                assert await _stored(b, PEER) is None
                assert await _stored(b, KEY) is not None
            assert b.gw.router is not None and b.gw.router.served >= 4


async def test_cleanup_through_a_keeps_a_session_running_on_b(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with (
                open_client(a.gw, scopes=ADMIN, on_event=lambda *_: None) as admin_a,
                open_client(b.gw, scopes=ADMIN, on_event=lambda *_: None) as cb,
            ):
                accepted = await cb.request(
                    "agent", {"message": "[[stall]]", "sessionKey": PEER, "idempotencyKey": "s"}
                )
                assert accepted["status"] == "accepted"
                assert owner_of(nodes, PEER) is b
                assert not a.gw.actors.registry.active()  # A does not see the run
                cleaned = await admin_a.request("sessions.cleanup", {"fixDmScope": True})
                assert cleaned["dmScopeRetired"] == 0
                assert await _stored(b, PEER) is not None
                assert [r.run_id for r in b.gw.actors.registry.active()] == ["s"]
                aborted = await admin_a.request("sessions.abort", {"key": PEER})
                assert aborted["aborted"] is True

                # a session without a message, created on B: pruned by B (`fixMissing`)
                await cb.request("sessions.create", {"key": EMPTY})
                assert owner_of(nodes, EMPTY) is b
                cleaned = await admin_a.request("sessions.cleanup", {"fixMissing": True})
                assert cleaned["missing"] == 1
                assert b.gw.actors.supervisor.peek_session(EMPTY) is None
                assert await _stored(b, EMPTY) is None
