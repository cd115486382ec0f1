"""A session's queue of pending turns and the queue modes (OpenClaw `messages.queue`).

Sans-IO: the session actor owns one `Lane` and asks it what to run next. Modes:

- `steer`: inject into the active run at its next model/tool boundary (the actor does that
  through the run's `SteerInbox`); when the run cannot take it, it is queued as a follow-up.
- `followup`: each message is its own turn after the current run.
- `collect`: everything queued is coalesced into one turn after the debounce, laid out as
  "Queued #N"; items from a different origin (channel) drain separately.
- `interrupt`: the lane is cleared, the active run aborted, the newest message runs.

Options: `debounceMs` (500), `cap` (20), `drop`: `summarize` (drop the oldest, inject an
overflow summary into the next turn), `old` (drop the oldest), `new` (reject the incoming
message with `LaneFull`).
"""

from __future__ import annotations

import collections
from typing import Final, Literal

import attrs

from runtime.model import QueueConfig
from runtime.sessions import SessionRow

from .._errors import ActorError
from ._request import QueueMode, RunRequest

DropPolicy = Literal["summarize", "old", "new"]
QUEUE_MODES: Final = ("steer", "followup", "collect", "interrupt")
MODE_ALIASES: Final = {"abort": "interrupt", "queue": "steer", "steer-backlog": "steer"}
SUMMARY_CHARS: Final = 160
COLLECT_HEADER: Final = "[Queued messages while agent was busy]"


def normalize_drop(value: str | None) -> DropPolicy | None:
    if value is None:
        return None
    v = value.strip().lower()
    return v if v in ("summarize", "old", "new") else None  # type: ignore[return-value]


def normalize_mode(value: str | None) -> QueueMode | None:
    if value is None:
        return None
    v = MODE_ALIASES.get(value.strip().lower(), value.strip().lower())
    return v if v in QUEUE_MODES else None  # type: ignore[return-value]


@attrs.frozen
class QueueSettings:
    mode: QueueMode = "steer"
    debounce_ms: int = 500
    cap: int = 20
    drop: DropPolicy = "summarize"


class LaneFull(ActorError):
    """The queue is at its cap and the drop policy is `new`: the message is rejected."""


@attrs.frozen
class NextTurn:
    """What the actor runs next: the leading request, the prompt to use, and the requests
    coalesced into it (they end with it)."""

    request: RunRequest
    prompt: str
    coalesced: tuple[RunRequest, ...] = ()


def _summary(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


@attrs.define(eq=False)
class Lane:
    items: collections.deque[RunRequest] = attrs.field(factory=collections.deque)
    overflow: list[str] = attrs.field(factory=list)

    def __len__(self) -> int:
        return len(self.items)

    def would_reject(self, settings: QueueSettings) -> bool:
        return settings.drop == "new" and len(self.items) >= settings.cap

    def offer(self, request: RunRequest, settings: QueueSettings) -> list[RunRequest]:
        """Queue `request`; returns the requests dropped to make room (report them ended).

        Raises `LaneFull` when at the cap with drop policy `new`.
        """
        dropped: list[RunRequest] = []
        if len(self.items) >= settings.cap:
            if settings.drop == "new":
                raise LaneFull(
                    f"the session's queue is full ({settings.cap} pending); message rejected"
                )
            while len(self.items) >= settings.cap:
                oldest = self.items.popleft()
                dropped.append(oldest)
                if settings.drop == "summarize":
                    self.overflow.append(_summary(oldest.message))
        self.items.append(request)
        return dropped

    def remove(self, run_id: str) -> RunRequest | None:
        for item in self.items:
            if item.record.run_id == run_id:
                self.items.remove(item)
                return item
        return None

    def clear(self) -> list[RunRequest]:
        items = list(self.items)
        self.items.clear()
        self.overflow.clear()
        return items

    def take_next(self) -> NextTurn | None:
        """The next turn, coalescing `collect` items of the same origin."""
        if not self.items:
            return None
        first = self.items.popleft()
        group = [first]
        if first.queue_mode == "collect":
            while (
                self.items
                and self.items[0].queue_mode == "collect"
                and self.items[0].origin == first.origin
            ):
                group.append(self.items.popleft())
        if len(group) > 1:
            sections = [f"---\nQueued #{i}\n{r.message}" for i, r in enumerate(group, 1)]
            prompt = "\n\n".join([COLLECT_HEADER, *sections])
        else:
            prompt = first.message
        if self.overflow:
            n = len(self.overflow)
            bullets = "\n".join(f"- {s}" for s in self.overflow)
            prompt = f"[Queue overflow] Dropped {n} messages due to cap.\nSummary:\n{bullets}\n\n{prompt}"
            self.overflow.clear()
        return NextTurn(request=first, prompt=prompt, coalesced=tuple(group[1:]))


def resolve_queue_settings(
    conf: QueueConfig, row: SessionRow | None, requested: str | None
) -> QueueSettings:
    """A turn's queue settings: mode from the request, else the session, else the config's
    `byChannel.webchat`, else `messages.queue.mode`, else `steer`; debounce, cap and drop
    from the session, else the config."""
    mode = (
        normalize_mode(requested)
        or normalize_mode(row.queueMode if row else None)
        or normalize_mode(conf.byChannel.get("webchat"))
        or normalize_mode(conf.mode)
        or "steer"
    )
    return QueueSettings(
        mode=mode,
        debounce_ms=row.queueDebounceMs
        if row and row.queueDebounceMs is not None
        else conf.debounceMs,
        cap=row.queueCap if row and row.queueCap else conf.cap,
        drop=normalize_drop(row.queueDrop if row else None) or conf.drop,
    )
