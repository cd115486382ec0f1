"""A subagent's completion in its parent's session, as OpenClaw 2026.9.6 keeps and shows it, on
a real gateway and the embedded runtime, driven by the `local` model's `[[tool:...]]`
directives (what the peer gateway did for the same calls is quoted):

- a child's own announce: the model reads its prompt, the transcript keeps no row of it
  (the peer's parent transcript after an announce run: the run's assistant reply only,
  `shouldSuppressAgentPromptPersistence`), so no history shows it;
- the continuation that tells settled children together: its prompt is kept as a user
  message with `display: false` and OpenClaw's input provenance (the peer's row:
  `{role: user, display: false, provenance: {kind: inter_session, sourceSessionKey: <the
  first child key, sorted>, sourceChannel: internal, sourceTool: subagent_settle},
  idempotencyKey: <runId>:user}`), read by the model's next turns, shown by no history
  (`chat.history`, `sessions_history`, `session.message`);
- a child ending while its parent runs is steered into that run, a hidden user row of it
  with the announce's provenance, and has no run of its own;
- without a yield, two children or more, once each was announced, are told again together
  in one settle run (OpenClaw's id without the yield's suffix, its quieter last line);
- a restart while a yield's batch waits still tells it in one continuation (the claim is
  kept in the parent's transcript).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

import actors._subagents as subagents
from runtime import open_embedded_runtime, parse_config
from runtime.agent import announce_key, announce_task
from runtime.llm import Message, UserMessage
from runtime.sessions import MessageEntry
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_session_tools import Watch, directive, prompt_spy, spawn
from tests.e2e.test_yield_handoff import MAIN, SETTLED, TWO_AND_YIELD, text_of

ANNOUNCED = "[Internal task completion event]"
"""What the parent's model reads of a child's end (OpenClaw's task completion event)."""
SETTLE = "announce:requester-settle:"
ONE_CHILD = " ".join([spawn("[[reply:kid-done]]", label="kid"), "[[reply:parent-done]]"])


class Ends:
    """An embedded runtime's runs' ends (`after`: wait for one)."""

    def __init__(self) -> None:
        self.ended: list[dict[str, Any]] = []
        self.changed = trio.Event()

    def __call__(self, payload: dict[str, Any]) -> None:
        if payload["stream"] == "lifecycle" and payload["data"]["phase"] in ("end", "error"):
            self.ended.append(payload)
            self.changed.set()
            self.changed = trio.Event()

    def of(self, key: str, but: str) -> list[dict[str, Any]]:
        return [p for p in self.ended if p["sessionKey"] == key and p["runId"] != but]

    async def after(self, key: str, run_id: str) -> dict[str, Any]:
        """The first run of session `key` that is not `run_id` to end."""
        while not self.of(key, run_id):
            await self.changed.wait()
        return self.of(key, run_id)[0]


def told(rows: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The user rows holding `text` (the local model's reply quotes its prompt)."""
    return [r for r in rows if r.get("role") == "user" and text in text_of(r)]


async def test_a_childs_announce_prompt_is_not_kept_and_shown_by_no_history(
    tmp_path: Path,
) -> None:
    watch = Watch()
    prompts, spy = prompt_spy()

    with trio.fail_after(60):
        async with running_gateway(tmp_path) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request("sessions.messages.subscribe", {"key": MAIN})
                await client.request(
                    "agent", {"message": ONE_CHILD, "idempotencyKey": "p1"}, expect_final=True
                )
                [_, announce] = await watch.ended(MAIN, 2)
                history = await client.request("chat.history", {"sessionKey": MAIN})
                stored = await client.request("sessions.get", {"key": MAIN})
    assert ANNOUNCED in prompts[announce["runId"]]  # the model read it
    assert not told(stored["messages"], ANNOUNCED)  # no row of it
    assert not told(history["messages"], ANNOUNCED)
    replies = [r for r in history["messages"] if r["__openclaw"].get("runId") == announce["runId"]]
    assert [r["role"] for r in replies] == ["assistant"]  # the announce's reply is shown
    shown = [p["message"] for (e, p, _s) in watch.events if e == "session.message"]
    assert shown and not told(shown, ANNOUNCED)


async def test_a_yields_continuation_prompt_is_kept_hidden_and_read_after_a_restart(
    tmp_path: Path,
) -> None:
    watch = Watch()
    seen: dict[str, list[Message]] = {}

    def spy(event: Any) -> None:
        seen[event.runId] = list(event.historyMessages)

    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            await client.request("sessions.messages.subscribe", {"key": MAIN})
            await client.request(
                "agent", {"message": TWO_AND_YIELD, "idempotencyKey": "y"}, expect_final=True
            )
            [_, continuation] = await watch.ended(MAIN, 2)
            history = await client.request("chat.history", {"sessionKey": MAIN})
            stored = await client.request("sessions.get", {"key": MAIN})
            entries = await gw.supervisor.store.load_entries(stored["sessionId"])
            peek = directive("sessions_history", {"sessionKey": MAIN, "includeTools": True})
            await client.request(
                "agent",
                {"message": peek, "sessionKey": "agent:main:peek", "idempotencyKey": "p"},
                expect_final=True,
            )
            rows = (await client.request("sessions.list", {}))["sessions"]
        async with running_gateway(tmp_path) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw) as client:
                await client.request(
                    "agent", {"message": "and now?", "idempotencyKey": "y2"}, expect_final=True
                )
    run_id = continuation["runId"]
    [kept] = told(stored["messages"], SETTLED)
    children = sorted(r["key"] for r in rows if r.get("spawnedBy") == MAIN)
    assert kept["display"] is False
    assert kept["provenance"] == {
        "kind": "inter_session",
        "sourceSessionKey": children[0],
        "sourceChannel": "internal",
        "sourceTool": "subagent_settle",
    }
    [entry] = [
        e
        for e in entries
        if isinstance(e, MessageEntry)
        and isinstance(e.message, UserMessage)
        and e.message.display is False
    ]
    assert entry.idempotencyKey == f"{run_id}:user" and entry.runId == run_id
    assert not told(history["messages"], SETTLED)
    seq = [r["__openclaw"]["seq"] for r in history["messages"]]
    assert history["totalMessages"] == len(history["messages"]) + 1  # numbered, not shown
    assert seq[-1] == history["totalMessages"]
    [peeked] = [
        p["data"]["result"]["details"]["messages"]
        for p in watch.events_of("tool")
        if p["runId"] == "p"
        and p["data"]["phase"] == "result"
        and p["data"]["name"] == "sessions_history"
    ]
    assert peeked and not told(peeked, SETTLED)
    shown = [p["message"] for (e, p, _s) in watch.events if e == "session.message"]
    assert shown and not told(shown, SETTLED)
    context = [m for m in seen["y2"] if isinstance(m, UserMessage)]
    assert any(SETTLED in text_of(m) for m in context)  # the model reads it from the store


async def test_the_embedded_runtime_keeps_and_hides_completion_prompts_as_the_gateway(
    tmp_path: Path,
) -> None:
    ends = Ends()
    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:
            rt.on_event = ends
            turn = await rt.run_turn(TWO_AND_YIELD, session_key="main")
            await ends.after(MAIN, turn.run_id)  # its continuation
            turn = await rt.run_turn(ONE_CHILD, session_key="other")
            await ends.after("agent:main:other", turn.run_id)  # the child's announce
            peeked: list[dict[str, Any]] = []
            peek = directive("sessions_history", {"sessionKey": MAIN, "includeTools": True})
            await rt.run_turn(peek, session_key="peek", on_event=peeked.append)
            main, other = rt.transcript("main"), rt.transcript("other")
    [kept] = [m for m in main if isinstance(m, UserMessage) and SETTLED in text_of(m)]
    assert kept.display is False and kept.provenance is not None
    assert kept.provenance.sourceTool == "subagent_settle"
    assert not [m for m in other if isinstance(m, UserMessage) and ANNOUNCED in text_of(m)]
    [shown] = [
        p["data"]["result"]["details"]["messages"]
        for p in peeked
        if p["stream"] == "tool"
        and p["data"]["phase"] == "result"
        and p["data"]["name"] == "sessions_history"
    ]
    assert shown and not told(shown, SETTLED)


# --- a parent still running is steered; two children or more are settled together --------

SLOW_PARENT = " ".join([spawn("[[reply:kid-done]]", label="kid"), "[[delay:1500]] [[reply:done]]"])
TWO_SLOW = " ".join(
    [
        spawn("[[delay:300]] [[reply:A-done]]", label="A"),
        spawn("[[delay:300]] [[reply:B-done]]", label="B"),
        "[[reply:parent-done]]",
    ]
)
SETTLED_QUIETLY = (
    f"{SETTLED}[Subagent Context] This completion ends one child run, not necessarily the "
    "original user request."
)
SILENT_IF_ANSWERED = (
    "[Subagent Context] Reply ONLY: NO_REPLY only if you already delivered the consolidated "
    "final answer for this batch.\n\nChild completion results:"
)


async def test_a_child_ending_while_its_parent_runs_is_steered_into_that_run(
    tmp_path: Path,
) -> None:
    """The peer: a child ended while its parent ran a tool, its completion was a user row
    of the parent's run (provenance subagent_announce, no `display: false`, hidden by
    chat.history), and no announce run followed."""
    watch = Watch()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            await client.request(
                "agent", {"message": SLOW_PARENT, "idempotencyKey": "p1"}, expect_final=True
            )
            await client.request(
                "agent", {"message": "next", "idempotencyKey": "p2"}, expect_final=True
            )
            history = await client.request("chat.history", {"sessionKey": MAIN})
            stored = await client.request("sessions.get", {"key": MAIN})
    ended = [(p["runId"], p["data"].get("mergedInto")) for p in watch.ends(MAIN)]
    [(_, merged)] = [e for e in ended if announce_task(e[0])]
    assert merged == "p1"  # steered into p1: no run of its own
    assert [e[0] for e in ended if e[1] is None] == ["p1", "p2"]
    rows = stored["messages"]
    [steered] = told(rows, ANNOUNCED)
    after = rows[rows.index(steered) + 1]  # p1's model read it: its reply quotes it
    assert after["role"] == "assistant" and ANNOUNCED in text_of(after)
    assert steered["provenance"]["sourceTool"] == "subagent_announce"
    assert "display" not in steered  # hidden by its provenance, as the peer's
    assert not told(history["messages"], ANNOUNCED)


async def test_an_announce_the_parents_full_queue_refused_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child ends while its parent runs with a turn queued behind it, the queue at its
    cap (drop `new`): its announce is refused, and tried again (OpenClaw's retries, here
    shortened) until the parent's session takes it (it was lost, only logged)."""
    monkeypatch.setattr(subagents, "ANNOUNCE_RETRY_S", (0.2, 0.4))
    queue = {"cap": 1, "drop": "new", "mode": "followup"}
    busy = " ".join([spawn("[[delay:200]] [[reply:kid-done]]"), "[[delay:1000]] [[reply:p1]]"])
    watch = Watch()
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path, local_config(messages__queue=queue)) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            await client.request("agent", {"message": busy, "idempotencyKey": "p1"})
            await client.request("agent", {"message": "[[delay:500]] q", "idempotencyKey": "q"})
            while not [
                p
                for p in watch.ends(MAIN)
                if p["data"].get("mergedInto") or (p["runId"] not in ("p1", "q"))
            ]:
                await watch.changed.wait()
            stored = await client.request("sessions.get", {"key": MAIN})
    [announced] = [
        r
        for r in stored["messages"]
        if r.get("role") == "user"
        and (r.get("provenance") or {}).get("sourceTool") == "subagent_announce"
    ]
    assert "kid-done" in text_of(announced)


async def test_two_children_without_a_yield_are_settled_together_after_their_announces(
    tmp_path: Path,
) -> None:
    """The peer, two children spawned by a turn that ended: an announce run each, then one
    run announce:requester-settle:main:agent:main:d1:<a>,<b> (no yield suffix) whose prompt
    (kept hidden) ends its context with "Reply ONLY: NO_REPLY only if you already delivered
    the consolidated final answer for this batch." and lists both children."""
    watch = Watch()
    prompts, spy = prompt_spy()

    with trio.fail_after(60):
        async with running_gateway(tmp_path) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent", {"message": TWO_SLOW, "idempotencyKey": "p"}, expect_final=True
                )
                spawned = watch.spawned("p")
                runs = [p["runId"] for p in await watch.ended(MAIN, 4)]
                await client.request(
                    "agent", {"message": "next", "idempotencyKey": "z"}, expect_final=True
                )
    ids = sorted(child["runId"] for child in spawned)
    settle = f"announce:requester-settle:main:{MAIN}:{','.join(ids)}"
    assert runs[0] == "p" and runs[3] == settle
    assert sorted(runs[1:3]) == sorted(
        announce_key(c["childSessionKey"], c["runId"]) for c in spawned
    )
    assert [p["runId"] for p in watch.ends(MAIN)][4:] == ["z"]  # nothing more
    prompt = prompts[settle]
    assert prompt.startswith(SETTLED_QUIETLY) and SILENT_IF_ANSWERED in prompt
    assert "A-done" in prompt and "B-done" in prompt


