"""clawlane actors: the state the gateway owns, and the trio tasks that own it.

Everything here lives as long as the gateway and is touched from one trio thread; what
blocks (SQLite, PostgreSQL) runs in the store's worker thread. The floors, from the ground
up (each folder's face is its manual):

- `store/`: durable state. `Store` (`open_store`, `open_store_backend`): the one owner of
  the database, group commit from a worker thread, on a `StoreBackend` (`SqliteBackend`,
  the default, or `PostgresBackend`); `WriteGroup`: writes that commit together;
  `WriteBacklog`: writes waiting for room; the run journal (`AcceptedRun`, `JournalRow`,
  `RunIdentity`, `accepted_row`); `Fence`: a session's lease token on its writes;
  `open_pairing`, `open_prefs`: the documents beside it; `open_config_document`
  (`ConfigDocument`): the cluster's config, one document for every node; `UsageStore`:
  the usage aggregates, kept as runs end; `AuditTable` (`AuditFilter`): the audit log.
- `cluster/`: what gateway nodes share, behind small interfaces (`Cluster`, `open_cluster`:
  leases with fencing tokens, claims, run feeds, node records, single-owner jobs), in one
  process (`open_local_cluster`) or on Redis.
- `runs/`: runs as the gateway keeps them: `RunRecord`, `RunRegistry` (states, waiters, the
  `IdempotencyCache` of `CachedResponse`s), `EventHub` (per-run seq, encode once, bounded
  fan-out to `Subscriber`s), `SubmissionOrder` / `Ticket`, the webhooks of finished runs.
- `approvals/`: `PluginApprovals`, the plugin approvals a run's tool call (or a client) raised
  for the operators to answer (`PluginApproval`), and the runs' `ApprovalGate`;
  `ExecApprovals`, the exec approvals the exec policy raises (and its `ExecApprover`).
- `session/`: `SessionActor`, one serialized run lane per session key; `RunRequest`; the
  queue modes; how a run ends; the global lanes.
- `Supervisor` (`open_supervisor`, `_supervisor`): the published generation, the session
  actors (spawned on demand, reaped when idle, restarted when they crash), the lanes.
- `Admission` (`_admission`): the one way a run gets onto its session's lane: dedupe,
  journal, order, register, queue; its fast path without a task and its task path.
- `Publisher` (`_publisher`): builds generations off to the side and publishes them; in a
  cluster on PostgreSQL its config is the cluster's document (`use_document`), written by
  the reasons in `DOCUMENT_REASONS`.
- `recover_runs` (`_recovery`): what a start makes of the journal (`RecoveredRun`,
  `RecoveryReport`, `replay_terminal`, `report_lost`); `recall_run`: what it says of one
  run a cluster node's Redis forgot; `end_lost_in_journal`: a lost node's run ended in the
  journal when another node serves its session.
- `cron/`: `CronScheduler` (`open_cron`), durable jobs and their runs.
- `heartbeat/`: `Heartbeats` (`open_heartbeats`, `Supervisor.heartbeats`): the agents'
  heartbeat runs, on schedule and on a wake, and the `heartbeat` event.
- `GatewaySessions` (`open_session_tools`, `_session_tools`; `open_gateway_supervisor`: a
  supervisor whose runs have them): OpenClaw's session tools over the supervisor's sessions
  (`sessions_list`, `sessions_history`, `sessions_send`, `session_status`, `agents_list`;
  what each session reaches and what the tools answer: `runtime.agent`'s session views,
  which the embedded runtime's host shares),
  and `sessions_spawn`'s subagents (`_subagents`: the `subagent` lane, lineage in the
  child's row, limits, the announce back to the parent; journaled with their runs, so that
  a restart announces the interrupted ones, `adopt_subagents`; stopped with their parent's
  run or session, `stop_subagents`), kept as tasks of their session tree
  (`runtime.agent.TaskBook`: `subagents` list/wait/cancel, `agents_wait`, `sessions_yield`).
- `operator/`: `Questions`, the questions a run's `ask_user` (or a client) asks the operators
  (`Question`), and the runs' `runtime.tools.QuestionDesk`; `operator_desks` and
  `run_desks` make and run a gateway's approvals and questions together; `ProgressCards`,
  each session's progress card, and the runs' `runtime.tools.CardDesk`.

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
    ├── ApprovalNotFound (no such approval, or it ended long ago; also a `LookupError`)
    ├── ApprovalAlreadyResolved (it ended otherwise than by this decision)
    ├── DecisionNotOffered (the request did not offer it; also a `ValueError`)
    ├── ApprovalsFull (too many approvals pending)
    ├── ExecApprovalsChanged (the exec approvals document moved on since it was read)
    ├── QuestionError (a question call refused: `reason` is OpenClaw's code)
    ├── QuestionsFull (too many questions pending)
    └── ClusterError (a cluster primitive failed)
        ├── ClusterUnavailable (Redis cannot be reached or did not answer: retryable)
        ├── LeaseBusy, LeaseLost (`Leases.hold`: held elsewhere / lost while held)
        ├── StreamGap (`RunStreams.follow`: the stream no longer reaches back)
        └── NodeIdInUse (`NodeRecords.beat`: another process has this node id)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from ._admission import Admission as Admission
from ._errors import ActorError as ActorError
from ._errors import FencedOut as FencedOut
from ._errors import StoreClosedError as StoreClosedError
from ._errors import StoreError as StoreError
from ._metrics import ABORT_REASONS as ABORT_REASONS
from ._metrics import PROVIDER_ERROR_KINDS as PROVIDER_ERROR_KINDS
from ._metrics import RUN_STATUSES as RUN_STATUSES
from ._metrics import HistogramSnapshot as HistogramSnapshot
from ._publisher import DOCUMENT_REASONS as DOCUMENT_REASONS
from ._publisher import GENERATION_EVENT as GENERATION_EVENT
from ._publisher import PublishConflict as PublishConflict
from ._publisher import Publisher as Publisher
from ._publisher import PublishResult as PublishResult
from ._recovery import RecoveredRun as RecoveredRun
from ._recovery import RecoveryReport as RecoveryReport
from ._recovery import end_lost_in_journal as end_lost_in_journal
from ._recovery import recall_run as recall_run
from ._recovery import recover_runs as recover_runs
from ._recovery import replay_terminal as replay_terminal
from ._recovery import report_lost as report_lost
from ._session_tools import GatewaySessions as GatewaySessions
from ._session_tools import adopt_subagents as adopt_subagents
from ._session_tools import open_gateway_supervisor as open_gateway_supervisor
from ._session_tools import open_session_tools as open_session_tools
from ._session_tools import stop_subagents as stop_subagents
from ._supervisor import HeartbeatControl as HeartbeatControl
from ._supervisor import RunInFlight as RunInFlight
from ._supervisor import RunRefused as RunRefused
from ._supervisor import ShuttingDown as ShuttingDown
from ._supervisor import Supervisor as Supervisor
from ._supervisor import SupervisorStatistics as SupervisorStatistics
from ._supervisor import open_supervisor as open_supervisor
from .approvals import ApprovalAlreadyResolved as ApprovalAlreadyResolved
from .approvals import ApprovalNotFound as ApprovalNotFound
from .approvals import ApprovalsFull as ApprovalsFull
from .approvals import DecisionNotOffered as DecisionNotOffered
from .approvals import ExecApprovals as ExecApprovals
from .approvals import PluginApproval as PluginApproval
from .approvals import PluginApprovals as PluginApprovals
from .approvals import StandingGrants as StandingGrants
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
from .heartbeat import Heartbeats as Heartbeats
from .heartbeat import open_heartbeats as open_heartbeats
from .operator import ProgressCards as ProgressCards
from .operator import Question as Question
from .operator import QuestionError as QuestionError
from .operator import Questions as Questions
from .operator import QuestionsFull as QuestionsFull
from .operator import operator_desks as operator_desks
from .operator import run_desks as run_desks
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
from .store import ApprovalRecords as ApprovalRecords
from .store import AuditFilter as AuditFilter
from .store import AuditTable as AuditTable
from .store import ExecApprovalsChanged as ExecApprovalsChanged
from .store import ExecApprovalsDocument as ExecApprovalsDocument
from .store import Fence as Fence
from .store import JournalRow as JournalRow
from .store import RunIdentity as RunIdentity
from .store import SessionGroups as SessionGroups
from .store import SqliteBackend as SqliteBackend
from .store import Store as Store
from .store import StoreBackend as StoreBackend
from .store import TranscriptSearch as TranscriptSearch
from .store import UnknownGroup as UnknownGroup
from .store import UsageScope as UsageScope
from .store import UsageStore as UsageStore
from .store import accepted_row as accepted_row
from .store import open_config_document as open_config_document
from .store import open_pairing as open_pairing
from .store import open_prefs as open_prefs
from .store import open_store as open_store
from .store import open_store_backend as open_store_backend
from .store import store_backend as store_backend

if TYPE_CHECKING:
    from .cluster import open_redis_cluster as open_redis_cluster
    from .store import ConfigDocument as ConfigDocument
    from .store import PostgresBackend as PostgresBackend
    from .store import PostgresDocument as PostgresDocument

_LAZY: Final = {
    "open_redis_cluster": ".cluster",
    "ConfigDocument": ".store",
    "PostgresBackend": ".store",
    "PostgresDocument": ".store",
}
"""Names resolved on first use (`__getattr__`): coredis and psycopg load only for a gateway
whose config names Redis or PostgreSQL (`open_cluster`, `open_store_backend` import them
then)."""

__all__ = [
    "ABORT_REASONS",
    "CRON_JOBS_MAX_BYTES",
    "DOCUMENT_REASONS",
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
    "ApprovalAlreadyResolved",
    "ApprovalNotFound",
    "ApprovalRecords",
    "ApprovalsFull",
    "AuditFilter",
    "AuditTable",
    "CachedResponse",
    "ChannelMessage",
    "Channels",
    "ChatFlusher",
    "ChatStream",
    "Claim",
    "Claims",
    "Cluster",
    "ClusterError",
    "ClusterUnavailable",
    "ConfigDocument",
    "CronFull",
    "CronNotFound",
    "CronScheduler",
    "CronStore",
    "DecisionNotOffered",
    "EventHub",
    "ExecApprovals",
    "ExecApprovalsChanged",
    "ExecApprovalsDocument",
    "Fence",
    "FencedOut",
    "FiringLease",
    "GatewaySessions",
    "Generations",
    "HeartbeatControl",
    "Heartbeats",
    "HeldLease",
    "HistogramSnapshot",
    "HubStatistics",
    "IdempotencyCache",
    "JournalRow",
    "LaneFull",
    "Lease",
    "LeaseBusy",
    "LeaseLost",
    "Leases",
    "LocalLease",
    "NodeIdInUse",
    "NodeRecords",
    "PluginApproval",
    "PluginApprovals",
    "PostgresBackend",
    "PostgresDocument",
    "ProgressCards",
    "PublishConflict",
    "PublishResult",
    "Publisher",
    "Question",
    "QuestionError",
    "Questions",
    "QuestionsFull",
    "QueueMode",
    "RecoveredRun",
    "RecoveryReport",
    "Replay",
    "RunIdentity",
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
    "SessionGroups",
    "ShuttingDown",
    "SqliteBackend",
    "SqliteCronStore",
    "StandingGrants",
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
    "TranscriptSearch",
    "UnknownGroup",
    "UsageScope",
    "UsageStore",
    "Version",
    "WebhookSettings",
    "accepted_row",
    "adopt_subagents",
    "deliver_webhook",
    "end_lost_in_journal",
    "normalize_drop",
    "normalize_mode",
    "open_cluster",
    "open_config_document",
    "open_cron",
    "open_gateway_supervisor",
    "open_heartbeats",
    "open_local_cluster",
    "open_pairing",
    "open_prefs",
    "open_redis_cluster",
    "open_session_tools",
    "open_store",
    "open_store_backend",
    "open_supervisor",
    "operator_desks",
    "recall_run",
    "recover_runs",
    "replay_terminal",
    "report_lost",
    "run_desks",
    "run_single_owner",
    "serve_run_webhooks",
    "stop_subagents",
    "store_backend",
    "wall_ms",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
