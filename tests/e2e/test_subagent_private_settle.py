"""A private child (`sessions_spawn` `completionTarget: "parent"`) ending inside a yield's batch
or a settle wave is told as OpenClaw 2026.9.6 tells it, on a real gateway and the embedded
runtime, driven by the `local` model's directives.

In OpenClaw's dist the private child is no exception to the batch: a yield's claim takes
every child that expects its completion message (`markRequesterTurnYieldedInRuns`,
`settleRequesterTurnAfterSessionSpawns`: `expectsCompletionMessage === true`, which a private
child must have), its own completion is then owned by the yield (`requesterTookCompletion`:
`completionTarget === "parent" && requesterYieldBatch`), and a child told on its own is armed
for the wave like any other (`persistRequesterSettleWakePending`), counting toward its two.
What changes is the settle run: with a private row in the batch the wake is `parentOnly`
(`buildRequesterSettleWakeMessage`: no outcome instruction, OpenClaw's private completion
instruction as its last context line, in place of the visible-reply or the NO_REPLY line),
sent only to the requester session the private child was spawned from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from runtime import open_embedded_runtime, parse_config
from runtime.agent import announce_key
from runtime.agent._yield_batch import OUTCOME_INSTRUCTION, PRIVATE_LINE
from runtime.llm import UserMessage
from tests.conftest import open_client, running_gateway
from tests.e2e.test_session_tools import Watch, directive, prompt_spy, spawn
from tests.e2e.test_yield_handoff import MAIN, SETTLED, text_of

SETTLE = "announce:requester-settle:"
OUTCOME_LINE = f"[Subagent Context] {OUTCOME_INSTRUCTION}"
PRIVATE_A = spawn("[[delay:500]] [[reply:A-done]]", label="A", completionTarget="parent")
ORDINARY_B = spawn("[[delay:500]] [[reply:B-done]]", label="B")
PRIVATE_AND_YIELD = " ".join([PRIVATE_A, ORDINARY_B, directive("sessions_yield", {})])
PRIVATE_WAVE = " ".join([PRIVATE_A, ORDINARY_B, "[[reply:parent-done]]"])


def assert_private_settle(prompt: str) -> None:
    head, _, findings = prompt.partition("\n\nChild completion results:")
    assert head == f"{SETTLED}{PRIVATE_LINE}", head
    assert OUTCOME_LINE not in head
    assert "A-done" in findings and "B-done" in findings


async def test_a_private_child_in_a_yields_batch_is_told_in_its_private_continuation(
    tmp_path: Path,
) -> None:
    watch = Watch()
    prompts, spy = prompt_spy()
    with trio.fail_after(60):
        async with running_gateway(tmp_path) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {"message": PRIVATE_AND_YIELD, "idempotencyKey": "y"},
                    expect_final=True,
                )
                spawned = watch.spawned("y")
                [_, continuation] = await watch.ended(MAIN, 2)
                await client.request(
                    "agent", {"message": "next", "idempotencyKey": "z"}, expect_final=True
                )
    ids = sorted(child["runId"] for child in spawned)
    run_id = continuation["runId"]
    assert run_id == f"announce:requester-settle:main:{MAIN}:{','.join(ids)}:yield-1"
    assert [p["runId"] for p in watch.ends(MAIN)] == ["y", run_id, "z"]  # no private run
    assert_private_settle(prompts[run_id])


async def test_a_private_child_counts_toward_a_wave_told_privately(tmp_path: Path) -> None:
    watch = Watch()
    prompts, spy = prompt_spy()
    with trio.fail_after(60):
        async with running_gateway(tmp_path) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent", {"message": PRIVATE_WAVE, "idempotencyKey": "p"}, expect_final=True
                )
                spawned = watch.spawned("p")
                runs = [p["runId"] for p in await watch.ended(MAIN, 4)]
    ids = sorted(child["runId"] for child in spawned)
    settle = f"announce:requester-settle:main:{MAIN}:{','.join(ids)}"
    assert runs[0] == "p" and runs[3] == settle
    private, ordinary = (announce_key(c["childSessionKey"], c["runId"]) for c in spawned)
    assert sorted(runs[1:3]) == sorted([private, ordinary])  # each told on its own first
    assert "Process this result privately." in prompts[private]
    assert_private_settle(prompts[settle])


async def test_the_embedded_runtime_tells_a_private_childs_batch_privately_too(
    tmp_path: Path,
) -> None:
    ended: list[dict[str, Any]] = []
    told = trio.Event()

    def background(payload: dict[str, Any]) -> None:
        if payload["stream"] == "lifecycle" and payload["data"]["phase"] == "end":
            ended.append(payload)
            if payload["sessionKey"] == MAIN and payload["runId"].startswith(SETTLE):
                told.set()

    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:
            rt.on_event = background
            turn = await rt.run_turn(PRIVATE_AND_YIELD, session_key="main")
            await told.wait()
            after = await rt.run_turn("next", session_key="main")
            context = rt.transcript("main")
    runs = [p["runId"] for p in ended if p["sessionKey"] == MAIN and p["runId"] != turn.run_id]
    [continuation, last] = runs
    assert continuation.startswith(f"{SETTLE}main:{MAIN}:")
    assert last == after.run_id  # no private turn of its own
    [prompt] = [m for m in context if isinstance(m, UserMessage) and SETTLED in text_of(m)]
    assert_private_settle(text_of(prompt))
