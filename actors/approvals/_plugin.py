"""The gateway's plugin approvals: each pending until an operator answers, its deadline
passes, or the run that asked for it ends.

`PluginApprovals` is the `runtime.loop.ApprovalGate` the gateway gives its runs (a tool call
a plugin's `before_tool_call` wants approved waits in `request`) and what the
`plugin.approval.*` methods read and change (`open`, `settle`, `wait`, `resolve`, `get`,
`pending`).

Who is asked: the operator connections whose scopes satisfy `operator.approvals`
(`operator.admin` satisfies every operator scope). They get `plugin.approval.requested` when
one is raised (except the connection that raised it with `plugin.approval.request`) and
`plugin.approval.resolved` when it ends, however it ended. When none is connected as one is
raised, it ends at once, undecided, `no-route` (OpenClaw: "no approval route"): a run's call
is refused then, never left waiting for no one.

How one ends (`TerminalReason`): `user` (an operator's decision: the first answer wins; the
same answer again is accepted and changes nothing; another is `ApprovalAlreadyResolved`; a
decision the request did not offer is `DecisionNotOffered`), `timeout` (its `timeoutMs`
passed), `no-route`, `run-aborted` (the run waiting on it was cancelled: chat.abort, agent
abort, its timeout, shutdown).

Event payloads, as OpenClaw's gateway sends them:
- `plugin.approval.requested`: `{approvalKind: "plugin", id, request, createdAtMs,
  expiresAtMs}`; `request` is the request record (`pluginId`, `title`, `description`,
  `severity`, `scope`, `detail`, `toolName`, `toolCallId`, `allowedDecisions`, `agentId`,
  `sessionKey`, `runId`, `turnSource*`; null where unknown);
- `plugin.approval.resolved`: `{id, decision, resolvedBy, ts, request, terminalReason}`:
  `decision` is the operator's, or `deny` when none was made (OpenClaw reports an expired or
  cancelled approval so); `terminalReason` (clawlane's addition, OpenClaw's
  `ApprovalTerminalReason` words) says which end it was.
Both are sent to this gateway's connections and, in a cluster, to the other nodes' (`peers`:
`ApprovalPeers`, the node's `transports.cluster` side, which tells them and forwards their
answers here); an approval raised while no operator is connected here waits when one is
connected on another node, and `pending_views` lists the other nodes' pending ones too.

Bounds: at most `MAX_PENDING` pending (more: `ApprovalsFull`; a run's call is then refused
as `no-route`); ended ones are kept 10 minutes (at most `MAX_ENDED`) to answer a repeated
resolve or a late `waitDecision`, then forgotten ("unknown or expired"). A deadline is kept
by whoever `settle`s the approval and, for those no one waits on (a client that asked and
went away), by the `run` task. `history` keeps the last `MAX_HISTORY` ended ones of the last
30 days in memory; with `records` (the store's `ApprovalRecords`, shared by a cluster's
nodes) each ended approval is also written there as it ends (`record`), and
`stored_history` / `lookup` read them back for `approval.history` / `approval.get`, across
restarts and nodes. A write the store cannot take at once (its channel full) is counted
(`statistics().unrecorded`) and logged, never waited for.

Everything runs in the trio thread; which calls are checkpoints is said on each.
"""

from __future__ import annotations

import collections
import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import attrs
import msgspec
import trio

from runtime.loop import (
    ApprovalDecision,
    ApprovalOutcome,
    TerminalReason,
    allowed_decisions,
    approval_timeout_ms,
)
from runtime.protocol import PluginApprovalRequestParams

from .._errors import ActorError, StoreError
from ..runs import EventHub, Subscriber

