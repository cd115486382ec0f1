"""Session lanes in full: chat methods, queue modes, session methods, abort paths, resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, run_events, terminal_events
from transports import GatewayRequestError


class Watch:
    """Events as they arrive, with a way to wait for one."""

    def __init__(self) -> None:
        self.events: Events = []
        self._changed = trio.Event()

    def __call__(self, event: str, payload: Any, seq: int | None) -> None:
        self.events.append((event, payload, seq))
        self._changed.set()
        self._changed = trio.Event()

    async def until(self, predicate: Any) -> Any:
        while True:
            for e, p, _s in self.events:
                if predicate(e, p):
                    return p
            await self._changed.wait()

    def chat(self, run_id: str) -> list[dict[str, Any]]:
        return [p for (e, p, _s) in self.events if e == "chat" and p["runId"] == run_id]

    async def ended(self, run_id: str) -> Any:
        """The run's terminal lifecycle event, once its terminal chat event has arrived too."""
        end = await self.until(
            lambda e, p: (
                e == "agent" and p["runId"] == run_id and p["data"].get("phase") in ("end", "error")
            )
        )
        await self.until(
            lambda e, p: (
                e == "chat" and p["runId"] == run_id and p["state"] in ("final", "aborted", "error")
            )
        )
        return end

    def started(self, run_id: str, stream: str = "assistant") -> Any:
        return self.until(
            lambda e, p: e == "agent" and p["runId"] == run_id and p["stream"] == stream
        )


def chat_config(**kw: Any) -> Any:
    return local_config(messages__queue__debounceMs=0, **kw)


async def test_chat_send_acks_started_and_streams_chat_events(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config()) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            ack = await client.request(
                "chat.send",
                {
                    "sessionKey": "main",
                    "message": "[[deltas:3]] [[delay:40]] hi there",
                    "idempotencyKey": "c1",
                },
            )
            assert ack == {"runId": "c1", "status": "started"}
            again = await client.request(
                "chat.send", {"sessionKey": "main", "message": "x", "idempotencyKey": "c1"}
            )
            assert again == {"runId": "c1", "status": "in_flight"}
            await w.ended("c1")
            done = await client.request(
                "chat.send", {"sessionKey": "main", "message": "x", "idempotencyKey": "c1"}
            )
            assert done == {"runId": "c1", "status": "ok"}
            with pytest.raises(GatewayRequestError, match="message or attachment required"):
                await client.request(
                    "chat.send", {"sessionKey": "main", "message": "  ", "idempotencyKey": "c2"}
                )
            with pytest.raises(GatewayRequestError, match="null bytes"):
                await client.request(
                    "chat.send", {"sessionKey": "main", "message": "a\x00b", "idempotencyKey": "c3"}
                )
    chat = w.chat("c1")
    assert chat[-1]["state"] == "final"
    assert chat[-1]["message"]["content"][0]["text"] == "You said: hi there"
    assert all(c["seq"] >= 1 for c in chat)


async def test_stop_phrase_aborts_the_sessions_runs(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config()) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            await client.request(
                "chat.send",
                {
                    "sessionKey": "main",
                    "message": "[[stall:1]] long answer here",
                    "idempotencyKey": "s1",
                },
            )
            await w.started("s1")
            res = await client.request(
                "chat.send", {"sessionKey": "main", "message": "stop", "idempotencyKey": "s2"}
            )
            assert res == {"ok": True, "aborted": True, "runIds": ["s1"]}
            end = await w.ended("s1")
            assert end["data"]["aborted"] is True and end["data"]["stopReason"] == "stop"
            history = await client.request("chat.history", {"sessionKey": "main"})
    aborted = [c for c in w.chat("s1") if c["state"] == "aborted"]
    assert aborted and aborted[0]["stopReason"] == "stop"
    assert aborted[0]["message"]["content"][0]["text"].startswith("You")
    # The partial text is persisted.
    assert history["messages"][-1]["role"] == "assistant"
    assert history["messages"][-1]["stopReason"] == "aborted"


