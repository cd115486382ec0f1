"""The device pairing store: pending pairing requests, paired devices, their role tokens.

One JSON document, `{"version": 1, "pending": {requestId: request}, "paired": {deviceId:
device}}`: the state dir's `devices/pairing.json` (mode 0600, in a 0700 folder), or with
`storage.backend: "postgres"` a row of the cluster's database (`actors.PostgresDocument`),
in OpenClaw's record shapes (`DevicePairRequestedEvent` for a request; a paired device with
`roles`, `scopes`, `approvedScopes`, `tokens{role: {token, role, scopes, createdAtMs,
rotatedAtMs?, revokedAtMs?, lastUsedAtMs?}}`, `approvedVia`, ...). The rules are OpenClaw's
(`device-pairing-*.kernel.ts`): a request for a device with one compatible pending request
refreshes it, otherwise it supersedes them; pending requests expire after 5 minutes;
approving merges roles and scopes into the device and (re)issues each requested role's
token; a caller approving an operator grant must hold its scopes; tokens stay within the
device's approved scope baseline; a revoked token keeps its row (`revokedAtMs`).

Every operation is synchronous and in memory (so it is atomic for trio); `flush()` writes
the document in a worker thread (the file: a temporary file, fsync, rename, fsync the
folder). Processes sharing it (the nodes of a cluster, the workers of `--workers N` among
them, share the PostgreSQL row; processes on one state dir share the file) sync with it
under its lock: `refresh()` takes in what the others wrote, `flush()` does too before it
writes (`_sharing`). Callers flush before they acknowledge what they changed. Metadata
refreshes (`lastSeenAtMs`, `lastUsedAtMs`) do not force a write of their own: they go out
with the next write and at `close()`.

Errors in this module:
- `PairingStoreError`: the document exists but is not a pairing store (the gateway refuses
  to start and names it), or it cannot be read or written (the document's error chained:
  `OSError`, `psycopg.Error`), in one line.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import attrs
import msgspec
import trio

from ..protocol import ClawlaneError
from ..protocol._scopes import (
    merge_scopes,
    missing_requested_scope,
    normalize_device_auth_scopes,
    role_scopes_allow,
    role_token_scopes,
)
from ._sharing import DocumentVersion, FileDocument, SharedDocument, merge

PENDING_TTL_MS: Final = 300_000
PRUNE_RECENT_APPROVAL_GRACE_MS: Final = 60_000
STORE_RELATIVE_PATH: Final = Path("devices") / "pairing.json"


class PairingStoreError(ClawlaneError):
    """The pairing document is unusable (unreadable, not a store, or not writable)."""


class _Record(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=False):
    pass


class PendingRequest(_Record, frozen=True):
    """A device waiting for approval (`DevicePairRequestedEvent` plus `refreshedAtMs`)."""

    requestId: str
    deviceId: str
    publicKey: str
    ts: int
    displayName: str | None = None
    platform: str | None = None
    deviceFamily: str | None = None
    clientId: str | None = None
    clientMode: str | None = None
    role: str | None = None
    roles: list[str] | None = None
    scopes: list[str] | None = None
    remoteIp: str | None = None
    silent: bool | None = None
    isRepair: bool | None = None
    refreshedAtMs: int | None = None

    def public(self) -> dict[str, Any]:
        data = msgspec.to_builtins(self)
        assert isinstance(data, dict)
        data.pop("refreshedAtMs", None)
        return data

    def requested_roles(self) -> list[str]:
        return _merge_roles(self.roles, self.role)


class DeviceToken(_Record, frozen=True):
    token: str
    role: str
    scopes: list[str]
    createdAtMs: int
    rotatedAtMs: int | None = None
    revokedAtMs: int | None = None
    lastUsedAtMs: int | None = None

    def summary(self) -> dict[str, Any]:
        data = msgspec.to_builtins(self)
        assert isinstance(data, dict)
        del data["token"]
        return data


class PairedDevice(_Record, frozen=True):
    deviceId: str
    publicKey: str
    createdAtMs: int
    approvedAtMs: int
    displayName: str | None = None
    platform: str | None = None
    deviceFamily: str | None = None
    clientId: str | None = None
    clientMode: str | None = None
    role: str | None = None
    roles: list[str] | None = None
    scopes: list[str] | None = None
    approvedScopes: list[str] | None = None
    remoteIp: str | None = None
    tokens: dict[str, DeviceToken] | None = None
    approvedVia: str | None = None
    operatorLabel: str | None = None
    lastSeenAtMs: int | None = None
    lastSeenReason: str | None = None

    def approved_roles(self) -> list[str]:
        return _merge_roles(self.roles, self.role)

    def effective_roles(self) -> list[str]:
        """Approved roles that hold an active (unrevoked) token."""
        approved = set(self.approved_roles())
        return [
            r for r, t in (self.tokens or {}).items() if t.revokedAtMs is None and r in approved
        ]

    def scope_baseline(self) -> list[str] | None:
        base = self.approvedScopes if self.approvedScopes is not None else self.scopes
        return None if base is None else normalize_device_auth_scopes(base)

    def access_scopes(self) -> list[str]:
        base = self.approvedScopes if self.approvedScopes is not None else self.scopes
        return sorted({s.strip() for s in base or () if s.strip()})

    def redacted(self, *, connected: bool | None = None) -> dict[str, Any]:
        """As `device.pair.list` shows it: no bearer tokens, no `approvedScopes`."""
        data = msgspec.to_builtins(self)
        assert isinstance(data, dict)
        data.pop("tokens", None)
        data.pop("approvedScopes", None)
        if connected is not None:
            data["connected"] = connected
        summaries = sorted(
            (t.summary() for t in (self.tokens or {}).values()), key=lambda t: t["role"]
        )
        if summaries:
            data["tokens"] = summaries
        return data


class _File(msgspec.Struct, omit_defaults=False):
    version: int = 1
    pending: dict[str, PendingRequest] = {}
    paired: dict[str, PairedDevice] = {}


_decoder: Final = msgspec.json.Decoder(_File)
_encoder: Final = msgspec.json.Encoder()


def _one_line(exc: BaseException) -> str:
    return "; ".join(part.strip() for part in str(exc).splitlines() if part.strip())


def _decode(body: bytes, where: str) -> _File:
    try:
        return _decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise PairingStoreError(f"{where} is not a device pairing store: {exc}") from exc


def _read_file(path: Path) -> _File | None:
    """A pairing file's records (None when it does not exist). Blocking."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PairingStoreError(f"cannot read the pairing store {path}: {exc}") from exc
    return _decode(raw, str(path))