__all__ = [
    "APPROVALS_SCOPE",
    "HISTORY_TTL_MS",
    "MAX_ENDED",
    "MAX_PENDING",
    "ApprovalAlreadyResolved",
    "ApprovalNotFound",
    "ApprovalPeers",
    "ApprovalRecordStore",
    "ApprovalStatistics",
    "ApprovalsFull",
    "Approver",
    "DecisionNotOffered",
    "DeskPeers",
    "PluginApproval",
    "PluginApprovals",
]

log = logging.getLogger("clawlane.approvals")

APPROVALS_SCOPE: Final = "operator.approvals"
REQUESTED: Final = "plugin.approval.requested"
RESOLVED: Final = "plugin.approval.resolved"
MAX_PENDING: Final = 1024
MAX_ENDED: Final = 1024
ENDED_TTL_S: Final = 600.0
MAX_HISTORY: Final = 1000
HISTORY_TTL_MS: Final = 30 * 86_400_000
_REQUEST_KEYS: Final = (
    "pluginId",
    "title",
    "description",
    "scope",
    "detail",
    "severity",
    "toolName",
    "toolCallId",
    "allowedDecisions",
    "agentId",
    "sessionKey",
    "runId",
    "turnSourceChannel",
    "turnSourceTo",
    "turnSourceAccountId",
    "turnSourceThreadId",
)


class ApprovalNotFound(ActorError, LookupError):
    """No approval with this id is pending or recently ended."""


class ApprovalAlreadyResolved(ActorError):
    """The approval ended already, otherwise than by this same decision (`approval`)."""

    def __init__(self, approval: PluginApproval) -> None:
        super().__init__("approval already resolved")
        self.approval = approval


class DecisionNotOffered(ActorError, ValueError):
    """The request did not offer this decision (`allowed`: what it offers)."""

    def __init__(self, decision: str, allowed: tuple[ApprovalDecision, ...]) -> None:
        super().__init__(f"{decision} is unavailable for this plugin approval")
        self.allowed = allowed


class ApprovalsFull(ActorError):
    """`MAX_PENDING` approvals are pending already."""


class Approver(Subscriber, Protocol):
    """A connection as the approvals see it: who it is and where its events go."""

    role: str

    def has_scope(self, scope: str) -> bool: ...


class DeskPeers(Protocol):
    """The other nodes of a cluster, as a desk whose items an operator of any node sees
    uses them (the approvals, the questions: the node's `transports.cluster` side). `kind`
    names the desk (`exec`, `plugin`, `question`)."""

    def raised(self, kind: str, view: dict[str, Any]) -> None:
        """Tell the other nodes' operators an item was raised here (its view)."""
        ...

    def ended(self, kind: str, item_id: str, payload: dict[str, Any]) -> None:
        """Tell them it ended (the resolved event's payload)."""
        ...

    def pending_elsewhere(self, kind: str) -> list[dict[str, Any]]:
        """The views of the items of `kind` pending on the other nodes."""
        ...


class ApprovalPeers(DeskPeers, Protocol):
    """The other nodes of a cluster, as the approvals use them."""

    def approvers_elsewhere(self) -> int:
        """How many operators who may answer are connected to the other nodes."""
        ...

    def resolve_elsewhere(
        self, kind: str, approval_id: str, decision: ApprovalDecision, resolved_by: str | None
    ) -> bool:
        """Send an operator's decision to the node the approval is pending on (False: no
        other node has it pending). Its outcome is that node's resolved event."""
        ...


class ApprovalRecordStore(Protocol):
    """The store's `ApprovalRecords`, as the approvals use it (this package does not import
    the store)."""

    def record_nowait(
        self,
        record: dict[str, Any],
        *,
        on_commit: Callable[[StoreError | None], None] | None = None,
    ) -> None: ...

    async def history(
        self, *, kind: str | None, since_ms: int, offset: int, limit: int
    ) -> list[dict[str, Any]]: ...

    async def find(self, approval_id: str) -> dict[str, Any] | None: ...


def _wall_ms() -> int:
    return int(time.time() * 1000)


