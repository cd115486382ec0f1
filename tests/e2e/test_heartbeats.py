"""Heartbeats over a real gateway on loopback with the `local` model, as an OpenClaw client
sees them: `wake` runs one in the agent's main session, the `heartbeat` event reaches every
connection and `last-heartbeat` answers it, a `HEARTBEAT_OK` reply is not shown as a chat
reply while an alert is, `set-heartbeats` turns them off, `system-event` reaches the
session's next turn, an effectively empty `HEARTBEAT.md` skips the run, `heartbeat_respond`
decides the outcome, and every frame validates against the protocol schema.

The model's reply comes from `[[reply:...]]` / `[[tool:...]]` directives in the configured
heartbeat `prompt` or in the workspace's `HEARTBEAT.md` (appended to the prompt as the
monitor scratch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import Heartbeats
from runtime.heartbeat import HEARTBEAT_PROMPT
from runtime.model._generation import build_generation
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_openclaw_cli_grants import NODE, PACKAGE, TOKEN, openclaw
from tests.e2e.test_sessions_chat import Watch
from transports import Gateway, GatewayClient, GatewayRequestError

KEY = "agent:main:main"


def _heartbeat(**block: Any) -> Any:
    return local_config(agents__defaults__heartbeat=block)


async def _event(w: Watch, n: int) -> dict[str, Any]:
    """The `n`-th `heartbeat` event (from 1)."""
    await w.until(lambda e, p: sum(1 for x, _p, _s in w.events if x == "heartbeat") >= n)
    events: list[dict[str, Any]] = [p for (e, p, _s) in w.events if e == "heartbeat"]
    return events[n - 1]


def _build(gw: Gateway, config: Any) -> Any:
    """A generation of `config` newer than `gw`'s."""
    return build_generation(config, gw.supervisor.generation.number + 1)


async def _wake(client: GatewayClient, text: str = "check now") -> None:
    assert await client.request("wake", {"mode": "now", "text": text}) == {"ok": True}


def _run_of(w: Watch, prefix: str = "heartbeat-") -> str:
    return next(
        str(p["runId"])
        for (e, p, _s) in w.events
        if e == "agent" and str(p["runId"]).startswith(prefix)
    )


async def test_an_ok_heartbeat_is_silent_and_last_heartbeat_answers_it(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, _heartbeat(every="0m")) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(30):
            ws = await gw.supervisor.workspace_for("main", None)
            (ws / "HEARTBEAT.md").write_text("- Anything urgent? [[reply:HEARTBEAT_OK]]\n")
            assert await client.request("last-heartbeat", {}) is None
            await _wake(client)
            event = await _event(w, 1)
            assert event["status"] == "ok-token"
            assert event["silent"] is True and event["indicatorType"] == "ok"
            assert event["reason"] == "wake" and event["durationMs"] >= 0
            assert await client.request("last-heartbeat", {}) == event
            run_id = _run_of(w)
            await w.ended(run_id)
            agent = [p for (e, p, _s) in w.events if e == "agent" and p["runId"] == run_id]
            assert agent and all(p["isHeartbeat"] is True for p in agent)
            assert agent[0]["sessionKey"] == KEY
            chat = w.chat(run_id)
            assert [c["state"] for c in chat] == ["final"]  # no deltas, and no message
            assert "message" not in chat[0]
            # The turn stays in the transcript (audit, the model's context); the chat's
            # history hides the prompt and the acknowledgment, as OpenClaw's does.
            history = await client.request("chat.history", {"sessionKey": KEY})
            assert history["messages"] == [] and history["totalMessages"] == 2
            await client.request(
                "agent",
                {"sessionKey": KEY, "message": "hi", "idempotencyKey": "r1"},
                expect_final=True,
            )
            history = await client.request("chat.history", {"sessionKey": KEY})
            assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
            assert history["messages"][0]["__openclaw"]["seq"] == 3


