"""Subagents over their parents' lifetimes, on a real gateway driven by the `local` model's
`[[tool:...]]` directives: a parent's stop (`chat.abort` of the run that spawned them,
`sessions.abort` of the session, `sessions.delete`) stops its running subagents and their
descendants, which then announce nothing (OpenClaw's cascade stop); a child paused by
`sessions_yield` `waitFor: "message"` announces nothing until its parent's `sessions_send`
continuation resumes its task, and then announces that run's result once; and a restart
tells a parent how the subagents it was waiting for ended (a graceful one: stopped by the
shutdown; after a kill -9: failed, or run again), from the run journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
import trio

from actors import RecoveredRun, RunRecord, adopt_subagents
from actors.store import INTERRUPTED, SpawnLink
from runtime.agent import announce_key
from runtime.loop import now_ms
from tests._thrown import thrown
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import run_events, terminal_events
from tests.e2e.test_crash_recovery import client, gateway_process, kill9, write_config
from tests.e2e.test_session_tools import Watch, details, directive, spawn, tool_results

ANNOUNCED = "[Internal task completion event]"
"""What the parent's model reads of a child's end (OpenClaw's task completion event)."""


def assistant_text(watch: Watch, run_id: str) -> str:
    return "".join(
        p["data"].get("delta", "") for p in run_events(watch.events, run_id, "assistant")
    )


async def ended_run(watch: Watch, run_id: str) -> dict[str, Any]:
    """The terminal lifecycle payload of `run_id`, once it has ended."""
    while not terminal_events(watch.events, run_id):
        await watch.changed.wait()
    return terminal_events(watch.events, run_id)[0]


async def test_a_parents_stop_stops_its_subagents_and_they_announce_nothing(
    tmp_path: Path,
) -> None:
    config = local_config(agents__defaults__subagents={"maxSpawnDepth": 2})
    watch = Watch()
    a, b, c = "agent:main:a", "agent:main:b", "agent:main:c"
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                for key, task in ((a, "[[stall]]"), (b, spawn("[[stall]]")), (c, "[[stall]]")):
                    await client.request(
                        "agent",
                        {"message": spawn(task), "sessionKey": key, "idempotencyKey": key},
                        expect_final=True,
                    )
                children = {k: details(tool_results(watch.events, k)[0]) for k in (a, b, c)}
                # b's child spawned a grandchild, then ended (and announced itself to b).
                b_child = children[b]["childSessionKey"]
                await watch.ended(b_child, 1)
                await watch.ended(b, 2)
                rows = (await client.request("sessions.list", {}))["sessions"]
                [grand_key] = [r["key"] for r in rows if r.get("spawnedBy") == b_child]
                # The exact run's stop, the session's stop, the session's deletion.
                await client.request("chat.abort", {"sessionKey": a, "runId": a})
                await client.request("sessions.abort", {"key": b})
                await client.request("sessions.delete", {"key": c})
                stopped = [
                    await ended_run(watch, children[a]["runId"]),
                    *await watch.ended(grand_key, 1),
                    await ended_run(watch, children[c]["runId"]),
                ]
                # A whole run on each parent: an announce due by then would be before it.
                for key in (a, b):
                    await client.request(
                        "agent",
                        {"message": "after", "sessionKey": key, "idempotencyKey": f"{key}:2"},
                        expect_final=True,
                    )
                histories = [
                    await client.request("chat.history", {"sessionKey": k}) for k in (a, b_child)
                ]
    for end in stopped:
        assert end["data"]["aborted"] is True and end["data"]["stopReason"] == "stop"
    assert [p["runId"] for p in watch.ends(a)] == [a, f"{a}:2"]
    assert len(watch.ends(b)) == 3  # its run, its child's announce, the run after
    assert [p["runId"] for p in watch.ends(c)] == [c]
    # Nothing was announced of the stopped ones: not to a, not to b's child.
    for history in histories:
        assert not any(ANNOUNCED in json.dumps(m) for m in history["messages"])


async def test_a_child_paused_for_a_message_announces_once_after_its_continuation(
    tmp_path: Path,
) -> None:
    watch = Watch()
    main = "agent:main:main"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                waits = spawn(directive("sessions_yield", {"waitFor": "message"}), label="remote")
                await client.request(
                    "agent", {"message": waits, "idempotencyKey": "p1"}, expect_final=True
                )
                receipt = details(tool_results(watch.events, "p1")[0])
                child, task = receipt["childSessionKey"], receipt["runId"]
                await ended_run(watch, task)
                child_history = await client.request("chat.history", {"sessionKey": child})
                second = " ".join(
                    [
                        directive("subagents", {}),
                        directive("sessions_yield", {}),
                        directive(
                            "sessions_send",
                            {"sessionKey": child, "message": "[[reply:remote-done]]"},
                        ),
                    ]
                )
                await client.request(
                    "agent", {"message": second, "idempotencyKey": "p2"}, expect_final=True
                )
                listed, owed, resumed = tool_results(watch.events, "p2")
                ends = await watch.ended(main, 3)  # p1, p2, then the one announce
                await client.request(
                    "agent", {"message": "after", "idempotencyKey": "p3"}, expect_final=True
                )
    [paused] = [m for m in child_history["messages"] if m.get("toolName") == "sessions_yield"]
    assert json.loads(paused["content"][0]["text"]) == {"status": "yielded"}
    [task_row] = details(listed)["tasks"]
    assert task_row["taskId"] == task
    [pending] = details(owed)["pendingChildren"]
    assert pending["state"] == "paused" and pending["childSessionKey"] == child
    assert "paused by its own sessions_yield" in details(owed)["message"]
    continuation = details(resumed)
    assert continuation["status"] == "accepted" and continuation["mode"] == "resume"
    assert continuation["taskRunId"] == task and continuation["completion"] == "task"
    assert continuation["runId"] != task and continuation["sessionKey"] == child
    [announce] = [p for p in ends if p["runId"] not in ("p1", "p2")]
    assert announce["runId"] == announce_key(child, task)
    text = assistant_text(watch, announce["runId"])
    assert "remote-done" in text and "task: remote" in text
    assert len(watch.ends(main)) == 4  # and no second announce before the run after


async def test_a_graceful_restart_tells_the_parent_its_subagent_was_stopped(
    tmp_path: Path,
) -> None:
    watch = Watch()
    main = "agent:main:main"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {"message": spawn("[[stall]]", label="long"), "idempotencyKey": "p1"},
                    expect_final=True,
                )
                receipt = details(tool_results(watch.events, "p1")[0])
                while not run_events(watch.events, receipt["runId"], "lifecycle"):
                    await watch.changed.wait()  # the child's run has started
    after = Watch()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=after) as client:
                # it may have run before we connected
                announced = announce_key(receipt["childSessionKey"], receipt["runId"])
                waited = await client.request(
                    "agent.wait", {"runId": announced, "timeoutMs": 20000}
                )
                history = await client.request("chat.history", {"sessionKey": main})
                await client.request(
                    "agent",
                    {"message": directive("subagents", {}), "idempotencyKey": "p2"},
                    expect_final=True,
                )
                [listed] = tool_results(after.events, "p2")
    assert waited["status"] == "ok"
    [message] = [  # the announce's prompt is not kept: its reply quotes it (the local model)
        m for m in history["messages"] if ANNOUNCED in json.dumps(m) and m["role"] == "assistant"
    ]
    text = json.dumps(message)
    assert "task: long" in text and "status: failed: subagent run terminated" in text
    [task] = details(listed)["tasks"]
    assert task["taskId"] == receipt["runId"] and task["status"] == "cancelled"


