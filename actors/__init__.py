"""clawlane actors: trio tasks that own state and talk over memory channels.

- `Supervisor` (`open_supervisor`): the published generation, session actors, the global lane.
- `SessionActor`, `RunRequest`: one serialized run lane per session key.
- `RunRegistry`, `RunRecord`, `IdempotencyCache`, `CachedResponse`: run states and dedupe.
- `EventHub`, `Subscriber`: per-run seq, encode once, bounded fan-out.
- `Store` (`open_store`, `open_store_backend`): the one owner of the database, on a
  `StoreBackend`: `SqliteBackend` (the default) or `PostgresBackend` (`storage.backend`);
  `open_pairing`, `open_prefs`: the device pairing store and the Control UI's user
  preferences beside it (the state dir's files, or with PostgreSQL the cluster's
  `PostgresDocument`s, each a `runtime.devices.SharedDocument`);
  `Fence`: a session key and its lease's fencing token, carried by durable writes.
- `CronScheduler` (`open_cron`), `CronStore`/`SqliteCronStore`, `FiringLease`/`LocalLease`:
  scheduled runs; `deliver_webhook`, `WebhookSettings`: signed webhooks when a run ends.
- `SubmissionOrder`, `Ticket`: the order of a session's runs, fixed when requests arrive.
- `AcceptedRun`, `JournalRow`, `accepted_row`: the run journal (accepted runs, durable
  before their ack); `recover_runs`, `RecoveredRun`, `RecoveryReport`, `replay_terminal`:
  what a start makes of it.
- Cluster primitives (the gateway uses `NodeRecords`, `run_single_owner` and `Generations`;
  the rest is not wired yet): `Leases` (`Lease`, `HeldLease`,
  fencing tokens), `Claims` (`Claim`), `RunStreams` (`StreamEntry`, `StreamRead`),
  `Generations` (`Version`), `run_single_owner`; bundled per node as a `Cluster` by
  `open_cluster` (Redis with `cluster.redis.url`, else `open_local_cluster`) or
  `open_redis_cluster`.

Errors, one tree rooted at `ActorError` (itself a `runtime.protocol.ClawlaneError`):

    ActorError
    ├── StoreError (a commit or read failed)
    │   ├── StoreClosedError (used after close)
    │   └── FencedOut (a session's write carried a fencing token older than the store's)
    ├── RunRefused (`Supervisor.accept_run` did not take a run) ── RunInFlight, ShuttingDown
    ├── LaneFull (the session's queue is full, drop policy `new`)
    ├── SessionBusy (a manual compaction while a run is active)
    ├── PublishConflict (a config write lost to a newer one)
    ├── CronNotFound (no such job; also a `LookupError`)
    ├── CronFull (the jobs together would pass their byte bound; also a `ValueError`)
    └── ClusterError (a cluster primitive failed)
        ├── ClusterUnavailable (Redis cannot be reached or did not answer: retryable)
        ├── LeaseBusy, LeaseLost (`Leases.hold`: held elsewhere / lost while held)
        ├── StreamGap (`RunStreams.follow`: the stream no longer reaches back)
        └── NodeIdInUse (`NodeRecords.beat`: another process has this node id)
"""

