"""Tool Search over a real gateway, as OpenClaw 2026.9.6 runs it by default: the model is
offered the core coding tools and `tool_search` / `tool_describe` / `tool_call`, the system
prompt lists the deferred tools, and a tool called through `tool_call` runs as a call of its
own (hooks, policy, the exec policy) with events named for the real tool.

Driven by the `local` model's `[[tool:...]]` directives (it calls a deferred tool through
`tool_call` as a model reading the directory would) and by a scripted OpenAI-style provider
on loopback, whose recorded requests show what was offered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model._config import Config, parse_config
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events
from tests.runtime.llm._sse_server import Script, SSEServer, open_sse_server
from tests.runtime.llm._streams import chat_text, chat_tool_calls

DIRECT = {"ls", "read", "write", "edit", "apply_patch", "exec", "process", "sessions_yield"}
CONTROLS = {"tool_search", "tool_describe", "tool_call"}


def tool_events(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [p["data"] for p in run_events(events, run_id, "tool")]


async def agent(gw: Any, message: str, run_id: str) -> tuple[Events, dict[str, Any]]:
    events, on_event = recorder_events()
    with trio.fail_after(20):
        async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
            final = await client.request(
                "agent", {"message": message, "idempotencyKey": run_id}, expect_final=True
            )
    return events, final


def reply(final: dict[str, Any]) -> str:
    return str(final["result"]["payloads"][0]["text"])


# --- with the local model ----------------------------------------------------------------------


async def test_a_deferred_tool_runs_through_tool_call_with_events_named_for_it(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, str]] = []
    async with running_gateway(tmp_path) as gw:
        hooks = gw.supervisor.hooks
        hooks.register(
            "before_tool_call", lambda e: seen.append(("before", e.toolName)), plugin_id="spy"
        )
        hooks.register(
            "after_tool_call", lambda e: seen.append(("after", e.toolName)), plugin_id="spy"
        )
        events, final = await agent(gw, '[[tool:message {"text": "hello via search"}]]', "m")
    tools = tool_events(events, "m")
    assert [(d["phase"], d["name"]) for d in tools] == [
        ("start", "tool_call"),
        ("start", "message"),
        ("result", "message"),
        ("result", "tool_call"),
    ]
    parent, nested = tools[0], tools[1]
    assert parent["args"] == {"id": "message", "args": {"text": "hello via search"}}
    assert nested["toolCallId"] == f"tool_search_code:{parent['toolCallId']}:message:1"
    assert nested["parentToolCallId"] == parent["toolCallId"]
    assert nested["args"] == {"text": "hello via search"}
    assert tools[2]["parentToolCallId"] == parent["toolCallId"] and tools[2]["isError"] is False
    assert "parentToolCallId" not in tools[3] and tools[3]["isError"] is False
    envelope = json.loads(tools[3]["result"]["content"][0]["text"])
    assert envelope["tool"] == {
        "id": "openclaw:core:message",
        "name": "message",
        "source": "openclaw",
    }
    assert envelope["result"]["content"] == [{"type": "text", "text": "sent"}]
    # hooks ran for the control and for the tool it called
    assert seen == [
        ("before", "tool_call"),
        ("before", "message"),
        ("after", "message"),
        ("after", "tool_call"),
    ]
    assert final["status"] == "ok"  # (the reply itself is deduped against the message sent)
    seqs = [p["seq"] for p in run_events(events, "m")]
    assert seqs == list(range(1, len(seqs) + 1))


async def test_a_hook_blocking_the_real_tool_blocks_it_through_tool_call(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        gw.supervisor.hooks.register(
            "before_tool_call",
            lambda e: (
                {"block": True, "blockReason": "no messages"} if e.toolName == "message" else None
            ),
            plugin_id="guard",
        )
        events, final = await agent(gw, '[[tool:message {"text": "x"}]]', "b")
    results = [d for d in tool_events(events, "b") if d["phase"] == "result"]
    assert [(d["name"], d["isError"]) for d in results] == [("message", True), ("tool_call", True)]
    assert "tool call blocked: no messages" in results[1]["result"]["content"][0]["text"]
    assert reply(final).startswith("Tool results: message failed:")


async def test_the_exec_policy_applies_to_exec_called_through_tool_call(tmp_path: Path) -> None:
    config = local_config(tools__exec={"mode": "deny"})
    call = {"id": "exec", "args": {"command": "touch pwned"}}
    async with running_gateway(tmp_path, config) as gw:
        events, final = await agent(gw, f"[[tool:tool_call {json.dumps(call)}]]", "x")
    results = [d for d in tool_events(events, "x") if d["phase"] == "result"]
    assert [(d["name"], d["isError"]) for d in results] == [("exec", True), ("tool_call", True)]
    assert "denied by policy" in reply(final)
    assert not (tmp_path / "state" / "workspaces" / "main" / "pwned").exists()


async def test_tool_search_finds_the_deferred_tools_the_policy_permits(tmp_path: Path) -> None:
    config = local_config(tools__deny=["web_search"])
    message = '[[tool:tool_search {"query": "search the web", "limit": 5}]]'
    async with running_gateway(tmp_path, config) as gw:
        events, _final = await agent(gw, message, "s")
    (result,) = [d for d in tool_events(events, "s") if d["phase"] == "result"]
    hits = json.loads(result["result"]["content"][0]["text"])
    names = [h["name"] for h in hits]
    assert "web_fetch" in names and "web_search" not in names
    fetch = next(h for h in hits if h["name"] == "web_fetch")
    assert fetch["id"] == "openclaw:core:web_fetch" and fetch["input"].startswith("{ url: string")


async def test_tools_effective_lists_every_permitted_tool_and_no_control(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        await agent(gw, "hi", "e")
        with trio.fail_after(20):
            async with open_client(gw) as client:
                effective = await client.request("tools.effective", {"sessionKey": "main"})
                catalog = await client.request("tools.catalog", {})
    listed = {t["id"] for g in effective["groups"] for t in g["tools"]}
    assert {"web_fetch", "message", "sessions_list", "read"} <= listed
    assert not listed & CONTROLS
    cataloged = {t["id"] for g in catalog["groups"] for t in g["tools"]}
    assert not cataloged & CONTROLS


# --- with an OpenAI-style provider ---------------------------------------------------------------


def provider_config(server: SSEServer, provider: str = "prov", **tools: Any) -> Config:
    raw: dict[str, Any] = {
        "agents": {"defaults": {"model": {"primary": f"{provider}/m1"}}},
        "models": {
            "providers": {
                provider: {
                    "api": "openai-completions",
                    "baseUrl": f"{server.url}/v1",
                    "apiKey": "sk-test",
                    "models": [{"id": "m1", "name": "m1"}],
                }
            }
        },
    }
    if tools:
        raw["tools"] = tools
    return parse_config(raw)


def offered(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body["tools"]}


def system_text(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def tool_message(body: dict[str, Any], call_id: str) -> str:
    (message,) = [m for m in body["messages"] if m.get("tool_call_id") == call_id]
    return str(message["content"])


async def test_the_provider_is_offered_the_direct_tools_and_finds_the_rest(
    tmp_path: Path,
) -> None:
    search = json.dumps({"query": "fetch a web page"})
    call = json.dumps({"id": "message", "args": {"text": "found you"}})
    async with open_sse_server() as server:
        server.push(
            Script(chunks=chat_tool_calls([("c1", "tool_search", [search])])),
            Script(chunks=chat_tool_calls([("c2", "tool_call", [call])])),
            Script(chunks=chat_tool_calls([("c3", "web_fetch", ['{"url": "http://x"}'])])),
            Script(chunks=chat_text(["done"])),
        )
        async with running_gateway(tmp_path, provider_config(server)) as gw:
            events, final = await agent(gw, "find and use tools", "p")
    first, second, third, fourth = (r.json() for r in server.requests)
    assert offered(first) == DIRECT | CONTROLS
    assert "### Deferred Tool Schemas\nAvailable deferred-schema tools:" in system_text(first)
    assert "\n- web_fetch (core): " in system_text(first)
    assert "\n- read (core)" not in system_text(first)
    hits = json.loads(tool_message(second, "c1"))
    assert hits[0]["name"] == "web_fetch"
    envelope = json.loads(tool_message(third, "c2"))
    assert envelope["tool"]["name"] == "message"
    assert envelope["result"]["content"][0]["text"] == "sent"
    # tools mode: a deferred name is no function of its own
    refused = tool_message(fourth, "c3")
    assert "deferred" in refused and "tool_call" in refused
    assert final["status"] == "ok"
    names = [(d["phase"], d["name"]) for d in tool_events(events, "p")]
    assert ("start", "message") in names and ("result", "web_fetch") in names


@pytest.mark.parametrize(
    ("provider", "default", "most"), [("ollama", 5, 10), ("lmstudio", 5, 10), ("prov", 8, 20)]
)
async def test_a_model_served_locally_gets_openclaws_smaller_search_limits(
    tmp_path: Path, provider: str, default: int, most: int
) -> None:
    """OpenClaw's Ollama and LM Studio runs search with limits 5 and 10 (others 8 and 20)
    while `tools.toolSearch` is unset; the provider's id says which, not its loopback URL."""
    searches = [json.dumps({"query": "session agent tool", "limit": 50}), '{"query": "session"}']
    async with open_sse_server() as server:
        server.push(
            Script(chunks=chat_tool_calls([("c1", "tool_search", [searches[0]])])),
            Script(chunks=chat_tool_calls([("c2", "tool_search", [searches[1]])])),
            Script(chunks=chat_text(["done"])),
        )
        async with running_gateway(tmp_path, provider_config(server, provider)) as gw:
            await agent(gw, "find", "limits")
    first, second, third = (r.json() for r in server.requests)
    (described,) = [
        t["function"]["description"]
        for t in first["tools"]
        if t["function"]["name"] == "tool_search"
    ]
    assert f"Default limit: {default}." in described
    hits = len(json.loads(tool_message(second, "c1")))  # 13 tools match, all told
    assert hits == most if most == 10 else 10 < hits <= most
    assert len(json.loads(tool_message(third, "c2"))) == default


