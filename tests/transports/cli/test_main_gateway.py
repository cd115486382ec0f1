"""The CLI as a user runs it: a real process against a real gateway on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import trio

from tests.conftest import gateway_url, running_gateway

CLI = [sys.executable, "-c", "import sys; from transports.cli._main import main; sys.exit(main())"]


async def clawlane(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [*CLI, *args], capture_stdout=True, capture_stderr=True, check=False
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_call_agent_and_errors_from_the_command_line(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, token="tok") as gw:
        url = gateway_url(gw)
        with trio.fail_after(60):
            ok = await clawlane("call", "health", "--url", url, "--token", "tok")
            assert ok.returncode == 0, ok.stderr
            assert json.loads(ok.stdout)["ok"] is True
            reply = await clawlane("agent", "-m", "hi cli", "--url", url, "--token", "tok")
            assert reply.returncode == 0 and reply.stdout.decode().strip() == "You said: hi cli"
            final = await clawlane(
                "agent", "-m", "json please", "--json", "--url", url, "--token", "tok"
            )
            assert json.loads(final.stdout)["result"]["payloads"] == [
                {"text": "You said: json please"}
            ]
            refused = await clawlane("call", "health", "--url", url, "--token", "nope")
            assert refused.returncode == 3
            assert (
                b"refused the connection" in refused.stderr
                and len(refused.stderr.splitlines()) == 1
            )
            failed = await clawlane(
                "call", "agent", "--params", '{"message": "x"}', "--url", url, "--token", "tok"
            )
            assert failed.returncode == 1 and b"INVALID_REQUEST" in failed.stderr
            bad_json = await clawlane(
                "call", "health", "--params", "{", "--url", url, "--token", "tok"
            )
            assert bad_json.returncode == 2


async def test_unreachable_gateway_and_bad_config_are_one_clear_line(tmp_path: Path) -> None:
    with trio.fail_after(60):
        gone = await clawlane("call", "health", "--url", f"ws://127.0.0.1:{free_port()}")
        assert gone.returncode == 3
        assert gone.stderr.decode().startswith("clawlane: cannot reach the gateway")
        config = tmp_path / "clawlane.json"
        config.write_text(json.dumps({"gateway": {"port": "high"}}))
        bad = await clawlane("gateway", "--config", str(config), "--state-dir", str(tmp_path / "s"))
        assert bad.returncode == 2
        assert b"gateway.port" in bad.stderr
        exposed = await clawlane(
            "gateway",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
            "--state-dir",
            str(tmp_path / "s"),
        )
        assert exposed.returncode == 2 and b"non-loopback bind requires a token" in exposed.stderr
