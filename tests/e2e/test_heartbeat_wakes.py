"""Heartbeat wakes over a real gateway on loopback, as OpenClaw 2026.9.6 runs them and as an
OpenClaw client sees them (`heartbeat`, `agent`, `chat` and `cron` events):

- a wake on a busy session is skipped `requests-in-flight` and tried again until it runs;
- a background command's end is queued as a system event of its session and a heartbeat
  wake (`exec-event`) tells it there with OpenClaw's completion prompt, its reply shown; an
  ordinary turn reads the other queued events but leaves it to a heartbeat;
- a cron `systemEvent` job with `wakeMode: "now"` queues its text and waits for the
  heartbeat it wakes (through a busy session's retries); `next-heartbeat` on an agent
  without a cadence leaves the text for the session's next turn;
- `lightContext` leaves the workspace's bootstrap files out of a heartbeat's system prompt
  (what the model provider receives, recorded by a loopback OpenAI-compatible server).

The model is the `local` one (its `[[...]]` directives), but for `lightContext`. Waits are on
events; the retries' 1 s pauses are the gateway's own (OpenClaw's retry delay).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trio

from runtime.model._config import parse_config
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_providers_e2e import DIALECTS, KEY_VAR, MODEL, PROVIDER, provider_gateway
from tests.e2e.test_sessions_chat import Watch
from tests.runtime.llm._sse_server import Script, open_sse_server
from transports import GatewayClient

KEY = "agent:main:main"
ADMIN = ["operator.admin", "operator.read", "operator.write"]


def _heartbeat(**block: Any) -> Any:
    return local_config(agents__defaults__heartbeat=block)


def _beats(w: Watch) -> list[dict[str, Any]]:
    return [p for (e, p, _s) in w.events if e == "heartbeat"]


async def _beat(w: Watch, predicate: Any) -> dict[str, Any]:
    """The first `heartbeat` event `predicate` accepts (waiting for it)."""
    found: dict[str, Any] = await w.until(lambda e, p: e == "heartbeat" and predicate(p))
    return found


def _index(w: Watch, predicate: Any) -> int:
    return next(n for n, (e, p, _s) in enumerate(w.events) if predicate(e, p))


def _heartbeat_run(w: Watch) -> str:
    return next(
        str(p["runId"])
        for (e, p, _s) in w.events
        if e == "agent" and str(p["runId"]).startswith("heartbeat-")
    )


async def _stall(client: GatewayClient, w: Watch, key: str = KEY) -> None:
    """A run that keeps `key` busy until it is aborted (`busy`)."""
    await client.request(
        "agent", {"sessionKey": key, "message": "[[stall]]", "idempotencyKey": "busy"}
    )
    await w.started("busy", "lifecycle")


async def _abort(client: GatewayClient, w: Watch, key: str = KEY) -> None:
    await client.request("chat.abort", {"sessionKey": key, "runId": "busy"})
    await w.ended("busy")


async def _turn(client: GatewayClient, key: str, message: str, run_id: str) -> str:
    final = await client.request(
        "agent",
        {"sessionKey": key, "message": message, "idempotencyKey": run_id},
        expect_final=True,
    )
    assert final["status"] == "ok", final
    return str(final["result"]["payloads"][0]["text"])


async def test_a_wake_on_a_busy_session_is_tried_again_until_it_runs(tmp_path: Path) -> None:
    w = Watch()
    config = _heartbeat(every="0m", prompt="[[reply:HEARTBEAT_OK]]")
    async with running_gateway(tmp_path, config) as gw, open_client(gw, on_event=w) as client:
        with trio.fail_after(30):
            await _stall(client, w)
            answer = await client.request(
                "wake", {"mode": "now", "text": "look now", "sessionKey": KEY}
            )
            assert answer == {"ok": True}
            # Each try while the session is busy is a skip of its own; the wake stays.
            await w.until(lambda e, p: e == "heartbeat" and len(_beats(w)) >= 2)
            assert [(b["status"], b["reason"]) for b in _beats(w)] == [
                ("skipped", "requests-in-flight")
            ] * len(_beats(w))
            assert not any(
                str(p.get("runId", "")).startswith("heartbeat-") for e, p, _s in w.events
            )
            await _abort(client, w)
            event = await _beat(w, lambda p: p["status"] != "skipped")
            assert (event["status"], event["reason"]) == ("ok-token", "wake")
            run_id = _heartbeat_run(w)
            await w.ended(run_id)
            busy_end = _index(
                w, lambda e, p: e == "agent" and p["runId"] == "busy" and p["stream"] == "lifecycle"
                and p["data"].get("phase") in ("end", "error")
            )  # fmt: skip
            assert busy_end < _index(w, lambda e, p: e == "agent" and p["runId"] == run_id)
            assert await client.request("last-heartbeat", {}) == event
            # The wake's event went into the heartbeat's turn, not into the next one.
            assert await _turn(client, KEY, "hello", "after") == "You said: hello"
            del gw


async def test_a_background_commands_end_wakes_its_session_through_the_event_queue(
    tmp_path: Path,
) -> None:
    w = Watch()
    key = "agent:main:work"
    async with (
        running_gateway(tmp_path, local_config()) as gw,
        open_client(gw, on_event=w, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            command = json.dumps({"command": "echo built; echo ok", "background": True})
            text = await _turn(client, key, f"[[tool:exec {command}]]", "job")
            found = re.search(r"session ([0-9a-z-]+)", text)
            assert found is not None, text
            sid = found.group(1)
            event = await _beat(w, lambda p: True)
            # OpenClaw's completion turn, shown in the session that ran the command (its
            # internal projection): a `sent` heartbeat with the reply as its preview.
            assert event["status"] == "sent" and event["indicatorType"] == "alert"
            assert event["preview"].startswith(
                "You said: An async command you ran earlier has completed."
            )
            assert f"Exec completed ({sid[:8]}, code 0) :: built ok" in event["preview"]
            run_id = _heartbeat_run(w)
            await w.ended(run_id)
            agent = [p for (e, p, _s) in w.events if e == "agent" and p["runId"] == run_id]
            assert {p["sessionKey"] for p in agent} == {key}
            assert all(p["isHeartbeat"] is True for p in agent)
            chat = w.chat(run_id)
            assert [c["state"] for c in chat] == ["final"]
            shown = chat[0]["message"]["content"][0]["text"]
            assert shown.startswith("You said: An async command you ran earlier has completed.")
            # The turn took the event from the queue: the next turn does not see it again.
            assert await _turn(client, key, "and now?", "next") == "You said: and now?"
            history = await client.request("chat.history", {"sessionKey": key})
            users = [m for m in history["messages"] if m["role"] == "user"]
            assert "Exec completed (" in json.dumps(users[-2])
            del gw


async def test_an_ordinary_turn_leaves_a_completion_to_the_heartbeat_that_tells_it(
    tmp_path: Path,
) -> None:
    """As OpenClaw's: a user's turn reads the other queued events as `System:` lines but not
    a background command's completion, which stays queued until a heartbeat tells it."""
    w = Watch()
    async with (
        running_gateway(tmp_path, _heartbeat(every="0m")) as gw,
        open_client(gw, scopes=ADMIN, on_event=w, caps=["tool-events"]) as client,
    ):
        with trio.fail_after(30):
            await client.request("set-heartbeats", {"enabled": False})
            first = json.dumps({"command": "echo built; echo ok", "background": True})
            text = await _turn(client, KEY, f"[[tool:exec {first}]]", "job")
            found = re.search(r"session ([0-9a-z-]+)", text)
            assert found is not None, text
            sid = found.group(1)
            off = await _beat(w, lambda p: True)  # its wake: heartbeats are off
            assert (off["status"], off["reason"]) == ("skipped", "disabled")
            await client.request("system-event", {"text": "Deploy finished", "sessionKey": KEY})
            text = await _turn(client, KEY, "hello", "next")
            assert text.startswith("You said: System: [") and text.endswith(
                "] Deploy finished hello"
            )
            assert "Exec" not in text
            queued = gw.supervisor.services.system_events.peek(KEY)
            assert [e.context_key for e in queued] == [f"exec:{sid}"]
            # The next completion's heartbeat tells both.
            await client.request("set-heartbeats", {"enabled": True})
            second = json.dumps({"command": "echo second", "background": True})
            await _turn(client, KEY, f"[[tool:exec {second}]]", "job2")
            event = await _beat(w, lambda p: p["status"] != "skipped")
            assert event["status"] == "sent"
            await w.ended(_heartbeat_run(w))
            history = await client.request("chat.history", {"sessionKey": KEY})
            assert not gw.supervisor.services.system_events.has(KEY)
    told = [m for m in history["messages"] if m["role"] == "user"][-1]
    told_text = json.dumps(told)
    assert "An async command you ran earlier has completed." in told_text
    assert f"Exec completed ({sid[:8]}, code 0) :: built ok" in told_text
    assert ":: second" in told_text and "Deploy finished" not in told_text


