"""When a heartbeat wake may run, and when one that could not runs again: OpenClaw 2026.9.6's
wake rules (its `session-event-wake` queue and `heartbeat-runner-scheduler`), without I/O.

A wake has an intent:

- `manual`: never deferred (`wake`, `system-event` with `wake: true` in clawlane);
- `immediate`: deferred only by the flood guard (a cron `systemEvent` job with
  `wakeMode: "now"`);
- `event`: a background command's completion, a cron `systemEvent` job for the next
  heartbeat; the first one after the gateway starts runs, later ones wait for the agent's next
  due heartbeat (`not-due`, unless work was already retained) and keep 30 s from the last
  heartbeat's start (`min-spacing`);
- `scheduled`: the agent's cadence (`interval`), an authoritative tick, so due when it fires.

The flood guard (`flood`): five heartbeat starts of the agent within 60 s defer every wake but
a `manual` one until the oldest of them is a minute old. A deferred `event` or `immediate`
wake is kept and runs at the time given (`retain`); a deferred `scheduled` one is dropped.

A heartbeat skipped because something is busy (`RETRY_REASONS`) is tried again
(`retry_delay_s`), as OpenClaw's wake queue retries it: after 60 s (its idle grace,
`idle_grace`: the wake waits as a deferred one) when it was `preempted`, its channel was
not ready (`channel-not-ready`), or a scheduled one found a run going (`requests-in-flight`,
`active-run`); after 1 s otherwise (its target blocked meanwhile), a cron run in progress
(`cron-in-progress`) included, whatever the wake. A scheduled poll with no system event
waiting is not retried (its next tick comes). Pure: times are epoch milliseconds given by
the caller.

`EventDelivery`: where a cron job's system event went and how its wake ended.
"""

from __future__ import annotations

import collections
from typing import Final, Literal

import attrs

__all__ = [
    "COALESCE_S",
    "FLOOD_THRESHOLD",
    "FLOOD_WINDOW_MS",
    "MIN_SPACING_MS",
    "RETRY_REASONS",
    "Deferral",
    "EventDelivery",
    "WakeIntent",
    "WakePacing",
    "WakeResult",
    "idle_grace",
    "retain",
    "retry_delay_s",
    "should_defer",
]

WakeIntent = Literal["manual", "immediate", "event", "scheduled"]

COALESCE_S: Final = 0.25
"""Wakes of one target requested within this time run as one (OpenClaw's 250 ms)."""
MIN_SPACING_MS: Final = 30_000
FLOOD_WINDOW_MS: Final = 60_000
FLOOD_THRESHOLD: Final = 5
RETRY_S: Final = 1.0
IDLE_RETRY_S: Final = 60.0
RETRY_REASONS: Final = frozenset(
    {"active-run", "requests-in-flight", "cron-in-progress", "preempted", "channel-not-ready"}
)
_IDLE_REASONS: Final = frozenset({"preempted", "channel-not-ready"})
_RUN_REASONS: Final = frozenset({"requests-in-flight", "active-run"})
_GUARD_REASONS: Final = frozenset({"not-due", "min-spacing", "flood"})


@attrs.frozen
class Deferral:
    reason: str
    """`not-due`, `min-spacing` or `flood`."""
    retry_at_ms: int


@attrs.frozen
class WakeResult:
    """How a wake ended, as OpenClaw's wake settles: `ran` (the model ran), `skipped` or
    `failed`, with the reason; `handed_off`: the caller stopped waiting while the wake waits
    to be tried again (a cron job that handed its event to a later heartbeat)."""

    status: Literal["ran", "skipped", "failed"]
    reason: str | None = None
    handed_off: bool = False


@attrs.frozen
class EventDelivery:
    """A cron job's system event queued for a session (`actors.heartbeat`, on the node that
    owns the session): the session's id there (None when unknown), and how the heartbeat it
    woke ended when that was waited for (None: not waited for, or no answer came)."""

    session_id: str | None = None
    wake: WakeResult | None = None


@attrs.define
class WakePacing:
    """One agent's heartbeat starts, for the deferral rules (see the module docstring)."""

    interval_ms: int = 0
    """The agent's cadence (0: none)."""
    last_start_ms: int | None = None
    recent: collections.deque[int] = attrs.field(
        factory=lambda: collections.deque(maxlen=FLOOD_THRESHOLD + 1)
    )

    @property
    def next_due_ms(self) -> int | None:
        """When the next heartbeat is due (None before the first one here)."""
        return None if self.last_start_ms is None else self.last_start_ms + self.interval_ms

    def started(self, now_ms: int) -> None:
        """A heartbeat attempt of the agent took place at `now_ms` (OpenClaw's run
        bookkeeping)."""
        self.last_start_ms = now_ms
        self.recent.append(now_ms)


def _flood(pacing: WakePacing, now_ms: int) -> Deferral | None:
    starts = [t for t in pacing.recent if t >= now_ms - FLOOD_WINDOW_MS]
    if len(starts) < FLOOD_THRESHOLD:
        return None
    oldest = starts[-FLOOD_THRESHOLD]
    return Deferral("flood", oldest + FLOOD_WINDOW_MS + 1)


def _spacing(pacing: WakePacing, now_ms: int) -> int | None:
    if pacing.last_start_ms is None:
        return None
    at = pacing.last_start_ms + MIN_SPACING_MS
    return at if now_ms < at else None


def should_defer(
    intent: WakeIntent, pacing: WakePacing, now_ms: int, *, retained: bool = False
) -> Deferral | None:
    """Whether a wake of `intent` waits (OpenClaw's `shouldDeferWake`; see the module
    docstring). `retained`: the wake was deferred before (its work is kept)."""
    if intent == "manual":
        return None
    flood = _flood(pacing, now_ms)
    if flood is not None or intent in ("immediate", "scheduled"):
        return flood
    due = pacing.next_due_ms
    if due is None:
        return None  # the first wake since the start runs
    spacing = _spacing(pacing, now_ms)
    if not retained and now_ms < due:
        return Deferral("not-due", min(due, spacing if spacing is not None else due))
    return Deferral("min-spacing", spacing) if spacing is not None else None


def retain(intent: WakeIntent, deferral: Deferral) -> bool:
    """Whether a deferred wake is kept to run at `deferral.retry_at_ms` (else dropped)."""
    return deferral.reason in _GUARD_REASONS and intent in ("event", "immediate")


def idle_grace(intent: WakeIntent, reason: str) -> bool:
    """Whether a wake skipped as busy for `reason` waits out OpenClaw's idle grace (60 s, as
    a deferred wake: `not_before`, retained) rather than blocking its target for 1 s."""
    return reason in _IDLE_REASONS or (reason in _RUN_REASONS and intent == "scheduled")


def retry_delay_s(intent: WakeIntent, reason: str, *, pure_poll: bool) -> float | None:
    """How long a wake whose heartbeat was skipped as busy for `reason` (one of
    `RETRY_REASONS`) waits before its next try; None: not tried again (a scheduled poll with
    no event waiting: its next tick comes)."""
    if intent == "scheduled" and pure_poll:
        return None
    return IDLE_RETRY_S if idle_grace(intent, reason) else RETRY_S
