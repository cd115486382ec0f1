"""RFC 6455 frames, sans-IO: the one codec of both WebSocket ends written by hand.

The gateway's connections (`_ws`) and the load tool's client (`_loadtest_conn`) both build
and parse frames here; neither reads or writes a socket in this module.

- Building: `text_frame_header` (a server's unmasked FIN text frame; the writer splices a
  connection's `seq` into pre-encoded event frames with the same small-header table and
  packers), `client_frame` (a client's masked frame), `close_frame`, `control_frame`.
- Masking: `unmask` (one big-integer XOR, in C).
- Parsing: `FrameParser` takes bytes (`buffer`, `feed`) and gives whole messages
  (`next_message`): it checks masking (client frames must be masked, server frames must
  not), reserved bits and opcodes, control frame rules, fragmentation, UTF-8 of text (when
  it decodes text), and the size limit before a payload arrives; pings and closes come
  back as `Control` for the caller to answer, pongs are dropped. `close_payload` checks a
  peer's close frame (code and UTF-8 reason).

Errors: `FrameError` (the peer broke the protocol; `code` is the close code to answer with:
1002, or 1007 for bad UTF-8) and `MessageTooBig` (a message passed the limit), both
`TransportError`s.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Final

from .._errors import TransportError

__all__ = [
    "CLOSE",
    "CLOSE_INVALID_DATA",
    "CLOSE_PROTOCOL_ERROR",
    "PING",
    "Control",
    "FrameError",
    "FrameParser",
    "MessageTooBig",
    "client_frame",
    "close_frame",
    "close_payload",
    "control_frame",
    "text_frame_header",
    "unmask",
]

CONTINUATION: Final = 0x0
TEXT: Final = 0x1
BINARY: Final = 0x2
CLOSE: Final = 0x8
PING: Final = 0x9
PONG: Final = 0xA

CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_INVALID_DATA: Final = 1007
_LOCAL_ONLY_CODES: Final = frozenset({1005, 1006, 1015})
_DEFINED_CODES: Final = frozenset(
    {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014}
)


class FrameError(TransportError):
    """The peer broke RFC 6455; answer with a close frame with `code`."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class MessageTooBig(TransportError):
    """A message is over the parser's size limit."""


# --- building ---------------------------------------------------------------------------------

SMALL_HEADERS: Final = tuple(bytes((0x81, n)) for n in range(126))
"""The headers of unmasked FIN text frames of 0..125 bytes."""
pack_h16: Final = struct.Struct("!BBH").pack
pack_h64: Final = struct.Struct("!BBQ").pack


def text_frame_header(length: int) -> bytes:
    """A server (unmasked) FIN text frame header for a payload of `length` bytes."""
    if length < 126:
        return SMALL_HEADERS[length]
    if length < 65_536:
        return pack_h16(0x81, 126, length)
    return pack_h64(0x81, 127, length)


