"""The embedded runtime's scheduler: what the `automations` tool (alias `cron`) reaches when
the runtime is open as `async with`, with the jobs in memory for the runtime's life.

`open_embedded_cron` (entered by the runtime's `async with`) makes an `EmbeddedCron`, a
`JobScheduler` (`_cron_host`): the tool answers as on the gateway (the same params, checks,
caller scope and result shapes: `_cron_host.CronToolHost`); the jobs are `runtime.cron` jobs
(the same schedules, validation and state after a run: `settle_job`). One timer task, in a
nursery of the scheduler's inside the runtime's block, sleeps until the earliest
`state.nextRunAtMs` (or a change wakes it) and starts each due job's firing as a task of
that nursery; a job fires at most once at a time (a slot that comes while it still runs is
skipped). `cron.enabled: false` stops automatic firing (a job can still be run by hand:
`run`); `cron.maxConcurrentRuns` caps the agent turns of firings running together (default
1; the others wait).

Time is trio's clock (`trio.current_time()`), anchored to the wall clock when the scheduler
starts, so jobs say epoch milliseconds as on the gateway and a test's `autojump_clock`
fires them at once.

A firing runs as the gateway runs it (`actors.cron`):
- `agentTurn`: a turn in the job's session (`isolated`: a fresh
  `agent:<agent>:cron:<jobId>:run:<uuid>` each run; `session:<id>`: that session; `current`:
  the session that made the job), with the payload's `model`, `thinking` (the session's
  `thinkingLevel`) and `timeoutSeconds` (0: none; else a 60-minute watchdog);
- `systemEvent` (target `main`): the text is queued as a system event of the agent's main
  session (`agent:<agent>:main`), read by its next turn as `System: [time] <text>`;
  `wakeMode: "now"` also runs that turn at once (the event is its message).

The turns' events go to `rt.on_event`, as the other turns the runtime starts itself, and so
does a `cron` event per firing (`{runId, seq, stream: "cron", ts, data, sessionKey}`; `data`
is the gateway's `cron` event: `started`, then `finished` with the history entry). Each job
keeps its newest `RUNS_KEPT` history entries (OpenClaw's `CronRunLogEntry`), which `runs`
answers; removing a job drops them. Delivery `announce` is complete when the run answered
(the reply stays in its session, as on the gateway); `webhook` is refused (no HTTP client
here). The tool's `wake` queues its text for the session's next turn and, with `mode: "now"`,
runs that turn as a task.

Bounds: at most `MAX_JOBS` jobs (each at most `runtime.cron`'s 256 KiB); `add` past it is a
tool error. Leaving the runtime's `async with` cancels the timer and the firings.
"""

from __future__ import annotations

import collections
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import msgspec
import trio

from ..cron import (
    CronJob,
    CronJobError,
    FiringOutcome,
    announce_fields,
    completion_status,
    finished_entry,
    host_timezone,
    job_view,
    next_due_ms,
    next_run_after,
    settle_firing,
)
from ..model import GenerationError, ModelRuntimeGeneration
from ..protocol import (
    CronAddParamsDeliveryAnnounce,
    CronAddParamsDeliveryWebhook,
    CronAddParamsPayloadAgentTurn,
    CronAddParamsScheduleAt,
)
from ..sessions import DEFAULT_MAIN_KEY, SessionKeyError, resolve_session_key
from ._cron_host import CronToolHost
from ._embedded_desks import NoScheduler
from ._embedded_sessions import TrackedRun
from ._services import TurnServices
from ._slash import normalize_think_level

__all__ = ["MAX_JOBS", "RUNS_KEPT", "CronRuntime", "EmbeddedCron", "open_embedded_cron"]

log = logging.getLogger("clawlane.embedded")

MAX_JOBS: Final = 1000
RUNS_KEPT: Final = 200
"""History entries kept per job, newest first."""
WATCHDOG_S: Final = 3600.0
"""An `agentTurn` without `timeoutSeconds` stops after this long (OpenClaw's watchdog)."""


class CronRuntime(Protocol):
    """What the scheduler needs of the embedded runtime (`EmbeddedRuntime`)."""

    @property
    def generation(self) -> ModelRuntimeGeneration: ...

    on_event: Callable[[dict[str, Any]], None] | None
    services: TurnServices
    published: list[Callable[[ModelRuntimeGeneration], None]]

    def queue_system_event(self, session_key: str, text: str) -> None: ...

    async def new_run(self, key: str, agent_id: str, run_id: str | None = None) -> TrackedRun:
        """A run of session `key`, not started. A checkpoint."""
        ...

    async def run(
        self,
        record: TrackedRun,
        message: str,
        *,
        model: str | None = None,
        timeout_s: float | None = None,
    ) -> Any:
        """Run `record` to its end; its events go to `on_event`. The `EmbeddedTurnResult`."""
        ...

    async def update_row(self, key: str, agent_id: str, **changes: Any) -> Any: ...


