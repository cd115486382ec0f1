"""A real HTTP/1.1 server on a loopback port (trio + h11) that records what it receives
and answers with the statuses a test sets (the last one repeats)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import h11
import trio


@attrs.define
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@attrs.define
class WebhookServer:
    port: int = 0
    statuses: list[int] = attrs.field(factory=lambda: [200])
    extra_headers: list[tuple[str, str]] = attrs.field(factory=list)
    received: list[Received] = attrs.field(factory=list)
    changed: trio.Event = attrs.field(factory=trio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def wait_for(self, count: int) -> None:
        while len(self.received) < count:
            await self.changed.wait()

    async def _serve(self, stream: trio.SocketStream) -> None:
        try:
            await self._exchange(stream)
        except (trio.BrokenResourceError, h11.RemoteProtocolError):
            pass  # the client went away (its pool closed): nothing to record

    async def _exchange(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request, body = event, b""
                while True:
                    nxt = conn.next_event()
                    if nxt is h11.NEED_DATA:
                        conn.receive_data(await stream.receive_some(65536))
                    elif isinstance(nxt, h11.Data):
                        body += nxt.data
                    elif isinstance(nxt, h11.EndOfMessage):
                        break
                headers = {k.decode().lower(): v.decode() for k, v in request.headers}
                self.received.append(
                    Received(request.method.decode(), request.target.decode(), headers, body)
                )
                status = self.statuses[min(len(self.received), len(self.statuses)) - 1]
                response_headers = [("content-length", "2"), *self.extra_headers]
                await stream.send_all(
                    conn.send(h11.Response(status_code=status, headers=response_headers))
                )
                await stream.send_all(conn.send(h11.Data(data=b"ok")))
                await stream.send_all(conn.send(h11.EndOfMessage()))
                self.changed.set()
                self.changed = trio.Event()
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                return
            else:
                return


@asynccontextmanager
async def webhook_server(**kw: Any) -> AsyncIterator[WebhookServer]:
    server = WebhookServer(**kw)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, server._serve, 0, host="127.0.0.1")
        )
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()
