"""Device identity proofs: the payloads, ids and signatures OpenClaw's clients make."""

from __future__ import annotations

import stat
from pathlib import Path

import attrs
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.devices._device_auth import (
    DEVICE_SIGNATURE_SKEW_MS,
    DeviceIdentity,
    DeviceProof,
    DeviceProofFailure,
    SignedFields,
    derive_device_id,
    normalize_device_metadata,
    verify_device_proof,
    verify_signature,
)

# Made by OpenClaw 2026.9.6's own `buildDeviceAuthPayloadV3` / `buildDeviceAuthPayload`,
# `deriveDeviceIdFromPublicKey` and `signDevicePayload` (Node), from the seed 32 x 0x07.
VECTOR = {
    "pub": "6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw",
    "id": "fe812c12f3ab4ce6ac5db69ac352f906cb1b11ef43fb33e252ef7ff552263889",
    "v3": "v3|fe812c12f3ab4ce6ac5db69ac352f906cb1b11ef43fb33e252ef7ff552263889|openclaw-tui"
    "|ui|operator|operator.admin,operator.read|1737264000000|tok|n0nce|linux|desktop",
    "v2": "v2|fe812c12f3ab4ce6ac5db69ac352f906cb1b11ef43fb33e252ef7ff552263889|openclaw-tui"
    "|ui|operator|operator.admin,operator.read|1737264000000|tok|n0nce",
    "sig3": "YrRSFx5B9cEdOm9_yfY1yrqujbvLRPUb6BLqWpqQq0m8svAB6nm6DEL7A-_U8d2jSlSilbBdjrKfAGsDziNxCw",
    "sig2": "cbJ5c81NnR9MfqtK94IVP8LvEke_RiZmgFLRJeNn-CnHzq6LTddoZBsqRNW7RKnXk6pch7Chqg3WQdW94m_fBw",
}
FIELDS = SignedFields(
    device_id=VECTOR["id"],
    client_id="openclaw-tui",
    client_mode="ui",
    role="operator",
    scopes=("operator.admin", "operator.read"),
    signed_at_ms=1737264000000,
    token="tok",
    nonce="n0nce",
    platform=" Linux ",
    device_family="Desktop",
)


def test_payloads_ids_and_signatures_match_openclaws() -> None:
    assert FIELDS.payload_v3() == VECTOR["v3"] and FIELDS.payload_v2() == VECTOR["v2"]
    assert derive_device_id(VECTOR["pub"]) == VECTOR["id"]
    assert verify_signature(VECTOR["pub"], VECTOR["v3"], VECTOR["sig3"])
    assert verify_signature(VECTOR["pub"], VECTOR["v2"], VECTOR["sig2"])
    assert not verify_signature(VECTOR["pub"], VECTOR["v2"], VECTOR["sig3"])
    ours = DeviceIdentity(Ed25519PrivateKey.from_private_bytes(bytes([7] * 32)))
    assert ours.public_key == VECTOR["pub"] and ours.device_id == VECTOR["id"]
    assert ours.sign(VECTOR["v3"]) == VECTOR["sig3"]  # ed25519 is deterministic


def test_metadata_is_trimmed_and_only_ascii_lowercased() -> None:
    assert normalize_device_metadata("  MacOS 14 ") == "macos 14"
    assert normalize_device_metadata("ÄBC") == "Äbc"
    assert normalize_device_metadata(None) == ""


def _verify(**changes: object) -> DeviceProof | DeviceProofFailure:
    args: dict[str, object] = {
        "device_id": VECTOR["id"],
        "public_key": VECTOR["pub"],
        "signature": VECTOR["sig3"],
        "signed_at_ms": FIELDS.signed_at_ms,
        "nonce": "n0nce",
        "expected_nonce": "n0nce",
        "fields": FIELDS,
        "now": FIELDS.signed_at_ms + 1000,
    }
    args.update(changes)
    return verify_device_proof(**args)  # type: ignore[arg-type]


def test_a_valid_proof_names_its_version() -> None:
    assert _verify() == DeviceProof(VECTOR["id"], VECTOR["pub"], "v3")
    assert isinstance(ok := _verify(signature=VECTOR["sig2"]), DeviceProof) and ok.version == "v2"
    pem = (
        Ed25519PrivateKey.from_private_bytes(bytes([7] * 32))
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    assert _verify(public_key=pem) == DeviceProof(VECTOR["id"], VECTOR["pub"], "v3")


@pytest.mark.parametrize(
    ("changes", "reason", "code"),
    [
        ({"device_id": "0" * 64}, "device-id-mismatch", "DEVICE_AUTH_DEVICE_ID_MISMATCH"),
        ({"public_key": "not base64!"}, "device-id-mismatch", "DEVICE_AUTH_DEVICE_ID_MISMATCH"),
        (
            {"now": FIELDS.signed_at_ms + DEVICE_SIGNATURE_SKEW_MS + 1},
            "device-signature-stale",
            "DEVICE_AUTH_SIGNATURE_EXPIRED",
        ),
        (
            {"now": FIELDS.signed_at_ms - DEVICE_SIGNATURE_SKEW_MS - 1},
            "device-signature-stale",
            "DEVICE_AUTH_SIGNATURE_EXPIRED",
        ),
        ({"nonce": "  "}, "device-nonce-missing", "DEVICE_AUTH_NONCE_REQUIRED"),
        ({"expected_nonce": "other"}, "device-nonce-mismatch", "DEVICE_AUTH_NONCE_MISMATCH"),
        ({"signature": VECTOR["sig3"][::-1]}, "device-signature", "DEVICE_AUTH_SIGNATURE_INVALID"),
        ({"signature": "A" * 5000}, "device-signature", "DEVICE_AUTH_SIGNATURE_INVALID"),
        (
            {"fields": attrs.evolve(FIELDS, token="another token")},
            "device-signature",
            "DEVICE_AUTH_SIGNATURE_INVALID",
        ),
        (
            {"fields": attrs.evolve(FIELDS, scopes=("operator.admin",))},
            "device-signature",
            "DEVICE_AUTH_SIGNATURE_INVALID",
        ),
    ],
    ids=[
        "wrong-id",
        "bad-key",
        "stale",
        "from-the-future",
        "blank-nonce",
        "wrong-nonce",
        "tampered",
        "oversize",
        "other-token",
        "other-scopes",
    ],
)
def test_each_failure_has_openclaws_reason_message_and_code(changes, reason, code) -> None:
    failure = _verify(**changes)
    assert isinstance(failure, DeviceProofFailure)
    assert (failure.reason, failure.code) == (reason, code)
    assert failure.message.startswith("device ")


def test_an_identity_file_is_created_0600_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "id" / "device.json"
    first = DeviceIdentity.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = DeviceIdentity.load_or_create(path)
    assert again.device_id == first.device_id and again.sign("x") == first.sign("x")
    path.write_text("{}")
    with pytest.raises(ValueError, match="not a device identity file"):
        DeviceIdentity.load_or_create(path)