def client_frame(payload: bytes, opcode: int = TEXT) -> bytes:
    """One masked FIN client frame (RFC 6455 §5.3)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x80 | opcode, 0x80 | n))
    elif n < 65_536:
        head = pack_h16(0x80 | opcode, 0x80 | 126, n)
    else:
        head = pack_h64(0x80 | opcode, 0x80 | 127, n)
    key = os.urandom(4)
    if not n:
        return head + key
    mask = int.from_bytes((key * (n // 4 + 1))[:n], "big")
    return head + key + (int.from_bytes(payload, "big") ^ mask).to_bytes(n, "big")


def unmask(data: bytes | bytearray, mask: bytes | bytearray) -> bytes:
    """XOR `data` with the 4-byte `mask` repeated (one big-integer XOR, in C)."""
    n = len(data)
    if not n:
        return b""
    key = bytes(mask) * (n // 4 + 1)
    return (int.from_bytes(data, "big") ^ int.from_bytes(key[:n], "big")).to_bytes(n, "big")


def control_frame(first: int, payload: bytes) -> bytes:
    """An unmasked control frame (`first`: FIN and opcode) of at most 125 bytes."""
    return bytes((first, len(payload))) + payload


def close_frame(code: int | None, reason: str) -> bytes:
    """A server close frame: `code` (None: none, as for a peer's 1005) and `reason` cut to
    fit 125 bytes without splitting a character."""
    if code is None or code in _LOCAL_ONLY_CODES:
        return control_frame(0x88, b"" if code is None else (1000).to_bytes(2, "big"))
    data = reason.encode("utf-8")[:123].decode("utf-8", "ignore").encode("utf-8")
    return control_frame(0x88, code.to_bytes(2, "big") + data)


def valid_close_code(code: int) -> bool:
    """RFC 6455 section 7.4: the codes a peer may send."""
    if code in _LOCAL_ONLY_CODES or code < 1000 or code > 4999:
        return False
    return code >= 3000 or code in _DEFINED_CODES


def close_payload(payload: bytes) -> tuple[int | None, str]:
    """A peer's close frame: its code (None: none given) and reason. Raises `FrameError`."""
    if len(payload) == 1:
        raise FrameError(CLOSE_PROTOCOL_ERROR, "close frame with a 1-byte payload")
    if not payload:
        return None, ""
    code = int.from_bytes(payload[:2], "big")
    if not valid_close_code(code):
        raise FrameError(CLOSE_PROTOCOL_ERROR, f"close frame with invalid code {code}")
    try:
        return code, payload[2:].decode("utf-8")
    except UnicodeDecodeError:
        raise FrameError(CLOSE_INVALID_DATA, "close reason is not valid UTF-8") from None


# --- parsing ----------------------------------------------------------------------------------


class Control:
    """A ping or a close from the peer, for the caller to answer."""

    __slots__ = ("opcode", "payload")

    def __init__(self, opcode: int, payload: bytes) -> None:
        self.opcode = opcode
        self.payload = payload


class FrameParser:
    """Frames in, messages out, for one direction of one connection.

    `masked`: the frames come from a client (they must be masked; a server's must not be).
    `text`: messages come out as `str` (text decoded strictly, binary with replacement);
    otherwise as the payload `bytes`. `max_message_bytes` may change between messages
    (None: no limit). Not thread-safe; never does I/O."""

    __slots__ = (
        "_masked",
        "_message_opcode",
        "_partial",
        "_partial_size",
        "_text",
        "buffer",
        "max_message_bytes",
    )

    def __init__(
        self,
        *,
        masked: bool,
        text: bool,
        max_message_bytes: int | None = None,
        received: bytes = b"",
    ) -> None:
        self.buffer = bytearray(received)
        """What was received and not parsed yet (the caller appends to it, or `feed`s)."""
        self.max_message_bytes = max_message_bytes
        self._masked = masked
        self._text = text
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._message_opcode = 0  # of the message being received in fragments (0: none)

    def feed(self, data: bytes) -> None:
        self.buffer += data

    @property
    def held(self) -> int:
        """What is kept: unparsed bytes and a partial message."""
        return len(self.buffer) + self._partial_size

    def reset_message(self) -> None:
        """Forget a message received in part."""
        self._partial.clear()
        self._partial_size = 0
        self._message_opcode = 0

    def next_message(self) -> str | bytes | Control | None:
        """Parse frames from `buffer` until a message completes (or a ping or close
        arrives); None when more bytes are needed. Raises `FrameError` and `MessageTooBig`
        (the message so far is dropped). What was parsed leaves `buffer`."""
        buf = self.buffer
        masked = self._masked
        limit = self.max_message_bytes
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
                    raise FrameError(CLOSE_PROTOCOL_ERROR, "reserved bits set")
                if not b1 & 0x80:
                    if masked:
                        raise FrameError(CLOSE_PROTOCOL_ERROR, "client frames must be masked")
                elif not masked:
                    raise FrameError(CLOSE_PROTOCOL_ERROR, "server frames must not be masked")
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
                        raise FrameError(CLOSE_PROTOCOL_ERROR, "frame length out of range")
                if opcode >= 8:
                    if not b0 & 0x80 or length > 125:
                        raise FrameError(CLOSE_PROTOCOL_ERROR, "invalid control frame")
                    if opcode > 10:
                        raise FrameError(CLOSE_PROTOCOL_ERROR, f"unknown opcode {opcode}")
                elif opcode > 2:
                    raise FrameError(CLOSE_PROTOCOL_ERROR, f"unknown opcode {opcode}")
                elif limit is not None and self._partial_size + length > limit:
                    self.reset_message()
                    raise MessageTooBig()
                if masked:
                    end = pos + head + 4 + length
                    if len(buf) < end:
                        return None
                    payload = unmask(buf[pos + head + 4 : end], buf[pos + head : pos + head + 4])
                else:
                    end = pos + head + length
                    if len(buf) < end:
                        return None
                    payload = bytes(buf[pos + head : end])
                pos = end
                if opcode <= 2:
                    if opcode == 0x0:
                        if not self._message_opcode:
                            raise FrameError(CLOSE_PROTOCOL_ERROR, "continuation without a start")
                    elif self._message_opcode:
                        raise FrameError(CLOSE_PROTOCOL_ERROR, "expected a continuation frame")
                    else:
                        self._message_opcode = opcode
                    self._partial.append(payload)
                    self._partial_size += length
                    if b0 & 0x80:
                        return self._finish_message()
                elif opcode != PONG:
                    return Control(opcode, payload)
        finally:
            if pos:
                del buf[:pos]

    def take_whole(self, on_message: Callable[[memoryview], object]) -> None:
        """The fast path of an unmasked, binary-out parser (a client reading a server):
        hand each whole one-frame text or binary message at the start of `buffer` to
        `on_message`, as a view of `buffer` valid during the call only. Stops at anything
        else (a frame not all here, a fragment, a control frame, a broken header), which
        `next_message` then takes, and raises as it should. What was handed leaves
        `buffer`."""
        if self._masked or self._text or self._message_opcode:
            return
        buf = self.buffer
        n = len(buf)
        limit = self.max_message_bytes
        pos = 0
        view = memoryview(buf)
        try:
            while n - pos >= 2:
                b0 = buf[pos]
                if b0 != 0x81 and b0 != 0x82:
                    break
                length = buf[pos + 1]  # the mask bit set reads as >= 128: not taken here
                start = pos + 2
                if length == 126:
                    if n - pos < 4:
                        break
                    length = buf[start] << 8 | buf[start + 1]
                    start += 2
                elif length > 126:
                    break
                end = start + length
                if end > n or (limit is not None and length > limit):
                    break
                pos = end
                part = view[start:end]
                try:
                    on_message(part)
                finally:
                    part.release()
        finally:
            view.release()
            if pos:
                del buf[:pos]

    def _finish_message(self) -> str | bytes:
        partial = self._partial
        data = partial[0] if len(partial) == 1 else b"".join(partial)
        opcode = self._message_opcode
        self.reset_message()
        if not self._text:
            return data
        if opcode == BINARY:
            return data.decode("utf-8", "replace")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError(CLOSE_INVALID_DATA, "text message is not valid UTF-8") from None
