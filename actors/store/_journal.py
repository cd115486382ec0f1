"""The run journal: every accepted run, durable before its ack, ended when the run ends.

One row per run in the store's `runs` table (the store owns the database and writes these
rows in its group commit; the table and its statements live here, beside the store's own).
A row is written twice:

- when the run is accepted, with state `accepted` and the request (`AcceptedRun`: enough
  to report the run after a crash, or to run it again), in the same transaction as the
  session row when that has to be written too; the ack goes out once it has committed;
- when the run ends, with its state (`ok`, `error`, `aborted`) and outcome (`RunOutcome`:
  what `agent.wait` and a retried idempotency key answer), in the same transaction as the
  run's transcript entries and session row.

So after a crash the rows still `accepted` are exactly the runs acknowledged and not
finished (`actors._recovery` reports them failed, or runs them again), and the ended rows
of the last few minutes restore the idempotency cache: a retried key never runs twice.
Ended rows older than the cache's TTL, or beyond its capacity, are pruned by the writer.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import msgspec

from runtime.llm import InputProvenance

RunKind = Literal["agent", "chat"]
"""Which idempotency cache the run's key lives in (`agent:<key>` or `chat:<key>`)."""
JournalState = Literal["accepted", "ok", "error", "aborted"]

INTERRUPTED: Final = "interrupted: the gateway stopped before this run finished"
"""The error of a run that was accepted and had not ended when the gateway stopped."""

PRUNE_INTERVAL_S: Final = 5.0
"""How often the writer drops ended rows the idempotency cache would no longer hold."""

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS runs(
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    ended_at INTEGER,
    body BLOB NOT NULL
);
"""
"""Append-only: a run's acceptance is one row, its end another (the last row of a run id
is its state; `ended_at` is NULL while it is accepted). Rows go to the end of one b-tree
(the rowid's), nothing else is indexed, and everything but what pruning needs is in one
JSON `body`: the writer thread binds three values per row, under the GIL the event loop
needs. Measured: nine columns keyed by run id (random keys, an index on `ended_at`,
`INSERT OR REPLACE`) cost the writer about four times as much per run, and the event
loop ~10 % of its throughput in GIL hand-overs. The table stays small (pruned every few
seconds), so pruning and loading scan it."""

PUT_HEAD: Final = "INSERT INTO runs(run_id, ended_at, body) VALUES "
WIDTH: Final = 3

PRUNE: Final = """
DELETE FROM runs WHERE id < :cut AND run_id IN (
    SELECT run_id FROM runs WHERE ended_at IS NOT NULL AND id < :cut
)
"""
"""Drop the runs whose end was written before row `cut` (their acceptance with them);
`cut` is `PRUNE_CUT`: the first of the ended rows the idempotency cache would still hold."""

PRUNE_CUT: Final = """
SELECT COALESCE(
    (SELECT MIN(id) FROM (
        SELECT id FROM runs WHERE ended_at IS NOT NULL AND ended_at >= :since
        ORDER BY id DESC LIMIT :keep
    )),
    (SELECT MAX(id) + 1 FROM runs)
)
"""
"""None of the ended rows is recent: every one may go (NULL only for an empty table)."""

LOAD: Final = "SELECT run_id, ended_at, body FROM runs ORDER BY id"
"""Every row, in the order written; the last row of a run id is what it is now."""
LAST_OF: Final = "SELECT run_id, ended_at, body FROM runs WHERE run_id = ? ORDER BY id DESC LIMIT 1"
"""One run's last row (`Store.load_run`: a scan of the small table, made only when a
cluster's Redis may have forgotten the run's claim)."""


class SpawnLink(msgspec.Struct, frozen=True, omit_defaults=True):
    """A `sessions_spawn` run's tie to the session that spawned it: what a restart needs
    to announce its result there (`actors._subagents`)."""

    parentKey: str
    parentAgent: str
    label: str | None = None
    announce: bool = True
    """Its result is announced to the parent (`expectsCompletionMessage` not false)."""
    cleanup: str | None = None
    requesterRun: str | None = None
    """The parent's run that spawned it."""
    completionTarget: str | None = None
    """`parent`: its result is told in a private run of the parent's own, only to the
    parent session it was spawned from (`requesterSessionId`)."""
    requesterSessionId: str | None = None
    attachmentsDir: str | None = None
    """Its staged attachments, removed once its end has been told."""


class AcceptedRun(msgspec.Struct, frozen=True, omit_defaults=True):
    """What was accepted: the request, as a `RunRequest` needs it to run again."""

    message: str
    order: int = 0
    """The request's place in the submission order of the process that accepted it."""
    lane: str = "main"
    timeoutS: float | None = None
    modelRef: str | None = None
    extraSystemPrompt: str | None = None
    reset: bool = False
    resetReason: str = "reset"
    queueMode: str | None = None
    debounce: bool = False
    attempt: int = 1
    """1 for the first execution; a run executed again after a restart counts up."""
    origin: str | None = None
    """Who asked for it when not a client (`subagent`, `subagent-announce`, ...)."""
    spawn: SpawnLink | None = None
    """A subagent's run: the session that spawned it."""
    provenance: InputProvenance | None = None
    """Who asked for it when no person did (a child's completion told to its parent)."""
    lightContext: bool = False
    """Its system prompt leaves out the workspace's bootstrap files (a `sessions_spawn`
    child's `lightContext`, a heartbeat's): so does its run again after a restart."""


