"""Server-sent events: an incremental, sans-IO parser of `text/event-stream`.

Follows the WHATWG "event stream interpretation" rules: lines end in CRLF, LF or CR (a CR at
the end of one chunk and an LF at the start of the next are one line break); a line starting
with ``:`` is a comment; ``field: value`` strips one space after the colon; ``data`` lines join
with LF; a blank line dispatches the event; an event with no ``data`` line is not dispatched;
an event left unterminated when the stream ends is discarded; ``id`` persists across events
(one containing NUL is ignored); ``retry`` must be all digits.

Data stays as ``bytes``: the transports hand it straight to a msgspec decoder, so nothing is
decoded twice. Memory is bounded: a line or an event bigger than ``max_event_bytes`` raises
`SSEDecodeError`, the one error this module raises.
"""

from __future__ import annotations

import msgspec

from ..protocol import ClawlaneError

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SSEDecodeError", "SSEDecoder", "SSEEvent"]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"


class SSEDecodeError(ClawlaneError, ValueError):
    """The stream broke a limit of the decoder (a line or an event too large)."""


class SSEEvent(msgspec.Struct, frozen=True, gc=False):
    """One dispatched event.

    Attributes:
        event: the ``event`` field, or ``"message"`` when the stream named none.
        data: the ``data`` lines joined with LF, without a trailing LF.
        id: the last event id seen on this stream so far (``None`` before any).
        retry: this event's ``retry`` field in milliseconds, if it had a valid one.
    """

    event: str
    data: bytes
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed it bytes as they arrive; it returns the events they complete.

    Not a checkpoint, no I/O: safe to call from any task, but one decoder belongs to one
    stream and must not be fed from two tasks at once.
    """

    __slots__ = (
        "_data",
        "_event",
        "_last_id",
        "_line_parts",
        "_line_size",
        "_max",
        "_pending_cr",
        "_retry",
        "_size",
        "_started",
    )

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._max = max_event_bytes
        self._line_parts: list[bytes] = []  # pieces of an unterminated line
        self._line_size = 0
        self._data: list[bytes] = []  # data lines of the event being built
        self._size = 0  # bytes held in self._data
        self._event: str | None = None
        self._retry: int | None = None
        self._last_id: str | None = None
        self._pending_cr = False  # the previous chunk ended in CR
        self._started = False  # the BOM check happened

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume ``chunk``; return the events it completed, in order.

        Raises:
            SSEDecodeError: a line or an event exceeds ``max_event_bytes``.
        """
        if not chunk:
            return []
        if not self._started:
            if not self._line_parts and len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                # Too short to tell: keep it as the start of the first line.
                return self._hold(chunk)
            self._started = True
            if self._line_parts:
                chunk = b"".join(self._line_parts) + chunk
                self._line_parts.clear()
                self._line_size = 0
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if self._pending_cr:
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\r" in chunk:
            self._pending_cr = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = chunk.rfind(b"\n")
        if end < 0:
            return self._hold(chunk)
        if self._line_parts:
            self._line_parts.append(chunk[:end])
            text = b"".join(self._line_parts)
            self._line_parts.clear()
            self._line_size = 0
        else:
            text = chunk[:end]
        rest = chunk[end + 1 :]
        if rest:
            self._hold(rest)
        return self._lines(text.split(b"\n"))

    def close(self) -> None:
        """The stream ended: drop an unfinished event (one without its blank line) and reset.

        Nothing can be dispatched here: only a blank line dispatches, and a blank line is
        always terminated.
        """
        self._line_parts.clear()
        self._line_size = 0
        self._data.clear()
        self._size = 0
        self._event = None
        self._retry = None
        self._pending_cr = False

    # --- internals -----------------------------------------------------------------------

    def _hold(self, piece: bytes) -> list[SSEEvent]:
        self._line_size += len(piece)
        if self._line_size > self._max:
            raise SSEDecodeError(f"SSE line exceeds {self._max} bytes")
        self._line_parts.append(piece)
        return []

    def _lines(self, lines: list[bytes]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(
                        SSEEvent(
                            self._event or "message",
                            b"\n".join(data),
                            self._last_id,
                            self._retry,
                        )
                    )
                    data.clear()
                    self._size = 0
                self._event = None
                self._retry = None
                continue
            if line.startswith(b"data:"):
                value = line[6:] if line[5:6] == b" " else line[5:]
                self._size += len(value) + 1
                if self._size > self._max:
                    raise SSEDecodeError(f"SSE event exceeds {self._max} bytes")
                data.append(value)
                continue
            if line.startswith(b"event:"):
                value = line[7:] if line[6:7] == b" " else line[6:]
                self._event = value.decode("utf-8", "replace")
                continue
            if line[0] == 0x3A:  # ":" comment, e.g. a keep-alive
                continue
            name, colon, value = line.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if name == b"event":
                self._event = value.decode("utf-8", "replace")
            elif name == b"data":  # "data" without a colon: an empty data line
                self._size += 1
                data.append(b"")
            elif name == b"id":
                if b"\0" not in value:
                    self._last_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                self._retry = int(value)
            # other fields are ignored, as the standard says
        return events