async def test_chat_abort_takes_queued_turns_first_then_the_active_run(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config(messages__queue__mode="followup")) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            await client.request(
                "chat.send",
                {"sessionKey": "q", "message": "[[stall:1]] a b", "idempotencyKey": "a1"},
            )
            await w.started("a1")
            await client.request(
                "chat.send", {"sessionKey": "q", "message": "second", "idempotencyKey": "a2"}
            )
            await client.request(
                "chat.send",
                {"sessionKey": "other", "message": "[[stall:1]] zz", "idempotencyKey": "o1"},
            )
            with pytest.raises(GatewayRequestError, match="runId does not match sessionKey"):
                await client.request("chat.abort", {"sessionKey": "q", "runId": "o1"})
            res = await client.request("chat.abort", {"sessionKey": "q", "runId": "a2"})
            assert res == {"ok": True, "aborted": True, "runIds": ["a2"]}
            res = await client.request("chat.abort", {"sessionKey": "q"})
            assert res == {"ok": True, "aborted": True, "runIds": ["a1"]}
            await w.ended("a1")
            await client.request("chat.abort", {"sessionKey": "other"})
            await w.ended("o1")
    for run in ("a1", "a2", "o1"):
        assert len(terminal_events(w.events, run)) == 1
    assert [d["data"]["phase"] for d in run_events(w.events, "a2", "lifecycle")] == ["start", "end"]


async def test_chat_history_limits_and_hides_silent_replies(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, chat_config()) as gw, open_client(gw) as client:
        with trio.fail_after(15):
            for i, msg in enumerate(["one", "[[reply:NO_REPLY]]", "three " + "x" * 100]):
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": f"h{i}"}, expect_final=True
                )
            full = await client.request("chat.history", {"sessionKey": "main"})
            roles = [m["role"] for m in full["messages"]]
            assert roles == [
                "user",
                "assistant",
                "user",
                "user",
                "assistant",
            ]  # NO_REPLY row dropped
            assert full["sessionId"] and full["sessionKey"] == "agent:main:main"
            limited = await client.request(
                "chat.history", {"sessionKey": "main", "limit": 2, "maxChars": 20}
            )
            assert len(limited["messages"]) == 2
            assert "truncated" in limited["messages"][-1]["content"][0]["text"]
            with pytest.raises(GatewayRequestError):
                await client.request("chat.history", {"sessionKey": "main", "limit": 0})


async def test_chat_inject_appends_and_announces(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config()) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            res = await client.request(
                "chat.inject", {"sessionKey": "main", "message": "Note from ops", "label": "ops"}
            )
            assert res["ok"] is True and res["messageId"]
            event = await w.until(
                lambda e, p: e == "chat" and p["runId"] == f"inject-{res['messageId']}"
            )
            assert event["state"] == "final" and event["seq"] == 0
            history = await client.request("chat.history", {"sessionKey": "main"})
            assert history["messages"][-1]["content"][0]["text"] == "Note from ops"


async def test_followup_mode_runs_each_message_as_its_own_turn(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config(messages__queue__mode="followup")) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            await client.request(
                "chat.send",
                {
                    "sessionKey": "f",
                    "message": "[[deltas:2]] [[delay:30]] first",
                    "idempotencyKey": "f1",
                },
            )
            await w.started("f1")
            for i in (2, 3):
                await client.request(
                    "chat.send",
                    {"sessionKey": "f", "message": f"msg{i}", "idempotencyKey": f"f{i}"},
                )
            await w.ended("f3")
    texts = [w.chat(f"f{i}")[-1]["message"]["content"][0]["text"] for i in (1, 2, 3)]
    assert texts == ["You said: first", "You said: msg2", "You said: msg3"]


async def test_collect_mode_coalesces_queued_messages_into_one_turn(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config(messages__queue__mode="collect")) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            await client.request(
                "chat.send",
                {
                    "sessionKey": "c",
                    "message": "[[deltas:2]] [[delay:30]] first",
                    "idempotencyKey": "k1",
                },
            )
            await w.started("k1")
            for i in (2, 3, 4):
                await client.request(
                    "chat.send",
                    {"sessionKey": "c", "message": f"item{i}", "idempotencyKey": f"k{i}"},
                )
            await w.ended("k4")
    text = w.chat("k2")[-1]["message"]["content"][0]["text"]
    assert "[Queued messages while agent was busy]" in text
    assert "Queued #1 item2" in text and "Queued #3 item4" in text
    merged = run_events(w.events, "k3", "lifecycle")
    assert merged[-1]["data"]["mergedInto"] == "k2"
    assert len(terminal_events(w.events, "k4")) == 1


