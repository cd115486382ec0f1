"""Device identity: the ed25519 proof a client sends in `connect.params.device`.

A device is an ed25519 key pair. Its id is the hex SHA-256 of the raw 32-byte public key;
`publicKey` travels as unpadded base64url of the raw key (a PEM `PUBLIC KEY` is accepted
too, as OpenClaw does). The client signs the server's `connect.challenge` nonce inside a
pipe-joined payload (OpenClaw's `buildDeviceAuthPayloadV3` / `buildDeviceAuthPayload`):

    v3|deviceId|clientId|clientMode|role|scope1,scope2|signedAtMs|token|nonce|platform|deviceFamily
    v2|deviceId|clientId|clientMode|role|scope1,scope2|signedAtMs|token|nonce

`token` is the connect's `auth.token`, else `auth.deviceToken`, else `auth.bootstrapToken`,
else empty; `platform` and `deviceFamily` are trimmed and ASCII-lowercased. The gateway
checks, in OpenClaw's order: the id is the key's hash, `signedAt` is within 2 minutes of
now, the nonce is the challenge's, the signature verifies over v3 (else v2), the key is
usable. Each failure has OpenClaw's reason, message and detail code (`DeviceProofFailure`).

The signing side (`DeviceIdentity`) is what clawlane's own client uses; its key file is
`{"version":1, "deviceId", "publicKeyPem", "privateKeyPem", "createdAtMs"}`, mode 0600.

The ed25519 primitives come from `cryptography` (a well-kept binding to OpenSSL).
Blocking file I/O only in `DeviceIdentity.load_or_create`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

# `cryptography` (OpenSSL's bindings, a few MiB) is imported by the functions that sign or
# verify, not here: a gateway loads it when the first device connects, and the CLI's client
# (which imports `DeviceIdentity` but connects with a token) not at all.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

DEVICE_SIGNATURE_SKEW_MS: Final = 120_000
"""How far `signedAt` may be from the gateway's clock (OpenClaw: 2 minutes)."""
MAX_BASE64_INPUT: Final = 4096
_RAW_KEY_BYTES: Final = 32
_B64URL: Final = re.compile(r"^[A-Za-z0-9_\-+/]*={0,2}$")

# Failure reasons (OpenClaw's `device-*` reasons), their messages and detail codes.
REASON_ID_MISMATCH: Final = "device-id-mismatch"
REASON_STALE: Final = "device-signature-stale"
REASON_NONCE_MISSING: Final = "device-nonce-missing"
REASON_NONCE_MISMATCH: Final = "device-nonce-mismatch"
REASON_SIGNATURE: Final = "device-signature"
REASON_PUBLIC_KEY: Final = "device-public-key"

_FAILURES: Final = {
    REASON_ID_MISMATCH: ("device identity mismatch", "DEVICE_AUTH_DEVICE_ID_MISMATCH"),
    REASON_STALE: ("device signature expired", "DEVICE_AUTH_SIGNATURE_EXPIRED"),
    REASON_NONCE_MISSING: ("device nonce required", "DEVICE_AUTH_NONCE_REQUIRED"),
    REASON_NONCE_MISMATCH: ("device nonce mismatch", "DEVICE_AUTH_NONCE_MISMATCH"),
    REASON_SIGNATURE: ("device signature invalid", "DEVICE_AUTH_SIGNATURE_INVALID"),
    REASON_PUBLIC_KEY: ("device public key invalid", "DEVICE_AUTH_PUBLIC_KEY_INVALID"),
}


def now_ms() -> int:
    return int(time.time() * 1000)


def normalize_device_metadata(value: str | None) -> str:
    """Trim, and lowercase ASCII letters only (OpenClaw's `normalizeDeviceMetadataForAuth`)."""
    if not isinstance(value, str):
        return ""
    trimmed = value.strip()
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in trimmed)


@attrs.frozen
class SignedFields:
    """What a device signature covers (besides the version and the metadata of v3)."""

    device_id: str
    client_id: str
    client_mode: str
    role: str
    scopes: tuple[str, ...]
    signed_at_ms: int
    token: str
    nonce: str
    platform: str = ""
    device_family: str = ""

    def payload_v2(self) -> str:
        return "|".join(
            (
                "v2",
                self.device_id,
                self.client_id,
                self.client_mode,
                self.role,
                ",".join(self.scopes),
                str(self.signed_at_ms),
                self.token,
                self.nonce,
            )
        )

    def payload_v3(self) -> str:
        return "|".join(
            (
                "v3",
                self.device_id,
                self.client_id,
                self.client_mode,
                self.role,
                ",".join(self.scopes),
                str(self.signed_at_ms),
                self.token,
                self.nonce,
                normalize_device_metadata(self.platform),
                normalize_device_metadata(self.device_family),
            )
        )


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Permissive base64url (or base64) decoding, bounded. Raises `ValueError`."""
    if not text or len(text) > MAX_BASE64_INPUT or not _B64URL.match(text):
        raise ValueError("not base64url")
    normalized = text.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(normalized + "=" * (-len(normalized) % 4), validate=True)
    except binascii.Error as exc:
        raise ValueError("not base64url") from exc


def public_key_raw(public_key: str) -> bytes | None:
    """The raw ed25519 public key from base64url (or a PEM `PUBLIC KEY`); None if unusable."""
    try:
        if "BEGIN" in public_key:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

            key = serialization.load_pem_public_key(public_key.encode("utf-8"))
            if not isinstance(key, Ed25519PublicKey):
                return None
            return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        raw = b64url_decode(public_key)
    except ValueError:
        return None
    return raw or None


def derive_device_id(public_key: str) -> str | None:
    """The device id of a public key: hex SHA-256 of its raw bytes (None if unusable)."""
    raw = public_key_raw(public_key)
    return hashlib.sha256(raw).hexdigest() if raw is not None else None


def normalized_public_key(public_key: str) -> str | None:
    """The canonical base64url form of a public key (what pairing records store)."""
    raw = public_key_raw(public_key)
    return b64url_encode(raw) if raw is not None else None


def verify_signature(public_key: str, payload: str, signature: str) -> bool:
    raw = public_key_raw(public_key)
    if raw is None or len(raw) != _RAW_KEY_BYTES:
        return False
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        sig = b64url_decode(signature)
        Ed25519PublicKey.from_public_bytes(raw).verify(sig, payload.encode("utf-8"))
    except (ValueError, InvalidSignature):
        return False
    return True


@attrs.frozen
class DeviceProofFailure:
    """A device proof refused: OpenClaw's `reason`, message and `details.code`."""

    reason: str

    @property
    def message(self) -> str:
        return _FAILURES[self.reason][0]

    @property
    def code(self) -> str:
        return _FAILURES[self.reason][1]


