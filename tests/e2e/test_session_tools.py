"""OpenClaw's session tools over a real gateway, driven by the `local` model's `[[tool:...]]`
directives, checked as a client that asked for tool events sees them: `sessions_send` runs
an existing session and returns its reply inline (a missing target is a tool error),
`sessions_list`, `sessions_history`, `session_status` and `agents_list` answer in OpenClaw's
shapes, and `sessions_spawn` runs a child in the `subagent` lane whose result comes back to
the parent as a separate announce run, within the depth and concurrency limits."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from runtime.model import ConfigError
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, run_events, terminal_events


def directive(name: str, args: dict[str, Any]) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


def tool_results(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [
        p["data"]
        for p in run_events(events, run_id, "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] != "tool_call"
    ]


def details(result: dict[str, Any]) -> dict[str, Any]:
    """The payload a session tool answered (its `details`, as its text's JSON)."""
    payload = result["result"]["details"]
    assert json.loads(result["result"]["content"][0]["text"]) == payload
    return dict(payload)


class Watch:
    """Records events; `ended(key, n)` waits until `n` runs of session `key` have ended."""

    def __init__(self) -> None:
        self.events: Events = []
        self.changed = trio.Event()

    def __call__(self, event: str, payload: Any, seq: int | None) -> None:
        self.events.append((event, payload, seq))
        self.changed.set()
        self.changed = trio.Event()

    def events_of(self, stream: str) -> list[dict[str, Any]]:
        return [p for (e, p, _s) in self.events if e == "agent" and p["stream"] == stream]

    def ends(self, key: str) -> list[dict[str, Any]]:
        return [
            p
            for (e, p, _s) in self.events
            if e == "agent"
            and p.get("sessionKey") == key
            and p["stream"] == "lifecycle"
            and p["data"]["phase"] in ("end", "error")
        ]

    def spawned(self, run_id: str) -> list[dict[str, Any]]:
        """The details of run `run_id`'s `sessions_spawn` results (its receipts), in order."""
        return [
            d["result"]["details"]
            for d in (p["data"] for p in self.events_of("tool") if p["runId"] == run_id)
            if d["phase"] == "result" and d["name"] == "sessions_spawn"
        ]

    async def ended(self, key: str, count: int) -> list[dict[str, Any]]:
        while len(self.ends(key)) < count:
            await self.changed.wait()
        return self.ends(key)


async def test_sessions_send_returns_the_reply_inline_and_a_missing_target_is_an_error(
    tmp_path: Path,
) -> None:
    watch = Watch()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {
                        "message": "[[reply:ready]]",
                        "sessionKey": "agent:main:other",
                        "idempotencyKey": "other-1",
                    },
                    expect_final=True,
                )
                msg = " ".join(
                    [
                        directive(
                            "sessions_send",
                            {"sessionKey": "agent:main:other", "message": "[[reply:pong]]"},
                        ),
                        directive(
                            "sessions_send", {"sessionKey": "agent:main:nope", "message": "hi"}
                        ),
                        directive("sessions_list", {}),
                        directive("sessions_history", {"sessionKey": "agent:main:other"}),
                        directive("session_status", {"sessionKey": "agent:main:other"}),
                        directive("agents_list", {}),
                    ]
                )
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "send-1"}, expect_final=True
                )
    sent, missing, listed, history, status, agents = tool_results(watch.events, "send-1")
    assert [r["name"] for r in (sent, missing, listed, history, status, agents)] == [
        "sessions_send",
        "sessions_send",
        "sessions_list",
        "sessions_history",
        "session_status",
        "agents_list",
    ]
    reply = details(sent)
    assert not sent["isError"]
    assert reply["status"] == "ok" and reply["reply"] == "pong"
    assert reply["sessionKey"] == "agent:main:other"
    assert reply["delivery"] == {"status": "skipped", "mode": "announce"}
    # The target's run was its own, on its session: its reply there too.
    [target_end] = [p for p in watch.ends("agent:main:other") if p["runId"] == reply["runId"]]
    assert target_end["data"]["phase"] == "end"
    assert missing["isError"] and details(missing)["status"] == "error"
    assert details(missing)["error"] == "No session found: agent:main:nope"
    rows = {row["key"]: row for row in details(listed)["sessions"]}
    assert {"agent:main:main", "agent:main:other"} <= set(rows)
    assert rows["agent:main:other"]["kind"] == "other"
    assert rows["agent:main:main"]["kind"] == "main"
    assert details(listed)["limitApplied"] == 100
    texts = [
        message["content"]
        if isinstance(message["content"], str)
        else " ".join(b["text"] for b in message["content"] if b["type"] == "text")
        for message in details(history)["messages"]
    ]
    assert texts[-2:] == ["[[reply:pong]]", "pong"]
    assert details(history)["droppedMessages"] is False
    card = status["result"]["details"]
    assert card["ok"] is True and card["sessionKey"] == "agent:main:other"
    text = status["result"]["content"][0]["text"]
    assert text == card["statusText"] and text.startswith("🦞 clawlane ")
    assert "\n\n🧠 Model: local/" in text and "\n🧮 Tokens: " in text  # OpenClaw's sections
    assert "\n📚 Context: " in text and "\n\n🧵 Session: agent:main:other • " in text
    listing = details(agents)
    assert listing["requester"] == "main" and listing["agents"][0]["id"] == "main"