async def test_steer_mode_injects_into_the_active_run(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config()) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            await client.request(
                "chat.send",
                {
                    "sessionKey": "st",
                    "message": "[[deltas:4]] [[delay:50]] one two three four",
                    "idempotencyKey": "t1",
                },
            )
            await w.started("t1")
            await client.request(
                "chat.send", {"sessionKey": "st", "message": "also this", "idempotencyKey": "t2"}
            )
            await w.ended("t1")
            end2 = await w.ended("t2")
            history = await client.request("chat.history", {"sessionKey": "st"})
    assert end2["data"]["mergedInto"] == "t1"
    final = w.chat("t1")[-1]["message"]["content"][0]["text"]
    assert final.endswith("You said: also this")
    users = [m["content"] for m in history["messages"] if m["role"] == "user"]
    assert users[-1] == "also this"


async def test_interrupt_mode_clears_the_lane_and_aborts_the_active_run(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config(messages__queue__mode="followup")) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            await client.request(
                "chat.send",
                {"sessionKey": "i", "message": "[[stall:1]] a b c", "idempotencyKey": "i1"},
            )
            await w.started("i1")
            await client.request(
                "chat.send", {"sessionKey": "i", "message": "queued", "idempotencyKey": "i2"}
            )
            await client.request(
                "chat.send",
                {
                    "sessionKey": "i",
                    "message": "newest",
                    "idempotencyKey": "i3",
                    "queueMode": "interrupt",
                },
            )
            await w.ended("i3")
    assert run_events(w.events, "i1", "lifecycle")[-1]["data"]["stopReason"] == "interrupt"
    assert run_events(w.events, "i2", "lifecycle")[-1]["data"]["stopReason"] == "interrupt"
    assert w.chat("i3")[-1]["message"]["content"][0]["text"] == "You said: newest"


@pytest.mark.parametrize("drop", ["summarize", "old", "new"])
async def test_drop_policies_at_the_cap(tmp_path: Path, drop: str) -> None:
    w = Watch()
    config = chat_config(
        messages__queue__mode="followup", messages__queue__cap=2, messages__queue__drop=drop
    )
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(15):
            await client.request(
                "chat.send",
                {"sessionKey": "d", "message": "[[stall:1]] busy", "idempotencyKey": "d0"},
            )
            await w.started("d0")
            await client.request(
                "chat.send", {"sessionKey": "d", "message": "first queued", "idempotencyKey": "d1"}
            )
            await client.request(
                "chat.send", {"sessionKey": "d", "message": "second queued", "idempotencyKey": "d2"}
            )
            if drop == "new":
                with pytest.raises(GatewayRequestError, match="queue is full"):
                    await client.request(
                        "chat.send", {"sessionKey": "d", "message": "third", "idempotencyKey": "d3"}
                    )
            else:
                await client.request(
                    "chat.send", {"sessionKey": "d", "message": "third", "idempotencyKey": "d3"}
                )
                end = await w.ended("d1")
                assert end["data"]["stopReason"] == "dropped"
            await client.request("chat.abort", {"sessionKey": "d", "runId": "d0"})
            await w.ended("d2")
            if drop != "new":
                await w.ended("d3")
    second = w.chat("d2")[-1]["message"]["content"][0]["text"]
    if drop == "summarize":
        assert (
            "[Queue overflow] Dropped 1 messages due to cap." in second and "first queued" in second
        )
    else:
        assert second == "You said: second queued"