from ._admission import Admission as Admission
from ._errors import ActorError as ActorError
from ._errors import FencedOut as FencedOut
from ._errors import StoreClosedError as StoreClosedError
from ._errors import StoreError as StoreError
from ._metrics import ABORT_REASONS as ABORT_REASONS
from ._metrics import PROVIDER_ERROR_KINDS as PROVIDER_ERROR_KINDS
from ._metrics import RUN_STATUSES as RUN_STATUSES
from ._metrics import HistogramSnapshot as HistogramSnapshot
from ._publisher import GENERATION_EVENT as GENERATION_EVENT
from ._publisher import PublishConflict as PublishConflict
from ._publisher import Publisher as Publisher
from ._publisher import PublishResult as PublishResult
from ._recovery import RecoveredRun as RecoveredRun
from ._recovery import RecoveryReport as RecoveryReport
from ._recovery import recover_runs as recover_runs
from ._recovery import replay_terminal as replay_terminal
from ._recovery import report_lost as report_lost
from ._supervisor import RunInFlight as RunInFlight
from ._supervisor import RunRefused as RunRefused
from ._supervisor import ShuttingDown as ShuttingDown
from ._supervisor import Supervisor as Supervisor
from ._supervisor import SupervisorStatistics as SupervisorStatistics
from ._supervisor import open_supervisor as open_supervisor
from .cluster import ChannelMessage as ChannelMessage
from .cluster import Channels as Channels
from .cluster import Claim as Claim
from .cluster import Claims as Claims
from .cluster import Cluster as Cluster
from .cluster import ClusterError as ClusterError
from .cluster import ClusterUnavailable as ClusterUnavailable
from .cluster import Generations as Generations
from .cluster import HeldLease as HeldLease
from .cluster import Lease as Lease
from .cluster import LeaseBusy as LeaseBusy
from .cluster import LeaseLost as LeaseLost
from .cluster import Leases as Leases
from .cluster import NodeIdInUse as NodeIdInUse
from .cluster import NodeRecords as NodeRecords
from .cluster import RunStreams as RunStreams
from .cluster import StreamEntry as StreamEntry
from .cluster import StreamGap as StreamGap
from .cluster import StreamRead as StreamRead
from .cluster import Version as Version
from .cluster import open_cluster as open_cluster
from .cluster import open_local_cluster as open_local_cluster
from .cluster import open_redis_cluster as open_redis_cluster
from .cluster import run_single_owner as run_single_owner
from .cron import CRON_JOBS_MAX_BYTES as CRON_JOBS_MAX_BYTES
from .cron import CronFull as CronFull
from .cron import CronNotFound as CronNotFound
from .cron import CronScheduler as CronScheduler
from .cron import CronStore as CronStore
from .cron import FiringLease as FiringLease
from .cron import LocalLease as LocalLease
from .cron import RunQuery as RunQuery
from .cron import SqliteCronStore as SqliteCronStore
from .cron import open_cron as open_cron
from .cron import wall_ms as wall_ms
from .runs import READS_CHANGES as READS_CHANGES
from .runs import READS_RUNS as READS_RUNS
from .runs import RELAY_CLOSE as RELAY_CLOSE
from .runs import RELAY_SESSION_MESSAGE as RELAY_SESSION_MESSAGE
from .runs import RELAY_SESSIONS_CHANGED as RELAY_SESSIONS_CHANGED
from .runs import CachedResponse as CachedResponse
from .runs import ChatFlusher as ChatFlusher
from .runs import ChatStream as ChatStream
from .runs import EventHub as EventHub
from .runs import HubStatistics as HubStatistics
from .runs import IdempotencyCache as IdempotencyCache
from .runs import Replay as Replay
from .runs import RunRecord as RunRecord
from .runs import RunRegistry as RunRegistry
from .runs import RunWebhooks as RunWebhooks
from .runs import SubmissionOrder as SubmissionOrder
from .runs import Subscriber as Subscriber
from .runs import Ticket as Ticket
from .runs import WebhookSettings as WebhookSettings
from .runs import deliver_webhook as deliver_webhook
from .runs import serve_run_webhooks as serve_run_webhooks
from .session import LaneFull as LaneFull
from .session import QueueMode as QueueMode
from .session import RunRequest as RunRequest
from .session import SessionActor as SessionActor
from .session import SessionBusy as SessionBusy
from .session import normalize_drop as normalize_drop
from .session import normalize_mode as normalize_mode
from .store import AcceptedRun as AcceptedRun
from .store import Fence as Fence
from .store import JournalRow as JournalRow
from .store import RunIdentity as RunIdentity
from .store import PostgresBackend as PostgresBackend
from .store import PostgresDocument as PostgresDocument
from .store import SqliteBackend as SqliteBackend
from .store import Store as Store
from .store import StoreBackend as StoreBackend
from .store import accepted_row as accepted_row
from .store import open_pairing as open_pairing
from .store import open_prefs as open_prefs
from .store import open_store as open_store
from .store import open_store_backend as open_store_backend
from .store import store_backend as store_backend

__all__ = [
    "ABORT_REASONS",
    "CRON_JOBS_MAX_BYTES",
    "GENERATION_EVENT",
    "PROVIDER_ERROR_KINDS",
    "READS_CHANGES",
    "READS_RUNS",
    "RELAY_CLOSE",
    "RELAY_SESSIONS_CHANGED",
    "RELAY_SESSION_MESSAGE",
    "RUN_STATUSES",
    "AcceptedRun",
    "ActorError",
    "Admission",
    "CachedResponse",
    "ChatFlusher",
    "ChatStream",
    "Claim",
    "Claims",
    "Cluster",
    "ClusterError",
    "ClusterUnavailable",
    "CronFull",
    "CronNotFound",
    "CronScheduler",
    "CronStore",
    "EventHub",
    "Fence",
    "FencedOut",
    "FiringLease",
    "Generations",
    "HeldLease",
    "HistogramSnapshot",
    "HubStatistics",
    "IdempotencyCache",
    "JournalRow",
    "RunIdentity",
    "LaneFull",
    "Lease",
    "LeaseBusy",
    "LeaseLost",
    "Leases",
    "LocalLease",
    "NodeIdInUse",
    "NodeRecords",
    "PostgresBackend",
    "PostgresDocument",
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
    "RunStreams",
    "RunWebhooks",
    "SessionActor",
    "SessionBusy",
    "ShuttingDown",
    "SqliteBackend",
    "SqliteCronStore",
    "Store",
    "StoreBackend",
    "StoreClosedError",
    "StoreError",
    "StreamEntry",
    "StreamGap",
    "StreamRead",
    "SubmissionOrder",
    "Subscriber",
    "Supervisor",
    "SupervisorStatistics",
    "Ticket",
    "Version",
    "WebhookSettings",
    "accepted_row",
    "deliver_webhook",
    "normalize_drop",
    "normalize_mode",
    "open_cluster",
    "open_cron",
    "open_local_cluster",
    "open_pairing",
    "open_prefs",
    "open_redis_cluster",
    "open_store",
    "open_store_backend",
    "open_supervisor",
    "recover_runs",
    "replay_terminal",
    "run_single_owner",
    "serve_run_webhooks",
    "store_backend",
    "wall_ms",
]
