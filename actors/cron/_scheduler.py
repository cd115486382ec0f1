"""The cron scheduler: durable jobs, their timer, their runs, their history, their webhooks.

One `CronScheduler` per gateway (`open_cron`). It owns the jobs (loaded from the
`CronStore` at start, written through on every change) and one timer task that sleeps until
the earliest `state.nextRunAtMs` (or a change wakes it) and starts each due job's firing in
its own task. A job fires at most once at a time; a scheduled occurrence that comes while
the job still runs is skipped (its next slot is computed as usual).

Firing and the lease: before a scheduled firing the scheduler claims the slot from its
`FiringLease` (`LocalLease` here: one gateway process per state dir, enforced by the state
dir's lock; in a cluster cron itself runs on one node at a time (a Redis lease,
`transports.cluster._node`), so gateways sharing jobs still fire each slot once).

After a run: the history entry (`CronRunLogEntry`, OpenClaw's shape) is written, then
delivered (`none`; `announce`: the session holds it; `webhook`: `actors.runs._webhook`, each
attempt written to the entry as it happens, as a `delivery` diagnostics entry: the
schema's `CronRunLogEntry` is closed, so the history stays in OpenClaw's fields), then
the job's state is updated (`runtime.cron.settle_job`: recurring jobs that failed back off
30 s, 60 s, 5 min, 15 min, 60 min, as OpenClaw's) and the `cron` event `finished` is sent.

Restart policy (documented in README): a job whose run was interrupted by the gateway
stopping gets an `error` entry ("interrupted"). A slot missed while the gateway was down:
one-shot `at` jobs run once at start; recurring jobs run once at start (not once per missed
slot; the entry's diagnostics say "missed N slot(s) ... ran once at start"), or with
`cron.skipMissedJobs` get a `skipped` entry ("... skipped (cron.skipMissedJobs)") and
continue from their next future slot.
Catch-up runs start `CATCH_UP_DELAY_MS` after startup, `CATCH_UP_SPACING_MS` apart.

Removing a job ends its future runs; a run in progress finishes, writes its history and
delivers its webhook. Disabling likewise.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import attrs
import httpx
import msgspec
import trio

from runtime.cron import (
    CronJob,
    FiringOutcome,
    announce_fields,
    completion_status,
    encode_job,
    finished_entry,
    format_iso_ms,
    host_timezone,
    job_view,
    next_due_ms,
    next_run_after,
    run_entry,
    settle_firing,
)
from runtime.protocol import (
    CronAddParamsDeliveryAnnounce,
    CronAddParamsDeliveryWebhook,
    CronAddParamsScheduleAt,
)

from .._errors import ActorError, StoreError
from ..runs import WebhookAttempt, WebhookClient, WebhookSettings, deliver_webhook
from ._run import execute, void_grants
from ._store import CronStore, RunQuery

__all__ = [
    "CATCH_UP_DELAY_MS",
    "CATCH_UP_SPACING_MS",
    "CronScheduler",
    "CronStatistics",
    "FiringLease",
    "LocalLease",
    "open_cron",
]

log = logging.getLogger("clawlane.cron")

CATCH_UP_DELAY_MS: Final = 10_000
CATCH_UP_SPACING_MS: Final = 5_000
MAX_WAIT_S: Final = 30.0
"""The timer re-reads the clock at least this often (a wall clock that jumps is noticed)."""
MISSED_SLOTS_COUNTED: Final = 10_000


def wall_ms() -> int:
    return int(time.time() * 1000)


class FiringLease(Protocol):
    """Who may fire a job's slot. `claim` is True for exactly one claimant per slot."""

    async def claim(self, job_id: str, slot_ms: int) -> bool: ...


class LocalLease:
    """One process per state dir (the state dir lock): every claim is this process's."""

    async def claim(self, job_id: str, slot_ms: int) -> bool:
        await trio.lowlevel.checkpoint()
        return True


@attrs.frozen
class CronStatistics:
    jobs: int
    enabled: int
    running: int
    fired: int
    next_wake_at_ms: int | None


@attrs.define
class _Missed:
    policy: str
    slots: int
    first_slot_ms: int

    def describe(self) -> str:
        first = format_iso_ms(self.first_slot_ms)
        what = "ran once at start" if self.policy == "run-once" else "skipped (cron.skipMissedJobs)"
        return f"missed {self.slots} slot(s) while the gateway was down (first {first}); {what}"

    def diagnostics(self, ts: int) -> dict[str, Any]:
        entry = {
            "ts": ts,
            "source": "cron-preflight",
            "severity": "warn",
            "message": self.describe(),
        }
        return {"summary": self.describe(), "entries": [entry]}


