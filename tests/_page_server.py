"""A real HTTP/1.1 server on a loopback port (trio + h11) serving the pages a test sets, for
`web_fetch`'s tests: each path answers a status, headers and a body; `/hop/N` redirects to
`/hop/N-1` until `/hop/0`, a page; `/stall` sends its headers and then nothing. It counts the
requests each path received."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import h11
import trio


@attrs.frozen
class Page:
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()


@attrs.define
class PageServer:
    pages: dict[str, Page] = attrs.field(factory=dict)
    port: int = 0
    hits: Counter[str] = attrs.field(factory=Counter)
    stalled: trio.Event = attrs.field(factory=trio.Event)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def _page(self, path: str) -> Page:
        if path.startswith("/hop/"):
            left = int(path.removeprefix("/hop/"))
            if left > 0:
                return Page(b"", status=302, headers=(("location", f"/hop/{left - 1}"),))
            return Page(b"<html><body><p>the end of the hops</p></body></html>")
        return self.pages.get(path, Page(b"<h1>Not here</h1>", status=404))

    async def _serve(self, stream: trio.SocketStream) -> None:
        try:
            await self._exchange(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            pass  # the client went away

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
            if not isinstance(event, h11.Request):
                continue
            path = event.target.decode()
            self.hits[path] += 1
            if path == "/stall":
                headers = [("content-type", "text/html"), ("content-length", "100")]
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
                self.stalled.set()
                await trio.sleep_forever()
            page = self._page(path)
            headers = [
                ("content-type", page.content_type),
                ("content-length", str(len(page.body))),
                ("connection", "close"),
                *page.headers,
            ]
            await stream.send_all(conn.send(h11.Response(status_code=page.status, headers=headers)))
            await stream.send_all(conn.send(h11.Data(data=page.body)))
            await stream.send_all(conn.send(h11.EndOfMessage()))
            return


@asynccontextmanager
async def page_server(pages: dict[str, Page] | None = None) -> AsyncIterator[PageServer]:
    server = PageServer(pages or {})
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, server._serve, 0, host="127.0.0.1")
        )
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()
