"""Plain HTTP/1.1 on the gateway's port, with h11 (already installed with wsproto).

The gateway reads a connection's request head once (`read_head`, bounded in bytes and by
the handshake deadline) and looks at it (`is_websocket_upgrade`): a WebSocket upgrade goes
to `_ws` exactly as before; anything else is served here.

Bounds, for hostile clients too:
- the request head: `MAX_HEAD_BYTES` (431 past it) within the gateway's handshake
  deadline (the connection is closed without an answer when it passes);
- the body: each route's `max_body` (413 when `Content-Length` says more, or when a chunked
  body grows past it; 411 for a body without a length where one is needed) within
  `BODY_TIMEOUT_S` (408);
- keep-alive: at most `MAX_REQUESTS` requests on one connection, each next head within
  `KEEPALIVE_IDLE_S`; writes within `WRITE_TIMEOUT_S` (a client that stops reading is cut
  off), except that a streaming response's writer decides its own bound;
- pipelined bytes received while a response is being produced: at most `MAX_HEAD_BYTES`
  are kept (then reading pauses); the end of the stream means the client went away
  (`Exchange.disconnected`), which cancels what the request started.

Errors in this module: `HttpClosed` (the client went away, or a write timed out).
"""

from __future__ import annotations

import http
import logging
import re
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Final

import attrs
import h11
import trio

from .._errors import TransportError

log = logging.getLogger("clawlane.http")

MAX_HEAD_BYTES: Final = 16_384
BODY_TIMEOUT_S: Final = 30.0
KEEPALIVE_IDLE_S: Final = 5.0
WRITE_TIMEOUT_S: Final = 30.0
MAX_REQUESTS: Final = 100
RECEIVE_CHUNK: Final = 65_536
DEFAULT_MAX_BODY: Final = 0
"""Routes that take no body refuse one (413) unless they say otherwise."""

SECURITY_HEADERS: Final = (
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
)
_UPGRADE_WEBSOCKET: Final = re.compile(rb"\r\nupgrade:[ \t]*[^\r\n]*\bwebsocket\b", re.IGNORECASE)


class HttpClosed(TransportError):
    """The client went away, or did not take our bytes in time."""


LINGER_BYTES: Final = 1 << 20