@attrs.define(eq=False)
class PluginApproval:
    """One approval: its request record, what it offers, its times, and how it ended."""

    id: str
    request: dict[str, Any]
    allowed: tuple[ApprovalDecision, ...]
    created_at_ms: int
    expires_at_ms: int
    deadline: float
    """When it expires, on trio's clock."""
    requested_by: str | None = None
    """The connection that raised it with `plugin.approval.request` (None: a run here)."""
    decision: ApprovalDecision | None = None
    reason: TerminalReason | None = None
    resolved_by: str | None = None
    ended_at: float = 0.0
    done: trio.Event = attrs.field(factory=trio.Event)
    kind: str = "plugin"
    """`plugin` or `exec` (`actors.approvals._exec`)."""
    ended_at_ms: int = 0
    """When it ended, wall clock (0: pending)."""
    grant_expires_in_days: int | None = None
    """The resolve's `grantExpiresInDays` (an allow-always that mints a standing grant)."""

    @property
    def pending(self) -> bool:
        return self.reason is None

    def view(self) -> dict[str, Any]:
        """The `plugin.approval.requested` payload, and an item of `plugin.approval.list`."""
        return {
            "approvalKind": self.kind,
            "id": self.id,
            "request": self.request,
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
        }

    def answer(self) -> dict[str, Any]:
        """The final answer of `plugin.approval.request` (`decision` null: none made)."""
        return {
            "id": self.id,
            "decision": self.decision,
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
        }

    def wait_answer(self) -> dict[str, Any]:
        """The answer of `plugin.approval.waitDecision`: `answer` and why it ended."""
        return {**self.answer(), "terminalReason": self.reason}

    def outcome(self) -> ApprovalOutcome:
        assert self.reason is not None, "a pending approval has no outcome"
        return ApprovalOutcome(self.decision, self.reason, self.id)

    def record(self) -> dict[str, Any]:
        """What the store keeps of an ended approval (`ApprovalRecordStore`)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "request": self.request,
            "allowedDecisions": list(self.allowed),
            "createdAtMs": self.created_at_ms,
            "expiresAtMs": self.expires_at_ms,
            "endedAtMs": self.ended_at_ms,
            "decision": self.decision,
            "terminalReason": self.reason,
            "resolvedBy": self.resolved_by,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PluginApproval:
        """An ended approval as the store kept it (`record`)."""
        approval = cls(
            id=str(record["id"]),
            request=dict(record.get("request") or {}),
            allowed=tuple(allowed_decisions(record.get("allowedDecisions"))),
            created_at_ms=int(record.get("createdAtMs") or 0),
            expires_at_ms=int(record.get("expiresAtMs") or 0),
            deadline=-math.inf,
            decision=record.get("decision"),
            reason=record.get("terminalReason") or "timeout",
            resolved_by=record.get("resolvedBy"),
            ended_at=-math.inf,
            kind=str(record.get("kind") or "plugin"),
            ended_at_ms=int(record.get("endedAtMs") or 0),
        )
        approval.done.set()
        return approval


@attrs.frozen
class ApprovalStatistics:
    pending: int
    raised: int
    allowed: int
    denied: int
    expired: int
    cancelled: int
    unrouted: int
    unrecorded: int = 0
    """Ended approvals the store could not take at once (not in `stored_history`)."""


def request_record(params: PluginApprovalRequestParams, run_id: str | None) -> dict[str, Any]:
    """OpenClaw's request record of `params` (every key present, null where unknown)."""
    given = msgspec.to_builtins(params)
    record = {key: given.get(key) for key in _REQUEST_KEYS}
    record["allowedDecisions"] = list(allowed_decisions(given.get("allowedDecisions")))
    record["runId"] = run_id
    return record