async def test_sessions_spawn_runs_a_child_and_announces_its_result_to_the_parent(
    tmp_path: Path,
) -> None:
    watch = Watch()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                msg = directive(
                    # ends after its parent's turn: one ending during it would be steered in
                    "sessions_spawn",
                    {"task": "[[delay:500]] [[reply:child-done]]", "label": "research"},
                )
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "spawn-1"}, expect_final=True
                )
                [spawned] = tool_results(watch.events, "spawn-1")
                receipt = details(spawned)
                child_key = receipt["childSessionKey"]
                ends = await watch.ended("agent:main:main", 2)  # the spawning run, the announce
                listed = await client.request("sessions.list", {})
    assert receipt["status"] == "accepted" and child_key.startswith("agent:main:subagent:")
    [child_end] = terminal_events(watch.events, receipt["runId"])
    assert child_end["sessionKey"] == child_key and child_end["data"]["phase"] == "end"
    announce = [p for p in ends if p["runId"] != "spawn-1"]
    assert len(announce) == 1 and announce[0]["data"]["phase"] == "end"
    text = " ".join(
        p["data"].get("delta", "")
        for p in run_events(watch.events, announce[0]["runId"], "assistant")
    )
    assert "child-done" in text and "research" in text
    rows = {row["key"]: row for row in listed["sessions"]}
    child = rows[child_key]
    assert child["spawnedBy"] == "agent:main:main"
    assert child["parentSessionKey"] == "agent:main:main"
    assert child["spawnDepth"] == 1 and child["label"] == "research"
    assert child["subagentRole"] == "orchestrator"
    assert "spawnedBy" not in rows["agent:main:main"]
    assert rows["agent:main:main"]["childSessions"] == [child_key]
    assert receipt["resolvedModel"].startswith("local/") and receipt["modelApplied"] is True
    assert "completion message" in receipt["note"]


def prompt_spy() -> tuple[dict[str, str], Callable[[Any], None]]:
    """An `llm_input` hook recording the prompt of each run by its id, and what it records."""
    prompts: dict[str, str] = {}

    def spy(event: Any) -> None:
        prompts[event.runId] = event.prompt

    return prompts, spy


def _dumps(value: Any) -> str:
    """JSON with `]` and `}` escaped inside strings (the structure keeps its own)."""
    if isinstance(value, str):
        return json.dumps(value).replace("]", "\\u005d").replace("}", "\\u007d")
    if isinstance(value, list):
        return "[" + ", ".join(_dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_dumps(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def spawn(task: str, **more: Any) -> str:
    """A `sessions_spawn` directive whose task may itself hold directives."""
    return f"[[tool:sessions_spawn {_dumps({'task': task, **more})}]]"


async def test_spawn_limits_refuse_with_a_tool_error(tmp_path: Path) -> None:
    config = local_config(agents__defaults__subagents={"maxChildrenPerAgent": 1})
    watch = Watch()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                msg = " ".join([spawn("[[stall]]", label="stalled"), spawn("second")])
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "limits"}, expect_final=True
                )
                first, second = tool_results(watch.events, "limits")
                child_key = details(first)["childSessionKey"]
                await client.request("chat.abort", {"sessionKey": child_key})
                ends = await watch.ended("agent:main:main", 2)  # then the announce
    assert details(first)["status"] == "accepted"
    assert second["isError"] and details(second)["status"] == "forbidden"
    assert "max active children for this session (1/1" in details(second)["error"]
    assert "agents.defaults.subagents.maxChildrenPerAgent" in details(second)["error"]
    [announce] = [p for p in ends if p["runId"] != "limits"]
    assert announce["data"]["phase"] == "end"


