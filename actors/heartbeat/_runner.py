"""`Heartbeats`: the heartbeat runs of the gateway's agents, on schedule and on a wake.

A heartbeat of an agent (`run_heartbeat`), as OpenClaw 2026.9.6's runner:

1. skipped (a `heartbeat` event with `status: "skipped"` and its `reason`, no model call)
   when heartbeats are off (`set-heartbeats`: `disabled`), outside `activeHours`
   (`quiet-hours`), when its session has a run going or queued (`requests-in-flight`), or
   when the workspace's `HEARTBEAT.md` exists but is effectively empty and no system event
   waits (`empty-heartbeat-file`), or when a scheduled poll with no system event waiting
   has nowhere to deliver an alert (`no-route`: clawlane has no channels, so every
   `target` but `none`; OpenClaw skips such polls before the model runs);
2. else one run in the heartbeat's session (the agent's main session unless `session` says
   otherwise; with `isolatedSession`, `<that session>:heartbeat` made fresh for each run,
   taking the session's queued system events, as OpenClaw's) with OpenClaw's prompt (`runtime.heartbeat.build_prompt`), the queued system
   events before it, the heartbeat's `model` and timeout, `heartbeat_respond` offered; the
   run is marked as a heartbeat (`RunRecord.heartbeat`): its agent events carry
   `isHeartbeat: true`, its chat deltas are not sent and its chat `final` drops a
   `HEARTBEAT_OK` acknowledgment (`actors.runs.ChatStream`);
3. its verdict (`classify_reply`) becomes the `heartbeat` event: `ok-empty` or `ok-token`
   (`silent: true`, `reason` the wake's), an alert `skipped` with `reason` `no-route` (or
   `target-none`), its `preview` and `indicatorType: "alert"` (OpenClaw's event for an
   alert with no delivery target: the alert itself is the run's chat reply), a failed run
   `failed`.

Every event goes to every connection (OpenClaw's `heartbeat` event needs no scope) and is
kept as the last one (`last-heartbeat`).

Schedule: each agent that runs heartbeats (`runtime.heartbeat.heartbeat_agents`) with a
cadence fires every `every` (the first one `every` after the gateway starts or the cadence
changes), on trio's clock. The schedule only fires while the cron scheduler runs
(`services.automations` set and `cron.enabled`: OpenClaw's heartbeats belong to its
automations scheduler, so `cron.enabled: false` and a cluster node not running cron fire
none); wakes work regardless.
Config changes are read at each tick and at most `RESCAN_S` (`rescan_s`) after they happen.

A wake (`wake`, `system-event` with `wake: true`, `mode: "now"`) runs a heartbeat at once in
the runner's nursery; a heartbeat already running for that agent takes the wake's events
(they wait in the queue for its next turn).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import trio

from runtime.heartbeat import (
    HeartbeatSettings,
    build_prompt,
    classify_reply,
    heartbeat_agents,
    heartbeat_event,
    in_active_hours,
    is_effectively_empty,
    resolve_heartbeat,
)
from runtime.loop import now_ms
from runtime.model import GenerationError

from ..runs import RunRecord
from ..session import LaneFull, RunRequest

if TYPE_CHECKING:
    from .._supervisor import Supervisor

__all__ = ["RESCAN_S", "Heartbeats", "open_heartbeats"]

log = logging.getLogger("clawlane.heartbeat")

RESCAN_S: Final = 60.0
"""The longest the schedule goes without reading the config again."""
SCRATCH_FILE: Final = "HEARTBEAT.md"
SCRATCH_MAX_BYTES: Final = 256 * 1024


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
        self.rescan_s = RESCAN_S
        """The longest the schedule sleeps without reading the config again."""
        self.runs = 0
        """Heartbeat runs started (for tests and statistics)."""

    # --- the event ------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        """Keep `event` as the last one and send it to every connection."""
        self.last_event = event
        self._sup.hub.broadcast("heartbeat", event)

    def _skipped(self, reason: str, started: int) -> dict[str, Any]:
        event = heartbeat_event(
            ts=self._wall(), status="skipped", reason=reason, duration_ms=self._wall() - started
        )
        self.emit(event)
        return event

    # --- the schedule ---------------------------------------------------------------------

    def set_enabled(self, enabled: bool) -> None:
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
                self._nursery.start_soon(self._guarded, agent_id, "interval", None)

    # --- wakes ----------------------------------------------------------------------------

    def session_for(self, agent_id: str) -> str:
        """The session `agent_id`'s heartbeats run in."""
        return resolve_heartbeat(self._sup.generation, agent_id).session_key

    def enqueue(self, session_key: str, text: str) -> None:
        """Queue a system event for `session_key`'s next turn."""
        self._sup.services.system_events.enqueue(session_key, text)

    def wake_now(self, agent_id: str, reason: str, session_key: str | None = None) -> None:
        """Start a heartbeat of `agent_id` now (in `session_key` if given). Not a
        checkpoint."""
        self._nursery.start_soon(self._guarded, agent_id, reason, session_key)

    async def _guarded(self, agent_id: str, reason: str, session_key: str | None) -> None:
        try:
            await self.run_heartbeat(agent_id, reason=reason, session_key=session_key)
        except Exception:
            log.exception("heartbeat of %s crashed", agent_id)

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
        """One heartbeat of `agent_id` to its end; returns its `heartbeat` event. A
        checkpoint. Raises only `Cancelled`."""
        started = self._wall()
        if not self.enabled:
            return self._skipped("disabled", started)
        if agent_id in self._running:
            return self._skipped("requests-in-flight", started)
        self._running.add(agent_id)
        try:
            return await self._run(agent_id, reason, session_key, started)
        finally:
            self._running.discard(agent_id)

    async def _run(
        self, agent_id: str, reason: str, session_key: str | None, started: int
    ) -> dict[str, Any]:
        sup = self._sup
        try:
            settings = resolve_heartbeat(sup.generation, agent_id)
        except (GenerationError, ValueError) as exc:
            return self._failed(str(exc), started)
        key = session_key or settings.session_key
        run_key = f"{key}:heartbeat" if settings.isolated_session else key
        if not in_active_hours(settings, self._wall()):
            return self._skipped("quiet-hours", started)
        for busy_key in {key, run_key}:
            current = sup.peek_session(busy_key)
            if current is not None and current.busy:
                return self._skipped("requests-in-flight", started)
        scratch = await self._scratch(agent_id)
        has_events = sup.services.system_events.has(key)
        if not has_events and is_effectively_empty(scratch):
            return self._skipped("empty-heartbeat-file", started)
        if reason == "interval" and settings.target != "none" and not has_events:
            return self._skipped("no-route", started)  # no channel to deliver an alert to
        if run_key != key:  # the isolated run takes the session's queued events
            queue = sup.services.system_events
            for queued in queue.drain(key):
                queue.enqueue(run_key, queued.text, ts=queued.ts)
        try:
            record = await self._submit(
                settings, run_key, build_prompt(settings.prompt, scratch, response_tool=False)
            )
        except (GenerationError, LaneFull) as exc:
            return self._failed(str(exc), started)
        except Exception as exc:  # refused by the supervisor (shutting down, ...)
            return self._failed(f"{type(exc).__name__}: {exc}", started)
        try:
            await record.done.wait()
        except BaseException:
            record.abort("shutdown")
            raise
        return self._finish(settings, record, reason, started)

    async def _submit(self, settings: HeartbeatSettings, key: str, prompt: str) -> RunRecord:
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
            message=prompt,
            origin="heartbeat",
            timeout_s=settings.timeout_s,
            model_ref=settings.model,
            reset=settings.isolated_session,  # a fresh session each run, no history
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
        self, settings: HeartbeatSettings, record: RunRecord, reason: str, started: int
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
        if verdict.status == "sent":
            # An alert, shown in the session's chat; no channel delivers it (OpenClaw's
            # event for an alert without a delivery target).
            event = heartbeat_event(
                ts=self._wall(),
                status="skipped",
                reason="target-none" if settings.target == "none" else "no-route",
                preview=verdict.preview,
                duration_ms=self._wall() - started,
                indicator="alert",
            )
        else:
            event = heartbeat_event(
                ts=self._wall(),
                status=verdict.status,
                reason=reason,
                duration_ms=self._wall() - started,
                silent=True,
            )
        self.emit(event)
        return event


@asynccontextmanager
async def open_heartbeats(
    sup: Supervisor, *, wall: Callable[[], int] = now_ms
) -> AsyncIterator[Heartbeats]:
    """Run the heartbeats of `sup`'s agents (`sup.heartbeats` while open). On exit the
    schedule stops and running heartbeats are cancelled (their runs end with the
    supervisor's)."""
    async with trio.open_nursery() as nursery:
        beats = Heartbeats(sup, nursery, wall)
        await nursery.start(beats.run_schedule)
        sup.heartbeats = beats
        try:
            yield beats
        finally:
            sup.heartbeats = None
            nursery.cancel_scope.cancel()