async def test_the_embedded_runtime_steers_and_settles_as_the_gateway(tmp_path: Path) -> None:
    ends = Ends()
    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:
            rt.on_event = ends
            await rt.run_turn(SLOW_PARENT, session_key="main")
            steered = rt.transcript("main")
            turn = await rt.run_turn(TWO_SLOW, session_key="other")
            other = "agent:main:other"
            while not any(p["runId"].startswith(SETTLE) for p in ends.of(other, turn.run_id)):
                await ends.changed.wait()
            runs = [p["runId"] for p in ends.of(other, "")]
            settled = rt.transcript("other")
    [kept] = [m for m in steered if isinstance(m, UserMessage) and ANNOUNCED in text_of(m)]
    assert kept.provenance is not None and kept.provenance.sourceTool == "subagent_announce"
    assert not [p for p in ends.ended if announce_task(p["runId"]) and p["sessionKey"] == MAIN]
    assert runs[0] == turn.run_id and len(runs) == 4  # the turn, two announces, one settle
    assert runs[3].startswith(f"announce:requester-settle:main:{other}:")
    [prompt] = [m for m in settled if isinstance(m, UserMessage) and SETTLED in text_of(m)]
    assert SILENT_IF_ANSWERED in text_of(prompt) and prompt.display is False