@pytest.mark.parametrize("mode", ["fail", "rerun"])
async def test_after_kill_9_the_parent_hears_how_its_interrupted_subagent_ended(
    tmp_path: Path, mode: str
) -> None:
    """The child's run was journaled as accepted with its parent: reported failed (`fail`)
    or run again (`rerun`), its end is announced to the parent as usual."""
    state = tmp_path / "state"
    config = write_config(state, interruptedRuns=mode)
    main = "agent:main:main"
    task = "[[stall]]" if mode == "fail" else "[[delay:1500]] [[reply:finished]]"
    with trio.fail_after(90):
        async with gateway_process(state, config) as (url, proc), client(url) as (c, _):
            await c.request("agent", {"message": spawn(task, label="job"), "idempotencyKey": "p"})
            assert (await c.request("agent.wait", {"runId": "p", "timeoutMs": 10_000}))[
                "status"
            ] == "ok"
            history = await c.request("chat.history", {"sessionKey": main})
            # the model called sessions_spawn through Tool Search's tool_call
            [spawned] = [m for m in history["messages"] if m.get("toolName") == "tool_call"]
            envelope = json.loads(spawned["content"][0]["text"])
            assert envelope["tool"]["name"] == "sessions_spawn"
            receipt = json.loads(envelope["result"]["content"][0]["text"])
            child_run, spawned_key = receipt["runId"], receipt["childSessionKey"]
            await kill9(proc)
        async with gateway_process(state, config) as (url, proc), client(url) as (c, _):
            announce = announce_key(spawned_key, child_run)
            waited = await c.request("agent.wait", {"runId": announce, "timeoutMs": 20_000})
            child = await c.request("agent.wait", {"runId": child_run, "timeoutMs": 1000})
            history = await c.request("chat.history", {"sessionKey": main})
    assert waited["status"] == "ok", waited
    [message] = [  # its prompt is not kept: the announce's reply quotes it
        m for m in history["messages"] if m["role"] == "assistant" and ANNOUNCED in str(m)
    ]
    text = str(message["content"])
    assert "task: job" in text and f"session_key: {spawned_key}" in text
    if mode == "fail":
        assert child["status"] == "error" and child["error"] == INTERRUPTED
        assert f"status: failed: {INTERRUPTED}" in text
    else:
        assert child["status"] == "ok"
        assert "status: completed; ready for parent review" in text and "finished" in text