async def test_subagents_are_offered_fewer_tools_and_a_leaf_none_to_orchestrate(
    tmp_path: Path,
) -> None:
    config = local_config(agents__defaults__subagents={"maxSpawnDepth": 2})
    watch = Watch()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                leaf_task = " ".join([spawn("grandchild"), directive("sessions_list", {})])
                child_task = " ".join(
                    [
                        directive("sessions_send", {"sessionKey": "main", "message": "hi"}),
                        directive("sessions_list", {}),
                        spawn(leaf_task),
                    ]
                )
                await client.request(
                    "agent",
                    {"message": spawn(child_task), "idempotencyKey": "depth"},
                    expect_final=True,
                )
                [spawned] = tool_results(watch.events, "depth")
                await watch.ended("agent:main:main", 2)  # the run, then its child's announce
                # The child's run, then its own child's (the leaf's) announce.
                await watch.ended(details(spawned)["childSessionKey"], 2)
    child_run = details(spawned)["runId"]
    # A subagent's tool events go to who watches it; its reply quotes each call's result.
    reply = run_events(watch.events, child_run, "assistant")[-1]["data"]["text"]
    assert reply.startswith("Tool results: sessions_send failed: ")
    assert "not available" in reply.split("; sessions_list")[0]  # never offered to subagents
    assert "sessions_list: {" in reply and '"count"' in reply  # an orchestrator lists
    assert "sessions_spawn: {" in reply and '"accepted"' in reply  # and spawns, to depth 2
    leaf = [
        p["data"]["text"]
        for p in watch.events_of("assistant")
        if p["sessionKey"].count(":subagent:") == 1
        and p["sessionKey"] != details(spawned)["childSessionKey"]
        and p["data"]["text"].startswith("Tool results: ")
    ]
    [leaf_reply] = leaf[-1:]
    assert leaf_reply.count("not available") == 2, leaf_reply  # a leaf: no spawn, no list


async def test_subagents_lists_and_cancels_agents_wait_collects_and_yield_ends_the_turn(
    tmp_path: Path,
) -> None:
    watch = Watch()
    main = "agent:main:main"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                first = " ".join(
                    [
                        spawn("[[stall]]", label="slow"),
                        spawn("[[delay:500]] [[reply:quick]]", label="fast"),  # after the yield
                        directive("subagents", {}),
                        directive("sessions_yield", {"acknowledgment": "on it"}),
                        directive("session_status", {}),  # never called: the turn ended
                    ]
                )
                answer = await client.request(
                    "agent", {"message": first, "idempotencyKey": "p1"}, expect_final=True
                )
                slow, fast, listed, yielded = tool_results(watch.events, "p1")
                slow_id, fast_id = details(slow)["runId"], details(fast)["runId"]
                await watch.ended(details(fast)["childSessionKey"], 1)  # told with slow's end
                second = " ".join(
                    [
                        directive("agents_wait", {"ids": [fast_id, "nope"]}),
                        directive("sessions_yield", {}),  # p2 spawned nothing: slow is p1's
                        directive("subagents", {"action": "cancel", "taskId": slow_id}),
                        directive("subagents", {"action": "wait", "taskIds": [slow_id]}),
                    ]
                )
                await client.request(
                    "agent", {"message": second, "idempotencyKey": "p2"}, expect_final=True
                )
                waited, pending, cancelled, settled = tool_results(watch.events, "p2")
                # p1, p2, and the continuation of p1's yield: both children, once slow ended
                [_, _, batch] = await watch.ended(main, 3)
                await client.request(
                    "agent",
                    {
                        "message": directive("sessions_yield", {}),
                        "sessionKey": "agent:main:solo",
                        "idempotencyKey": "p3",
                    },
                    expect_final=True,
                )
                [no_yield] = tool_results(watch.events, "p3")
                history = await client.request("chat.history", {"sessionKey": main})
                stored = await client.request("sessions.get", {"key": main})
    # The yield ended p1's turn after its result: no later model turn, no reply text.
    assert details(yielded) == {"status": "yielded", "acknowledgment": "on it"}
    assert not yielded["isError"]
    assert run_events(watch.events, "p1", "assistant") == []
    [end] = terminal_events(watch.events, "p1")
    assert end["data"]["phase"] == "end" and end["data"]["aborted"] is False
    meta = answer["result"]["meta"]
    assert meta["yielded"] is True and meta["yieldAcknowledgment"] == "on it"
    assert meta["stopReason"] == "end_turn"  # OpenClaw's for a yielded turn
    [final] = [p for (e, p, _s) in watch.events if e == "chat" and p["runId"] == "p1"][-1:]
    assert final["state"] == "final" and final["yielded"] is True
    # The yield's private context is a hidden message (tests/e2e/test_yield_handoff.py):
    # the history shows the result alone.
    results = [m for m in history["messages"] if m.get("toolName") == "sessions_yield"]
    texts = [b["text"] for b in results[0]["content"]]
    assert [json.loads(t) for t in texts] == [{"status": "yielded", "acknowledgment": "on it"}]
    listing = details(listed)
    assert listing["action"] == "list" and listing["total"] == 2
    assert {t["label"] for t in listing["tasks"]} == {"slow", "fast"}
    assert {t["taskId"] for t in listing["tasks"]} == {slow_id, fast_id}
    collected = details(waited)
    [done] = collected["completed"]
    assert done["runId"] == fast_id and done["status"] == "done" and done["result"] == "quick"
    assert collected["pending"] == [] and collected["errors"] == [
        {"runId": "nope", "error": "not_found"}
    ]
    # A later turn does not own p1's children: OpenClaw's already_pending, turn goes on.
    owed = details(pending)
    assert owed["status"] == "already_pending" and not pending["isError"]
    running, completing = owed["pendingChildren"]  # fast waits for slow: one batch
    assert running["runId"] == slow_id and running["label"] == "slow"
    assert running["state"] == "running" and running["wakeArmed"] is True
    assert completing["runId"] == fast_id and completing["state"] == "completing"
    assert owed["message"].startswith("An earlier turn of this session already yielded for 2 ")
    assert batch["runId"].startswith("announce:requester-settle:main:agent:main:main:")
    [told] = [  # kept hidden: in the transcript, in no history (test_subagent_completions)
        json.dumps(m["content"])
        for m in stored["messages"]
        if m["role"] == "user" and "Child completion results" in json.dumps(m["content"])
    ]
    assert not [
        m
        for m in history["messages"]
        if m["role"] == "user" and "Child completion results" in json.dumps(m["content"])
    ]
    assert "status: ok" in told and "quick" in told and "status: cancelled" in told
    assert details(cancelled) == {
        "status": "cancelled",
        "taskId": slow_id,
        "found": True,
        "cancelled": True,
    }
    [task] = details(settled)["tasks"]
    assert task["status"] == "cancelled" and details(settled)["completed"] == [slow_id]
    assert details(settled)["reason"] == "completed" and details(settled)["attention"] == []
    assert no_yield["isError"] and "No pending child completion" in details(no_yield)["error"]