class EmbeddedCron:
    """The embedded runtime's jobs and their timer (see the module docstring). Made by
    `open_embedded_cron`; its methods run in the trio thread."""

    def __init__(self, rt: CronRuntime, nursery: trio.Nursery) -> None:
        self.rt = rt
        self.jobs: dict[str, CronJob] = {}
        self._runs: dict[str, collections.deque[dict[str, Any]]] = {}
        self._running: dict[str, str] = {}  # job id -> cron run id
        self._nursery = nursery
        self._wake = trio.Event()
        self._slots = trio.CapacityLimiter(1)
        self._fired = 0
        self._manual_seq = 0
        self._anchor_ms = int(time.time() * 1000)
        self._anchor_s = trio.current_time()

    # --- JobScheduler --------------------------------------------------------------------

    @property
    def generation(self) -> ModelRuntimeGeneration:
        return self.rt.generation

    @property
    def enabled(self) -> bool:
        return bool(self.rt.generation.config.cron.enabled)

    def now_ms(self) -> int:
        """Epoch milliseconds on trio's clock (see the module docstring)."""
        return self._anchor_ms + int((trio.current_time() - self._anchor_s) * 1000)

    def all_jobs(self) -> Iterable[CronJob]:
        return self.jobs.values()

    def find(self, job_id: str) -> CronJob | None:
        return self.jobs.get(job_id)

    def _admit(self, job: CronJob) -> None:
        if isinstance(job.delivery, CronAddParamsDeliveryWebhook):
            raise CronJobError(
                "delivery.mode: webhook delivery is not available in the embedded runtime"
            )

    async def add(self, job: CronJob) -> CronJob:
        await trio.lowlevel.checkpoint()
        if len(self.jobs) >= MAX_JOBS:
            raise CronJobError(
                f"the embedded runtime keeps at most {MAX_JOBS:,} jobs: remove some first"
            )
        self._admit(job)
        self.jobs[job.id] = job
        self._runs[job.id] = collections.deque(maxlen=RUNS_KEPT)
        self.rearm()
        return job

    async def replace(self, job: CronJob) -> CronJob:
        """An updated job in place of its old self; a run in progress keeps its copy."""
        await trio.lowlevel.checkpoint()
        old = self.jobs.get(job.id)
        if old is None:
            raise CronJobError(f"no job {job.id}")
        self._admit(job)
        if job.id in self._running:
            job.state.runningAtMs = old.state.runningAtMs
        self.jobs[job.id] = job
        self.rearm()
        return job

    async def remove(self, job_id: str) -> None:
        """No future runs; a running one finishes (its entry is not kept)."""
        await trio.lowlevel.checkpoint()
        self.jobs.pop(job_id, None)
        self._runs.pop(job_id, None)
        self.rearm()

    async def run_now(self, job_id: str, mode: str) -> dict[str, Any]:
        """`cron.run`: `force` runs it now; `due` only if due; `if-enabled` unless disabled."""
        await trio.lowlevel.checkpoint()
        job = self.jobs[job_id]
        now = self.now_ms()
        if mode == "if-enabled" and not job.enabled:
            return {"ok": True, "ran": False, "reason": "disabled"}
        due = job.state.nextRunAtMs
        if mode == "due" and (not job.enabled or due is None or due > now):
            return {"ok": True, "ran": False, "reason": "not-due"}
        if job.id in self._running:
            return {"ok": True, "ran": False, "reason": "already-running"}
        self._manual_seq += 1
        run_id = f"manual:{job.id}:{now}:{self._manual_seq}"
        self._start(job, run_id, "manual")
        return {"ok": True, "enqueued": True, "runId": run_id}

    async def runs(self, job_id: str, limit: int) -> tuple[list[dict[str, Any]], int]:
        await trio.lowlevel.checkpoint()
        kept = self._runs.get(job_id) or ()
        return list(reversed(kept))[:limit], len(kept)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "enabled": self.enabled,
            "triggersEnabled": False,
            "storage": "memory",
            "jobs": len(self.jobs),
        }
        next_ms = self.next_wake_ms() if self.enabled else None
        if next_ms is not None:
            out["nextWakeAtMs"] = next_ms
        out["clawlane"] = {
            "running": len(self._running),
            "fired": self._fired,
            "hostTimezone": host_timezone(),
            "maxConcurrentRuns": int(self.rt.generation.config.cron.maxConcurrentRuns),
        }
        return out

    async def wake(self, session_key: str, agent_id: str, text: str, mode: str) -> None:
        """The tool's `wake`: `text` queued for the session's next turn; `now` runs that
        turn as a task of the runtime."""
        await trio.lowlevel.checkpoint()
        self.rt.queue_system_event(session_key, text)
        if mode == "now":
            self._nursery.start_soon(self._event_turn, session_key, agent_id)

    # --- the timer -----------------------------------------------------------------------

    def rearm(self, _generation: object = None) -> None:
        """Re-read the jobs and the config (after a change, a new generation). Not a
        checkpoint."""
        self._wake.set()

    def next_wake_ms(self) -> int | None:
        return next_due_ms(self.jobs.values(), self._running)

    async def run_timer(self) -> None:
        """Fire due jobs until cancelled (with `cron.enabled: false`, none)."""
        while True:
            self._wake = trio.Event()
            if self.enabled:
                now = self.now_ms()
                for job in list(self.jobs.values()):
                    due = job.state.nextRunAtMs
                    if job.enabled and due is not None and due <= now:
                        self._fire_scheduled(job, due)
            next_ms = self.next_wake_ms() if self.enabled else None
            with trio.CancelScope() as scope:
                if next_ms is not None:  # 1 ms late, so `now_ms` has reached it
                    scope.deadline = self._anchor_s + (next_ms - self._anchor_ms + 1) / 1000
                await self._wake.wait()

    def _fire_scheduled(self, job: CronJob, slot: int) -> None:
        now = self.now_ms()
        if job.id in self._running:
            job.state.nextRunAtMs = next_run_after(job.schedule, job.id, now)
            log.warning("cron job %s is still running: slot %d skipped", job.id, slot)
            return
        if not isinstance(job.schedule, CronAddParamsScheduleAt):
            job.state.nextRunAtMs = next_run_after(job.schedule, job.id, max(slot, now))
        self._start(job, f"cron:{job.id}:{slot}", "schedule")

    def _start(self, job: CronJob, run_id: str, trigger: str) -> None:
        self._running[job.id] = run_id
        self._fired += 1
        self._nursery.start_soon(self._firing, job.id, run_id, trigger, name=f"cron:{job.id}")

    # --- one firing ----------------------------------------------------------------------

    def _emit(self, run_id: str, seq: int, data: dict[str, Any], key: str | None) -> None:
        if self.rt.on_event is not None:
            self.rt.on_event(
                {
                    "runId": run_id,
                    "seq": seq,
                    "stream": "cron",
                    "ts": self.now_ms(),
                    "data": data,
                    "sessionKey": key,
                }
            )

    async def _firing(self, job_id: str, run_id: str, trigger: str) -> None:
        job = self.jobs[job_id]
        snapshot = msgspec.convert(msgspec.to_builtins(job), CronJob)
        started = job.state.runningAtMs = self.now_ms()
        try:
            view = job_view(job, revision=False)
            data = {"jobId": job.id, "action": "started", "job": view, "runAtMs": started}
            self._emit(run_id, 1, data, None)
            outcome = await self._execute(snapshot)
            self._finish(snapshot, run_id, trigger, outcome)
        finally:
            self._running.pop(job_id, None)
            self.rearm()

    def _finish(self, snapshot: CronJob, run_id: str, trigger: str, outcome: FiringOutcome) -> None:
        entry = finished_entry(snapshot, run_id, outcome)
        if isinstance(snapshot.delivery, CronAddParamsDeliveryAnnounce):
            entry.update(announce_fields(outcome.status, outcome.summary, outcome.session_key))
        else:
            entry.update(delivered=False, deliveryStatus="not-requested")
        entry["completionStatus"] = completion_status(entry)
        live = self.jobs.get(snapshot.id)  # as it is now: updated or removed meanwhile
        if live is not None:
            spent = settle_firing(live, entry, trigger, outcome)
            self._runs[live.id].append(entry)
            if spent:
                self.jobs.pop(live.id, None)
                self._runs.pop(live.id, None)
        event = {k: v for k, v in entry.items() if k not in ("ts", "action", "jobName")}
        view = job_view(live if live is not None else snapshot, revision=False)
        self._emit(run_id, 2, {"action": "finished", **event, "job": view}, outcome.session_key)

    def _session_key(self, job: CronJob, agent_id: str) -> str:
        target = job.sessionTarget
        if target == "isolated":
            return f"agent:{agent_id}:cron:{job.id.lower()}:run:{uuid.uuid4()}"
        if target == "main":
            return f"agent:{agent_id}:{DEFAULT_MAIN_KEY}"
        raw = target[8:] if target.startswith("session:") else job.sessionKey
        default = self.rt.generation.default_agent
        return resolve_session_key(raw, agent_id=agent_id, default_agent=default)

    async def _execute(self, job: CronJob) -> FiringOutcome:
        """Run `job`'s payload to its end. Never raises but `Cancelled`. A checkpoint."""
        started = self.now_ms()
        outcome = FiringOutcome(status="error", started_at=started, ended_at=started)
        try:
            generation = self.rt.generation
            spec = generation.agent(job.agentId)
            key = outcome.session_key = self._session_key(job, spec.id)
            payload = job.payload
            if not isinstance(payload, CronAddParamsPayloadAgentTurn):
                self.rt.queue_system_event(key, payload.text)
                outcome.summary = payload.text
                if job.wakeMode == "now":
                    await self._turn(outcome, key, spec.id, "", None, WATCHDOG_S)
                else:
                    await trio.lowlevel.checkpoint()
                    outcome.status = "ok"
                return outcome
            model = payload.model.strip() if isinstance(payload.model, str) else None
            if model:
                try:
                    generation.resolve(model, agent_id=spec.id)
                except GenerationError as exc:
                    raise GenerationError(f"payload.model: {exc}") from exc
            timeout_s: float | None = WATCHDOG_S
            if isinstance(payload.timeoutSeconds, float | int):
                timeout_s = float(payload.timeoutSeconds) or None
            level = (
                normalize_think_level(payload.thinking)
                if isinstance(payload.thinking, str)
                else None
            )
            if level:
                await self.rt.update_row(key, spec.id, thinkingLevel=level)
            await self._turn(outcome, key, spec.id, payload.message, model or None, timeout_s)
        except (GenerationError, SessionKeyError) as exc:
            outcome.error = str(exc)
        except Exception as exc:  # a bug: this firing fails, the scheduler carries on
            log.exception("cron job %s crashed", job.id)
            outcome.error = f"internal error: {exc!r}"
        finally:
            outcome.ended_at = self.now_ms()
        return outcome

    async def _turn(
        self,
        outcome: FiringOutcome,
        key: str,
        agent_id: str,
        message: str,
        model: str | None,
        timeout_s: float | None,
    ) -> None:
        """One turn of a firing on session `key` (at most `cron.maxConcurrentRuns` at a
        time); what it ended with goes to `outcome`."""
        cap = int(self.rt.generation.config.cron.maxConcurrentRuns)
        if self._slots.total_tokens != cap:
            self._slots.total_tokens = cap
        async with self._slots:
            record = await self.rt.new_run(key, agent_id)
            await self.rt.run(record, message, model=model, timeout_s=timeout_s)
        outcome.session_id = record.session_id
        outcome.take_run(record, timeout_s, summary=bool(message))

    async def _event_turn(self, key: str, agent_id: str) -> None:
        """A turn that reads the session's queued system events (`wake` `now`)."""
        try:
            record = await self.rt.new_run(key, agent_id)
            await self.rt.run(record, "")
        except Exception:  # a store that failed, a bug: the runtime carries on
            log.exception("wake of %s: no turn ran", key)


@asynccontextmanager
async def open_embedded_cron(rt: CronRuntime) -> AsyncIterator[EmbeddedCron]:
    """A scheduler for `rt` while the block runs: its timer and firings are tasks of a
    nursery of its own, the `automations` tool reaches it (`rt.services.automations`) and a
    published generation re-reads `cron.enabled`. Leaving cancels the timer and the firings
    and offers the tool's error again (`NoScheduler`). A checkpoint."""
    async with trio.open_nursery() as nursery:
        cron = EmbeddedCron(rt, nursery)
        nursery.start_soon(cron.run_timer, name="embedded-cron-timer")
        rt.published.append(cron.rearm)
        rt.services.automations = CronToolHost(cron)
        try:
            yield cron
        finally:
            rt.services.automations = NoScheduler()
            rt.published.remove(cron.rearm)
            nursery.cancel_scope.cancel()
