"""System events: short texts queued for a session's next turn (OpenClaw's system events).

`system-event` and `wake` (and an `automations` job's `systemEvent` in the main session)
enqueue a text under a session key; the session's next turn, whatever starts it (a user's
message, a heartbeat), takes every queued text and its model reads them before the message
as OpenClaw formats them: `System: [<local time>] <text>` (further lines of a text as
`System: <line>`), then a blank line. Texts that only say a heartbeat poll happened are
dropped, as OpenClaw's `compactSystemEvent` drops them.

A background command's completion (`Exec completed|failed (...)`, `Exec finished ...`:
`is_exec_completion_event`) is no turn's `System:` line: `drain` and `prepend` leave it
queued, and only a heartbeat tells it, in its message (OpenClaw 2026.9.6's reply admission,
`drainFormattedSystemEvents`, skips these events; its completion wake tells them). A
subagent's session, which no completion wakes, finds its commands' ends with `process`.

An event may carry a context key (OpenClaw's `contextKey`: `cron:<jobId>` for a cron job's,
`exec:<id>` for a background command's): a heartbeat that a cron job or a completion woke
tells those events in its own message, and holds them while its run goes (`hold`: they stay
queued, and a turn's `drain` or `prepend` leaves them), then takes them out of the queue
when the run ended ok (`take`) or gives them back when it did not (`release`: to the next
turn, a completion to the next heartbeat that tells it), as OpenClaw consumes the events a
heartbeat inspected only once it finished; a cron job whose wake did not run takes its event
back (`discard`). A completion whose end a `process` poll returned is taken out at once
(`take_context`, held or not: OpenClaw 2026.9.6's poll removes the event its job queued), so
no heartbeat tells it after the model saw it, and a subagent's queue does not keep it.

Bounded: at most `MAX_EVENTS_PER_SESSION` texts per session (the oldest dropped first), each
cut to `MAX_EVENT_CHARS`, and at most `MAX_SESSIONS` sessions with queued texts (the oldest
session's queue dropped first). Not thread-safe; no checkpoints.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Sequence
from typing import Final

import attrs

from ._event_prompts import is_exec_completion_event

__all__ = [
    "MAX_EVENTS_PER_SESSION",
    "SystemEvent",
    "SystemEventQueue",
    "format_system_events",
]

MAX_EVENTS_PER_SESSION: Final = 20
MAX_EVENT_CHARS: Final = 4000
MAX_SESSIONS: Final = 10_000


@attrs.frozen
class SystemEvent:
    text: str
    ts: int
    """Epoch milliseconds."""
    context_key: str | None = None


def _timestamp(ts_ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ts_ms / 1000))


def _compact(text: str) -> str | None:
    trimmed = text.strip()
    lower = trimmed.lower()
    if not trimmed or "reason periodic" in lower or lower.startswith("read heartbeat.md"):
        return None
    if "heartbeat poll" in lower or "heartbeat wake" in lower:
        return None
    return trimmed


def _among(event: SystemEvent, events: Sequence[SystemEvent]) -> bool:
    """`event` is one of `events` (the same queued event, not an equal one)."""
    return any(event is e for e in events)


def format_system_events(events: list[SystemEvent]) -> str | None:
    """The `System:` block of `events` (None when nothing is left to say)."""
    lines: list[str] = []
    for event in events:
        text = _compact(event.text)
        if text is None:
            continue
        for i, line in enumerate(text.split("\n")):
            lines.append(
                f"System: [{_timestamp(event.ts)}] {line}" if i == 0 else f"System: {line}"
            )
    return "\n".join(lines) if lines else None


class SystemEventQueue:
    """Queued system events per session key (see the module docstring)."""

    def __init__(self) -> None:
        self._queues: collections.OrderedDict[str, collections.deque[SystemEvent]] = (
            collections.OrderedDict()
        )
        self._held: dict[str, list[SystemEvent]] = {}
        """The events a heartbeat's run tells, by session, while it runs (`hold`)."""

    def enqueue(
        self,
        session_key: str,
        text: str,
        *,
        ts: int | None = None,
        context_key: str | None = None,
    ) -> None:
        """Queue `text` for `session_key`'s next turn. A repeat of the last queued text is
        not queued twice (as OpenClaw's)."""
        text = text.strip()[:MAX_EVENT_CHARS]
        if not text:
            return
        queue = self._queues.get(session_key)
        if queue is None:
            queue = self._queues[session_key] = collections.deque(maxlen=MAX_EVENTS_PER_SESSION)
            while len(self._queues) > MAX_SESSIONS:
                dropped, _ = self._queues.popitem(last=False)
                self._held.pop(dropped, None)
        elif queue and queue[-1].text == text:
            return
        stamp = int(time.time() * 1000) if ts is None else ts
        queue.append(SystemEvent(text, stamp, context_key))

    def peek(self, session_key: str) -> list[SystemEvent]:
        return list(self._queues.get(session_key, ()))

    def has(self, session_key: str) -> bool:
        return bool(self._queues.get(session_key))

    def drain(self, session_key: str) -> list[SystemEvent]:
        """Take the queued events of `session_key` a turn reads: every one but those held
        (`hold`) and background commands' completions (left for a heartbeat)."""
        queue = self._queues.get(session_key)
        if not queue:
            return []
        held = self._held.get(session_key, ())
        taken = [e for e in queue if not (_among(e, held) or is_exec_completion_event(e.text))]
        if len(taken) == len(queue):
            del self._queues[session_key]
        else:
            self._remove(session_key, taken)
        return taken

    def hold(self, session_key: str, events: list[SystemEvent]) -> None:
        """Keep `events` (as `peek` gave them) queued while a heartbeat's run tells them:
        `drain` and `prepend` leave them until `take` or `release`."""
        if events:
            self._held.setdefault(session_key, []).extend(events)

    def release(self, session_key: str, events: list[SystemEvent]) -> None:
        """No longer hold `events`: the session's next turn reads them (a completion: the
        next heartbeat that tells it)."""
        held = [e for e in self._held.get(session_key, ()) if not _among(e, events)]
        if held:
            self._held[session_key] = held
        else:
            self._held.pop(session_key, None)

    def take(self, session_key: str, events: list[SystemEvent]) -> None:
        """Take `events` (as `peek` gave them) out of `session_key`'s queue; the others stay."""
        self.release(session_key, events)
        self._remove(session_key, events)

    def _remove(self, session_key: str, events: list[SystemEvent]) -> None:
        queue = self._queues.get(session_key)
        if not queue or not events:
            return
        kept = [e for e in queue if not _among(e, events)]
        queue.clear()
        queue.extend(kept)
        if not queue:
            del self._queues[session_key]

    def take_context(self, session_key: str, context_key: str) -> int:
        """Take the queued events of `context_key` out of `session_key`'s queue, held or
        not (a background command's completion, once a poll returned its end). How many."""
        found = [e for e in self.peek(session_key) if e.context_key == context_key]
        self.take(session_key, found)
        return len(found)

    def discard(self, session_key: str, context_key: str, text: str) -> None:
        """Take back the queued event `text` of `context_key` (a cron job's, when its wake
        did not run)."""
        text = text.strip()[:MAX_EVENT_CHARS]
        found = [
            e for e in self.peek(session_key) if (e.context_key, e.text) == (context_key, text)
        ]
        self.take(session_key, found[-1:])

    def prepend(self, session_key: str, message: str) -> str:
        """`message` with `session_key`'s queued events before it (those `drain` takes)."""
        block = format_system_events(self.drain(session_key))
        if block is None:
            return message
        return f"{block}\n\n{message}" if message else block

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values())
