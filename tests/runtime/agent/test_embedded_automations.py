"""The embedded runtime's scheduler behind `automations`, open as `async with`: jobs added,
listed, updated, run and removed by the model (the `local` model's `[[tool:automations
{json}]]` directives) answer as the gateway's tool does; a due job runs as the gateway runs
it (an `agentTurn` in its session, a `systemEvent` queued for the main session's next turn,
plus that turn with `wakeMode: "now"`), its turn's events and a `cron` event reach
`rt.on_event`, and `runs` answers its history. Time is trio's (`autojump_clock`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from runtime.agent._embedded import EmbeddedRuntime, open_embedded_runtime
from runtime.cron import format_iso_ms
from runtime.llm._types import UserMessage
from runtime.model._config import parse_config

MINUTE_MS = 60_000


@pytest.fixture
def clock(autojump_clock: trio.testing.MockClock) -> trio.testing.MockClock:
    """Virtual time that jumps only once the runtime has been idle a while (its prompt
    assembly waits on threads: time must not run on while it does)."""
    autojump_clock.autojump_threshold = 0.1
    return autojump_clock


def tool(name: str, **args: Any) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


class Events:
    """Events reported to a callback; `wait_for` blocks until one matches."""

    def __init__(self) -> None:
        self.all: list[dict[str, Any]] = []
        self._changed = trio.Event()

    def __call__(self, payload: dict[str, Any]) -> None:
        self.all.append(payload)
        self._changed.set()

    async def wait_for(self, stream: str, **data: Any) -> dict[str, Any]:
        while True:
            for event in self.all:
                if event["stream"] == stream and data.items() <= event["data"].items():
                    return event
            self._changed = trio.Event()
            await self._changed.wait()

    def results(self, name: str) -> list[tuple[bool, Any]]:
        """(isError, payload or text) of each call of tool `name`."""
        found = []
        for event in self.all:
            data = event["data"]
            if event["stream"] != "tool" or data.get("phase") != "result":
                continue
            if data["name"] == name:
                result = data["result"]
                text = "".join(b.get("text", "") for b in result.get("content", []))
                found.append((bool(data["isError"]), result.get("details") or text))
        return found


async def automations(rt: EmbeddedRuntime, *calls: dict[str, Any]) -> list[tuple[bool, Any]]:
    """Each call as one `automations` directive of one turn on the main session."""
    events = Events()
    turn = "".join(tool("automations", **call) for call in calls)
    await rt.run_turn(turn, session_key="main", on_event=events)
    return events.results("automations")


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b["text"] if isinstance(b, dict) else b.text for b in content)


def user_texts(rt: EmbeddedRuntime, key: str) -> list[str]:
    return [text_of(m.content) for m in rt.transcript(key) if isinstance(m, UserMessage)]


def _runtime(tmp_path: Path) -> EmbeddedRuntime:
    return open_embedded_runtime(parse_config({}), state_dir=tmp_path)


def _turn_job(name: str, message: str, every_ms: int, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"kind": "every", "everyMs": every_ms},
        "payload": {"kind": "agentTurn", "message": message, "timeoutSeconds": 0},
        "sessionTarget": "isolated",
        **fields,
    }


async def test_an_every_job_fires_in_an_isolated_session_and_reports_to_on_event(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    background = Events()
    with trio.fail_after(3600):
        async with _runtime(tmp_path) as rt:
            rt.on_event = background
            added_at = trio.current_time()
            [(failed, job)] = await automations(
                rt, {"action": "add", "job": _turn_job("tick", "[[reply:tick]] tick", MINUTE_MS)}
            )
            assert not failed, job
            finished = await background.wait_for("cron", action="finished", jobId=job["id"])
            fired_after = trio.current_time() - added_at
            [(_, runs)] = await automations(rt, {"action": "runs", "jobId": job["id"]})
            [(_, got)] = await automations(rt, {"action": "get", "jobId": job["id"]})
    assert job["nextRunAtMs"] - job["createdAtMs"] == MINUTE_MS
    assert 59 <= fired_after <= 61
    entry = finished["data"]
    key = entry["sessionKey"]
    assert key.startswith(f"agent:main:cron:{job['id']}:run:")
    assert entry["status"] == "ok" and entry["summary"] == "tick"
    assert entry["deliveryStatus"] == "delivered"  # announce: the reply stays in its session
    ended = [
        e
        for e in background.all
        if e["stream"] == "lifecycle" and e["data"]["phase"] == "end" and e["sessionKey"] == key
    ]
    assert len(ended) == 1
    texts = [
        e["data"]["text"] for e in background.all if e["sessionKey"] == key and "text" in e["data"]
    ]
    assert texts and texts[-1] == "tick"
    assert runs["total"] >= 1 and runs["entries"][0]["runId"] == entry["runId"]
    assert runs["entries"][0]["status"] == "ok"
    assert got["state"]["lastRunStatus"] == "ok"
    assert got["state"]["nextRunAtMs"] > job["nextRunAtMs"]


async def test_a_job_is_listed_updated_run_by_hand_and_removed(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    background = Events()
    hour = 60 * MINUTE_MS
    job_spec = _turn_job("report", "[[reply:done]] report", hour, sessionTarget="session:reports")
    with trio.fail_after(3600):
        async with _runtime(tmp_path) as rt:
            rt.on_event = background
            [(_, job)] = await automations(rt, {"action": "add", "job": job_spec})
            job_id = job["id"]
            [(_, listed), (_, updated), (_, not_due), (_, forced)] = await automations(
                rt,
                {"action": "list"},
                {"action": "update", "jobId": job_id, "job": {"name": "weekly report"}},
                {"action": "run", "jobId": job_id},
                {"action": "run", "jobId": job_id, "runMode": "force"},
            )
            finished = await background.wait_for("cron", action="finished", jobId=job_id)
            [(_, removed), (_, after), (missing, text)] = await automations(
                rt,
                {"action": "remove", "jobId": job_id},
                {"action": "list"},
                {"action": "get", "jobId": job_id},
            )
            jobs_left = len(rt.cron.jobs) if rt.cron is not None else -1
    assert [j["id"] for j in listed["jobs"]] == [job_id]
    assert listed["scope"] == "caller" and listed["total"] == 1
    assert updated["name"] == "weekly report" and updated["id"] == job_id
    assert not_due == {"ok": True, "ran": False, "reason": "not-due"}
    assert forced["ok"] is True and forced["enqueued"] is True
    assert finished["data"]["runId"] == forced["runId"]
    assert finished["data"]["sessionKey"] == "agent:main:reports"
    assert finished["data"]["status"] == "ok" and finished["data"]["summary"] == "done"
    assert finished["data"]["job"]["name"] == "weekly report"
    assert user_texts(rt, "reports") == ["[[reply:done]] report"]
    assert removed == {"ok": True, "removed": True}
    assert after["jobs"] == [] and jobs_left == 0
    assert missing and "cron job not found" in text


async def test_a_bad_job_is_a_tool_error_and_is_not_kept(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    webhook = _turn_job("hook", "x", MINUTE_MS, delivery={"mode": "webhook", "to": "https://e.x"})
    main_turn = _turn_job("main turn", "x", MINUTE_MS, sessionTarget="main")
    with trio.fail_after(3600):
        async with _runtime(tmp_path) as rt:
            results = await automations(
                rt, {"action": "add", "job": webhook}, {"action": "add", "job": main_turn}
            )
            [(_, listed)] = await automations(rt, {"action": "list"})
    [(hook_failed, hook_text), (main_failed, main_text)] = results
    assert hook_failed and "webhook delivery is not available in the embedded runtime" in hook_text
    assert main_failed and 'main cron jobs require payload.kind="systemEvent"' in main_text
    assert listed["jobs"] == []


async def test_a_system_event_job_reaches_the_main_sessions_next_turn(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    background = Events()
    with trio.fail_after(3600):
        async with _runtime(tmp_path) as rt:
            rt.on_event = background
            assert rt.cron is not None
            at = format_iso_ms(rt.cron.now_ms() + 2 * MINUTE_MS)
            job_spec = {
                "name": "oven",
                "schedule": {"kind": "at", "at": at},
                "payload": {"kind": "systemEvent", "text": "check the oven"},
                "wakeMode": "next-heartbeat",
            }
            [(failed, job)] = await automations(rt, {"action": "add", "job": job_spec})
            assert not failed, job
            turns_before = len(user_texts(rt, "main"))
            finished = await background.wait_for("cron", action="finished", jobId=job["id"])
            turns_between = len(user_texts(rt, "main")) - turns_before
            await rt.run_turn("[[reply:ok]] anything new?", session_key="main")
            jobs_left = len(rt.cron.jobs)
    assert job["sessionTarget"] == "main" and job["deleteAfterRun"] is True
    assert finished["data"]["status"] == "ok"
    assert finished["data"]["sessionKey"] == "agent:main:main"
    assert turns_between == 0  # next-heartbeat: no turn of its own
    latest = user_texts(rt, "main")[-1]
    assert latest.startswith("System: [") and "] check the oven" in latest
    assert latest.endswith("[[reply:ok]] anything new?")
    assert jobs_left == 0  # a one-shot job that succeeded is deleted


async def test_a_system_event_job_with_wake_now_runs_the_main_session(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    background = Events()
    job_spec = {
        "name": "nudge",
        "schedule": {"kind": "every", "everyMs": MINUTE_MS},
        "payload": {"kind": "systemEvent", "text": "the build is green"},
    }
    with trio.fail_after(3600):
        async with _runtime(tmp_path) as rt:
            rt.on_event = background
            [(failed, job)] = await automations(rt, {"action": "add", "job": job_spec})
            assert not failed, job
            finished = await background.wait_for("cron", action="finished", jobId=job["id"])
    assert job["wakeMode"] == "now"  # OpenClaw's default for a job the model makes
    assert finished["data"]["status"] == "ok"
    woke = [
        e
        for e in background.all
        if e["stream"] == "lifecycle"
        and e["data"]["phase"] == "end"
        and e["sessionKey"] == "agent:main:main"
    ]
    assert len(woke) == 1
    texts = user_texts(rt, "main")
    assert "the build is green" in texts[-1] and texts[-1].startswith("System: [")


async def test_status_and_wake_now_run_the_session_with_the_event(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    background = Events()
    with trio.fail_after(3600):
        async with _runtime(tmp_path) as rt:
            rt.on_event = background
            [(_, status), (_, woke)] = await automations(
                rt, {"action": "status"}, {"action": "wake", "text": "ping", "mode": "now"}
            )
            ended = await background.wait_for("lifecycle", phase="end")
    assert status["enabled"] is True and status["storage"] == "memory" and status["jobs"] == 0
    assert woke == {"ok": True}
    assert ended["sessionKey"] == "agent:main:main"
    latest = user_texts(rt, "main")[-1]
    assert latest.startswith("System: [") and latest.endswith("] ping")
