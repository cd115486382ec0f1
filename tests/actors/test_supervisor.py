"""The supervisor and session actors without sockets: lanes, crashes, restarts, hub routing.

Runs are submitted the way the `agent` method does it; events are caught by an in-memory
subscriber (in addition to the socket tests in tests/e2e, not instead of them)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import (
    EventHub,
    RunRecord,
    SessionActor,
    Supervisor,
    open_store,
    open_supervisor,
)
from runtime.model._generation import build_generation
from tests.actors._helpers import Sink, submit
from tests.conftest import local_config


@asynccontextmanager
async def supervisor(tmp_path: Path, **config: Any) -> AsyncIterator[tuple[Supervisor, Sink]]:
    gen = build_generation(local_config(**config), 1)
    async with (
        open_store(tmp_path / "db.sqlite") as store,
        open_supervisor(generation=gen, store=store, workspace_root=tmp_path / "ws") as sup,
    ):
        sink = Sink()
        sup.hub.attach(sink, scoped=False, can_read=True)
        yield sup, sink


async def test_a_crashing_actor_is_contained_and_others_finish(
    tmp_path: Path, monkeypatch, caplog
) -> None:
    original = SessionActor.record_end

    def crash(self: SessionActor, *args: Any) -> None:
        if self.key.endswith(":crashy"):
            raise RuntimeError("injected crash")
        original(self, *args)

    monkeypatch.setattr(SessionActor, "record_end", crash)
    caplog.set_level(logging.ERROR)
    with trio.fail_after(10):
        async with supervisor(tmp_path) as (sup, sink):
            bad = await submit(sup, "crashy", "bad1", "[[deltas:2]] x")
            bad2 = await submit(sup, "crashy", "bad2", "[[deltas:2]] y")
            good = [await submit(sup, f"fine{i}", f"good{i}", "[[deltas:3]] z") for i in range(3)]
            for r in [bad, bad2, *good]:
                await r.done.wait()
            assert all(r.status == "ok" for r in good)
            # The crashed runs still ended with exactly one terminal event and woke waiters.
            for run_id in ("bad1", "bad2"):
                ends = [e for e in sink.agent(run_id) if e["data"].get("phase") in ("end", "error")]
                assert len(ends) == 1
            assert sup.statistics().crashes == 2
    assert "session actor agent:main:crashy crashed" in caplog.text


async def test_restart_intensity_then_errors_until_the_period_passes(
    tmp_path: Path, monkeypatch, mock_clock
) -> None:
    original = SessionActor.record_end

    def crash(self: SessionActor, *args: Any) -> None:
        original(self, *args)
        raise RuntimeError("injected crash")

    monkeypatch.setattr(SessionActor, "record_end", crash)
    with trio.fail_after(60):
        async with supervisor(tmp_path) as (sup, _sink):
            records = [await submit(sup, "loop", f"r{i}", "x") for i in range(4)]
            for r in records:
                await r.done.wait()
            assert [r.status for r in records] == ["ok"] * 4
            failed = await submit(sup, "loop", "r4", "x")
            await failed.done.wait()
            assert failed.status == "error" and "repeated crashes" in (failed.error or "")
            monkeypatch.setattr(SessionActor, "record_end", original)
            mock_clock.jump(6)  # virtual time: the restart period passes
            recovered = await submit(sup, "loop", "r5", "x")
            await recovered.done.wait()
            assert recovered.status == "ok"


async def test_abort_while_queued_ends_the_run_without_running_it(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with supervisor(tmp_path) as (sup, sink):
            first = await submit(sup, "q", "q1", "[[stall]] x")
            second = await submit(sup, "q", "q2", "y")
            await trio.testing.wait_all_tasks_blocked()
            assert second.status == "queued"
            record: RunRecord = second  # (mypy narrowed the literal above)
            record.abort("rpc")
            first.abort("rpc")
            await record.done.wait()
            assert record.status == "aborted" and first.status == "aborted"
            life = [e["data"] for e in sink.agent("q2") if e["stream"] == "lifecycle"]
            assert [d["phase"] for d in life] == ["start", "end"] and life[1]["stopReason"] == "rpc"
            assert sup.statistics().lane_in_use == 0


async def test_a_run_keeps_its_generation_when_a_new_one_is_published(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with supervisor(tmp_path) as (sup, _sink):
            running = await submit(sup, "g", "g1", "[[deltas:3]] [[delay:20]] a b c")
            await trio.testing.wait_all_tasks_blocked()
            sup.publish(build_generation(local_config(), 2))
            await running.done.wait()
            assert running.generation == 1
            after = await submit(sup, "g", "g2", "x")
            await after.done.wait()
            assert after.generation == 2
            assert after.final is not None and after.final["meta"]["generation"] == 2
            with pytest.raises(ValueError, match="not newer"):
                sup.publish(build_generation(local_config(), 2))


async def _run_and_settle(sup: Supervisor, key: str, run_id: str, message: str) -> None:
    record = await submit(sup, key, run_id, message)
    await record.done.wait()
    actor = sup.peek_session(f"agent:main:{key}")
    assert actor is not None
    await actor.settled()
    await trio.testing.wait_all_tasks_blocked()


async def test_idle_sessions_keep_their_contexts_within_a_byte_budget(tmp_path: Path) -> None:
    """Idle sessions' contexts together stay under `IdleContexts.max_bytes`: the least
    recently used let theirs go, and such a session's next run loads its whole context
    from the store (it still sees its earlier turns)."""
    big = "word " * 800  # ~1,000 tokens: ~4.6 KB of context per run
    with trio.fail_after(20):
        async with supervisor(tmp_path) as (sup, _sink):
            contexts = sup.idle_contexts
            contexts.max_bytes = 12_000
            for i in range(6):
                await _run_and_settle(sup, f"s{i}", f"r{i}", f"{big} {i}")
            actors = [sup.peek_session(f"agent:main:s{i}") for i in range(6)]
            assert all(a is not None for a in actors)
            sizes = [a.context_bytes() for a in actors if a is not None]
            assert sizes[:3] == [0, 0, 0] and sizes[-1] > 4_000, sizes
            assert contexts.dropped >= 3
            await _run_and_settle(sup, "s0", "r0b", "again")
            first = actors[0]
            assert first is not None and first.history_tokens() > 1_000  # reloaded, whole
            assert contexts.bytes <= contexts.max_bytes
            assert sum(a.context_bytes() for a in actors if a is not None) <= contexts.max_bytes


async def test_the_idle_context_bound_is_the_configs_and_a_new_generation_moves_it(
    tmp_path: Path,
) -> None:
    """`gateway.idleContextsMaxBytes` bounds the idle contexts; a generation that lowers it
    lets the oldest go at once (not at the next idle session), one with 0 keeps none."""
    big = "word " * 800
    with trio.fail_after(20):
        async with supervisor(tmp_path, gateway__idleContextsMaxBytes=40_000) as (sup, _sink):
            contexts = sup.idle_contexts
            assert contexts.max_bytes == 40_000
            for i in range(4):
                await _run_and_settle(sup, f"s{i}", f"r{i}", f"{big} {i}")
            actors = [sup.peek_session(f"agent:main:s{i}") for i in range(4)]
            assert contexts.dropped == 0 and contexts.bytes > 12_000

            lowered = local_config(gateway__idleContextsMaxBytes=12_000)
            sup.publish(build_generation(lowered, 2))
            assert contexts.max_bytes == 12_000 and contexts.bytes <= 12_000
            assert contexts.dropped >= 1
            assert actors[0] is not None and actors[0].context_bytes() == 0  # the oldest
            assert actors[3] is not None and actors[3].context_bytes() > 4_000

            sup.publish(build_generation(local_config(gateway__idleContextsMaxBytes=0), 3))
            assert contexts.bytes == 0
            assert all(a is not None and a.context_bytes() == 0 for a in actors)
            await _run_and_settle(sup, "s3", "r3b", "again")
            last = actors[3]
            assert last is not None and last.history_tokens() > 1_000  # reloaded, whole
            # it went idle still writing its turn: it stays until the next one goes idle
            assert contexts.bytes == last.context_bytes()
            await _run_and_settle(sup, "s0", "r0b", "again")
            assert last.context_bytes() == 0
            assert actors[0] is not None and contexts.bytes == actors[0].context_bytes()


async def test_a_context_that_cannot_be_sized_is_logged_and_the_supervisor_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unsized(self: SessionActor) -> int:
        raise ValueError("unsized")

    monkeypatch.setattr(SessionActor, "context_bytes", unsized)
    with trio.fail_after(10):
        async with supervisor(tmp_path) as (sup, _sink):
            for n in range(2):
                await _run_and_settle(sup, "u", f"u{n}", "x")
            assert "its idle context not counted" in caplog.text
            assert sup.idle_contexts.bytes == 0


async def test_idle_actors_are_reaped_after_the_configs_idle_seconds(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with supervisor(tmp_path, gateway__idleSessionSeconds=120) as (sup, _sink):
            r = await submit(sup, "idle", "i1", "x")
            await r.done.wait()
            actor = sup.peek_session("agent:main:idle")
            assert actor is not None
            assert sup.reap_idle(now=actor.last_active + 119) == 0
            sup.publish(build_generation(local_config(gateway__idleSessionSeconds=60), 2))
            assert sup.reap_idle(now=actor.last_active + 61) == 1
            assert sup.peek_session("agent:main:idle") is None
            # The session comes back from the store with its id.
            actor = await sup.session("agent:main:idle", "main")
            assert actor.row is not None and actor.row.lastRunId == "i1"


def test_hub_seq_spaces_are_gap_free_for_each_audience() -> None:
    hub = EventHub()
    tools_watcher = Sink("a", tools=True)
    broadcast = Sink("b", tools=True)
    plain_owner = Sink("c", tools=False)
    hub.attach(tools_watcher, scoped=True, can_read=True)
    hub.attach(broadcast, scoped=False, can_read=True)
    hub.attach(plain_owner, scoped=True, can_read=True)
    hub.open_run("r", "agent:main:x", owner=tools_watcher)
    hub.add_owner("r", plain_owner)
    for stream in ["lifecycle", "assistant", "tool", "tool", "assistant", "lifecycle"]:
        hub.emit_agent("r", stream, {"phase": "x"})
    assert [e["seq"] for e in tools_watcher.agent("r")] == [1, 2, 3, 4, 5, 6]
    assert [e["seq"] for e in broadcast.agent("r")] == [1, 2, 3, 4]
    assert [e["seq"] for e in plain_owner.agent("r")] == [1, 2, 3, 4]
    # Each payload is encoded once per seq space, and once for both while the two seqs agree:
    # events 1-2 (shared), 3-4 (tool: full only), 5-6 (one per space).
    assert hub.statistics().encodes == 8
    replay = hub.replay("r", 2, full=False)
    assert replay is not None and not replay.gap and len(replay.frames) == 2


async def test_waiting_for_unknown_runs_leaves_nothing_behind() -> None:
    from actors import RunRegistry

    reg = RunRegistry()
    with trio.fail_after(5):
        async with trio.open_nursery() as n:
            for _ in range(3):
                n.start_soon(reg.wait, "never", 0.01)
            n.start_soon(reg.wait, "other", 0.01)
        assert reg._appeared == {}
        results: list[RunRecord | None] = []

        async def wait_for(run_id: str) -> None:
            results.append(await reg.wait(run_id, 5))

        async with trio.open_nursery() as n:
            n.start_soon(wait_for, "later")
            n.start_soon(wait_for, "later")
            await trio.testing.wait_all_tasks_blocked()
            record = RunRecord(
                run_id="later", session_key="k", session_id="s", agent_id="main", accepted_at=0
            )
            reg.add(record)
            reg.finish(record)
        assert results == [record, record] and reg._appeared == {}


async def test_runs_that_need_a_new_workspace_at_once_create_it_once(
    tmp_path: Path, monkeypatch
) -> None:
    import runtime.agent._services as services_module
    from runtime.tools import ensure_workspace as original

    made: list[Path] = []

    def counting(path: Path) -> Path:
        made.append(path)
        return original(path)

    monkeypatch.setattr(services_module, "ensure_workspace", counting)
    with trio.fail_after(10):
        async with supervisor(tmp_path) as (sup, _sink):
            got: list[Path] = []

            async def ask() -> None:
                got.append(await sup.workspace_for("main", None))

            async with trio.open_nursery() as n:
                for _ in range(50):
                    n.start_soon(ask)
            assert len(made) == 1 and len(set(got)) == 1 and len(got) == 50
            assert got[0].is_dir() and sup.services.known_workspace("main", None) == got[0]
