"""The heartbeat wakes waiting to run: one per target (an agent, or one of its sessions), as
OpenClaw 2026.9.6's session-event wake queue keeps them.

A wake is requested with a source (`interval`, `manual`, `exec-event`, `cron`), an intent
(`runtime.heartbeat.WakeIntent`) and a reason, and is ready `COALESCE_S` later (0 for a
background command's completion and the cadence): wakes of one target requested meanwhile run
as one (`_merge`: the stronger intent's, and every waiter of both). A wake that may not run
yet (deferred, or its session busy) comes back with `not_before` set and runs then.

`PendingWakes` is not thread-safe and has no checkpoints; the dispatcher that takes the ready
wakes is `Heartbeats.run_wakes` (`_runner`). Bounded: at most one wake per target, and at most
`MAX_TARGETS` targets (a request beyond that is dropped and logged: the system events it was
for wait in their sessions' queues for the next turn).
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
    """Two wakes of one target as one (OpenClaw's merge, without its task slots)."""
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


class PendingWakes:
    """The wakes not yet taken, by target (see the module docstring)."""

    def __init__(self) -> None:
        self._wakes: dict[str, Wake] = {}

    def add(self, wake: Wake) -> None:
        old = self._wakes.get(wake.target)
        if old is None and len(self._wakes) >= MAX_TARGETS:
            log.warning("heartbeat wake of %s dropped: %d targets wait", wake.target, MAX_TARGETS)
            wake.settle(WakeResult("skipped", "wake-queue-full"))
            return
        self._wakes[wake.target] = wake if old is None else _merge(old, wake)

    def take_ready(self, now: float, active: set[str], room: int) -> list[Wake]:
        """Up to `room` wakes due at `now` whose target has no heartbeat running, taken out."""
        ready: list[Wake] = []
        for target, wake in list(self._wakes.items()):
            if len(ready) >= room:
                break
            if target not in active and wake.due <= now:
                ready.append(self._wakes.pop(target))
        return ready

    def next_due(self, active: set[str]) -> float | None:
        """When the next wake that could be taken is due (None: none waits)."""
        dues = [w.due for t, w in self._wakes.items() if t not in active]
        return min(dues) if dues else None

    def cancel(self) -> None:
        """End every wake (the runner closes): the waiters are told `disabled`."""
        for wake in self._wakes.values():
            wake.settle(WakeResult("skipped", "disabled"))
        self._wakes.clear()

    def __len__(self) -> int:
        return len(self._wakes)
