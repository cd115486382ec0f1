"""Durable state: session rows, transcripts, the run journal, shared documents.

- `_store`: the `Store` actor, the one owner of the database: writes come over a channel and
  commit in groups (group commit) from a worker thread, so no trio task blocks on disk. A
  commit that got no answer (the connection lost as it committed) is reported as the
  database says it went, asked once it can be (`_ops.CommitUnknown`). `_readers`: its
  reader connections (a dead one replaced, a read retried once); `_counts`: what its
  writer counts and logs (`StoreStatistics`).
- `_ops`: the backend seam: the operations on the write channel, and `Fence` checks.
- `_sqlite`: the embedded backend (WAL, one file in the state dir); `_pg`: PostgreSQL
  (psycopg 3 in the worker thread, same groups); `_config`: which one the config asks for
  (`storage.backend`), opened with `open_configured_store`. `_pg` and `_documents` are
  imported only when the config names PostgreSQL (or their names are first used here).
- `_journal`: every accepted run, durable before its ack, ended when the run ends.
- `_approval_records`: `ApprovalRecords`, the ended approvals of the last 30 days and the
  standing grants for cron runs, in tables of their own (created when missing).
- `_documents`: documents the gateways of a cluster share (device pairing, config), under a
  row lock with a hash for compare-and-set.
- `_config_document`: `ConfigDocument`, the cluster's config as one such document (opened
  by `open_config_document` with `cluster.redis.url` and PostgreSQL; `ConfigRecord`: the
  text, when, by which node, why), read without the lock, written as a compare-and-set.
- `_exec_approvals`: the host exec approvals document (`ExecApprovalsDocument`: one row,
  compare-and-set by its hash; `ExecApprovalsChanged` when it moved on).
- `_search`: full-text search over the transcripts (`TranscriptSearch`: FTS5 on SQLite,
  PostgreSQL's text search), indexed as entries are written (by the SQLite writer, by
  triggers on PostgreSQL).
- `_session_groups`: the session groups' catalog (`SessionGroups`), one document in a
  table of its own, changed in the writer's transactions (`UnknownGroup`).
- `_usage`: the usage aggregates (`UsageStore`), added as runs end in the same transaction
  as their transcript (`usage_write` in `WriteGroup.usage`), merged per write batch;
  `_usage_backfill`: the turns stored before the aggregates were kept, added once
  (`backfill_usage`, in the background after startup).
- `_backlog`: writes that wait while the store's channel is full, fed to it in order.
- `_memory`: the agents' memory indexes on PostgreSQL (`PostgresMemoryIndexes`, a
  `runtime.memory.IndexFactory`: full-text search by `tsvector`, rows scoped to this host,
  the agent and its workspace), which a gateway on PostgreSQL uses for memory search
  instead of the SQLite files (`memory_indexes`, in `_config`); `_memory_bm25`: its
  keyword ranking (bm25 as FTS5's, scoring only the chunks that can reach the top).
- `_audit`: the audit log of runs and tool calls (`AuditTable`: bounded by age and rows,
  inserted in the writer's batches under a savepoint; `AuditFilter`, `AuditPage`: what
  `audit.list` reads), fed by `actors.runs.AuditRecorder`.

A write that fails is reported, never taken for success: `StoreError` (under `ActorError`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from ._approval_records import ApprovalRecords as ApprovalRecords
from ._audit import AuditFilter as AuditFilter
from ._audit import AuditPage as AuditPage
from ._audit import AuditTable as AuditTable
from ._backlog import WriteBacklog as WriteBacklog
from ._config import memory_indexes as memory_indexes
from ._config import open_config_document as open_config_document
from ._config import open_pairing as open_pairing
from ._config import open_prefs as open_prefs
from ._config import open_store_backend as open_store_backend
from ._config import store_backend as store_backend
from ._exec_approvals import ExecApprovalsChanged as ExecApprovalsChanged
from ._exec_approvals import ExecApprovalsDocument as ExecApprovalsDocument
from ._journal import INTERRUPTED as INTERRUPTED
from ._journal import AcceptedRun as AcceptedRun
from ._journal import JournalRow as JournalRow
from ._journal import RunIdentity as RunIdentity
from ._journal import RunOutcome as RunOutcome
from ._journal import SpawnLink as SpawnLink
from ._journal import accepted_row as accepted_row
from ._journal import ended_row as ended_row
from ._ops import Fence as Fence
from ._ops import SqlConnection as SqlConnection
from ._ops import StoreBackend as StoreBackend
from ._ops import WriteGroup as WriteGroup
from ._ops import end_unless_ended as end_unless_ended
from ._search import TranscriptSearch as TranscriptSearch
from ._session_groups import SessionGroups as SessionGroups
from ._session_groups import UnknownGroup as UnknownGroup
from ._sqlite import SqliteBackend as SqliteBackend
from ._store import Store as Store
from ._store import open_store as open_store
from ._usage import UsageScope as UsageScope
from ._usage import UsageStore as UsageStore
from ._usage import usage_write as usage_write
from ._usage_backfill import backfill_usage as backfill_usage

if TYPE_CHECKING:
    from ._config_document import ConfigDocument as ConfigDocument
    from ._config_document import ConfigRecord as ConfigRecord
    from ._config_document import Held as Held
    from ._config_document import StoredConfig as StoredConfig
    from ._documents import PostgresDocument as PostgresDocument
    from ._memory import PostgresMemoryIndexes as PostgresMemoryIndexes
    from ._pg import PostgresBackend as PostgresBackend

_LAZY: Final = {
    "PostgresBackend": "._pg",
    "PostgresDocument": "._documents",
    "PostgresMemoryIndexes": "._memory",
    "ConfigDocument": "._config_document",
    "ConfigRecord": "._config_document",
    "Held": "._config_document",
    "StoredConfig": "._config_document",
}
"""Names resolved on first use (`__getattr__`): psycopg loads only when PostgreSQL is used."""

__all__ = [
    "INTERRUPTED",
    "AcceptedRun",
    "ApprovalRecords",
    "AuditFilter",
    "AuditPage",
    "AuditTable",
    "ConfigDocument",
    "ConfigRecord",
    "ExecApprovalsChanged",
    "ExecApprovalsDocument",
    "Fence",
    "Held",
    "JournalRow",
    "PostgresBackend",
    "PostgresDocument",
    "PostgresMemoryIndexes",
    "RunIdentity",
    "RunOutcome",
    "SessionGroups",
    "SpawnLink",
    "SqlConnection",
    "SqliteBackend",
    "Store",
    "StoreBackend",
    "StoredConfig",
    "TranscriptSearch",
    "UnknownGroup",
    "UsageScope",
    "UsageStore",
    "WriteBacklog",
    "WriteGroup",
    "accepted_row",
    "backfill_usage",
    "end_unless_ended",
    "ended_row",
    "memory_indexes",
    "open_config_document",
    "open_pairing",
    "open_prefs",
    "open_store",
    "open_store_backend",
    "store_backend",
    "usage_write",
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
