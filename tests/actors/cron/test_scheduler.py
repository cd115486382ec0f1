"""The cron scheduler on virtual time: a real store file, a real supervisor and the local
model; the scheduler's wall clock follows trio's `MockClock`, so hours pass in moments.

The clock jumps once every task has been blocked for 50 ms of real time, and never while
a thread works (the store's reads and writes, opening the file): a task waiting for a thread
counts as blocked, so on a loaded machine a slow write would otherwise let the clock jump
to the next deadline, at worst the test's own limit. Slot times are read from run ids (`cron:<job>:<slot ms>`), which the
schedule arithmetic alone decides."""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from actors import open_store, open_supervisor
from actors.cron._scheduler import CATCH_UP_DELAY_MS, CronScheduler, open_cron
from actors.cron._store import RunQuery, SqliteCronStore
from runtime.cron._cron_jobs import job_from_add
from runtime.cron._cron_schedule import format_iso_ms, parse_at_ms
from runtime.model._generation import build_generation
from runtime.protocol._wire import CronAddParams
from tests._schema import validate
from tests.conftest import local_config

BASE = parse_at_ms("2027-03-27T12:00:00Z")  # the day before Europe/Vienna springs forward
MIN = 60_000
HOUR = 60 * MIN
VIRTUAL_LIMIT_S = 10 * 24 * 3600  # fail_after in virtual time: ten days


AUTOJUMP_S = 0.05


@pytest.fixture
def autojump_clock(monkeypatch: pytest.MonkeyPatch) -> trio.testing.MockClock:
    """Overrides pytest-trio's: jumps after 50 ms of real quiet, and not while a
    `trio.to_thread.run_sync` call is in flight (see the module docstring)."""
    clock = trio.testing.MockClock(autojump_threshold=AUTOJUMP_S)
    real_run_sync = trio.to_thread.run_sync
    in_flight = 0

    async def run_sync(*args: Any, **kwargs: Any) -> Any:
        nonlocal in_flight
        in_flight += 1
        clock.autojump_threshold = math.inf
        try:
            return await real_run_sync(*args, **kwargs)
        finally:
            in_flight -= 1
            if in_flight == 0:
                clock.autojump_threshold = AUTOJUMP_S

    monkeypatch.setattr(trio.to_thread, "run_sync", run_sync)
    return clock


def clock() -> int:
    return BASE + int(trio.current_time() * 1000)


class Events:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.changed = trio.Event()

    def __call__(self, payload: dict[str, Any]) -> None:
        self.items.append(payload)
        self.changed.set()
        self.changed = trio.Event()

    def of(self, action: str, job_id: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.items if e["action"] == action and job_id in (None, e.get("jobId"))]

    async def wait(self, done: Callable[[], bool]) -> None:
        while not done():
            await self.changed.wait()


@asynccontextmanager
async def scheduler(path: Path, events: Events, **config: Any) -> AsyncIterator[CronScheduler]:
    gen = build_generation(local_config(**config), 1)
    async with (
        open_store(path / "db.sqlite") as store,
        open_supervisor(generation=gen, store=store, workspace_root=path / "ws") as sup,
        open_cron(sup, SqliteCronStore(store), emit=events, clock=clock) as cron,
    ):
        cron.max_wait_s = 7 * 24 * 3600.0  # virtual time: no need to re-read the wall clock
        cron.wake()
        yield cron


def job(**over: Any) -> Any:
    job_id = over.pop("id", "job-1")
    raw: dict[str, Any] = {
        "name": "j",
        "schedule": {"kind": "every", "everyMs": 10 * MIN},
        "sessionTarget": "isolated",
        "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": "tick"},
        "delivery": {"mode": "none"},
    }
    raw.update(over)
    raw = {k: v for k, v in raw.items() if v is not None}
    return job_from_add(msgspec.convert(raw, CronAddParams), job_id=job_id, now_ms=clock())


def slots(entries: list[dict[str, Any]]) -> list[int]:
    return sorted(
        int(e["runId"].rsplit(":", 1)[1]) for e in entries if e["runId"].startswith("cron:")
    )


async def history(cron: CronScheduler, job_id: str) -> list[dict[str, Any]]:
    entries, _ = await cron.runs(RunQuery(job_id=job_id, limit=200, descending=False))
    return entries