# --- a restart while a yield's batch waits -------------------------------------------------


async def test_a_restart_still_tells_a_yields_children_in_one_continuation(
    tmp_path: Path,
) -> None:
    """The yield's claim is kept in the parent's transcript beside the yield (a custom entry,
    `clawlane.yield-batch`): after a restart the child that had ended and the one the
    shutdown stopped are told together, in the continuation OpenClaw names, not one by one."""
    watch = Watch()
    yielding = " ".join(
        [
            spawn("[[delay:500]] [[reply:A-done]]", label="A"),  # ends after the yield
            spawn("[[stall]]", label="B"),
            directive("sessions_yield", {}),
        ]
    )
    with trio.fail_after(60):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw, caps=["tool-events"], on_event=watch) as client,
        ):
            await client.request(
                "agent", {"message": yielding, "idempotencyKey": "y"}, expect_final=True
            )
            spawned = watch.spawned("y")
            a, b = (child["runId"] for child in spawned)
            await watch.ended(spawned[0]["childSessionKey"], 1)  # A ended; B runs
        continuation = f"announce:requester-settle:main:{MAIN}:{','.join(sorted([a, b]))}:yield-1"
        async with running_gateway(tmp_path) as gw, open_client(gw) as client:
            waited = await client.request(
                "agent.wait", {"runId": continuation, "timeoutMs": 20_000}
            )
            await client.request(
                "agent", {"message": "next", "idempotencyKey": "z"}, expect_final=True
            )
            row = await gw.supervisor.store.get_session(MAIN)
            assert row is not None
            entries = await gw.supervisor.store.load_entries(row.sessionId)
    assert waited["status"] == "ok", waited
    runs = [e.runId for e in entries if isinstance(e, MessageEntry) and e.runId]
    assert continuation in runs and runs[-1] == "z"
    assert not [r for r in runs if announce_task(r)]  # none told on its own
    [prompt] = [
        e.message
        for e in entries
        if isinstance(e, MessageEntry) and e.idempotencyKey == f"{continuation}:user"
    ]
    text = text_of(prompt)
    assert "A-done" in text and "status: cancelled" in text  # B: stopped by the shutdown
