"""Helpers for the trust tests: hand-made connects over real sockets."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from typing import Any

import attrs
import trio
import trio_websocket

from tests.conftest import connect_params, gateway_url
from transports.client._client import open_websocket
from transports.server._gateway import Gateway


@attrs.frozen
class Answer:
    """The gateway's answer to one `connect`: the response frame, and the close if refused."""

    res: dict[str, Any]
    close_code: int | None = None
    close_reason: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.res.get("ok"))

    @property
    def error(self) -> dict[str, Any]:
        err: dict[str, Any] = self.res.get("error") or {}
        return err

    @property
    def detail_code(self) -> str | None:
        details = self.error.get("details") or {}
        return details.get("code") if isinstance(details, dict) else None

    @property
    def hello(self) -> dict[str, Any]:
        payload: dict[str, Any] = self.res["payload"]
        return payload


Params = Callable[[dict[str, Any]], dict[str, Any]]


async def connect_once(
    gw: Gateway,
    params: Params | None = None,
    *,
    local_address: str | None = None,
    origin: str | None = None,
    then: Callable[[trio_websocket.WebSocketConnection], Any] | None = None,
) -> Answer:
    """Open a WebSocket, answer the challenge with `params(challenge)` (default: the test
    client's signed connect), and return the answer; a refused connect is read to its
    close. `then(ws)` runs on an accepted connection before it closes."""
    build = params or (lambda ch: connect_params(gw, ch))
    async with open_websocket(gateway_url(gw), local_address=local_address, origin=origin) as ws:
        challenge = json.loads(await ws.get_message())
        await ws.send_message(
            json.dumps({"type": "req", "id": "c", "method": "connect", "params": build(challenge)})
        )
        res = json.loads(await ws.get_message())
        if res.get("ok"):
            if then is not None:
                await then(ws)
            return Answer(res)
        try:
            while True:
                await ws.get_message()
        except trio_websocket.ConnectionClosed as exc:
            assert exc.reason is not None
            return Answer(res, exc.reason.code, exc.reason.reason)


async def request(ws: trio_websocket.WebSocketConnection, method: str, params: Any = None) -> Any:
    """One request on a raw connection; its response frame (events are skipped)."""
    req_id = f"q-{os.urandom(3).hex()}"
    frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
    if params is not None:
        frame["params"] = params
    await ws.send_message(json.dumps(frame))
    while True:
        msg = json.loads(await ws.get_message())
        if msg.get("type") == "res" and msg.get("id") == req_id:
            return msg


def upgrade_request(port: int, *, origin: str | None = None, host: str | None = None) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET / HTTP/1.1",
        f"Host: {host or f'127.0.0.1:{port}'}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def http_answer(stream: trio.SocketStream) -> bytes:
    """Everything the gateway sends until it closes (or the head of a 101)."""
    data = b""
    while True:
        chunk = await stream.receive_some(65_536)
        if not chunk:
            return data
        data += chunk
        if data.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in data:
            return data


def port_of(gw: Gateway) -> int:
    port: int = gw.listeners[0].socket.getsockname()[1]
    return port
