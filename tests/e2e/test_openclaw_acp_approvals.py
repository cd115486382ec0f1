"""OpenClaw's ACP bridge (`openclaw acp` of openclaw@2026.9.6 on Node 24, a subprocess with a
clean home of its own) against a real clawlane gateway whose exec policy asks: this test is
the IDE, speaking ACP JSON-RPC over the bridge's stdio (initialize, session/new,
session/prompt with the local model's exec directive). The gateway's exec approval reaches
the IDE as `session/request_permission`; the IDE's answer reaches the gateway: allow-once runs
the command (a marker file) and the prompt completes; reject leaves no marker and the prompt
still completes. Skipped when Node 24 or the package is not installed
(`../shared/openclaw-peer/peer.sh install`)."""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, BinaryIO

import pytest
import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_exec_approvals import marker
from tests.e2e.test_openclaw_cli_grants import NODE, PACKAGE

TOKEN = "acp-approvals-token"
RUN = '[[tool:exec {"command": "touch marker.txt"}]]'


def bridge_env(home: Path) -> dict[str, str]:
    state = home / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / "openclaw.json").write_text(json.dumps({}))
    return {
        "PATH": f"{NODE.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(state / "openclaw.json"),
        "OPENCLAW_SKIP_CHANNELS": "1",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_OFFLINE": "1",
        "OPENCLAW_HIDE_BANNER": "1",
        "OPENCLAW_SUPPRESS_NOTES": "1",
        "DO_NOT_TRACK": "1",
    }


def log_file(path: Path) -> BinaryIO:
    return path.open("wb")


class AcpIde:
    """The IDE's end of the bridge's stdio: newline-delimited JSON-RPC 2.0. Requests by
    method; the bridge's notifications are kept; its requests for permission are answered
    with `decision` (an ACP option id) and kept."""

    def __init__(self, process: trio.Process, decision: str) -> None:
        self.process = process
        self.decision = decision
        self._ids = itertools.count(1)
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all((json.dumps(message) + "\n").encode())

    async def reader(self) -> None:
        assert self.process.stdout is not None
        buffer = b""
        async for chunk in self.process.stdout:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    await self._dispatch(json.loads(line))

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            self._waiting.pop(message["id"]).send_nowait(message)
        elif method == "session/update":
            self.updates.append(message["params"])
        elif method == "session/request_permission":
            self.permissions.append(message["params"])
            outcome = {"outcome": "selected", "optionId": self.decision}
            await self._send(
                {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}}
            )
        elif "id" in message:  # a client method the IDE does not offer
            error = {"code": -32601, "message": f"method not found: {method}"}
            await self._send({"jsonrpc": "2.0", "id": message["id"], "error": error})

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        req_id = next(self._ids)
        send, recv = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[req_id] = send
        await self._send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
        answer = await recv.receive()
        assert "error" not in answer, f"{method}: {answer['error']}"
        return answer["result"]


@asynccontextmanager
async def acp_bridge(port: int, home: Path, decision: str) -> AsyncIterator[AcpIde]:
    """`openclaw acp` pointed at the gateway on `port` with the token; its stderr (verbose)
    goes to `acp-stderr.txt` beside `home`."""
    argv = [str(NODE), str(PACKAGE / "openclaw.mjs"), "acp", "--verbose", "--no-prefix-cwd"]
    argv += ["--url", f"ws://127.0.0.1:{port}", "--token", TOKEN]
    env = bridge_env(home)
    with log_file(home.parent / "acp-stderr.txt") as stderr:
        process = await trio.lowlevel.open_process(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        ide = AcpIde(process, decision)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ide.reader)
                yield ide
                nursery.cancel_scope.cancel()
        finally:
            assert process.stdin is not None
            await process.stdin.aclose()  # the IDE goes away: the bridge shuts down
            with trio.move_on_after(10) as waited:
                await process.wait()
            if waited.cancelled_caught:
                process.kill()
                await process.wait()


async def prompt_through_bridge(tmp_path: Path, decision: str) -> tuple[AcpIde, Any]:
    config = local_config(tools__exec={"mode": "ask"})
    async with running_gateway(tmp_path, config, token=TOKEN) as gw:
        port = gw.listeners[0].socket.getsockname()[1]
        async with acp_bridge(port, tmp_path / "openclaw-home", decision) as ide:
            await ide.request(
                "initialize",
                {"protocolVersion": 1, "clientCapabilities": {"fs": {}, "terminal": False}},
            )
            session = await ide.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
            assert not marker(tmp_path).exists()
            prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": RUN}]}
            done = await ide.request("session/prompt", prompt)
            async with open_client(gw, token=TOKEN) as admin:
                history = await admin.request("approval.history", {"kind": "exec"})
    return ide, (done, history)


def check_permission(ide: AcpIde) -> dict[str, Any]:
    [asked] = ide.permissions
    tool = asked["toolCall"]
    assert tool["kind"] == "execute" and tool["status"] == "pending"
    assert tool["rawInput"]["command"] == "touch marker.txt"
    assert [o["optionId"] for o in asked["options"]] == ["allow-once", "allow-always", "deny"]
    assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once"]
    return asked


def reply(ide: AcpIde) -> str:
    """The agent's text the IDE was streamed."""
    chunks = [u["update"] for u in ide.updates]
    return "".join(
        c["content"]["text"] for c in chunks if c["sessionUpdate"] == "agent_message_chunk"
    )


def skip_without_openclaw() -> None:
    if not NODE.exists() or not (PACKAGE / "openclaw.mjs").exists():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")


async def test_the_ide_allows_once_and_the_command_runs(tmp_path: Path) -> None:
    skip_without_openclaw()
    with trio.fail_after(120):
        ide, (done, history) = await prompt_through_bridge(tmp_path, "allow-once")
    check_permission(ide)
    assert done["stopReason"] == "end_turn"
    assert marker(tmp_path).exists()
    [item] = history["items"]
    assert item["decision"] == "allow-once"


async def test_the_ide_rejects_and_the_command_does_not_run(tmp_path: Path) -> None:
    skip_without_openclaw()
    with trio.fail_after(120):
        ide, (done, history) = await prompt_through_bridge(tmp_path, "deny")
    check_permission(ide)
    assert done["stopReason"] == "end_turn"
    assert not marker(tmp_path).exists()
    assert "denied the command" in reply(ide)
    [item] = history["items"]
    assert item["decision"] == "deny"
