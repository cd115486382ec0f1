"""The embedded runtime offers the tools that need a host, as the gateway does: the session
tools over its own sessions, `ask_user` answered through `answer_question`, `progress_card`
read with `progress_card`, `gateway` reading its config, `heartbeat_respond` in a heartbeat
turn, and `automations` (a tool error without `async with`; its scheduler:
test_embedded_automations). Driven by the `local` model's
`[[tool:NAME {json}]]` directives; results are read from the turns' `tool` events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.agent import announce_key, announce_task
from runtime.agent._embedded import EmbeddedRuntime, open_embedded_runtime
from runtime.llm._types import AssistantMessage, UserMessage
from runtime.model._config import parse_config


def tool(name: str, **args: Any) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


class Events:
    """A turn's events, and each tool's result (its payload) by tool name."""

    def __init__(self) -> None:
        self.all: list[dict[str, Any]] = []
        self.seen = trio.Event()
        self.stream: str | None = None

    def __call__(self, payload: dict[str, Any]) -> None:
        self.all.append(payload)
        if payload["stream"] == self.stream:
            self.seen.set()

    def results(self, name: str) -> list[tuple[bool, Any]]:
        """(isError, payload or text) of each call of tool `name` (a call through Tool
        Search's `tool_call` reports the inner tool's result too)."""
        found = []
        for event in self.all:
            data = event["data"]
            if event["stream"] != "tool" or data.get("phase") != "result":
                continue
            if data["name"] != name:
                continue
            result = data["result"]
            text = "".join(b.get("text", "") for b in result.get("content", []))
            found.append((bool(data["isError"]), result.get("details") or text))
        return found

    def of(self, stream: str) -> list[dict[str, Any]]:
        return [e for e in self.all if e["stream"] == stream]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b["text"] if isinstance(b, dict) else b.text for b in content)


def user_texts(rt: EmbeddedRuntime, key: str) -> list[str]:
    return [text_of(m.content) for m in rt.transcript(key) if isinstance(m, UserMessage)]


def _runtime(tmp_path: Path, **config: Any) -> EmbeddedRuntime:
    return open_embedded_runtime(parse_config(config), state_dir=tmp_path)


async def test_sessions_list_history_and_status_see_the_other_session(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            await rt.run_turn("[[reply:pong]] ping", session_key="other")
            events = Events()
            turn = tool("sessions_list") + tool("sessions_history", sessionKey="other")
            turn += tool("session_status", sessionKey="other")
            await rt.run_turn(turn, session_key="main", on_event=events)
    [(failed, listed)] = events.results("sessions_list")
    assert not failed
    rows = {row["key"]: row for row in listed["sessions"]}
    assert rows["agent:main:other"]["kind"] == "other"
    assert rows["agent:main:other"]["status"] == "done"
    assert rows["agent:main:main"]["status"] == "running"
    [(failed, history)] = events.results("sessions_history")
    assert not failed and history["sessionKey"] == "agent:main:other"
    texts = [text_of(m["content"]) for m in history["messages"]]
    assert texts == ["[[reply:pong]] ping", "pong"]
    [(failed, status)] = events.results("session_status")
    assert not failed and status["ok"] is True and status["sessionKey"] == "agent:main:other"
    assert status["statusText"].startswith("🦞 clawlane ")
    assert "\n\n🧠 Model: local/" in status["statusText"]


async def test_sessions_send_returns_the_target_reply_and_notify_waits_for_its_next_turn(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            await rt.run_turn("hello", session_key="other")
            events = Events()
            turn = tool("sessions_send", sessionKey="other", message="[[reply:pong]] ping")
            turn += tool("sessions_send", sessionKey="nope", message="hi")
            turn += tool("sessions_send", sessionKey="other", message="psst", mode="notify")
            await rt.run_turn(turn, session_key="main", on_event=events)
            later = await rt.run_turn("[[reply:ok]] next", session_key="other")
    [(failed, reply), (missing_failed, missing), (_, queued)] = events.results("sessions_send")
    assert not failed and reply["status"] == "ok" and reply["reply"] == "pong"
    assert reply["sessionKey"] == "agent:main:other"
    assert missing_failed and missing == {  # OpenClaw's words for a name that is no key
        "runId": missing["runId"],
        "status": "error",
        "error": "Session not found: nope (use the full sessionKey from sessions_list)",
    }
    assert queued["status"] == "queued" and queued["runStarted"] is False
    assert later.status == "ok"
    text = user_texts(rt, "other")[-1]
    assert "sourceSession=agent:main:main" in text and "psst" in text
    assert text.rstrip().endswith("[[reply:ok]] next")


async def test_sessions_spawn_runs_a_child_and_announces_its_result_to_the_parent(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            announced = Events()
            announced.stream = "lifecycle"
            ends: list[dict[str, Any]] = []

            def background(payload: dict[str, Any]) -> None:
                if payload["stream"] == "lifecycle" and payload["data"]["phase"] == "end":
                    ends.append(payload)
                    if announce_task(payload["runId"]):
                        announced.seen.set()

            rt.on_event = background
            events = Events()
            # the child ends after the turn (one ending during it would be steered in)
            task = "[[delay:500]] [[reply:child done]] work"
            spawn = tool("sessions_spawn", task=task, label="job")
            await rt.run_turn(spawn, session_key="main", on_event=events)
            await announced.seen.wait()
    [(failed, receipt)] = events.results("sessions_spawn")
    assert not failed and receipt["status"] == "accepted"
    child = receipt["childSessionKey"]
    assert child.startswith("agent:main:subagent:")
    child_end = next(e for e in ends if e["runId"] == receipt["runId"])
    assert child_end["sessionKey"] == child
    announce = next(e for e in ends if e["runId"] == announce_key(child, receipt["runId"]))
    assert announce["sessionKey"] == "agent:main:main"
    # the announce's prompt is not kept (OpenClaw's): the reply, which quotes it, is
    assert not [t for t in user_texts(rt, "main") if "[Internal task completion event]" in t]
    [reply] = [m for m in rt.transcript("main") if isinstance(m, AssistantMessage)][-1:]
    text = text_of(reply.content)
    assert "[Internal task completion event]" in text
    assert f"session_key: {child}" in text and "child done" in text


async def test_sessions_spawn_without_async_with_is_a_clear_tool_error(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    try:
        with trio.fail_after(30):
            events = Events()
            await rt.run_turn(tool("sessions_spawn", task="x"), session_key="main", on_event=events)
    finally:
        await rt.aclose()
    [(failed, answer)] = events.results("sessions_spawn")
    assert failed and answer["tool"] == "sessions_spawn" and "async with" in answer["error"]


async def test_ask_user_is_answered_through_the_runtime(tmp_path: Path) -> None:
    question = {
        "id": "color",
        "header": "Color",
        "question": "Which color?",
        "options": [{"label": "Red"}, {"label": "Blue"}],
    }
    events = Events()
    events.stream = "question.requested"
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt, trio.open_nursery() as nursery:
            done: list[Any] = []

            async def ask() -> None:
                turn = tool("ask_user", questions=[question], timeoutSeconds=60)
                done.append(await rt.run_turn(turn, session_key="main", on_event=events))

            nursery.start_soon(ask)
            await events.seen.wait()
            [requested] = events.of("question.requested")
            assert rt.pending_questions()[0]["id"] == requested["data"]["id"]
            with pytest.raises(ValueError, match="is not part of this request"):
                rt.answer_question(requested["data"]["id"], {"size": "XL"})
            assert rt.answer_question(requested["data"]["id"], {"color": " Blue "}) == {
                "color": ["Blue"]
            }
    [(failed, answered)] = events.results("ask_user")
    assert not failed and answered == {
        "status": "answered",
        "answers": {"answers": {"color": ["Blue"]}},
    }
    [resolved] = events.of("question.resolved")
    assert resolved["data"]["status"] == "answered"
    assert done[0].status == "ok" and rt.pending_questions() == []


async def test_ask_user_without_an_answer_says_so(tmp_path: Path, autojump_clock: Any) -> None:
    question = {
        "id": "go",
        "header": "Go",
        "question": "Go on?",
        "options": [{"label": "Yes"}, {"label": "No"}],
    }
    events = Events()
    async with _runtime(tmp_path) as rt:
        turn = tool("ask_user", questions=[question], timeoutSeconds=30)
        await rt.run_turn(turn, session_key="main", on_event=events)
    [(failed, payload)] = events.results("ask_user")
    assert not failed and payload == {"status": "no_answer"}
    assert events.of("question.resolved")[0]["data"]["status"] == "expired"


async def test_progress_card_is_kept_and_reported(tmp_path: Path) -> None:
    events = Events()
    plan = [{"step": "read", "status": "completed"}, {"step": "write", "status": "in_progress"}]
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            await rt.run_turn(
                tool("progress_card", markdown="half way", plan=plan),
                session_key="main",
                on_event=events,
            )
            card = rt.progress_card("main")
    assert card is not None and card["revision"] == 1 and card["markdown"] == "half way"
    assert card["steps"] == plan and card["sessionKey"] == "agent:main:main"
    [changed] = events.of("progressCard.changed")
    assert changed["data"] == {"sessionKey": "agent:main:main", "revision": 1}
    [(failed, payload)] = events.results("progress_card")
    assert not failed and payload["steps"] == {"completed": 1, "total": 2}


async def test_gateway_tool_reads_the_current_config(tmp_path: Path) -> None:
    events = Events()
    with trio.fail_after(30):
        async with _runtime(tmp_path, agents={"defaults": {"timeoutSeconds": 123}}) as rt:
            turn = tool("gateway", action="config.get", path="agents.defaults.timeoutSeconds")
            turn += tool("gateway", action="config.get", path="no.such.path")
            await rt.run_turn(turn, session_key="main", on_event=events)
    [(failed, got), (missing_failed, missing)] = events.results("gateway")
    assert not failed and got["ok"] is True
    assert got["result"]["path"] == "agents.defaults.timeoutSeconds"
    assert got["result"]["config"] == 123 and got["result"]["hash"]
    assert missing_failed and "config path not found: no.such.path" in missing


async def test_heartbeat_respond_is_offered_in_a_heartbeat_turn_only(tmp_path: Path) -> None:
    respond = tool("heartbeat_respond", outcome="done", notify=False, summary="all quiet")
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            beat = await rt.run_turn(respond, session_key="main", heartbeat=True)
            plain_events = Events()
            plain = await rt.run_turn(respond, session_key="main", on_event=plain_events)
    assert beat.heartbeat == {"outcome": "done", "notify": False, "summary": "all quiet"}
    assert plain.heartbeat is None
    assert all(failed for failed, _ in plain_events.results("heartbeat_respond"))


async def test_automations_without_async_with_says_why_it_cannot_schedule(
    tmp_path: Path,
) -> None:
    events = Events()
    rt = _runtime(tmp_path)
    try:
        with trio.fail_after(30):
            await rt.run_turn(
                tool("automations", action="list"), session_key="main", on_event=events
            )
    finally:
        await rt.aclose()
    [(failed, text)] = events.results("automations")
    assert failed and "not available in the embedded runtime" in text and "async with" in text
