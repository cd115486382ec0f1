"""The `gateway` tool on a real gateway: a run driven by the `local` model's
`[[tool:gateway ...]]` directives reads config subtrees by path (secrets redacted, a missing
path and the whole snapshot's size refused as OpenClaw's), looks up the schema, and is
refused `update.run`; the tool writes nothing, and `tools.invoke` never reaches it (OpenClaw's
default deny list)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import recorder_events, run_events


async def test_a_run_reads_a_config_subtree(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    call = {"action": "config.get", "path": "agents.defaults.timeoutSeconds"}
    async with running_gateway(tmp_path, local_config(agents__defaults__timeoutSeconds=321)) as gw:
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                final = await client.request(
                    "agent",
                    {"message": f"[[tool:gateway {json.dumps(call)}]]", "idempotencyKey": "cfg"},
                    expect_final=True,
                )
    assert final["status"] == "ok"
    [result] = [
        d
        for p in run_events(events, "cfg", "tool")
        if (d := p["data"])["phase"] == "result" and d["name"] != "tool_call"
    ]
    assert result["name"] == "gateway" and not result["isError"]
    details = result["result"]["details"]
    assert details["ok"] is True and details["result"]["path"] == "agents.defaults.timeoutSeconds"
    assert details["result"]["config"] == 321


async def test_config_reads_and_schema_lookups_as_openclaws(tmp_path: Path) -> None:
    openai = {
        "baseUrl": "http://127.0.0.1:9/v1",
        "apiKey": "sk-very-secret",
        "api": "openai-completions",
        "models": [{"id": "gpt-test"}],
    }
    local = {"api": "local", "models": [{"id": "echo", "name": "Echo"}]}
    config = local_config(
        models__providers={"local": local, "openai": openai},
        agents__defaults__model={"primary": "local/echo"},
    )
    calls = [
        {"action": "config.get", "path": "models.providers.openai"},
        {"action": "config.get", "path": "models.providers.openai.models[0]"},
        {"action": "config.get", "path": "agents.nope"},
        {"action": "config.schema.lookup", "path": "agents.defaults"},
        {"action": "config.schema.lookup", "path": "nope.x"},
        {"action": "update.run"},
        {"action": "config.get"},
    ]
    message = " ".join(f"[[tool:gateway {json.dumps(c)}]]" for c in calls)
    events, on_event = recorder_events()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                await client.request(
                    "agent", {"message": message, "idempotencyKey": "reads"}, expect_final=True
                )
            invoked = await _invoke_as_admin(gw)
    results = [
        d
        for p in run_events(events, "reads", "tool")
        if (d := p["data"])["phase"] == "result" and d["name"] != "tool_call"
    ]
    assert [r["name"] for r in results] == ["gateway"] * len(calls)
    provider, first, missing, lookup, unknown, update, whole = results
    result = provider["result"]["details"]["result"]
    assert result["path"] == "models.providers.openai" and result["hash"]
    assert result["config"]["baseUrl"] == "http://127.0.0.1:9/v1"
    assert "sk-very-secret" not in json.dumps(results)
    assert first["result"]["details"]["result"]["config"]["id"] == "gpt-test"
    assert missing["isError"] and "config path not found: agents.nope" in json.dumps(missing)
    assert lookup["result"]["details"]["ok"] is True
    assert lookup["result"]["details"]["result"]["path"] == "agents.defaults"
    assert unknown["result"]["details"] == {
        "ok": False,
        "code": "schema_path_not_found",
        "path": "nope.x",
        "message": "config schema path not found",
    }
    update_details = update["result"]["details"]
    assert update_details["ok"] is False and update_details["code"] == "unsupported"
    if whole["isError"]:
        assert "use path to request a narrower config subtree" in json.dumps(whole)
    else:
        assert len(json.dumps(whole["result"]["details"], indent=2)) <= 12_000
    # OpenClaw's tools.invoke never reaches the gateway tool (its default deny list).
    assert invoked == {
        "ok": False,
        "toolName": "gateway",
        "error": {"code": "not_found", "message": "Tool not available: gateway"},
    }


async def _invoke_as_admin(gw: Any) -> dict[str, Any]:
    async with open_client(gw, scopes=["operator.admin"]) as admin:
        args = {"action": "config.get", "path": "models"}
        answer: dict[str, Any] = await admin.request(
            "tools.invoke", {"name": "gateway", "args": args}
        )
        return answer
