"""`Heartbeats`: the heartbeat runs of the gateway's agents, on schedule and on a wake.

Every heartbeat starts as a wake (`request_wake`, `wake_now`, `wake_and_wait`; the cadence's
ticks too), kept per target in `_wakes.PendingWakes` and taken by `run_wakes`, which runs at
most `MAX_ACTIVE` targets at once, one heartbeat per target at a time. A wake, as OpenClaw
2026.9.6's runner takes it:

1. not run when heartbeats are off (`set-heartbeats`: a `disabled` event), or when it is a
   cadence tick or a cron job's `next-heartbeat` event for an agent without a cadence (no
   event); deferred by the agent's pacing (`runtime.heartbeat.should_defer`: `not-due`,
   `min-spacing`, `flood`; no event), a deferred `event` or `immediate` wake runs at the time
   the guard gives;
2. else one heartbeat (`run_heartbeat`), skipped (a `heartbeat` event with `status:
   "skipped"` and its `reason`, no model call) outside `activeHours` (`quiet-hours`; a
   background command's completion and a cron wake are not held by them), when a background
   command's wake finds no completion waiting (`no-pending-event`), when something is busy
   (`cron-in-progress`: a cron run holds the `cron` lane; `requests-in-flight`: the session,
   or for a tick or an event wake any session of the agent, has a run going or queued, or the
   agent's heartbeat runs), when the workspace's `HEARTBEAT.md` exists but is effectively
   empty and no system event waits (`empty-heartbeat-file`; a scheduled poll checks this
   before the busy guards), or when a scheduled poll with no system event waiting has
   nowhere to deliver an alert (`no-route`: clawlane has no channels, so every `target` but
   `none`);
3. a heartbeat skipped as busy is tried again (`runtime.heartbeat.retry_delay_s`: 1 s, or
   60 s for a scheduled one that found a run going; a plain scheduled poll, no system event
   waiting, waits for its next tick), each try with its own event, until it runs;
4. a heartbeat that runs is one run in the heartbeat's session (the agent's main session
   unless `session` says otherwise, or the session a wake names; with `isolatedSession`,
   `<that session>:heartbeat` made fresh for each run, taking the session's queued system
   events, as OpenClaw's), marked as a heartbeat (`RunRecord.heartbeat`: its agent events
   carry `isHeartbeat: true`, its chat deltas are not sent and its chat `final` drops a
   `HEARTBEAT_OK` acknowledgment, `actors.runs.ChatStream`), with the heartbeat's `model`,
   `heartbeat_respond` offered, and with `lightContext` none of the workspace's bootstrap
   files in its system prompt (`RunRequest.light_context`). Its message
   (`_message`): the queued background-command completions as OpenClaw's exec completion
   prompt (the ordinary agent timeout, not the heartbeat's), else a cron wake's events as
   its reminder prompt, else OpenClaw's heartbeat prompt with `HEARTBEAT.md` as the monitor
   scratch (`runtime.heartbeat.build_prompt`). The events it tells stay queued, held, while
   the run goes, and are taken out once it ended ok (OpenClaw consumes the events a
   heartbeat inspected when it finishes): a run that failed, was refused or cancelled
   leaves them for the session's next turn or heartbeat. The other queued events come
   before its message as `System:` lines, taken when its turn starts (as any turn's, and
   OpenClaw's reply admission), but for completions it does not tell: no turn reads those,
   they wait for a heartbeat that tells them (`runtime.heartbeat.SystemEventQueue.drain`);
5. its verdict (`classify_reply`) becomes the `heartbeat` event: `ok-empty` or `ok-token`
   (`silent: true`, `reason` the wake's), a completion's relayed reply `sent` (shown in the
   session's chat, as OpenClaw's internal projection), another alert `skipped` with `reason`
   `no-route` (or `target-none`), its `preview` and `indicatorType: "alert"` (OpenClaw's
   event for an alert with no delivery target: the alert itself is the run's chat reply), a
   failed run `failed`.

Every event goes to every connection (OpenClaw's `heartbeat` event needs no scope) and is
kept as the last one (`last-heartbeat`).

Schedule: each agent that runs heartbeats (`runtime.heartbeat.heartbeat_agents`) with a
cadence gets a `scheduled` wake every `every` (the first one `every` after the gateway starts
or the cadence changes), on trio's clock. The schedule only fires while the cron scheduler
runs (`services.automations` set and `cron.enabled`: OpenClaw's heartbeats belong to its
automations scheduler, so `cron.enabled: false` and a cluster node not running cron fire
none; the node running cron fires every agent's); wakes work regardless.
Config changes are read at each tick and at most `RESCAN_S` (`rescan_s`) after they happen.

A cron job's system event (`deliver_event`, `_delivery`) is queued in its session and wakes
the agent's heartbeat, waited for with `wakeMode: "now"`.

In a cluster (`peers`, set by `transports.cluster`): a wake whose session another node owns
is sent to that node (`HeartbeatPeers.send_wake`) and runs there, once, paced and retried
there, so the session does not move: a cadence tick, a wake-now of another agent. A wake
runs here, its session moving here through `session_gate` as any run's, when nobody owns the
session (taking its lease), when this node holds system events for it, or when someone here
waits for it (`wake_and_wait`). A cron job's system event is queued and woken on the node
that owns its session (`HeartbeatPeers.deliver_event`; `deliver_routed` there), which keeps
it. The events emitted and `set-heartbeats` go to every node (`adopt_event`,
`adopt_enabled`), so `last-heartbeat` answers the same on each; `set-heartbeats` is stored
for the cluster first (`HeartbeatPeers.share_enabled`), so a node that starts later, or
again, follows it too.
"""

