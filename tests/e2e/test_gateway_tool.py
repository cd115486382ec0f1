"""The `gateway` tool on a real gateway: a run driven by the `local` model's
`[[tool:gateway ...]]` directive reads a config subtree; invoked by an admin with
`tools.invoke`, `config.get` by path (secrets redacted, a missing path and the whole
snapshot's size refused as OpenClaw's), `config.schema.lookup`, and `update.run` refused;
the tool writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import recorder_events, run_events

ADMIN = ["operator.admin"]


def gateway_call(**args: Any) -> dict[str, Any]:
    return {"name": "gateway", "args": args}


def payload(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["ok"] is True, answer
    return dict(answer["output"]["details"])


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
        d for p in run_events(events, "cfg", "tool") if (d := p["data"])["phase"] == "result"
    ]
    assert result["name"] == "gateway" and not result["isError"]
    details = result["result"]["details"]
    assert details["ok"] is True and details["result"]["path"] == "agents.defaults.timeoutSeconds"
    assert details["result"]["config"] == 321


async def test_config_reads_and_schema_lookups_as_openclaws(tmp_path: Path) -> None:
    config = local_config(
        models__providers__openai={
            "baseUrl": "http://127.0.0.1:9/v1",
            "apiKey": "sk-very-secret",
            "api": "openai-completions",
            "models": [{"id": "gpt-test"}],
        }
    )
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(20):
            async with open_client(gw, scopes=ADMIN) as admin:
                provider = payload(
                    await admin.request(
                        "tools.invoke",
                        gateway_call(action="config.get", path="models.providers.openai"),
                    )
                )
                first = payload(
                    await admin.request(
                        "tools.invoke",
                        gateway_call(action="config.get", path="models.providers.openai.models[0]"),
                    )
                )
                missing = await admin.request(
                    "tools.invoke", gateway_call(action="config.get", path="agents.nope")
                )
                lookup = payload(
                    await admin.request(
                        "tools.invoke",
                        gateway_call(action="config.schema.lookup", path="agents.defaults"),
                    )
                )
                unknown = payload(
                    await admin.request(
                        "tools.invoke", gateway_call(action="config.schema.lookup", path="nope.x")
                    )
                )
                update = payload(
                    await admin.request("tools.invoke", gateway_call(action="update.run"))
                )
                whole = await admin.request("tools.invoke", gateway_call(action="config.get"))
    result = provider["result"]
    assert result["path"] == "models.providers.openai" and result["hash"]
    assert result["config"]["baseUrl"] == "http://127.0.0.1:9/v1"
    assert "sk-very-secret" not in json.dumps(provider)
    assert first["result"]["config"]["id"] == "gpt-test"
    assert not missing["ok"] and "config path not found: agents.nope" in missing["error"]["message"]
    assert lookup["ok"] is True and lookup["result"]["path"] == "agents.defaults"
    assert unknown == {
        "ok": False,
        "code": "schema_path_not_found",
        "path": "nope.x",
        "message": "config schema path not found",
    }
    assert update["ok"] is False and update["code"] == "unsupported"
    if whole["ok"]:
        assert len(json.dumps(whole["output"]["details"], indent=2)) <= 12_000
    else:
        assert "use path to request a narrower config subtree" in whole["error"]["message"]
