"""A scripted HTTP/1.1 server on a trio loopback socket, for the provider transports.

Each request takes the next `Script` from the queue and gets its status, headers and chunks
(HTTP chunked encoding). A `Pause` in the chunk list makes the server wait for a trio Event
before going on (never a sleep); `Pause.reached` tells the test the server got there. While
a response is being sent the server watches the socket, and if the client goes away before
the response is complete it sets `Script.disconnected`: the proof that an abort or an idle
timeout really closed the HTTP stream.

    async with open_sse_server() as server:
        script = server.push(Script(chunks=[sse({"a": 1}), Pause(), sse_done()]))
        ...  # point a provider at server.url
        await script.disconnected.wait()

Requests are recorded (`server.requests`) so tests can check the bodies the transports send.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import h11
import msgspec
import trio

__all__ = [
    "Pause",
    "RecordedRequest",
    "SSEServer",
    "Script",
    "json_error",
    "open_sse_server",
    "sse",
]


@attrs.define(eq=False)
class Pause:
    """Wait here until `release` is set. `reached` is set when the server arrives."""

    release: trio.Event = attrs.field(factory=trio.Event)
    reached: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class Script:
    """One scripted response.

    Attributes:
        status: the HTTP status.
        headers: response headers (``content-type: text/event-stream`` unless given).
        chunks: bytes to send, each as one HTTP chunk, and `Pause` points.
        truncate: close the connection after the chunks without the final empty chunk,
            like a network drop (the client sees an incomplete body).
        started: set when the request for this script arrived.
        finished: set when the whole response was sent.
        disconnected: set when the client went away before the response was complete.
    """

    status: int = 200
    headers: list[tuple[str, str]] = attrs.field(factory=list)
    chunks: Sequence[bytes | Pause] = attrs.field(factory=list)
    truncate: bool = False
    started: trio.Event = attrs.field(factory=trio.Event)
    finished: trio.Event = attrs.field(factory=trio.Event)
    disconnected: trio.Event = attrs.field(factory=trio.Event)


@attrs.frozen
class RecordedRequest:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


def sse(data: Any, *, event: str | None = None) -> bytes:
    """One SSE event: ``event:`` (if given) and one ``data:`` line of JSON (or a raw str)."""
    payload = data if isinstance(data, str) else msgspec.json.encode(data).decode()
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {payload}\n\n".encode()


def json_error(status: int, body: Any, headers: list[tuple[str, str]] | None = None) -> Script:
    """A non-streamed JSON error response."""
    return Script(
        status=status,
        headers=[("content-type", "application/json"), *(headers or [])],
        chunks=[msgspec.json.encode(body)],
    )


class SSEServer:
    """The server state a test talks to (see the module docstring)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.requests: list[RecordedRequest] = []
        self.connections = 0
        self.unscripted = 0
        self._scripts: deque[Script] = deque()

    def push(self, *scripts: Script) -> Script:
        """Queue responses, in order; returns the last one."""
        self._scripts.extend(scripts)
        return scripts[-1]

    async def _serve(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read_request(stream, conn)
                if request is None:
                    return
                self.requests.append(request)
                script = self._scripts.popleft() if self._scripts else None
                if script is None:
                    self.unscripted += 1
                    script = Script(
                        status=599,
                        headers=[("content-type", "text/plain")],
                        chunks=[b"unscripted request"],
                    )
                script.started.set()
                complete = await self._respond(stream, conn, script)
                if (
                    not complete
                    or conn.our_state is not h11.DONE
                    or conn.their_state is not h11.DONE
                ):
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            return
        finally:
            await stream.aclose()

    @staticmethod
    async def _read_request(
        stream: trio.SocketStream, conn: h11.Connection
    ) -> RecordedRequest | None:
        head: h11.Request | None = None
        body: list[bytes] = []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                return RecordedRequest(
                    method=head.method.decode(),
                    target=head.target.decode(),
                    headers={k.decode().lower(): v.decode() for k, v in head.headers},
                    body=b"".join(body),
                )
            elif isinstance(event, h11.ConnectionClosed):
                return None
            else:  # pragma: no cover - PAUSED never happens before a response
                raise AssertionError(f"unexpected h11 event {event!r}")

    @staticmethod
    async def _respond(stream: trio.SocketStream, conn: h11.Connection, script: Script) -> bool:
        """Send the script; False when the client went away (or the script truncates)."""
        headers = list(script.headers)
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("content-type", "text/event-stream"))
        gone = False

        async def watch(cancel: trio.CancelScope) -> None:
            # A client has nothing to send during a response: EOF means it closed.
            nonlocal gone
            try:
                while True:
                    data = await stream.receive_some(65536)
                    if not data:
                        break
                    conn.receive_data(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            if conn.our_state is not h11.DONE:  # a close after a complete response is normal
                gone = True
                script.disconnected.set()
            cancel.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch, nursery.cancel_scope)
            try:
                await stream.send_all(
                    conn.send(h11.Response(status_code=script.status, headers=headers)) or b""
                )
                for chunk in script.chunks:
                    if isinstance(chunk, Pause):
                        chunk.reached.set()
                        await chunk.release.wait()
                    elif chunk:
                        await stream.send_all(conn.send(h11.Data(data=chunk)) or b"")
                if script.truncate:
                    nursery.cancel_scope.cancel()
                    return False
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                gone = True
                script.disconnected.set()
            nursery.cancel_scope.cancel()
        if not gone:
            script.finished.set()
        return not gone


@asynccontextmanager
async def open_sse_server() -> AsyncIterator[SSEServer]:
    """Serve on 127.0.0.1 on a free port until the block exits (then every task is cancelled)."""
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        server = SSEServer(port)
        await nursery.start(trio.serve_listeners, server._serve, listeners)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
