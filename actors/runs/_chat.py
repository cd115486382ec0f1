"""`chat` events derived from a run's `assistant` events, and those `assistant` events
coalesced.

Each run has a `ChatStream`: assistant text goes out as `chat` `delta` events with `deltaText`
(protocol v4) and the cumulative `message`, at most one per 150 ms per run; buffered text is
flushed before a tool starts and before the terminal chat event (`final`, `aborted`,
`error`). The `ChatFlusher` task flushes text that has waited its 150 ms when no further delta
arrives to carry it. A leading silent token (`NO_REPLY`) and its partial lead fragments never
leak into deltas.

The run's agent `assistant` events carry the cumulative `text` (as OpenClaw's do), so once
that text is long they are coalesced with OpenClaw's 150 ms delta throttle: while the text
is at most `AGENT_COALESCE_FROM_CHARS` every model delta is an event of its own (a short
reply streams piece by piece, as before); past it, text within 150 ms of the last event
waits and goes out as one event whose `delta` is everything since (`replace: true` with the
whole text when the text was rewritten). Held text is flushed by the same task, before a
tool starts, before a chat delta that shows it, and before the run's lifecycle end. So a
long reply streamed in thousands of small pieces costs one event (one copy of the
cumulative text) per 150 ms, not per piece: a 2 MiB reply in 4 KiB pieces is no longer
512 copies of a growing text. `seq` stays gap-free: it counts the events sent. An
`assistant` event with other fields (`mediaUrls`, ...) goes out as it is, after what
was waiting.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

from runtime.agent import ChatDeltaThrottle, DeadlineFlusher, DeltaEmit, SilentStreamFilter
from runtime.heartbeat import strip_heartbeat_token

from ._hub import EventHub


def _mono_ms() -> int:
    return int(time.monotonic() * 1000)


AGENT_ASSISTANT_INTERVAL_MS = 150
"""At most one agent `assistant` event per run per this many milliseconds (as chat deltas)."""

AGENT_COALESCE_FROM_CHARS = 4096
"""Cumulative text up to this many characters goes out with every delta (each event costs
at most this much); past it, the 150 ms throttle holds."""

_COALESCED_KEYS = frozenset({"text", "delta", "replace"})


def assistant_message(text: str, ts: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": ts}


@attrs.define(eq=False)
class ChatStream:
    """One run's chat projection. Synchronous; the hub does the delivery."""

    hub: EventHub
    run_id: str
    flusher: ChatFlusher | None = None
    heartbeat: bool = False
    """A heartbeat run's stream, as OpenClaw's chat shows one: no deltas, and a `final`
    whose `HEARTBEAT_OK` acknowledgment is dropped (the text left over is shown when it is
    longer than 300 characters; the token stripped)."""
    _filter: SilentStreamFilter = attrs.field(factory=SilentStreamFilter)
    _throttle: ChatDeltaThrottle = attrs.field(factory=ChatDeltaThrottle)
    _shown: str = ""
    _closed: bool = False
    _said: str = ""
    """The cumulative text of the last agent `assistant` event sent."""
    _unsaid: str | None = None
    """Newer cumulative text, waiting for its interval."""
    _said_ms: int | None = None
    _agent_done: bool = False

    @property
    def text(self) -> str:
        """What clients have been shown so far (silent-token lead stripped)."""
        return self._shown

    def on_assistant_event(self, data: dict[str, Any], cumulative: str) -> None:
        """An agent `assistant` event and the run's text after it (one clock reading for
        both: this runs for every delta of every run). Not a checkpoint."""
        now = _mono_ms()
        self.on_agent_assistant(data, now)
        self.on_assistant(cumulative, now)

    def on_assistant(self, cumulative: str, now: int | None = None) -> None:
        if self._closed:
            return
        shown = self._filter.feed(cumulative)
        if shown is None:
            return
        self._shown = shown
        if self.heartbeat:
            return
        self._send(self._throttle.offer(shown, _mono_ms() if now is None else now))
        if self._throttle.has_pending() and self.flusher is not None:
            self.flusher.add(self)

    def on_agent_assistant(self, data: dict[str, Any], now: int | None = None) -> None:
        """The run produced an agent `assistant` event: send it now, or hold it for its
        interval (see the module docstring). Not a checkpoint."""
        if self._agent_done:
            return
        if now is None:
            now = _mono_ms()
        text = data.get("text")
        if not isinstance(text, str) or not _COALESCED_KEYS.issuperset(data):
            self._flush_agent()
            self.hub.emit_agent(self.run_id, "assistant", data)
            if isinstance(text, str):
                self._said = text
            self._said_ms = now
            return
        self._unsaid = text
        if (
            len(text) > AGENT_COALESCE_FROM_CHARS
            and self._said_ms is not None
            and now - self._said_ms < AGENT_ASSISTANT_INTERVAL_MS
        ):
            if self.flusher is not None:
                self.flusher.add(self)
            return
        self._flush_agent(now)

    def _flush_agent(self, now: int | None = None) -> None:
        text = self._unsaid
        if text is None or self._agent_done:
            return
        self._unsaid = None
        said = self._said
        if text == said:
            return
        if text.startswith(said):
            data: dict[str, Any] = {"text": text, "delta": text[len(said) :]}
        else:
            data = {"text": text, "delta": text, "replace": True}
        self._said = text
        self._said_ms = _mono_ms() if now is None else now
        if self.hub.is_open(self.run_id):
            self.hub.emit_agent(self.run_id, "assistant", data)

    def flush_agent(self) -> None:
        """Send the held `assistant` text now (before another stream's event)."""
        self._flush_agent()

    def end_agent(self) -> None:
        """Before the run's lifecycle end: send the held `assistant` text, then no more."""
        self._flush_agent()
        self._agent_done = True
        self._unsaid = None

    def due_ms(self) -> int | None:
        """When buffered text may go out (None: nothing buffered)."""
        if self._closed:
            return None
        due = self._throttle.due_ms()
        if self._unsaid is not None and not self._agent_done:
            agent_due = (self._said_ms or 0) + AGENT_ASSISTANT_INTERVAL_MS
            due = agent_due if due is None else min(due, agent_due)
        return due

    def poll(self, now_ms: int) -> None:
        self.flush()

    def flush(self) -> None:
        """Emit buffered text now (before a tool starts, before the end)."""
        if not self._closed:
            self._flush_agent()
            self._send(self._throttle.flush(_mono_ms()))

    def _send(self, emit: DeltaEmit | None) -> None:
        if emit is None:
            return
        if self._unsaid is not None:
            self._flush_agent()  # the chat delta's `seq` is that of the event with its text
        fields: dict[str, Any] = (
            {"deltaText": emit.delta_text, "replace": True}
            if emit.replace
            else {"deltaText": emit.delta_text}
        )
        fields["message"] = assistant_message(emit.text, int(time.time() * 1000))
        self.hub.emit_chat_fields(self.run_id, "delta", fields)

    def final_text(self) -> str:
        """The cleaned reply text; "" when the reply is silent."""
        return self._filter.finish()

    def close(self, state: str, **fields: Any) -> None:
        """Flush and send the one terminal chat event."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        if self.heartbeat and "message" in fields:
            _heartbeat_final(fields)
        self.hub.emit_chat(self.run_id, state, **fields)


def _heartbeat_final(fields: dict[str, Any]) -> None:
    """A heartbeat's terminal chat fields without its acknowledgment (OpenClaw's
    `normalizeHeartbeatChatFinalText`, its budget 300 characters)."""
    message = fields["message"]
    text = "".join(str(c.get("text", "")) for c in message.get("content", ()))
    stripped = strip_heartbeat_token(text, heartbeat=True, ack_max_chars=300)
    if not stripped.did_strip:
        return
    if stripped.should_skip:
        del fields["message"]
    else:
        fields["message"] = assistant_message(stripped.text, message.get("timestamp", 0))


CHAT_FLUSH_QUANTUM_MS = 10
"""A held chat delta goes out at most this much after its 150 ms (one wake-up serves all
the runs whose deltas fall due within it)."""


class ChatFlusher(DeadlineFlusher[ChatStream]):
    """Flushes chat deltas that waited their interval. One task for all runs."""

    def __init__(self) -> None:
        super().__init__(_mono_ms, quantum_ms=CHAT_FLUSH_QUANTUM_MS)
