"""clawlane actors: trio tasks that own state and talk over memory channels.

- `Supervisor` (`open_supervisor`): the published generation, session actors, the global lane.
- `SessionActor`, `RunRequest`: one serialized run lane per session key.
- `RunRegistry`, `RunRecord`, `IdempotencyCache`, `CachedResponse`: run states and dedupe.
- `EventHub`, `Subscriber`: per-run seq, encode once, bounded fan-out.
- `Store` (`open_store`, `open_store_backend`): the one owner of the database, on a
  `StoreBackend`: `SqliteBackend` (the default) or `PostgresBackend` (`storage.backend`).
- `CronScheduler` (`open_cron`), `CronStore`/`SqliteCronStore`, `FiringLease`/`LocalLease`:
  scheduled runs; `deliver_webhook`, `WebhookSettings`: signed webhooks when a run ends.
- `SubmissionOrder`, `Ticket`: the order of a session's runs, fixed when requests arrive.
- `AcceptedRun`, `JournalRow`, `accepted_row`: the run journal (accepted runs, durable
  before their ack); `recover_runs`, `RecoveredRun`, `RecoveryReport`, `replay_terminal`:
  what a start makes of it.

Errors, one tree rooted at `ActorError` (itself a `runtime.protocol.ClawlaneError`):

    ActorError
    ├── StoreError (a commit or read failed) ── StoreClosedError (used after close)
    ├── RunRefused (`Supervisor.accept_run` did not take a run) ── RunInFlight, ShuttingDown
    ├── LaneFull (the session's queue is full, drop policy `new`)
    ├── SessionBusy (a manual compaction while a run is active)
    ├── PublishConflict (a config write lost to a newer one)
    └── CronNotFound (no such job; also a `LookupError`)
"""

from ._chat import ChatFlusher as ChatFlusher
from ._chat import ChatStream as ChatStream
from ._cron import CronNotFound as CronNotFound
from ._cron import CronScheduler as CronScheduler
from ._cron import FiringLease as FiringLease
from ._cron import LocalLease as LocalLease
from ._cron import open_cron as open_cron
from ._cron import wall_ms as wall_ms
from ._cron_store import CronStore as CronStore
from ._cron_store import RunQuery as RunQuery
from ._cron_store import SqliteCronStore as SqliteCronStore
from ._errors import ActorError as ActorError
from ._errors import StoreClosedError as StoreClosedError
from ._errors import StoreError as StoreError
from ._hub import EventHub as EventHub
from ._hub import HubStatistics as HubStatistics
from ._hub import Replay as Replay
from ._hub import Subscriber as Subscriber
from ._journal import AcceptedRun as AcceptedRun
from ._journal import JournalRow as JournalRow
from ._journal import accepted_row as accepted_row
from ._lane import LaneFull as LaneFull
from ._lane import normalize_drop as normalize_drop
from ._lane import normalize_mode as normalize_mode
from ._metrics import ABORT_REASONS as ABORT_REASONS
from ._metrics import PROVIDER_ERROR_KINDS as PROVIDER_ERROR_KINDS
from ._metrics import RUN_STATUSES as RUN_STATUSES
from ._metrics import HistogramSnapshot as HistogramSnapshot
from ._order import SubmissionOrder as SubmissionOrder
from ._order import Ticket as Ticket
from ._pg import PostgresBackend as PostgresBackend
from ._publisher import GENERATION_EVENT as GENERATION_EVENT
from ._publisher import PublishConflict as PublishConflict
from ._publisher import Publisher as Publisher
from ._publisher import PublishResult as PublishResult
from ._record import RunRecord as RunRecord
from ._recovery import RecoveredRun as RecoveredRun
from ._recovery import RecoveryReport as RecoveryReport
from ._recovery import recover_runs as recover_runs
from ._recovery import replay_terminal as replay_terminal
from ._registry import CachedResponse as CachedResponse
from ._registry import IdempotencyCache as IdempotencyCache
from ._registry import RunRegistry as RunRegistry
from ._request import QueueMode as QueueMode
from ._request import RunRequest as RunRequest
from ._session import SessionActor as SessionActor
from ._session import SessionBusy as SessionBusy
from ._sqlite import SqliteBackend as SqliteBackend
from ._store import Store as Store
from ._store import open_store as open_store
from ._store_config import open_store_backend as open_store_backend
from ._store_config import store_backend as store_backend
from ._store_ops import StoreBackend as StoreBackend
from ._supervisor import RunInFlight as RunInFlight
from ._supervisor import RunRefused as RunRefused
from ._supervisor import ShuttingDown as ShuttingDown
from ._supervisor import Supervisor as Supervisor
from ._supervisor import SupervisorStatistics as SupervisorStatistics
from ._supervisor import open_supervisor as open_supervisor
from ._webhook import WebhookSettings as WebhookSettings
from ._webhook import deliver_webhook as deliver_webhook

__all__ = [
    "ABORT_REASONS",
    "GENERATION_EVENT",
    "PROVIDER_ERROR_KINDS",
    "RUN_STATUSES",
    "AcceptedRun",
    "ActorError",
    "CachedResponse",
    "ChatFlusher",
    "ChatStream",
    "CronNotFound",
    "CronScheduler",
    "CronStore",
    "EventHub",
    "FiringLease",
    "HistogramSnapshot",
    "HubStatistics",
    "IdempotencyCache",
    "JournalRow",
    "LaneFull",
    "LocalLease",
    "PostgresBackend",
    "PublishConflict",
    "PublishResult",
    "Publisher",
    "QueueMode",
    "RecoveredRun",
    "RecoveryReport",
    "Replay",
    "RunInFlight",
    "RunQuery",
    "RunRecord",
    "RunRefused",
    "RunRegistry",
    "RunRequest",
    "SessionActor",
    "SessionBusy",
    "ShuttingDown",
    "SqliteBackend",
    "SqliteCronStore",
    "Store",
    "StoreBackend",
    "StoreClosedError",
    "StoreError",
    "SubmissionOrder",
    "Subscriber",
    "Supervisor",
    "SupervisorStatistics",
    "Ticket",
    "WebhookSettings",
    "accepted_row",
    "deliver_webhook",
    "normalize_drop",
    "normalize_mode",
    "open_cron",
    "open_store",
    "open_store_backend",
    "open_supervisor",
    "recover_runs",
    "replay_terminal",
    "store_backend",
    "wall_ms",
]
