"""The server side of a WebSocket connection: wsproto for the handshake and for parsing
what the client sends; a hand-built frame header and one coalesced `send_all` for what we send.

Why not trio-websocket on the server: it writes one frame per `send_message` (~30,000
frames/s on this machine), while draining a connection's pending frames into one `send_all`
reaches several times that (see `scripts/bench`). trio-websocket still serves the client
side (`transports._client`).

The outbox is bounded by bytes: past `max_buffered_bytes` the connection is closed with
1008 "slow consumer", its pending frames are dropped, and nobody else ever waits for it.
Event frames are queued without their `seq`; the writer splices in this connection's own
monotonic `seq` as it drains, so every event the client sees is numbered without gaps.

Errors in this module:
- `ConnectionClosed`: the peer went away or the connection was closed by us.
"""

from __future__ import annotations

import collections
import logging
import struct
from typing import Final

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError

log = logging.getLogger("clawlane.ws")

RECEIVE_CHUNK: Final = 65_536
MAX_SEND_BATCH: Final = 1 << 20
COALESCE_ROUNDS: Final = 0

CLOSE_NORMAL: Final = 1000
CLOSE_GOING_AWAY: Final = 1001
CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_POLICY: Final = 1008
CLOSE_TOO_BIG: Final = 1009


class ConnectionClosed(Exception):
    """The connection is closed (by the peer, or by us)."""


class MessageTooBig(Exception):
    """A client message is over the current size limit."""


_SMALL_HEADERS: Final = tuple(bytes((0x81, n)) for n in range(126))
_pack_h16: Final = struct.Struct("!BBH").pack
_pack_h64: Final = struct.Struct("!BBQ").pack


def text_frame_header(length: int) -> bytes:
    """A server (unmasked) FIN text frame header for a payload of `length` bytes."""
    if length < 126:
        return _SMALL_HEADERS[length]
    if length < 65_536:
        return _pack_h16(0x81, 126, length)
    return _pack_h64(0x81, 127, length)


class _Raw:
    """Bytes to write as they are (already framed): responses, control frames."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class WebSocketServerConnection:
    """One accepted TCP stream speaking WebSocket. Not a checkpoint unless stated."""

    def __init__(self, stream: trio.abc.Stream, *, max_buffered_bytes: int) -> None:
        self._stream = stream
        self._ws = WSConnection(ConnectionType.SERVER)
        self._out: collections.deque[bytes | _Raw] = collections.deque()
        self._out_bytes = 0
        self._wake = trio.Event()
        self._seq = 0
        self.max_buffered_bytes = max_buffered_bytes
        self.max_message_bytes = 64 * 1024
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self._close_queued = False
        self.writer_done = trio.Event()
        self.peer_closed = False
        self.frames_sent = 0
        self.batches_sent = 0
        self.coalesce_rounds = COALESCE_ROUNDS
        self._pending_events: list[Event] = []
        self._partial: list[str] = []
        self._partial_size = 0

    # --- handshake ------------------------------------------------------------------------

    async def accept(self) -> Request:
        """Read the HTTP upgrade and accept it. A checkpoint. Raises `ConnectionClosed`."""
        while True:
            for event in self._events():
                if isinstance(event, Request):
                    self._stream_write_now(self._ws.send(AcceptConnection()))
                    await self._flush_direct()
                    return event
            await self._receive()

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
        try:
            self._ws.receive_data(bytes(data))
        except RemoteProtocolError as exc:
            if exc.event_hint is not None and self._ws.state.name == "CONNECTING":
                self._out.append(_Raw(self._ws.send(exc.event_hint)))
                await self._flush_direct()
            raise ConnectionClosed(f"protocol error: {exc}") from exc

    def _events(self) -> list[Event]:
        try:
            return list(self._ws.events())
        except RemoteProtocolError as exc:
            raise ConnectionClosed(f"protocol error: {exc}") from exc

    async def receive_message(self) -> str:
        """The next complete text (or binary, decoded as UTF-8) message. A checkpoint.

        Answers pings, completes the close handshake. Raises `MessageTooBig` when a message
        passes `max_message_bytes`, `ConnectionClosed` when the connection ends.
        """
        while True:
            while self._pending_events:
                event = self._pending_events.pop(0)
                if isinstance(event, TextMessage | BytesMessage):
                    chunk = (
                        event.data
                        if isinstance(event.data, str)
                        else event.data.decode("utf-8", "replace")
                    )
                    self._partial_size += len(chunk)
                    if self._partial_size > self.max_message_bytes:
                        self._partial.clear()
                        self._partial_size = 0
                        raise MessageTooBig()
                    self._partial.append(chunk)
                    if event.message_finished:
                        text = "".join(self._partial)
                        self._partial.clear()
                        self._partial_size = 0
                        return text
                elif isinstance(event, Ping):
                    self._queue_raw(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    self.peer_closed = True
                    if not self._close_queued:
                        self.close_code = event.code
                        self._queue_raw(self._ws.send(event.response()))
                        self._close_queued = True
                    raise ConnectionClosed(f"peer closed ({event.code})")
                elif isinstance(event, RejectConnection):
                    raise ConnectionClosed("rejected")
            await self._receive()
            self._pending_events.extend(self._events())

    async def wait_peer_close(self) -> None:
        """After our close frame: read (and drop) until the peer answers or goes. A checkpoint."""
        self.max_message_bytes = 1 << 62
        while not self.peer_closed:
            try:
                await self.receive_message()
            except ConnectionClosed:
                return

    # --- sending --------------------------------------------------------------------------

    @property
    def buffered_bytes(self) -> int:
        return self._out_bytes

    @property
    def closing(self) -> bool:
        return self._close_queued

    def _queue_raw(self, data: bytes) -> None:
        if self._close_queued:
            return
        self._out.append(_Raw(data))
        self._out_bytes += len(data)
        self._wake.set()

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
        try:
            data = self._ws.send(CloseConnection(code=code, reason=reason))
        except Exception:  # wsproto refuses when the connection is not open
            data = b""
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
        small = _SMALL_HEADERS
        h16 = _pack_h16
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
                await self._stream.send_all(b"".join(parts))
                self.frames_sent += frames
                self.batches_sent += 1
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._close_queued = True
        finally:
            self.writer_done.set()

    async def aclose(self) -> None:
        """Close the TCP stream. A checkpoint; cancellation-safe (closes forcefully)."""
        await trio.aclose_forcefully(self._stream)