class RunOutcome(msgspec.Struct, frozen=True, omit_defaults=True):
    """How an ended run ended: what `agent.wait` and a retried key answer."""

    status: Literal["ok", "error", "aborted"]
    error: str | None = None
    abortReason: str | None = None
    startedAt: int | None = None
    final: Any = None
    """The `agent` final result (`{payloads, meta}`); omitted for chat runs."""
    spawn: SpawnLink | None = None
    """A subagent's run: the session that spawned it (as accepted)."""


class _Stored(msgspec.Struct, frozen=True, omit_defaults=True):
    """A row's `body`."""

    kind: str
    sessionKey: str
    sessionId: str
    agentId: str
    state: str
    acceptedAt: int
    request: AcceptedRun | None = None
    outcome: RunOutcome | None = None


_encoder: Final = msgspec.json.Encoder()
_decoder: Final = msgspec.json.Decoder(_Stored)


@attrs.frozen
class RunIdentity:
    """Who a run is, as its journal rows say it: the same in its accepted and its ended row
    (and in the row a restart writes for it)."""

    run_id: str
    kind: str
    session_key: str
    session_id: str
    agent_id: str
    accepted_at: int


@attrs.frozen
class JournalRow:
    """One row of the `runs` table (`body` holds the rest, encoded)."""

    run_id: str
    kind: str
    session_key: str
    session_id: str
    agent_id: str
    state: str
    accepted_at: int
    ended_at: int | None
    body: bytes
    request: AcceptedRun | None = None
    result: RunOutcome | None = None

    @classmethod
    def stored(cls, run_id: str, ended_at: int | None, body: bytes) -> JournalRow:
        """A row as read back. Raises `msgspec.DecodeError`."""
        s = _decoder.decode(body)
        return cls(
            run_id,
            s.kind,
            s.sessionKey,
            s.sessionId,
            s.agentId,
            s.state,
            s.acceptedAt,
            ended_at,
            body,
            s.request,
            s.outcome,
        )

    @property
    def identity(self) -> RunIdentity:
        return RunIdentity(
            self.run_id,
            self.kind,
            self.session_key,
            self.session_id,
            self.agent_id,
            self.accepted_at,
        )

    def values(self) -> tuple[Any, ...]:
        return (self.run_id, self.ended_at, self.body)

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    def accepted(self) -> AcceptedRun:
        """The request of a row still `accepted`. Raises `msgspec.DecodeError`."""
        if self.request is None:
            raise msgspec.DecodeError(f"journal row of {self.run_id} has no request")
        return self.request

    def outcome(self) -> RunOutcome:
        """The outcome of an ended row. Raises `msgspec.DecodeError`."""
        if self.result is None:
            raise msgspec.DecodeError(f"journal row of {self.run_id} has no outcome")
        return self.result


def accepted_row(identity: RunIdentity, *, request: AcceptedRun) -> JournalRow:
    """The row of a run as accepted, with what it takes to queue it again."""
    i = identity
    body = _encoder.encode(
        _Stored(
            i.kind,
            i.session_key,
            i.session_id,
            i.agent_id,
            "accepted",
            i.accepted_at,
            request=request,
        )
    )
    return JournalRow(
        i.run_id,
        i.kind,
        i.session_key,
        i.session_id,
        i.agent_id,
        "accepted",
        i.accepted_at,
        None,
        body,
        request,
    )


def ended_row(identity: RunIdentity, *, ended_at: int, outcome: RunOutcome) -> JournalRow:
    """The row of a run as it ended."""
    i = identity
    body = _encoder.encode(
        _Stored(
            i.kind,
            i.session_key,
            i.session_id,
            i.agent_id,
            outcome.status,
            i.accepted_at,
            outcome=outcome,
        )
    )
    return JournalRow(
        i.run_id,
        i.kind,
        i.session_key,
        i.session_id,
        i.agent_id,
        outcome.status,
        i.accepted_at,
        ended_at,
        body,
        None,
        outcome,
    )


END_UNLESS_ENDED: Final = """
INSERT INTO runs(run_id, ended_at, body) SELECT ?, ?, ? WHERE NOT EXISTS (
    SELECT 1 FROM runs WHERE run_id = ? AND ended_at IS NOT NULL AND id > COALESCE(
        (SELECT MAX(id) FROM runs WHERE run_id = ? AND ended_at IS NULL), 0
    )
)
"""
"""A run's end row, unless the run's acceptance is already followed by an end row
(`actors.store._ops.end_unless_ended`)."""