async def test_session_methods(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, chat_config()) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(15):
            assert (await client.request("sessions.subscribe", {}))["subscribed"] is True
            await client.request(
                "agent",
                {"message": "hello", "idempotencyKey": "p1", "sessionKey": "work"},
                expect_final=True,
            )
            patched = await client.request(
                "sessions.patch",
                {"key": "work", "label": "Work", "queueMode": "collect", "model": "local/echo"},
            )
            assert (
                patched["entry"]["label"] == "Work" and patched["entry"]["queueMode"] == "collect"
            )
            assert patched["resolved"] == {"modelProvider": "local", "model": "echo"}
            cleared = await client.request(
                "sessions.patch", {"key": "work", "label": None, "model": None}
            )
            assert "label" not in cleared["entry"] and "modelOverride" not in cleared["entry"]
            with pytest.raises(GatewayRequestError, match="queueMode"):
                await client.request("sessions.patch", {"key": "work", "queueMode": "sideways"})
            # levels as OpenClaw stores them; anything else names the field, nothing stored
            levels = await client.request(
                "sessions.patch",
                {
                    "key": "work",
                    "thinkingLevel": "Think-Harder",
                    "verboseLevel": "yes",
                    "reasoningLevel": "live",
                },
            )
            entry = levels["entry"]
            assert (entry["thinkingLevel"], entry["verboseLevel"]) == ("medium", "on")
            assert entry["reasoningLevel"] == "stream"
            for name in ("thinkingLevel", "verboseLevel", "reasoningLevel"):
                with pytest.raises(GatewayRequestError) as bad:
                    await client.request("sessions.patch", {"key": "work", name: "x" * 10_000})
                assert bad.value.code == "INVALID_REQUEST" and f"invalid {name} (use" in str(
                    bad.value
                )
            kept = await client.request("sessions.patch", {"key": "work", "thinkingLevel": None})
            assert "thinkingLevel" not in kept["entry"] and kept["entry"]["verboseLevel"] == "on"
            # a label names one session (trimmed), as in OpenClaw
            named = await client.request("sessions.patch", {"key": "work", "label": "  Desk  "})
            assert named["entry"]["label"] == "Desk"
            with pytest.raises(GatewayRequestError, match="label already in use: Desk"):
                await client.request("sessions.patch", {"key": "other", "label": "Desk "})
            with pytest.raises(GatewayRequestError, match="invalid label: empty"):
                await client.request("sessions.patch", {"key": "other", "label": "   "})
            again = await client.request("sessions.patch", {"key": "work", "label": "Desk"})
            assert again["entry"]["label"] == "Desk"  # its own label is not "in use"
            found = await client.request("sessions.resolve", {"label": "Desk"})
            assert found == {"ok": True, "key": "agent:main:work", "agentId": "main"}
            await client.request("sessions.patch", {"key": "work", "label": None})
            resolved = await client.request("sessions.resolve", {"key": "work"})
            assert resolved == {"ok": True, "key": "agent:main:work", "agentId": "main"}
            got = await client.request("sessions.get", {"key": "work"})
            assert [m["role"] for m in got["messages"]] == ["user", "assistant"]
            old_id = got["sessionId"]
            reset = await client.request("sessions.reset", {"key": "work"})
            assert reset["entry"]["sessionId"] != old_id
            sent = await client.request(
                "sessions.send", {"key": "work", "message": "via send", "idempotencyKey": "ss1"}
            )
            assert sent["status"] == "started"
            await w.ended("ss1")
            with pytest.raises(GatewayRequestError, match="cannot delete the main session"):
                await client.request("sessions.delete", {"key": "main"})
            deleted = await client.request("sessions.delete", {"key": "work"})
            assert deleted["deleted"] is True
            listed = await client.request("sessions.list")
            assert "agent:main:work" not in {s["key"] for s in listed["sessions"]}
            aborted = await client.request("sessions.abort", {"key": "main"})
            assert aborted == {"ok": True, "aborted": False, "runIds": []}
            assert (await client.request("sessions.unsubscribe", {}))["subscribed"] is False
    reasons = [
        p.get("reason") or p.get("phase") for (e, p, _s) in w.events if e == "sessions.changed"
    ]
    assert {"patch", "reset", "send", "delete", "start", "end"} <= set(reasons)


