"""The plugin approval methods (scope `operator.approvals`; `operator.admin` satisfies it), on
the gateway's `actors.PluginApprovals`:

- `plugin.approval.request` (`PluginApprovalRequestParams`): a client raises an approval. The
  operators holding the scope (but the asker) get `plugin.approval.requested`. The answer is
  the final `{id, decision, createdAtMs, expiresAtMs}` once it ends (`decision` null: it
  expired, or no one else could answer it: then at once); with `twoPhase: true` an
  `{status: "accepted", id, deliveryRoute, createdAtMs, expiresAtMs}` answer comes first, as
  the `agent` ack does. `timeoutMs` as OpenClaw bounds it (default 120 s, at most 600 s).
  The approval outlives its asker: a client that goes away leaves it to expire.
- `plugin.approval.waitDecision` (`{id}`): waits for one to end (at once when it has) and
  answers `{id, decision, createdAtMs, expiresAtMs, terminalReason}`.
- `plugin.approval.resolve` (`PluginApprovalResolveParams`): an operator's decision
  (`allow-once`, `allow-always`, `deny`), `{ok: true}`; the first answer wins. Errors, all
  `INVALID_REQUEST` as OpenClaw answers them: `invalid decision` (not one of the three),
  `<decision> is unavailable for this plugin approval` (`details.allowedDecisions`),
  `unknown or expired approval id` (`details.reason: "APPROVAL_NOT_FOUND"`; also for a
  `reviewer`: no chat channel here vouches for one), `approval already resolved`
  (`details.reason: "APPROVAL_ALREADY_RESOLVED"`) when it ended otherwise; the same decision
  again answers `{ok: true}` and changes nothing.
- `plugin.approval.list`: the pending ones, `[{approvalKind, id, request, createdAtMs,
  expiresAtMs}]`, oldest first.

Approvals a run's plugin raises are the same records (`runtime.loop._approval` says what the
tool call becomes); every operator holding the scope may see and answer any of them.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import trio

from actors import (
    ApprovalAlreadyResolved,
    ApprovalNotFound,
    ApprovalsFull,
    DecisionNotOffered,
    PluginApproval,
    PluginApprovals,
    StoreError,
)
from runtime.loop import APPROVAL_DECISIONS, ApprovalDecision
from runtime.protocol import (
    INVALID_REQUEST,
    UNAVAILABLE,
    GatewayError,
    PluginApprovalRequestParams,
    PluginApprovalResolveParams,
    invalid_request,
)

from ._clients import EmptyParams
from ._context import Call, MethodTable

__all__ = ["WaitDecisionParams", "ended_already", "register"]

_NOT_FOUND_DETAILS: Final = {
    "reason": "APPROVAL_NOT_FOUND",
    "remediation": "Re-request the action; pending approvals are cleared after expiry or restart.",
}


class WaitDecisionParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`plugin.approval.waitDecision` params (OpenClaw reads `id` only; no schema)."""

    id: str


def register(methods: MethodTable) -> None:
    methods.advertise("plugin.approval.requested", "plugin.approval.resolved")
    methods.add("plugin.approval.request", approval_request, PluginApprovalRequestParams)
    methods.add("plugin.approval.waitDecision", approval_wait, WaitDecisionParams)
    methods.add("plugin.approval.resolve", approval_resolve, PluginApprovalResolveParams)
    methods.add("plugin.approval.list", approval_list, EmptyParams)


def _not_found() -> GatewayError:
    return GatewayError(
        INVALID_REQUEST, "unknown or expired approval id", details=dict(_NOT_FOUND_DETAILS)
    )


async def approval_request(call: Call, params: PluginApprovalRequestParams) -> dict[str, Any]:
    approvals = call.gateway.actors.approvals
    try:
        approval = approvals.open(params, requested_by=call.conn.conn_id)
    except ApprovalsFull as exc:
        raise GatewayError(UNAVAILABLE, str(exc), retryable=True) from exc
    return await answer_decided(call, approvals, approval, two_phase=params.twoPhase is True)


async def answer_decided(
    call: Call, desk: PluginApprovals, approval: PluginApproval, *, two_phase: bool
) -> dict[str, Any]:
    """A request's answer once `approval` is decided; with `two_phase`, first the `accepted`
    answer on the same request id (OpenClaw's `twoPhase`), as soon as it is pending."""
    if approval.pending and two_phase:
        call.respond(
            {
                "status": "accepted",
                "id": approval.id,
                "deliveryRoute": "approval-client",
                "createdAtMs": approval.created_at_ms,
                "expiresAtMs": approval.expires_at_ms,
            }
        )
    await desk.settle(approval)
    return approval.answer()


async def ended_already(
    registry: PluginApprovals, approval_id: str, decision: ApprovalDecision
) -> bool:
    """Whether `approval_id` ended before this resolve, as the store records it (past the
    10 minutes this gateway remembers an ended one, or ended on another node of a cluster):
    True when `decision` repeats the operator's, `approval already resolved` when it does
    not; False when it is pending here or unknown (the resolve then answers). A checkpoint."""
    if registry.get(approval_id) is not None:
        await trio.lowlevel.checkpoint()
        return False
    try:
        found = await registry.lookup(approval_id)
    except StoreError:
        return False  # the resolve says it is unknown
    if found is None or found.pending:
        return False
    if found.reason == "user" and found.decision == decision:
        return True
    raise GatewayError(
        INVALID_REQUEST,
        "approval already resolved",
        details={"reason": "APPROVAL_ALREADY_RESOLVED"},
    )


async def approval_wait(call: Call, params: WaitDecisionParams) -> dict[str, Any]:
    approval_id = params.id.strip()
    if not approval_id:
        raise invalid_request("id is required")
    approval = call.gateway.actors.approvals.get(approval_id)
    if approval is None:
        raise invalid_request("approval expired or not found")
    await call.gateway.actors.approvals.wait(approval)
    return approval.wait_answer()


async def approval_resolve(call: Call, params: PluginApprovalResolveParams) -> dict[str, Any]:
    decision = _decision(params.decision)
    if params.reviewer is not msgspec.UNSET:
        raise _not_found()  # a chat channel's reviewer: none here to vouch for one
    resolved_by = getattr(call.conn, "client_id", None) or None
    if await ended_already(call.gateway.actors.approvals, params.id, decision):
        return {"ok": True}
    try:
        call.gateway.actors.approvals.resolve(params.id, decision, resolved_by=resolved_by)
    except ApprovalNotFound as exc:
        raise _not_found() from exc
    except ApprovalAlreadyResolved as exc:
        raise GatewayError(
            INVALID_REQUEST,
            "approval already resolved",
            details={"reason": "APPROVAL_ALREADY_RESOLVED"},
        ) from exc
    except DecisionNotOffered as exc:
        raise invalid_request(str(exc), allowedDecisions=list(exc.allowed)) from exc
    await trio.lowlevel.checkpoint()
    return {"ok": True}


def _decision(value: str) -> ApprovalDecision:
    for decision in APPROVAL_DECISIONS:
        if value == decision:
            return decision
    raise invalid_request("invalid decision")


async def approval_list(call: Call, params: EmptyParams) -> list[dict[str, Any]]:
    await trio.lowlevel.checkpoint()
    return call.gateway.actors.approvals.pending_views()