def _merge_roles(*items: list[str] | str | None) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        for role in [item] if isinstance(item, str) else item or []:
            if role.strip():
                seen.setdefault(role.strip(), None)
    return list(seen)


def _new_token(
    role: str, scopes: list[str], *, existing: DeviceToken | None, now: int, rotated: bool
) -> DeviceToken:
    return DeviceToken(
        token=secrets.token_urlsafe(32),
        role=role,
        scopes=scopes,
        createdAtMs=existing.createdAtMs if existing is not None else now,
        rotatedAtMs=now if rotated else None,
        lastUsedAtMs=existing.lastUsedAtMs if existing is not None else None,
    )


@attrs.frozen
class PairingInput:
    """What a connecting device asks for, with the metadata it showed."""

    device_id: str
    public_key: str
    role: str
    scopes: list[str]
    silent: bool
    display_name: str | None = None
    platform: str | None = None
    device_family: str | None = None
    client_id: str | None = None
    client_mode: str | None = None
    remote_ip: str | None = None


@attrs.frozen
class RequestResult:
    request: PendingRequest
    created: bool
    superseded: list[PendingRequest]


@attrs.frozen
class Approved:
    request_id: str
    device: PairedDevice


@attrs.frozen
class Forbidden:
    """An approval refused: OpenClaw's reason and the scope at fault."""

    reason: str
    scope: str | None = None

    @property
    def message(self) -> str:
        if self.reason == "scope-outside-requested-roles":
            return f"invalid scope for requested roles: {self.scope or 'unknown'}"
        return f"missing scope: {self.scope or 'unknown'}"


