"""Approvals, questions and progress cards across a cluster's nodes: an approval raised on
one node (a run's exec or plugin approval, or a client's request) or a question (a run's
`ask_user`, or a client's `question.request`) is shown to the operators of every node and
answered through any of them (`ClusterApprovals`, the approvals' `actors.ApprovalPeers` and
the questions' `actors.approvals.DeskPeers`); a progress card written on one node is kept by every
node (the cards' `actors.operator.CardPeers`).

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

- **Questions** go the same way as approvals (kind `question`: `question.requested` /
  `resolved` to each node's operators holding `operator.questions`, `question.list` adds
  the other nodes' pending ones, `question.resolve` / `waitAnswer` / `get` go to the node
  holding the question, also for 15 s after it ended, as long as that node keeps it to
  answer a late call: `question '<id>' is already <status>` there, as OpenClaw's). A
  question raised with an id pending on another node is `QUESTION_ID_IN_USE`. A question
  is not stored: when its node is gone, it is gone (each node tells its operators
  `question.resolved` `cancelled`, as OpenClaw cancels a question whose run is gone, and
  answering it is `question '<id>' was not found`).
- **Progress cards.** Every write and forget of a card is told to every node (`{"card":
  ...}`), which keeps the copy and sends `progressCard.changed` to its own operators; a
  node that joins is told every card kept here (`{"cards": [...]}`, `CARDS_PER_NOTE` a
  notice). `progressCard.put` and `get` are routed to the session's owner (`_route`).

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

from actors import ActorError, ExecApprovals, PluginApprovals, ProgressCards, Questions
from runtime.loop import APPROVAL_DECISIONS, ApprovalDecision

__all__ = ["APPROVAL_METHODS", "DESK_METHODS", "QUESTION_METHODS", "ClusterApprovals"]

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
QUESTION_METHODS: Final = frozenset({"question.resolve", "question.waitAnswer", "question.get"})
DESK_METHODS: Final = APPROVAL_METHODS | QUESTION_METHODS
"""What the router sends to the node holding the approval or question its `id` names."""
log = logging.getLogger("clawlane.cluster")

MAX_REMOTE: Final = 4096
CHECK_S: Final = 0.2
RETELL_S: Final = 5.0
ENDED_GRACE_S: Final = 15.0
"""How long a question's node answers for it after it ended (`actors.Questions`')."""
CARDS_PER_NOTE: Final = 64
_EVENTS: Final = {
    ("exec", "requested"): "exec.approval.requested",
    ("exec", "resolved"): "exec.approval.resolved",
    ("plugin", "requested"): "plugin.approval.requested",
    ("plugin", "resolved"): "plugin.approval.resolved",
    ("question", "requested"): "question.requested",
    ("question", "resolved"): "question.resolved",
}

Desk = PluginApprovals | Questions
Key = tuple[str, str]
"""An item of another node: (`approval` or `question`, its id)."""


def _family(kind: str) -> str:
    return "question" if kind == "question" else "approval"


class _Router(Protocol):
    node_id: str

    @property
    def alive(self) -> set[str]: ...

    def tell_all(self, note: dict[str, Any]) -> None: ...

    def tell(self, node: str, note: dict[str, Any]) -> None: ...


class ClusterApprovals:
    """This node's side of the cluster's approvals (see the module docstring)."""

    def __init__(
        self,
        registries: dict[str, Desk],
        router: _Router,
        *,
        cards: ProgressCards | None = None,
        clock: Callable[[], float] = trio.current_time,
    ) -> None:
        self.registries = registries
        self.router = router
        self.cards = cards
        self._clock = clock
        self._pending: collections.OrderedDict[Key, tuple[str, str, dict[str, Any]]] = (
            collections.OrderedDict()
        )
        """Approvals and questions pending on other nodes: (family, id) -> (node, kind,
        view)."""
        self._ended: collections.OrderedDict[Key, tuple[str, float]] = collections.OrderedDict()
        """Questions that ended on other nodes: (family, id) -> (node, when it ended here)."""
        self._approvers: dict[str, int] = {}
        self._told = -1
        self._greeted: set[str] = set()
        """The live nodes told this node's pending approvals."""

    @classmethod
    def attach(cls, gateway: Any, router: _Router) -> ClusterApprovals:
        """The node's approvals (its exec desk and its plugin approvals) joined to the
        cluster through `router`. Not a checkpoint."""
        registries: dict[str, Desk] = {"plugin": gateway.approvals}
        desk = gateway.actors.supervisor.services.exec_approver
        if isinstance(desk, ExecApprovals):
            registries["exec"] = desk
        registries["question"] = gateway.questions
        joined = cls(registries, router, cards=gateway.cards)
        for registry in registries.values():
            registry.peers = joined
        gateway.cards.peers = joined
        return joined

    def detach(self) -> None:
        for registry in self.registries.values():
            if registry.peers is self:
                registry.peers = None
        if self.cards is not None and self.cards.peers is self:
            self.cards.peers = None

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

    def card_changed(self, slot: dict[str, Any]) -> None:
        self.router.tell_all({"card": slot})

    def resolve_elsewhere(
        self, kind: str, approval_id: str, decision: ApprovalDecision, resolved_by: str | None
    ) -> bool:
        owner = self.owner(approval_id)
        found = self._pending.get(("approval", approval_id.strip()))
        if owner is None or found is None or found[1] != kind:
            return False
        note = {"approval": "resolve", "kind": kind, "id": found[2].get("id")}
        self.router.tell(owner, {**note, "decision": decision, "resolvedBy": resolved_by})
        return True

    def _resolve_here(self, note: dict[str, Any]) -> None:
        """Another node's `/approve` of an approval pending here."""
        registry = self.registries.get(str(note.get("kind")))
        decision = note.get("decision")
        if not isinstance(registry, PluginApprovals) or decision not in APPROVAL_DECISIONS:
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

    def owner(self, item_id: object, family: str = "approval") -> str | None:
        """The node an approval (or a question) is pending on, when it is another live
        node; for a question, also one that ended there in the last `ENDED_GRACE_S`."""
        if not isinstance(item_id, str):
            return None
        key = (family, item_id.strip() if family == "approval" else item_id)
        found = self._pending.get(key)
        node = found[0] if found is not None else None
        if node is None and key in self._ended:
            ended_node, at = self._ended[key]
            node = ended_node if at + ENDED_GRACE_S > self._clock() else None
        return node if node in self._others() else None

    def route(self, method: str, params: dict[str, Any]) -> str | None:
        """The node a `DESK_METHODS` request goes to (None: this one answers)."""
        item_id = params.get("id")
        if method not in QUESTION_METHODS:
            return self.owner(item_id)
        here = self.registries.get("question")
        if isinstance(item_id, str) and here is not None and here.get(item_id) is not None:
            return None  # a question of this node's (its ids are the clients' to choose)
        return self.owner(item_id, "question")

    def on_note(self, note: dict[str, Any]) -> bool:
        """Take another node's approval notice; False when `note` is not one."""
        node = str(note.get("from"))
        if "approvers" in note:
            count = note["approvers"]
            self._approvers[node] = count if isinstance(count, int) else 0
            return True
        if "card" in note or "cards" in note:
            self._take_cards(note)
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
        key = (_family(str(kind)), str(payload.get("id")))
        if what == "requested":
            if key in self._pending:
                return True  # told twice (raised, then greeted): shown once
            self._pending[key] = (node, str(kind), payload)
            while len(self._pending) > MAX_REMOTE:
                self._pending.popitem(last=False)
        else:
            self._pending.pop(key, None)
            if kind == "question":  # its node still answers for it a while
                self._ended[key] = (node, self._clock())
                self._forget_ended()
        registry.notify(event, payload)
        return True

    def _forget_ended(self) -> None:
        horizon = self._clock() - ENDED_GRACE_S
        ended = self._ended
        while ended and (len(ended) > MAX_REMOTE or next(iter(ended.values()))[1] <= horizon):
            ended.popitem(last=False)

    def _take_cards(self, note: dict[str, Any]) -> None:
        """Another node's card write (`card`), or the cards it keeps (`cards`: greeting)."""
        if self.cards is None:
            return
        if isinstance(note.get("card"), dict):
            self.cards.take(note["card"])
        for slot in note.get("cards") or ():
            if isinstance(slot, dict):
                self.cards.take(slot, tell=False)

    def _gone(self, nodes: set[str]) -> None:
        """Forget the questions pending on `nodes` (gone), telling this node's operators
        they ended `cancelled` (their runs are gone with their node)."""
        questions = self.registries.get("question")
        for key, (node, kind, _view) in list(self._pending.items()):
            if node in nodes and kind == "question":
                del self._pending[key]
                if questions is not None:
                    questions.notify("question.resolved", {"id": key[1], "status": "cancelled"})

    # --- telling the others how many can answer here -----------------------------------------

    def _local_approvers(self) -> int:
        registry = self.registries["plugin"]
        assert isinstance(registry, PluginApprovals)
        return len(registry.approvers())

    def _greet(self) -> None:
        """Tell each node alive since the last look the approvals and questions pending
        here and the cards kept here; forget the questions of the nodes gone."""
        others = self._others()
        for node in others - self._greeted:
            for kind, registry in self.registries.items():
                for item in registry.pending():
                    note = {"approval": "requested", "kind": kind, "payload": item.view()}
                    self.router.tell(node, note)
            slots = self.cards.slots() if self.cards is not None else []
            for start in range(0, len(slots), CARDS_PER_NOTE):
                self.router.tell(node, {"cards": slots[start : start + CARDS_PER_NOTE]})
        if self._greeted - others:
            self._gone(self._greeted - others)
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
