"""The heartbeat wakes waiting to run, per target (an agent, or one of its sessions), as
OpenClaw 2026.9.6's session-event wake queue keeps them.

A wake is requested with a source (`interval`, `manual`, `exec-event`, `cron`), an intent
(`runtime.heartbeat.WakeIntent`) and a reason, and is ready `COALESCE_S` later (0 for a
background command's completion and the cadence). A target keeps two slots, as OpenClaw's
(its third, `task`, is for heartbeat tasks, which clawlane has not): the cadence's tick
(`scheduled`) and any other wake (`event`); wakes of one slot requested meanwhile run as one
(`_merge`: the stronger intent's, and every waiter of both). The slots wait apart: a tick is
not held back by an event wake deferred past it (`not-due`, `min-spacing`), nor an event
wake by a tick waiting out a 60 s retry; the two run as one heartbeat (merged, the event's
intent and reason) when both are ready together. A wake that may not run yet comes back with
`not_before` set when a pacing guard deferred it or a busy one waits out a 60 s idle grace
(`runtime.heartbeat.idle_grace`), retained (OpenClaw's `retainedWork`); a busy target's 1 s
retry blocks the whole target
(`blocked_until`) instead, so every wake of it waits for that.

`PendingWakes` is not thread-safe and has no checkpoints; the dispatcher that takes the ready
wakes is `Heartbeats.run_wakes` (`_runner`). Bounded: at most two wakes per target, and at
most `MAX_TARGETS` targets (a request beyond that is dropped and logged: the system events it
was for wait in their sessions' queues for the next turn).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import attrs
import trio

from runtime.heartbeat import WakeIntent, WakeResult

__all__ = ["MAX_ACTIVE", "MAX_TARGETS", "PendingWakes", "Wake", "WakeWaiter"]

log = logging.getLogger("clawlane.heartbeat")

MAX_ACTIVE: Final = 4
"""Targets whose heartbeats run at once (OpenClaw's `MAX_ACTIVE_TARGETS`)."""
MAX_TARGETS: Final = 10_000


@attrs.define(eq=False)
class WakeWaiter:
    """Someone waiting for a wake's end (a cron job with `wakeMode: "now"`)."""

    stop_on_retry: Callable[[str, float], bool] | None = None
    """Called with the reason and the trio time of a retry: True ends the wait there
    (`handed_off`)."""
    result: WakeResult | None = None
    done: trio.Event = attrs.field(factory=trio.Event)

    def settle(self, result: WakeResult) -> None:
        if self.result is None:
            self.result = result
            self.done.set()


@attrs.define(eq=False)
class Wake:
    agent_id: str
    session_key: str | None
    source: str
    intent: WakeIntent
    reason: str
    ready_at: float
    """Trio time it may run from (its coalescing window's end)."""
    not_before: float = 0.0
    """Trio time before which it does not run again (a deferral, a busy retry)."""
    retained: bool = False
    """Deferred before: the agent's `not-due` guard no longer holds it."""
    waiters: list[WakeWaiter] = attrs.field(factory=list)
    routed: bool = False
    """Sent here by another node of a cluster (`Heartbeats.peers`): it runs here, never
    sent on."""

    @property
    def target(self) -> str:
        return f"{self.agent_id}::{self.session_key or ''}"

    @property
    def due(self) -> float:
        return max(self.ready_at, self.not_before)

    def settle(self, result: WakeResult) -> None:
        for waiter in self.waiters:
            waiter.settle(result)
        self.waiters.clear()

    def hand_off(self, reason: str, at: float) -> None:
        """It runs again at `at`: the waiters that stop there are told so."""
        for waiter in list(self.waiters):
            if waiter.stop_on_retry is not None and waiter.stop_on_retry(reason, at):
                waiter.settle(WakeResult("skipped", reason, handed_off=True))
                self.waiters.remove(waiter)


def _priority(wake: Wake) -> int:
    if wake.intent in ("manual", "immediate"):
        return 3
    return 1 if wake.intent == "scheduled" else 2


def _merge(old: Wake, new: Wake) -> Wake:
    """Two wakes of one target as one (OpenClaw's merge): the stronger intent's (the later
    one's between equals), a scheduled one taking the other's intent."""
    first = new if _priority(new) >= _priority(old) else old
    other = old if first is new else new
    bypass = first.intent in ("manual", "immediate") and not first.retained
    return Wake(
        agent_id=first.agent_id,
        session_key=first.session_key,
        source=first.source,
        intent=other.intent if first.intent == "scheduled" else first.intent,
        reason=first.reason,
        ready_at=min(old.ready_at, new.ready_at),
        not_before=0.0 if bypass else max(old.not_before, new.not_before),
        retained=not bypass and (old.retained or new.retained),
        waiters=old.waiters + new.waiters,
        routed=old.routed or new.routed,
    )


@attrs.define
class _Target:
    """One target's waiting wakes: its slots, and how long a busy retry blocks it."""

    scheduled: Wake | None = None
    event: Wake | None = None
    blocked_until: float = 0.0
    """Trio time before which none of its wakes runs (a busy retry's)."""

    def wakes(self) -> list[Wake]:
        return [w for w in (self.scheduled, self.event) if w is not None]


def _slot(wake: Wake) -> str:
    return "scheduled" if wake.intent == "scheduled" else "event"


class PendingWakes:
    """The wakes not yet taken, by target (see the module docstring)."""

    def __init__(self) -> None:
        self._targets: dict[str, _Target] = {}

    def add(self, wake: Wake, *, blocked_until: float = 0.0) -> None:
        """Keep `wake` in its target's slot, merged with the one there; `blocked_until`: no
        wake of the target runs before it (a busy retry)."""
        target = self._targets.get(wake.target)
        if target is None:
            if len(self._targets) >= MAX_TARGETS:
                log.warning(
                    "heartbeat wake of %s dropped: %d targets wait", wake.target, MAX_TARGETS
                )
                wake.settle(WakeResult("skipped", "wake-queue-full"))
                return
            target = self._targets[wake.target] = _Target()
        slot = _slot(wake)
        old: Wake | None = getattr(target, slot)
        setattr(target, slot, wake if old is None else _merge(old, wake))
        target.blocked_until = max(target.blocked_until, blocked_until)

    def take_ready(self, now: float, active: set[str], room: int) -> list[Wake]:
        """Up to `room` wakes due at `now` whose target has no heartbeat running, taken out
        (a target's two slots, both due, as one)."""
        ready: list[Wake] = []
        for key, target in list(self._targets.items()):
            if len(ready) >= room:
                break
            if key in active or target.blocked_until > now:
                continue
            scheduled, event = target.scheduled, target.event
            if scheduled is not None and scheduled.due <= now:
                target.scheduled = None
            else:
                scheduled = None
            if event is not None and event.due <= now:
                target.event = None
            else:
                event = None
            if not target.wakes():
                del self._targets[key]
            picked = [w for w in (scheduled, event) if w is not None]
            if picked:
                ready.append(_merge(*picked) if len(picked) == 2 else picked[0])
        return ready

    def next_due(self, active: set[str]) -> float | None:
        """When the next wake that could be taken is due (None: none waits)."""
        dues = [
            max(w.due, t.blocked_until)
            for key, t in self._targets.items()
            if key not in active
            for w in t.wakes()
        ]
        return min(dues) if dues else None

    def cancel(self) -> None:
        """End every wake (the runner closes): the waiters are told `disabled`."""
        for target in self._targets.values():
            for wake in target.wakes():
                wake.settle(WakeResult("skipped", "disabled"))
        self._targets.clear()

    def __len__(self) -> int:
        return sum(len(t.wakes()) for t in self._targets.values())
