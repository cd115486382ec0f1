"""Approvals across a cluster's nodes: an approval raised on one node (a run's exec or plugin
approval, or a client's request) is shown to the operators of every node and answered
through any of them (`ClusterApprovals`, the approvals' `actors.ApprovalPeers`).

- **Who can answer.** Each node tells the others how many operators who may answer
  (`operator.approvals`) are connected to it (a `{"approvers": n}` notice when the count
  changes, and every `RETELL_S` so a node that joins learns it). An approval raised on a
  node with none of its own waits when another node has one, instead of ending `no-route`.
- **Raised and ended.** The owner tells every node (`{"approval": "requested" | "resolved",
  kind, payload}`); each sends `exec.approval.requested` / `resolved` (or the plugin ones)
  to its own operators and keeps the pending ones' views (`pending_elsewhere`: what
  `exec.approval.list` / `plugin.approval.list` add), forgetting a node's when it is gone.
- **Answering anywhere.** `/approve` in `chat.send` on a node that does not hold the
  approval sends the decision to the node that does (`resolve_elsewhere`, a `resolve`
  notice; its resolved event is the outcome). The router sends `exec.approval.resolve`, `plugin.approval.resolve`,
  `approval.resolve`, `*.waitDecision` and `*.get` for an approval pending on another node
  to that node (`owner`: `Router.target` gives `("node", id)`), which answers as if the
  operator were its own (first answer wins there).

Ended approvals are in the store the nodes share (`actors.ApprovalRecords`), so
`approval.get` and `approval.history` read them on any node, and a resolve repeated after
the end is answered from there. A node that joins is told the approvals pending here
(`_greet`, as soon as this node sees it alive). Notices are as reliable as the router's
(Redis streams, bounded): one lost is not repeated, so a missed `requested` leaves that
card absent on one node until it ends. A node restarted under the same id while this node
never saw it gone is not greeted again.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

import trio

from actors import ActorError, ExecApprovals, PluginApprovals
from runtime.loop import APPROVAL_DECISIONS, ApprovalDecision

__all__ = ["APPROVAL_METHODS", "ClusterApprovals"]

APPROVAL_METHODS: Final = frozenset(
    {
        "exec.approval.resolve",
        "exec.approval.waitDecision",
        "exec.approval.get",
        "plugin.approval.resolve",
        "plugin.approval.waitDecision",
        "approval.resolve",
        "approval.get",
    }
)
log = logging.getLogger("clawlane.cluster")

MAX_REMOTE: Final = 4096
CHECK_S: Final = 0.2
RETELL_S: Final = 5.0
_EVENTS: Final = {
    ("exec", "requested"): "exec.approval.requested",
    ("exec", "resolved"): "exec.approval.resolved",
    ("plugin", "requested"): "plugin.approval.requested",
    ("plugin", "resolved"): "plugin.approval.resolved",
}


class _Router(Protocol):
    node_id: str

    @property
    def alive(self) -> set[str]: ...

    def tell_all(self, note: dict[str, Any]) -> None: ...

    def tell(self, node: str, note: dict[str, Any]) -> None: ...


class ClusterApprovals:
    """This node's side of the cluster's approvals (see the module docstring)."""

    def __init__(self, registries: dict[str, PluginApprovals], router: _Router) -> None:
        self.registries = registries
        self.router = router
        self._pending: collections.OrderedDict[str, tuple[str, str, dict[str, Any]]] = (
            collections.OrderedDict()
        )
        """Approvals pending on other nodes: id -> (node, kind, view)."""
        self._approvers: dict[str, int] = {}
        self._told = -1
        self._greeted: set[str] = set()
        """The live nodes told this node's pending approvals."""

    @classmethod
    def attach(cls, gateway: Any, router: _Router) -> ClusterApprovals:
        """The node's approvals (its exec desk and its plugin approvals) joined to the
        cluster through `router`. Not a checkpoint."""
        registries: dict[str, PluginApprovals] = {"plugin": gateway.approvals}
        desk = gateway.actors.supervisor.services.exec_approver
        if isinstance(desk, ExecApprovals):
            registries["exec"] = desk
        joined = cls(registries, router)
        for registry in registries.values():
            registry.peers = joined
        return joined

    def detach(self) -> None:
        for registry in self.registries.values():
            if registry.peers is self:
                registry.peers = None

    # --- actors.ApprovalPeers ---------------------------------------------------------------

    def _others(self) -> set[str]:
        return self.router.alive - {self.router.node_id}

    def approvers_elsewhere(self) -> int:
        others = self._others()
        return sum(n for node, n in self._approvers.items() if node in others)

    def raised(self, kind: str, view: dict[str, Any]) -> None:
        self.router.tell_all({"approval": "requested", "kind": kind, "payload": view})

    def ended(self, kind: str, approval_id: str, payload: dict[str, Any]) -> None:
        self.router.tell_all(
            {"approval": "resolved", "kind": kind, "id": approval_id, "payload": payload}
        )

    def pending_elsewhere(self, kind: str) -> list[dict[str, Any]]:
        others = self._others()
        return [view for node, k, view in self._pending.values() if k == kind and node in others]

    def resolve_elsewhere(
        self, kind: str, approval_id: str, decision: ApprovalDecision, resolved_by: str | None
    ) -> bool:
        owner = self.owner(approval_id)
        found = self._pending.get(approval_id.strip())
        if owner is None or found is None or found[1] != kind:
            return False
        note = {"approval": "resolve", "kind": kind, "id": found[2].get("id")}
        self.router.tell(owner, {**note, "decision": decision, "resolvedBy": resolved_by})
        return True

    def _resolve_here(self, note: dict[str, Any]) -> None:
        """Another node's `/approve` of an approval pending here."""
        registry = self.registries.get(str(note.get("kind")))
        decision = note.get("decision")
        if registry is None or decision not in APPROVAL_DECISIONS:
            return
        by = note.get("resolvedBy")
        try:
            registry.resolve(str(note.get("id")), decision, resolved_by=by and str(by))
        except ActorError as exc:  # ended meanwhile, or not offered: its event says so
            log.info(
                "approval %s: a decision from %s not taken: %s",
                note.get("id"),
                note.get("from"),
                exc,
            )

    # --- what the router asks ----------------------------------------------------------------

    def owner(self, approval_id: object) -> str | None:
        """The node an approval is pending on, when it is another live node."""
        if not isinstance(approval_id, str):
            return None
        found = self._pending.get(approval_id.strip())
        if found is None or found[0] not in self._others():
            return None
        return found[0]

    def on_note(self, note: dict[str, Any]) -> bool:
        """Take another node's approval notice; False when `note` is not one."""
        node = str(note.get("from"))
        if "approvers" in note:
            count = note["approvers"]
            self._approvers[node] = count if isinstance(count, int) else 0
            return True
        what, kind = note.get("approval"), note.get("kind")
        if what == "resolve":
            self._resolve_here(note)
            return True
        event = _EVENTS.get((str(kind), str(what)))
        payload = note.get("payload")
        registry = self.registries.get(str(kind))
        if event is None or registry is None or not isinstance(payload, dict):
            return "approval" in note
        approval_id = str(payload.get("id"))
        if what == "requested":
            if approval_id in self._pending:
                return True  # told twice (raised, then greeted): shown once
            self._pending[approval_id] = (node, str(kind), payload)
            while len(self._pending) > MAX_REMOTE:
                self._pending.popitem(last=False)
        else:
            self._pending.pop(approval_id, None)
        registry.notify(event, payload)
        return True

    # --- telling the others how many can answer here -----------------------------------------

    def _local_approvers(self) -> int:
        registry = next(iter(self.registries.values()))
        return len(registry.approvers())

    def _greet(self) -> None:
        """Tell each node alive since the last look the approvals pending here."""
        others = self._others()
        for node in others - self._greeted:
            for kind, registry in self.registries.items():
                for approval in registry.pending():
                    note = {"approval": "requested", "kind": kind, "payload": approval.view()}
                    self.router.tell(node, note)
        self._greeted = others

    async def run(self, *, clock: Callable[[], float] = trio.current_time) -> None:
        """Tell the other nodes this node's approver count when it changes, and again every
        `RETELL_S`; greet the nodes that join. Never returns; cancel it to stop."""
        told_at = -RETELL_S
        while True:
            self._greet()
            count = self._local_approvers()
            now = clock()
            if count != self._told or now - told_at >= RETELL_S:
                self.router.tell_all({"approvers": count})
                self._told, told_at = count, now
            await trio.sleep(CHECK_S)
