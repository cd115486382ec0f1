"""A client that sends exactly the frames OpenClaw's own clients send (recorded from
`openclaw@2026.9.6` against OpenClaw's gateway: its CLI, terminal UI and Control UI), and
validates every answer against the schemas (the shared frame checker, by method).

The terminal UI and the Control UI sign a device block over the challenge (here with the
suite's `TEST_DEVICE`, paired silently on loopback); the one-shot CLI sends none."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from runtime.devices._device_auth import SignedFields
from tests.conftest import TEST_DEVICE, frame_checker, gateway_url
from transports.client._client import open_websocket
from transports.server._gateway import Gateway

CLIENT_VERSION = "2026.9.6"
UI_ORIGIN = "http://127.0.0.1:18790"
"""Where the tests' Control UI is served from (allowed in `gateway.controlUi.allowedOrigins`)."""

CLI_CONNECT: dict[str, Any] = {
    "minProtocol": 4,
    "maxProtocol": 4,
    "client": {
        "id": "cli",
        "version": CLIENT_VERSION,
        "platform": "linux",
        "deviceFamily": "Linux",
        "mode": "cli",
        "instanceId": "83a446dd-7e7e-4bf7-b3ff-37f17495e9f5",
    },
    "caps": [],
    "role": "operator",
    "scopes": ["operator.read"],
}
TUI_CONNECT: dict[str, Any] = {
    "minProtocol": 4,
    "maxProtocol": 4,
    "client": {
        "id": "openclaw-tui",
        "displayName": "openclaw-tui",
        "version": CLIENT_VERSION,
        "platform": "linux",
        "deviceFamily": "Linux",
        "mode": "ui",
        "instanceId": "f200d5ad-f91c-4aac-b856-e52a8458bb2c",
    },
    "caps": ["agent-kind", "plugin-approvals", "task-suggestions", "tool-events"],
    "role": "operator",
    "scopes": ["operator.admin", "operator.read", "operator.write", "operator.approvals"],
}
CONTROL_UI_CONNECT: dict[str, Any] = {
    "minProtocol": 4,
    "maxProtocol": 4,
    "client": {
        "id": "openclaw-control-ui",
        "version": CLIENT_VERSION,
        "buildId": "2026.9.6-release-eb377ac59e6c-2026-09-23T16-33-12.144Z",
        "platform": "Linux x86_64",
        "mode": "webchat",
        "instanceId": "c6dfb3fa-9491-47fa-8f5e-18e723074ef0",
        "timeZone": "UTC",
    },
    "role": "operator",
    "scopes": [
        "operator.admin",
        "operator.read",
        "operator.write",
        "operator.approvals",
        "operator.questions",
        "operator.pairing",
    ],
    "modelCatalog": {"sessionKey": "main"},
    "caps": [
        "agent-kind",
        "approvals",
        "task-suggestions",
        "terminal-offset-seq",
        "terminal-session-metadata",
        "terminal-upload-path-style",
        "tool-events",
        "inline-widgets",
        "model-selection-policy",
        "ui-commands",
        "usage-refreshing",
        "model-catalog-snapshot",
    ],
    "userAgent": "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/156.0.0.0 Safari/537.36",
    "locale": "en-US",
}


class OpenClawClient:
    """Requests by method; events as they arrive; every server frame checked."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[str, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._methods: dict[str, str] = {}
        self.events: list[tuple[str, Any]] = []
        self.hello: dict[str, Any] = {}
        self._changed = trio.Event()
        self._checker = frame_checker()

    async def _reader(self) -> None:
        while True:
            frame = json.loads(await self.ws.get_message())
            method = self._methods.get(frame.get("id", "")) if frame.get("type") == "res" else None
            self._checker.check(frame, method)
            if frame.get("type") == "res":
                send = self._waiting.get(frame["id"])
                if send is not None:
                    send.send_nowait(frame)
            elif frame.get("type") == "event":
                self.events.append((frame["event"], frame.get("payload")))
                self._changed.set()
                self._changed = trio.Event()

    async def call(
        self, method: str, params: Any = None, *, ok: bool = True, expect_final: bool = False
    ) -> Any:
        """Send one request as the client does (`<n>:<uuid>` ids); its (first) answer, or
        with `expect_final` the one after the `accepted` ack. With `ok`, an error answer fails
        the test; otherwise the error shape is returned."""
        req_id = f"{next(self._ids)}:{uuid.uuid4()}"
        send, recv = trio.open_memory_channel[dict[str, Any]](8)
        self._waiting[req_id] = send
        self._methods[req_id] = method
        frame: dict[str, Any] = {"type": "req", "id": req_id, "method": method}
        if params is not None:
            frame["params"] = params
        await self.ws.send_message(json.dumps(frame))
        with trio.fail_after(20):
            res = await recv.receive()
            while expect_final and res["ok"] and res["payload"].get("status") == "accepted":
                res = await recv.receive()
        if ok:
            assert res["ok"], f"{method} failed: {res.get('error')}"
            return res["payload"]
        return res.get("payload") if res["ok"] else res["error"]

    async def until(self, predicate: Any) -> Any:
        with trio.fail_after(20):
            while True:
                for event, payload in self.events:
                    if predicate(event, payload):
                        return payload
                await self._changed.wait()

    def chat(self, run_id: str) -> list[dict[str, Any]]:
        return [p for e, p in self.events if e == "chat" and p.get("runId") == run_id]

    async def chat_final(self, run_id: str) -> dict[str, Any]:
        payload: dict[str, Any] = await self.until(
            lambda e, p: e == "chat" and p.get("runId") == run_id and p.get("state") != "delta"
        )
        return payload


@asynccontextmanager
async def openclaw_client(
    gw: Gateway, connect: dict[str, Any], *, origin: str | None = None, **overrides: Any
) -> AsyncIterator[OpenClawClient]:
    """Connected as the client `connect` describes; the Control UI comes from a browser, so
    it sends `UI_ORIGIN` unless told otherwise."""
    params = {**connect, **overrides}
    if origin is None and params["client"]["id"] == "openclaw-control-ui":
        origin = UI_ORIGIN
    token = getattr(gw.auth, "token", None)
    if token:
        params["auth"] = {"token": token}
    async with open_websocket(gateway_url(gw), origin=origin) as ws, trio.open_nursery() as nursery:
        client = OpenClawClient(ws)
        challenge = json.loads(await ws.get_message())
        assert challenge["event"] == "connect.challenge"
        if params["client"]["id"] != "cli":  # the UIs sign, the one-shot CLI does not
            info = params["client"]
            params["device"] = TEST_DEVICE.connect_device(
                SignedFields(
                    device_id=TEST_DEVICE.device_id,
                    client_id=info["id"],
                    client_mode=info["mode"],
                    role=params["role"],
                    scopes=tuple(params["scopes"]),
                    signed_at_ms=int(challenge["payload"]["ts"]),
                    token=token or "",
                    nonce=str(challenge["payload"]["nonce"]),
                    platform=info["platform"],
                    device_family=info.get("deviceFamily", ""),
                )
            )
        nursery.start_soon(client._reader)
        client.hello = await client.call("connect", params)
        try:
            yield client
        finally:
            nursery.cancel_scope.cancel()
