"""A background job's output as `ProcessRegistry` keeps it (`OutputLog`): the retained tail
and the part no poll has read yet, both bounded in bytes.

A poll reads in two steps, as OpenClaw 2026.9.6 marks a poll's output read only once its
tool result is acknowledged: `peek` (the unread output and the stream offset it ends at),
then `mark_read(upto)` once the poll's result is kept. Output appended between the two stays
unread; so do bytes the pending buffer's trim dropped meanwhile (positions are stream
offsets, never indexes into the buffer)."""

from __future__ import annotations

from typing import Final

__all__ = ["OutputLog"]

_TAIL_CHARS: Final = 2000


class OutputLog:
    """A job's combined output (sanitized, UTF-8) in bytes: the retained tail (`cap`), and what
    no poll has read yet (`pending_cap`, its oldest bytes dropped first)."""

    def __init__(self, cap: int, pending_cap: int) -> None:
        self._cap = cap
        self._pending_cap = min(pending_cap, cap)
        self.buf = bytearray()
        self.total = 0
        self.pending = bytearray()
        self.pending_dropped = False
        self._dropped_upto = 0
        """The stream offset the pending buffer's last trim dropped up to (its first byte's
        offset then)."""

    def append(self, chunk: bytes | bytearray) -> None:
        self.total += len(chunk)
        self.buf += chunk
        if len(self.buf) > self._cap:
            del self.buf[: len(self.buf) - self._cap]
        self.pending += chunk
        if len(self.pending) > self._pending_cap:
            del self.pending[: len(self.pending) - self._pending_cap]
            self.pending_dropped = True
            self._dropped_upto = self.total - len(self.pending)

    @property
    def dropped(self) -> int:
        """Bytes no longer retained (beyond the cap)."""
        return self.total - len(self.buf)

    def peek(self) -> tuple[str, bool, int]:
        """The unread output (decoded), whether some of it was dropped, and the stream offset
        it ends at (`total`, for `mark_read`). Marks nothing read."""
        dropped = self.pending_dropped
        return _decode(bytes(self.pending), cut=dropped), dropped, self.total

    def mark_read(self, upto: int) -> None:
        """Mark the output up to stream offset `upto` (a `peek`'s) read: only those bytes
        leave the pending buffer, what came after stays unread. The drop is forgotten only
        when no trim since the peek dropped bytes past `upto` (output no poll returned): a
        trim of bytes the peek returned loses nothing unread."""
        start = self.total - len(self.pending)  # the stream offset of pending's first byte
        if upto > start:
            del self.pending[: min(upto - start, len(self.pending))]
        if self._dropped_upto <= upto:
            self.pending_dropped = False

    def drain(self) -> tuple[str, bool]:
        """The unread output (decoded) and whether some of it was dropped; marks it read."""
        text, dropped, upto = self.peek()
        self.mark_read(upto)
        return text, dropped

    def text(self) -> str:
        return _decode(bytes(self.buf), cut=self.dropped > 0)

    def tail(self, chars: int = _TAIL_CHARS) -> str:
        return self.text()[-chars:]


def _decode(data: bytes, *, cut: bool) -> str:
    if cut:  # the cut may have split a UTF-8 sequence: skip its continuation bytes
        skip = 0
        while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
            skip += 1
        data = data[skip:]
    return data.decode("utf-8", errors="replace")
