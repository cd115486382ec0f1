"""`ClusterApprovals` with questions and progress cards, on a recording router: a question
raised here is told to the other nodes and greeted to one that joins; another node's
question is listed, its id in use here, its calls routed to it (also for 15 s after it
ended, not after), and when that node is gone its question is told `cancelled` to this
node's operators; cards written here are told, another node's are taken (an older revision
passed over), a joining node is greeted with the cards kept here."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio

from actors import EventHub, PluginApprovals, ProgressCards, QuestionError, Questions
from tests.actors.operator._conn import Conn
from transports.cluster._approvals import ClusterApprovals

PICK: dict[str, Any] = {
    "questionId": "target",
    "header": "Deploy",
    "question": "Where to?",
    "options": [{"label": "Staging"}, {"label": "Prod"}],
}


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


@attrs.define
class Desks:
    questions: Questions
    cards: ProgressCards
    peers: ClusterApprovals
    router: Router
    operator: Conn
    now: list[float]


def joined() -> Desks:
    operator = Conn("op", scopes=frozenset({"operator.questions", "operator.read"}))
    hub = EventHub()
    conns = {operator.conn_id: operator}
    questions, cards = Questions(hub, conns), ProgressCards(hub, conns, now_ms=lambda: 5)
    router, now = Router(), [100.0]
    registries: dict[str, Any] = {"plugin": PluginApprovals(hub, conns), "question": questions}
    peers = ClusterApprovals(registries, router, cards=cards, clock=lambda: now[0])
    questions.peers = cards.peers = peers
    peers._greet()  # b is known
    return Desks(questions, cards, peers, router, operator, now)


def seen(d: Desks) -> list[tuple[str, Any]]:
    return [(f["event"], f["payload"]) for f in d.operator.frames]


def record(question_id: str) -> dict[str, Any]:
    return {"id": question_id, "questions": [PICK], "createdAtMs": 1, "status": "pending"}


async def test_a_question_here_is_told_and_greeted() -> None:
    d = joined()
    asked = d.questions.open([PICK], timeout_ms=60_000, question_id="q1")
    assert d.router.to_all[-1] == {
        "approval": "requested",
        "kind": "question",
        "payload": {**asked.record()},
    }
    d.router.alive.add("c")
    d.peers._greet()
    told_c = [note for node, note in d.router.to_one if node == "c"]
    assert [n["payload"]["id"] for n in told_c if "payload" in n] == ["q1"]
    d.questions.resolve("q1", {"target": ["Prod"]})
    assert d.router.to_all[-1]["approval"] == "resolved"
    assert d.router.to_all[-1]["payload"]["status"] == "answered"
    await trio.lowlevel.checkpoint()


async def test_another_nodes_question_is_listed_routed_and_ended() -> None:
    d = joined()
    note = {"from": "b", "approval": "requested", "kind": "question", "payload": record("q2")}
    assert d.peers.on_note(note)
    assert d.questions.records() == [record("q2")]
    assert [e for e, _p in seen(d)] == ["question.requested"]
    with pytest.raises(QuestionError) as in_use:
        d.questions.open([PICK], timeout_ms=1_000, question_id="q2")
    assert in_use.value.reason == "QUESTION_ID_IN_USE"
    assert d.peers.route("question.resolve", {"id": "q2"}) == "b"
    assert d.peers.route("exec.approval.resolve", {"id": "q2"}) is None  # not an approval
    ended = {"id": "q2", "status": "answered", "answers": {"answers": {"target": ["Prod"]}}}
    d.peers.on_note({"from": "b", "approval": "resolved", "kind": "question", "payload": ended})
    assert d.questions.records() == []
    assert seen(d)[-1] == ("question.resolved", ended)
    d.now[0] += 14
    assert d.peers.route("question.get", {"id": "q2"}) == "b"  # b answers for it a while
    d.now[0] += 2
    assert d.peers.route("question.get", {"id": "q2"}) is None  # then it is unknown
    await trio.lowlevel.checkpoint()


async def test_a_question_of_a_node_gone_is_cancelled_here() -> None:
    d = joined()
    note = {"from": "b", "approval": "requested", "kind": "question", "payload": record("q3")}
    d.peers.on_note(note)
    d.router.alive.discard("b")
    assert d.questions.records() == [] and d.peers.route("question.get", {"id": "q3"}) is None
    d.peers._greet()
    assert seen(d)[-1] == ("question.resolved", {"id": "q3", "status": "cancelled"})
    await trio.lowlevel.checkpoint()


async def test_a_local_question_is_answered_here_even_if_another_node_has_its_id() -> None:
    d = joined()
    d.peers.on_note(
        {"from": "b", "approval": "requested", "kind": "question", "payload": record("x")}
    )
    d.questions.open([PICK], timeout_ms=1_000, question_id="y")
    assert d.peers.route("question.get", {"id": "y"}) is None
    assert d.peers.route("question.get", {"id": "x"}) == "b"
    await trio.lowlevel.checkpoint()


async def test_cards_are_told_taken_and_greeted() -> None:
    d = joined()
    d.cards.put("agent:main:main", {"markdown": "hi"})
    assert d.router.to_all[-1] == {
        "card": {
            "sessionKey": "agent:main:main",
            "revision": 1,
            "updatedAt": 5,
            "card": {
                "sessionKey": "agent:main:main",
                "revision": 1,
                "updatedAt": 5,
                "markdown": "hi",
            },
        }
    }
    theirs = {
        "sessionKey": "agent:x:main",
        "revision": 3,
        "updatedAt": 9,
        "card": {"markdown": "b"},
    }
    assert d.peers.on_note({"from": "b", "card": theirs})
    assert d.cards.get("agent:x:main") == {"markdown": "b"}
    assert seen(d)[-1] == ("progressCard.changed", {"sessionKey": "agent:x:main", "revision": 3})
    older = {**theirs, "revision": 2, "card": {"markdown": "old"}}
    d.peers.on_note({"from": "b", "card": older})
    assert d.cards.get("agent:x:main") == {"markdown": "b"}
    told = len(d.router.to_all)
    d.cards.put("agent:x:main", {})  # a clear continues from the copy's revision
    assert d.router.to_all[told]["card"]["revision"] == 4
    d.peers.on_note({"from": "b", "card": {"sessionKey": "agent:main:main", "forget": True}})
    assert d.cards.get("agent:main:main") is None
    d.router.alive.add("c")
    d.peers._greet()
    greeted = [note["cards"] for node, note in d.router.to_one if node == "c" and "cards" in note]
    assert greeted == [
        [{"sessionKey": "agent:x:main", "revision": 4, "updatedAt": 5, "card": None}]
    ]
    await trio.lowlevel.checkpoint()