async def test_a_cron_system_event_waking_now_waits_for_its_heartbeat(tmp_path: Path) -> None:
    w = Watch()
    config = _heartbeat(every="0m", target="none")
    async with (
        running_gateway(tmp_path, config) as gw,
        open_client(gw, scopes=ADMIN, on_event=w) as client,
    ):
        with trio.fail_after(30):
            job = await client.request(
                "cron.add",
                {
                    "name": "plants",
                    "schedule": {"kind": "every", "everyMs": 3_600_000},
                    "sessionTarget": "main",
                    "wakeMode": "now",
                    "payload": {"kind": "systemEvent", "text": "Water the plants"},
                },
            )
            await _stall(client, w)
            started = await client.request("cron.run", {"id": job["id"], "mode": "force"})
            assert started["ok"] and started["enqueued"]
            skipped = await _beat(w, lambda p: True)
            assert (skipped["status"], skipped["reason"]) == ("skipped", "requests-in-flight")
            assert not any(
                e == "cron" and p["action"] == "finished" for e, p, _s in w.events
            )  # the firing waits for the heartbeat it woke
            await _abort(client, w)
            finished = await w.until(lambda e, p: e == "cron" and p["action"] == "finished")
            assert finished["jobId"] == job["id"] and finished["status"] == "ok"
            event = _beats(w)[-1]
            assert (event["status"], event["reason"]) == ("skipped", "target-none")
            assert event["preview"].startswith(
                "You said: A scheduled reminder has been triggered. The reminder content is: "
                "Water the plants Handle this reminder internally."
            )
            run_id = _heartbeat_run(w)
            await w.ended(run_id)
            assert {p["sessionKey"] for e, p, _s in w.events if e == "agent" and p["runId"] == run_id} == {KEY}  # fmt: skip
            page = await client.request("cron.runs", {"id": job["id"], "limit": 1})
            [entry] = page["entries"]
            assert (entry["status"], entry["summary"]) == ("ok", "Water the plants")
            assert await _turn(client, KEY, "hi", "after") == "You said: hi"  # taken once
            del gw


