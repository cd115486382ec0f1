"""The exec approval methods, the host approvals document, and the kind-agnostic approvals, on
the gateway's `actors.ExecApprovals` (and its `PluginApprovals` for `approval.*`):

- `exec.approvals.get` (scope `operator.admin`): `{path, exists, hash, file, resolvedDefaults}`
  as OpenClaw answers it: the document (`{version: 1, defaults: {}, agents: {}}` when none is
  stored), the hash to write it back with, and its defaults with OpenClaw's filled in.
  A socket token is never sent back.
- `exec.approvals.set` (`{file, baseHash}`, `operator.admin`): replace the document. A stored
  one needs `baseHash` ("exec approvals base hash required; re-run exec.approvals.get and
  retry"); a stale hash is refused ("exec approvals changed since last load; ..."), both
  `INVALID_REQUEST`; a policy value OpenClaw does not have, an empty pattern, an argPattern
  that does not compile: `INVALID_REQUEST` naming the field. Answers as `get`.
- `exec.approval.request` (`ExecApprovalRequestParams`): a client raises an exec approval
  (`command` required; `timeoutMs` default 30 minutes; `twoPhase` as `plugin.approval.request`);
  answers `{id, decision, createdAtMs, expiresAtMs}` once it ends.
- `exec.approval.waitDecision` (`{id}`), `exec.approval.resolve` (`{id, decision}`),
  `exec.approval.list`, `exec.approval.get` (`{id}`): as the plugin approval methods, for the
  exec kind (same errors: `invalid decision`, `unknown or expired approval id`,
  `approval already resolved`).
- `approval.get` (`{id}`), `approval.resolve` (`{id, kind, decision}`), `approval.history`
  (`{kind?, limit?, cursor?}`): OpenClaw's kind-agnostic views (`{approval}` snapshots with
  `status` pending / allowed / denied / expired / cancelled, `presentation`, `urlPath`);
  `approval.resolve` answers `{applied, approval}`: `applied` false when another answer
  ended it first (first answer wins) or the same answer is repeated. History: the approvals
  that ended in the last 30 days, newest first, as the store keeps them (every node's of a
  cluster, across restarts; `actors.ApprovalRecords`).
- `exec.approval.grants.list` / `.revoke`: the standing grants for cron runs (`_exec_grants`);
  `exec.approval.resolve` and `approval.resolve` take `grantExpiresInDays` for the grant an
  allow-always on a cron run's approval mints.

Every approval method but the document's needs `operator.approvals` (`operator.admin`
satisfies it): without it the call is refused before anything happens.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, Final
from urllib.parse import quote

import msgspec
import trio

from actors import (
    ApprovalAlreadyResolved,
    ApprovalNotFound,
    ApprovalRecords,
    ApprovalsFull,
    DecisionNotOffered,
    ExecApprovals,
    ExecApprovalsChanged,
    ExecApprovalsDocument,
    PluginApproval,
    PluginApprovals,
    StandingGrants,
    StoreError,
)
from runtime.loop import APPROVAL_DECISIONS, ApprovalDecision
from runtime.protocol import (
    INVALID_REQUEST,
    UNAVAILABLE,
    ApprovalGetParams,
    ApprovalHistoryParams,
    ApprovalResolveParams,
    ExecApprovalGetParams,
    ExecApprovalRequestParams,
    ExecApprovalResolveParams,
    ExecApprovalsGetParams,
    ExecApprovalsSetParams,
    GatewayError,
    invalid_request,
)
from runtime.tools import ExecPolicy, ToolPolicyError, validate_document

from . import _exec_grants
from ._approvals import WaitDecisionParams, answer_decided, ended_already
from ._clients import EmptyParams
from ._context import Call, Host, MethodTable

__all__ = ["exec_desk", "register"]

_NOT_FOUND_DETAILS: Final = {
    "reason": "APPROVAL_NOT_FOUND",
    "remediation": "Re-request the action; pending approvals are cleared after expiry or restart.",
}
_EMPTY_HASH: Final = "0" * 64
_DEFAULT_HISTORY_LIMIT: Final = 50


def register(methods: MethodTable, host: Host) -> None:
    """Add the methods, and give the host's runs its exec approvals (`exec_desk`)."""
    methods.advertise("exec.approval.requested", "exec.approval.resolved")
    exec_desk(host)
    methods.add("exec.approvals.get", approvals_get, ExecApprovalsGetParams)
    methods.add("exec.approvals.set", approvals_set, ExecApprovalsSetParams)
    methods.add("exec.approval.request", exec_request, ExecApprovalRequestParams)
    methods.add("exec.approval.waitDecision", exec_wait, WaitDecisionParams)
    methods.add("exec.approval.resolve", exec_resolve, ExecApprovalResolveParams)
    methods.add("exec.approval.get", exec_get, ExecApprovalGetParams)
    methods.add("exec.approval.list", exec_list, EmptyParams)
    methods.add("approval.get", approval_get, ApprovalGetParams)
    methods.add("approval.resolve", approval_resolve, ApprovalResolveParams)
    methods.add("approval.history", approval_history, ApprovalHistoryParams)
    _exec_grants.register(methods)


