"""The embedded runtime opened again on its SQLite store tells a parent what it was not told
before it closed, as OpenClaw 2026.9.6 does after a restart (its subagent registry restored;
a child its restart cut off ends as `subagent run terminated`), and tells it once:

- a child that ended before the close, its announce cut off by it: announced after reopening;
- a child the close cut off: announced `failed: subagent run terminated`;
- a yield's children, one ended and one cut off: told together in the yield's continuation;
- two children told on their own, their wave's settle run cut off: the wave settled;
- a child whose announce its parent's turn took in (steered) before the close: not told
  again;
- a child paused by its own `sessions_yield` (`waitFor: "message"`): still paused, announced
  once the parent's `sessions_send` continuation ends.

Opening the runtime a third time tells nothing (`rt.recovered` is empty, and the parent's
transcript holds each telling once). Runs are held where the test needs them by an async
`before_model_resolve` hook (a hold the close cancels), not by sleeps.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing

from actors import open_store
from runtime import open_embedded_runtime, parse_config
from runtime.agent._embedded import EmbeddedRuntime
from tests.e2e.test_session_tools import directive, spawn

MAIN = "agent:main:main"
ANNOUNCE = "announce:v1:"
SETTLE = "announce:requester-settle:"
Held = Callable[[str, str], bool]
"""Whether a run (its session key, its run id) is held before its model call."""


class Runs:
    """The runtime's background runs as they end (`rt.on_event`) and the prompt each ran
    (`llm_input`); a run `hold` says so waits before its model call until it no longer
    does (`poke` after changing what it reads), or until the runtime closes."""

    def __init__(self, hold: Held | None = None) -> None:
        self.ends: list[dict[str, Any]] = []
        self.prompts: dict[str, str] = {}
        self.held: list[str] = []
        self.changed = trio.Event()
        self._hold = hold

    def attach(self, rt: EmbeddedRuntime) -> None:
        rt.on_event = self._event
        rt.services.hooks.register("llm_input", self._input, plugin_id="spy")
        rt.services.hooks.register("before_model_resolve", self._gate, plugin_id="gate")

    def poke(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    def _event(self, payload: dict[str, Any]) -> None:
        if payload["stream"] == "lifecycle" and payload["data"]["phase"] in ("end", "error"):
            self.ends.append(payload)
            self.poke()

    def _input(self, event: Any) -> None:
        self.prompts[event.runId] = event.prompt

    async def _gate(self, event: Any, ctx: Any) -> None:
        key, run_id = ctx.sessionKey or "", ctx.runId or ""
        if self._hold is None or not self._hold(key, run_id):
            return
        self.held.append(run_id)
        self.poke()
        while self._hold(key, run_id):
            await self.changed.wait()

    async def until(self, found: Callable[[], bool]) -> None:
        while not found():
            await self.changed.wait()

    def ended(self, prefix: str, key: str = MAIN) -> list[dict[str, Any]]:
        return [p for p in self.ends if p["sessionKey"] == key and p["runId"].startswith(prefix)]


@contextlib.asynccontextmanager
async def opened(tmp_path: Path, runs: Runs) -> AsyncIterator[EmbeddedRuntime]:
    """The runtime on the test's SQLite store (the same file each time)."""
    async with (
        open_store(tmp_path / "sessions.db") as store,
        open_embedded_runtime(parse_config({}), store=store, state_dir=tmp_path) as rt,
    ):
        runs.attach(rt)
        yield rt


async def third_open(tmp_path: Path) -> list[str]:
    """Open the runtime once more: what it takes up (nothing, when all was told)."""
    async with opened(tmp_path, Runs()) as rt:
        return list(rt.recovered)


def child(key: str) -> bool:
    return ":subagent:" in key