async def test_an_alert_is_shown_and_the_event_previews_it(tmp_path: Path) -> None:
    w = Watch()
    config = _heartbeat(every="0m", prompt="[[reply:Disk is 95% full]]")
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            await _wake(client)
            event = await _event(w, 1)
            # No channel to deliver it to: OpenClaw's event for an undeliverable alert.
            assert (event["status"], event["reason"]) == ("skipped", "no-route"), event
            assert event["preview"] == "Disk is 95% full" and event["indicatorType"] == "alert"
            assert event["message"].startswith("Heartbeat has no delivery route yet.")
            run_id = _run_of(w)
            await w.ended(run_id)
            chat = w.chat(run_id)
            assert [c["state"] for c in chat] == ["final"]
            assert chat[0]["message"]["content"][0]["text"] == "Disk is 95% full"
            del gw


async def test_text_beside_the_token_is_an_acknowledgment_up_to_ack_max_chars(
    tmp_path: Path,
) -> None:
    w = Watch()
    config = _heartbeat(every="0m", prompt="[[reply:HEARTBEAT_OK all quiet]]")
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            await _wake(client)
            assert (await _event(w, 1))["status"] == "ok-token"
            # A retired key still honoured: with ackMaxChars 5 the same reply is an alert.
            gw.supervisor.publish(
                _build(
                    gw,
                    _heartbeat(
                        every="0m", prompt="[[reply:HEARTBEAT_OK all quiet]]", ackMaxChars=5
                    ),
                )
            )
            await _wake(client)
            event = await _event(w, 2)
            assert (event["reason"], event["preview"]) == ("no-route", "all quiet")


async def test_the_default_prompt_reads_heartbeat_md_as_monitor_scratch(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, _heartbeat(every="0m")) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(30):
            ws = await gw.supervisor.workspace_for("main", None)
            (ws / "HEARTBEAT.md").write_text("# Checklist\n\n- Look at the inbox\n")
            await _wake(client)
            event = await _event(w, 1)
            # The local model echoes its message: the default prompt, then the scratch.
            assert event["indicatorType"] == "alert"
            run_id = _run_of(w)
            final = await w.until(
                lambda e, p: e == "chat" and p["runId"] == run_id and p["state"] == "final"
            )
            text = final["message"]["content"][0]["text"]  # whitespace folded by the echo
            assert text.startswith("You said: System: [") and "] check now " in text  # the wake
            assert f"{HEARTBEAT_PROMPT} Heartbeat monitor scratch: # Checklist - Look at" in text