async def test_tool_search_false_offers_every_schema_directly(tmp_path: Path) -> None:
    async with open_sse_server() as server:
        server.push(Script(chunks=chat_text(["ok"])))
        config = provider_config(server, toolSearch=False)
        async with running_gateway(tmp_path, config) as gw:
            await agent(gw, "hi", "off")
    (body,) = (r.json() for r in server.requests)
    names = offered(body)
    assert {"web_fetch", "message", "sessions_list", "read", "exec"} <= names
    assert not names & CONTROLS
    assert "Deferred Tool Schemas" not in system_text(body)


async def test_directory_mode_runs_a_deferred_tool_called_by_its_name(tmp_path: Path) -> None:
    async with open_sse_server() as server:
        server.push(
            Script(chunks=chat_tool_calls([("d1", "message", ['{"text": "direct"}'])])),
            Script(chunks=chat_text(["ok"])),
        )
        config = provider_config(server, toolSearch={"mode": "directory"})
        async with running_gateway(tmp_path, config) as gw:
            events, _final = await agent(gw, "hi", "dir")
    first, second = (r.json() for r in server.requests)
    assert offered(first) == DIRECT | CONTROLS
    assert "Call a unique deferred tool name directly" in system_text(first)
    assert tool_message(second, "d1") == "sent"
    assert [(d["phase"], d["name"]) for d in tool_events(events, "dir")] == [
        ("start", "message"),
        ("result", "message"),
    ]
