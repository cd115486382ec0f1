"""A raw protocol client for tests that need frame-level control, and a store whose commits a test can hold."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from actors import Store
from tests.conftest import gateway_url, raw_handshake
from transports.client._client import open_websocket
from transports.server._gateway import Gateway


class Raw:
    """A raw client: every frame it receives, by kind, with a way to wait for one."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self._changed = trio.Event()
        self._n = 0

    async def pump(self) -> None:
        while True:
            self.frames.append(json.loads(await self.ws.get_message()))
            self._changed.set()
            self._changed = trio.Event()

    async def send(self, method: str, params: dict[str, Any], req_id: str | None = None) -> str:
        self._n += 1
        rid = req_id or f"q{self._n}"
        frame = {"type": "req", "id": rid, "method": method, "params": params}
        await self.ws.send_message(json.dumps(frame))
        return rid

    async def cancel(self, req_id: str) -> None:
        await self.ws.send_message(json.dumps({"type": "cancel", "id": req_id}))

    def responses(self, req_id: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == "res" and f["id"] == req_id]

    async def until(self, predicate: Any) -> dict[str, Any]:
        while True:
            for f in self.frames:
                if predicate(f):
                    return f
            await self._changed.wait()

    async def response(self, req_id: str, n: int = 1) -> dict[str, Any]:
        while len(self.responses(req_id)) < n:
            await self._changed.wait()
        return self.responses(req_id)[n - 1]

    async def run(self, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        rid = await self.send("agent", params)
        return await self.response(rid, 1), await self.response(rid, 2)

    def lifecycle(self, run_id: str) -> list[dict[str, Any]]:
        return [
            f["payload"]["data"]
            for f in self.frames
            if f["type"] == "event"
            and f["event"] == "agent"
            and f["payload"]["runId"] == run_id
            and f["payload"]["stream"] == "lifecycle"
        ]


def hold_commits(store: Store, monkeypatch: pytest.MonkeyPatch) -> trio.Event:
    """Make the store's writer wait before each commit until the returned event is set."""
    release = trio.Event()
    original = store._commit

    async def held_commit(batch: Any) -> None:
        await release.wait()
        await original(batch)

    monkeypatch.setattr(store, "_commit", held_commit)
    return release


async def warm(raw: Raw, key: str) -> None:
    ack, final = await raw.run(
        {"message": "warm", "idempotencyKey": f"warm-{key}", "sessionKey": key}
    )
    assert ack["payload"]["status"] == "accepted" and final["payload"]["status"] == "ok"


@asynccontextmanager
async def raw_client(gw: Gateway) -> AsyncIterator[Raw]:
    async with open_websocket(gateway_url(gw)) as ws:
        await raw_handshake(ws, caps=["session-scoped-events"], gw=gw)
        raw = Raw(ws)
        async with trio.open_nursery() as n:
            n.start_soon(raw.pump)
            yield raw
            n.cancel_scope.cancel()
