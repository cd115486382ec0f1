"""clawlane actors: trio tasks that own state and talk over memory channels.

- `Supervisor` (`open_supervisor`): the published generation, session actors, the global lane.
- `SessionActor`, `RunRequest`: one serialized run lane per session key.
- `RunRegistry`, `RunRecord`, `IdempotencyCache`, `CachedResponse`: run states and dedupe.
- `EventHub`, `Subscriber`: per-run seq, encode once, bounded fan-out.
- `Store` (`open_store`): the one owner of the SQLite database.
- `CronScheduler` (`open_cron`), `CronStore`/`SqliteCronStore`, `FiringLease`/`LocalLease`:
  scheduled runs; `deliver_webhook`, `WebhookSettings`: signed webhooks when a run ends.

Errors: `StoreError` (a commit or read failed), `StoreClosedError` (used after close).
"""

from ._chat import ChatFlusher as ChatFlusher
from ._chat import ChatStream as ChatStream
from ._cron import CronNotFound as CronNotFound
from ._cron import CronScheduler as CronScheduler
from ._cron import FiringLease as FiringLease
from ._cron import LocalLease as LocalLease
from ._cron import open_cron as open_cron
from ._cron_store import CronStore as CronStore
from ._cron_store import RunQuery as RunQuery
from ._cron_store import SqliteCronStore as SqliteCronStore
from ._hub import EventHub as EventHub
from ._hub import HubStatistics as HubStatistics
from ._hub import Replay as Replay
from ._hub import Subscriber as Subscriber
from ._publisher import Publisher as Publisher
from ._registry import CachedResponse as CachedResponse
from ._registry import IdempotencyCache as IdempotencyCache
from ._registry import RunRecord as RunRecord
from ._registry import RunRegistry as RunRegistry
from ._session import RunRequest as RunRequest
from ._session import SessionActor as SessionActor
from ._store import Store as Store
from ._store import StoreClosedError as StoreClosedError
from ._store import StoreError as StoreError
from ._store import open_store as open_store
from ._supervisor import Supervisor as Supervisor
from ._supervisor import SupervisorStatistics as SupervisorStatistics
from ._supervisor import open_supervisor as open_supervisor
from ._webhook import WebhookSettings as WebhookSettings
from ._webhook import deliver_webhook as deliver_webhook

__all__ = [
    "CachedResponse",
    "ChatFlusher",
    "ChatStream",
    "CronNotFound",
    "CronScheduler",
    "CronStore",
    "EventHub",
    "FiringLease",
    "HubStatistics",
    "IdempotencyCache",
    "LocalLease",
    "Publisher",
    "Replay",
    "RunQuery",
    "RunRecord",
    "RunRegistry",
    "RunRequest",
    "SessionActor",
    "SqliteCronStore",
    "Store",
    "StoreClosedError",
    "StoreError",
    "Subscriber",
    "Supervisor",
    "SupervisorStatistics",
    "WebhookSettings",
    "deliver_webhook",
    "open_cron",
    "open_store",
    "open_supervisor",
]