@attrs.frozen
class DeviceProof:
    """A verified device: its id, canonical public key and the payload version it signed."""

    device_id: str
    public_key: str
    version: str


def verify_device_proof(
    *,
    device_id: str,
    public_key: str,
    signature: str,
    signed_at_ms: int,
    nonce: str,
    expected_nonce: str,
    fields: SignedFields,
    now: int | None = None,
) -> DeviceProof | DeviceProofFailure:
    """Check a `connect.params.device` in OpenClaw's order (see the module docstring).
    `fields` carries what the client signed over (its `device_id`, `signed_at_ms` and
    `nonce` are taken from the device itself). Pure."""
    if derive_device_id(public_key) != device_id:
        return DeviceProofFailure(REASON_ID_MISMATCH)
    current = now_ms() if now is None else now
    if abs(current - signed_at_ms) > DEVICE_SIGNATURE_SKEW_MS:
        return DeviceProofFailure(REASON_STALE)
    given_nonce = nonce.strip()
    if not given_nonce:
        return DeviceProofFailure(REASON_NONCE_MISSING)
    if given_nonce != expected_nonce:
        return DeviceProofFailure(REASON_NONCE_MISMATCH)
    signed = attrs.evolve(fields, device_id=device_id, signed_at_ms=signed_at_ms, nonce=given_nonce)
    if verify_signature(public_key, signed.payload_v3(), signature):
        version = "v3"
    elif verify_signature(public_key, signed.payload_v2(), signature):
        version = "v2"
    else:
        return DeviceProofFailure(REASON_SIGNATURE)
    canonical = normalized_public_key(public_key)
    if canonical is None:
        return DeviceProofFailure(REASON_PUBLIC_KEY)
    return DeviceProof(device_id=device_id, public_key=canonical, version=version)


@attrs.frozen
class DeviceIdentity:
    """A device key pair that signs connects (clawlane's client; tests)."""

    private_key: Ed25519PrivateKey
    created_at_ms: int = attrs.field(factory=now_ms)

    @classmethod
    def generate(cls) -> DeviceIdentity:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return cls(Ed25519PrivateKey.generate())

    @property
    def public_key_raw(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self.private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    @property
    def public_key(self) -> str:
        """Unpadded base64url of the raw public key (what `connect` sends)."""
        return b64url_encode(self.public_key_raw)

    @property
    def device_id(self) -> str:
        return hashlib.sha256(self.public_key_raw).hexdigest()

    def sign(self, payload: str) -> str:
        return b64url_encode(self.private_key.sign(payload.encode("utf-8")))

    def connect_device(self, fields: SignedFields, *, version: str = "v3") -> dict[str, object]:
        """`connect.params.device` signing `fields` (whose `device_id` is replaced by ours)."""
        signed = attrs.evolve(fields, device_id=self.device_id)
        payload = signed.payload_v3() if version == "v3" else signed.payload_v2()
        return {
            "id": self.device_id,
            "publicKey": self.public_key,
            "signature": self.sign(payload),
            "signedAt": signed.signed_at_ms,
            "nonce": signed.nonce,
        }

    # --- persistence ------------------------------------------------------------------------

    def to_json(self) -> str:
        from cryptography.hazmat.primitives import serialization

        pem_private = self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        pem_public = self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return json.dumps(
            {
                "version": 1,
                "deviceId": self.device_id,
                "publicKeyPem": pem_public.decode("ascii"),
                "privateKeyPem": pem_private.decode("ascii"),
                "createdAtMs": self.created_at_ms,
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> DeviceIdentity:
        """Raises `ValueError` when the file is not a device identity."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        try:
            data = json.loads(text)
            key = serialization.load_pem_private_key(
                data["privateKeyPem"].encode("ascii"), password=None
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a device identity file: {exc}") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("not a device identity file: the key is not ed25519")
        created = data.get("createdAtMs")
        return cls(key, created if isinstance(created, int) else now_ms())

    @classmethod
    def load_or_create(cls, path: Path) -> DeviceIdentity:
        """Read the identity at `path`, or create one there (mode 0600). Blocking.
        Raises `ValueError` for a file that is not an identity, `OSError` for I/O."""
        try:
            return cls.from_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            pass
        identity = cls.generate()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(identity.to_json())
        os.replace(tmp, path)
        return identity