class PluginApprovals:
    """The pending and recently ended plugin approvals of one gateway (see the module
    docstring). `connections`: the gateway's, by id, read when an approval is raised or
    ends."""

    KIND: str = "plugin"
    REQUESTED: str = REQUESTED
    RESOLVED: str = RESOLVED

    def __init__(
        self,
        hub: EventHub,
        connections: Mapping[str, Approver],
        *,
        now_ms: Callable[[], int] = _wall_ms,
        records: ApprovalRecordStore | None = None,
    ) -> None:
        self._hub = hub
        self._connections = connections
        self._now_ms = now_ms
        self.records = records
        """Where ended approvals are kept (None: in memory only)."""
        self.peers: ApprovalPeers | None = None
        """The other nodes of the cluster (None: this gateway alone)."""
        self._pending: dict[str, PluginApproval] = {}
        self._ended: collections.OrderedDict[str, PluginApproval] = collections.OrderedDict()
        self._history: collections.deque[PluginApproval] = collections.deque(maxlen=MAX_HISTORY)
        self._changed = trio.Event()
        self._counts: collections.Counter[str] = collections.Counter()

    # --- who is asked ----------------------------------------------------------------------

    def approvers(self, exclude: str | None = None) -> list[Approver]:
        """The connections that may answer (all but `exclude`). Not a checkpoint."""
        return [
            c
            for c in self._connections.values()
            if c.role == "operator" and c.has_scope(APPROVALS_SCOPE) and c.conn_id != exclude
        ]

    # --- raising and waiting -----------------------------------------------------------------

    def open(
        self,
        params: PluginApprovalRequestParams,
        *,
        run_id: str | None = None,
        requested_by: str | None = None,
    ) -> PluginApproval:
        """Raise an approval and tell the operators who may answer it; with none of them
        connected it has ended already (`no-route`) when this returns. Raises
        `ApprovalsFull`. Not a checkpoint."""
        return self._raise(
            request_record(params, run_id),
            allowed_decisions(params.allowedDecisions),
            approval_timeout_ms(params.timeoutMs),
            requested_by=requested_by,
        )

    def _raise(
        self,
        record: dict[str, Any],
        allowed: tuple[ApprovalDecision, ...],
        timeout_ms: int,
        *,
        requested_by: str | None,
        approval_id: str | None = None,
    ) -> PluginApproval:
        """Raise one approval of this registry's kind (see `open`). Not a checkpoint."""
        if len(self._pending) >= MAX_PENDING:
            raise ApprovalsFull(f"{MAX_PENDING} {self.KIND} approvals are pending already")
        now = self._now_ms()
        approval = PluginApproval(
            id=approval_id or f"{self.KIND}:{uuid.uuid4()}",
            request=record,
            allowed=allowed,
            created_at_ms=now,
            expires_at_ms=now + timeout_ms,
            deadline=trio.current_time() + timeout_ms / 1000,
            requested_by=requested_by,
            kind=self.KIND,
        )
        self._pending[approval.id] = approval
        self._counts["raised"] += 1
        targets = self.approvers(exclude=requested_by)
        elsewhere = self.peers.approvers_elsewhere() if self.peers is not None else 0
        if not targets and not elsewhere:
            self._end(approval, None, "no-route")
            return approval
        if targets:
            self._hub.send_to(targets, self.REQUESTED, approval.view())
        if self.peers is not None:
            self.peers.raised(self.KIND, approval.view())
        self._changed.set()
        return approval

    async def settle(self, approval: PluginApproval) -> PluginApproval:
        """Wait for `approval` to end, at most to its deadline (it then expires: `timeout`).
        A checkpoint; cancelled, the approval is left as it is."""
        with trio.move_on_at(approval.deadline):
            await approval.done.wait()
        self._end(approval, None, "timeout")  # nothing when it ended already
        return approval

    async def wait(self, approval: PluginApproval) -> PluginApproval:
        """Wait for `approval` to end, however it ends. A checkpoint; cancellable."""
        await approval.done.wait()
        return approval

    async def request(self, params: PluginApprovalRequestParams, *, run_id: str) -> ApprovalOutcome:
        """`runtime.loop.ApprovalGate`: raise an approval for a run's tool call and wait for
        its end. A checkpoint; cancelled (the run aborted), it ends `run-aborted` (the
        operators are told) and the cancellation propagates."""
        try:
            approval = self.open(params, run_id=run_id)
        except ApprovalsFull:
            await trio.lowlevel.checkpoint()
            return ApprovalOutcome(None, "no-route")
        try:
            await self.settle(approval)
        except trio.Cancelled:
            self._end(approval, None, "run-aborted")
            raise
        return approval.outcome()

    # --- answering ---------------------------------------------------------------------------

    def resolve(
        self,
        approval_id: str,
        decision: ApprovalDecision,
        *,
        resolved_by: str | None,
        grant_expires_in_days: int | None = None,
    ) -> bool:
        """An operator's `decision`: True when it ended the approval, False when it repeats
        the decision that did. Raises `ApprovalNotFound`, `ApprovalAlreadyResolved`,
        `DecisionNotOffered`. Not a checkpoint."""
        approval = self.get(approval_id)
        if approval is None:
            raise ApprovalNotFound(f"unknown or expired approval id {approval_id!r}")
        if not approval.pending:
            if approval.reason == "user" and approval.decision == decision:
                return False
            raise ApprovalAlreadyResolved(approval)
        if decision not in approval.allowed:
            raise DecisionNotOffered(decision, approval.allowed)
        approval.grant_expires_in_days = grant_expires_in_days
        self._end(approval, decision, "user", resolved_by)
        return True

    def _end(
        self,
        approval: PluginApproval,
        decision: ApprovalDecision | None,
        reason: TerminalReason,
        resolved_by: str | None = None,
    ) -> None:
        """End a pending approval (nothing when it ended already) and tell the operators."""
        if not approval.pending:
            return
        approval.decision, approval.reason, approval.resolved_by = decision, reason, resolved_by
        approval.ended_at = trio.current_time()
        approval.ended_at_ms = self._now_ms()
        self._history.appendleft(approval)
        self._pending.pop(approval.id, None)
        self._remember(approval)
        self._record(approval)
        self._counts[_COUNTED[reason] if decision is None else _COUNTED[decision]] += 1
        approval.done.set()
        if reason == "no-route":
            return  # no one was told it was raised
        payload = {
            "id": approval.id,
            "decision": decision or "deny",
            "resolvedBy": resolved_by,
            "ts": self._now_ms(),
            "request": approval.request,
            "terminalReason": reason,
        }
        targets = self.approvers()
        if targets:
            self._hub.send_to(targets, self.RESOLVED, payload)
        if self.peers is not None:
            self.peers.ended(self.KIND, approval.id, payload)

    def _record(self, approval: PluginApproval) -> None:
        """Hand the ended `approval` to the store (when there is one), never waiting."""
        if self.records is None:
            return

        def committed(error: StoreError | None) -> None:
            if error is not None:
                log.warning("approval %s: not recorded: %s", approval.id, error)

        try:
            self.records.record_nowait(approval.record(), on_commit=committed)
        except (trio.WouldBlock, StoreError) as exc:
            self._counts["unrecorded"] += 1
            log.warning("approval %s: not recorded: %s", approval.id, exc or "store busy")

    def _remember(self, approval: PluginApproval) -> None:
        ended = self._ended
        ended[approval.id] = approval
        horizon = approval.ended_at - ENDED_TTL_S
        while ended and (len(ended) > MAX_ENDED or next(iter(ended.values())).ended_at < horizon):
            ended.popitem(last=False)

    # --- reading -----------------------------------------------------------------------------

    def get(self, approval_id: str) -> PluginApproval | None:
        """A pending approval, or one that ended in the last 10 minutes. Not a checkpoint."""
        approval = self._pending.get(approval_id)
        if approval is None:
            approval = self._ended.get(approval_id)
            if approval is not None and approval.ended_at < trio.current_time() - ENDED_TTL_S:
                return None
        return approval

    def history(self) -> list[PluginApproval]:
        """The ended approvals of the last 30 days (at most `MAX_HISTORY`), newest first,
        kept as long as this gateway runs. Not a checkpoint."""
        horizon = self._now_ms() - HISTORY_TTL_MS
        return [a for a in self._history if a.ended_at_ms >= horizon]

    def find(self, approval_id: str) -> PluginApproval | None:
        """A pending approval or one in `history`. Not a checkpoint."""
        found = self.get(approval_id)
        if found is None:
            found = next((a for a in self.history() if a.id == approval_id), None)
        return found

    def pending(self) -> list[PluginApproval]:
        """The pending approvals, oldest first. Not a checkpoint."""
        return list(self._pending.values())

    def pending_views(self) -> list[dict[str, Any]]:
        """The views of the pending approvals, this gateway's and (in a cluster) the
        other nodes'. Not a checkpoint."""
        views = [approval.view() for approval in self.pending()]
        if self.peers is not None:
            views += self.peers.pending_elsewhere(self.KIND)
        return views

    def notify(self, event: str, payload: dict[str, Any]) -> None:
        """Send another node's approval event to this gateway's operators who may answer.
        Not a checkpoint."""
        targets = self.approvers()
        if targets:
            self._hub.send_to(targets, event, payload)

    async def stored_history(
        self, *, offset: int, limit: int, every_kind: bool = False
    ) -> list[PluginApproval]:
        """A page of the ended approvals of this kind (`every_kind`: of every kind the
        store keeps) of the last 30 days, newest first: the store's (every node's, across
        restarts) when there is one, else `history`. A checkpoint; raises `StoreError`."""
        if self.records is None:
            await trio.lowlevel.checkpoint()
            return self.history()[offset : offset + limit]
        since = self._now_ms() - HISTORY_TTL_MS
        kind = None if every_kind else self.KIND
        found = await self.records.history(kind=kind, since_ms=since, offset=offset, limit=limit)
        return [PluginApproval.from_record(record) for record in found]

    async def lookup(self, approval_id: str) -> PluginApproval | None:
        """`find`, then the store's records of the last 30 days. A checkpoint; raises
        `StoreError`."""
        found = self.find(approval_id)
        if found is not None or self.records is None:
            await trio.lowlevel.checkpoint()
            return found
        record = await self.records.find(approval_id)
        if record is None or record.get("kind") != self.KIND:
            return None
        approval = PluginApproval.from_record(record)
        if approval.ended_at_ms < self._now_ms() - HISTORY_TTL_MS:
            return None
        return approval

    def statistics(self) -> ApprovalStatistics:
        c = self._counts
        return ApprovalStatistics(
            pending=len(self._pending),
            raised=c["raised"],
            allowed=c["allowed"],
            denied=c["denied"],
            expired=c["expired"],
            cancelled=c["cancelled"],
            unrouted=c["unrouted"],
            unrecorded=c["unrecorded"],
        )

    # --- deadlines no one waits on -----------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Expire the approvals whose deadline passed, for the gateway's lifetime. Never
        returns; cancel it to stop."""
        task_status.started()
        while True:
            self._changed = trio.Event()
            deadline = min((a.deadline for a in self._pending.values()), default=math.inf)
            with trio.move_on_at(deadline):
                await self._changed.wait()
            now = trio.current_time()
            for approval in [a for a in self._pending.values() if a.deadline <= now]:
                self._end(approval, None, "timeout")


_COUNTED: Final[Mapping[str, str]] = {
    "allow-once": "allowed",
    "allow-always": "allowed",
    "deny": "denied",
    "timeout": "expired",
    "run-aborted": "cancelled",
    "no-route": "unrouted",
    "user": "denied",
}