from __future__ import annotations

import functools
import logging
import math
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import msgspec
import trio

from runtime.heartbeat import (
    COALESCE_S,
    RETRY_REASONS,
    EventDelivery,
    HeartbeatSettings,
    SystemEvent,
    WakeIntent,
    WakePacing,
    WakeResult,
    build_cron_event_prompt,
    build_exec_event_prompt,
    build_prompt,
    classify_reply,
    heartbeat_agents,
    heartbeat_event,
    idle_grace,
    in_active_hours,
    is_cron_system_event,
    is_effectively_empty,
    is_exec_completion_event,
    resolve_heartbeat,
    retain,
    retry_delay_s,
    should_defer,
)
from runtime.loop import now_ms
from runtime.model import GenerationError

from ..runs import RunRecord
from ..session import LaneFull, RunRequest
from ._delivery import deliver_answering, deliver_here
from ._peers import HeartbeatPeers
from ._wakes import MAX_ACTIVE, PendingWakes, Wake, WakeWaiter

if TYPE_CHECKING:
    from .._supervisor import Supervisor

__all__ = ["HANDOFF_S", "RESCAN_S", "Heartbeats", "open_heartbeats"]

log = logging.getLogger("clawlane.heartbeat")

RESCAN_S: Final = 60.0
"""The longest the schedule goes without reading the config again."""
HANDOFF_S: Final = 120.0
"""How long `wake_and_wait` waits through retries before it hands the wake off (OpenClaw's
cron wait)."""
SCRATCH_FILE: Final = "HEARTBEAT.md"
SCRATCH_MAX_BYTES: Final = 256 * 1024
_ENCODER: Final = msgspec.json.Encoder(order="sorted")
_PERSISTENT: Final = ("exec-event", "cron")
"""Wake sources not held by `activeHours` and whose message is their events, not the
monitor scratch."""


def _newer(event: dict[str, Any], than: dict[str, Any]) -> bool:
    """`event` is after `than` (by `ts`; equal ones by their encoding: any order all nodes
    agree on)."""
    ts, other = event.get("ts"), than.get("ts")
    if not isinstance(ts, int | float) or not isinstance(other, int | float) or ts == other:
        return _ENCODER.encode(event) > _ENCODER.encode(than)
    return ts > other


