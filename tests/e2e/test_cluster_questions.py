"""Questions and progress cards across two gateways on one PostgreSQL and one Redis: a run on
node B asks (`ask_user`); the operators of both nodes are told (`question.requested`), A
lists it, reads it and answers it through A (forwarded to B), the answer reaches the run on
B and both nodes' operators are told it ended; answering it again through A is OpenClaw's
`already answered`. A run on B whose question is left pending is aborted: the question is
cancelled and answering it through A is OpenClaw's `already cancelled`. A card put through
B is read through A, both nodes' operators are told (`progressCard.changed`), and A keeps a
copy. Skipped, saying why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e._events import next_event
from tests.e2e.test_ask_user import MESSAGE
from tests.e2e.test_cluster_nodes import two_nodes
from transports import GatewayClient, GatewayRequestError

__all__ = ["pg_url"]  # the fixture, used by name

ANSWERER = ["operator.questions"]
RUNNER = ["operator.read", "operator.write"]
ANSWER = {"answers": {"target": ["Prod"]}}


async def ask(client: GatewayClient, run_id: str, done: dict[str, Any]) -> None:
    done["final"] = await client.request(
        "agent",
        {"message": MESSAGE, "idempotencyKey": run_id, "sessionKey": "main"},
        expect_final=True,
    )


async def test_a_question_raised_on_b_is_answered_through_a(tmp_path: Path, pg_url: str) -> None:
    done: dict[str, Any] = {}
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes[0].gw, nodes[1].gw
            async with (
                open_client(a, scopes=ANSWERER) as on_a,
                open_client(b, scopes=ANSWERER) as on_b,
                open_client(b, scopes=RUNNER, on_event=lambda *_: None) as runner,
                trio.open_nursery() as nursery,
            ):
                nursery.start_soon(ask, runner, "q1", done)
                requested = await next_event(on_a, "question.requested")
                assert await next_event(on_b, "question.requested") == requested
                held = (
                    [q.id for q in a.questions.pending()],
                    [q.id for q in b.questions.pending()],
                )
                listed = await on_a.request("question.list", {})
                got = await on_a.request("question.get", {"id": requested["id"]})
                answer = await on_a.request(
                    "question.resolve", {"id": requested["id"], "answers": ANSWER}
                )
                resolved = (
                    await next_event(on_a, "question.resolved"),
                    await next_event(on_b, "question.resolved"),
                )
                waited = await on_a.request("question.waitAnswer", {"id": requested["id"]})
                with pytest.raises(GatewayRequestError) as again:
                    await on_a.request("question.resolve", {"id": requested["id"], "cancel": True})
    assert held == ([], [requested["id"]])
    assert (requested["runId"], requested["sessionKey"]) == ("q1", "agent:main:main")
    assert listed == {"questions": [requested]}
    assert got == {"question": requested}
    assert answer == {"status": "answered", "answers": ANSWER}
    ended = {"id": requested["id"], "status": "answered", "answers": ANSWER}
    assert resolved[0] == resolved[1] == ended
    assert waited == {"status": "answered", "answers": ANSWER}
    assert "is already answered" in str(again.value)
    assert (again.value.details or {}).get("reason") == "QUESTION_ALREADY_TERMINAL"
    assert done["final"]["status"] == "ok"
    assert "Prod" in json.dumps(done["final"]["result"])


async def test_a_question_whose_run_is_gone_is_cancelled_on_every_node(
    tmp_path: Path, pg_url: str
) -> None:
    done: dict[str, Any] = {}
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes[0].gw, nodes[1].gw
            async with (
                open_client(a, scopes=ANSWERER) as on_a,
                open_client(b, scopes=RUNNER, on_event=lambda *_: None) as runner,
                trio.open_nursery() as nursery,
            ):
                nursery.start_soon(ask, runner, "q2", done)
                requested = await next_event(on_a, "question.requested")
                print("REQ-A", requested)
                await runner.request("chat.abort", {"sessionKey": "main", "runId": "q2"})
                resolved = await next_event(on_a, "question.resolved")
                got = await on_a.request("question.get", {"id": requested["id"]})
                with pytest.raises(GatewayRequestError) as late:
                    await on_a.request(
                        "question.resolve", {"id": requested["id"], "answers": ANSWER}
                    )
                listed = await on_a.request("question.list", {})
                with pytest.raises(GatewayRequestError) as unknown:
                    await on_a.request("question.get", {"id": "ask_" + "0" * 32})
    assert resolved == {"id": requested["id"], "status": "cancelled"}
    assert got["question"]["status"] == "cancelled"
    assert got["question"]["resolvedBy"] == "requester-inactive"
    assert "is already cancelled" in str(late.value)
    assert listed == {"questions": []}
    assert (unknown.value.details or {}).get("reason") == "QUESTION_NOT_FOUND"
    assert done["final"]["result"]["meta"]["aborted"] is True


async def test_a_card_put_through_b_is_read_on_a(tmp_path: Path, pg_url: str) -> None:
    plan = [{"step": "Inspect", "status": "completed"}, {"step": "Fix", "status": "in_progress"}]
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes[0].gw, nodes[1].gw
            async with (
                open_client(a, scopes=["operator.read"]) as viewer_a,
                open_client(b, scopes=["operator.read"]) as viewer_b,
                open_client(b, scopes=RUNNER, on_event=lambda *_: None) as writer,
            ):
                put = await writer.request(
                    "progressCard.put", {"sessionKey": "main", "plan": plan, "markdown": "On it."}
                )
                changed = (
                    await next_event(viewer_a, "progressCard.changed"),
                    await next_event(viewer_b, "progressCard.changed"),
                )
                copy_on_a = a.cards.get("agent:main:main")
                read_on_a = await viewer_a.request("progressCard.get", {"sessionKey": "main"})
                cleared = await writer.request(
                    "progressCard.put", {"sessionKey": "main", "markdown": "", "plan": []}
                )
                after = await next_event(viewer_a, "progressCard.changed")
                read_again = await viewer_a.request("progressCard.get", {"sessionKey": "main"})
    assert put["card"]["revision"] == 1 and put["card"]["steps"] == plan
    assert changed[0] == changed[1] == {"sessionKey": "agent:main:main", "revision": 1}
    assert copy_on_a == put["card"]
    assert read_on_a == {"card": put["card"]}
    assert cleared == {"card": None}
    assert after == {"sessionKey": "agent:main:main", "revision": None}
    assert read_again == {"card": None}
