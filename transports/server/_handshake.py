"""Who may connect, and with what: the `connect` admission, in OpenClaw's order.

After the frame and protocol checks (`_connection`), `admit_connect` decides, as OpenClaw's
gateway does (`connect-admission.ts`, `connect-auth.ts`, `connect-device-pairing.ts`):

1. **role** `operator` (default) or `node`, else `invalid role`; the connection's scopes are
   exactly the requested ones (no `scopes` field: none).
2. **origin**: a connect carrying an `Origin` header (or from a browser client: the Control
   UI, webchat) is checked against the current `gateway.controlUi.allowedOrigins`
   (`CONTROL_UI_ORIGIN_NOT_ALLOWED`); the upgrade was refused with 403 already unless the
   policy changed since.
3. **shared secret** (`gateway.auth.mode: token`): rate limited per address
   (`AUTH_RATE_LIMITED`), `token_missing`, `token_mismatch`.
4. **device identity missing**: the terminal UI and the Control UI must sign one
   (`CONTROL_UI_DEVICE_IDENTITY_REQUIRED`); other operators may go without it when their
   shared token is right, but then hold no scopes, except `cli`/`cli` and
   `gateway-client`/`backend` clients on direct loopback (OpenClaw's local CLI and backend
   paths). Without a token and without a device: `NOT_PAIRED DEVICE_IDENTITY_REQUIRED`.
   clawlane's one departure: with `auth.mode: "none"` (explicit, loopback only) a
   device-less operator keeps its requested scopes (OpenClaw asks it for a device).
5. **device proof** (`runtime.devices._device_auth`): id, signedAt window, nonce, signature.
6. **device token** as the credential (`auth.deviceToken`, or `auth.token` when it is not the
   shared token): `AUTH_DEVICE_TOKEN_MISMATCH` / `AUTH_SCOPE_MISMATCH`.
7. **pairing**: an unknown device, a new role or wider scopes need approval. On direct
   loopback it is given silently (not for scope upgrades authenticated by a device token,
   not for non-browser clients carrying an `Origin`); otherwise the request waits
   (`device.pair.requested`) and the connect fails `NOT_PAIRED PAIRING_REQUIRED`.
8. **device token** issued (or reused) for a paired device: `hello-ok.auth.deviceToken`.

Every refusal is a `res ok:false` with OpenClaw's code, message and details, then close
1008 (with the message as the reason). Nothing here blocks; the pairing store is flushed
to disk before a connect that changed it is acknowledged.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import attrs
import msgspec

from runtime.devices import (
    Approved,
    DeviceProof,
    DeviceProofFailure,
    PairingInput,
    PairingStoreError,
    PendingRequest,
    SignedFields,
    verify_device_proof,
)
from runtime.protocol import (
    INVALID_REQUEST,
    NOT_PAIRED,
    UNAVAILABLE,
    ConnectParams,
    ConnectParamsAuth,
    ConnectParamsDevice,
    GatewayError,
    role_scopes_allow,
)

from ..access import (
    ORIGIN_NOT_ALLOWED_MESSAGE,
    SCOPE_DEVICE_TOKEN,
    SCOPE_SHARED_SECRET,
    AuthRateLimiter,
    Peer,
    check_origin,
)
from ..methods import Connected, Host
from ..websocket import CLOSE_POLICY, WebSocketServerConnection

log = logging.getLogger("clawlane.handshake")

OPERATOR_UI_CLIENTS: Final = frozenset(
    {"openclaw-control-ui", "openclaw-browser-copilot", "openclaw-tui"}
)
BROWSER_UI_CLIENTS: Final = frozenset({"openclaw-control-ui", "openclaw-browser-copilot"})
NATIVE_APP_CLIENTS: Final = frozenset(
    {"openclaw-macos", "openclaw-linux", "openclaw-ios", "openclaw-android"}
)
CONTROL_UI_DEVICE_MESSAGE: Final = (
    "control ui requires device identity (use HTTPS or localhost secure context)"
)
_PAIRING: Final = {
    "not-paired": (
        "device is not approved yet",
        "Approve this device from the pending pairing requests.",
    ),
    "role-upgrade": (
        "device is asking for a higher role than currently approved",
        "Review the requested role upgrade, then approve the pending request.",
    ),
    "scope-upgrade": (
        "device is asking for more scopes than currently approved",
        "Review the requested scopes, then approve the pending upgrade.",
    ),
    "metadata-upgrade": (
        "device identity changed and must be re-approved",
        "Review the refreshed device details, then approve the pending request.",
    ),
}
_AUTH_CODES: Final = {
    "token_missing": "AUTH_TOKEN_MISSING",
    "token_mismatch": "AUTH_TOKEN_MISMATCH",
    "rate_limited": "AUTH_RATE_LIMITED",
    "device_token_mismatch": "AUTH_DEVICE_TOKEN_MISMATCH",
    "scope_mismatch": "AUTH_SCOPE_MISMATCH",
}
_NEXT_STEP: Final = {
    "token_missing": "update_auth_configuration",
    "token_mismatch": "update_auth_credentials",
    "device_token_mismatch": "update_auth_credentials",
    "scope_mismatch": "review_auth_configuration",
    "rate_limited": "wait_then_retry",
}


@attrs.frozen
class Admitted:
    role: str
    scopes: list[str]
    auth_method: str
    device_id: str | None = None
    device_token: str | None = None
    device_token_issued_at: int | None = None


class Socketed(Connected, Protocol):
    """A connection as the handshake sees it: what the methods see, and its socket (a
    refused `connect` closes it with 1008)."""

    ws: WebSocketServerConnection


class HandshakeHost(Host, Protocol):
    """The gateway as `admit_connect` sees it: what the methods see, and its rate limits."""

    @property
    def rate_limiter(self) -> AuthRateLimiter: ...
    @property
    def browser_rate_limiter(self) -> AuthRateLimiter: ...

    def browser_rate_key(self, peer: Peer) -> str: ...


@attrs.define
class _AuthResult:
    ok: bool
    method: str
    reason: str | None = None
    retry_after_ms: int | None = None


class _Refused(Exception):
    """A connect refused; the answer has been queued."""


def _opt(value: Any) -> Any:
    return None if isinstance(value, msgspec.UnsetType) else value


def _auth_fields(params: ConnectParams) -> tuple[str | None, str | None, str | None]:
    auth = params.auth if isinstance(params.auth, ConnectParamsAuth) else None
    if auth is None:
        return None, None, None
    token = (_opt(auth.token) or "").strip() or None
    device_token = (_opt(auth.deviceToken) or "").strip() or None
    bootstrap = (_opt(auth.bootstrapToken) or "").strip() or None
    return token, device_token, bootstrap


class _Admission:
    """One connect's decision (the steps of the module docstring)."""

    def __init__(
        self,
        gw: HandshakeHost,
        conn: Socketed,
        req_id: str,
        params: ConnectParams,
        nonce: str,
        peer: Peer,
    ) -> None:
        self.gw = gw
        self.conn = conn
        self.req_id = req_id
        self.params = params
        self.nonce = nonce
        self.peer = peer
        client = params.client
        self.client_id = client.id
        self.client_mode = client.mode
        self.is_operator_ui = client.id in OPERATOR_UI_CLIENTS
        self.is_browser_ui = client.id in BROWSER_UI_CLIENTS
        self.is_webchat = client.mode == "webchat" or client.id == "webchat-ui"
        self.is_native_app_ui = client.mode == "ui" and client.id in NATIVE_APP_CLIENTS
        self.token, self.device_token, bootstrap = _auth_fields(params)
        self.signature_token = self.token or self.device_token or bootstrap or ""
        self.device = params.device if isinstance(params.device, ConnectParamsDevice) else None
        self.role = "operator"
        self.scopes: list[str] = []
        if peer.has_origin:
            self.limiter: AuthRateLimiter = gw.browser_rate_limiter
            self.rate_key = gw.browser_rate_key(peer)
        else:
            self.limiter = gw.rate_limiter
            self.rate_key = peer.address
        self.auth_method = "token"

    # --- refusals --------------------------------------------------------------------------

    def _refuse(
        self, code: str, message: str, *, close_reason: str | None = None, **extra: Any
    ) -> _Refused:
        err = GatewayError(code, message, **extra)
        self.conn.respond_error(self.req_id, err)
        self.conn.ws.close(CLOSE_POLICY, close_reason or message)
        return _Refused(message)

    def _unauthorized(self, result: _AuthResult) -> _Refused:
        reason = result.reason
        provided = "token" if self.token else "device-token" if self.device_token else "none"
        can_retry = (
            reason == "token_mismatch"
            and self.device is not None
            and provided == "token"
            and not self.device_token
        )
        next_step = (
            "retry_with_device_token"
            if can_retry
            else _NEXT_STEP.get(reason or "", "review_auth_configuration")
        )
        details = {
            "code": _AUTH_CODES.get(
                reason or "", "AUTH_UNAUTHORIZED" if reason else "AUTH_REQUIRED"
            ),
            "authReason": reason,
            "canRetryWithDeviceToken": can_retry,
            "recommendedNextStep": next_step,
        }
        if reason is None:
            del details["authReason"]
        extra: dict[str, Any] = {}
        if reason == "rate_limited":
            extra["retryable"] = True
            if result.retry_after_ms is not None:
                extra["retry_after_ms"] = result.retry_after_ms
        log.log(
            logging.DEBUG if reason == "rate_limited" else logging.WARNING,
            "unauthorized connect from %s client=%s mode=%s reason=%s",
            self.peer.address,
            self.client_id,
            self.client_mode,
            reason,
        )
        return self._refuse(
            INVALID_REQUEST, self._auth_message(reason, provided), details=details, **extra
        )

    def _auth_message(self, reason: str | None, provided: str) -> str:
        ui = self.is_operator_ui or self.is_webchat
        if self.client_mode == "cli":
            hint = (
                "use this gateway's gateway.auth.token or pair the device"
                if self.peer.local
                else "set gateway.remote.token to match gateway.auth.token"
            )
        elif ui:
            hint = "open the dashboard URL and paste the token in Control UI settings"
        else:
            hint = "provide gateway auth token"
        if reason == "token_missing" or (reason is None and provided == "none"):
            missing_ui = (
                "paste in Control UI settings or openclaw doctor --generate-gateway-token; restart"
            )
            return f"unauthorized: gateway token missing ({missing_ui if ui else hint})"
        if reason == "token_mismatch":
            return f"unauthorized: gateway token mismatch ({hint})"
        if reason == "rate_limited":
            return "unauthorized: too many failed authentication attempts (retry later)"
        if reason == "device_token_mismatch":
            return "unauthorized: device token mismatch (rotate/reissue device token)"
        if reason == "scope_mismatch":
            return "unauthorized: device token scope mismatch (re-pair or approve scope upgrade)"
        if provided == "device-token":
            return "unauthorized: device token rejected (pair/repair this device, or provide gateway token)"
        return "unauthorized"

    # --- the steps -------------------------------------------------------------------------

    async def run(self) -> Admitted:
        params = self.params
        role = _opt(params.role) or "operator"
        if role not in ("operator", "node"):
            raise self._refuse(INVALID_REQUEST, "invalid role")
        self.role = role
        self.scopes = list(_opt(params.scopes) or [])
        self._check_origin()
        auth = await self._shared_auth()
        if self.device is not None:
            await self._refresh_pairing()  # another worker may have paired it
        deferred_failure = self.device is not None and auth.reason == "token_mismatch"
        try:
            self._missing_device(auth)
            proof = self._verify_device()
            if not auth.ok and proof is not None:
                auth = self._device_token_auth(auth)
        except _Refused:
            if deferred_failure:
                await self.limiter.record_failure_and_delay(self.rate_key, SCOPE_SHARED_SECRET)
            raise
        if deferred_failure and not auth.ok:
            await self.limiter.record_failure_and_delay(self.rate_key, SCOPE_SHARED_SECRET)
        if not auth.ok:
            raise self._unauthorized(auth)
        self.auth_method = auth.method
        issued = None
        if proof is not None:
            issued = await self._pair_and_issue(proof, auth)
        return Admitted(
            role=self.role,
            scopes=self.scopes,
            auth_method=auth.method,
            device_id=proof.device_id if proof else None,
            device_token=issued[0] if issued else None,
            device_token_issued_at=issued[1] if issued else None,
        )

    def _check_origin(self) -> None:
        if not (self.peer.has_origin or self.is_browser_ui or self.is_webchat):
            return
        ui = self.gw.actors.supervisor.generation.config.gateway.controlUi
        decision = check_origin(
            self.peer.origin,
            host=self.peer.host,
            local_client=self.peer.local,
            allowed_origins=ui.allowedOrigins,
            allow_host_header_fallback=ui.dangerouslyAllowHostHeaderOriginFallback,
        )
        if not decision.ok:
            raise self._refuse(
                INVALID_REQUEST,
                ORIGIN_NOT_ALLOWED_MESSAGE,
                details={"code": "CONTROL_UI_ORIGIN_NOT_ALLOWED", "reason": decision.reason},
            )

    async def _shared_auth(self) -> _AuthResult:
        """Step 3. A wrong token is counted now (with the loopback delay) unless a device
        came along: then it may be a device token, and counts only if that fails too."""
        if self.gw.trust.auth.mode != "token":
            return _AuthResult(True, "none")
        expected = self.gw.trust.auth.token
        assert expected is not None
        if not self.token:
            return _AuthResult(False, "token", "token_missing")
        check = self.limiter.check(self.rate_key, SCOPE_SHARED_SECRET)
        if not check.allowed:
            return _AuthResult(False, "token", "rate_limited", check.retry_after_ms)
        if not hmac.compare_digest(self.token.encode(), expected.encode()):
            if self.device is None:
                await self.limiter.record_failure_and_delay(self.rate_key, SCOPE_SHARED_SECRET)
            return _AuthResult(False, "token", "token_mismatch")
        self.limiter.reset(self.rate_key, SCOPE_SHARED_SECRET)
        return _AuthResult(True, "token")

    def _missing_device(self, auth: _AuthResult) -> None:
        """Step 4."""
        if self.device is not None:
            return
        shared_ok = auth.ok and auth.method == "token"
        local = self.peer.local and not self.peer.has_origin
        backend = self.client_id == "gateway-client" and self.client_mode == "backend"
        local_backend = backend and local and (auth.method == "none" or shared_ok)
        local_cli = self.client_id == "cli" and self.client_mode == "cli" and local and shared_ok
        if self.is_operator_ui:
            raise self._refuse(
                INVALID_REQUEST,
                CONTROL_UI_DEVICE_MESSAGE,
                details={"code": "CONTROL_UI_DEVICE_IDENTITY_REQUIRED"},
            )
        allowed = self.role == "operator" and (
            local_backend or shared_ok or (auth.ok and auth.method == "none")
        )
        if not local_backend and not local_cli and (not allowed or auth.method == "token"):
            self.scopes = []
        if allowed:
            return
        if not auth.ok and self.token:
            raise self._unauthorized(auth)
        raise self._refuse(
            NOT_PAIRED, "device identity required", details={"code": "DEVICE_IDENTITY_REQUIRED"}
        )

    def _verify_device(self) -> DeviceProof | None:
        """Step 5."""
        device = self.device
        if device is None:
            return None
        client = self.params.client
        result = verify_device_proof(
            device_id=device.id,
            public_key=device.publicKey,
            signature=device.signature,
            signed_at_ms=device.signedAt,
            nonce=device.nonce,
            expected_nonce=self.nonce,
            fields=SignedFields(
                device_id=device.id,
                client_id=client.id,
                client_mode=client.mode,
                role=self.role,
                scopes=tuple(self.scopes),
                signed_at_ms=device.signedAt,
                token=self.signature_token,
                nonce=device.nonce,
                platform=client.platform,
                device_family=_opt(client.deviceFamily) or "",
            ),
        )
        if isinstance(result, DeviceProofFailure):
            log.warning("device proof refused from %s: %s", self.peer.address, result.reason)
            raise self._refuse(
                INVALID_REQUEST,
                result.message,
                details={"code": result.code, "reason": result.reason},
            )
        return result

    def _device_token_auth(self, auth: _AuthResult) -> _AuthResult:
        """Step 6: the device's own token as the credential."""
        candidate = self.device_token or self.token
        assert self.device is not None
        if not candidate:
            return auth
        check = self.limiter.check(self.rate_key, SCOPE_DEVICE_TOKEN)
        if not check.allowed:
            return _AuthResult(False, auth.method, "rate_limited", check.retry_after_ms)
        reason = self.gw.trust.pairing.verify_token(
            self.device.id,
            candidate,
            role=self.role,
            scopes=self.scopes,
            now=self.gw.process.now_ms(),
        )
        if reason is None:
            self.limiter.reset(self.rate_key, SCOPE_DEVICE_TOKEN)
            return _AuthResult(True, "device-token")
        self.limiter.record_failure(self.rate_key, SCOPE_DEVICE_TOKEN)
        if reason == "scope-mismatch":
            mapped = "scope_mismatch"
        elif self.device_token:
            mapped = "device_token_mismatch"
        else:
            mapped = auth.reason or "device_token_mismatch"
        return _AuthResult(False, auth.method, mapped)

    # --- pairing ---------------------------------------------------------------------------

    async def _pair_and_issue(
        self, proof: DeviceProof, auth: _AuthResult
    ) -> tuple[str, int] | None:
        """Steps 7 and 8. Returns the device token to hand out (and when it was issued)."""
        store = self.gw.trust.pairing
        now = self.gw.process.now_ms()
        client = self.params.client
        backend = self.client_id == "gateway-client" and self.client_mode == "backend"
        skip_backend = (
            backend
            and self.peer.local
            and not self.peer.has_origin
            and auth.method != "device-token"
        )
        ui_auth_none = (
            self.is_operator_ui and self.role == "operator" and self.gw.trust.auth.mode == "none"
        )
        paired = store.paired(proof.device_id)
        is_paired = paired is not None and paired.publicKey == proof.public_key
        if skip_backend or ui_auth_none:
            pass
        elif not is_paired:
            await self._require_pairing("not-paired", proof, paired)
        else:
            assert paired is not None
            if _metadata_mismatch(paired, client.platform, _opt(client.deviceFamily)):
                await self._require_pairing("metadata-upgrade", proof, paired)
            elif self.role not in paired.effective_roles():
                await self._require_pairing("role-upgrade", proof, paired)
            elif self.scopes and not (
                paired.access_scopes()
                and role_scopes_allow(self.role, self.scopes, paired.access_scopes())
            ):
                await self._require_pairing("scope-upgrade", proof, paired)
        if store.paired(proof.device_id) is not None:
            store.touch(
                proof.device_id,
                now=now,
                reason="connect",
                displayName=_opt(client.displayName),
                remoteIp=None if self.peer.local else self.peer.address,
            )
        token = store.ensure_token(proof.device_id, role=self.role, scopes=self.scopes, now=now)
        await self._flush()
        if token is None:
            return None
        return token.token, token.rotatedAtMs or token.createdAtMs

    async def _refresh_pairing(self) -> None:
        await self._pairing_io(self.gw.trust.pairing.refresh)

    async def _flush(self) -> None:
        await self._pairing_io(self.gw.trust.pairing.flush)

    async def _pairing_io(self, io: Callable[[], Awaitable[None]]) -> None:
        """The pairing file read or written; when it cannot be, the connect is refused as
        `UNAVAILABLE` (retryable)."""
        try:
            await io()
        except PairingStoreError as exc:
            log.error("%s", exc)
            raise self._refuse(
                UNAVAILABLE, "pairing store unavailable; retry shortly", retryable=True
            ) from exc

    def _silent(self, reason: str, existing: Any) -> bool:
        if not self.peer.local:
            return False
        if existing is not None and self.role != "operator":
            return False
        if self.peer.has_origin and not self.is_operator_ui and not self.is_webchat:
            return False
        if reason == "metadata-upgrade":
            return (
                not self.peer.has_origin
                and not self.is_operator_ui
                and not self.is_webchat
                and self.is_native_app_ui
            )
        if reason == "scope-upgrade":
            return self.auth_method in ("none", "token")
        return True

    async def _require_pairing(self, reason: str, proof: DeviceProof, existing: Any) -> None:
        trust, now = self.gw.trust, self.gw.process.now_ms()
        store = trust.pairing
        client = self.params.client
        silent = self._silent(reason, existing)
        result = store.request(
            PairingInput(
                device_id=proof.device_id,
                public_key=proof.public_key,
                role=self.role,
                scopes=list(self.scopes),
                silent=silent,
                display_name=_opt(client.displayName),
                platform=client.platform,
                device_family=_opt(client.deviceFamily),
                client_id=client.id,
                client_mode=client.mode,
                remote_ip=None if self.peer.local else self.peer.address,
            ),
            now=now,
        )
        for old in result.superseded:
            trust.pairing_event("device.pair.resolved", _resolved(old, "rejected", now))
        if result.request.silent:
            caller = list(
                dict.fromkeys([*self.scopes, *(existing.access_scopes() if existing else [])])
            )
            approved = store.approve(
                result.request.requestId,
                caller_scopes=caller,
                approved_via="silent",
                now=now,
                display_name=_opt(client.displayName),
            )
            if isinstance(approved, Approved):
                log.info(
                    "device pairing auto-approved device=%s role=%s", proof.device_id, self.role
                )
                resolved = _resolved(result.request, "approved", now)
                trust.pairing_event("device.pair.resolved", resolved)
                for gone in store.prune_superseded_silent(
                    proof.device_id, connected=trust.connected_device_ids(), now=now
                ):
                    trust.disconnect_device(gone.deviceId, "device-pair-removed")
        elif result.created:
            trust.pairing_event("device.pair.requested", result.request.public())
        live = store.paired(proof.device_id)
        client_family = _opt(client.deviceFamily)
        if (
            live is not None
            and live.publicKey == proof.public_key
            and self.role in live.effective_roles()
            and role_scopes_allow(self.role, self.scopes, live.access_scopes())
            and not _metadata_mismatch(live, client.platform, client_family)
        ):
            return
        pending = store.pending(result.request.requestId, now=now)
        if result.request.silent and pending is not None:
            trust.pairing_event("device.pair.requested", pending.public())
        await self._flush()
        requirement, hint = _PAIRING[reason]
        message = f"pairing required: {requirement}"
        details: dict[str, Any] = {"code": "PAIRING_REQUIRED", "reason": reason}
        if pending is not None:
            details["requestId"] = pending.requestId
        details["remediationHint"] = hint
        if self.is_operator_ui and self.role == "operator" and pending is not None:
            details.update(
                recommendedNextStep="wait_then_retry", retryable=True, pauseReconnect=False
            )
        details.update(
            deviceId=proof.device_id, requestedRole=self.role, requestedScopes=self.scopes
        )
        if existing is not None and existing.publicKey == proof.public_key:
            if existing.approved_roles():
                details["approvedRoles"] = existing.approved_roles()
            if existing.access_scopes():
                details["approvedScopes"] = existing.access_scopes()
        close = f"{message} (requestId: {pending.requestId})" if pending else message
        raise self._refuse(NOT_PAIRED, message, details=details, close_reason=close)


def _resolved(request: PendingRequest, decision: str, now: int) -> dict[str, Any]:
    return {
        "requestId": request.requestId,
        "deviceId": request.deviceId,
        "decision": decision,
        "ts": now,
    }


def _metadata_mismatch(paired: Any, platform: str | None, device_family: str | None) -> bool:
    from runtime.devices import normalize_device_metadata as norm

    pinned_platform = norm(paired.platform)
    pinned_family = norm(paired.deviceFamily)
    return bool(
        (pinned_platform and norm(platform) != pinned_platform)
        or (pinned_family and norm(device_family) != pinned_family)
    )


async def admit_connect(
    gw: HandshakeHost,
    conn: Socketed,
    req_id: str,
    params: ConnectParams,
    nonce: str,
    peer: Peer,
) -> Admitted | None:
    """Decide a `connect` (see the module docstring): the grant, or None after the refusal
    was queued and the close begun. A checkpoint (the loopback auth delay, the pairing
    store's write)."""
    admission = _Admission(gw, conn, req_id, params, nonce, peer)
    try:
        return await admission.run()
    except _Refused:
        return None