async def test_sessions_send_modes_refuse_as_openclaws(tmp_path: Path) -> None:
    """`notify`, `steer` and `resume` need an existing target (OpenClaw's refusal for a
    configured agent's main session; any other missing key is not found); `resume` needs a
    child of the caller paused by `sessions_yield`, and does not wait (a throw)."""
    config = local_config(agents__list=[{"id": "main", "default": True}, {"id": "ops"}])
    watch = Watch()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {"message": "hi", "sessionKey": "agent:main:peer", "idempotencyKey": "peer"},
                    expect_final=True,
                )
                sends: list[dict[str, Any]] = [
                    {"sessionKey": "agent:ops:main", "message": "x", "mode": "notify"},
                    {"sessionKey": "agent:ops:main", "message": "x", "mode": "steer"},
                    {"sessionKey": "agent:main:gone", "message": "x", "mode": "steer"},
                    {"sessionKey": "agent:main:peer", "message": "x", "mode": "resume"},
                    {"sessionKey": "peer", "message": "x", "mode": "resume", "timeoutSeconds": 5},
                ]
                msg = " ".join(directive("sessions_send", s) for s in sends)
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "modes"}, expect_final=True
                )
    notified, steered, gone, resumed, waited = tool_results(watch.events, "modes")
    missing = (
        "Cannot notify, steer, or resume a missing session. Use mode=followup to start a new turn."
    )
    for result in (notified, steered):
        assert result["isError"] and details(result) == {
            "runId": details(result)["runId"],
            "status": "error",
            "error": missing,
            "sessionKey": "agent:ops:main",
        }
    assert gone["isError"] and details(gone)["error"] == "No session found: agent:main:gone"
    assert resumed["isError"] and details(resumed) == {
        "status": "error",
        "runId": details(resumed)["runId"],
        "sessionKey": "agent:main:peer",
        "error": "Task resume requires a currently paused native child; inspect subagents first.",
    }
    assert thrown(waited["result"] | {"isError": waited["isError"]}, "sessions_send") == (
        "mode=resume returns admission only; omit watch and timeoutSeconds or set "
        "timeoutSeconds=0. The task owner delivers completion."
    )
    assert [p["runId"] for p in watch.ends("agent:main:peer")] == ["peer"]  # nothing ran


async def test_a_child_that_yields_for_its_own_child_is_announced_after_its_continuation(
    tmp_path: Path,
) -> None:
    """An orchestrator's yield is not its result: its grandchild's announce continues it,
    and the parent hears of it once, with that continuation's reply."""
    config = local_config(agents__defaults__subagents={"maxSpawnDepth": 2})
    watch = Watch()
    main = "agent:main:main"
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                orchestrate = " ".join(
                    [  # the grandchild ends after the child's yield
                        spawn("[[delay:500]] [[reply:deep-result]]", label="deep"),
                        directive("sessions_yield", {}),
                    ]
                )
                await client.request(
                    "agent",
                    {"message": spawn(orchestrate, label="boss"), "idempotencyKey": "p1"},
                    expect_final=True,
                )
                receipt = details(tool_results(watch.events, "p1")[0])
                child, task = receipt["childSessionKey"], receipt["runId"]
                ends = await watch.ended(main, 2)  # p1, then the one announce
                child_ends = await watch.ended(child, 2)  # its yielded run, its continuation
                await client.request(
                    "agent", {"message": "after", "idempotencyKey": "p2"}, expect_final=True
                )
    [announce] = [p for p in ends if p["runId"] != "p1"]
    assert announce["runId"] == announce_key(child, task)
    continuation = child_ends[1]["runId"]  # its yield's batch: the one grandchild
    assert continuation.startswith(f"announce:requester-settle:main:{child}:")
    text = assistant_text(watch, announce["runId"])
    assert "task: boss" in text and "deep-result" in text  # the continuation's reply
    assert [p["runId"] for p in watch.ends(main)] == ["p1", announce["runId"], "p2"]