def _reply_text(final: dict[str, Any] | None) -> str:
    payloads = (final or {}).get("payloads") or []
    texts = [
        str(p.get("text"))
        for p in payloads
        if isinstance(p, dict)
        and p.get("text")
        and not p.get("isError")
        and not p.get("isReasoning")
    ]
    return "\n\n".join(texts)


@attrs.frozen
class _Message:
    """A heartbeat's message and what it carries."""

    text: str
    completion: bool = False
    """It tells background-command completions: a continuation of the session's work (the
    ordinary agent timeout; its relayed reply is shown, not an undeliverable alert)."""
    told: list[SystemEvent] = attrs.field(factory=list)
    """The queued events it tells (completions, a cron wake's reminders)."""


@attrs.frozen
class _Retry:
    reason: str
    at: float
    """Trio time."""
    guard: bool


class Heartbeats:
    """Create with `open_heartbeats`. All methods run in the trio thread."""

    def __init__(
        self, sup: Supervisor, nursery: trio.Nursery, wall: Callable[[], int] = now_ms
    ) -> None:
        self._sup = sup
        self._nursery = nursery
        self._wall = wall
        self.enabled = True
        """`set-heartbeats`: False skips every heartbeat (`reason: "disabled"`)."""
        self.last_event: dict[str, Any] | None = None
        self._due: dict[str, tuple[int, float]] = {}
        """Agent id -> (its cadence in ms, when its next heartbeat is due on trio's clock)."""
        self._running: set[str] = set()
        self._changed = trio.Event()
        self._wakes = PendingWakes()
        self._active: set[str] = set()
        """The targets whose wake is being run."""
        self._wakes_changed = trio.Event()
        self._pacing: dict[str, WakePacing] = {}
        self.rescan_s = RESCAN_S
        """The longest the schedule sleeps without reading the config again."""
        self.runs = 0
        """Heartbeat runs started (for tests and statistics)."""
        self.sent = 0
        """Wakes sent to the node owning their session (for tests and statistics)."""
        self.peers: HeartbeatPeers | None = None
        """The other nodes of this gateway's cluster, None alone (see the module docstring)."""

    # --- the event ------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        """Keep `event` as the last one and send it to every connection, on every node."""
        self.last_event = event
        self._sup.hub.broadcast("heartbeat", event)
        if self.peers is not None:
            self.peers.tell_event(event)

    def adopt_event(self, event: dict[str, Any]) -> None:
        """(Another node emitted `event`.) Send it to this node's connections; keep it as
        the last one unless the one kept is newer (`ts`, ties broken by the encoded event,
        so every node keeps the same one). Not a checkpoint."""
        self._sup.hub.broadcast("heartbeat", event)
        if self.last_event is None or _newer(event, self.last_event):
            self.last_event = event

    def _skipped(self, reason: str, started: int) -> dict[str, Any]:
        event = heartbeat_event(
            ts=self._wall(), status="skipped", reason=reason, duration_ms=self._wall() - started
        )
        self.emit(event)
        return event

    # --- the schedule ---------------------------------------------------------------------

    async def set_enabled(self, enabled: bool) -> None:
        """`set-heartbeats`: here and, in a cluster, stored for every node first
        (`HeartbeatPeers.share_enabled`: raises `StoreError`, and nothing changes, when it
        cannot be stored). A checkpoint."""
        if self.peers is not None:
            await self.peers.share_enabled(enabled)
        else:
            await trio.lowlevel.checkpoint()
        self.adopt_enabled(enabled)

    def adopt_enabled(self, enabled: bool) -> None:
        """`set-heartbeats`, here only (another node's)."""
        self.enabled = enabled
        self._changed.set()

    def _scheduled(self) -> list[str]:
        gen = self._sup.generation
        return heartbeat_agents(gen.config, sorted(gen.agents))

    def _refresh(self, now: float) -> None:
        """Re-read the cadences: a new or changed one is due `every` from `now`."""
        gen = self._sup.generation
        due: dict[str, tuple[int, float]] = {}
        for agent_id in self._scheduled():
            try:
                every = resolve_heartbeat(gen, agent_id).every_ms
            except ValueError:
                continue
            if every <= 0:
                continue
            old = self._due.get(agent_id)
            due[agent_id] = old if old and old[0] == every else (every, now + every / 1000)
        self._due = due

    async def run_schedule(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Fire the due heartbeats until cancelled (see the module docstring)."""
        self._refresh(trio.current_time())
        task_status.started()
        while True:
            now = trio.current_time()
            next_due = min((at for _, at in self._due.values()), default=now + self.rescan_s)
            with trio.move_on_at(min(next_due, now + self.rescan_s)):
                await self._changed.wait()
            self._changed = trio.Event()
            now = trio.current_time()
            self._refresh(now)
            for agent_id, (every, at) in list(self._due.items()):
                if at > now:
                    continue
                self._due[agent_id] = (every, now + every / 1000)
                if (
                    self._sup.services.automations is None
                    or not self._sup.generation.config.cron.enabled
                ):
                    continue  # no automations scheduler running here: no scheduled heartbeats
                self.request_wake(
                    agent_id, source="interval", intent="scheduled", reason="interval", coalesce_s=0
                )

    # --- wakes ----------------------------------------------------------------------------

    def session_for(self, agent_id: str) -> str:
        """The session `agent_id`'s heartbeats run in."""
        return resolve_heartbeat(self._sup.generation, agent_id).session_key

    def enqueue(self, session_key: str, text: str) -> None:
        """Queue a system event for `session_key`'s next turn."""
        self._sup.services.system_events.enqueue(session_key, text)

    def request_wake(
        self,
        agent_id: str,
        *,
        source: str,
        intent: WakeIntent,
        reason: str,
        session_key: str | None = None,
        coalesce_s: float = COALESCE_S,
        waiter: WakeWaiter | None = None,
        routed: bool = False,
    ) -> None:
        """Ask for a heartbeat of `agent_id` (in `session_key` if given) `coalesce_s` from
        now, as the module docstring says (`routed`: another node sent it: it runs here).
        Not a checkpoint."""
        wake = Wake(
            agent_id=agent_id,
            session_key=session_key,
            source=source,
            intent=intent,
            reason=reason,
            ready_at=trio.current_time() + coalesce_s,
            waiters=[waiter] if waiter is not None else [],
            routed=routed,
        )
        self._wakes.add(wake)
        self._wakes_changed.set()

    def wake_now(self, agent_id: str, reason: str, session_key: str | None = None) -> None:
        """A wake-now of `agent_id` (`wake`, `system-event` with `wake: true`: OpenClaw's
        `immediate` intent). Not a checkpoint."""
        self.request_wake(
            agent_id, source="manual", intent="immediate", reason=reason, session_key=session_key
        )

    async def wake_and_wait(
        self, agent_id: str, *, source: str, intent: WakeIntent, reason: str
    ) -> WakeResult:
        """A wake of `agent_id`, waited for: how it ended, or `handed_off` once it must wait
        for a `cron-in-progress` retry or past `HANDOFF_S` (it still runs later). A
        checkpoint; cancelled, it stops waiting (the wake stays)."""
        deadline = trio.current_time() + HANDOFF_S

        def stop(why: str, at: float) -> bool:
            return why == "cron-in-progress" or at > deadline

        waiter = WakeWaiter(stop_on_retry=stop)
        self.request_wake(agent_id, source=source, intent=intent, reason=reason, waiter=waiter)
        await waiter.done.wait()
        assert waiter.result is not None
        return waiter.result

    async def deliver_event(
        self, agent_id: str, session_key: str, text: str, *, context_key: str, wait: bool
    ) -> EventDelivery:
        """A cron job's system event: `text` queued for `session_key` and the agent's
        heartbeat woken (`wait`: its end waited for), on the node that owns the session
        (see the module docstring and `_delivery`). A checkpoint."""
        here = functools.partial(
            deliver_here, self._sup, agent_id, session_key, text, context_key=context_key, wait=wait
        )
        if self.peers is None:
            return await here()
        return await self.peers.deliver_event(
            agent_id, session_key, text, context_key=context_key, wait=wait, here=here
        )

    def deliver_routed(
        self,
        agent_id: str,
        session_key: str,
        text: str,
        *,
        context_key: str,
        wait: bool,
        answer: Callable[[EventDelivery], None],
    ) -> None:
        """(Another node sent a cron job's system event for a session this node owns.)
        Deliver it here, in a task of the heartbeats, and `answer` how it went (an error as
        a `failed` wake). Not a checkpoint."""
        self._nursery.start_soon(
            functools.partial(
                deliver_answering,
                self._sup,
                agent_id,
                session_key,
                text,
                context_key=context_key,
                wait=wait,
                answer=answer,
            )
        )

    async def run_wakes(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Take the due wakes and run them until cancelled. A checkpoint."""
        task_status.started()
        try:
            while True:
                now = trio.current_time()
                room = MAX_ACTIVE - len(self._active)
                for wake in self._wakes.take_ready(now, self._active, room):
                    self._active.add(wake.target)
                    self._nursery.start_soon(self._dispatch, wake)
                due = self._wakes.next_due(self._active)
                with trio.move_on_at(math.inf if due is None else due):
                    await self._wakes_changed.wait()
                self._wakes_changed = trio.Event()
        finally:
            self._wakes.cancel()

    async def _dispatch(self, wake: Wake) -> None:
        try:
            outcome: WakeResult | _Retry = await self._attempt(wake)
        except Exception:
            log.exception("heartbeat of %s crashed", wake.agent_id)
            outcome = WakeResult("failed", "internal error")
        except BaseException:  # cancelled: the runner closes
            wake.settle(WakeResult("skipped", "disabled"))
            raise
        finally:
            self._active.discard(wake.target)
            self._wakes_changed.set()
        if isinstance(outcome, WakeResult):
            wake.settle(outcome)
            return
        wake.hand_off(outcome.reason, outcome.at)
        wake.ready_at = trio.current_time()
        if outcome.guard:  # deferred by pacing, or a busy one's idle grace: this wake waits
            wake.not_before = outcome.at
            wake.retained = True
            self._wakes.add(wake)
        else:  # busy: its target waits (OpenClaw's blockedUntil)
            wake.not_before = 0.0
            self._wakes.add(wake, blocked_until=outcome.at)

    def _allowed(self, wake: Wake, settings: HeartbeatSettings) -> bool:
        """A cadence tick and a cron job's event wake need the agent's cadence; a wake-now
        and a completion do not (OpenClaw's targeted wakes; clawlane's `wake` too)."""
        if wake.intent in ("manual", "immediate") or wake.source == "exec-event":
            return True
        return settings.every_ms > 0 and wake.agent_id in self._scheduled()

    async def _attempt(self, wake: Wake) -> WakeResult | _Retry:
        """One try of `wake` (see the module docstring). A checkpoint."""
        if not self.enabled:
            return WakeResult("skipped", self._skipped("disabled", self._wall())["reason"])
        try:
            settings = resolve_heartbeat(self._sup.generation, wake.agent_id)
        except (GenerationError, ValueError) as exc:
            return WakeResult("failed", self._failed(str(exc), self._wall())["reason"])
        if not self._allowed(wake, settings):
            return WakeResult("skipped", "disabled")
        key = wake.session_key or settings.session_key
        if await self._sent(wake, key):
            return WakeResult("skipped", "sent-to-owner", handed_off=True)
        pacing = self._pacing.setdefault(wake.agent_id, WakePacing())
        enrolled = settings.every_ms > 0 and wake.agent_id in self._scheduled()
        pacing.interval_ms = settings.every_ms if enrolled else 0
        started = self._wall()
        deferral = should_defer(wake.intent, pacing, started, retained=wake.retained)
        if deferral is not None:
            if retain(wake.intent, deferral):
                at = trio.current_time() + max(0, deferral.retry_at_ms - started) / 1000
                return _Retry(deferral.reason, at, guard=True)
            return WakeResult("skipped", deferral.reason)
        pure_poll = wake.intent == "scheduled" and not self._sup.services.system_events.has(key)
        event, ran = await self._beat(wake)
        reason = event.get("reason")
        if event["status"] == "skipped" and reason in RETRY_REASONS and not ran:
            delay = retry_delay_s(wake.intent, str(reason), pure_poll=pure_poll)
            if delay is not None:
                at = trio.current_time() + delay
                return _Retry(str(reason), at, idle_grace(wake.intent, str(reason)))
        if not (wake.source == "exec-event" and reason == "no-pending-event"):
            pacing.started(started)
        if ran:
            return WakeResult("ran")
        return WakeResult("failed" if event["status"] == "failed" else "skipped", reason)

    async def _sent(self, wake: Wake, key: str) -> bool:
        """Whether `wake` went to the node that owns `key` (see the module docstring). A
        checkpoint in a cluster."""
        if self.peers is None or wake.routed or wake.waiters:
            return False
        if self._sup.services.system_events.has(key):
            return False  # its events are here: its heartbeat must run here
        if not await self.peers.send_wake(wake, key):
            return False
        self.sent += 1
        return True

    # --- one heartbeat --------------------------------------------------------------------

    async def _scratch(self, agent_id: str) -> str | None:
        spec = self._sup.generation.agent(agent_id)
        workspace = await self._sup.workspace_for(spec.id, spec.workspace)

        def read(path: Path = workspace / SCRATCH_FILE) -> str | None:
            try:
                with path.open("rb") as f:
                    return f.read(SCRATCH_MAX_BYTES).decode("utf-8", "replace")
            except FileNotFoundError:
                return None

        return await trio.to_thread.run_sync(read)

    async def run_heartbeat(
        self, agent_id: str, *, reason: str = "manual", session_key: str | None = None
    ) -> dict[str, Any]:
        """One heartbeat of `agent_id` to its end, now, without the wake queue's pacing and
        retries; returns its `heartbeat` event. A checkpoint. Raises only `Cancelled`."""
        if not self.enabled:
            return self._skipped("disabled", self._wall())
        wake = Wake(agent_id, session_key, reason, "manual", reason, trio.current_time())
        event, _ran = await self._beat(wake)
        return event

    async def _beat(self, wake: Wake) -> tuple[dict[str, Any], bool]:
        """One heartbeat for `wake`: its event, and whether the model ran."""
        started = self._wall()
        if wake.agent_id in self._running:
            return self._skipped("requests-in-flight", started), False
        self._running.add(wake.agent_id)
        try:
            return await self._run(wake, started)
        finally:
            self._running.discard(wake.agent_id)

    def _busy(self, wake: Wake, keys: set[str], events: list[SystemEvent]) -> str | None:
        """Why the heartbeat may not run now (OpenClaw's busy guards), or None. A
        completion in its own session waits for that session only."""
        sup = self._sup
        completion = wake.source == "exec-event" and wake.session_key is not None
        if not (completion and any(is_exec_completion_event(e.text) for e in events)):
            cron = sup.lanes.get("cron")
            lane = cron.slots.statistics() if cron is not None else None
            if lane is not None and lane.borrowed_tokens + lane.tasks_waiting > 0:
                return "cron-in-progress"
            if wake.intent not in ("manual", "immediate") and any(
                actor.busy and actor.agent_id == wake.agent_id for actor in sup.sessions()
            ):
                return "requests-in-flight"
        for key in keys:
            current = sup.peek_session(key)
            if current is not None and current.busy:
                return "requests-in-flight"
        return None

    async def _run(self, wake: Wake, started: int) -> tuple[dict[str, Any], bool]:
        sup = self._sup
        try:
            settings = resolve_heartbeat(sup.generation, wake.agent_id)
        except (GenerationError, ValueError) as exc:
            return self._failed(str(exc), started), False
        key = wake.session_key or settings.session_key
        run_key = f"{key}:heartbeat" if settings.isolated_session else key
        persistent = wake.source in _PERSISTENT
        if not persistent and not in_active_hours(settings, self._wall()):
            return self._skipped("quiet-hours", started), False
        events = sup.services.system_events.peek(key)
        if wake.source == "exec-event" and not any(
            is_exec_completion_event(e.text) for e in events
        ):
            return self._skipped("no-pending-event", started), False
        scratch = None if persistent else await self._scratch(wake.agent_id)
        idle_poll = not events and is_effectively_empty(scratch)
        if wake.source == "interval" and idle_poll:
            return self._skipped("empty-heartbeat-file", started), False
        busy = self._busy(wake, {key, run_key}, events)
        if busy is not None:
            return self._skipped(busy, started), False
        if idle_poll:
            return self._skipped("empty-heartbeat-file", started), False
        if wake.source == "interval" and settings.target != "none" and not events:
            return self._skipped("no-route", started), False  # no channel to deliver an alert to
        message = self._message(settings, scratch, wake, events)
        queue = sup.services.system_events
        queue.hold(key, message.told)  # kept queued until the run ends ok
        consumed = False
        try:
            if run_key != key:  # the isolated run takes the session's queued events
                for queued in queue.drain(key):
                    queue.enqueue(
                        run_key, queued.text, ts=queued.ts, context_key=queued.context_key
                    )
            record = await self._run_message(settings, run_key, message)
            if isinstance(record, str):
                return self._failed(record, started), False
            consumed = record.status == "ok"
            return self._finish(settings, record, wake.reason, started, message), True
        finally:
            if consumed:
                queue.take(key, message.told)
            else:  # failed, refused or cancelled: told again later (see `release`)
                queue.release(key, message.told)

    async def _run_message(
        self, settings: HeartbeatSettings, run_key: str, message: _Message
    ) -> RunRecord | str:
        """The heartbeat's run of `message` to its end; why it was refused instead. A
        checkpoint; cancelled, the run is aborted."""
        try:
            record = await self._submit(settings, run_key, message)
        except (GenerationError, LaneFull) as exc:
            return str(exc)
        except Exception as exc:  # refused by the supervisor (shutting down, ...)
            return f"{type(exc).__name__}: {exc}"
        try:
            await record.done.wait()
        except BaseException:
            record.abort("shutdown")
            raise
        return record

    def _message(
        self,
        settings: HeartbeatSettings,
        scratch: str | None,
        wake: Wake,
        events: list[SystemEvent],
    ) -> _Message:
        """The heartbeat's message (OpenClaw's `resolveHeartbeatRunPrompt`): completions,
        else a cron wake's reminders, else the heartbeat prompt. The events it tells are
        `told` (held in the queue while it runs, taken once it ended ok); the others come
        before it as `System:` lines."""
        tagged = [e for e in events if (e.context_key or "").startswith("cron:")]
        inspect = wake.source != "interval" or bool(tagged)
        completions = [e for e in events if inspect and is_exec_completion_event(e.text)]
        if completions:
            texts = [e.text for e in completions]
            relay = settings.target != "none"  # shown in the session's chat
            prompt = build_exec_event_prompt(texts, deliver_to_user=relay)
            return _Message(prompt, completion=True, told=completions)
        cron = wake.source == "cron"
        reminders = [e for e in events if (cron or e in tagged) and is_cron_system_event(e.text)]
        if reminders:
            # No channel to relay a reminder to: OpenClaw's prompt without a route.
            texts = [e.text for e in reminders]
            return _Message(build_cron_event_prompt(texts, deliver_to_user=False), told=reminders)
        return _Message(build_prompt(settings.prompt, scratch, response_tool=False))

    async def _submit(self, settings: HeartbeatSettings, key: str, message: _Message) -> RunRecord:
        sup = self._sup
        if settings.model is not None:
            sup.generation.resolve(settings.model, agent_id=settings.agent_id)
        if sup.session_gate is not None:
            await sup.session_gate(key)  # in a cluster: the session moves to this node
        actor = await sup.session(key, settings.agent_id)
        assert actor.row is not None
        record = RunRecord(
            run_id=f"heartbeat-{uuid.uuid4()}",
            session_key=key,
            session_id=actor.row.sessionId,
            agent_id=settings.agent_id,
            accepted_at=now_ms(),
        )
        record.heartbeat = True
        request = RunRequest(
            record=record,
            message=message.text,
            origin="heartbeat",
            timeout_s=None if message.completion else settings.timeout_s,
            model_ref=settings.model,
            reset=settings.isolated_session,  # a fresh session each run, no history
            light_context=settings.light_context,
        )
        sup.accept_run(actor, request, actor.queue_settings("followup"))
        sup.hub.mark_heartbeat(record.run_id)
        self.runs += 1
        return record

    def _failed(self, reason: str, started: int) -> dict[str, Any]:
        event = heartbeat_event(
            ts=self._wall(), status="failed", reason=reason, duration_ms=self._wall() - started
        )
        self.emit(event)
        return event

    def _finish(
        self,
        settings: HeartbeatSettings,
        record: RunRecord,
        reason: str,
        started: int,
        message: _Message,
    ) -> dict[str, Any]:
        response = self._sup.services.heartbeat_responses.take(record.run_id)
        if record.status != "ok":
            why = record.error or (
                f"aborted ({record.abort_reason})" if record.aborted else "run failed"
            )
            return self._failed(why, started)
        verdict = classify_reply(
            _reply_text(record.final), ack_max_chars=settings.ack_max_chars, response=response
        )
        duration = self._wall() - started
        if verdict.status == "sent" and message.completion and settings.target != "none":
            # A completion's reply, shown in the session's chat (OpenClaw's internal
            # projection of an exec completion into the conversation that ran it).
            event = heartbeat_event(
                ts=self._wall(), status="sent", preview=verdict.preview, duration_ms=duration
            )
        elif verdict.status == "sent":
            # An alert, shown in the session's chat; no channel delivers it (OpenClaw's
            # event for an alert without a delivery target).
            event = heartbeat_event(
                ts=self._wall(),
                status="skipped",
                reason="target-none" if settings.target == "none" else "no-route",
                preview=verdict.preview,
                duration_ms=duration,
                indicator="alert",
            )
        else:
            event = heartbeat_event(
                ts=self._wall(),
                status=verdict.status,
                reason=reason,
                duration_ms=duration,
                silent=True,
            )
        self.emit(event)
        return event


@asynccontextmanager
async def open_heartbeats(
    sup: Supervisor, *, wall: Callable[[], int] = now_ms
) -> AsyncIterator[Heartbeats]:
    """Run the heartbeats of `sup`'s agents (`sup.heartbeats` while open). On exit the
    schedule and the wakes stop (a waiting wake's waiters are told `disabled`) and running
    heartbeats are cancelled (their runs end with the supervisor's)."""
    async with trio.open_nursery() as nursery:
        beats = Heartbeats(sup, nursery, wall)
        await nursery.start(beats.run_schedule)
        await nursery.start(beats.run_wakes)
        sup.heartbeats = beats
        try:
            yield beats
        finally:
            sup.heartbeats = None
            nursery.cancel_scope.cancel()
