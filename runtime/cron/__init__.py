"""runtime.cron: OpenClaw's cron jobs without I/O, for the gateway's scheduler (`actors.cron`)
and the embedded runtime's.

- `_cron_schedule`: the schedule arithmetic (`at`, `every`, `cron` with time zones, DST
  edges, the top-of-hour stagger) and the error backoff.
- `_cron_jobs`: `CronJob`, its validation (`job_from_add`, `apply_patch`), its wire view.
- `_cron_params`: the `cron.*` methods' params that name a job.
- `_cron_list`: `cron.list`'s filters and sorts (`select_jobs`).
- `_cron_runs`: what a finished run does to its job (`settle_job`) and its history entry
  (`run_entry`, `announce_fields`, `completion_status`, `run_summary`), a firing's outcome
  and what it does to its job (`FiringOutcome`, `finished_entry`, `settle_firing`), the
  timer's next slot (`next_due_ms`).
"""

from ._cron_jobs import CronJob as CronJob
from ._cron_jobs import CronJobError as CronJobError
from ._cron_jobs import apply_patch as apply_patch
from ._cron_jobs import decode_job as decode_job
from ._cron_jobs import encode_job as encode_job
from ._cron_jobs import job_from_add as job_from_add
from ._cron_jobs import job_view as job_view
from ._cron_jobs import next_run_after as next_run_after
from ._cron_jobs import webhook_url_problem as webhook_url_problem
from ._cron_list import effective_agent as effective_agent
from ._cron_list import select_jobs as select_jobs
from ._cron_params import CronGetParams as CronGetParams
from ._cron_params import CronRemoveParams as CronRemoveParams
from ._cron_params import CronRunParams as CronRunParams
from ._cron_params import CronUpdateParams as CronUpdateParams
from ._cron_params import JobIdError as JobIdError
from ._cron_runs import EndedRun as EndedRun
from ._cron_runs import FiringOutcome as FiringOutcome
from ._cron_runs import announce_fields as announce_fields
from ._cron_runs import completion_status as completion_status
from ._cron_runs import finished_entry as finished_entry
from ._cron_runs import next_due_ms as next_due_ms
from ._cron_runs import run_entry as run_entry
from ._cron_runs import run_summary as run_summary
from ._cron_runs import settle_firing as settle_firing
from ._cron_runs import settle_job as settle_job
from ._cron_schedule import error_backoff_ms as error_backoff_ms
from ._cron_schedule import format_iso_ms as format_iso_ms
from ._cron_schedule import host_timezone as host_timezone

__all__ = [
    "CronGetParams",
    "CronJob",
    "CronJobError",
    "CronRemoveParams",
    "CronRunParams",
    "CronUpdateParams",
    "EndedRun",
    "FiringOutcome",
    "JobIdError",
    "announce_fields",
    "apply_patch",
    "completion_status",
    "decode_job",
    "effective_agent",
    "encode_job",
    "error_backoff_ms",
    "finished_entry",
    "format_iso_ms",
    "host_timezone",
    "job_from_add",
    "job_view",
    "next_due_ms",
    "next_run_after",
    "run_entry",
    "run_summary",
    "select_jobs",
    "settle_firing",
    "settle_job",
    "webhook_url_problem",
]
