"""The Control UI's config form over a real socket: `config.schema` (validated as OpenClaw's
`ConfigSchemaResponse`), `config.schema.lookup`, and `config.openFile` answered without
starting anything on the host; a change saved as the form saves it is validated and applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model._config import load_config, write_config_text
from tests.conftest import client_auth, frame_checker, gateway_url, local_config, running_gateway
from transports import GatewayRequestError, open_gateway_client
from transports.server._gateway import Gateway


def client(gw: Gateway, **kw: Any) -> Any:
    return open_gateway_client(
        gateway_url(gw),
        client_id="test",
        mode="test",
        on_frame=frame_checker().check,
        **{**client_auth(gw), **kw},
    )


async def test_schema_lookup_and_open_file(tmp_path: Path) -> None:
    path = tmp_path / "clawlane.json"
    write_config_text(
        path,
        json.dumps({"models": {"providers": {"local": {"api": "local", "models": [{"id": "e"}]}}}}),
    )
    with trio.fail_after(20):
        async with (
            running_gateway(tmp_path, load_config(path), config_path=path) as gw,
            client(gw, scopes=["operator.read"]) as reader,
            client(gw) as admin,
        ):
            answer = await reader.request("config.schema", {})
            frame_checker().validate("ConfigSchemaResponse", answer)
            assert answer["version"] == gw.version
            assert "$ref" not in json.dumps(answer["schema"])
            assert answer["uiHints"]["models.providers.*.apiKey"]["sensitive"] is True

            found = await reader.request("config.schema.lookup", {"path": "agents.defaults"})
            frame_checker().validate("ConfigSchemaLookupResult", found)
            assert any(c["key"] == "model" for c in found["children"])
            with pytest.raises(GatewayRequestError) as missing:
                await reader.request("config.schema.lookup", {"path": "agents.nope"})
            assert missing.value.code == "INVALID_REQUEST"
            with pytest.raises(GatewayRequestError) as bad:
                await reader.request("config.schema.lookup", {"path": "a b"})
            assert bad.value.code == "INVALID_REQUEST" and "path" in bad.value.message

            with pytest.raises(GatewayRequestError) as scope:
                await reader.request("config.openFile", {})
            assert "operator.admin" in scope.value.message
            opened = await admin.request("config.openFile", {})
            assert opened["ok"] is False and opened["path"] == str(path)
            assert str(path) in opened["error"]

            # the form saves a field with config.patch: validated, then applied
            snap = await admin.request("config.get", {})
            patch = {"agents": {"defaults": {"timeoutSeconds": 321}}}
            saved = await admin.request(
                "config.patch", {"raw": json.dumps(patch), "baseHash": snap["hash"]}
            )
            assert saved["changed"] is True
            assert gw.supervisor.generation.config.agents.defaults.timeoutSeconds == 321
            assert json.loads(path.read_text())["agents"]["defaults"]["timeoutSeconds"] == 321


async def test_open_file_without_a_config_file(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with running_gateway(tmp_path, local_config()) as gw, client(gw) as admin:
            opened = await admin.request("config.openFile", {})
    assert opened["ok"] is False and "built-in config" in opened["path"]
