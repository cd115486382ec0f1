"""Tools and plugin hooks in real runs: a multi-turn tool loop with the `local` model, tool
event routing, policy, and the hook decision rules where the agent loop applies them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from runtime.hooks._events import BeforeToolCallResult
from tests.conftest import client_auth, gateway_url, local_config, open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events, terminal_events
from transports import open_gateway_client


def tool_events(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [p["data"] for p in run_events(events, run_id, "tool")]


async def test_a_tool_loop_of_several_turns_writes_and_reads_in_the_workspace(
    tmp_path: Path,
) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                msg = '[[tool:write {"path": "notes/a.txt", "content": "hello tools"}]] [[tool:read {"path": "notes/a.txt"}]]'
                final = await client.request(
                    "agent", {"message": msg, "idempotencyKey": "loop"}, expect_final=True
                )
        text = final["result"]["payloads"][0]["text"]
        assert text.startswith("Tool results:") and "hello tools" in text
        workspace = tmp_path / "state" / "workspaces" / "main"
        assert (workspace / "notes" / "a.txt").read_text() == "hello tools"
        store = gw.supervisor.store
        rows = await store.list_sessions()
        entries = await store.load_entries(rows[0].sessionId)
    phases = [(d["phase"], d["name"]) for d in tool_events(events, "loop")]
    assert phases == [
        ("start", "write"),
        ("result", "write"),
        ("start", "read"),
        ("result", "read"),
    ]
    seqs = [p["seq"] for p in run_events(events, "loop")]
    assert seqs == list(range(1, len(seqs) + 1))
    kinds = [type(e.message).__name__ for e in entries]  # type: ignore[union-attr]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]


async def test_tool_events_reach_only_capable_watching_connections(tmp_path: Path) -> None:
    a_events, a_on = recorder_events()
    b_events, b_on = recorder_events()
    c_events, c_on = recorder_events()
    async with running_gateway(tmp_path) as gw:
        url = gateway_url(gw)
        with trio.fail_after(20):
            async with (
                open_gateway_client(
                    url,
                    client_id="test",
                    mode="test",
                    caps=["tool-events"],
                    on_event=a_on,
                    **client_auth(gw),
                ) as a,
                open_gateway_client(
                    url,
                    client_id="test",
                    mode="test",
                    caps=["tool-events"],
                    on_event=b_on,
                    **client_auth(gw),
                ),
                open_client(gw, on_event=c_on) as c,
            ):
                msg = '[[tool:write {"path": "x.txt", "content": "1"}]]'
                await a.request(
                    "agent", {"message": msg, "idempotencyKey": "ta"}, expect_final=True
                )
                await c.request(
                    "agent",
                    {"message": msg, "idempotencyKey": "tc", "sessionKey": "c"},
                    expect_final=True,
                )
                await a.request("health")
                await c.request("health")
    assert len(tool_events(a_events, "ta")) == 2  # started it, advertised the capability
    assert tool_events(b_events, "ta") == []  # capable but not watching
    assert tool_events(c_events, "ta") == []
    assert tool_events(c_events, "tc") == []  # watching but not capable
    for events, run in ((b_events, "ta"), (c_events, "ta"), (c_events, "tc"), (a_events, "ta")):
        seqs = [p["seq"] for p in run_events(events, run)]
        assert seqs == list(range(1, len(seqs) + 1)), "a subscriber saw a phantom gap"
        assert len(terminal_events(events, run)) == 1


async def test_a_denied_tool_is_never_offered_and_never_runs(tmp_path: Path) -> None:
    _events, on_event = recorder_events()
    config = local_config(tools__deny=["exec"])
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                msg = '[[tool:exec {"command": "touch pwned"}]]'
                final = await client.request(
                    "agent", {"message": msg, "idempotencyKey": "deny"}, expect_final=True
                )
    assert "exec failed" in final["result"]["payloads"][0]["text"]
    assert "not available" in final["result"]["payloads"][0]["text"]
    assert not (tmp_path / "state" / "workspaces" / "main" / "pwned").exists()


async def test_sandbox_refusals_reach_the_model_as_tool_errors(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw) as client:
                msg = '[[tool:read {"path": "../../etc/passwd"}]]'
                final = await client.request(
                    "agent", {"message": msg, "idempotencyKey": "esc"}, expect_final=True
                )
    text = final["result"]["payloads"][0]["text"]
    assert "read failed" in text and "Path escapes sandbox root (" in text


async def test_hooks_block_claim_and_shape_the_run(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    seen: dict[str, Any] = {}
    async with running_gateway(tmp_path) as gw:
        hooks = gw.supervisor.hooks

        def block_exec(event: Any) -> Any:
            if event.toolName == "exec":
                return BeforeToolCallResult(block=True, blockReason="no shell here")
            return None

        def noop_lower(event: Any) -> Any:
            return {"block": False}

        def boom(event: Any) -> None:
            raise RuntimeError("observer exploded")

        def prompt(event: Any) -> Any:
            return {"appendSystemContext": "Be brief."}

        def llm_input(event: Any) -> None:
            seen["system"] = event.systemPrompt

        def claim(event: Any) -> Any:
            if "ping" in event.cleanedBody:
                return {"handled": True, "reply": {"text": "pong (from a plugin)"}}
            return None

        hooks.register("before_tool_call", block_exec, priority=10, plugin_id="guard")
        hooks.register("before_tool_call", noop_lower, priority=0, plugin_id="other")
        hooks.register("after_tool_call", boom, plugin_id="bad")
        hooks.register("before_prompt_build", prompt, plugin_id="style")
        hooks.register("llm_input", llm_input, plugin_id="spy")
        hooks.register("before_agent_reply", claim, plugin_id="pinger")
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                final = await client.request(
                    "agent",
                    {"message": '[[tool:exec {"command": "echo hi"}]]', "idempotencyKey": "h1"},
                    expect_final=True,
                )
                assert "tool call blocked: no shell here" in final["result"]["payloads"][0]["text"]
                ok = await client.request(
                    "agent",
                    {
                        "message": '[[tool:write {"path": "f", "content": "x"}]]',
                        "idempotencyKey": "h2",
                    },
                    expect_final=True,
                )
                assert ok["status"] == "ok" and "write:" in ok["result"]["payloads"][0]["text"]
                claimed = await client.request(
                    "agent", {"message": "ping", "idempotencyKey": "h3"}, expect_final=True
                )
                assert claimed["result"]["payloads"] == [{"text": "pong (from a plugin)"}]
    assert seen["system"].endswith("Be brief.")
    results = [d for d in tool_events(events, "h1") if d["phase"] == "result"]
    assert results[0]["isError"] is True


async def test_the_message_tool_sends_a_chat_message_and_dedupes_the_reply(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw, on_event=on_event) as client:
                final = await client.request(
                    "agent",
                    {
                        "message": '[[tool:message {"text": "Hi from the tool"}]]',
                        "idempotencyKey": "m1",
                    },
                    expect_final=True,
                )
    assert final["status"] == "ok"
    sent = [p for (e, p, _s) in events if e == "chat" and p["runId"].startswith("message-m1")]
    assert sent and sent[0]["message"]["content"][0]["text"] == "Hi from the tool"


async def test_model_fallback_records_its_attempts(tmp_path: Path) -> None:
    from runtime.model._config import parse_config

    config = parse_config(
        {
            "models": {
                "providers": {
                    "busy": {
                        "api": "local",
                        "models": [{"id": "m"}],
                        "options": {"failKind": "overloaded"},
                    },
                    "local": {"api": "local", "models": [{"id": "echo"}]},
                }
            },
            "agents": {"defaults": {"model": {"primary": "busy/m", "fallbacks": ["local/echo"]}}},
        }
    )
    async with running_gateway(tmp_path, config) as gw, open_client(gw) as client:
        with trio.fail_after(15):
            final = await client.request(
                "agent", {"message": "hello", "idempotencyKey": "fb"}, expect_final=True
            )
    meta = final["result"]["meta"]
    assert final["result"]["payloads"] == [{"text": "You said: hello"}]
    assert [(a["provider"], a["outcome"]) for a in meta["attempts"]] == [
        ("busy", "error"),
        ("local", "ok"),
    ]
    assert meta["attempts"][0]["errorKind"] == "overloaded"
    assert (meta["agentMeta"]["provider"], meta["agentMeta"]["model"]) == ("local", "echo")
    assert meta["runtime"] == "openclaw"


async def test_session_and_command_hooks_fire(tmp_path: Path) -> None:
    seen: list[tuple[str, Any]] = []
    async with running_gateway(tmp_path) as gw:
        gw.supervisor.hooks.register(
            "session_start", lambda e: seen.append(("start", e.sessionKey))
        )
        gw.supervisor.hooks.register("session_end", lambda e: seen.append(("end", e.reason)))
        gw.supervisor.internal_hooks.register(
            "command", lambda e: seen.append(("command", e.action))
        )
        async with open_client(gw) as client:
            with trio.fail_after(15):
                await client.request(
                    "agent",
                    {"message": "hi", "idempotencyKey": "sh1", "sessionKey": "hooked"},
                    expect_final=True,
                )
                await client.request(
                    "agent",
                    {"message": "/new", "idempotencyKey": "sh2", "sessionKey": "hooked"},
                    expect_final=True,
                )
                await client.request(
                    "chat.send",
                    {"sessionKey": "hooked", "message": "/stop", "idempotencyKey": "sh3"},
                )
    assert ("start", "agent:main:hooked") in seen
    assert ("end", "new") in seen
    assert ("command", "new") in seen and ("command", "stop") in seen
