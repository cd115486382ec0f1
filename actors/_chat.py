"""`chat` events derived from a run's `assistant` events.

Each run has a `ChatStream`: assistant text goes out as `chat` `delta` events with `deltaText`
(protocol v4) and the cumulative `message`, at most one per 150 ms per run; buffered text is
flushed before a tool starts and before the terminal chat event (`final`, `aborted`,
`error`). The `ChatFlusher` task flushes text that has waited its 150 ms when no further delta
arrives to carry it. A leading silent token (`NO_REPLY`) and its partial lead fragments never
leak into deltas.
"""

from __future__ import annotations

import time
from typing import Any, Final

import attrs
import trio

from runtime._reply import SilentStreamFilter

from ._hub import EventHub

DELTA_INTERVAL_MS: Final = 150.0


def _mono_ms() -> float:
    return time.monotonic() * 1000.0


def assistant_message(text: str, ts: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": ts}


@attrs.define(eq=False)
class ChatStream:
    """One run's chat projection. Synchronous; the hub does the delivery."""

    hub: EventHub
    run_id: str
    flusher: ChatFlusher | None = None
    _filter: SilentStreamFilter = attrs.field(factory=SilentStreamFilter)
    _shown: str = ""
    _emitted: str = ""
    _last_emit: float = -1e18
    _pending: bool = False
    _closed: bool = False

    @property
    def text(self) -> str:
        return self._shown

    def on_assistant(self, cumulative: str) -> None:
        if self._closed:
            return
        shown = self._filter.feed(cumulative)
        if shown is None or shown == self._emitted:
            return
        self._shown = shown
        now = _mono_ms()
        if now - self._last_emit >= DELTA_INTERVAL_MS:
            self._emit(now)
        elif not self._pending:
            self._pending = True
            if self.flusher is not None:
                self.flusher.add(self)

    def due(self, now: float) -> bool:
        return self._pending and now - self._last_emit >= DELTA_INTERVAL_MS

    def flush(self) -> None:
        """Emit buffered text now (before a tool starts, before the end)."""
        if self._pending and not self._closed:
            self._emit(_mono_ms())

    def _emit(self, now: float) -> None:
        self._pending = False
        text = self._shown
        if text == self._emitted:
            return
        fields: dict[str, Any] = {}
        if text.startswith(self._emitted):
            fields["deltaText"] = text[len(self._emitted) :]
        else:
            fields["deltaText"] = text
            fields["replace"] = True
        fields["message"] = assistant_message(text, int(time.time() * 1000))
        self._emitted = text
        self._last_emit = now
        self.hub.emit_chat(self.run_id, "delta", **fields)

    def final_text(self) -> str:
        """The cleaned reply text; "" when the reply is silent."""
        return self._filter.finish()

    def close(self, state: str, **fields: Any) -> None:
        """Flush and send the one terminal chat event."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._pending = False
        self.hub.emit_chat(self.run_id, state, **fields)


class ChatFlusher:
    """Flushes chat deltas that waited their interval. One task for all runs."""

    def __init__(self) -> None:
        self._pending: set[ChatStream] = set()
        self._wake = trio.Event()

    def add(self, stream: ChatStream) -> None:
        self._pending.add(stream)
        self._wake.set()

    async def run(self) -> None:
        """Runs until cancelled. Wakes only while some stream has text waiting."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            while self._pending:
                await trio.sleep(DELTA_INTERVAL_MS / 3000.0)
                now = _mono_ms()
                for stream in [s for s in self._pending if s.due(now) or not s._pending]:
                    self._pending.discard(stream)
                    stream.flush()
