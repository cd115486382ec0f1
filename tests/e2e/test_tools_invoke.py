"""`tools.invoke` and `POST /tools/invoke` on a real gateway: an operator invokes one of an
agent's tools directly, scoped as OpenClaw's (the method needs `operator.write`; HTTP needs
the gateway's token and keeps OpenClaw's deny list); the answers in OpenClaw's shapes (the
WebSocket's validated against `ToolsInvokeResult`), a plugin's block refused, and the
refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.conftest import local_config, open_client, running_gateway
from transports import GatewayRequestError
from transports.server._gateway import Gateway

TOKEN = "invoke-token"
WRITER = ["operator.read", "operator.write"]


def base_url(gw: Gateway) -> str:
    return f"http://127.0.0.1:{gw.listeners[0].socket.getsockname()[1]}"


def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "workspaces" / "main"
    path.mkdir(parents=True, exist_ok=True)
    return path


def text_of(output: dict[str, Any]) -> str:
    return " ".join(c["text"] for c in output["content"] if c["type"] == "text")


async def test_an_operator_invokes_a_tool_over_the_websocket(tmp_path: Path) -> None:
    (workspace(tmp_path) / "note.txt").write_text("hello from the workspace\n")
    async with running_gateway(tmp_path, local_config(), token=TOKEN) as gw:

        def block_card(event: Any) -> Any:
            args = event.params
            if event.toolName == "progress_card" and args.get("markdown") == "forbidden":
                return {"block": True, "blockReason": "not that"}
            return None

        gw.supervisor.hooks.register("before_tool_call", block_card, plugin_id="guard")
        with trio.fail_after(20):
            async with (
                open_client(gw, scopes=WRITER) as writer,
                open_client(gw, scopes=["operator.read"]) as reader,
            ):
                card = await writer.request(
                    "tools.invoke", {"name": "progress_card", "args": {"markdown": "Halfway."}}
                )
                assert (card["ok"], card["toolName"], card["source"]) == (
                    True,
                    "progress_card",
                    "core",
                )
                assert text_of(card["output"]).startswith("Progress card updated (rev 1)")
                assert card["output"]["details"] == {"revision": 1, "steps": None}
                stored = await reader.request("progressCard.get", {"sessionKey": "main"})
                assert stored["card"]["markdown"] == "Halfway."
                for name in ("read", "exec", "gateway", "browser"):
                    missing = await writer.request(
                        "tools.invoke", {"name": name, "sessionKey": "main", "agentId": "main"}
                    )
                    assert missing == {
                        "ok": False,
                        "toolName": name,
                        "error": {"code": "not_found", "message": f"Tool not available: {name}"},
                    }
                bad = await writer.request(
                    "tools.invoke", {"name": "progress_card", "args": {"plan": "no"}}
                )
                assert not bad["ok"] and bad["error"]["code"] == "internal_error"
                assert bad["error"]["message"].startswith(
                    'Validation failed for tool "progress_card":\n  - plan: must be array\n'
                )
                # As OpenClaw's (its peer gateway): a payload reporting an error is what the
                # tool answered; a tool that throws fails the call, with its message.
                missing_session = await writer.request(
                    "tools.invoke", {"name": "sessions_history", "args": {"sessionKey": "nosuch"}}
                )
                assert missing_session["ok"] is True
                assert missing_session["output"]["details"] == {
                    "status": "error",
                    "error": "Session not found: nosuch (use the full sessionKey from sessions_list)",
                }
                unknown = await writer.request(
                    "tools.invoke", {"name": "session_status", "args": {"sessionKey": "no:pe"}}
                )
                assert unknown == {
                    "ok": False,
                    "toolName": "session_status",
                    "error": {"code": "internal_error", "message": "Unknown sessionId: no:pe"},
                }
                blocked = await writer.request(
                    "tools.invoke", {"name": "progress_card", "args": {"markdown": "forbidden"}}
                )
                assert blocked["error"] == {
                    "code": "forbidden",
                    "message": "tool call blocked: not that",
                }
                other = await writer.request(
                    "tools.invoke",
                    {"name": "progress_card", "sessionKey": "main", "agentId": "ops"},
                )
                assert other["error"]["code"] == "validation_error"
                with pytest.raises(GatewayRequestError) as scope:
                    await reader.request("tools.invoke", {"name": "progress_card"})
                assert "operator.write" in str(scope.value)
    assert (workspace(tmp_path) / "note.txt").read_text() == "hello from the workspace\n"


async def test_post_tools_invoke_needs_the_token_and_keeps_openclaws_deny_list(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path, local_config(), token=TOKEN) as gw:
        auth = {"authorization": f"Bearer {TOKEN}"}
        with trio.fail_after(20):
            async with httpx.AsyncClient(base_url=base_url(gw), timeout=10) as http:
                ok = await http.post(
                    "/tools/invoke",
                    headers=auth,
                    json={"tool": "progress_card", "args": {"markdown": "x"}, "dryRun": False},
                )
                assert ok.status_code == 200 and ok.json()["ok"] is True
                assert ok.json()["result"]["details"] == {"revision": 1, "steps": None}
                for name in ("exec", "read", "sessions_send"):
                    denied = await http.post(
                        "/tools/invoke", headers=auth, json={"tool": name, "args": {}}
                    )
                    assert denied.status_code == 404
                    assert denied.json() == {
                        "ok": False,
                        "error": {"type": "not_found", "message": f"Tool not available: {name}"},
                    }
                bad = await http.post(
                    "/tools/invoke",
                    headers=auth,
                    json={"name": "progress_card", "args": {"plan": 1}},
                )
                assert bad.status_code == 400 and bad.json()["error"]["type"] == "tool_error"
                unnamed = await http.post("/tools/invoke", headers=auth, json={"args": {}})
                assert unnamed.status_code == 400
                assert unnamed.json()["error"]["type"] == "invalid_request"
                broken = await http.post("/tools/invoke", headers=auth, content=b"{")
                assert broken.status_code == 400
                anonymous = await http.post("/tools/invoke", json={"tool": "progress_card"})
                assert anonymous.status_code == 401
                wrong = await http.get("/tools/invoke", headers=auth)
                assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert ok.json()["result"]["isError"] is False
