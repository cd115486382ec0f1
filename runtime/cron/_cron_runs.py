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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.protocol import CronAddParamsScheduleAt

from ._cron_jobs import CronJob, next_run_after
from ._cron_schedule import error_backoff_ms

__all__ = ["announce_fields", "completion_status", "run_entry", "run_summary", "settle_job"]


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