async def test_session_message_events_and_subscriptions_end_with_the_connection(
    tmp_path: Path,
) -> None:
    w = Watch()
    async with running_gateway(tmp_path, chat_config()) as gw:
        with trio.fail_after(15):
            async with (
                open_client(gw, on_event=w, caps=["session-scoped-events"]) as watcher,
                open_client(gw) as sender,
            ):
                res = await watcher.request("sessions.messages.subscribe", {"key": "room"})
                assert res == {"subscribed": True, "key": "agent:main:room"}
                await sender.request(
                    "agent",
                    {"message": "hi room", "idempotencyKey": "m1", "sessionKey": "room"},
                    expect_final=True,
                )
                msgs = [p for (e, p, _s) in w.events if e == "session.message"]
                while len(msgs) < 2:
                    await w.until(
                        lambda e, p: e == "session.message" and p["message"]["role"] == "assistant"
                    )
                    msgs = [p for (e, p, _s) in w.events if e == "session.message"]
                assert [m["message"]["role"] for m in msgs] == ["user", "assistant"]
                assert msgs[0]["messageSeq"] == 1 and msgs[1]["message"]["__openclaw"]["seq"] == 2
                # A scoped watcher also gets the session's agent events.
                assert run_events(w.events, "m1")
            assert gw.hub.session_watchers("agent:main:room") == set()