class _LiveConnections(Mapping[str, Any]):
    """The host's connections as they are when read (the gateway fills them later)."""

    def __init__(self, host: Host) -> None:
        self._host = host

    def __getitem__(self, key: str) -> Any:
        return self._host.process.connections[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._host.process.connections)

    def __len__(self) -> int:
        return len(self._host.process.connections)


def _job_name(host: Host, job_id: str) -> str | None:
    cron = host.actors.cron
    job = cron.jobs.get(job_id) if cron is not None else None
    return job.name if job is not None else None


def exec_desk(host: Host) -> ExecApprovals:
    """The host's `ExecApprovals` (made at the first call, over the document, the approval
    records and the standing grants in its supervisor's store): what its runs' exec asks
    (`TurnServices.exec_approver`). The plugin approvals record their ended ones in the
    same store."""
    supervisor = host.actors.supervisor
    services = supervisor.services
    desk = services.exec_approver
    if not isinstance(desk, ExecApprovals):
        document = ExecApprovalsDocument(supervisor.store)
        records = ApprovalRecords(supervisor.store)
        grants = StandingGrants(
            records,
            now_ms=_wall_ms,
            job_names=lambda job_id: _job_name(host, job_id),
            expiry_days=lambda: supervisor.generation.config.tools.exec.grantExpiryDays,
        )
        desk = ExecApprovals(
            host.actors.hub, _LiveConnections(host), document, records=records, grants=grants
        )
        services.exec_approver = desk
        plugin = getattr(host.actors, "approvals", None)  # made after the methods
        if isinstance(plugin, PluginApprovals):
            plugin.records = records
    return desk


def _wall_ms() -> int:
    return int(time.time() * 1000)


def _exec(call: Call) -> ExecApprovals:
    return exec_desk(call.gateway)


# --- the host approvals document ------------------------------------------------------------


def _resolved_defaults(file: dict[str, Any]) -> dict[str, Any]:
    defaults = ExecPolicy().view()
    given = file.get("defaults") or {}
    return {key: given.get(key, value) for key, value in defaults.items()}


def _redacted(file: dict[str, Any]) -> dict[str, Any]:
    socket = file.get("socket")
    if isinstance(socket, dict) and "token" in socket:
        file = {**file, "socket": {k: v for k, v in socket.items() if k != "token"}}
    return file


async def _snapshot(call: Call) -> dict[str, Any]:
    approvals = _exec(call)
    file, hash_ = await approvals.read_document()
    exists = file is not None
    shown = file if file is not None else {"version": 1, "defaults": {}, "agents": {}}
    return {
        "path": approvals.document_where,
        "exists": exists,
        "hash": hash_ if hash_ is not None else _EMPTY_HASH,
        "file": _redacted(shown),
        "resolvedDefaults": _resolved_defaults(shown),
    }


async def approvals_get(call: Call, params: ExecApprovalsGetParams) -> dict[str, Any]:
    return await _snapshot(call)


def _changed() -> GatewayError:
    return invalid_request(
        "exec approvals changed since last load; re-run exec.approvals.get and retry"
    )


async def approvals_set(call: Call, params: ExecApprovalsSetParams) -> dict[str, Any]:
    file = msgspec.to_builtins(params.file)
    try:
        validate_document(file)
    except ToolPolicyError as exc:
        raise invalid_request(str(exc)) from exc
    base = params.baseHash if isinstance(params.baseHash, str) else None
    approvals = _exec(call)
    _, current = await approvals.read_document()
    if current is None:
        if base is not None and base != _EMPTY_HASH:
            raise _changed()
    elif base is None:
        raise invalid_request(
            "exec approvals base hash required; re-run exec.approvals.get and retry"
        )
    elif base != current:
        raise _changed()
    try:
        await approvals.write_document(file, current)
    except ExecApprovalsChanged as exc:
        raise _changed() from exc
    return await _snapshot(call)


# --- exec approvals -------------------------------------------------------------------------


def _not_found() -> GatewayError:
    return GatewayError(
        INVALID_REQUEST, "unknown or expired approval id", details=dict(_NOT_FOUND_DETAILS)
    )


