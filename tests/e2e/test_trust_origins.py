"""Safe by default: browser origins, auth on with a generated token, `none` only explicit."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.conftest import connect_params, gateway_url, local_config, open_client, running_gateway
from tests.e2e._trust import connect_once, http_answer, port_of, upgrade_request
from transports import GatewayClientError, GatewayConfigError, GatewayOptions, open_gateway
from transports.client._client import open_websocket

CLI = [sys.executable, "-c", "import sys; from transports.cli._main import main; sys.exit(main())"]


async def _upgrade(port: int, **kw: str | None) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(upgrade_request(port, **kw))
        return await http_answer(stream)


async def test_a_hostile_origin_is_refused_403_before_the_upgrade(gateway) -> None:
    port = port_of(gateway)
    with trio.fail_after(10):
        for origin in (
            "https://evil.example",
            "http://localhost:5173",  # another local page: not the gateway's own origin
            f"http://evil.example:{port}",  # DNS rebinding: a public name on our port
            "null",
            f"http://127.0.0.1:{port}/path",
        ):
            host = f"evil.example:{port}" if "evil.example:" in origin else None
            answer = await _upgrade(port, origin=origin, host=host)
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 403"), (origin, head)
            assert b"101" not in head and b"connect.challenge" not in answer
            assert b"gateway.controlUi.allowedOrigins" in body
        # Our client says so in one line.
        with pytest.raises(GatewayClientError, match="refused the WebSocket upgrade: HTTP 403"):
            async with open_client(gateway, origin="https://evil.example"):
                pass
        # Nothing was upgraded, and the gateway serves on.
        assert not gateway.connections
        async with open_client(gateway) as client:
            assert (await client.request("health"))["ok"] is True


async def test_the_gateways_own_origin_and_listed_origins_are_admitted(tmp_path: Path) -> None:
    config = local_config(gateway__controlUi__allowedOrigins=["https://ui.example"])
    async with running_gateway(tmp_path, config) as gw:
        port = port_of(gw)
        with trio.fail_after(10):
            for origin in (f"http://127.0.0.1:{port}", "https://UI.example"):
                head = await _upgrade(port, origin=origin)
                assert head.startswith(b"HTTP/1.1 101"), (origin, head)
            same = f"http://localhost:{port}"
            assert (await _upgrade(port, origin=same, host=f"localhost:{port}")).startswith(
                b"HTTP/1.1 101"
            )
            # The Control UI from a listed origin, through the whole handshake (its device is
            # paired silently on loopback), and a client without an Origin.
            answer = await connect_once(
                gw,
                lambda ch: connect_params(gw, ch, client_id="openclaw-control-ui", mode="webchat"),
                origin="https://ui.example",
            )
            assert answer.ok, answer.res
            assert (await connect_once(gw)).ok


async def test_an_origin_dropped_from_the_config_is_refused_at_connect(tmp_path: Path) -> None:
    config = local_config(gateway__controlUi__allowedOrigins=["https://ui.example"])
    async with running_gateway(tmp_path, config) as gw:
        assert gw.publisher is not None
        with trio.fail_after(20):
            async with open_websocket(gateway_url(gw), origin="https://ui.example") as ws:
                challenge = json.loads(await ws.get_message())  # upgraded while allowed
                await gw.publisher.publish_config(local_config(), reason="test")
                params = connect_params(gw, challenge)
                await ws.send_message(
                    json.dumps({"type": "req", "id": "c", "method": "connect", "params": params})
                )
                res = json.loads(await ws.get_message())
            assert res["ok"] is False
            assert res["error"]["code"] == "INVALID_REQUEST"
            assert res["error"]["details"] == {
                "code": "CONTROL_UI_ORIGIN_NOT_ALLOWED",
                "reason": "origin not allowed",
            }
            assert "gateway.controlUi.allowedOrigins" in res["error"]["message"]


async def test_a_browser_client_without_an_origin_is_refused(gateway) -> None:
    with trio.fail_after(10):
        answer = await connect_once(
            gateway,
            lambda ch: connect_params(gateway, ch, client_id="openclaw-control-ui", mode="webchat"),
        )
        assert answer.detail_code == "CONTROL_UI_ORIGIN_NOT_ALLOWED"
        assert answer.error["details"]["reason"] == "origin missing or invalid"
        assert answer.close_code == 1008


async def test_first_start_creates_a_0600_token_that_the_cli_reads(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with running_gateway(tmp_path) as gw:
        token_file = state / "gateway-token"
        assert gw.auth.mode == "token" and gw.auth.created and gw.auth.token_file == token_file
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert token_file.read_text().strip() == gw.auth.token
        assert len(gw.auth.token or "") >= 40
        with trio.fail_after(60):
            # The CLI on the same machine: no --token, the gateway's state dir.
            ok = await trio.run_process(
                [*CLI, "call", "health", "--url", gateway_url(gw), "--state-dir", str(state)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            assert ok.returncode == 0, ok.stderr
            assert json.loads(ok.stdout)["ok"] is True
            # Without the token file: refused, and the line says what to do.
            none = await trio.run_process(
                [*CLI, "call", "health", "--url", gateway_url(gw), "--state-dir", str(tmp_path)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env={"PATH": "/usr/bin:/bin"},
            )
            assert none.returncode == 3
            assert b"no token" in none.stderr and len(none.stderr.splitlines()) == 1
    first = gw.auth.token
    async with running_gateway(tmp_path) as again:
        assert again.auth.token == first and not again.auth.created


async def test_the_gateway_says_where_its_token_is(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "clawlane.json"
    config.write_text("{}")
    argv = [*CLI, "gateway", "--port", "0", "--state-dir", str(state), "--config", str(config)]
    with trio.fail_after(60):
        proc = await trio.lowlevel.open_process(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        assert proc.stderr is not None
        out = b""
        try:
            while b"listening on" not in out:  # the startup lines are INFO log records
                chunk = await proc.stderr.receive_some(4096)
                assert chunk, out
                out += chunk
        finally:
            proc.terminate()
            await proc.wait()
            await proc.stderr.aclose()
    lines = out.decode().splitlines()
    assert lines[0].endswith(
        f"INFO    clawlane.gateway: created a gateway token in {(state / 'gateway-token').resolve()} "
        "(clients on this machine read it from there)"
    )


async def test_auth_none_only_when_explicit_and_only_on_loopback(tmp_path: Path) -> None:
    explicit = local_config(gateway__auth__mode="none")
    exposed = GatewayOptions(host="0.0.0.0", port=0, state_dir=tmp_path / "state")
    with pytest.raises(GatewayConfigError, match='"none" is allowed only on a loopback bind'):
        async with open_gateway(explicit, exposed):
            pass
    async with running_gateway(tmp_path, explicit) as gw:
        assert gw.auth.mode == "none" and gw.auth.token is None
        assert not (tmp_path / "state" / "gateway-token").exists()
        with trio.fail_after(10):
            # Device-less, tokenless: admitted with exactly what it asked for.
            answer = await connect_once(
                gw, lambda ch: connect_params(gw, ch, device=None, scopes=["operator.read"])
            )
            assert answer.ok and answer.hello["auth"]["scopes"] == ["operator.read"]
            assert answer.hello["snapshot"]["authMode"] == "none"
    # Unset means a token (the default a user gets).
    async with running_gateway(tmp_path / "b") as gw:
        assert gw.auth.mode == "token"
        with trio.fail_after(10):
            answer = await connect_once(
                gw, lambda ch: connect_params(gw, ch, device=None, token="")
            )
            assert answer.detail_code == "DEVICE_IDENTITY_REQUIRED"
