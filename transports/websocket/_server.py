"""The server side of a WebSocket connection: wsproto for the HTTP upgrade; frames parsed by
hand (RFC 6455 section 5, `_codec.FrameParser`) for what the client sends; a hand-built
frame header and one coalesced `send_all` for what we send.

Why parse by hand: wsproto's event machinery costs ~20 µs per received frame, a tenth of a
whole run at thousands of runs a second; the parser (`_codec`, shared with the load
tool's client) does the same
checks (masking, reserved bits and opcodes, control frame rules, fragmentation, UTF-8 of
text and of close reasons, close codes, the size limit before the payload arrives) in a
few. A protocol error closes with 1002 (1007 for bad UTF-8), as wsproto would.

Why not trio-websocket on the server: it writes one frame per `send_message` (~30,000
frames/s on this machine), while draining a connection's pending frames into one `send_all`
reaches several times that (see `scripts/bench`). trio-websocket still serves the client
side (`transports.client._client`).

The outbox is bounded by bytes: past `max_buffered_bytes` the connection is closed with
1008 "slow consumer", its pending frames are dropped, and nobody else ever waits for it.
Event frames are queued without their `seq`; the writer splices in this connection's own
monotonic `seq` as it drains, so every event the client sees is numbered without gaps.

Errors in this module:
- `ConnectionClosed`: the peer went away or the connection was closed by us.
- `MessageTooBig` (`_codec`'s): a client message passed `max_message_bytes`.
"""

from __future__ import annotations

import collections
import http
import logging
import os
from collections.abc import Callable
from typing import Final

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    Event,
    RejectConnection,
    Request,
)
from wsproto.utilities import RemoteProtocolError

from .._errors import TransportError
from . import _codec
from ._codec import (
    CLOSE,
    PING,
    SMALL_HEADERS,
    Control,
    FrameError,
    FrameParser,
    close_frame,
    close_payload,
    control_frame,
    pack_h16,
    text_frame_header,
)
from ._codec import (
    MessageTooBig as MessageTooBig,
)

log = logging.getLogger("clawlane.ws")

RECEIVE_CHUNK: Final = 65_536
MAX_SEND_BATCH: Final = 1 << 20
COALESCE_ROUNDS: Final = 0

CLOSE_NORMAL: Final = 1000
CLOSE_GOING_AWAY: Final = 1001
CLOSE_PROTOCOL_ERROR: Final = _codec.CLOSE_PROTOCOL_ERROR
CLOSE_INVALID_DATA: Final = _codec.CLOSE_INVALID_DATA
CLOSE_POLICY: Final = 1008
CLOSE_TOO_BIG: Final = 1009
NO_STATUS: Final = 1005
MAX_HANDSHAKE_BYTES: Final = 16_384


Admit = Callable[[Request], "tuple[int, str] | None"]
"""Decides an upgrade request before it is accepted: None, or the HTTP `(status, body)`."""


class ConnectionClosed(TransportError):
    """The connection is closed (by the peer, or by us)."""


