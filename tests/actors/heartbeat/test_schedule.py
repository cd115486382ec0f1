"""The heartbeat schedule on virtual time: a real store file, a real supervisor, the cron
scheduler (heartbeats fire only while it runs) and the local model; trio's `MockClock` jumps,
so hours pass in moments (the same clock as the cron scheduler's tests: it never jumps while
a thread works)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from actors import Heartbeats, open_cron, open_heartbeats, open_store, open_supervisor
from actors.cron._store import SqliteCronStore
from runtime.model._generation import build_generation
from runtime.sessions import MessageEntry
from tests.actors.cron.test_scheduler import VIRTUAL_LIMIT_S, autojump_clock, clock, job
from tests.conftest import local_config

__all__ = ["autojump_clock"]  # the fixture, used by name

MIN = 60.0


class Beats:
    """The heartbeat events, with the virtual time each was emitted at."""

    def __init__(self, beats: Heartbeats) -> None:
        self.cron: Any = None
        self.items: list[tuple[float, dict[str, Any]]] = []
        self.changed = trio.Event()
        emit = beats.emit

        def record(event: dict[str, Any]) -> None:
            emit(event)
            self.items.append((trio.current_time(), event))
            self.changed.set()
            self.changed = trio.Event()

        beats.emit = record  # type: ignore[method-assign]

    async def wait(self, n: int) -> None:
        while len(self.items) < n:
            await self.changed.wait()


@asynccontextmanager
async def heartbeats(path: Path, **config: Any) -> AsyncIterator[tuple[Heartbeats, Beats]]:
    gen = build_generation(local_config(**config), 1)
    async with (
        open_store(path / "db.sqlite") as store,
        open_supervisor(generation=gen, store=store, workspace_root=path / "ws") as sup,
        open_cron(sup, SqliteCronStore(store), emit=lambda _p: None, clock=clock) as cron,
        open_heartbeats(sup, wall=clock) as beats,
    ):
        seen = Beats(beats)
        seen.cron = cron
        cron.max_wait_s = 7 * 24 * 3600.0  # virtual time: no need to re-read the wall clock
        cron.wake()
        beats.rescan_s = 24 * 3600.0  # virtual time: no config changes to pick up
        yield beats, seen


async def test_heartbeats_fire_every_interval_in_the_main_session(
    tmp_path: Path, autojump_clock: Any
) -> None:
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(
            tmp_path,
            agents__defaults__heartbeat={
                "every": "10m",
                "target": "none",  # internal runs: no channel route needed
                "prompt": "[[reply:HEARTBEAT_OK]]",
            },
        ) as (beats, seen):
            start = trio.current_time()
            await seen.wait(3)
            times = [round((t - start) / MIN) for t, _e in seen.items[:3]]
            assert times == [10, 20, 30]
            assert [e["status"] for _t, e in seen.items[:3]] == ["ok-token"] * 3
            assert all(e["reason"] == "interval" for _t, e in seen.items[:3])
            assert beats.last_event == seen.items[-1][1]
            sessions = {k for k in beats._sup.session_keys()}
            assert sessions == {"agent:main:main"}


async def test_disabled_heartbeats_are_skipped_and_every_0m_fires_none(
    tmp_path: Path, autojump_clock: Any
) -> None:
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(tmp_path, agents__defaults__heartbeat={"every": "10m"}) as (
            beats,
            seen,
        ):
            await beats.set_enabled(False)
            await seen.wait(2)
            assert [(e["status"], e["reason"]) for _t, e in seen.items] == [
                ("skipped", "disabled")
            ] * 2
            assert beats.runs == 0
        async with heartbeats(tmp_path / "off", agents__defaults__heartbeat={"every": "0m"}) as (
            beats,
            seen,
        ):
            await trio.sleep(3600)  # a virtual hour: nothing fires
            assert seen.items == [] and beats.runs == 0


async def test_a_scheduled_poll_with_nowhere_to_deliver_skips_before_the_model(
    tmp_path: Path, autojump_clock: Any
) -> None:
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(tmp_path, agents__defaults__heartbeat={"every": "10m"}) as (
            beats,
            seen,
        ):
            await seen.wait(1)
            assert [(e["status"], e["reason"]) for _t, e in seen.items] == [("skipped", "no-route")]
            assert beats.runs == 0
            beats.enqueue("agent:main:main", "Build finished")  # an event: the poll runs
            await seen.wait(2)
            assert beats.runs == 1 and seen.items[1][1]["indicatorType"] == "alert"


async def test_cron_disabled_stops_the_schedule_but_not_a_wake(
    tmp_path: Path, autojump_clock: Any
) -> None:
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(
            tmp_path,
            cron__enabled=False,
            agents__defaults__heartbeat={"every": "5m", "prompt": "[[reply:NO_REPLY]]"},
        ) as (beats, seen):
            await trio.sleep(900)  # three cadences
            assert seen.items == []
            event = await beats.run_heartbeat("main", reason="wake")
            assert event["status"] == "ok-empty"  # NO_REPLY: nothing to say


async def test_a_cron_system_event_for_the_next_heartbeat_waits_in_the_main_session(
    tmp_path: Path, autojump_clock: Any
) -> None:
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(
            tmp_path,
            agents__defaults__heartbeat={"every": "0m", "prompt": "[[reply:HEARTBEAT_OK]]"},
        ) as (beats, seen):
            queue = beats._sup.services.system_events
            payload = {"kind": "systemEvent", "text": "Water the plants"}
            plants = await seen.cron.add(
                job(id="plants", sessionTarget="main", wakeMode="next-heartbeat",
                    delivery=None, payload=payload)
            )  # fmt: skip
            await seen.cron.run_now(plants.id, "force")
            await trio.sleep(60)  # virtual: the firing is over
            assert [e.text for e in queue.peek("agent:main:main")] == ["Water the plants"]
            assert beats.runs == 0  # no model call until a turn comes
            event = await beats.run_heartbeat("main", reason="wake")
            # The heartbeat's message is OpenClaw's reminder prompt for the job's event (no
            # channel to relay it to), taken from the queue; the local model echoes it.
            assert (event["status"], event["reason"]) == ("skipped", "no-route")
            assert event["preview"].startswith("You said: A scheduled reminder has been")
            assert "Water the plants" in event["preview"]
            assert queue.peek("agent:main:main") == []


async def test_a_cron_event_for_the_next_heartbeat_runs_with_the_agents_next_due_one(
    tmp_path: Path, autojump_clock: Any
) -> None:
    """With a cadence, a cron job's `next-heartbeat` event waits for the agent's next due
    heartbeat (OpenClaw's `not-due` guard) and that heartbeat tells it."""
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(
            tmp_path,
            agents__defaults__heartbeat={
                "every": "10m",
                "target": "none",
                "prompt": "[[reply:HEARTBEAT_OK]]",
            },
        ) as (_beats, seen):
            start = trio.current_time()
            await seen.wait(1)  # the first tick, at 10 minutes
            await trio.sleep(2 * MIN)
            payload = {"kind": "systemEvent", "text": "Water the plants"}
            plants = await seen.cron.add(
                job(id="plants", sessionTarget="main", wakeMode="next-heartbeat",
                    delivery=None, payload=payload,
                    schedule={"kind": "every", "everyMs": 24 * 60 * 60_000})
            )  # fmt: skip
            await seen.cron.run_now(plants.id, "force")
            while trio.current_time() - start < 30 * MIN:
                await seen.wait(len(seen.items) + 1)
            told = [
                (round((t - start) / MIN), e)
                for t, e in seen.items
                if "Water the plants" in e.get("preview", "")
            ]
            assert [m for m, _e in told] == [20]  # once, with the next due heartbeat
            assert (told[0][1]["status"], told[0][1]["reason"]) == ("skipped", "target-none")
            others = [e for _t, e in seen.items if "preview" not in e]
            assert {(e["status"], e["reason"]) for e in others} == {("ok-token", "interval")}


async def test_a_heartbeat_whose_run_fails_leaves_the_events_it_told_queued(
    tmp_path: Path, autojump_clock: Any
) -> None:
    """The events a heartbeat tells in its message (a cron job's reminder) stay queued
    while it runs and are taken out only when it ended ok, as OpenClaw consumes them: a run
    that fails leaves them for the session's next turn or heartbeat."""
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(
            tmp_path, agents__defaults__heartbeat={"every": "0m", "target": "none"}
        ) as (beats, seen):
            queue = beats._sup.services.system_events
            text = "Water the plants [[fail:server:provider down]]"
            plants = await seen.cron.add(
                job(id="plants", sessionTarget="main", wakeMode="next-heartbeat",
                    delivery=None, payload={"kind": "systemEvent", "text": text})
            )  # fmt: skip
            await seen.cron.run_now(plants.id, "force")
            await trio.sleep(60)  # virtual: the firing is over
            event = await beats.run_heartbeat("main", reason="wake")
            assert (event["status"], beats.runs) == ("failed", 1), event
            assert [(e.text, e.context_key) for e in queue.peek("agent:main:main")] == [
                (text, "cron:plants")
            ]
            # Told again by the next heartbeat, once (held, not also a `System:` line).
            event = await beats.run_heartbeat("main", reason="wake")
            assert event["status"] == "failed" and beats.runs == 2
            [actor] = [a for a in beats._sup.sessions() if a.key == "agent:main:main"]
            assert actor.row is not None
            entries = await beats._sup.store.load_entries(actor.row.sessionId)
            told = [str(e.message) for e in entries if isinstance(e, MessageEntry)]
            asked = [m for m in told if "A scheduled reminder has been triggered" in m]
            assert len(asked) == 2 and all(m.count("Water the plants") == 1 for m in asked)
            assert len(queue.peek("agent:main:main")) == 1


async def test_a_tick_is_not_held_back_by_an_event_wake_deferred_past_it(
    tmp_path: Path, autojump_clock: Any
) -> None:
    """A target's cadence tick and its other wakes wait in slots of their own, as OpenClaw's:
    an event wake deferred past the next tick (`not-due`, then `min-spacing`) does not hold
    the tick back; each runs at its own time."""
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(
            tmp_path,
            agents__defaults__heartbeat={
                "every": "10m",
                "target": "none",
                "prompt": "[[reply:HEARTBEAT_OK]]",
            },
        ) as (beats, seen):
            start = trio.current_time()
            await seen.wait(1)  # the first tick, at 10:00
            await trio.sleep_until(start + 19 * MIN + 50)
            beats.wake_now("main", "wake")  # runs at once: the last start is 19:50
            await seen.wait(2)
            await trio.sleep(5)
            # An event wake: not due before 29:50, kept for 20:20 (30 s from the last start).
            beats.request_wake("main", source="manual", intent="event", reason="hook:deploy")
            await seen.wait(4)
            got = [(round(t - start), e["status"], e["reason"]) for t, e in seen.items]
            assert got == [
                (600, "ok-token", "interval"),
                (1190, "ok-token", "wake"),
                (1200, "ok-token", "interval"),  # the tick, on time
                (1230, "ok-token", "hook:deploy"),  # 30 s after the tick's start
            ]


async def test_a_tick_skipped_while_cron_runs_is_tried_again_after_a_second(
    tmp_path: Path, autojump_clock: Any
) -> None:
    """A cadence tick with a system event waiting, skipped `cron-in-progress`, is tried
    again every second until the cron run is over, as OpenClaw's wake queue retries it (its
    60 s idle grace is for a run going in the agent's sessions, not for cron)."""
    with trio.fail_after(VIRTUAL_LIMIT_S):
        async with heartbeats(
            tmp_path,
            agents__defaults__heartbeat={
                "every": "10m",
                "target": "none",
                "prompt": "[[reply:HEARTBEAT_OK]]",
            },
        ) as (beats, seen):
            start = trio.current_time()
            slow = "[[delay:1000]] " + " ".join(f"w{i}" for i in range(10))  # ten seconds
            payload = {"kind": "agentTurn", "message": slow}
            daily = {"kind": "every", "everyMs": 24 * 60 * 60_000}
            await seen.cron.add(job(id="slow", schedule=daily, payload=payload))
            await trio.sleep_until(start + 10 * MIN - 3)
            beats.enqueue("agent:main:main", "Build finished")  # the tick is not a bare poll
            await seen.cron.run_now("slow", "force")  # holds the cron lane until 10:07
            while not seen.items or seen.items[-1][1]["status"] == "skipped":
                await seen.wait(len(seen.items) + 1)
            got = [(round(t - start), e["status"], e["reason"]) for t, e in seen.items]
            skips = [s for s in got if s[1:] == ("skipped", "cron-in-progress")]
            assert got == [*skips, got[-1]] and len(skips) >= 5
            assert [s[0] for s in skips] == list(range(600, 600 + len(skips)))  # 1 s apart
            assert got[-1][1:] == ("ok-token", "interval") and got[-1][0] < 600 + 15
            assert not beats._sup.services.system_events.has("agent:main:main")
