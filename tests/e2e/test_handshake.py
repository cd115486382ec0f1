"""Handshake per protocol v4: challenge first, connect first, protocol, token, size, timeout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio_websocket

from tests.conftest import (
    TEST_DEVICE,
    connect_params,
    frame_checker,
    gateway_url,
    local_config,
    open_client,
    running_gateway,
)
from transports import GatewayAuthError, GatewayConfigError, open_gateway_client
from transports.client._client import open_websocket
from transports.server._gateway import auth_settings

CONNECT: dict[str, Any] = {
    "minProtocol": 4,
    "maxProtocol": 4,
    "client": {"id": "test", "version": "1", "platform": "python", "mode": "test"},
}


async def _first(ws: trio_websocket.WebSocketConnection) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads(await ws.get_message())
    return frame


def _reason(exc: trio_websocket.ConnectionClosed) -> trio_websocket.CloseReason:
    assert exc.reason is not None
    return exc.reason


def _check(frame: dict[str, Any], method: str | None = None) -> None:
    frame_checker().check(frame, method)


async def test_challenge_is_the_first_frame_and_hello_ok_validates(gateway) -> None:
    with trio.fail_after(10):
        async with open_websocket(gateway_url(gateway)) as ws:
            challenge = await _first(ws)
            _check(challenge)
            assert challenge["event"] == "connect.challenge"
            assert challenge["payload"]["nonce"] and isinstance(challenge["payload"]["ts"], int)
            params = connect_params(gateway, challenge)
            await ws.send_message(
                json.dumps({"type": "req", "id": "1", "method": "connect", "params": params})
            )
            res = await _first(ws)
            _check(res, "connect")
            assert res["ok"] is True and res["id"] == "1"
            hello = res["payload"]
            assert hello["type"] == "hello-ok" and hello["protocol"] == 4
            assert hello["server"]["connId"]
            assert "agent" in hello["features"]["methods"] and "tick" in hello["features"]["events"]
            # every event the gateway sends is advertised, once (each method module names its)
            events = hello["features"]["events"]
            assert len(events) == len(set(events))
            for sent in (
                "connect.challenge",
                "agent",
                "chat",
                "sessions.changed",
                "session.message",
                "runtime.generation",
                "cron",
                "plugin.approval.requested",
                "exec.approval.requested",
                "exec.approval.resolved",
                "question.requested",
                "question.resolved",
                "progressCard.changed",
                "users.prefs.changed",
                "device.pair.requested",
                "presence",
            ):
                assert sent in events, sent
            assert hello["snapshot"]["sessionDefaults"]["mainSessionKey"] == "agent:main:main"
            assert hello["policy"]["maxPayload"] == 25 * 1024 * 1024
            # Exactly what was asked for, nothing added; the paired device gets a token.
            assert hello["auth"]["scopes"] == params["scopes"]
            assert hello["auth"]["deviceToken"] and hello["auth"]["issuedAtMs"] > 0


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "req", "id": "1", "method": "health"},
        {"type": "event", "event": "x"},
        "not json at all",
    ],
    ids=["other-method", "not-a-request", "bad-json"],
)
async def test_connect_must_be_first(gateway, frame) -> None:
    with trio.fail_after(10):
        async with open_websocket(gateway_url(gateway)) as ws:
            await _first(ws)
            await ws.send_message(frame if isinstance(frame, str) else json.dumps(frame))
            res = await _first(ws)
            _check(res)
            assert res["ok"] is False and res["error"]["code"] == "INVALID_REQUEST"
            assert "connect" in res["error"]["message"]
            with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                await ws.get_message()
            assert _reason(closed.value).code == 1008


async def test_protocol_mismatch_closes_1002(gateway) -> None:
    with trio.fail_after(10):
        async with open_websocket(gateway_url(gateway)) as ws:
            await _first(ws)
            params = {**CONNECT, "minProtocol": 3, "maxProtocol": 3}
            await ws.send_message(
                json.dumps({"type": "req", "id": "1", "method": "connect", "params": params})
            )
            res = await _first(ws)
            _check(res)
            assert res["error"]["code"] == "INVALID_REQUEST"
            assert res["error"]["message"] == "protocol mismatch"
            assert res["error"]["details"]["expectedProtocol"] == 4
            with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                await ws.get_message()
            assert _reason(closed.value).code == 1002


async def test_invalid_connect_params_name_the_field(gateway) -> None:
    with trio.fail_after(10):
        async with open_websocket(gateway_url(gateway)) as ws:
            await _first(ws)
            params = {**CONNECT, "client": {**CONNECT["client"], "mode": "operator"}}
            await ws.send_message(
                json.dumps({"type": "req", "id": "1", "method": "connect", "params": params})
            )
            res = await _first(ws)
            assert res["error"]["code"] == "INVALID_REQUEST"
            assert "client.mode" in res["error"]["message"]


async def test_oversize_preauth_frame_closes_1009(gateway) -> None:
    with trio.fail_after(10):
        async with open_websocket(gateway_url(gateway), max_message_size=1 << 22) as ws:
            await _first(ws)
            await ws.send_message("x" * (70 * 1024))
            with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                await ws.get_message()
            assert _reason(closed.value).code == 1009
            assert _reason(closed.value).reason == "preauth payload too large"


async def test_handshake_timeout_closes_the_socket(tmp_path: Path, autojump_clock) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(60):
            async with open_websocket(gateway_url(gw)) as ws:
                await _first(ws)
                start = trio.current_time()
                with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                    await ws.get_message()
                assert _reason(closed.value).code == 1008
                assert trio.current_time() - start >= 9.9


@pytest.mark.parametrize(
    ("token", "signed", "code"),
    [
        (None, False, "DEVICE_IDENTITY_REQUIRED"),
        ("wrong", False, "AUTH_TOKEN_MISMATCH"),
        (None, True, "AUTH_TOKEN_MISSING"),
        ("wrong", True, "AUTH_TOKEN_MISMATCH"),
    ],
    ids=["missing", "mismatch", "missing-with-device", "mismatch-with-device"],
)
async def test_wrong_token_is_refused(
    tmp_path: Path, token: str | None, signed: bool, code: str
) -> None:
    """OpenClaw's answers: a device-less client without a token is asked for a device
    identity; every other wrong or missing token is `unauthorized`, closed 1008."""
    async with running_gateway(tmp_path, token="s3cret") as gw:
        with trio.fail_after(10):
            with pytest.raises(GatewayAuthError) as err:
                async with open_gateway_client(
                    gateway_url(gw),
                    token=token or "",
                    client_id="test",
                    mode="test",
                    device=TEST_DEVICE if signed else None,
                ):
                    pass
            assert err.value.details["code"] == code
            if code != "DEVICE_IDENTITY_REQUIRED":
                assert str(err.value).startswith("unauthorized: gateway token")
            else:
                assert err.value.code == "NOT_PAIRED"
            async with open_gateway_client(
                gateway_url(gw), token="s3cret", client_id="test", mode="test"
            ) as c:
                assert (await c.request("health"))["ok"] is True
                # Device-less with a token: admitted, but holding no scopes (OpenClaw).
                assert c.hello["auth"]["scopes"] == []


def test_non_loopback_bind_without_token_refuses_to_start(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CLAWLANE_GATEWAY_TOKEN", raising=False)
    with pytest.raises(GatewayConfigError, match="non-loopback bind requires a token"):
        auth_settings(local_config(), token_override=None, host="0.0.0.0")
    with pytest.raises(GatewayConfigError, match="non-loopback bind requires a token"):
        auth_settings(local_config(), token_override=None, host="0.0.0.0", state_dir=tmp_path)
    assert not (tmp_path / "gateway-token").exists()
    assert auth_settings(local_config(), token_override="t", host="0.0.0.0").mode == "token"
    monkeypatch.setenv("CLAWLANE_GATEWAY_TOKEN", "from-env")
    assert auth_settings(local_config(), token_override=None, host="127.0.0.1").token == "from-env"


async def test_missing_scope_is_forbidden_with_details(connect) -> None:
    with trio.fail_after(10):
        async with connect(scopes=["operator.read"]) as client:
            from transports import GatewayRequestError

            with pytest.raises(GatewayRequestError) as err:
                await client.request("agent", {"message": "hi", "idempotencyKey": "k"})
            assert err.value.code == "FORBIDDEN"
            assert err.value.details == {
                "code": "MISSING_SCOPE",
                "missingScope": "operator.write",
                "requiredScopes": ["operator.write"],
            }
            assert (await client.request("health"))["ok"] is True


async def test_ticks_arrive_with_connection_seq(tmp_path: Path, autojump_clock) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(200):
            # Unsigned (ticks go to every connection): under the virtual clock the worker
            # thread of a first pairing's write would let time jump past the connect timeout.
            async with open_client(gw, device=None) as client:
                seqs: list[int | None] = []
                async for event, payload, seq in client.events:
                    if event == "tick":
                        assert isinstance(payload["ts"], int)
                        seqs.append(seq)
                        if len(seqs) == 2:
                            break
                assert seqs[0] is not None and seqs[1] == seqs[0] + 1
