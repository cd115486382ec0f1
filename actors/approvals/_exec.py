"""The gateway's exec approvals: a command the exec policy wants an operator to allow
(`runtime.tools.guard_exec`), or a client's `exec.approval.request`; and the host approvals
document the policy reads and allow-always writes.

`ExecApprovals` is `PluginApprovals` for the `exec` kind (the same registry rules: first answer
wins, ended ones remembered 10 minutes, at most `MAX_PENDING`, the operators holding
`operator.approvals` told), with OpenClaw's exec events and defaults:

- `exec.approval.requested`: `{approvalKind: "exec", id, request, createdAtMs, expiresAtMs}`,
  `request` being OpenClaw's record (`command`, `cwd`, `host`, `security`, `ask`, `agentId`,
  `resolvedPath`, `sessionKey`, `runId`, `allowedDecisions`);
- `exec.approval.resolved`: `{id, decision, resolvedBy, ts, request, terminalReason}`;
- a request's timeout defaults to 30 minutes (OpenClaw's `DEFAULT_EXEC_APPROVAL_TIMEOUT_MS`);
  with no operator connected that could answer, it ends at once (`no-route`) and the exec
  policy's `askFallback` settles it. One no one waits on (its client went away) expires when
  the approvals are next read (`get`, `pending`), or by `run` where the host runs it.

As the runs' `runtime.tools.ExecApprover` it also reads the document (`document`) and adds
allow-always entries to the agent's allowlist (`allow_always`), through the store's
`ExecApprovalsDocument` (given as `ApprovalsDocument`: this package does not import the store).

A cron job's run (`cron_runs`, registered by the scheduler) is asked differently when the
gateway keeps standing grants (`grants`, `_grants`): a grant for the same job and operation
lets the exec go without a prompt; otherwise the approval carries the `standing-grant`
scope line and `allow-always` mints a grant instead of an allowlist entry.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import trio

from runtime.loop import ApprovalDecision
from runtime.tools import DEFAULT_EXEC_APPROVAL_TIMEOUT_MS, ExecAnswer, ExecAsk

from .._errors import StoreError
from ..runs import EventHub
from ._grants import CronRuns, StandingGrants, grant_binding
from ._plugin import (
    ApprovalRecordStore,
    ApprovalsFull,
    Approver,
    PluginApproval,
    PluginApprovals,
    _wall_ms,
)

__all__ = ["ApprovalsDocument", "ExecApprovals", "exec_request_record"]

log = logging.getLogger("clawlane.approvals")

_EXEC_KEYS: Final = (
    "command",
    "commandArgv",
    "cwd",
    "nodeId",
    "host",
    "security",
    "ask",
    "warningText",
    "agentId",
    "resolvedPath",
    "sessionKey",
    "sessionId",
    "runId",
    "toolCallId",
    "turnSourceChannel",
    "turnSourceTo",
    "turnSourceAccountId",
    "turnSourceThreadId",
    "scope",
)
_ALL: Final[tuple[ApprovalDecision, ...]] = ("allow-once", "allow-always", "deny")
_ONCE: Final[tuple[ApprovalDecision, ...]] = ("allow-once", "deny")


class ApprovalsDocument(Protocol):
    """The store's `ExecApprovalsDocument`, as the approvals use it."""

    @property
    def where(self) -> str: ...

    async def get(self) -> tuple[dict[str, Any] | None, str | None]: ...

    async def set(self, file: dict[str, Any], base_hash: str | None) -> str: ...

    async def update(
        self, change: Callable[[dict[str, Any]], dict[str, Any] | None]
    ) -> tuple[dict[str, Any], str] | None: ...


def exec_request_record(given: Mapping[str, Any]) -> dict[str, Any]:
    """OpenClaw's exec request record of `given` (its keys, null where unknown)."""
    record = {key: given.get(key) for key in _EXEC_KEYS}
    for key in ("commandArgv", "scope"):
        if record[key] is None:
            del record[key]  # present only when given, never null
    record["allowedDecisions"] = list(_allowed(given))
    return record


def _allowed(given: Mapping[str, Any]) -> tuple[ApprovalDecision, ...]:
    listed = given.get("allowedDecisions")
    if listed is not None:
        return tuple(d for d in _ALL if d in listed) or _ONCE
    if "allow-always" in (given.get("unavailableDecisions") or ()):
        return _ONCE
    return _ALL