async def test_a_child_ended_before_the_close_is_announced_once_after_reopening(
    tmp_path: Path,
) -> None:
    parent_done = trio.Event()

    def hold(key: str, run_id: str) -> bool:  # the child until the parent's turn ended
        return (child(key) and not parent_done.is_set()) or run_id.startswith(ANNOUNCE)

    first = Runs(hold)
    with trio.fail_after(30):
        async with opened(tmp_path, first) as rt:
            await rt.run_turn(spawn("[[reply:kid-done]]", label="kid"), session_key="main")
            parent_done.set()
            first.poke()
            await first.until(lambda: any(r.startswith(ANNOUNCE) for r in first.held))
        second = Runs()
        async with opened(tmp_path, second) as rt:
            recovered = list(rt.recovered)
            await second.until(lambda: bool(second.ended(ANNOUNCE)))
        again = await third_open(tmp_path)
    [kid_end] = [p for p in first.ends if child(p["sessionKey"])]
    assert recovered == [kid_end["runId"]]
    [announce] = second.ended(ANNOUNCE)
    assert announce["runId"] == f"{ANNOUNCE}{kid_end['sessionKey']}:{kid_end['runId']}"
    prompt = second.prompts[announce["runId"]]
    assert "completed; ready for parent review" in prompt
    assert "kid-done" in prompt
    assert again == []


async def test_a_child_the_close_cut_off_is_announced_terminated(tmp_path: Path) -> None:
    first = Runs(lambda key, run_id: child(key))  # the child never gets to its model
    with trio.fail_after(30):
        async with opened(tmp_path, first) as rt:
            await rt.run_turn(spawn("[[reply:never]]", label="kid"), session_key="main")
            await first.until(lambda: bool(first.held))
        second = Runs()
        async with opened(tmp_path, second) as rt:
            recovered = list(rt.recovered)
            await second.until(lambda: bool(second.ended(ANNOUNCE)))
        again = await third_open(tmp_path)
    assert recovered == first.held
    [announce] = second.ended(ANNOUNCE)
    assert announce["runId"].endswith(f":{first.held[0]}")
    assert "failed: subagent run terminated" in second.prompts[announce["runId"]]
    assert again == []


async def test_a_yields_children_are_told_together_after_reopening(tmp_path: Path) -> None:
    parent_done = trio.Event()
    stalled = [""]

    def hold(key: str, run_id: str) -> bool:  # both until the parent's turn ended, B for good
        return child(key) and (not parent_done.is_set() or key == stalled[0])

    first = Runs(hold)
    turn = " ".join(
        [
            spawn("[[reply:A-done]]", label="A"),
            spawn("[[reply:B-done]]", label="B"),
            directive("sessions_yield", {}),
        ]
    )
    with trio.fail_after(30):
        async with opened(tmp_path, first) as rt:
            await rt.run_turn(turn, session_key="main")
            a_key, b_key = (r.child_key for r in rt.sessions.book.children(MAIN))
            stalled[0] = b_key
            parent_done.set()
            first.poke()
            await first.until(lambda: any(p["sessionKey"] == a_key for p in first.ends))
        second = Runs()
        async with opened(tmp_path, second) as rt:
            recovered = list(rt.recovered)
            await second.until(lambda: bool(second.ended(SETTLE)))
        again = await third_open(tmp_path)
    assert len(recovered) == 2
    [settle] = second.ended(SETTLE)
    assert settle["runId"] == f"{SETTLE}main:{MAIN}:{','.join(sorted(recovered))}:yield-1"
    assert not second.ended(ANNOUNCE)  # a yield's children are told in its batch only
    prompt = second.prompts[settle["runId"]]
    assert "status: ok" in prompt and "A-done" in prompt
    assert "status: error: subagent run terminated" in prompt
    assert again == []