class _Raw:
    """Bytes to write as they are (already framed): responses, control frames."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class WebSocketServerConnection:
    """One accepted TCP stream speaking WebSocket. Not a checkpoint unless stated."""

    def __init__(
        self, stream: trio.abc.Stream, *, max_buffered_bytes: int, received: bytes = b""
    ) -> None:
        self._stream = stream
        self._ws = WSConnection(ConnectionType.SERVER)
        self._out: collections.deque[bytes | _Raw] = collections.deque()
        self._out_bytes = 0
        self._wake = trio.Event()
        self._seq = 0
        self.max_buffered_bytes = max_buffered_bytes
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self._close_queued = False
        self.writer_done = trio.Event()
        self.peer_closed = False
        self.frames_sent = 0
        self.batches_sent = 0
        self.coalesce_rounds = COALESCE_ROUNDS
        self._accepted = False
        # `received`: what the gateway read to see an upgrade.
        self._parser = FrameParser(
            masked=True, text=True, max_message_bytes=64 * 1024, received=received
        )
        self._in = self._parser.buffer  # the parser's: the handshake reads it first

    # --- handshake ------------------------------------------------------------------------

    async def accept(self, admit: Admit | None = None) -> Request:
        """Read the HTTP upgrade and accept it. A checkpoint. Raises `ConnectionClosed`.

        wsproto parses the request (up to its blank line, which ends a GET) and writes the
        101; what follows it in the same read is the first WebSocket bytes, kept for
        `receive_message`. `admit` sees the request first: a `(status, body)` it returns is
        written as the HTTP answer instead of the 101 (e.g. 403 for an origin not allowed)
        and the connection ends."""
        while True:
            end = self._in.find(b"\r\n\r\n")
            if end >= 0:
                head = bytes(self._in[: end + 4])
                del self._in[: end + 4]
                try:
                    self._ws.receive_data(head)
                except RemoteProtocolError as exc:
                    if exc.event_hint is not None and self._ws.state.name == "CONNECTING":
                        self._out.append(_Raw(self._ws.send(exc.event_hint)))  # e.g. a 400
                        await self._flush_direct()
                    raise ConnectionClosed(f"protocol error: {exc}") from exc
                for event in self._events():
                    if isinstance(event, Request):
                        refusal = admit(event) if admit is not None else None
                        if refusal is not None:
                            await self._refuse(*refusal)
                            raise ConnectionClosed(f"upgrade refused: HTTP {refusal[0]}")
                        self._stream_write_now(self._ws.send(AcceptConnection()))
                        await self._flush_direct()
                        self._accepted = True
                        return event
                    if isinstance(event, RejectConnection):
                        raise ConnectionClosed("rejected")
                raise ConnectionClosed("protocol error: not a WebSocket upgrade request")
            if len(self._in) > MAX_HANDSHAKE_BYTES:
                raise ConnectionClosed("protocol error: upgrade request too large")
            await self._receive()

    async def _refuse(self, status: int, body: str) -> None:
        data = body.encode("utf-8")
        head = (
            f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\nConnection: close\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self._stream_write_now(head.encode("ascii") + data)
        self._close_queued = True
        self.peer_closed = True  # nothing more is read from a refused client
        self._wake.set()
        await self._flush_direct()

    async def _flush_direct(self) -> None:
        # Before the writer runs: write what is queued now.
        parts = [item.data if isinstance(item, _Raw) else item for item in self._out]
        self._out.clear()
        self._out_bytes = 0
        try:
            await self._stream.send_all(b"".join(parts))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("peer went away during the handshake") from exc

    def _stream_write_now(self, data: bytes) -> None:
        self._out.append(_Raw(data))
        self._out_bytes += len(data)

    # --- receiving ------------------------------------------------------------------------

    async def _receive(self) -> None:
        try:
            data = await self._stream.receive_some(RECEIVE_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionClosed("connection lost") from exc
        if not data:
            self.peer_closed = True
            raise ConnectionClosed("peer closed the connection")
        self._in += data

    def _events(self) -> list[Event]:
        try:
            return list(self._ws.events())
        except RemoteProtocolError as exc:
            raise ConnectionClosed(f"protocol error: {exc}") from exc

    async def receive_message(self) -> str:
        """The next complete text (or binary, decoded as UTF-8) message. A checkpoint.

        Answers pings, completes the close handshake. Raises `MessageTooBig` when a message
        passes `max_message_bytes`, `ConnectionClosed` when the connection ends (after
        queueing a close frame: 1002 for a protocol error, 1007 for text that is not
        UTF-8).
        """
        parser = self._parser
        while True:
            # Frames are parsed by `_codec.FrameParser` (not a checkpoint); a message
            # costs this one call, as when the parser lived here.
            try:
                message = parser.next_message()
            except FrameError as exc:
                raise self._fail(exc.code, exc.reason) from None
            if type(message) is str:
                return message
            if message is None:
                await self._receive()
            else:
                assert isinstance(message, Control)
                self._control(message)

    def _fail(self, code: int, reason: str) -> ConnectionClosed:
        """A protocol error by the peer: close with `code` (after what is pending)."""
        self.close(code, reason)
        self.peer_closed = True  # we do not wait for the peer's answer to this
        return ConnectionClosed(f"protocol error: {reason}")

    def _control(self, frame: Control) -> None:
        """A ping (answered) or a close (answered; raises `ConnectionClosed`)."""
        if frame.opcode == PING:
            was_closing = self._close_queued
            self._queue_raw(control_frame(0x8A, frame.payload))
            if self._close_queued and not was_closing:
                raise ConnectionClosed("slow consumer")  # its pong was one too many
        elif frame.opcode == CLOSE:
            self._peer_close(frame.payload)

    def _peer_close(self, payload: bytes) -> None:
        """The peer's close frame: answer it (echoing its code) and end. Always raises."""
        try:
            code, reason = close_payload(payload)
        except FrameError as exc:
            raise self._fail(exc.code, exc.reason) from None
        self.peer_closed = True
        if not self._close_queued:
            self.close_code = code if code is not None else NO_STATUS
            self._queue_raw(close_frame(code, reason))
            self._close_queued = True
        raise ConnectionClosed(f"peer closed ({self.close_code})")

    @property
    def max_message_bytes(self) -> int:
        """The size limit of a message from the peer (`MessageTooBig` past it)."""
        limit = self._parser.max_message_bytes
        assert limit is not None
        return limit

    @max_message_bytes.setter
    def max_message_bytes(self, limit: int) -> None:
        self._parser.max_message_bytes = limit

    async def wait_peer_close(self) -> None:
        """After our close frame: read (and drop) until the peer answers or goes. A checkpoint.

        The size limit holds meanwhile: from a message over it (e.g. the rest of the one that
        made us close 1009) on, what arrives is read and dropped, never kept, until the peer
        goes or the caller's grace ends (so a client still sending gets our close frame, not
        a reset)."""
        while not self.peer_closed:
            try:
                await self.receive_message()
            except ConnectionClosed:
                return
            except MessageTooBig:
                await self._discard_until_eof()
                return

    async def _discard_until_eof(self) -> None:
        self._in.clear()
        self._parser.reset_message()
        while True:
            try:
                data = await self._stream.receive_some(RECEIVE_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                self.peer_closed = True
                return

    @property
    def received_bytes_held(self) -> int:
        """What is kept of what the peer sent: unparsed bytes and a partial message."""
        return self._parser.held

    # --- sending --------------------------------------------------------------------------

    @property
    def buffered_bytes(self) -> int:
        return self._out_bytes

    @property
    def closing(self) -> bool:
        return self._close_queued

    def _queue_raw(self, data: bytes) -> None:
        """Queue a control frame (a pong, our close). It counts against the outbox bound
        like any frame: a peer that pings and never reads is closed 1008 "slow consumer"."""
        if self._close_queued:
            return
        self._out.append(_Raw(data))
        self._out_bytes += len(data)
        self._wake.set()
        if self._out_bytes > self.max_buffered_bytes:
            self.close(CLOSE_POLICY, "slow consumer", drop_pending=True)

    def send_text(self, payload: bytes) -> None:
        """Queue a text message (a response) as it is. Never blocks."""
        if self._close_queued:
            return
        framed = text_frame_header(len(payload)) + payload
        self._out.append(_Raw(framed))
        self._out_bytes += len(framed)
        self._wake.set()
        if self._out_bytes > self.max_buffered_bytes:
            self.close(CLOSE_POLICY, "slow consumer", drop_pending=True)

    def send_event(self, frame: bytes) -> None:
        """Queue an encoded event frame; the writer adds this connection's `seq`. Never blocks."""
        if self._close_queued:
            return
        self._out.append(frame)
        self._out_bytes += len(frame) + 24
        self._wake.set()
        if self._out_bytes > self.max_buffered_bytes:
            self.close(CLOSE_POLICY, "slow consumer", drop_pending=True)

    def close(self, code: int, reason: str, *, drop_pending: bool = False) -> None:
        """Queue a close frame after what is pending (or instead of it). Never blocks."""
        if self._close_queued:
            return
        if drop_pending:
            self._out.clear()
            self._out_bytes = 0
        self.close_code = code
        self.close_reason = reason
        data = close_frame(code, reason) if self._accepted else b""  # no frames before 101
        self._close_queued = True
        if data:
            self._out.append(_Raw(data))
            self._out_bytes += len(data)
        self._wake.set()

    async def run_writer(self) -> None:
        """Drain the outbox into one `send_all` per batch until closed. A checkpoint loop.

        Everything queued by the time the writer runs goes out in one write. With
        `coalesce_rounds` > 0 the writer, once woken, lets the scheduler run that many more
        rounds first, so more of what other runs queue shares the write. Measured on 2 cores
        (`scripts/bench`, `clawlane loadtest`): +10-40 % frames/s when a few runs fan out
        to 100 connections, no gain at 1,000 sessions (batches there are ~19 frames
        already), and +2 ms p50 / +15 ms p99 latency under load; hence 0.
        """
        out = self._out
        small = SMALL_HEADERS
        h16 = pack_h16
        try:
            while True:
                if not out:
                    if self._close_queued:
                        return
                    await self._wake.wait()
                    self._wake = trio.Event()
                    for _ in range(self.coalesce_rounds):
                        await trio.lowlevel.cancel_shielded_checkpoint()
                    continue
                parts: list[bytes] = []
                append = parts.append
                size = 0
                accounted = 0
                frames = 0
                seq = self._seq
                while out and size < MAX_SEND_BATCH:
                    item = out.popleft()
                    if type(item) is bytes:
                        # The event frame ends with "}": splice this connection's seq there.
                        seq += 1
                        tail = b',"seq":%d}' % seq
                        n = len(item) - 1 + len(tail)
                        append(
                            small[n]
                            if n < 126
                            else h16(0x81, 126, n)
                            if n < 65_536
                            else text_frame_header(n)
                        )
                        append(item[:-1])
                        append(tail)
                        size += n
                        accounted += len(item) + 24
                    else:
                        assert isinstance(item, _Raw)
                        append(item.data)
                        size += len(item.data)
                        accounted += len(item.data)
                    frames += 1
                self._seq = seq
                self._out_bytes -= accounted
                if self._out_bytes < 0:
                    self._out_bytes = 0
                data = b"".join(parts)
                sent = self._send_now(data)
                if sent < len(data):
                    await self._stream.send_all(memoryview(data)[sent:] if sent else data)
                self.frames_sent += frames
                self.batches_sent += 1
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._close_queued = True
        finally:
            self.writer_done.set()

    def _send_now(self, data: bytes) -> int:
        """Write what a TCP stream's socket takes now without blocking; the bytes written
        (0 for another kind of stream, or a full socket buffer: `send_all` does the rest).

        `SocketStream.send_all` wraps each send in an async context manager and a
        cancel-shielded checkpoint, a scheduler round for the writer: ~15 µs a batch,
        while the kernel takes a batch whole nearly every time. Not a checkpoint (the
        writer's loop waits on its wake-up event, one). Raises `trio.BrokenResourceError`
        when the peer is gone."""
        stream = self._stream
        if type(stream) is not trio.SocketStream:
            return 0
        fd = stream.socket.fileno()  # -1 once closed (never a reused number)
        if fd < 0:
            raise trio.ClosedResourceError("the socket was closed")
        try:
            return os.write(fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise trio.BrokenResourceError(f"write failed: {exc}") from exc

    async def aclose(self) -> None:
        """Close the TCP stream. A checkpoint; cancellation-safe (closes forcefully)."""
        await trio.aclose_forcefully(self._stream)
