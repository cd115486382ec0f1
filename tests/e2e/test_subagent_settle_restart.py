"""A settle wave without a yield survives a gateway restart, as OpenClaw 2026.9.6's does (its
`requesterSettleWake` state is kept on each child's registry row and its settle wake is
scheduled again when the registry is restored): two children told on their own, the
gateway stopped before the settle run that tells them together was made, and the next
gateway makes it, under the same id, once. The journal is clawlane's record of it: the
children's runs and their announces say they were told on their own; a settle run the
journal has (started, or interrupted) says their wave was told, so a later restart does
not settle it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

import actors._subagents as subagents
from actors import GatewaySessions
from runtime.agent import SpawnedRun, announce_key
from runtime.sessions import MessageEntry
from tests.conftest import open_client, running_gateway
from tests.e2e.test_session_tools import Watch, spawn
from tests.e2e.test_yield_handoff import MAIN, SETTLED, text_of

TWO = " ".join(
    [
        spawn("[[delay:300]] [[reply:A-done]]", label="A"),
        spawn("[[delay:300]] [[reply:B-done]]", label="B"),
        "[[reply:parent-done]]",
    ]
)


def hold_waves(monkeypatch: pytest.MonkeyPatch) -> trio.Event:
    """Hold every wave's settle run (not a yield's) until the gateway stops; the event is
    set once one is held."""
    held = trio.Event()
    settle = subagents.Subagents.settle

    async def hold(self: Any, run: SpawnedRun, batch: list[SpawnedRun]) -> None:
        if not run.requester_yielded:
            held.set()
            await trio.sleep_forever()
        await settle(self, run, batch)

    monkeypatch.setattr(subagents.Subagents, "settle", hold)
    return held


def settled_again(monkeypatch: pytest.MonkeyPatch) -> trio.Event:
    """An event set once a wave a restart rebuilt was dealt with."""
    done = trio.Event()
    again = subagents.Subagents._settle_again

    async def watched(self: Any, wave: list[SpawnedRun]) -> None:
        await again(self, wave)
        done.set()

    monkeypatch.setattr(subagents.Subagents, "_settle_again", watched)
    return done


def book_of(gw: Any) -> Any:
    host = gw.supervisor.services.sessions
    assert isinstance(host, GatewaySessions)
    return host.spawner.book


async def settle_prompts(gw: Any) -> list[str]:
    """The settle runs' prompts kept in the parent's transcript, by idempotency key."""
    row = await gw.supervisor.store.get_session(MAIN)
    assert row is not None
    entries = await gw.supervisor.store.load_entries(row.sessionId)
    return [
        e.idempotencyKey
        for e in entries
        if isinstance(e, MessageEntry)
        and e.idempotencyKey
        and e.idempotencyKey.startswith("announce:requester-settle:")
    ]


async def test_a_wave_the_gateway_stopped_before_settling_is_settled_after_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = Watch()
    with trio.fail_after(90):
        held = hold_waves(monkeypatch)
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            await client.request(
                "agent", {"message": TWO, "idempotencyKey": "p"}, expect_final=True
            )
            spawned = watch.spawned("p")
            runs = [p["runId"] for p in await watch.ended(MAIN, 3)]  # p and two announces
            await held.wait()  # the wave is due: the gateway stops before its run
        monkeypatch.undo()
        ids = sorted(child["runId"] for child in spawned)
        settle = f"announce:requester-settle:main:{MAIN}:{','.join(ids)}"
        assert sorted(runs[1:]) == sorted(
            announce_key(c["childSessionKey"], c["runId"]) for c in spawned
        )
        async with running_gateway(tmp_path) as gw, open_client(gw) as client:
            waited = await client.request("agent.wait", {"runId": settle, "timeoutMs": 20_000})
            assert waited["status"] == "ok", waited
            await client.request(
                "agent", {"message": "next", "idempotencyKey": "z"}, expect_final=True
            )
            first = await settle_prompts(gw)
        # once told, a restart knows it (the journal has its run): nothing more to settle
        async with running_gateway(tmp_path) as gw, open_client(gw) as client:
            children = book_of(gw).children(MAIN)
            assert sorted(r.task_id for r in children) == ids
            assert all(r.waved and not r.ready for r in children)
            # a node that read the journal while the settle run had not ended (a cluster's
            # node reads no unended run) finds that run by its id and makes it not again
            tried = settled_again(monkeypatch)
            assert gw.recovery is not None
            unseen = [r for r in gw.recovery.runs if r.record.run_id != settle]
            host = gw.supervisor.services.sessions
            assert isinstance(host, GatewaySessions) and host.spawner.adopt(unseen) == 0
            await tried.wait()
            await client.request(
                "agent", {"message": "again", "idempotencyKey": "z2"}, expect_final=True
            )
            again = await settle_prompts(gw)
            row = await gw.supervisor.store.get_session(MAIN)
            assert row is not None
            entries = await gw.supervisor.store.load_entries(row.sessionId)
    assert first == again == [f"{settle}:user"]
    [prompt] = [
        e.message
        for e in entries
        if isinstance(e, MessageEntry) and e.idempotencyKey == f"{settle}:user"
    ]
    text = text_of(prompt)
    assert text.startswith(SETTLED) and "A-done" in text and "B-done" in text
    runs_after = [e.runId for e in entries if isinstance(e, MessageEntry) and e.runId]
    assert runs_after[-1] == "z2"
