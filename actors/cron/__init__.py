"""The cron scheduler: durable jobs, their timer, their runs, their history.

- `_scheduler`: `CronScheduler`: the jobs, one timer for the next due one, `cron.*` operations,
  and the webhooks of finished runs.
- `_run`: one firing: its run on the `cron` global lane, and its history entry.
- `_store`: jobs and run history behind `CronStore` (SQLite or PostgreSQL through the store).
- `_tool_host`: `GatewayJobs`, the scheduler as the model's `automations` tool (alias
  `cron`) reaches it through `runtime.agent.CronToolHost` (shared with the embedded
  runtime): `open_cron` (the scheduler's, wrapped) sets it on the supervisor's `services`
  while the scheduler runs, so a run can add, list, update, remove and run jobs as `cron.*`
  does.

OpenClaw's automations surface: the `cron.*` methods (`transports.methods._cron`; `openclaw
cron list|add|run|runs|get|edit|rm` work against clawlane as against OpenClaw's gateway),
with schedules (`at`, `every`, `cron` with time zones, DST edges and the top-of-hour
stagger: `runtime.cron._cron_schedule`), payloads run in a fresh, named or the job's own
session (`_run`), and delivery `none`, `announce` or a signed, retried `webhook`
(`actors.runs._webhook`). `cron.enabled: false` stops automatic firing (jobs can still be run
by hand); `thinking` is recorded as the session's `thinkingLevel`.

- Bounds: jobs are kept in memory, so one job (its name, description and payload, encoded)
  is at most 256 KiB and all jobs together at most 64 MiB; `cron.add` or `cron.update` past
  either answers `INVALID_REQUEST` saying which, and stores nothing.
- Events: every connection with `operator.read` gets `cron` `{jobId, action, job, ...}`,
  `action` one of `added`, `updated`, `removed`, `started`, `finished` (with the result).
- Durable: the jobs and the newest 2,000 runs per job (`cron_jobs`, `cron_runs`; removing a
  job keeps its history) survive a restart, the schedule resumes, a run the stop cut short
  gets an `error` entry, and slots missed while the gateway was down run once at start (or
  are `skipped` with `cron.skipMissedJobs`), as `_scheduler` says. One gateway per state dir
  (`transports.server._state_lock`), so every slot fires once; in a cluster cron runs on one
  node at a time and its methods and events reach every node.
"""

from ._scheduler import CRON_JOBS_MAX_BYTES as CRON_JOBS_MAX_BYTES
from ._scheduler import CronFull as CronFull
from ._scheduler import CronNotFound as CronNotFound
from ._scheduler import CronScheduler as CronScheduler
from ._scheduler import FiringLease as FiringLease
from ._scheduler import LocalLease as LocalLease
from ._scheduler import wall_ms as wall_ms
from ._store import CronStore as CronStore
from ._store import RunQuery as RunQuery
from ._store import SqliteCronStore as SqliteCronStore
from ._tool_host import open_cron as open_cron

__all__ = [
    "CRON_JOBS_MAX_BYTES",
    "CronFull",
    "CronNotFound",
    "CronScheduler",
    "CronStore",
    "FiringLease",
    "LocalLease",
    "RunQuery",
    "SqliteCronStore",
    "open_cron",
    "wall_ms",
]
