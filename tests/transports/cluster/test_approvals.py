"""`ClusterApprovals` with a recording router: an approval raised where no operator is
connected waits when another node has one, and the other nodes are told; a node that joins
is told the pending ones; a notice told twice is shown once; another node's ended approval
leaves the list; a node gone takes its pending ones and its operators with it."""

from __future__ import annotations

from typing import Any

import attrs
import trio

from actors import EventHub, PluginApprovals
from runtime.protocol import PluginApprovalRequestParams
from transports.cluster._approvals import ClusterApprovals


@attrs.define
class Router:
    node_id: str = "a"
    alive: set[str] = attrs.field(factory=lambda: {"a", "b"})
    to_all: list[dict[str, Any]] = attrs.field(factory=list)
    to_one: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)

    def tell_all(self, note: dict[str, Any]) -> None:
        self.to_all.append(note)

    def tell(self, node: str, note: dict[str, Any]) -> None:
        self.to_one.append((node, note))


def joined() -> tuple[PluginApprovals, ClusterApprovals, Router]:
    registry = PluginApprovals(EventHub(), {})
    router = Router()
    peers = ClusterApprovals({"plugin": registry}, router)
    registry.peers = peers
    return registry, peers, router


async def test_an_approval_waits_for_an_operator_on_another_node_and_is_told() -> None:
    registry, peers, router = joined()
    peers._greet()  # what `run` does each round: b is known, with nothing pending
    params = PluginApprovalRequestParams(title="t", description="d")
    alone = registry.open(params)
    assert alone.reason == "no-route"  # no operator anywhere yet
    peers.on_note({"from": "b", "approvers": 1})
    waiting = registry.open(params)
    assert waiting.pending
    assert [(n["approval"], n["payload"]["id"]) for n in router.to_all] == [
        ("requested", waiting.id)
    ]
    router.alive.add("c")
    peers._greet()
    assert [(node, note["payload"]["id"]) for node, note in router.to_one] == [("c", waiting.id)]
    registry.resolve(waiting.id, "allow-once", resolved_by="op")
    assert router.to_all[-1]["approval"] == "resolved"
    await trio.lowlevel.checkpoint()


async def test_other_nodes_pending_ones_are_listed_once_until_they_end_or_go() -> None:
    registry, peers, router = joined()
    view = {"approvalKind": "plugin", "id": "plugin:x", "request": {}, "createdAtMs": 1}
    note = {"from": "b", "approval": "requested", "kind": "plugin", "payload": view}
    assert peers.on_note(note) and peers.on_note(note)
    assert registry.pending_views() == [view]
    assert peers.owner("plugin:x") == "b"
    router.alive.discard("b")
    assert registry.pending_views() == [] and peers.owner("plugin:x") is None
    router.alive.add("b")
    ended = {"from": "b", "approval": "resolved", "kind": "plugin", "payload": {"id": "plugin:x"}}
    assert peers.on_note(ended)
    assert registry.pending_views() == [] and peers.owner("plugin:x") is None
    assert not peers.on_note({"from": "b", "presence": 1})  # not an approval notice
    await trio.lowlevel.checkpoint()