async def lingering_close(stream: trio.SocketStream) -> None:
    """After an answer sent while the client was still sending (413, 431): end our side
    and read (and drop) what it still sends, so that the kernel does not reset the
    connection and throw our answer away before the client read it. At most
    `LINGER_BYTES`; the caller bounds the time. A checkpoint; never raises."""
    try:
        await stream.send_eof()
        dropped = 0
        while dropped < LINGER_BYTES:
            data = await stream.receive_some(RECEIVE_CHUNK)
            if not data:
                return
            dropped += len(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        return


def is_websocket_upgrade(head: bytes | bytearray) -> bool:
    """Whether a request head asks for a WebSocket (an `Upgrade` header naming it). Such
    requests go to wsproto, which answers a malformed upgrade with its own 400."""
    return _UPGRADE_WEBSOCKET.search(head) is not None


async def read_head(stream: trio.abc.ReceiveStream, buf: bytearray) -> bool:
    """Receive into `buf` until it holds a whole request head (its blank line). Returns
    False when the peer closed first or `buf` passed `MAX_HEAD_BYTES` (then `buf` is
    longer than that). A checkpoint; the caller bounds the time. Raises nothing else
    (a broken stream reads as closed)."""
    while (end := buf.find(b"\r\n\r\n")) < 0 or end > MAX_HEAD_BYTES:
        if len(buf) > MAX_HEAD_BYTES:
            return False
        try:
            data = await stream.receive_some(RECEIVE_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        if not data:
            return False
        buf += data
    return True


@attrs.frozen
class Request:
    """One HTTP request, its body read in full."""

    method: str
    target: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    """Lower-cased names; a repeated header's values joined with ", "."""
    body: bytes
    peer: str
    """The TCP peer's address ("" when unknown)."""

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


@attrs.frozen
class Response:
    """A complete response. `headers` are added to the security headers."""

    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def text(cls, status: int, text: str, **kw: tuple[tuple[str, str], ...]) -> Response:
        return cls(status, text.encode(), "text/plain; charset=utf-8", **kw)


@attrs.frozen
class Route:
    """What the router found for a request: its handler and how much body it may send."""

    handler: Handler
    max_body: int = DEFAULT_MAX_BODY


Handler = Callable[["Request", "Exchange"], Awaitable["Response | None"]]
"""Returns the response, or None once it has streamed one itself (`Exchange.stream`)."""
Router = Callable[["Request"], Awaitable["Route | Response"]]
"""Given the request before its body (`body` is empty): its route, or a response at once
(404, 405, 401, 403, 429) so that nobody uploads a body we would refuse anyway. A
checkpoint (a refused credential may be answered late, as the WebSocket path does)."""


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


class Exchange:
    """The response side of one request, for handlers that stream (SSE)."""

    def __init__(self, conn: HttpConnection, method: str) -> None:
        self._conn = conn
        self._head = method == "HEAD"
        self.started = False
        self.disconnected = trio.Event()
        """Set when the client closes its side while the response is being produced."""

    async def stream(self, status: int, content_type: str, headers: list[tuple[str, str]]) -> None:
        """Send the status line and headers of a response whose body follows in pieces
        (chunked, or until close for HTTP/1.0). A checkpoint; raises `HttpClosed`."""
        self.started = True
        await self._conn.send_head(status, content_type, headers, length=None)

    async def write(self, data: bytes, *, timeout_s: float = WRITE_TIMEOUT_S) -> None:
        """One piece of a streamed body. A checkpoint; raises `HttpClosed` (also when the
        client takes longer than `timeout_s` to accept it)."""
        if data and not self._head:
            await self._conn.send_event(h11.Data(data=data), timeout_s=timeout_s)

    async def end(self) -> None:
        """The end of a streamed body. A checkpoint; raises `HttpClosed`."""
        await self._conn.send_event(h11.EndOfMessage())


class HttpConnection:
    """One TCP connection serving HTTP/1.1 requests in turn (keep-alive)."""

    def __init__(self, stream: trio.abc.Stream, received: bytes | bytearray, peer: str) -> None:
        self._stream = stream
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._h11.receive_data(bytes(received))
        self._peer = peer
        self._eof = False
        self.requests = 0
        self.unread = False
        """The connection ended with a request body (or head) not read whole: close it
        with `lingering_close`."""

    async def serve(self, router: Router, *, head_deadline: float) -> None:
        """Serve requests until the client closes, asks to, or breaks a bound. A
        checkpoint; never raises but Cancelled. Does not close the stream."""
        deadline = head_deadline
        try:
            while self.requests < MAX_REQUESTS:
                event: object = None
                with trio.move_on_at(deadline):
                    event = await self._next_event()
                if not isinstance(event, h11.Request):
                    return  # closed, or the head did not arrive in time
                await self._serve_one(event, router)
                if self._h11.their_state not in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
                    self.unread = True  # a refused upload
                    return
                if self._h11.our_state is not h11.DONE or self._h11.their_state is not h11.DONE:
                    return  # closing
                self._h11.start_next_cycle()
                deadline = trio.current_time() + KEEPALIVE_IDLE_S
        except h11.RemoteProtocolError as exc:
            self.unread = True
            await self._refuse(exc.error_status_hint, f"Bad Request: {exc}")
        except HttpClosed:
            return

    async def _refuse(self, status: int, text: str) -> None:
        """Answer a broken request (if nothing was sent yet) and end. Never raises."""
        if self._h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        try:
            await self.send_response(
                Response.text(status, text, headers=(("connection", "close"),))
            )
        except (HttpClosed, h11.LocalProtocolError):
            pass

    async def _receive(self) -> None:
        try:
            data = await self._stream.receive_some(RECEIVE_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise HttpClosed("connection lost") from exc
        if not data:
            self._eof = True
        self._h11.receive_data(bytes(data))

    async def _next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        while True:
            event = self._h11.next_event()
            if event is h11.NEED_DATA:
                if self._eof:
                    return event
                if len(self._h11.trailing_data[0]) > MAX_HEAD_BYTES:
                    raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
                await self._receive()
                continue
            return event

    async def _serve_one(self, request: h11.Request, router: Router) -> None:
        self.requests += 1
        head_size = len(request.target) + sum(len(n) + len(v) + 4 for n, v in request.headers)
        if head_size > MAX_HEAD_BYTES:  # a whole head in one read is not h11's to bound
            raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
        method = request.method.decode("ascii", "replace").upper()
        target = request.target.decode("ascii", "replace")
        parts = urllib.parse.urlsplit(target)
        headers: dict[str, str] = {}
        for name, value in request.headers:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        req = Request(
            method=method,
            target=target,
            path=urllib.parse.unquote(parts.path) or "/",
            query=dict(urllib.parse.parse_qsl(parts.query)),
            headers=headers,
            body=b"",
            peer=self._peer,
        )
        found = await router(req)
        if isinstance(found, Response):
            await self._finish_without_body(found, head=method == "HEAD")
            return
        body = await self._read_body(headers, found.max_body)
        if isinstance(body, Response):
            await self.send_response(body)
            return
        req = attrs.evolve(req, body=body)
        path = req.path
        exchange = Exchange(self, method)
        response: Response | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_disconnect, exchange)
            try:
                response = await found.handler(req, exchange)
            except HttpClosed:
                raise
            except Exception:  # a bug: this request fails, the gateway serves on
                log.exception("HTTP %s %s failed", method, path)
                if exchange.started:
                    raise HttpClosed("the handler failed mid-response") from None
                response = Response.text(500, "Internal Server Error")
            finally:
                nursery.cancel_scope.cancel()
        if response is not None:
            await self.send_response(response, head=method == "HEAD")
        elif not exchange.started:
            await self.send_response(Response.text(500, "Internal Server Error"))

    async def _finish_without_body(self, response: Response, *, head: bool) -> None:
        """A response decided before reading the body: the connection closes after it
        unless the request had none (so an unread upload never becomes the next request)."""
        if self._h11.their_state is not h11.DONE:
            try:
                event = self._h11.next_event()  # a body of 0 bytes may be complete already
            except h11.RemoteProtocolError:
                event = None
            if not isinstance(event, h11.EndOfMessage):
                response = attrs.evolve(
                    response, headers=(*response.headers, ("connection", "close"))
                )
        await self.send_response(response, head=head)

    async def _read_body(self, headers: dict[str, str], limit: int) -> bytes | Response:
        length = headers.get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > limit:
            return Response.text(413, "Payload Too Large", headers=(("connection", "close"),))
        if self._h11.they_are_waiting_for_100_continue:
            await self.send_event(h11.InformationalResponse(status_code=100, headers=[]))
        chunks: list[bytes] = []
        size = 0
        with trio.move_on_after(BODY_TIMEOUT_S):
            while True:
                event = await self._next_event()
                if isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > limit:
                        return Response.text(
                            413, "Payload Too Large", headers=(("connection", "close"),)
                        )
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    return b"".join(chunks)
                else:
                    raise HttpClosed("the client closed before its body ended")
        return Response.text(408, "Request Timeout", headers=(("connection", "close"),))

    async def _watch_disconnect(self, exchange: Exchange) -> None:
        """While a response is produced: notice the client closing. What it pipelines
        meanwhile is kept for the next request (up to `MAX_HEAD_BYTES`; then we stop
        reading and TCP pushes back)."""
        while not self._eof:
            if len(self._h11.trailing_data[0]) > MAX_HEAD_BYTES:
                await trio.sleep_forever()
            try:
                await self._receive()
            except HttpClosed:
                break
        exchange.disconnected.set()

    # --- writing --------------------------------------------------------------------------

    async def send_head(
        self, status: int, content_type: str, headers: list[tuple[str, str]], *, length: int | None
    ) -> None:
        names = {name.lower() for name, _ in headers}
        all_headers = [("content-type", content_type), *SECURITY_HEADERS]
        if "cache-control" not in names:
            all_headers.append(("cache-control", "no-store"))
        if length is not None:
            all_headers.append(("content-length", str(length)))
        all_headers.extend(headers)
        await self.send_event(
            h11.Response(status_code=status, headers=all_headers, reason=_reason(status))
        )

    async def send_response(self, response: Response, *, head: bool = False) -> None:
        """A whole response. A checkpoint; raises `HttpClosed`."""
        await self.send_head(
            response.status,
            response.content_type,
            list(response.headers),
            length=len(response.body),
        )
        if response.body and not head:
            await self.send_event(h11.Data(data=response.body))
        await self.send_event(h11.EndOfMessage())

    async def send_event(self, event: h11.Event, *, timeout_s: float = WRITE_TIMEOUT_S) -> None:
        data = self._h11.send(event)
        if not data:
            return
        with trio.move_on_after(timeout_s) as scope:
            try:
                await self._stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise HttpClosed("connection lost") from exc
        if scope.cancelled_caught:
            raise HttpClosed("the client did not read the response in time")
