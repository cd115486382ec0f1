"""The server side of a WebSocket connection: wsproto for the HTTP upgrade; frames parsed by
hand (RFC 6455 section 5) for what the client sends; a hand-built frame header and one
coalesced `send_all` for what we send.

Why parse by hand: wsproto's event machinery costs ~20 µs per received frame, a tenth of a
whole run at thousands of runs a second; the parser here (`_next_message`) does the same
checks (masking, reserved bits and opcodes, control frame rules, fragmentation, UTF-8 of
text and of close reasons, close codes, the size limit before the payload arrives) in a
few. A protocol error closes with 1002 (1007 for bad UTF-8), as wsproto would.

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
import http
import logging
import struct
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

from ._errors import TransportError

log = logging.getLogger("clawlane.ws")

RECEIVE_CHUNK: Final = 65_536
MAX_SEND_BATCH: Final = 1 << 20
COALESCE_ROUNDS: Final = 0

CLOSE_NORMAL: Final = 1000
CLOSE_GOING_AWAY: Final = 1001
CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_POLICY: Final = 1008
CLOSE_INVALID_DATA: Final = 1007
CLOSE_TOO_BIG: Final = 1009
NO_STATUS: Final = 1005
MAX_HANDSHAKE_BYTES: Final = 16_384
_LOCAL_ONLY_CODES: Final = frozenset({1005, 1006, 1015})
_DEFINED_CODES: Final = frozenset(
    {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014}
)


Admit = Callable[[Request], "tuple[int, str] | None"]
"""Decides an upgrade request before it is accepted: None, or the HTTP `(status, body)`."""


class ConnectionClosed(TransportError):
    """The connection is closed (by the peer, or by us)."""


class MessageTooBig(TransportError):
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


def _unmask(data: bytes | bytearray, mask: bytes | bytearray) -> bytes:
    """XOR `data` with the 4-byte `mask` repeated (one big-integer XOR, in C)."""
    n = len(data)
    if not n:
        return b""
    key = bytes(mask) * (n // 4 + 1)
    return (int.from_bytes(data, "big") ^ int.from_bytes(key[:n], "big")).to_bytes(n, "big")


def _control_frame(first: int, payload: bytes) -> bytes:
    return bytes((first, len(payload))) + payload


def _close_frame(code: int | None, reason: str) -> bytes:
    """A server close frame: `code` (None: none, as for a peer's 1005) and `reason` cut to
    fit 125 bytes without splitting a character."""
    if code is None or code in _LOCAL_ONLY_CODES:
        return _control_frame(0x88, b"" if code is None else (1000).to_bytes(2, "big"))
    data = reason.encode("utf-8")[:123].decode("utf-8", "ignore").encode("utf-8")
    return _control_frame(0x88, code.to_bytes(2, "big") + data)


def _valid_close_code(code: int) -> bool:
    """RFC 6455 section 7.4: the codes a peer may send."""
    if code in _LOCAL_ONLY_CODES or code < 1000 or code > 4999:
        return False
    return code >= 3000 or code in _DEFINED_CODES


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
        self.max_message_bytes = 64 * 1024
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self._close_queued = False
        self.writer_done = trio.Event()
        self.peer_closed = False
        self.frames_sent = 0
        self.batches_sent = 0
        self.coalesce_rounds = COALESCE_ROUNDS
        self._accepted = False
        self._in = bytearray(received)  # what the gateway read to see an upgrade
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._message_opcode = 0  # of the message being received in fragments (0: none)

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
        while True:
            text = self._next_message()
            if text is not None:
                return text
            await self._receive()

    def _fail(self, code: int, reason: str) -> ConnectionClosed:
        """A protocol error by the peer: close with `code` (after what is pending)."""
        self.close(code, reason)
        self.peer_closed = True  # we do not wait for the peer's answer to this
        return ConnectionClosed(f"protocol error: {reason}")

    def _next_message(self) -> str | None:
        """Parse frames from what was received (RFC 6455 section 5, client to server) until
        a message completes; None when more bytes are needed. Not a checkpoint."""
        buf = self._in
        pos = 0
        try:
            while True:
                have = len(buf) - pos
                if have < 2:
                    return None
                b0 = buf[pos]
                b1 = buf[pos + 1]
                opcode = b0 & 0x0F
                length = b1 & 0x7F
                head = 2
                if b0 & 0x70:
                    raise self._fail(CLOSE_PROTOCOL_ERROR, "reserved bits set")
                if not b1 & 0x80:
                    raise self._fail(CLOSE_PROTOCOL_ERROR, "client frames must be masked")
                if length == 126:
                    if have < 4:
                        return None
                    length = int.from_bytes(buf[pos + 2 : pos + 4], "big")
                    head = 4
                elif length == 127:
                    if have < 10:
                        return None
                    length = int.from_bytes(buf[pos + 2 : pos + 10], "big")
                    head = 10
                    if length >> 63:
                        raise self._fail(CLOSE_PROTOCOL_ERROR, "frame length out of range")
                if opcode >= 8:
                    if not b0 & 0x80 or length > 125:
                        raise self._fail(CLOSE_PROTOCOL_ERROR, "invalid control frame")
                    if opcode > 10:
                        raise self._fail(CLOSE_PROTOCOL_ERROR, f"unknown opcode {opcode}")
                elif opcode > 2:
                    raise self._fail(CLOSE_PROTOCOL_ERROR, f"unknown opcode {opcode}")
                elif self._partial_size + length > self.max_message_bytes:
                    self._reset_message()
                    raise MessageTooBig()
                end = pos + head + 4 + length
                if len(buf) < end:
                    return None
                payload = _unmask(buf[pos + head + 4 : end], buf[pos + head : pos + head + 4])
                pos = end
                if opcode == 0x1 or opcode == 0x2 or opcode == 0x0:
                    if opcode == 0x0:
                        if not self._message_opcode:
                            raise self._fail(CLOSE_PROTOCOL_ERROR, "continuation without a start")
                    elif self._message_opcode:
                        raise self._fail(CLOSE_PROTOCOL_ERROR, "expected a continuation frame")
                    else:
                        self._message_opcode = opcode
                    self._partial.append(payload)
                    self._partial_size += length
                    if b0 & 0x80:
                        return self._finish_message()
                elif opcode == 0x9:
                    was_closing = self._close_queued
                    self._queue_raw(_control_frame(0x8A, payload))
                    if self._close_queued and not was_closing:
                        raise ConnectionClosed("slow consumer")  # its pong was one too many
                elif opcode == 0x8:
                    self._peer_close(payload)
                # 0xA (pong): nothing to do
        finally:
            if pos:
                del buf[:pos]

    def _finish_message(self) -> str:
        data = b"".join(self._partial)
        opcode = self._message_opcode
        self._reset_message()
        if opcode == 0x2:
            return data.decode("utf-8", "replace")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail(CLOSE_INVALID_DATA, "text message is not valid UTF-8") from None

    def _reset_message(self) -> None:
        self._partial.clear()
        self._partial_size = 0
        self._message_opcode = 0

    def _peer_close(self, payload: bytes) -> None:
        """The peer's close frame: answer it (echoing its code) and end. Always raises."""
        code: int | None = None
        reason = ""
        if len(payload) == 1:
            raise self._fail(CLOSE_PROTOCOL_ERROR, "close frame with a 1-byte payload")
        if payload:
            code = int.from_bytes(payload[:2], "big")
            if not _valid_close_code(code):
                raise self._fail(CLOSE_PROTOCOL_ERROR, f"close frame with invalid code {code}")
            try:
                reason = payload[2:].decode("utf-8")
            except UnicodeDecodeError:
                raise self._fail(CLOSE_INVALID_DATA, "close reason is not valid UTF-8") from None
        self.peer_closed = True
        if not self._close_queued:
            self.close_code = code if code is not None else NO_STATUS
            self._queue_raw(_close_frame(code, reason))
            self._close_queued = True
        raise ConnectionClosed(f"peer closed ({self.close_code})")

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
        self._reset_message()
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
        return len(self._in) + self._partial_size

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
        data = _close_frame(code, reason) if self._accepted else b""  # no frames before 101
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