async def test_an_effectively_empty_heartbeat_md_skips_the_run(tmp_path: Path) -> None:
    w = Watch()
    async with (
        running_gateway(tmp_path, _heartbeat(every="0m")) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(30):
            ws = await gw.supervisor.workspace_for("main", None)
            (ws / "HEARTBEAT.md").write_text("# Heartbeat\n\n<!-- nothing yet -->\n- [ ]\n")
            beats = gw.supervisor.heartbeats
            assert isinstance(beats, Heartbeats)
            event = await beats.run_heartbeat("main", reason="interval")
            assert event["status"] == "skipped" and event["reason"] == "empty-heartbeat-file"
            assert (await _event(w, 1)) == event
            assert beats.runs == 0
            assert await client.request("last-heartbeat", {}) == event


async def test_set_heartbeats_turns_them_off_and_on(tmp_path: Path) -> None:
    w = Watch()
    config = _heartbeat(every="0m", prompt="[[reply:HEARTBEAT_OK]]")
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            answer = await client.request("set-heartbeats", {"enabled": False})
            assert answer == {"ok": True, "enabled": False}
            await _wake(client)
            event = await _event(w, 1)
            assert (event["status"], event["reason"]) == ("skipped", "disabled")
            assert await client.request("set-heartbeats", {"enabled": True}) == {
                "ok": True,
                "enabled": True,
            }
            await _wake(client)
            assert (await _event(w, 2))["status"] == "ok-token"
            with pytest.raises(GatewayRequestError) as bad:
                await client.request("set-heartbeats", {"enabled": "yes"})
            assert bad.value.code == "INVALID_REQUEST"
            assert bad.value.message == "invalid set-heartbeats params: enabled (boolean) required"
            del gw


async def test_a_system_event_reaches_the_next_turn(tmp_path: Path) -> None:
    w = Watch()
    async with running_gateway(tmp_path) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            sent = await client.request("system-event", {"text": "Deploy finished"})
            assert sent == {"ok": True}
            final = await client.request(
                "agent",
                {"sessionKey": KEY, "message": "hello", "idempotencyKey": "r1"},
                expect_final=True,
            )
            text = final["result"]["payloads"][0]["text"]
            assert text.startswith("You said: System: [") and text.endswith(
                "] Deploy finished hello"
            )
            # Taken once: the next turn does not see it again.
            again = await client.request(
                "agent",
                {"sessionKey": KEY, "message": "again", "idempotencyKey": "r2"},
                expect_final=True,
            )
            assert again["result"]["payloads"][0]["text"] == "You said: again"
            with pytest.raises(GatewayRequestError) as empty:
                await client.request("system-event", {"text": "  "})
            assert empty.value.message == "text required"
            del gw


async def test_next_heartbeat_mode_waits_for_the_next_turn(tmp_path: Path) -> None:
    w = Watch()
    async with running_gateway(tmp_path) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            answer = await client.request("wake", {"mode": "next-heartbeat", "text": "later"})
            assert answer == {"ok": True}
            beats = gw.supervisor.heartbeats
            assert isinstance(beats, Heartbeats) and beats.runs == 0
            assert [e for e, _p, _s in w.events if e == "heartbeat"] == []
            final = await client.request(
                "agent",
                {"sessionKey": KEY, "message": "hi", "idempotencyKey": "r1"},
                expect_final=True,
            )
            assert final["result"]["payloads"][0]["text"].endswith("] later hi")
            with pytest.raises(GatewayRequestError) as sub:
                await client.request(
                    "wake", {"mode": "now", "text": "x", "sessionKey": "agent:main:subagent:abc"}
                )
            assert sub.value.message == "wake sessionKey cannot target a subagent session"


async def test_heartbeat_respond_decides_the_outcome(tmp_path: Path) -> None:
    w = Watch()
    args = {
        "outcome": "needs_attention",
        "notify": True,
        "summary": "s",
        "notificationText": "Call Bob",
    }
    prompt = f"[[tool:heartbeat_respond {json.dumps(args)}]] [[reply:done]]"
    config = _heartbeat(every="0m", prompt=prompt)
    async with (
        running_gateway(tmp_path, config) as gw,
        open_client(gw, on_event=w) as client,
    ):
        with trio.fail_after(30):
            await _wake(client)
            event = await _event(w, 1)
            assert (event["reason"], event["preview"]) == ("no-route", "Call Bob")
            run_id = _run_of(w)
            await w.ended(run_id)
            # The tool's result, as the model read it, is in the session's transcript.
            history = await client.request("chat.history", {"sessionKey": KEY})
            results = [m for m in history["messages"] if m.get("role") == "toolResult"]
            assert [m["toolName"] for m in results] == ["heartbeat_respond"]
            accepted = json.loads(results[0]["content"][0]["text"])
            assert accepted == {"status": "accepted", **args}
            # Outside a heartbeat the tool is not offered.
            final = await client.request(
                "agent",
                {"sessionKey": "agent:main:other", "message": prompt, "idempotencyKey": "r1"},
                expect_final=True,
            )
            assert final["status"] == "ok"
            other = await client.request("chat.history", {"sessionKey": "agent:main:other"})
            refused = [m for m in other["messages"] if m.get("role") == "toolResult"]
            assert [(m["toolName"], m["isError"]) for m in refused] == [("heartbeat_respond", True)]
            assert gw.supervisor.heartbeats is not None


async def test_target_none_runs_for_internal_state_only(tmp_path: Path) -> None:
    w = Watch()
    config = _heartbeat(every="0m", target="none", prompt="[[reply:Backup failed]]")
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            await _wake(client)
            event = await _event(w, 1)
            assert (event["status"], event["reason"]) == ("skipped", "target-none")
            assert event["message"] == (
                "Heartbeat delivery is disabled by configuration (target: none)."
            )
            assert event["preview"] == "Backup failed"
            del gw


async def test_quiet_hours_skip_and_a_config_with_every_key_loads(tmp_path: Path) -> None:
    w = Watch()
    config = _heartbeat(
        every="30m",
        activeHours={"start": "08:00", "end": "08:00", "timezone": "UTC"},  # never active
        model="local/echo",
        session="main",
        target="none",
        directPolicy="allow",
        to="x",
        accountId="a",
        prompt="p",
        timeoutSeconds=45,
        lightContext=True,
        isolatedSession=False,
        ackMaxChars=10,
        includeReasoning=False,
        includeSystemPromptSection=True,
        skipWhenBusy=True,
        suppressToolErrorWarnings=False,
    )
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            await _wake(client)
            event = await _event(w, 1)
            assert (event["status"], event["reason"]) == ("skipped", "quiet-hours")
            # health and status show the heartbeat as configured (schema-checked frames).
            health = await client.request("health", {})
            beat = health["agents"][0]["heartbeat"]
            assert (beat["enabled"], beat["every"], beat["everyMs"]) == (True, "30m", 1_800_000)
            assert health["heartbeatSeconds"] == 1800
            status = await client.request("status", {})
            assert status["heartbeat"]["agents"][0]["every"] == "30m"
            assert status["queuedSystemEvents"] == ["check now"]  # the wake's, still queued
            del gw


async def test_openclaws_system_cli_drives_heartbeats(tmp_path: Path) -> None:
    """`openclaw system event|heartbeat ...` (OpenClaw's own CLI on Node 24) against
    clawlane; skipped without the package (`../shared/openclaw-peer/peer.sh install`)."""
    if not NODE.exists() or not (PACKAGE / "openclaw.mjs").exists():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    w = Watch()
    config = _heartbeat(every="0m", prompt="[[reply:HEARTBEAT_OK]]")
    home = tmp_path / "openclaw-home"
    with trio.fail_after(240):
        async with (
            running_gateway(tmp_path, config, token=TOKEN) as gw,
            open_client(gw, token=TOKEN, on_event=w),
        ):
            port = gw.listeners[0].socket.getsockname()[1]

            async def cli(*args: str) -> Any:
                done = await trio.to_thread.run_sync(lambda: openclaw(port, home, *args))
                assert done.returncode == 0, done.stderr
                return json.loads(done.stdout)

            sent = await cli(
                "system", "event", "--text", "deploy finished", "--mode", "now", "--json"
            )
            assert sent == {"ok": True}
            event = await _event(w, 1)
            assert event["status"] == "ok-token"
            assert await cli("system", "heartbeat", "last", "--json") == event
            off = await cli("system", "heartbeat", "disable", "--json")
            assert off == {"ok": True, "enabled": False}
            beats = gw.supervisor.heartbeats
            assert isinstance(beats, Heartbeats) and beats.enabled is False


async def test_an_isolated_heartbeat_runs_in_a_fresh_session_each_time(tmp_path: Path) -> None:
    w = Watch()
    config = _heartbeat(every="0m", isolatedSession=True, prompt="[[reply:HEARTBEAT_OK]]")
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            await _wake(client, "first")
            assert (await _event(w, 1))["status"] == "ok-token"
            await _wake(client, "second")
            assert (await _event(w, 2))["status"] == "ok-token"
            runs = {
                p["runId"]: (p["sessionKey"], p["sessionId"])
                for (e, p, _s) in w.events
                if e == "agent" and str(p["runId"]).startswith("heartbeat-")
            }
            assert {k for k, _i in runs.values()} == {"agent:main:main:heartbeat"}
            assert len({i for _k, i in runs.values()}) == 2  # a fresh session id per run
            history = await client.request("chat.history", {"sessionKey": KEY})
            assert history["totalMessages"] == 0  # the main session is untouched
            iso = await client.request("chat.history", {"sessionKey": "agent:main:main:heartbeat"})
            assert iso["totalMessages"] == 2  # only the last run's prompt and reply
            del gw
