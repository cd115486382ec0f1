"""Device pairing and device tokens over RPC: `device.pair.list` / `approve` / `reject` /
`remove`, `device.token.rotate` / `revoke` (all `operator.pairing`), with OpenClaw's
param and result shapes (`openclaw devices list|approve|reject|remove|rotate|revoke`).

Who may manage what (OpenClaw's `device-management-authz.ts`): a connection authenticated
with a device token manages only its own device unless it holds `operator.admin`; tokens
of roles other than `operator` need `operator.admin`; approving an operator grant, or
rotating / revoking an operator token, needs the caller to hold the scopes involved.
Approvals and rejections are announced with `device.pair.resolved`; removing a device,
or rotating or revoking its token, closes that device's connections (after the answer).
Every change is on disk before it is answered.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import msgspec

from runtime.devices import Approved, DeviceToken, PairingStoreError, TokenRefused
from runtime.protocol import INVALID_REQUEST, GatewayError, NonEmpty, opt

from ._context import Call, MethodTable

PAIRING_SCOPE: Final = "operator.pairing"


class _Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


class DevicePairListParams(_Params, frozen=True):
    pass


class DevicePairApproveParams(_Params, frozen=True):
    requestId: NonEmpty


class DevicePairRejectParams(_Params, frozen=True):
    requestId: NonEmpty


class DevicePairRemoveParams(_Params, frozen=True):
    deviceId: NonEmpty


class DeviceTokenRotateParams(_Params, frozen=True):
    deviceId: NonEmpty
    role: NonEmpty
    scopes: list[NonEmpty] | msgspec.UnsetType = msgspec.UNSET


class DeviceTokenRevokeParams(_Params, frozen=True):
    deviceId: NonEmpty
    role: NonEmpty


@attrs.frozen
class _Authz:
    caller_device_id: str | None
    caller_scopes: list[str]
    is_admin: bool

    def denies_other_device(self, target: str) -> bool:
        return bool(
            self.caller_device_id and self.caller_device_id != target.strip() and not self.is_admin
        )

    def denies_role(self, role: str) -> bool:
        return bool(role.strip()) and not self.is_admin and role.strip() != "operator"


def _authz(call: Call) -> _Authz:
    conn = call.conn
    scopes = list(conn.granted_scopes)
    device = conn.device_id if conn.auth_method == "device-token" else None
    return _Authz(device, scopes, "operator.admin" in scopes)


def _denied(message: str) -> GatewayError:
    return GatewayError(INVALID_REQUEST, message)


async def _flush(call: Call) -> None:
    try:
        await call.gateway.trust.pairing.flush()
    except PairingStoreError as exc:
        raise GatewayError("UNAVAILABLE", str(exc), retryable=True) from exc


async def _refresh(call: Call) -> None:
    """What the other processes sharing the pairing file (`--workers`) wrote, first."""
    try:
        await call.gateway.trust.pairing.refresh()
    except PairingStoreError as exc:
        raise GatewayError("UNAVAILABLE", str(exc), retryable=True) from exc


def _resolved(request_id: str, device_id: str, decision: str, now: int) -> dict[str, Any]:
    return {"requestId": request_id, "deviceId": device_id, "decision": decision, "ts": now}


async def pair_list(call: Call, params: DevicePairListParams) -> dict[str, Any]:
    await _refresh(call)
    gw = call.gateway
    pending, paired = gw.trust.pairing.records(now=gw.process.now_ms())
    authz = _authz(call)
    if authz.caller_device_id and not authz.is_admin:
        pending = [p for p in pending if p.deviceId == authz.caller_device_id]
        paired = [d for d in paired if d.deviceId == authz.caller_device_id]
    connected = gw.trust.connected_device_ids()
    await _flush(call)  # expired requests pruned
    return {
        "pending": [p.public() for p in pending],
        "paired": [d.redacted(connected=d.deviceId in connected) for d in paired],
    }


async def pair_approve(call: Call, params: DevicePairApproveParams) -> dict[str, Any]:
    await _refresh(call)
    gw = call.gateway
    store = gw.trust.pairing
    now = gw.process.now_ms()
    request_id = params.requestId.strip()
    authz = _authz(call)
    if not authz.is_admin:
        pending = store.pending(request_id, now=now)
        if pending is None:
            raise _denied("device pairing approval denied")
        if authz.caller_device_id and pending.deviceId != authz.caller_device_id:
            raise _denied("device pairing approval denied")
        if any(r != "operator" for r in pending.requested_roles()):
            raise _denied("device pairing approval denied")
    result = store.approve(
        request_id, caller_scopes=authz.caller_scopes, approved_via="owner", now=now
    )
    if result is None:
        raise _denied("unknown requestId")
    if not isinstance(result, Approved):
        raise _denied(result.message)
    await _flush(call)
    gw.trust.pairing_event(
        "device.pair.resolved", _resolved(request_id, result.device.deviceId, "approved", now)
    )
    return {"requestId": request_id, "device": result.device.redacted()}


async def pair_reject(call: Call, params: DevicePairRejectParams) -> dict[str, Any]:
    await _refresh(call)
    gw = call.gateway
    store = gw.trust.pairing
    now = gw.process.now_ms()
    request_id = params.requestId.strip()
    authz = _authz(call)
    if authz.caller_device_id and not authz.is_admin:
        pending = store.pending(request_id, now=now)
        if pending is None or pending.deviceId != authz.caller_device_id:
            raise _denied("device pairing rejection denied")
    rejected = store.reject(request_id, now=now)
    if rejected is None:
        raise _denied("unknown requestId")
    await _flush(call)
    gw.trust.pairing_event(
        "device.pair.resolved", _resolved(request_id, rejected.deviceId, "rejected", now)
    )
    return {"requestId": request_id, "deviceId": rejected.deviceId}


async def pair_remove(call: Call, params: DevicePairRemoveParams) -> None:
    await _refresh(call)
    gw = call.gateway
    authz = _authz(call)
    target = params.deviceId.strip()
    if authz.denies_other_device(target):
        raise _denied("device pairing removal denied")
    if authz.caller_device_id and not authz.is_admin:
        device = gw.trust.pairing.paired(target)
        if device is not None and any(r != "operator" for r in device.approved_roles()):
            raise _denied("device pairing removal denied")
    removed = gw.trust.pairing.remove(target)
    if removed is None:
        raise _denied("unknown deviceId")
    await _flush(call)
    call.respond({"deviceId": removed})
    gw.trust.disconnect_device(removed, "device-pair-removed")


async def token_rotate(call: Call, params: DeviceTokenRotateParams) -> None:
    await _refresh(call)
    gw = call.gateway
    authz = _authz(call)
    role = params.role.strip()
    if authz.denies_other_device(params.deviceId) or authz.denies_role(role):
        raise _denied("device token rotation denied")
    result = gw.trust.pairing.rotate_token(
        params.deviceId,
        role=role,
        scopes=opt(params.scopes),
        caller_scopes=authz.caller_scopes if role == "operator" else None,
        now=gw.process.now_ms(),
    )
    if isinstance(result, TokenRefused):
        raise _denied("device token rotation denied")
    await _flush(call)
    in_band = bool(authz.caller_device_id and authz.caller_device_id == params.deviceId.strip())
    call.respond(_rotated(params.deviceId, result, in_band))
    gw.trust.disconnect_device(params.deviceId.strip(), "device-token-rotated", role=result.role)


def _rotated(device_id: str, entry: DeviceToken, in_band: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"deviceId": device_id, "role": entry.role}
    if in_band:
        out["token"] = entry.token
    out["scopes"] = entry.scopes
    out["rotatedAtMs"] = entry.rotatedAtMs or entry.createdAtMs
    out["tokenDelivery"] = "in-band" if in_band else "withheld-cross-device"
    return out


async def token_revoke(call: Call, params: DeviceTokenRevokeParams) -> None:
    await _refresh(call)
    gw = call.gateway
    authz = _authz(call)
    role = params.role.strip()
    if authz.denies_other_device(params.deviceId) or authz.denies_role(role):
        raise _denied("device token revocation denied")
    now = gw.process.now_ms()
    result = gw.trust.pairing.revoke_token(
        params.deviceId,
        role=role,
        caller_scopes=authz.caller_scopes if role == "operator" else None,
        now=now,
    )
    if isinstance(result, TokenRefused):
        raise _denied("device token revocation denied")
    await _flush(call)
    device_id = params.deviceId.strip()
    call.respond(
        {"deviceId": device_id, "role": result.role, "revokedAtMs": result.revokedAtMs or now}
    )
    gw.trust.disconnect_device(device_id, "device-token-revoked", role=result.role)


def register(methods: MethodTable) -> None:
    methods.advertise("device.pair.requested", "device.pair.resolved")
    methods.add("device.pair.list", pair_list, DevicePairListParams, scope=PAIRING_SCOPE)
    methods.add("device.pair.approve", pair_approve, DevicePairApproveParams, scope=PAIRING_SCOPE)
    methods.add("device.pair.reject", pair_reject, DevicePairRejectParams, scope=PAIRING_SCOPE)
    methods.add("device.pair.remove", pair_remove, DevicePairRemoveParams, scope=PAIRING_SCOPE)
    methods.add("device.token.rotate", token_rotate, DeviceTokenRotateParams, scope=PAIRING_SCOPE)
    methods.add("device.token.revoke", token_revoke, DeviceTokenRevokeParams, scope=PAIRING_SCOPE)