async def test_visibility_self_keeps_a_session_to_itself(tmp_path: Path) -> None:
    config = local_config(tools__sessions={"visibility": "self"})
    watch = Watch()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {"message": "hi", "sessionKey": "agent:main:other", "idempotencyKey": "o"},
                    expect_final=True,
                )
                msg = " ".join(
                    [
                        directive("sessions_list", {}),
                        directive("sessions_history", {"sessionKey": "agent:main:other"}),
                        directive("sessions_send", {"sessionKey": "other", "message": "hi"}),
                    ]
                )
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "self"}, expect_final=True
                )
    listed, history, sent = tool_results(watch.events, "self")
    assert [row["key"] for row in details(listed)["sessions"]] == ["agent:main:main"]
    assert history["isError"] and details(history)["status"] == "forbidden"
    assert details(history)["error"] == (
        "Session history visibility is restricted to the current session "
        "(tools.sessions.visibility=self)."
    )
    assert sent["isError"] and details(sent)["status"] == "forbidden"
    assert [p["runId"] for p in watch.ends("agent:main:other")] == ["o"]  # nothing sent


async def test_send_without_waiting_a_send_timing_out_and_a_quiet_deleted_child(
    tmp_path: Path,
) -> None:
    watch = Watch()
    main = "agent:main:main"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                for key in ("agent:main:a", "agent:main:b"):
                    await client.request(
                        "agent",
                        {"message": "[[reply:up]]", "sessionKey": key, "idempotencyKey": key},
                        expect_final=True,
                    )
                msg = " ".join(
                    [
                        directive(
                            "sessions_send",
                            {"sessionKey": "a", "message": "[[reply:later]]", "timeoutSeconds": 0},
                        ),
                        directive(
                            "sessions_send",
                            {"sessionKey": "b", "message": "[[stall]]", "timeoutSeconds": 1},
                        ),
                        spawn("[[reply:quiet]]", expectsCompletionMessage=False, cleanup="delete"),
                    ]
                )
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "m"}, expect_final=True
                )
                queued, late, quiet = tool_results(watch.events, "m")
                await watch.ended("agent:main:a", 2)  # the queued send ran
                child_run = details(quiet)["runId"]
                while not terminal_events(watch.events, child_run):
                    await watch.changed.wait()
                await client.request("chat.abort", {"sessionKey": "agent:main:b"})
                await watch.ended("agent:main:b", 2)
                gone = details(quiet)["childSessionKey"]
                listed = await client.request("sessions.list", {})
                while gone in {row["key"] for row in listed["sessions"]}:  # deleted once ended
                    listed = await client.request("sessions.list", {})
                history = await client.request("chat.history", {"sessionKey": main})
    assert details(queued)["status"] == "accepted" and not queued["isError"]
    assert details(queued)["targetDisposition"] == "queued"
    # The wait ran out while the run went on: accepted, as OpenClaw answers it.
    assert not late["isError"] and details(late) == {
        "runId": details(late)["runId"],
        "status": "accepted",
        "sessionKey": "agent:main:b",
        "targetDisposition": "queued",
        "delivery": {"status": "skipped", "mode": "announce"},
    }
    assert details(quiet)["status"] == "accepted"
    assert details(quiet)["expectsCompletionMessage"] is False
    # No announce run for the quiet child, and its session is gone (cleanup delete).
    assert [p["runId"] for p in watch.ends(main)] == ["m"]
    keys = {row["key"] for row in listed["sessions"]}
    assert {"agent:main:a", "agent:main:b", main} <= keys
    assert not any("[Internal task completion event]" in json.dumps(m) for m in history["messages"])


