"""What a finished run does to its job, and the run-history entry it leaves. Sans-IO.

Shared by the gateway's scheduler (`actors.cron`) and the embedded runtime's (in memory):

- `run_entry`: the start of a `CronRunLogEntry` (`{ts, jobId, action: "finished", runId,
  jobName}`); the scheduler adds the outcome (`status`, `error`, `summary`, `sessionKey`,
  ...), `runAtMs`, `durationMs` and the delivery fields.
- `announce_fields`: the delivery fields of a run whose job announces (`delivery.mode:
  "announce"`): the reply stays in the run's session, which completes delivery when the
  run answered something (clawlane has no chat channels).
- `completion_status`: the entry's `completionStatus` (`succeeded`, `failed`, `unknown`)
  from its status and delivery.
- `settle_job`: the job's `state` after a run (OpenClaw's): last run, status, error and
  duration; consecutive errors and skips; a one-shot `at` job is done (disabled, no next run)
  unless it was run by hand; a recurring job that failed backs off (`error_backoff_ms`:
  30 s, 60 s, 5 min, 15 min, 60 min), unless run by hand; otherwise its next slot after the
  run's end, when the one it had has passed.
- `run_summary`: the text a run answered (its final payloads' texts, errors left out).
- `FiringOutcome`: what a firing produced (`take_run` reads its ended run: status or
  error, summary, model and usage), `finished_entry` the entry it starts, and
  `settle_firing` what it does to the job as it is now.
- `next_due_ms`: the earliest slot of the enabled jobs not running, for the timer.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Any, Protocol

import attrs

from runtime.protocol import CronAddParamsScheduleAt

from ._cron_jobs import CronJob, next_run_after
from ._cron_schedule import error_backoff_ms

__all__ = [
    "EndedRun",
    "FiringOutcome",
    "announce_fields",
    "completion_status",
    "finished_entry",
    "next_due_ms",
    "run_entry",
    "run_summary",
    "settle_firing",
    "settle_job",
]


def run_entry(job: CronJob, run_id: str, now: int) -> dict[str, Any]:
    return {
        "ts": now,
        "jobId": job.id,
        "action": "finished",
        "runId": run_id,
        "jobName": job.name,
    }


def announce_fields(status: str, summary: str | None, session_key: str | None) -> dict[str, Any]:
    if status == "ok" and summary:
        return {
            "delivered": True,
            "deliveryStatus": "delivered",
            "delivery": {
                "intended": {"channel": "last", "to": None, "source": "last"},
                "resolved": {
                    "channel": "session",
                    "to": session_key,
                    "source": "explicit",
                    "ok": True,
                },
                "fallbackUsed": False,
                "delivered": True,
            },
        }
    fields: dict[str, Any] = {"delivered": False, "deliveryStatus": "not-delivered"}
    if status == "ok":
        fields["deliverySuppressionReason"] = "empty"
    return fields


def completion_status(entry: Mapping[str, Any]) -> str:
    if entry.get("status") != "ok":
        return "failed"
    status = entry.get("deliveryStatus")
    if status in ("delivered", "not-requested") or entry.get("deliverySuppressionReason"):
        return "succeeded"
    return "failed" if status == "not-delivered" else "unknown"


def settle_job(
    job: CronJob,
    *,
    trigger: str,
    status: str,
    error: str | None,
    started_at: int,
    ended_at: int,
) -> None:
    """Update `job.state` (and `enabled`, `updatedAtMs`) after a run that started at
    `started_at` and ended at `ended_at` with `status` (`ok`, `error`, `skipped`);
    `trigger` `manual` is a run by hand (`cron.run`)."""
    st = job.state
    st.runningAtMs = None
    st.lastRunAtMs = started_at
    st.lastRunStatus = st.lastStatus = status  # type: ignore[assignment]
    st.lastDurationMs = max(0, ended_at - started_at)
    st.lastError = error
    if status == "ok":
        st.consecutiveErrors = 0
        st.consecutiveSkipped = 0
    elif status == "error":
        st.consecutiveErrors = (st.consecutiveErrors or 0) + 1
    if isinstance(job.schedule, CronAddParamsScheduleAt):
        if trigger != "manual":
            st.nextRunAtMs = None
            job.enabled = False
    elif job.enabled and status == "error" and trigger != "manual":
        natural = next_run_after(job.schedule, job.id, ended_at)
        backoff = ended_at + error_backoff_ms(st.consecutiveErrors or 1)
        st.nextRunAtMs = max(natural or backoff, backoff)
    elif job.enabled and (st.nextRunAtMs is None or st.nextRunAtMs <= ended_at):
        st.nextRunAtMs = next_run_after(job.schedule, job.id, ended_at)
    job.updatedAtMs = ended_at


def run_summary(payloads: Iterable[Any]) -> str | None:
    """The texts of a run's final payloads (not its error payloads), or None."""
    texts = [
        str(p.get("text"))
        for p in payloads
        if isinstance(p, Mapping) and p.get("text") and not p.get("isError")
    ]
    return "\n\n".join(texts) if texts else None


