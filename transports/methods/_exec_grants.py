"""The standing grants for cron runs (`actors.StandingGrants`), as OpenClaw 2026.9.6 serves
them (scope `operator.approvals`, as `openclaw approvals grants list|revoke` and the Control
UI's Settings -> Approvals ledger call them):

- `exec.approval.grants.list` (`{limit?}`, 1-500, default 200): `{grants: [...]}`, OpenClaw's
  `ExecApprovalStandingGrant` rows newest first, revoked and expired ones included (the
  caller renders each one's state from `revokedAtMs` / `expiresAtMs`);
- `exec.approval.grants.revoke` (`{grantId}`): `{outcome}`, `revoked`, `already-revoked`
  (the first revocation's time and name stay) or `not-found`; `revokedBy` is the caller's
  client id. It takes effect at the job's next exec: that one prompts again.

How a grant is minted and used: `actors.approvals._grants`. The store unreachable:
`UNAVAILABLE`, retryable.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec

from actors import ExecApprovals, StandingGrants, StoreError

from ._context import Call, MethodTable, store_unavailable

__all__ = ["GrantsListParams", "GrantsRevokeParams", "register"]

_DEFAULT_LIMIT: Final = 200


class GrantsListParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`ExecApprovalGrantsListParams`."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] | msgspec.UnsetType = msgspec.UNSET


class GrantsRevokeParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`ExecApprovalGrantsRevokeParams`."""

    grantId: Annotated[str, msgspec.Meta(min_length=1)]


def register(methods: MethodTable) -> None:
    methods.add("exec.approval.grants.list", grants_list, GrantsListParams)
    methods.add("exec.approval.grants.revoke", grants_revoke, GrantsRevokeParams)


def _grants(call: Call) -> StandingGrants | None:
    """The gateway's grants (its exec desk, made as the approval methods were added)."""
    desk = call.gateway.actors.supervisor.services.exec_approver
    return desk.grants if isinstance(desk, ExecApprovals) else None


async def grants_list(call: Call, params: GrantsListParams) -> dict[str, Any]:
    grants = _grants(call)
    if grants is None:
        return {"grants": []}
    try:
        limit = params.limit if isinstance(params.limit, int) else _DEFAULT_LIMIT
        return {"grants": await grants.view(limit)}
    except StoreError as exc:
        raise store_unavailable(exc) from exc


async def grants_revoke(call: Call, params: GrantsRevokeParams) -> dict[str, Any]:
    grants = _grants(call)
    if grants is None:
        return {"outcome": "not-found"}
    revoked_by = getattr(call.conn, "client_id", None) or "operator"
    try:
        return {"outcome": await grants.revoke(params.grantId, revoked_by)}
    except StoreError as exc:
        raise store_unavailable(exc) from exc