@attrs.frozen
class TokenRefused:
    reason: str
    scope: str | None = None


class PairingStore:
    """The pairing records of one gateway, synced with a `SharedDocument` (the state dir's
    file, or the cluster's PostgreSQL). Use `open_pairing_store` (or `load`, `open`)."""

    def __init__(
        self, document: SharedDocument, data: _File, version: DocumentVersion = None
    ) -> None:
        self.document = document
        self._pending: dict[str, PendingRequest] = dict(data.pending)
        self._paired: dict[str, PairedDevice] = dict(data.paired)
        self._base = _File(pending=dict(data.pending), paired=dict(data.paired))
        """The records as of the last sync with the document (what `merge` compares with)."""
        self._version = version
        """The document's version as of the last sync (None: read it whole next time)."""
        self._dirty = False
        self._soft_dirty = False
        self._lock = trio.Lock()
        self.writes = 0

    @classmethod
    def empty(cls, state_dir: Path) -> PairingStore:
        """A store with no records (written to `state_dir` on its first change)."""
        return cls(FileDocument(state_dir / STORE_RELATIVE_PATH), _File())

    @classmethod
    def load(cls, path: Path) -> PairingStore:
        """Read the store at `path` (absent: empty). Blocking. Raises `PairingStoreError`."""
        return cls.open(FileDocument(path))

    @classmethod
    def open(cls, document: SharedDocument, *, seed: Path | None = None) -> PairingStore:
        """The store synced with `document`, its records read (none when it does not
        exist). With `seed`, a document that does not exist yet is first written, under its
        lock, with the records of that pairing file (when it exists): the first process to
        open it seeds it, the others read it (their files are not read). Blocking. Raises
        `PairingStoreError`."""
        where = document.where
        initial: _File | None = None
        try:
            try:
                if document.current() is None:
                    initial = _read_file(seed) if seed is not None else None
                    if initial is None:
                        return cls(document, _File())
                body, version = document.lock_and_read(None)
                if body is None and initial is not None:
                    body = _encoder.encode(initial)
                    version = document.write_locked(body)
            finally:
                document.release()
        except document.errors as exc:
            raise PairingStoreError(
                f"cannot read the pairing store {where}: {_one_line(exc)}"
            ) from exc
        return cls(document, _decode(body, where) if body is not None else _File(), version)

    # --- persistence -----------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        return self._dirty

    async def flush(self, *, include_metadata: bool = False) -> None:
        """Write the document if something changed (metadata-only changes with
        `include_metadata`), with what other processes wrote since taken in first. A
        checkpoint; cancellation leaves the store dirty (the next flush writes). Raises
        `PairingStoreError` when the write fails (still dirty)."""
        async with self._lock:
            if not (self._dirty or (include_metadata and self._soft_dirty)):
                await trio.lowlevel.checkpoint()
                return
            self._dirty = self._soft_dirty = False
            try:
                await self._sync(write=True)
            except BaseException as exc:
                self._dirty = True
                self._version = None  # a write cut off may have happened: read it next time
                if isinstance(exc, self.document.errors):
                    raise PairingStoreError(
                        f"cannot write the pairing store {self.document.where}: {_one_line(exc)}"
                    ) from exc
                raise
            self.writes += 1

    async def refresh(self) -> None:
        """Take in what other processes sharing the document wrote since this one last
        synced: one cheap check (a `stat`, a one-row query) when nothing changed. A
        checkpoint. Raises `PairingStoreError` when the document cannot be read."""
        async with self._lock:
            document = self.document
            try:
                if await trio.to_thread.run_sync(document.current) == self._version:
                    return
                await self._sync(write=False)
            except document.errors as exc:
                raise PairingStoreError(
                    f"cannot read the pairing store {document.where}: {_one_line(exc)}"
                ) from exc

    async def _sync(self, *, write: bool) -> None:
        """Under the document's lock (taken and released here, released also when
        cancelled): merge its records when it changed since the last sync, then, with
        `write`, write the records. The merge runs in the trio thread (the records are only
        ever changed there); the base becomes what was written, not what the trio thread
        changed meanwhile (that is dirty again, and goes with the next flush)."""
        document = self.document
        try:
            body, seen = await trio.to_thread.run_sync(document.lock_and_read, self._version)
            if body is not None:
                disk = _decode(body, document.where)
                self._pending = merge(disk.pending, self._base.pending, self._pending)
                self._paired = merge(disk.paired, self._base.paired, self._paired)
                self._base, self._version = disk, seen
            if write:
                records = _File(pending=dict(self._pending), paired=dict(self._paired))
                data = _encoder.encode(records)
                written = await trio.to_thread.run_sync(document.write_locked, data)
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(document.release)
        if write:
            self._base, self._version = records, written

    # --- reads -----------------------------------------------------------------------------

    def paired(self, device_id: str) -> PairedDevice | None:
        return self._paired.get(device_id.strip())

    def pending(self, request_id: str, *, now: int) -> PendingRequest | None:
        self._prune_expired(now)
        return self._pending.get(request_id.strip())

    def records(self, *, now: int) -> tuple[list[PendingRequest], list[PairedDevice]]:
        """Pending requests (newest first) and paired devices (latest approval first)."""
        self._prune_expired(now)
        pending = sorted(self._pending.values(), key=lambda p: p.ts, reverse=True)
        paired = sorted(self._paired.values(), key=lambda d: d.approvedAtMs, reverse=True)
        return pending, paired

    def _prune_expired(self, now: int) -> None:
        for rid, req in list(self._pending.items()):
            if (req.refreshedAtMs or req.ts) + PENDING_TTL_MS < now:
                del self._pending[rid]
                self._dirty = True

    # --- requests and approvals ------------------------------------------------------------

    def request(self, req: PairingInput, *, now: int) -> RequestResult:
        """Create or refresh the pending request of a connecting device."""
        self._prune_expired(now)
        device_id = req.device_id.strip()
        is_repair = device_id in self._paired
        mine = sorted(
            (p for p in self._pending.values() if p.deviceId == device_id),
            key=lambda p: p.ts,
            reverse=True,
        )
        self._dirty = True
        if len(mine) == 1 and _compatible(mine[0], req):
            old = mine[0]
            refreshed = msgspec.structs.replace(
                old,
                publicKey=req.public_key,
                displayName=req.display_name or old.displayName,
                platform=req.platform or old.platform,
                deviceFamily=req.device_family or old.deviceFamily,
                clientId=req.client_id or old.clientId,
                clientMode=req.client_mode or old.clientMode,
                remoteIp=req.remote_ip or old.remoteIp,
                silent=bool(old.silent and req.silent),
                isRepair=bool(old.isRepair or is_repair),
                refreshedAtMs=now,
            )
            self._pending[old.requestId] = refreshed
            return RequestResult(refreshed, False, [])
        for old in mine:
            del self._pending[old.requestId]
        roles = _merge_roles(*(p.requested_roles() for p in mine), req.role)
        scopes = merge_scopes(*(p.scopes for p in mine), req.scopes)
        created = PendingRequest(
            requestId=secrets.token_hex(16),
            deviceId=device_id,
            publicKey=req.public_key,
            ts=now,
            displayName=req.display_name,
            platform=req.platform,
            deviceFamily=req.device_family,
            clientId=req.client_id,
            clientMode=req.client_mode,
            role=req.role,
            roles=roles,
            scopes=scopes,
            remoteIp=req.remote_ip,
            silent=bool(req.silent and all(p.silent for p in mine)),
            isRepair=is_repair,
        )
        self._pending[created.requestId] = created
        return RequestResult(created, True, mine)

    def approve(
        self,
        request_id: str,
        *,
        caller_scopes: list[str] | None,
        approved_via: str,
        now: int,
        display_name: str | None = None,
        remote_ip: str | None = None,
    ) -> Approved | Forbidden | None:
        """Approve a pending request (None when there is no such request)."""
        pending = self.pending(request_id, now=now)
        if pending is None:
            return None
        existing = self._paired.get(pending.deviceId)
        roles_wanted = pending.requested_roles()
        scopes_wanted = normalize_device_auth_scopes(pending.scopes)
        for scope in scopes_wanted:
            if not any(scope.startswith(f"{r}.") for r in roles_wanted):
                return Forbidden("scope-outside-requested-roles", scope)
        approved_scopes = merge_scopes(
            existing.approvedScopes
            if existing and existing.approvedScopes is not None
            else existing.scopes
            if existing
            else None,
            pending.scopes,
        )
        tokens = dict(existing.tokens or {}) if existing else {}
        next_scopes: dict[str, list[str]] = {}
        for role in roles_wanted:
            scopes = _approved_token_scopes(
                role, pending, tokens.get(role), approved_scopes, existing
            )
            next_scopes[role] = scopes
            if role == "operator" and scopes:
                required = merge_scopes(role_token_scopes(role, pending.scopes), scopes) or scopes
                if caller_scopes is None:
                    return Forbidden("caller-scopes-required", required[0])
                missing = missing_requested_scope("operator", required, caller_scopes)
                if missing is not None:
                    return Forbidden("caller-missing-scope", missing)
        for role, scopes in next_scopes.items():
            old = tokens.get(role)
            tokens[role] = _new_token(role, scopes, existing=old, now=now, rotated=old is not None)
        device = PairedDevice(
            deviceId=pending.deviceId,
            publicKey=pending.publicKey,
            displayName=display_name or pending.displayName,
            platform=pending.platform,
            deviceFamily=pending.deviceFamily,
            clientId=pending.clientId,
            clientMode=pending.clientMode,
            role=pending.role,
            roles=_merge_roles(
                existing.roles if existing else None,
                existing.role if existing else None,
                pending.roles,
                pending.role,
            ),
            scopes=approved_scopes,
            approvedScopes=approved_scopes,
            remoteIp=remote_ip or pending.remoteIp,
            tokens=tokens,
            approvedVia=_merge_approval(existing, approved_via),
            operatorLabel=existing.operatorLabel if existing else None,
            createdAtMs=existing.createdAtMs if existing else now,
            approvedAtMs=now,
            lastSeenAtMs=existing.lastSeenAtMs if existing else None,
            lastSeenReason=existing.lastSeenReason if existing else None,
        )
        del self._pending[pending.requestId]
        self._paired[device.deviceId] = device
        self._dirty = True
        return Approved(pending.requestId, device)

    def reject(self, request_id: str, *, now: int) -> PendingRequest | None:
        pending = self.pending(request_id, now=now)
        if pending is None:
            return None
        del self._pending[pending.requestId]
        self._dirty = True
        return pending

    def remove(self, device_id: str) -> str | None:
        """Remove a paired device and its pending requests; its id, or None if unknown."""
        device_id = device_id.strip()
        if device_id not in self._paired:
            return None
        del self._paired[device_id]
        for rid, req in list(self._pending.items()):
            if req.deviceId == device_id:
                del self._pending[rid]
        self._dirty = True
        return device_id

    def touch(self, device_id: str, *, now: int, reason: str, **patch: str | None) -> None:
        """Refresh a paired device's metadata (`displayName`, `remoteIp`, ...) and last seen."""
        device = self._paired.get(device_id)
        if device is None:
            return
        changes: dict[str, Any] = {k: v for k, v in patch.items() if v is not None}
        self._paired[device_id] = msgspec.structs.replace(
            device, lastSeenAtMs=now, lastSeenReason=reason, **changes
        )
        self._soft_dirty = True

    def prune_superseded_silent(
        self, device_id: str, *, connected: Iterable[str], now: int
    ) -> list[PairedDevice]:
        """After a silent (local) approval: drop other silently paired devices of the same
        client (id, mode, display name) that are not connected and older than a minute."""
        anchor = self._paired.get(device_id)
        if anchor is None or anchor.approvedVia != "silent":
            return []
        key = _cluster_key(anchor)
        if key is None:
            return []
        protected = set(connected)
        removed = []
        for other in list(self._paired.values()):
            if (
                other.deviceId == anchor.deviceId
                or other.approvedVia != "silent"
                or _cluster_key(other) != key
                or now - other.approvedAtMs < PRUNE_RECENT_APPROVAL_GRACE_MS
                or other.deviceId in protected
            ):
                continue
            self.remove(other.deviceId)
            removed.append(other)
        return removed

    # --- tokens ----------------------------------------------------------------------------

    def verify_token(
        self, device_id: str, token: str, *, role: str, scopes: list[str], now: int
    ) -> str | None:
        """Check a device token for `role` and the requested scopes; None when valid, else
        OpenClaw's reason (`device-not-paired`, `token-missing`, `token-revoked`,
        `token-mismatch`, `scope-mismatch`)."""
        device = self._paired.get(device_id)
        if device is None:
            return "device-not-paired"
        entry = (device.tokens or {}).get(role.strip())
        if entry is None:
            return "token-missing"
        if entry.revokedAtMs is not None:
            return "token-revoked"
        if not token.strip() or not hmac.compare_digest(token.encode(), entry.token.encode()):
            return "token-mismatch"
        baseline = device.scope_baseline()
        if baseline is None or not role_scopes_allow(role, entry.scopes, baseline):
            return "scope-mismatch"
        if not role_scopes_allow(role, normalize_device_auth_scopes(scopes), entry.scopes):
            return "scope-mismatch"
        tokens = dict(device.tokens or {})
        tokens[role] = msgspec.structs.replace(entry, lastUsedAtMs=now)
        self._paired[device_id] = msgspec.structs.replace(
            device, tokens=tokens, lastSeenAtMs=now, lastSeenReason="device-token-auth"
        )
        self._soft_dirty = True
        return None

    def ensure_token(
        self, device_id: str, *, role: str, scopes: list[str], now: int
    ) -> DeviceToken | None:
        """The device's reusable token for `role` covering `scopes`, issuing a new one when
        the current one does not cover them; None outside the approved baseline."""
        device = self._paired.get(device_id)
        if device is None or role not in device.approved_roles():
            return None
        requested = normalize_device_auth_scopes(scopes)
        baseline = device.scope_baseline()
        if baseline is None or not role_scopes_allow(role, requested, baseline):
            return None
        existing = (device.tokens or {}).get(role)
        if (
            existing is not None
            and existing.revokedAtMs is None
            and role_scopes_allow(role, existing.scopes, baseline)
            and role_scopes_allow(role, requested, existing.scopes)
        ):
            return existing
        entry = _new_token(
            role, requested, existing=existing, now=now, rotated=existing is not None
        )
        self._set_token(device, entry)
        return entry

    def rotate_token(
        self,
        device_id: str,
        *,
        role: str,
        scopes: list[str] | None,
        caller_scopes: list[str] | None,
        now: int,
    ) -> DeviceToken | TokenRefused:
        device = self._paired.get(device_id.strip())
        if device is None or role not in device.approved_roles():
            return TokenRefused("unknown-device-or-role")
        existing = (device.tokens or {}).get(role)
        requested = normalize_device_auth_scopes(
            scopes if scopes is not None else existing.scopes if existing else device.scopes
        )
        baseline = device.scope_baseline()
        if baseline is None:
            return TokenRefused("missing-approved-scope-baseline")
        if not role_scopes_allow(role, requested, baseline):
            return TokenRefused("scope-outside-approved-baseline")
        if caller_scopes is not None:
            missing = missing_requested_scope(role, requested, caller_scopes)
            if missing is not None:
                return TokenRefused("caller-missing-scope", missing)
        entry = _new_token(role, requested, existing=existing, now=now, rotated=True)
        self._set_token(device, entry)
        return entry

    def revoke_token(
        self, device_id: str, *, role: str, caller_scopes: list[str] | None, now: int
    ) -> DeviceToken | TokenRefused:
        device = self._paired.get(device_id.strip())
        existing = (device.tokens or {}).get(role) if device is not None else None
        if device is None or existing is None or role not in device.approved_roles():
            return TokenRefused("unknown-device-or-role")
        if caller_scopes is not None:
            targets = normalize_device_auth_scopes(existing.scopes)
            missing = missing_requested_scope(role, targets, caller_scopes)
            if missing is not None:
                return TokenRefused("caller-missing-scope", missing)
        entry = msgspec.structs.replace(existing, revokedAtMs=now)
        self._set_token(device, entry)
        return entry

    def _set_token(self, device: PairedDevice, entry: DeviceToken) -> None:
        tokens = dict(device.tokens or {})
        tokens[entry.role] = entry
        self._paired[device.deviceId] = msgspec.structs.replace(device, tokens=tokens)
        self._dirty = True