class EndedRun(Protocol):
    """What `FiringOutcome.take_run` reads of a firing's ended run (`runtime.agent.RunState`
    and the gateway's `RunRecord` are ones)."""

    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def aborted(self) -> bool: ...
    @property
    def abort_reason(self) -> str | None: ...
    @property
    def final(self) -> dict[str, Any] | None: ...


@attrs.define
class FiringOutcome:
    """What a firing produced, before delivery."""

    status: str  # "ok" | "error" | "skipped"
    started_at: int
    ended_at: int
    summary: str | None = None
    error: str | None = None
    session_key: str | None = None
    session_id: str | None = None
    agent_run_id: str | None = None
    model: str | None = None
    provider: str | None = None
    usage: dict[str, int] | None = None

    def fields(self) -> dict[str, Any]:
        """The outcome in `CronRunLogEntry` names."""
        out: dict[str, Any] = {"status": self.status}
        for name, value in (
            ("summary", self.summary),
            ("error", self.error),
            ("sessionKey", self.session_key),
            ("sessionId", self.session_id),
            ("model", self.model),
            ("provider", self.provider),
            ("usage", self.usage),
        ):
            if value is not None:
                out[name] = value
        return out

    def take_run(self, run: EndedRun, timeout_s: float | None, *, summary: bool = True) -> None:
        """What the firing's ended agent `run` says: its status or error (a timeout after
        `timeout_s`, an abort, its error), its model, provider and usage (its final
        `meta.agentMeta`) and, with `summary`, the text it answered (`run_summary`)."""
        final = run.final or {}
        meta = (final.get("meta") or {}).get("agentMeta") or {}
        self.model, self.provider = meta.get("model"), meta.get("provider")
        usage = meta.get("usage")
        if isinstance(usage, dict):
            self.usage = {
                "input_tokens": int(usage.get("input") or 0),
                "output_tokens": int(usage.get("output") or 0),
                "total_tokens": int(usage.get("total") or 0),
            }
        if summary:
            self.summary = run_summary(final.get("payloads") or ())
        if run.status == "ok":
            self.status = "ok"
        elif run.aborted and run.abort_reason == "timeout":
            self.error = f"cron: job execution timed out after {timeout_s:g}s"
        elif run.aborted:
            self.error = f"cron: run aborted ({run.abort_reason})"
        else:
            self.error = run.error or "agent run failed"


def finished_entry(job: CronJob, run_id: str, outcome: FiringOutcome) -> dict[str, Any]:
    """The history entry of `job`'s firing `run_id` as it ended, before delivery: `run_entry`
    with the outcome's fields, `runAtMs` and `durationMs`."""
    entry = run_entry(job, run_id, outcome.ended_at)
    entry.update(outcome.fields())
    entry["runAtMs"] = outcome.started_at
    entry["durationMs"] = max(0, outcome.ended_at - outcome.started_at)
    return entry


def settle_firing(
    live: CronJob, entry: dict[str, Any], trigger: str, outcome: FiringOutcome
) -> bool:
    """After a firing whose delivered `entry` is complete (`completionStatus` included),
    the job as it is now (`live`): its state (`settle_job`) and last delivery; the entry
    gets its next run. True when the job is spent: a one-shot `at` job that ran on
    schedule, succeeded and is to be deleted after its run (`deleteAfterRun`)."""
    settle_job(
        live,
        trigger=trigger,
        status=outcome.status,
        error=outcome.error,
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
    )
    live.state.lastDelivered = entry.get("delivered")
    live.state.lastDeliveryStatus = entry.get("deliveryStatus")
    live.state.lastDeliveryError = entry.get("deliveryError")
    if live.state.nextRunAtMs is not None:
        entry["nextRunAtMs"] = live.state.nextRunAtMs
    return bool(
        isinstance(live.schedule, CronAddParamsScheduleAt)
        and trigger != "manual"
        and live.deleteAfterRun
        and entry["completionStatus"] == "succeeded"
    )


def next_due_ms(jobs: Iterable[CronJob], running: Container[str]) -> int | None:
    """The earliest `nextRunAtMs` of the enabled `jobs` not `running` (ids), or None."""
    times = [
        j.state.nextRunAtMs
        for j in jobs
        if j.enabled and j.state.nextRunAtMs is not None and j.id not in running
    ]
    return min(times) if times else None