@pytest.mark.parametrize("phase", ["queued", "waiting-for-lane", "streaming", "in-a-tool"])
@pytest.mark.parametrize("source", ["chat.abort", "sessions.abort", "timeout"])
async def test_every_abort_path_in_every_phase_ends_with_one_terminal_event(
    tmp_path: Path, phase: str, source: str
) -> None:
    w = Watch()
    config = chat_config(agents__defaults__maxConcurrent=1, messages__queue__mode="followup")
    message = {
        "queued": "[[deltas:2]] queued run",
        "waiting-for-lane": "[[deltas:2]] waiting run",
        "streaming": "[[stall:1]] streaming run",
        "in-a-tool": '[[tool:exec {"command": "sleep 30"}]]',
    }[phase]
    async with (
        running_gateway(tmp_path, config) as gw,
        open_client(gw, on_event=w, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            if phase in ("queued", "waiting-for-lane"):
                blocker_key = "x" if phase == "queued" else "y"
                await client.request(
                    "chat.send",
                    {
                        "sessionKey": blocker_key,
                        "message": "[[stall]] blocker",
                        "idempotencyKey": "blocker",
                    },
                )
                await w.until(lambda e, p: e == "agent" and p["runId"] == "blocker")
            params: dict[str, Any] = {
                "sessionKey": "x",
                "message": message,
                "idempotencyKey": "victim",
            }
            if source == "timeout":
                params["timeoutMs"] = 300
            await client.request("chat.send", params)
            if phase == "streaming":
                await w.started("victim")
            elif phase == "in-a-tool":
                await w.started("victim", "tool")
            elif phase == "waiting-for-lane":
                await trio.testing.wait_all_tasks_blocked()
                assert gw.supervisor.statistics().lane_waiting == 1
            if source == "chat.abort":
                await client.request("chat.abort", {"sessionKey": "x", "runId": "victim"})
            elif source == "sessions.abort":
                await client.request("sessions.abort", {"key": "x", "runId": "victim"})
            if source == "timeout" and phase in ("queued", "waiting-for-lane"):
                # A run timeout counts from the run's start: release the blocker.
                await client.request(
                    "chat.abort",
                    {"sessionKey": "x" if phase == "queued" else "y", "runId": "blocker"},
                )
            end = await w.ended("victim")
            if phase in ("queued", "waiting-for-lane"):
                await client.request(
                    "chat.abort", {"sessionKey": "x" if phase == "queued" else "y"}
                )
    terminal = terminal_events(w.events, "victim")
    assert len(terminal) == 1
    if source == "timeout" and phase in ("queued", "waiting-for-lane"):
        return  # it ran after the blocker: ok or timed out, either way exactly one end
    assert end["data"]["aborted"] is True
    assert end["data"]["stopReason"] == ("timeout" if source == "timeout" else "rpc")
    assert gw.supervisor.statistics().lane_in_use == 0


async def test_cancel_frame_aborts_and_disconnect_does_not(tmp_path: Path) -> None:
    w = Watch()
    async with running_gateway(tmp_path, chat_config()) as gw:
        with trio.fail_after(15):
            async with open_client(gw, on_event=w) as client:
                async with trio.open_nursery() as n:

                    async def call() -> None:
                        with pytest.raises(GatewayRequestError):
                            await client.request(
                                "agent",
                                {"message": "[[stall]] x", "idempotencyKey": "cf"},
                                expect_final=True,
                            )

                    n.start_soon(call)
                    await w.started("cf", "lifecycle")
                    record = gw.registry.get("cf")
                    assert record is not None
                    await client.cancel(client.last_request_id)
                    await record.done.wait()
                    n.cancel_scope.cancel()
                assert record.abort_reason == "rpc"
                # A run whose connection goes away keeps running.
                await client.request(
                    "agent",
                    {"message": "[[deltas:3]] [[delay:50]] keep going", "idempotencyKey": "dc"},
                )
            record = gw.registry.get("dc")
            assert record is not None and not record.aborted
            async with open_client(gw) as again:
                waited = await again.request("agent.wait", {"runId": "dc"})
                assert waited["status"] == "ok"


async def test_resume_after_a_forced_disconnect_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    first, second = Watch(), Watch()
    async with running_gateway(tmp_path, chat_config()) as gw:
        with trio.fail_after(15):
            async with open_client(gw, on_event=first, caps=["session-scoped-events"]) as client:
                await client.request(
                    "agent",
                    {"message": "[[deltas:12]] [[delay:40]] " + "w " * 12, "idempotencyKey": "rs"},
                )
                await first.until(
                    lambda e, p: e == "agent" and p["runId"] == "rs" and p["seq"] >= 4
                )
            seen = [p["seq"] for p in run_events(first.events, "rs")]
            async with open_client(gw, on_event=second, caps=["session-scoped-events"]) as client:
                res = await client.request("runs.replay", {"runId": "rs", "afterSeq": seen[-1]})
                assert res["gap"] is False
                await second.ended("rs")
                with pytest.raises(GatewayRequestError) as err:
                    await client.request("runs.replay", {"runId": "nope", "afterSeq": 0})
                assert err.value.code == "AGENT_RESULT_NOT_FOUND"
                with pytest.raises(GatewayRequestError) as err:
                    await client.request("runs.replay", {"runId": "rs", "afterSeq": -1})
                assert err.value.code == "INVALID_REQUEST" and "afterSeq" in str(err.value)
    rest = [p["seq"] for p in run_events(second.events, "rs")]
    assert seen + rest == list(range(1, len(seen) + len(rest) + 1))
    assert "runs.replay" in gw.methods.names()


async def test_manual_compaction_and_the_system_prompt_report(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, chat_config()) as gw, open_client(gw) as client:
        with trio.fail_after(20):
            for i in range(6):
                await client.request(
                    "agent",
                    {"message": f"turn {i} " + "words " * 40, "idempotencyKey": f"mc{i}"},
                    expect_final=True,
                )
            result = await client.request("sessions.compact", {"key": "main", "maxLines": 2})
            assert result["ok"] is True and result["compacted"] is True
            assert result["tokensAfter"] < result["tokensBefore"]
            history = await client.request("chat.history", {"sessionKey": "main"})
            assert len(history["messages"]) == 12  # full history stays in the store
            listed = await client.request("sessions.list")
            assert listed["sessions"][0]["compactionCount"] == 1
            after = await client.request(
                "agent", {"message": "still here?", "idempotencyKey": "mc-after"}, expect_final=True
            )
            assert after["result"]["payloads"] == [{"text": "You said: still here?"}]
            report = await client.request("sessions.systemPrompt", {"key": "main"})
            assert report["report"]["sections"]
            async with open_client(gw, scopes=["operator.write"]) as writer:
                with pytest.raises(GatewayRequestError) as err:
                    await writer.request("sessions.systemPrompt", {"key": "main"})
                assert err.value.code == "FORBIDDEN"
