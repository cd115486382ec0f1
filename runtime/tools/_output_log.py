"""A background job's output as `ProcessRegistry` keeps it (`OutputLog`): the retained tail
and the part no poll has read yet, both bounded in bytes."""

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

    def append(self, chunk: bytes | bytearray) -> None:
        self.total += len(chunk)
        self.buf += chunk
        if len(self.buf) > self._cap:
            del self.buf[: len(self.buf) - self._cap]
        self.pending += chunk
        if len(self.pending) > self._pending_cap:
            del self.pending[: len(self.pending) - self._pending_cap]
            self.pending_dropped = True

    @property
    def dropped(self) -> int:
        """Bytes no longer retained (beyond the cap)."""
        return self.total - len(self.buf)

    def drain(self) -> tuple[str, bool]:
        """The unread output (decoded) and whether some of it was dropped; marks it read."""
        data, dropped = bytes(self.pending), self.pending_dropped
        self.pending.clear()
        self.pending_dropped = False
        return _decode(data, cut=dropped), dropped

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
