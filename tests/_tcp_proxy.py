"""A TCP proxy a test owns, on a loopback port, between the code under test and a server
(PostgreSQL, Redis): `cut()` breaks the link as a network outage that ends connections
would (every connection through it is closed, new ones are closed as they arrive); `drop()`
breaks it as a partition does (nothing is closed: every byte either way is lost, and new
connections are accepted and hear nothing back); `heal()` lets connections through again
(after a `drop()`, the connections that lost bytes are closed first: their streams are
broken, as a TCP stack would find once the partition ends).

    async with open_tcp_proxy("127.0.0.1", 5432) as proxy:
        url = f"postgresql://postgres@127.0.0.1:{proxy.port}/test"
        ...
        proxy.cut()    # or proxy.drop()
        ...
        proxy.heal()
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


class TcpProxy:
    """See the module docstring. `connections` counts the connections it let through."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.target_port = port
        self.port = 0
        self.connections = 0
        self._cut = False
        self._dropping = False
        self._links: set[trio.CancelScope] = set()
        self._lossy: set[trio.CancelScope] = set()

    @property
    def state(self) -> str:
        """`open`, `cut` or `dropping`."""
        return "cut" if self._cut else "dropping" if self._dropping else "open"

    def cut(self) -> None:
        """Close every connection through the proxy, and each new one as it arrives."""
        self._cut = True
        self._dropping = False
        for scope in list(self._links):
            scope.cancel()

    def drop(self) -> None:
        """Lose every byte either way from now on, closing nothing (a partition)."""
        self._dropping = True
        self._lossy.update(self._links)

    def heal(self) -> None:
        """Let new connections through again (closing those a `drop()` made lose bytes)."""
        self._cut = False
        self._dropping = False
        for scope in list(self._lossy):
            scope.cancel()
        self._lossy.clear()

    async def handle(self, client: trio.SocketStream) -> None:
        async with client:
            if self._cut:
                return
            if self._dropping:
                await self._swallow(client)
                return
            try:
                upstream = await trio.open_tcp_stream(self.host, self.target_port)
            except OSError:
                return
            self.connections += 1
            with trio.CancelScope() as scope:
                self._links.add(scope)
                if self.state == "dropping":  # dropped while it connected: bytes were lost
                    self._lossy.add(scope)
                try:
                    async with upstream, trio.open_nursery() as nursery:
                        nursery.start_soon(self._pipe, client, upstream, nursery.cancel_scope)
                        nursery.start_soon(self._pipe, upstream, client, nursery.cancel_scope)
                finally:
                    self._links.discard(scope)
                    self._lossy.discard(scope)

    async def _swallow(self, client: trio.SocketStream) -> None:
        """A connection made during a partition: it reaches nobody; closed at the heal."""
        with trio.CancelScope() as scope:
            self._links.add(scope)
            self._lossy.add(scope)
            try:
                while await client.receive_some(65536):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            finally:
                self._links.discard(scope)
                self._lossy.discard(scope)

    async def _pipe(
        self, src: trio.SocketStream, dst: trio.SocketStream, done: trio.CancelScope
    ) -> None:
        """Copy `src` to `dst` (losing what arrives while dropping) until either end
        closes; then end the link."""
        try:
            while data := await src.receive_some(65536):
                if not self._dropping:
                    await dst.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            done.cancel()


@asynccontextmanager
async def open_tcp_proxy(host: str, port: int) -> AsyncIterator[TcpProxy]:
    """A proxy to `host:port` listening on a free loopback port (`proxy.port`)."""
    proxy = TcpProxy(host, port)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, proxy.handle, 0, host="127.0.0.1")
        )
        proxy.port = listeners[0].socket.getsockname()[1]
        try:
            yield proxy
        finally:
            proxy.cut()
            nursery.cancel_scope.cancel()
