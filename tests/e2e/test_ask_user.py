"""`ask_user` and the `question.*` methods on a real gateway: a run driven by the `local`
model's `[[tool:ask_user ...]]` directive shows its question to an operator connection (as
OpenClaw's TUI and Control UI receive it: `question.requested`, `question.list`,
`question.get`), the operator's `question.resolve` reaches the waiting run and is in the
tool's result; an abort cancels the question; a client's own question expires, and the
methods refuse what OpenClaw refuses. Every answer and event validated against OpenClaw's
schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import frame_checker, local_config, open_client, running_gateway
from tests.e2e._events import next_event, recorder_events, run_events
from tests.e2e._openclaw import CONTROL_UI_CONNECT, TUI_CONNECT, UI_ORIGIN, openclaw_client
from transports import GatewayClient, GatewayRequestError

RUNNER = ["operator.read", "operator.write"]
"""A connection that runs agents; it is not told of questions."""
ANSWERER = ["operator.questions"]
ASK = {
    "questions": [
        {
            "id": "target",
            "header": "Deploy",
            "question": "Where should this go?",
            "options": [{"label": "Staging (Recommended)"}, {"label": "Prod"}],
        }
    ]
}
MESSAGE = f"[[tool:ask_user {json.dumps(ASK)}]]"


async def start_run(
    nursery: trio.Nursery, client: GatewayClient, run_id: str, done: dict[str, Any]
) -> None:
    async def run() -> None:
        done["final"] = await client.request(
            "agent", {"message": MESSAGE, "idempotencyKey": run_id}, expect_final=True
        )

    nursery.start_soon(run)
    await trio.lowlevel.checkpoint()


async def test_the_operators_answer_reaches_the_run(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    done: dict[str, Any] = {}
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=RUNNER, caps=["tool-events"], on_event=on_event) as runner,
                open_client(gw, scopes=ANSWERER) as operator,
                trio.open_nursery() as nursery,
            ):
                await start_run(nursery, runner, "asks", done)
                requested = await next_event(operator, "question.requested")
                frame_checker().validate("QuestionRequestedEvent", requested)
                assert (requested["runId"], requested["sessionKey"]) == ("asks", "agent:main:main")
                assert requested["questions"][0]["isOther"] is True
                listed = await operator.request("question.list", {})
                assert listed == {"questions": [requested]}
                got = await operator.request("question.get", {"id": requested["id"]})
                assert got == {"question": requested}
                answer = {"answers": {"target": ["Prod"]}}
                resolved = await operator.request(
                    "question.resolve", {"id": requested["id"], "answers": answer}
                )
                assert resolved == {"status": "answered", "answers": answer}
                event = await next_event(operator, "question.resolved")
                frame_checker().validate("QuestionResolvedEvent", event)
                assert event == {"id": requested["id"], "status": "answered", "answers": answer}
                with pytest.raises(GatewayRequestError) as late:
                    await operator.request(
                        "question.resolve", {"id": requested["id"], "cancel": True}
                    )
                assert late.value.details == {"reason": "QUESTION_ALREADY_TERMINAL"}
                waited = await operator.request("question.waitAnswer", {"id": requested["id"]})
                assert waited == {"status": "answered", "answers": answer}
                assert (await operator.request("question.list", {})) == {"questions": []}
    assert done["final"]["status"] == "ok"
    [result] = [
        d
        for p in run_events(events, "asks", "tool")
        if (d := p["data"])["phase"] == "result" and d["name"] != "tool_call"
    ]
    assert result["name"] == "ask_user" and not result["isError"]
    text = json.dumps(result["result"])
    assert "Deploy: Prod" in text and '\\"status\\": \\"answered\\"' in text
    assert not [e for (e, _p, _s) in events if e.startswith("question.")]


async def test_an_abort_cancels_the_question(tmp_path: Path) -> None:
    done: dict[str, Any] = {}
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=RUNNER) as runner,
                open_client(gw, scopes=ANSWERER) as operator,
                trio.open_nursery() as nursery,
            ):
                await start_run(nursery, runner, "stopped", done)
                requested = await next_event(operator, "question.requested")
                aborted = await runner.request(
                    "chat.abort", {"sessionKey": "main", "runId": "stopped"}
                )
                assert aborted["aborted"] is True
                resolved = await next_event(operator, "question.resolved")
                assert resolved == {"id": requested["id"], "status": "cancelled"}
                got = await operator.request("question.get", {"id": requested["id"]})
                assert got["question"]["status"] == "cancelled"
                with pytest.raises(GatewayRequestError) as late:
                    await operator.request(
                        "question.resolve",
                        {"id": requested["id"], "answers": {"answers": {"target": ["Prod"]}}},
                    )
                assert "is already cancelled" in str(late.value)
    assert done["final"]["result"]["meta"]["aborted"] is True


async def test_a_clients_question_expires_and_the_methods_refuse_as_openclaw(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=ANSWERER) as asker,
                open_client(gw, scopes=["operator.read"]) as reader,
            ):
                question = {
                    "questionId": "color",
                    "header": "Color",
                    "question": "Which color?",
                    "options": [{"label": "Red"}, {"label": "Blue"}],
                }
                made = await asker.request(
                    "question.request",
                    {"id": "q1", "questions": [question], "sessionKey": "main", "timeoutMs": 200},
                )
                assert made["id"] == "q1"
                again = {"id": "q1", "questions": [question]}
                with pytest.raises(GatewayRequestError) as in_use:
                    await asker.request("question.request", again)
                assert in_use.value.details == {"reason": "QUESTION_ID_IN_USE"}
                pending = await asker.request("question.waitAnswer", {"id": "q1", "timeoutMs": 1})
                assert pending == {"status": "pending"}
                waited = await asker.request("question.waitAnswer", {"id": "q1"})
                assert waited == {"status": "expired"}
                got = await asker.request("question.get", {"id": "q1"})
                assert got["question"]["sessionKey"] == "agent:main:main"
                with pytest.raises(GatewayRequestError) as missing:
                    await asker.request("question.get", {"id": "nope"})
                assert str(missing.value).endswith("question 'nope' was not found")
                assert missing.value.details == {"reason": "QUESTION_NOT_FOUND"}
                one_option = {**question, "options": [{"label": "Red"}]}
                with pytest.raises(GatewayRequestError) as shape:
                    await asker.request("question.request", {"questions": [one_option]})
                assert "must have either no options or 2 to 4 options" in str(shape.value)
                with pytest.raises(GatewayRequestError) as bad:
                    await asker.request("question.resolve", {"id": "q1", "cancel": False})
                assert "cancel must be true" in str(bad.value)
                with pytest.raises(GatewayRequestError) as scope:
                    await reader.request("question.list", {})
                assert "operator.questions" in str(scope.value)


async def test_openclaws_control_ui_and_terminal_ui_see_and_answer_the_question(
    tmp_path: Path,
) -> None:
    """With exactly the connect frames OpenClaw's Control UI and TUI send: the UI's chat.send
    asks, both are told, the TUI lists it (as it restores prompts), the UI answers, and the
    chat's final reply comes after the answer."""
    config = local_config(
        gateway__auth={"mode": "none"}, gateway__controlUi={"allowedOrigins": [UI_ORIGIN]}
    )
    run_id = "ui-asks"
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with (
                openclaw_client(gw, CONTROL_UI_CONNECT) as ui,
                openclaw_client(gw, TUI_CONNECT) as tui,
            ):
                params = {"sessionKey": "main", "message": MESSAGE, "idempotencyKey": run_id}
                assert (await ui.call("chat.send", params))["runId"] == run_id
                requested = await ui.until(lambda e, p: e == "question.requested")
                assert (await tui.until(lambda e, p: e == "question.requested")) == requested
                assert (await tui.call("question.list", {}))["questions"] == [requested]
                answers = {"answers": {"target": ["Staging (Recommended)"]}}
                resolved = await ui.call(
                    "question.resolve", {"id": requested["id"], "answers": answers}
                )
                assert resolved["status"] == "answered"
                final = await ui.chat_final(run_id)
                assert final["state"] == "final"
                assert await tui.until(lambda e, p: e == "question.resolved")