def _decision(value: str) -> ApprovalDecision:
    for decision in APPROVAL_DECISIONS:
        if value == decision:
            return decision
    raise invalid_request("invalid decision")


def resolve_in(
    call: Call,
    registry: PluginApprovals,
    approval_id: str,
    decision: ApprovalDecision,
    grant_days: int | None = None,
) -> bool:
    """An operator's decision on `registry`'s approval, OpenClaw's errors for the others
    (`grant_days`: the lifetime of the standing grant an allow-always mints)."""
    resolved_by = getattr(call.conn, "client_id", None) or None
    try:
        return registry.resolve(
            approval_id, decision, resolved_by=resolved_by, grant_expires_in_days=grant_days
        )
    except ApprovalNotFound as exc:
        raise _not_found() from exc
    except ApprovalAlreadyResolved as exc:
        raise GatewayError(
            INVALID_REQUEST,
            "approval already resolved",
            details={"reason": "APPROVAL_ALREADY_RESOLVED"},
        ) from exc
    except DecisionNotOffered as exc:
        raise invalid_request(
            f"{decision} is unavailable for this approval", allowedDecisions=list(exc.allowed)
        ) from exc


async def exec_request(call: Call, params: ExecApprovalRequestParams) -> dict[str, Any]:
    given = msgspec.to_builtins(params)
    command = given.get("command") or " ".join(given.get("commandArgv") or ())
    if not command.strip():
        raise invalid_request("command is required")
    given["command"] = command
    approvals = _exec(call)
    approval_id = given.get("id")
    if approval_id is not None and approvals.find(approval_id) is not None:
        raise invalid_request("approval id already exists")
    try:
        approval = approvals.open_exec(
            given,
            timeout_ms=given.get("timeoutMs"),
            requested_by=call.conn.conn_id,
            approval_id=approval_id,
        )
    except ApprovalsFull as exc:
        raise GatewayError(UNAVAILABLE, str(exc), retryable=True) from exc
    return await answer_decided(call, approvals, approval, two_phase=params.twoPhase is True)


async def exec_wait(call: Call, params: WaitDecisionParams) -> dict[str, Any]:
    approval = _exec(call).get(params.id.strip())
    if approval is None:
        raise invalid_request("approval expired or not found")
    await _exec(call).wait(approval)
    return approval.wait_answer()


async def exec_resolve(call: Call, params: ExecApprovalResolveParams) -> dict[str, Any]:
    decision = _decision(params.decision)
    if params.reviewer is not msgspec.UNSET:
        raise _not_found()  # a chat channel's reviewer: none here to vouch for one
    if not await ended_already(_exec(call), params.id, decision):
        resolve_in(call, _exec(call), params.id, decision, _days(params.grantExpiresInDays))
    await trio.lowlevel.checkpoint()
    return {"ok": True}