async def test_an_every_job_fires_on_its_grid(tmp_path: Path, autojump_clock: Any) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(job())
            start = j.createdAtMs
            await events.wait(lambda: len(events.of("finished")) >= 3)
            entries = await history(cron, j.id)
            assert slots(entries) == [start + 10 * MIN, start + 20 * MIN, start + 30 * MIN]
            assert {e["status"] for e in entries} == {"ok"}
            assert all(e["summary"] == "You said: tick" for e in entries)
            assert cron.get(j.id).state.nextRunAtMs == start + 40 * MIN
            # each run had a session of its own
            assert len({e["sessionKey"] for e in entries}) == 3


async def test_a_cron_job_follows_its_zone_across_the_dst_gap(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(
                job(schedule={"kind": "cron", "expr": "30 2 * * *", "tz": "Europe/Vienna"})
            )
            for n in (1, 2):  # straight to just before each slot (no 30 s ticks in between)
                due = cron.get(j.id).state.nextRunAtMs
                assert due is not None
                autojump_clock.jump((due - clock() - 1000) / 1000)
                await events.wait(functools.partial(lambda k: len(events.of("finished")) >= k, n))
            assert slots(await history(cron, j.id)) == [
                parse_at_ms("2027-03-28T01:00:00Z"),  # 02:30 does not exist: 03:00 +02:00
                parse_at_ms("2027-03-29T00:30:00Z"),  # 02:30 +02:00
            ]


async def test_a_job_removed_mid_schedule_fires_no_more(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(job())
            await events.wait(lambda: len(events.of("finished")) == 1)
            await cron.remove(j.id)
            autojump_clock.jump(6 * 3600)
            await trio.sleep(1)
            assert len(events.of("finished")) == 1
            assert len(events.of("started")) == 1
            assert j.id not in cron.jobs
            assert len(await history(cron, j.id)) == 1  # its history stays


async def test_removing_a_running_job_lets_that_run_finish_and_record(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(
                job(payload={"kind": "agentTurn", "message": "[[delay:2000]] [[deltas:2]] slow"})
            )
            await cron.run_now(j.id, "force")
            await events.wait(lambda: bool(events.of("started")))
            await cron.remove(j.id)
            await events.wait(lambda: bool(events.of("finished")))
            [entry] = await history(cron, j.id)
            assert entry["status"] == "ok" and entry["runId"].startswith("manual:")
            assert entry["durationMs"] >= 4_000
            autojump_clock.jump(3 * 3600)
            await trio.sleep(1)
            assert len(events.of("started")) == 1  # nothing after it


async def test_missed_slots_run_once_at_start_and_say_so(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(job(schedule={"kind": "every", "everyMs": HOUR}))
            start = j.createdAtMs
        autojump_clock.jump(5 * 3600 + 60)  # the gateway is down for five hours
        restarted = clock()
        async with scheduler(tmp_path, events) as cron:
            autojump_clock.jump(CATCH_UP_DELAY_MS / 1000)
            await events.wait(lambda: bool(events.of("finished")))
            [entry] = await history(cron, j.id)
            first = format_iso_ms(start + HOUR)
            said = f"missed 5 slot(s) while the gateway was down (first {first}); ran once at start"
            assert entry["diagnostics"]["summary"] == said
            assert entry["diagnostics"]["entries"][0]["source"] == "cron-preflight"
            assert entry["status"] == "ok"
            assert entry["runAtMs"] >= restarted + CATCH_UP_DELAY_MS
            validate("CronRunLogEntry", entry)
            # then the grid again, once per slot
            assert cron.get(j.id).state.nextRunAtMs == start + 6 * HOUR
            autojump_clock.jump((start + 6 * HOUR - clock()) / 1000)
            await events.wait(lambda: len(events.of("finished")) >= 2)
            assert slots(await history(cron, j.id))[-1] == start + 6 * HOUR


async def test_with_skip_missed_jobs_missed_slots_are_skipped_and_recorded(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events, cron__skipMissedJobs=True) as cron:
            j = await cron.add(job(schedule={"kind": "every", "everyMs": HOUR}))
            at = await cron.add(
                job(id="once", schedule={"kind": "at", "at": "2027-03-27T13:00:00Z"})
            )
            start = j.createdAtMs
        autojump_clock.jump(3 * 3600 + 60)
        async with scheduler(tmp_path, events, cron__skipMissedJobs=True) as cron:
            [skipped] = await history(cron, j.id)
            assert skipped["status"] == "skipped"
            first = format_iso_ms(start + HOUR)
            assert skipped["error"] == (
                f"missed 3 slot(s) while the gateway was down (first {first}); "
                "skipped (cron.skipMissedJobs)"
            )
            assert skipped["runAtMs"] == start + HOUR
            validate("CronRunLogEntry", skipped)
            assert cron.get(j.id).state.nextRunAtMs == start + 4 * HOUR
            # one-shot jobs catch up either way (OpenClaw), then go (deleteAfterRun)
            autojump_clock.jump(CATCH_UP_DELAY_MS / 1000)
            await events.wait(lambda: bool(events.of("finished", at.id)))
            [ran] = await history(cron, at.id)
            assert "ran once at start" in ran["diagnostics"]["summary"] and ran["status"] == "ok"
            assert at.id not in cron.jobs
            assert events.of("removed", at.id)


async def test_a_run_cut_by_a_stop_is_recorded_as_interrupted(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(
                job(payload={"kind": "agentTurn", "message": "[[delay:600000]] [[deltas:5]] x"})
            )
            await cron.run_now(j.id, "force")
            await events.wait(lambda: bool(events.of("started")))
        async with scheduler(tmp_path, events) as cron:
            [entry] = await history(cron, j.id)
            assert entry["status"] == "error"
            assert entry["error"].startswith("interrupted")
            validate("CronRunLogEntry", entry)
            assert cron.get(j.id).state.runningAtMs is None


async def test_a_failing_recurring_job_backs_off(tmp_path: Path, autojump_clock: Any) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(
                job(schedule={"kind": "every", "everyMs": 10_000},
                    payload={"kind": "agentTurn", "message": "[[fail:server]]"})
            )  # fmt: skip
            await events.wait(lambda: len(events.of("finished")) >= 3)
            entries = await history(cron, j.id)
            assert [e["status"] for e in entries[:3]] == ["error"] * 3
            gaps = [b - a for a, b in zip(slots(entries), slots(entries)[1:], strict=False)]
            assert gaps[0] >= 30_000 and gaps[1] >= 60_000  # 30 s, then 60 s (OpenClaw's)
            assert cron.get(j.id).state.consecutiveErrors == len(entries)


async def test_a_system_event_into_the_main_session(tmp_path: Path, autojump_clock: Any) -> None:
    """Without heartbeats (no `open_heartbeats`) a `systemEvent` job, whatever its
    `wakeMode`, queues its text for the main session's next turn and makes no model call
    (with heartbeats: tests/actors/heartbeat/test_schedule.py)."""
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            queue = cron.supervisor.services.system_events
            for job_id, mode, text in (
                ("quiet", "next-heartbeat", "Reminder: water the plants"),
                ("now", "now", "Check the queue"),
            ):
                added = await cron.add(
                    job(id=job_id, sessionTarget="main", wakeMode=mode, delivery=None,
                        payload={"kind": "systemEvent", "text": text})
                )  # fmt: skip
                await cron.run_now(added.id, "force")
                job_ref = added.id
                await events.wait(lambda: bool(events.of("finished", job_ref)))  # noqa: B023
                [entry] = await history(cron, added.id)
                assert (entry["status"], entry["summary"]) == ("ok", text)
                assert entry["sessionKey"] == "agent:main:main"
                assert "model" not in entry  # no model call
            queued = queue.peek("agent:main:main")
            assert [(e.text, e.context_key) for e in queued] == [
                ("Reminder: water the plants", "cron:quiet"),
                ("Check the queue", "cron:now"),
            ]


async def test_a_named_session_keeps_its_history_across_runs(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(job(sessionTarget="session:standup"))
            await events.wait(lambda: len(events.of("finished")) >= 2)
            entries = await history(cron, j.id)
            assert {e["sessionKey"] for e in entries} == {"agent:main:standup"}
            assert len({e["sessionId"] for e in entries}) == 1
            transcript = await cron.supervisor.store.load_entries(entries[0]["sessionId"])
            assert len([e for e in transcript if hasattr(e, "message")]) >= 4


async def test_cron_runs_use_the_cron_lane_and_its_configured_cap(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events, cron__maxConcurrentRuns=2) as cron:
            sup = cron.supervisor
            ids = []
            for i in range(3):
                j = await cron.add(
                    job(id=f"slow{i}", payload={"kind": "agentTurn", "message": "[[delay:1000]] z"})
                )
                ids.append(j.id)
                await cron.run_now(j.id, "force")
            await events.wait(lambda: len(events.of("finished")) == 3)
            lane = sup.lanes["cron"].statistics()
            assert lane.capacity == 2
            assert lane.acquired == 3
            assert sup.lanes["main"].statistics().acquired == 0


@pytest.mark.parametrize(
    ("config", "window"),
    [({}, None), ({"agents__defaults__timeoutSeconds": 90}, 90.0),
     ({"agents__defaults__llm": {"idleTimeoutSeconds": 30}}, 30.0)],
)  # fmt: skip
async def test_no_idle_watchdog_for_cron_runs_unless_configured(
    tmp_path: Path, config: dict[str, Any], window: float | None
) -> None:
    events = Events()
    with trio.fail_after(30):
        async with scheduler(tmp_path, events, **config) as cron:
            assert cron.supervisor.idle_timeout(cron=True) == window
            assert cron.supervisor.idle_timeout() == (window or 60.0)


async def test_a_running_job_is_not_started_twice(tmp_path: Path, autojump_clock: Any) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(job(payload={"kind": "agentTurn", "message": "[[delay:5000]] a b"}))
            first = await cron.run_now(j.id, "force")
            again = await cron.run_now(j.id, "force")
            assert first["enqueued"] is True
            assert again == {"ok": True, "ran": False, "reason": "already-running"}
            assert await cron.run_now(j.id, "due") == {
                "ok": True,
                "ran": False,
                "reason": "not-due",
            }


async def test_cron_enabled_false_stops_automatic_firing(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events, cron__enabled=False) as cron:
            j = await cron.add(job())
            autojump_clock.jump(3 * 3600)
            await trio.sleep(1)
            assert events.of("started") == []
            assert cron.status()["enabled"] is False and "nextWakeAtMs" not in cron.status()
            await cron.run_now(j.id, "force")  # by hand it still runs
            await events.wait(lambda: bool(events.of("finished")))


async def test_a_job_updated_mid_run_keeps_the_edit_and_the_runs_result(
    tmp_path: Path, autojump_clock: Any
) -> None:
    from runtime.cron._cron_jobs import apply_patch
    from runtime.cron._cron_params import CronJobPatch

    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(job(payload={"kind": "agentTurn", "message": "[[delay:2000]] a b"}))
            await cron.run_now(j.id, "force")
            await events.wait(lambda: bool(events.of("started")))
            patch = msgspec.convert({"name": "renamed"}, CronJobPatch)
            await cron.replace(apply_patch(cron.get(j.id), patch, now_ms=clock()))
            await events.wait(lambda: bool(events.of("finished")))
            now = cron.get(j.id)
            assert now.name == "renamed"
            assert now.state.runningAtMs is None and now.state.lastRunStatus == "ok"


async def test_the_payloads_timeout_ends_a_run_as_an_error(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events) as cron:
            j = await cron.add(
                job(payload={"kind": "agentTurn", "message": "[[delay:5000]] [[deltas:3]] x",
                             "timeoutSeconds": 2})
            )  # fmt: skip
            await cron.run_now(j.id, "force")
            await events.wait(lambda: bool(events.of("finished")))
            [entry] = await history(cron, j.id)
            assert entry["status"] == "error"
            assert entry["error"] == "cron: job execution timed out after 2s"
            assert 2_000 <= entry["durationMs"] < 5_000
            validate("CronRunLogEntry", entry)


async def test_the_payloads_model_and_thinking_are_used(
    tmp_path: Path, autojump_clock: Any
) -> None:
    events = Events()
    local = {"api": "local", "models": [{"id": "echo"}, {"id": "other"}]}
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with scheduler(tmp_path, events, models__providers={"local": local}) as cron:
            j = await cron.add(
                job(payload={"kind": "agentTurn", "message": "hi", "model": "local/other",
                             "thinking": "UltraThink"})
            )  # fmt: skip
            await cron.run_now(j.id, "force")
            await events.wait(lambda: bool(events.of("finished")))
            [entry] = await history(cron, j.id)
            assert entry["status"] == "ok"
            assert (entry["provider"], entry["model"]) == ("local", "other")
            actor = cron.supervisor.peek_session(entry["sessionKey"])
            assert actor is not None and actor.row is not None
            assert actor.row.thinkingLevel == "high"  # as sessions.patch stores it