class ExecApprovals(PluginApprovals):
    """The exec approvals of one gateway (see the module docstring)."""

    KIND = "exec"
    REQUESTED = "exec.approval.requested"
    RESOLVED = "exec.approval.resolved"

    def __init__(
        self,
        hub: EventHub,
        connections: Mapping[str, Approver],
        document: ApprovalsDocument | None,
        *,
        now_ms: Callable[[], int] = _wall_ms,
        records: ApprovalRecordStore | None = None,
        grants: StandingGrants | None = None,
    ) -> None:
        super().__init__(hub, connections, now_ms=now_ms, records=records)
        self._document = document
        self.ask_timeout_ms: int | None = None
        """How long a run's exec waits for a decision (None: the request's, 30 minutes)."""
        self.cron_runs = CronRuns()
        """The cron runs in progress (the scheduler registers each firing's run)."""
        self.grants = grants
        """The standing grants for cron runs (None: a cron run is asked as any other)."""

    def open_exec(
        self,
        given: Mapping[str, Any],
        *,
        timeout_ms: int | None = None,
        requested_by: str | None = None,
        approval_id: str | None = None,
    ) -> PluginApproval:
        """Raise an exec approval from a request record's fields (`given`: OpenClaw's keys).
        Raises `ApprovalsFull`. Not a checkpoint."""
        record = exec_request_record(given)
        return self._raise(
            record,
            tuple(record["allowedDecisions"]),
            timeout_ms or DEFAULT_EXEC_APPROVAL_TIMEOUT_MS,
            requested_by=requested_by,
            approval_id=approval_id,
        )

    # --- deadlines no one waits on: checked as the approvals are read ----------------------

    def _expire_overdue(self) -> None:
        now = trio.current_time()
        for approval in [a for a in self._pending.values() if a.deadline <= now]:
            self._end(approval, None, "timeout")

    def get(self, approval_id: str) -> PluginApproval | None:
        """`PluginApprovals.get`, after expiring the overdue ones (a client that raised one
        and went away leaves no one waiting on it). Not a checkpoint."""
        self._expire_overdue()
        return super().get(approval_id)

    def pending(self) -> list[PluginApproval]:
        self._expire_overdue()
        return super().pending()

    # --- the host approvals document -----------------------------------------------------

    @property
    def document_where(self) -> str:
        """Where the document is kept (`exec.approvals.get`'s `path`)."""
        return self._document.where if self._document is not None else "(none)"

    async def read_document(self) -> tuple[dict[str, Any] | None, str | None]:
        """The stored document and its hash (`(None, None)`: none). A checkpoint."""
        if self._document is None:
            await trio.lowlevel.checkpoint()
            return None, None
        return await self._document.get()

    async def write_document(self, file: dict[str, Any], base_hash: str | None) -> str:
        """Replace the document whose hash is `base_hash`; the store's `ExecApprovalsChanged`
        when it moved on. A checkpoint."""
        if self._document is None:
            raise ApprovalsFull("this gateway keeps no exec approvals document")
        return await self._document.set(file, base_hash)

    # --- runtime.tools.ExecApprover ------------------------------------------------------

    async def document(self) -> Mapping[str, Any] | None:
        if self._document is None:
            await trio.lowlevel.checkpoint()
            return None
        file, _ = await self._document.get()
        return file

    async def ask(self, request: ExecAsk) -> ExecAnswer:
        """Raise the approval for a run's command and wait for its end (a cron run's exec a
        standing grant covers goes at once: `standing-grant`). A checkpoint; cancelled (the
        run aborted), it ends `run-aborted` and the cancellation goes on."""
        source = self.cron_runs.get(request.run_id)
        grants = self.grants
        binding = None
        record = request.record()
        if (
            grants is not None
            and source is not None
            and source.agent_id == request.agent_id
            and request.allow_always
            and request.ask != "always"
        ):
            binding = grant_binding(request.command, request.cwd, request.env)
            try:
                used = await grants.use(source, binding)
            except StoreError as exc:
                log.warning("standing grants unreadable, asking: %s", exc)
                used = "no-grant"
            if used == "consumed":
                return ExecAnswer("allow-once", "standing-grant", None, granted=True)
            record["scope"] = grants.scope(source, request.command)
        try:
            timeout_ms = self.ask_timeout_ms or request.timeout_ms
            approval = self.open_exec(record, timeout_ms=timeout_ms)
        except ApprovalsFull:
            await trio.lowlevel.checkpoint()
            return ExecAnswer(None, "no-route")
        try:
            await self.settle(approval)
        except trio.Cancelled:
            self._end(approval, None, "run-aborted")
            raise
        granted = False
        if approval.decision == "allow-always" and binding is not None:
            assert grants is not None and source is not None
            try:
                minted = await grants.mint(
                    approval.id, source, binding, approval.grant_expires_in_days
                )
            except StoreError as exc:
                log.warning("approval %s: standing grant not minted: %s", approval.id, exc)
                minted = None
            granted = True  # allowed once either way; never an allowlist entry
            if minted is None:
                log.info("approval %s: the job changed since it fired, no grant", approval.id)
        return ExecAnswer(
            approval.decision, approval.reason or "timeout", approval.id, granted=granted
        )

    async def allow_always(self, agent_id: str, entries: Sequence[dict[str, Any]]) -> None:
        """Add `entries` to `agent_id`'s allowlist (those it has already are skipped)."""
        if self._document is None:
            await trio.lowlevel.checkpoint()
            return

        def add(file: dict[str, Any]) -> dict[str, Any] | None:
            agents = file.setdefault("agents", {})
            agent = agents.setdefault(agent_id, {})
            allowlist = agent.setdefault("allowlist", [])
            have = {(e.get("pattern"), e.get("argPattern")) for e in allowlist}
            fresh = [e for e in entries if (e["pattern"], e.get("argPattern")) not in have]
            if not fresh:
                return None
            now = self._now_ms()
            allowlist.extend({"id": str(uuid.uuid4()), **e, "lastUsedAt": now} for e in fresh)
            return file

        await self._document.update(add)
