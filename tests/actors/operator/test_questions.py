"""`Questions` and `ask_user`: who is told, how a question ends (an operator's answer, first
wins; a cancel; its deadline; the asking run cancelled), how answers are checked and made
canonical, and what the tool returns to the model in each case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors import EventHub
from actors.operator import QuestionError, Questions
from runtime.tools import AskUserTool, invoke_tool
from tests.actors.operator._conn import Conn, ctx
from tests.conftest import frame_checker

OPERATOR = frozenset({"operator.questions"})
PICK: dict[str, Any] = {
    "questionId": "target",
    "header": "Deploy",
    "question": "Where to?",
    "options": [{"label": "Staging (Recommended)"}, {"label": "Prod"}],
}


def setup(*conns: Conn) -> Questions:
    return Questions(EventHub(), {c.conn_id: c for c in conns}, now_ms=lambda: 1_000)


def asked(**extra: Any) -> dict[str, Any]:
    question = {
        "id": "target",
        "header": "  Deployment target  ",
        "question": " Where should this go? ",
        "options": [{"label": " Staging (Recommended) ", "description": "safe"}, {"label": "Prod"}],
    }
    return {"questions": [question | extra]}


async def test_operators_are_told_and_the_first_answer_wins() -> None:
    op, admin, reader = (
        Conn("a", OPERATOR),
        Conn("b", frozenset({"operator.admin"})),
        Conn("c", frozenset({"operator.read"})),
    )
    questions = setup(op, admin, reader)
    q = questions.open([PICK], timeout_ms=5_000, session_key="agent:main:main", run_id="r1")
    for conn in (op, admin):
        [requested] = conn.events("question.requested")
        frame_checker().validate("QuestionRequestedEvent", requested)
        assert requested["status"] == "pending" and requested["runId"] == "r1"
        assert (requested["createdAtMs"], requested["expiresAtMs"]) == (1_000, 6_000)
    assert reader.frames == []
    assert questions.resolve(q.id, {"target": [" Prod "]}, resolved_by="op") == {"target": ["Prod"]}
    with pytest.raises(QuestionError) as late:
        questions.resolve(q.id, {"target": ["Prod"]})
    assert late.value.reason == "QUESTION_ALREADY_TERMINAL"
    assert str(late.value) == f"question '{q.id}' is already answered"
    [resolved] = op.events("question.resolved")
    frame_checker().validate("QuestionResolvedEvent", resolved)
    assert resolved == {
        "id": q.id,
        "status": "answered",
        "answers": {"answers": {"target": ["Prod"]}},
    }
    frame_checker().validate("QuestionRecord", q.record())
    assert questions.pending() == []


@pytest.mark.parametrize(
    ("answers", "why"),
    [
        ({}, "question 'target' requires an answer"),
        ({"target": ["  "]}, "question 'target' contains an empty answer"),
        ({"target": ["Prod", "Staging (Recommended)"]}, "does not allow multiple answers"),
        ({"target": ["Moon"]}, "question 'target' contains an unknown option"),
        ({"target": ["Prod"], "other": ["x"]}, "question 'other' is not part of this request"),
    ],
)
async def test_an_answer_that_does_not_fit_is_refused_naming_the_question(
    answers: dict[str, list[str]], why: str
) -> None:
    questions = setup()
    q = questions.open([PICK], timeout_ms=5_000)
    with pytest.raises(QuestionError) as refused:
        questions.resolve(q.id, answers)
    assert refused.value.reason == "QUESTION_INVALID_ANSWER" and why in str(refused.value)
    assert q.pending


async def test_free_text_is_accepted_when_the_question_allows_it() -> None:
    questions = setup()
    q = questions.open([PICK | {"isOther": True, "multiSelect": True}], timeout_ms=5_000)
    assert questions.resolve(q.id, {"target": ["Moon", "Prod"]}) == {"target": ["Moon", "Prod"]}


async def test_a_question_expires_and_is_forgotten_after_its_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    op = Conn("a", OPERATOR)
    questions = setup(op)
    async with trio.open_nursery() as nursery:
        await nursery.start(questions.run)
        q = questions.open([PICK], timeout_ms=2_000)
        await trio.sleep(2.5)
        assert q.status == "expired" and questions.get(q.id) is q
        assert op.events("question.resolved") == [{"id": q.id, "status": "expired"}]
        assert q.wait_result() == {"status": "expired"}
        await trio.sleep(16)
        assert questions.get(q.id) is None
        with pytest.raises(QuestionError) as gone:
            questions.resolve(q.id, {"target": ["Prod"]})
        assert gone.value.reason == "QUESTION_NOT_FOUND"
        nursery.cancel_scope.cancel()
    assert questions.statistics().expired == 1


async def test_ask_user_returns_the_operators_answer(tmp_path: Path) -> None:
    op = Conn("a", OPERATOR)
    questions = setup(op)
    tool = AskUserTool(questions)
    out: dict[str, Any] = {}

    async def ask() -> None:
        out["result"] = await invoke_tool(tool, asked(), ctx(tmp_path))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        [requested] = op.events("question.requested")
        assert requested["questions"] == [
            {
                "questionId": "target",
                "header": "Deployment t",
                "question": "Where should this go?",
                "options": [
                    {"label": "Staging (Recommended)", "description": "safe"},
                    {"label": "Prod"},
                ],
                "isOther": True,
            }
        ]
        assert requested["expiresAtMs"] - requested["createdAtMs"] == 900_000
        assert requested["id"].startswith("ask_") and requested["sessionKey"] == "agent:main:main"
        second = await invoke_tool(tool, asked(), ctx(tmp_path))
        assert second.is_error and "already has a pending question" in second.content[0].text  # type: ignore[union-attr]
        questions.resolve(requested["id"], {"target": ["Staging (Recommended)"]})
    result = out["result"]
    assert not result.is_error
    assert result.details == {
        "status": "answered",
        "answers": {"answers": {"target": ["Staging (Recommended)"]}},
    }
    assert result.content[0].text.startswith("Deployment t: Staging (Recommended)\n\n")


async def test_ask_user_with_no_answer_tells_the_model_to_proceed(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    questions = setup()
    result = await invoke_tool(
        AskUserTool(questions), asked() | {"timeoutSeconds": 1}, ctx(tmp_path)
    )
    assert result.details == {"status": "no_answer"}
    assert result.content[0].text.startswith("No answer arrived; proceed with best judgment.")  # type: ignore[union-attr]
    assert trio.current_time() == pytest.approx(30)  # clamped to OpenClaw's 30 s minimum


async def test_ask_user_cancelled_by_the_run_cancels_the_question(tmp_path: Path) -> None:
    op = Conn("a", OPERATOR)
    questions = setup(op)
    with trio.move_on_after(5) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(invoke_tool, AskUserTool(questions), asked(), ctx(tmp_path))
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert not scope.cancelled_caught
    [requested] = op.events("question.requested")
    assert op.events("question.resolved") == [{"id": requested["id"], "status": "cancelled"}]
    assert questions.pending() == [] and not questions.pending_for_session("agent:main:main")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            asked(options=[{"label": "Only"}]),
            "  - questions.0.options: must not have fewer than 2 items\n",
        ),
        (asked(options=[{"label": "A"}, {"label": " a "}]), "duplicate option label 'a'"),
        (asked(id="Bad-Id"), '  - questions.0.id: must match pattern "^[a-z][a-z0-9_]*$"\n'),
        ({"questions": [asked()["questions"][0]] * 2}, "duplicate question id 'target'"),
        (asked(options=[{"label": "x" * 65}, {"label": "B"}]), "model-facing display contract"),
    ],
)
async def test_a_bad_question_is_a_tool_error_and_nobody_is_asked(
    tmp_path: Path, args: dict[str, Any], error: str
) -> None:
    op = Conn("a", OPERATOR)
    questions = setup(op)
    result = await invoke_tool(AskUserTool(questions), args, ctx(tmp_path))
    assert result.is_error and error in result.content[0].text  # type: ignore[union-attr]
    assert op.frames == []


@pytest.mark.parametrize("key", ["agent:main:subagent:1234", "agent:main:cron:daily:run:1"])
async def test_a_subagent_or_a_scheduled_job_cannot_ask_the_user(tmp_path: Path, key: str) -> None:
    op = Conn("a", OPERATOR)
    result = await invoke_tool(AskUserTool(setup(op)), asked(), ctx(tmp_path, session_key=key))
    assert result.is_error and "only in the main session" in result.content[0].text  # type: ignore[union-attr]
    assert op.frames == []