async def test_a_cron_system_event_for_the_next_heartbeat_waits_for_the_next_turn(
    tmp_path: Path,
) -> None:
    w = Watch()
    config = _heartbeat(every="0m")  # no cadence: no heartbeat comes, the next turn reads it
    async with (
        running_gateway(tmp_path, config) as gw,
        open_client(gw, scopes=ADMIN, on_event=w) as client,
    ):
        with trio.fail_after(30):
            job = await client.request(
                "cron.add",
                {
                    "name": "later",
                    "schedule": {"kind": "every", "everyMs": 3_600_000},
                    "sessionTarget": "main",
                    "wakeMode": "next-heartbeat",
                    "payload": {"kind": "systemEvent", "text": "Stand up and stretch"},
                },
            )
            await client.request("cron.run", {"id": job["id"], "mode": "force"})
            finished = await w.until(lambda e, p: e == "cron" and p["action"] == "finished")
            assert finished["status"] == "ok"
            text = await _turn(client, KEY, "hello", "next")
            assert text.startswith("You said: System: [") and text.endswith(
                "] Stand up and stretch hello"
            )
            assert _beats(w) == []  # no heartbeat ran
            del gw


def _light_config(url: str, *, light: bool) -> Any:
    raw = {
        "agents": {
            "defaults": {
                "model": {"primary": f"{PROVIDER}/{MODEL}"},
                "heartbeat": {"every": "0m", "lightContext": light},
            }
        },
        "models": {
            "providers": {
                PROVIDER: {
                    "api": "openai-completions",
                    "baseUrl": url,
                    "apiKey": f"${{{KEY_VAR}}}",
                    "models": [{"id": MODEL, "name": "e2e model"}],
                }
            }
        },
    }
    return parse_config(raw, env={KEY_VAR: "sk-light"})


def _system(body: dict[str, Any]) -> str:
    messages = body["messages"]
    assert messages[0]["role"] == "system"
    return str(messages[0]["content"])


async def test_light_context_leaves_the_workspace_files_out_of_a_heartbeat(
    tmp_path: Path,
) -> None:
    dialect = DIALECTS[0]  # openai-completions
    systems: dict[bool, list[str]] = {}
    for light in (False, True):
        w = Watch()
        async with open_sse_server() as server:
            server.push(*(Script(chunks=dialect.text(["HEARTBEAT_OK"])) for _ in range(2)))
            config = _light_config(dialect.base_url(server), light=light)
            async with provider_gateway(tmp_path / str(light), config) as gw:
                with trio.fail_after(30):
                    async with open_client(gw, on_event=w) as client:
                        ws = await gw.supervisor.workspace_for("main", None)
                        (ws / "AGENTS.md").write_text("Agent rules: ROSEMARY-7.\n")
                        (ws / "HEARTBEAT.md").write_text("- Check the BASIL-3 queue\n")
                        await client.request("wake", {"mode": "now", "text": "check"})
                        event = await _beat(w, lambda p: True)
                        assert event["status"] == "ok-token", event
                        await w.ended(_heartbeat_run(w))
                        await _turn(client, KEY, "plain turn", "plain")
            heartbeat, plain = (r.json() for r in server.requests)
            # The monitor scratch is in the heartbeat's message either way.
            assert "BASIL-3" in json.dumps(heartbeat["messages"][1:])
            assert "ROSEMARY-7" in _system(plain)  # an ordinary turn has the files
            systems[light] = [_system(heartbeat)]
    assert "ROSEMARY-7" in systems[False][0]
    assert "ROSEMARY-7" not in systems[True][0]