def _days(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _exec_details(approval: PluginApproval) -> dict[str, Any]:
    """OpenClaw's `exec.approval.get` answer: what a prompt shows of a pending approval (the
    ACP bridge builds `session/request_permission` options from `allowedDecisions`)."""
    request = approval.request
    command = str(request.get("command") or "")
    preview = str(request.get("commandPreview") or "").strip()
    return {
        "id": approval.id,
        "commandText": command,
        "commandPreview": preview if preview and preview != command else None,
        "allowedDecisions": list(approval.allowed),
        "host": request.get("host"),
        "nodeId": request.get("nodeId"),
        "agentId": request.get("agentId"),
        "expiresAtMs": approval.expires_at_ms,
    }


async def exec_get(call: Call, params: ExecApprovalGetParams) -> dict[str, Any]:
    approval = await _lookup(_exec(call), params.id)
    if approval is None or not approval.pending:  # OpenClaw's answers pending ones only
        raise _not_found()
    return _exec_details(approval)


async def exec_list(call: Call, params: EmptyParams) -> list[dict[str, Any]]:
    await trio.lowlevel.checkpoint()
    return _exec(call).pending_views()


# --- kind-agnostic approvals ----------------------------------------------------------------


def _presentation(approval: PluginApproval) -> dict[str, Any]:
    request = approval.request
    allowed = list(approval.allowed)
    if approval.kind == "exec":
        view = {
            "kind": "exec",
            "commandText": request.get("command") or "(command)",
            "host": request.get("host"),
            "agentId": request.get("agentId") or None,
            "allowedDecisions": allowed,
        }
        if isinstance(request.get("scope"), dict):
            view["scope"] = request["scope"]
        return view
    return {
        "kind": "plugin",
        "title": request.get("title") or "",
        "description": request.get("description") or "",
        "severity": request.get("severity") or "warning",
        "pluginId": request.get("pluginId"),
        "toolName": request.get("toolName"),
        "agentId": request.get("agentId"),
        "allowedDecisions": allowed,
    }


def snapshot(approval: PluginApproval) -> dict[str, Any]:
    """OpenClaw's `ApprovalSnapshot` of `approval`."""
    out: dict[str, Any] = {
        "id": approval.id,
        "urlPath": f"/approve/{quote(approval.id, safe='')}",
        "createdAtMs": approval.created_at_ms,
        "expiresAtMs": approval.expires_at_ms,
        "presentation": _presentation(approval),
    }
    if approval.pending:
        return {**out, "status": "pending"}
    out["resolvedAtMs"] = approval.ended_at_ms
    source = {k: approval.request.get(k) for k in ("agentId", "sessionKey")}
    if any(source.values()):
        out["source"] = {k: v for k, v in source.items() if v}
    reason = approval.reason
    if reason == "user":
        who = approval.resolved_by
        out["resolver"] = {"kind": "device", "id": who} if who else {"kind": "device"}
    else:
        out["resolver"] = {"kind": "system"}
    if reason == "user" and approval.decision in ("allow-once", "allow-always"):
        return {**out, "status": "allowed", "decision": approval.decision, "reason": "user"}
    if reason in ("user", "no-route"):
        return {**out, "status": "denied", "decision": "deny", "reason": reason}
    if reason == "timeout":
        return {**out, "status": "expired", "reason": "timeout"}
    return {**out, "status": "cancelled", "reason": "run-aborted"}


def _registries(call: Call) -> dict[str, PluginApprovals]:
    return {"exec": _exec(call), "plugin": call.gateway.actors.approvals}


async def _lookup(registry: PluginApprovals, approval_id: str) -> PluginApproval | None:
    try:
        return await registry.lookup(approval_id)
    except StoreError as exc:
        raise GatewayError(UNAVAILABLE, f"approval records: {exc}", retryable=True) from exc


async def _find(call: Call, approval_id: str) -> tuple[PluginApprovals, PluginApproval] | None:
    for registry in _registries(call).values():
        approval = await _lookup(registry, approval_id)
        if approval is not None:
            return registry, approval
    return None


async def approval_get(call: Call, params: ApprovalGetParams) -> dict[str, Any]:
    found = await _find(call, params.id)
    if found is None:
        raise _not_found()
    return {"approval": snapshot(found[1])}


async def approval_resolve(call: Call, params: ApprovalResolveParams) -> dict[str, Any]:
    registry = _registries(call).get(params.kind)
    if registry is None:
        raise _not_found()  # system-agent approvals: none here
    if params.reviewer is not msgspec.UNSET:
        raise _not_found()
    approval = await _lookup(registry, params.id)
    if approval is None:
        raise _not_found()
    applied = False
    if approval.pending:
        days = _days(params.grantExpiresInDays)
        applied = resolve_in(call, registry, params.id, params.decision, days)
    await trio.lowlevel.checkpoint()
    return {"applied": applied, "approval": snapshot(approval)}


async def approval_history(call: Call, params: ApprovalHistoryParams) -> dict[str, Any]:
    kinds = _registries(call)
    kind = params.kind if isinstance(params.kind, str) else None
    start = 0
    if isinstance(params.cursor, str):
        try:
            start = int(params.cursor)
        except ValueError as exc:
            raise invalid_request("invalid cursor") from exc
    limit = params.limit if isinstance(params.limit, int) else _DEFAULT_HISTORY_LIMIT
    if kind is not None and kind not in kinds:
        await trio.lowlevel.checkpoint()
        return {"items": []}  # system-agent approvals: none here
    try:
        page = await _history_page(kinds, kind, start, limit + 1)
    except StoreError as exc:
        raise GatewayError(UNAVAILABLE, f"approval records: {exc}", retryable=True) from exc
    answer: dict[str, Any] = {"items": [snapshot(a) for a in page[:limit]]}
    if len(page) > limit:
        answer["nextCursor"] = str(start + limit)
    return answer


async def _history_page(
    kinds: Mapping[str, PluginApprovals], kind: str | None, start: int, count: int
) -> list[PluginApproval]:
    """`count` ended approvals from `start`, newest first: the store's records (of `kind`,
    or all kinds), else what this gateway remembers."""
    if kinds["exec"].records is not None:
        registry = kinds[kind or "exec"]
        return await registry.stored_history(offset=start, limit=count, every_kind=kind is None)
    await trio.lowlevel.checkpoint()
    chosen = [kinds[kind]] if kind is not None else list(kinds.values())
    items = sorted(
        (a for registry in chosen for a in registry.history()),
        key=lambda a: a.ended_at_ms,
        reverse=True,
    )
    return items[start : start + count]