def _compatible(existing: PendingRequest, incoming: PairingInput) -> bool:
    """An incoming request the single pending one already covers (same key and role)."""
    if existing.publicKey != incoming.public_key or (existing.role or "") != incoming.role:
        return False
    if not set(_merge_roles(incoming.role)) <= set(existing.requested_roles()):
        return False
    have = normalize_device_auth_scopes(existing.scopes)
    return all(
        role_scopes_allow(incoming.role, [s], have)
        for s in normalize_device_auth_scopes(incoming.scopes)
    )


def _approved_token_scopes(
    role: str,
    pending: PendingRequest,
    token: DeviceToken | None,
    approved: list[str] | None,
    existing: PairedDevice | None,
) -> list[str]:
    wanted = role_token_scopes(role, pending.scopes)
    if wanted:
        base_src = None
        if existing is not None:
            base_src = (
                existing.approvedScopes if existing.approvedScopes is not None else existing.scopes
            )
        baseline = role_token_scopes(role, base_src)
        delta = [s for s in wanted if s not in baseline] if token and baseline else wanted
        if not delta and token is not None:
            return role_token_scopes(role, token.scopes)
        return role_token_scopes(role, merge_scopes(token.scopes if token else None, delta))
    if token is not None:
        return role_token_scopes(role, token.scopes)
    return role_token_scopes(
        role, approved if approved is not None else existing.scopes if existing else None
    )


def _merge_approval(existing: PairedDevice | None, incoming: str) -> str | None:
    if incoming == "owner" or existing is None:
        return incoming
    if existing.approvedVia is None:
        return None
    if existing.approvedVia == "owner":
        return "owner"
    return incoming


def _cluster_key(device: PairedDevice) -> str | None:
    parts = [
        (v or "").strip().lower() for v in (device.clientId, device.clientMode, device.displayName)
    ]
    return "\0".join(parts) if any(parts) else None


async def open_pairing_store(
    state_dir: Path, document: SharedDocument | None = None
) -> PairingStore:
    """Load `<state-dir>/devices/pairing.json`, or the store synced with `document` (the
    cluster's), which that file seeds when the document does not exist yet (`PairingStore.
    open`). In a worker thread; a checkpoint. Raises `PairingStoreError`."""
    path = state_dir / STORE_RELATIVE_PATH
    if document is None:
        return await trio.to_thread.run_sync(PairingStore.load, path)
    return await trio.to_thread.run_sync(lambda: PairingStore.open(document, seed=path))