async def test_a_wave_whose_settle_run_the_close_cut_off_is_settled_after_reopening(
    tmp_path: Path,
) -> None:
    parent_done = trio.Event()

    def hold(key: str, run_id: str) -> bool:  # the children until the parent's turn ended
        return (child(key) and not parent_done.is_set()) or run_id.startswith(SETTLE)

    first = Runs(hold)
    turn = " ".join([spawn("[[reply:A-done]]", label="A"), spawn("[[reply:B-done]]", label="B")])
    with trio.fail_after(30):
        async with opened(tmp_path, first) as rt:
            await rt.run_turn(turn, session_key="main")
            parent_done.set()
            first.poke()
            await first.until(lambda: any(r.startswith(SETTLE) for r in first.held))
        second = Runs()
        async with opened(tmp_path, second) as rt:
            recovered = list(rt.recovered)
            await second.until(lambda: bool(second.ended(SETTLE)))
        async with opened(tmp_path, Runs()) as rt:
            again = list(rt.recovered)
            entries = await rt.session_branch(MAIN)
    assert recovered == []  # both were told on their own
    [settle] = second.ended(SETTLE)
    assert not second.ended(ANNOUNCE)
    assert "A-done" in second.prompts[settle["runId"]]
    assert "B-done" in second.prompts[settle["runId"]]
    assert again == []
    settled = [e for e in entries if e.idempotencyKey == f"{settle['runId']}:user"]
    assert len(settled) == 1


async def test_a_child_paused_for_a_message_waits_for_its_continuation_after_reopening(
    tmp_path: Path,
) -> None:
    first = Runs()
    waits = spawn(directive("sessions_yield", {"waitFor": "message"}), label="remote")
    with trio.fail_after(30):
        async with opened(tmp_path, first) as rt:
            await rt.run_turn(waits, session_key="main")
            await first.until(lambda: any(child(p["sessionKey"]) for p in first.ends))
            [task] = rt.sessions.book.children(MAIN)
        parent_done = trio.Event()
        second = Runs(lambda key, run_id: child(key) and not parent_done.is_set())
        send = {"sessionKey": task.child_key, "message": "[[reply:remote-done]]"}
        async with opened(tmp_path, second) as rt:
            recovered = list(rt.recovered)
            await trio.testing.wait_all_tasks_blocked()
            early = list(second.ends)
            await rt.run_turn(directive("sessions_send", send), session_key="main")
            parent_done.set()
            second.poke()
            await second.until(lambda: bool(second.ended(ANNOUNCE)))
        again = await third_open(tmp_path)
    assert recovered == [task.task_id]
    assert early == []  # nothing told while it waits
    [announce] = second.ended(ANNOUNCE)
    assert announce["runId"] == f"{ANNOUNCE}{task.child_key}:{task.task_id}"
    assert "remote-done" in second.prompts[announce["runId"]]
    assert again == []


async def test_an_announce_steered_into_the_parents_turn_is_not_told_again(
    tmp_path: Path,
) -> None:
    handed = trio.Event()

    async def hold(event: Any) -> None:  # the parent's turn, until the announce is offered
        if event.toolName == "session_status":
            await handed.wait()

    first = Runs()
    turn = " ".join([spawn("[[reply:kid-done]]", label="kid"), directive("session_status", {})])
    with trio.fail_after(30):
        async with opened(tmp_path, first) as rt:
            steering = rt.steering

            def steer(key: str) -> Any:
                going = steering(key)  # the announce is offered to it right after
                handed.set()
                return going

            rt.steering = steer  # type: ignore[method-assign]
            rt.services.hooks.register("before_tool_call", hold, plugin_id="hold")
            await rt.run_turn(turn, session_key="main")
            await first.until(lambda: any(child(p["sessionKey"]) for p in first.ends))
            steered = [m for m in rt.transcript("main") if "kid-done" in str(m)]
        second = Runs()
        async with opened(tmp_path, second) as rt:
            recovered = list(rt.recovered)
    assert steered  # the parent's turn took it
    assert not first.ended(ANNOUNCE)  # no turn of its own
    assert recovered == []