async def test_a_restart_announces_a_child_that_ended_before_its_announce_was_handed_over(
    tmp_path: Path,
) -> None:
    """The journal has the child's end and no announce of it (the process stopped in
    between): the restart announces it; a paused child's end and a stopped child's are
    not announced."""
    main = "agent:main:main"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=Watch()) as client:
                await client.request(
                    "agent", {"message": "hi", "idempotencyKey": "p1"}, expect_final=True
                )
                link = SpawnLink(parentKey=main, parentAgent="main", label="late")
                ended = [
                    restored("done", "ok", {"payloads": [{"text": "late-result"}], "meta": {}}),
                    restored("paused", "ok", {"payloads": [], "meta": {"yielded": True}}),
                    restored("stopped", "aborted", None, abort_reason="stop"),
                ]
                owed = adopt_subagents(
                    gw.supervisor, [RecoveredRun("agent", r, 1.0, spawn=link) for r in ended]
                )
                waited = await client.request(
                    "agent.wait",
                    {"runId": announce_key(ended[0].session_key, "done"), "timeoutMs": 10_000},
                )
                history = await client.request("chat.history", {"sessionKey": main})
    assert owed == 2  # the ended one, and the paused one (it waits for its continuation)
    assert waited["status"] == "ok"
    results = [  # its prompt is not kept: the announce's reply quotes it
        m for m in history["messages"] if m["role"] == "assistant" and ANNOUNCED in str(m)
    ]
    assert len(results) == 1 and "late-result" in str(results[0])


@pytest.mark.parametrize("form", ["openclaw", "before-openclaw-keys"])
async def test_a_restart_knows_an_announce_the_journal_has_was_handed_over(
    tmp_path: Path, form: str
) -> None:
    """An announce run in the journal (under OpenClaw's key, or `<task>:announce` as
    journals written before it name it) means the child's end was told: not owed again,
    as the end of a child with no announce in the journal is."""
    with trio.fail_after(30):
        async with running_gateway(tmp_path) as gw:
            link = SpawnLink(parentKey="agent:main:gone", parentAgent="main", label="told")
            told = restored("told", "ok", {"payloads": [{"text": "r"}], "meta": {}})
            owed = restored("owed", "ok", {"payloads": [{"text": "r"}], "meta": {}})
            key = announce_key(told.session_key, "told") if form == "openclaw" else "told:announce"
            announce = restored(key, "ok", {"payloads": [], "meta": {}}, started_at=now_ms())
            recovered = [
                RecoveredRun("agent", told, 1.0, spawn=link),
                RecoveredRun("agent", owed, 1.0, spawn=link),
                RecoveredRun("agent", announce, 1.0),
            ]
            assert adopt_subagents(gw.supervisor, recovered) == 1  # the one without an announce


def restored(run_id: str, status: Literal["ok", "aborted"], final: Any, **more: Any) -> RunRecord:
    record = RunRecord(
        run_id=run_id,
        session_key=f"agent:main:subagent:{run_id}",
        session_id=run_id,
        agent_id="main",
        accepted_at=now_ms(),
        status=status,
        final=final,
        ended_at=now_ms(),
        aborted=status == "aborted",
        restored=True,
        **more,
    )
    record.done.set()
    return record


async def test_sessions_send_notify_starts_no_run_and_the_next_turn_reads_it(
    tmp_path: Path,
) -> None:
    watch = Watch()
    peer = "agent:main:peer"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {"message": "hi", "sessionKey": peer, "idempotencyKey": "peer"},
                    expect_final=True,
                )
                note = {"sessionKey": peer, "message": "note-this", "mode": "notify"}
                await client.request(
                    "agent",
                    {"message": directive("sessions_send", note), "idempotencyKey": "n"},
                    expect_final=True,
                )
                await client.request(
                    "agent",
                    {"message": "next", "sessionKey": peer, "idempotencyKey": "peer2"},
                    expect_final=True,
                )
                history = await client.request("chat.history", {"sessionKey": peer})
    [sent] = tool_results(watch.events, "n")
    queued = details(sent)
    assert queued["status"] == "queued" and queued["runStarted"] is False
    assert queued["durability"] == "process" and queued["sessionKey"] == peer
    assert queued["notificationId"]
    assert [p["runId"] for p in watch.ends(peer)] == ["peer", "peer2"]  # notify ran nothing
    text = str([m["content"] for m in history["messages"] if m["role"] == "user"][-1])
    assert "[Inter-session message] sourceSession=agent:main:main sourceTool=sessions_send" in text
    assert "note-this" in text