async def test_a_deleted_parent_is_not_brought_back_by_its_childs_announce(
    tmp_path: Path,
) -> None:
    watch = Watch()
    parent = "agent:main:boss"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent",
                    {"message": spawn("[[stall]]"), "sessionKey": parent, "idempotencyKey": "b"},
                    expect_final=True,
                )
                [spawned] = tool_results(watch.events, "b")
                child_run = details(spawned)["runId"]
                await client.request("sessions.delete", {"key": parent})
                await client.request(
                    "chat.abort", {"sessionKey": details(spawned)["childSessionKey"]}
                )
                while not terminal_events(watch.events, child_run):
                    await watch.changed.wait()
                # A whole run elsewhere: an announce due by then would have been queued.
                await client.request(
                    "agent",
                    {"message": "hi", "sessionKey": "agent:main:x", "idempotencyKey": "x"},
                    expect_final=True,
                )
                listed = await client.request("sessions.list", {})
    assert parent not in {row["key"] for row in listed["sessions"]}
    assert [p["runId"] for p in watch.ends(parent)] == ["b"]


async def test_tools_subagents_tools_deny_takes_more_from_subagents(tmp_path: Path) -> None:
    config = local_config(tools__subagents={"tools": {"deny": ["sessions_list"]}})
    watch = Watch()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                task = " ".join([directive("sessions_list", {}), directive("ls", {})])
                await client.request(
                    "agent",
                    {
                        "message": f"{spawn(task)} {directive('sessions_list', {})}",
                        "idempotencyKey": "deny",
                    },
                    expect_final=True,
                )
                spawned, listed = tool_results(watch.events, "deny")
                await watch.ended("agent:main:main", 2)
    assert not listed["isError"]  # the parent is not a subagent
    reply = run_events(watch.events, details(spawned)["runId"], "assistant")[-1]["data"]["text"]
    first, second = reply.removeprefix("Tool results: ").split("; ls")
    assert first.startswith("sessions_list failed") and "not available" in first
    assert "failed" not in second


def test_tools_subagents_tools_names_only_known_tools() -> None:
    try:
        local_config(tools__subagents={"tools": {"deny": ["group:nope"]}})
    except ConfigError as exc:
        assert exc.path == "tools.subagents.tools.deny[0]"
    else:
        raise AssertionError("an unknown group was accepted")


async def test_spawn_attachments_are_refused_as_openclaw_refuses_them_when_disabled(
    tmp_path: Path,
) -> None:
    attachments = {"enabled": False, "maxFiles": 5}
    config = local_config(tools__sessions_spawn={"attachments": attachments})
    watch = Watch()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                files = [{"name": "notes.txt", "content": "hello"}]
                await client.request(
                    "agent",
                    {"message": spawn("work", attachments=files), "idempotencyKey": "att"},
                    expect_final=True,
                )
    [refused] = tool_results(watch.events, "att")
    assert refused["isError"] and details(refused) == {
        "status": "forbidden",
        "error": "attachments are disabled for sessions_spawn (enable "
        "tools.sessions_spawn.attachments.enabled)",
    }
