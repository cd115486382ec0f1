"""The cron scheduler: durable jobs, their timer, their runs, their history.

- `_scheduler`: `CronScheduler`: the jobs, one timer for the next due one, `cron.*` operations,
  and the webhooks of finished runs.
- `_run`: one firing: its run on the `cron` global lane, and its history entry.
- `_store`: jobs and run history behind `CronStore` (SQLite or PostgreSQL through the store).
"""

from ._scheduler import CRON_JOBS_MAX_BYTES as CRON_JOBS_MAX_BYTES
from ._scheduler import CronFull as CronFull
from ._scheduler import CronNotFound as CronNotFound
from ._scheduler import CronScheduler as CronScheduler
from ._scheduler import FiringLease as FiringLease
from ._scheduler import LocalLease as LocalLease
from ._scheduler import open_cron as open_cron
from ._scheduler import wall_ms as wall_ms
from ._store import CronStore as CronStore
from ._store import RunQuery as RunQuery
from ._store import SqliteCronStore as SqliteCronStore

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