class CronNotFound(ActorError, LookupError):
    """No job with that id."""


class CronFull(ActorError, ValueError):
    """The jobs together would pass `CRON_JOBS_MAX_BYTES`."""


CRON_JOBS_MAX_BYTES: Final = 64 * 1024 * 1024
"""What the jobs hold together, encoded (each at most `runtime.cron` `JOB_MAX_BYTES`): they
are all in memory, so an admin adding jobs without end is refused past this."""


class CronScheduler:
    """Made by `open_cron`. Methods run in the trio thread."""

    def __init__(
        self,
        supervisor: Any,
        store: CronStore,
        *,
        nursery: trio.Nursery,
        http: WebhookClient,
        emit: Callable[[dict[str, Any]], None],
        clock: Callable[[], int] = wall_ms,
        lease: FiringLease | None = None,
    ) -> None:
        self.supervisor = supervisor
        self.store = store
        self.jobs: dict[str, CronJob] = {}
        self._sizes: dict[str, int] = {}  # each job's encoded size (`_check_room`)
        self._nursery = nursery
        self._http = http
        self._emit = emit
        self.clock = clock
        self._lease = lease or LocalLease()
        self._running: dict[str, str] = {}  # job id -> cron run id
        self._missed: dict[str, _Missed] = {}
        self._wake = trio.Event()
        self._manual_seq = 0
        self._fired = 0
        self.max_wait_s = MAX_WAIT_S
        self.instance_id = f"{int(time.time() * 1000):x}-{id(self):x}"

    # --- settings -------------------------------------------------------------------------

    @property
    def config(self) -> Any:
        return self.supervisor.generation.config.cron

    @property
    def enabled(self) -> bool:
        return bool(self.config.enabled)

    # --- start ----------------------------------------------------------------------------

    async def load(self) -> None:
        """Open the tables, load the jobs, and apply the restart policy. A checkpoint."""
        await self.store.open()
        now = self.clock()
        for job in await self.store.load_jobs():
            self.jobs[job.id] = job
            self._sizes[job.id] = len(encode_job(job))
        catch_up = 0
        for job in sorted(self.jobs.values(), key=lambda j: j.state.nextRunAtMs or 0):
            if job.state.runningAtMs is not None:
                await self._record_interrupted(job, now)
            if not job.enabled or job.state.nextRunAtMs is None or job.state.nextRunAtMs > now:
                continue
            slots = self._count_slots(job, now)
            first = job.state.nextRunAtMs
            if self.config.skipMissedJobs and not isinstance(job.schedule, CronAddParamsScheduleAt):
                await self._record_skipped(job, now, _Missed("skip", slots, first))
                continue
            job.state.nextRunAtMs = now + CATCH_UP_DELAY_MS + catch_up * CATCH_UP_SPACING_MS
            catch_up += 1
            self._missed[job.id] = _Missed("run-once", slots, first)
            await self.store.put_job(job)
            log.warning(
                "cron job %s missed %d slot(s) while the gateway was down: runs once at start",
                job.id,
                slots,
            )

    def _count_slots(self, job: CronJob, now: int) -> int:
        count, cursor = 0, job.state.nextRunAtMs
        while cursor is not None and cursor <= now and count < MISSED_SLOTS_COUNTED:
            count += 1
            cursor = next_run_after(job.schedule, job.id, cursor)
        return count

    async def _record_interrupted(self, job: CronJob, now: int) -> None:
        started = job.state.runningAtMs or now
        job.state.runningAtMs = None
        entry = run_entry(job, f"interrupted:{job.id}:{started}", now)
        entry.update(
            status="error",
            completionStatus="failed",
            error="interrupted: the gateway stopped during the run",
            runAtMs=started,
            durationMs=max(0, now - started),
            deliveryStatus="not-delivered" if job.delivery else "not-requested",
        )
        job.state.lastRunStatus = job.state.lastStatus = "error"
        job.state.lastError = entry["error"]
        await self.store.put_run(entry)
        await self.store.put_job(job)

    async def _record_skipped(self, job: CronJob, now: int, missed: _Missed) -> None:
        job.state.nextRunAtMs = next_run_after(job.schedule, job.id, now)
        entry = run_entry(job, f"cron:{job.id}:{missed.first_slot_ms}", now)
        entry.update(
            status="skipped",
            error=missed.describe(),
            runAtMs=missed.first_slot_ms,
            durationMs=0,
            deliveryStatus="not-requested",
            diagnostics=missed.diagnostics(now),
        )
        if job.state.nextRunAtMs is not None:
            entry["nextRunAtMs"] = job.state.nextRunAtMs
        job.state.lastRunStatus = job.state.lastStatus = "skipped"
        job.state.consecutiveSkipped = (job.state.consecutiveSkipped or 0) + 1
        await self.store.put_run(entry)
        await self.store.put_job(job)

    # --- the timer --------------------------------------------------------------------------

    def wake(self) -> None:
        """Re-read the jobs (after a change). Not a checkpoint."""
        self._wake.set()

    def next_wake_ms(self) -> int | None:
        return next_due_ms(self.jobs.values(), self._running)

    async def run_timer(self) -> None:
        """Fire due jobs until cancelled. `cron.enabled: false` stops automatic firing."""
        while True:
            self._wake = trio.Event()
            now = self.clock()
            if self.enabled:
                for job in list(self.jobs.values()):
                    due = job.state.nextRunAtMs
                    if job.enabled and due is not None and due <= now:
                        await self._fire_scheduled(job, due)
            next_ms = self.next_wake_ms() if self.enabled else None
            wait_s = self.max_wait_s
            if next_ms is not None:
                wait_s = min(self.max_wait_s, max(0.0, (next_ms - self.clock()) / 1000))
            with trio.move_on_after(wait_s):
                await self._wake.wait()

    async def _fire_scheduled(self, job: CronJob, slot: int) -> None:
        if job.id in self._running:
            job.state.nextRunAtMs = next_run_after(job.schedule, job.id, self.clock())
            log.warning("cron job %s is still running: slot %d skipped", job.id, slot)
            await self._save(job)
            return
        if not await self._lease.claim(job.id, slot):
            job.state.nextRunAtMs = next_run_after(job.schedule, job.id, slot)
            return
        trigger = "missed" if job.id in self._missed else "schedule"
        run_id = f"cron:{job.id}:{slot}"
        if not isinstance(job.schedule, CronAddParamsScheduleAt):
            job.state.nextRunAtMs = next_run_after(job.schedule, job.id, max(slot, self.clock()))
        self._start(job, run_id, trigger)

    def _start(self, job: CronJob, run_id: str, trigger: str) -> None:
        self._running[job.id] = run_id
        self._fired += 1
        self._nursery.start_soon(self._firing, job.id, run_id, trigger, name=f"cron:{job.id}")

    # --- one firing -------------------------------------------------------------------------

    async def _firing(self, job_id: str, run_id: str, trigger: str) -> None:
        job = self.jobs[job_id]
        snapshot = msgspec.convert(msgspec.to_builtins(job), CronJob)
        started = self.clock()
        job.state.runningAtMs = started
        try:
            await self._save(job)
            self._emit(
                {
                    "jobId": job.id,
                    "action": "started",
                    "job": job_view(job, revision=False),
                    "runAtMs": started,
                }
            )
            outcome = await execute(self.supervisor, snapshot, self.clock, self.jobs.get)
            await self._finish(snapshot, run_id, trigger, outcome)
        except StoreError:
            log.exception("cron job %s: the store failed", job_id)
        finally:
            self._running.pop(job_id, None)
            self.wake()

    async def _finish(
        self, snapshot: CronJob, run_id: str, trigger: str, outcome: FiringOutcome
    ) -> None:
        entry = finished_entry(snapshot, run_id, outcome)
        missed = self._missed.pop(snapshot.id, None) if trigger == "missed" else None
        if missed is not None:
            entry["diagnostics"] = missed.diagnostics(outcome.started_at)
        await self._deliver(snapshot, entry, outcome)
        entry["completionStatus"] = completion_status(entry)
        # The job as it is now (it may have been updated or removed during the run).
        live = self.jobs.get(snapshot.id)
        spent = live is not None and settle_firing(live, entry, trigger, outcome)
        await self.store.put_run(entry)
        if live is not None and self.jobs.get(live.id) is live:
            if spent:
                await self._delete(live)
            else:
                await self._save(live)
        event = {k: v for k, v in entry.items() if k not in ("ts", "action", "jobName")}
        view = job_view(live if live is not None else snapshot, revision=False)
        self._emit({"action": "finished", **event, "job": view})

    async def _deliver(self, job: CronJob, entry: dict[str, Any], outcome: FiringOutcome) -> None:
        delivery = job.delivery
        if delivery is None or delivery.__struct_config__.tag == "none":
            entry.update(delivered=False, deliveryStatus="not-requested")
            return
        if isinstance(delivery, CronAddParamsDeliveryAnnounce):
            entry.update(announce_fields(outcome.status, outcome.summary, outcome.session_key))
            return
        assert isinstance(delivery, CronAddParamsDeliveryWebhook)
        if outcome.status == "ok" and not outcome.summary:
            entry.update(
                delivered=False, deliveryStatus="not-delivered", deliverySuppressionReason="empty"
            )
            return
        await self._post_webhook(job, delivery.to, entry)

    async def _post_webhook(self, job: CronJob, url: str, entry: dict[str, Any]) -> None:
        body_fields = {
            k: v
            for k, v in entry.items()
            if k not in ("ts", "jobName", "completionStatus", "diagnostics")
        }
        body = msgspec.json.encode({**body_fields, "job": job_view(job, revision=False)})
        settings = WebhookSettings.from_config(self.config)
        diagnostics: list[dict[str, Any]] = list(entry.get("diagnostics", {}).get("entries", []))
        entry.update(delivered=False, deliveryStatus="unknown")

        async def record(attempt: WebhookAttempt) -> None:
            what = f"HTTP {attempt.http_status}" if attempt.http_status else attempt.error
            retry = f"; retry in {attempt.retry_in_ms} ms" if attempt.retry_in_ms else ""
            diagnostics.append(
                {
                    "ts": attempt.ts,
                    "source": "delivery",
                    "severity": "info" if attempt.ok else "warn",
                    "message": f"webhook attempt {attempt.attempt}/{settings.max_attempts}: "
                    f"{what} after {attempt.duration_ms} ms{retry}",
                }
            )
            entry["diagnostics"] = {"entries": diagnostics}
            await self.store.put_run({**entry, "ts": self.clock()})

        result = await deliver_webhook(
            self._http.get(), url, body, settings, on_attempt=record, now_ms=self.clock
        )
        resolved: dict[str, Any] = {"to": url, "source": "explicit", "ok": result.ok}
        if result.error:
            resolved["error"] = result.error
        entry.update(
            delivered=result.ok,
            deliveryStatus="delivered" if result.ok else "not-delivered",
            delivery={
                "intended": {"channel": "last", "to": url, "source": "last"},
                "resolved": resolved,
                "fallbackUsed": False,
                "delivered": result.ok,
            },
        )
        if result.error:
            entry["deliveryError"] = result.error
            diagnostics[-1]["severity"] = "error"
            entry["diagnostics"] = {"summary": result.error, "entries": diagnostics}

    # --- the API behind cron.* --------------------------------------------------------------

    async def _save(self, job: CronJob) -> None:
        await self.store.put_job(job)

    async def _delete(self, job: CronJob) -> None:
        await self.store.delete_job(job.id)
        self.jobs.pop(job.id, None)
        self._sizes.pop(job.id, None)
        self._emit({"jobId": job.id, "action": "removed", "job": job_view(job, revision=False)})

    def get(self, job_id: str) -> CronJob:
        job = self.jobs.get(job_id)
        if job is None:
            raise CronNotFound(job_id)
        return job

    def _check_room(self, job: CronJob) -> int:
        """`job`'s encoded size; raises `CronFull` if it (new, or replacing its old self)
        would take the jobs past `CRON_JOBS_MAX_BYTES`."""
        held = sum(self._sizes.values()) - self._sizes.get(job.id, 0)
        size = len(encode_job(job))
        if held + size > CRON_JOBS_MAX_BYTES:
            raise CronFull(
                f"cron jobs hold {held:,} bytes together; this one ({size:,} bytes) would pass"
                f" the limit of {CRON_JOBS_MAX_BYTES:,}: remove some first"
            )
        return size

    async def add(self, job: CronJob) -> CronJob:
        """Store a new job (durable before it returns) and schedule it. Raises `CronFull`."""
        size = self._check_room(job)
        await self.store.put_job(job)
        self.jobs[job.id] = job
        self._sizes[job.id] = size
        self._changed(job, "added")
        return job

    async def replace(self, job: CronJob) -> CronJob:
        """Store an updated job (from `apply_patch`). A run in progress keeps its copy."""
        if job.id not in self.jobs:
            raise CronNotFound(job.id)
        size = self._check_room(job)
        old = self.jobs[job.id]
        if job.id in self._running:
            job.state.runningAtMs = old.state.runningAtMs
        await self.store.put_job(job)
        self.jobs[job.id] = job
        self._sizes[job.id] = size
        self._changed(job, "updated")
        await void_grants(self.supervisor, old, job)  # an edit voids its standing grants
        return job

    async def remove(self, job_id: str) -> None:
        """Delete a job: no future runs; a running one finishes and is recorded."""
        await self._delete(self.get(job_id))
        self._missed.pop(job_id, None)
        self.wake()

    def _changed(self, job: CronJob, action: str) -> None:
        event: dict[str, Any] = {
            "jobId": job.id,
            "action": action,
            "job": job_view(job, revision=False),
        }
        if job.state.nextRunAtMs is not None:
            event["nextRunAtMs"] = job.state.nextRunAtMs
        self._emit(event)
        self.wake()

    async def run_now(self, job_id: str, mode: str) -> dict[str, Any]:
        """`cron.run`: `force` runs it now; `due` only if due; `if-enabled` unless disabled."""
        job = self.get(job_id)
        await trio.lowlevel.checkpoint()
        now = self.clock()
        if mode == "if-enabled" and not job.enabled:
            return {"ok": True, "ran": False, "reason": "disabled"}
        if mode == "due" and (
            not job.enabled or job.state.nextRunAtMs is None or job.state.nextRunAtMs > now
        ):
            return {"ok": True, "ran": False, "reason": "not-due"}
        if job.id in self._running:
            return {"ok": True, "ran": False, "reason": "already-running"}
        self._manual_seq += 1
        run_id = f"manual:{job.id}:{now}:{self._manual_seq}"
        self._start(job, run_id, "manual")
        return {
            "ok": True,
            "enqueued": True,
            "runId": run_id,
            "processInstanceId": self.instance_id,
        }

    async def runs(self, query: RunQuery) -> tuple[list[dict[str, Any]], int]:
        return await self.store.list_runs(query)

    def status(self) -> dict[str, Any]:
        next_ms = self.next_wake_ms() if self.enabled else None
        out: dict[str, Any] = {
            "enabled": self.enabled,
            "triggersEnabled": False,
            "storage": "sqlite",
            "storePath": str(self.supervisor.store.path),
            "sqlitePath": str(self.supervisor.store.path),
            "jobs": len(self.jobs),
        }
        if next_ms is not None:
            out["nextWakeAtMs"] = next_ms
        out["clawlane"] = {
            "running": len(self._running),
            "fired": self._fired,
            "hostTimezone": host_timezone(),
            "skipMissedJobs": bool(self.config.skipMissedJobs),
            "maxConcurrentRuns": int(self.config.maxConcurrentRuns),
        }
        return out

    def statistics(self) -> CronStatistics:
        return CronStatistics(
            jobs=len(self.jobs),
            enabled=sum(1 for j in self.jobs.values() if j.enabled),
            running=len(self._running),
            fired=self._fired,
            next_wake_at_ms=self.next_wake_ms(),
        )


@asynccontextmanager
async def open_cron(
    supervisor: Any,
    store: CronStore,
    *,
    emit: Callable[[dict[str, Any]], None],
    clock: Callable[[], int] = wall_ms,
    lease: FiringLease | None = None,
    http: httpx.AsyncClient | None = None,
) -> AsyncIterator[CronScheduler]:
    """Load the jobs, apply the restart policy, run the timer. Leaving the block stops the
    timer; firings in progress end with the supervisor's shutdown (their runs are aborted
    and recorded)."""
    client = WebhookClient(http)  # made at the first webhook, unless one is given
    try:
        async with trio.open_nursery() as nursery:
            cron = CronScheduler(
                supervisor, store, nursery=nursery, http=client, emit=emit, clock=clock, lease=lease
            )
            await cron.load()
            nursery.start_soon(cron.run_timer, name="cron-timer")
            try:
                yield cron
            finally:
                nursery.cancel_scope.cancel()
    finally:
        await client.aclose()
