"""runtime.cron"""

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
    "JobIdError",
    "apply_patch",
    "decode_job",
    "effective_agent",
    "encode_job",
    "error_backoff_ms",
    "format_iso_ms",
    "host_timezone",
    "job_from_add",
    "job_view",
    "next_run_after",
    "select_jobs",
    "webhook_url_problem",
]
