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
from typing import Any

import attrs

from runtime.agent import ChatDeltaThrottle, DeadlineFlusher, DeltaEmit, SilentStreamFilter

from ._hub import EventHub


def _mono_ms() -> int:
    return int(time.monotonic() * 1000)


def assistant_message(text: str, ts: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": ts}


@attrs.define(eq=False)
class ChatStream:
    """One run's chat projection. Synchronous; the hub does the delivery."""

    hub: EventHub
    run_id: str
    flusher: ChatFlusher | None = None
    _filter: SilentStreamFilter = attrs.field(factory=SilentStreamFilter)
    _throttle: ChatDeltaThrottle = attrs.field(factory=ChatDeltaThrottle)
    _shown: str = ""
    _closed: bool = False

    @property
    def text(self) -> str:
        """What clients have been shown so far (silent-token lead stripped)."""
        return self._shown

    def on_assistant(self, cumulative: str) -> None:
        if self._closed:
            return
        shown = self._filter.feed(cumulative)
        if shown is None:
            return
        self._shown = shown
        self._send(self._throttle.offer(shown, _mono_ms()))
        if self._throttle.has_pending() and self.flusher is not None:
            self.flusher.add(self)

    def due_ms(self) -> int | None:
        """When the buffered delta may go out (None: nothing buffered)."""
        return None if self._closed else self._throttle.due_ms()

    def poll(self, now_ms: int) -> None:
        self.flush()

    def flush(self) -> None:
        """Emit buffered text now (before a tool starts, before the end)."""
        if not self._closed:
            self._send(self._throttle.flush(_mono_ms()))

    def _send(self, emit: DeltaEmit | None) -> None:
        if emit is None:
            return
        fields: dict[str, Any] = {"deltaText": emit.delta_text}
        if emit.replace:
            fields["replace"] = True
        fields["message"] = assistant_message(emit.text, int(time.time() * 1000))
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
        self.hub.emit_chat(self.run_id, state, **fields)


CHAT_FLUSH_QUANTUM_MS = 10
"""A held chat delta goes out at most this much after its 150 ms (one wake-up serves all
the runs whose deltas fall due within it)."""


class ChatFlusher(DeadlineFlusher[ChatStream]):
    """Flushes chat deltas that waited their interval. One task for all runs."""

    def __init__(self) -> None:
        super().__init__(_mono_ms, quantum_ms=CHAT_FLUSH_QUANTUM_MS)
