"""Device identity, pairing and device tokens, as OpenClaw's gateway does them.

"Remote" devices connect from 127.0.0.2, which these gateways are told to treat as a
remote address (`GatewayOptions.remote_peer_addresses`): real sockets, with only the
locality decision moved (this machine allows loopback traffic only)."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.devices._device_auth import DeviceIdentity
from tests.conftest import (
    TEST_DEVICE,
    connect_params,
    gateway_url,
    local_config,
    open_client,
    running_gateway,
)
from tests.e2e._trust import connect_once
from transports import GatewayAuthError, GatewayClient, GatewayRequestError, open_gateway_client
from transports.server._gateway import Gateway

REMOTE = "127.0.0.2"


@asynccontextmanager
async def remote_gateway(tmp_path: Path, **kw: Any) -> AsyncIterator[Gateway]:
    async with running_gateway(
        tmp_path, kw.pop("config", None), remote_peer_addresses=frozenset({REMOTE}), **kw
    ) as gw:
        yield gw


@asynccontextmanager
async def watcher(gw: Gateway) -> AsyncIterator[tuple[GatewayClient, list[tuple[str, Any]]]]:
    """An admin client (which holds `operator.pairing`) recording the pairing events."""
    seen: list[tuple[str, Any]] = []

    def on_event(event: str, payload: Any, seq: int | None) -> None:
        if event.startswith("device.pair."):
            seen.append((event, payload))

    async with open_client(gw, on_event=on_event) as client:
        yield client, seen


def _device_client(gw: Gateway, device: DeviceIdentity, **kw: Any) -> Any:
    kw.setdefault("token", gw.auth.token)
    return open_gateway_client(gateway_url(gw), client_id="cli", mode="cli", device=device, **kw)


def _resign(device: DeviceIdentity, gw: Gateway, ch: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return connect_params(gw, ch, device=device, **kw)


PROOFS = [
    ("tampered", lambda d: d.update(signature=d["signature"][:-6] + "AAAAAA"), "device-signature"),
    ("wrong id", lambda d: d.update(id="0" * 64), "device-id-mismatch"),
    ("wrong nonce", lambda d: d.update(nonce="not-the-challenge"), "device-nonce-mismatch"),
    ("stale", lambda d: d.update(signedAt=d["signedAt"] - 3_600_000), "device-signature-stale"),
    ("future", lambda d: d.update(signedAt=d["signedAt"] + 180_000), "device-signature-stale"),
    ("bad key", lambda d: d.update(publicKey="%%%"), "device-id-mismatch"),
    (
        "another key",
        lambda d: d.update(signature=DeviceIdentity.generate().sign("v3|x")),
        "device-signature",
    ),
]
CODES = {
    "device-signature": ("DEVICE_AUTH_SIGNATURE_INVALID", "device signature invalid"),
    "device-id-mismatch": ("DEVICE_AUTH_DEVICE_ID_MISMATCH", "device identity mismatch"),
    "device-nonce-mismatch": ("DEVICE_AUTH_NONCE_MISMATCH", "device nonce mismatch"),
    "device-signature-stale": ("DEVICE_AUTH_SIGNATURE_EXPIRED", "device signature expired"),
}


@pytest.mark.parametrize(("name", "tamper", "reason"), PROOFS, ids=[p[0] for p in PROOFS])
async def test_a_bad_device_proof_is_refused_with_openclaws_code(gateway, name, tamper, reason):
    def params(ch: dict[str, Any]) -> dict[str, Any]:
        p = _resign(DeviceIdentity.generate(), gateway, ch)
        tamper(p["device"])
        return p

    with trio.fail_after(10):
        answer = await connect_once(gateway, params)
    code, message = CODES[reason]
    assert answer.error == {
        "code": "INVALID_REQUEST",
        "message": message,
        "details": {"code": code, "reason": reason},
    }
    assert (answer.close_code, answer.close_reason) == (1008, message)
    assert gateway.pairing.records(now=gateway.now_ms()) == ([], [])  # nothing paired


async def test_signatures_cover_scopes_and_v2_is_accepted(gateway) -> None:
    device = DeviceIdentity.generate()
    with trio.fail_after(10):
        # Signed for read, claiming admin: the signature no longer matches.
        def widened(ch: dict[str, Any]) -> dict[str, Any]:
            p = _resign(device, gateway, ch, scopes=["operator.read"])
            p["scopes"] = ["operator.admin"]
            return p

        answer = await connect_once(gateway, widened)
        assert answer.detail_code == "DEVICE_AUTH_SIGNATURE_INVALID"
        from runtime.devices._device_auth import SignedFields

        def v2(ch: dict[str, Any]) -> dict[str, Any]:
            p = connect_params(gateway, ch, device=None, scopes=["operator.read"])
            fields = SignedFields(
                device_id=device.device_id,
                client_id="test",
                client_mode="test",
                role="operator",
                scopes=("operator.read",),
                signed_at_ms=ch["payload"]["ts"],
                token=gateway.auth.token or "",
                nonce=ch["payload"]["nonce"],
            )
            p["device"] = device.connect_device(fields, version="v2")
            return p

        ok = await connect_once(gateway, v2)
        assert ok.ok and ok.hello["auth"]["scopes"] == ["operator.read"]


@pytest.mark.parametrize(
    ("client_id", "mode"),
    [("openclaw-tui", "ui"), ("openclaw-tui", "cli"), ("openclaw-control-ui", "webchat")],
)
async def test_ui_clients_need_a_device_identity(tmp_path: Path, client_id, mode) -> None:
    origin = "https://ui.example"
    config = local_config(gateway__controlUi__allowedOrigins=[origin])
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(10):
            answer = await connect_once(
                gw,
                lambda ch: connect_params(gw, ch, client_id=client_id, mode=mode, device=None),
                origin=origin if mode == "webchat" else None,
            )
            message = "control ui requires device identity (use HTTPS or localhost secure context)"
            assert answer.error == {
                "code": "INVALID_REQUEST",
                "message": message,
                "details": {"code": "CONTROL_UI_DEVICE_IDENTITY_REQUIRED"},
            }
            assert answer.close_code == 1008
            signed = await connect_once(
                gw,
                lambda ch: connect_params(gw, ch, client_id=client_id, mode=mode),
                origin=origin if mode == "webchat" else None,
            )
            assert signed.ok, signed.res


async def test_a_loopback_device_pairs_silently_and_gets_a_device_token(gateway) -> None:
    device = DeviceIdentity.generate()
    with trio.fail_after(10):
        async with watcher(gateway) as (admin, seen):
            async with _device_client(gateway, device, scopes=["operator.read"]) as c:
                assert c.hello["auth"]["scopes"] == ["operator.read"]
                assert c.device_token and c.hello["auth"]["issuedAtMs"] > 0
            listing = await admin.request("device.pair.list", {})
            await trio.testing.wait_all_tasks_blocked()
            resolved = [p for e, p in seen if e == "device.pair.resolved"]
            assert any(
                p["deviceId"] == device.device_id and p["decision"] == "approved" for p in resolved
            )
    [paired] = [d for d in listing["paired"] if d["deviceId"] == device.device_id]
    assert paired["approvedVia"] == "silent" and paired["clientId"] == "cli"
    assert paired["publicKey"] == device.public_key and paired["scopes"] == ["operator.read"]
    assert paired["tokens"] == [
        {"role": "operator", "scopes": ["operator.read"], "createdAtMs": paired["approvedAtMs"]}
    ]
    assert "approvedScopes" not in paired and c.device_token not in json.dumps(listing)
    store = gateway.state_dir / "devices" / "pairing.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert device.device_id in json.loads(store.read_text())["paired"]


async def test_a_remote_device_waits_for_approval_then_connects(tmp_path: Path) -> None:
    device = DeviceIdentity.generate()
    async with remote_gateway(tmp_path) as gw, watcher(gw) as (admin, seen):
        with trio.fail_after(20):
            with pytest.raises(GatewayAuthError) as err:
                async with _device_client(gw, device, local_address=REMOTE):
                    pass
            assert err.value.code == "NOT_PAIRED"
            assert str(err.value) == "pairing required: device is not approved yet"
            details = err.value.details
            assert details["code"] == "PAIRING_REQUIRED" and details["reason"] == "not-paired"
            assert (
                details["deviceId"] == device.device_id and details["requestedRole"] == "operator"
            )
            request_id = details["requestId"]
            await trio.testing.wait_all_tasks_blocked()
            [requested] = [p for e, p in seen if e == "device.pair.requested"]
            assert requested["requestId"] == request_id and requested["remoteIp"] == REMOTE
            assert requested["publicKey"] == device.public_key and requested["silent"] is False
            listing = await admin.request("device.pair.list", {})
            assert [p["requestId"] for p in listing["pending"]] == [request_id]
            assert device.device_id not in {d["deviceId"] for d in listing["paired"]}
            # The same device retrying refreshes its request (no new one).
            with pytest.raises(GatewayAuthError) as again:
                async with _device_client(gw, device, local_address=REMOTE):
                    pass
            assert again.value.details["requestId"] == request_id
            approved = await admin.request("device.pair.approve", {"requestId": request_id})
            assert approved["requestId"] == request_id
            assert approved["device"]["deviceId"] == device.device_id
            assert approved["device"]["approvedVia"] == "owner"
            await trio.testing.wait_all_tasks_blocked()
            assert (
                "device.pair.resolved",
                {
                    "requestId": request_id,
                    "deviceId": device.device_id,
                    "decision": "approved",
                    "ts": seen[-1][1]["ts"],
                },
            ) == seen[-1]
            async with _device_client(gw, device, local_address=REMOTE) as c:
                assert c.device_token and (await c.request("sessions.list", {}))["count"] == 0
            with pytest.raises(GatewayRequestError, match="unknown requestId"):
                await admin.request("device.pair.approve", {"requestId": request_id})


async def test_a_rejected_request_is_gone_and_a_retry_asks_again(tmp_path: Path) -> None:
    device = DeviceIdentity.generate()
    async with remote_gateway(tmp_path) as gw, watcher(gw) as (admin, seen):
        with trio.fail_after(20):
            with pytest.raises(GatewayAuthError) as err:
                async with _device_client(gw, device, local_address=REMOTE):
                    pass
            request_id = err.value.details["requestId"]
            rejected = await admin.request("device.pair.reject", {"requestId": request_id})
            assert rejected == {"requestId": request_id, "deviceId": device.device_id}
            await trio.testing.wait_all_tasks_blocked()
            assert seen[-1][0] == "device.pair.resolved" and seen[-1][1]["decision"] == "rejected"
            assert (await admin.request("device.pair.list", {}))["pending"] == []
            with pytest.raises(GatewayAuthError) as retry:
                async with _device_client(gw, device, local_address=REMOTE):
                    pass
            assert retry.value.details["requestId"] != request_id


async def test_a_remote_scope_upgrade_waits_and_keeps_the_approved_scopes(tmp_path: Path) -> None:
    device = DeviceIdentity.generate()
    async with remote_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with _device_client(gw, device, scopes=["operator.read"]):
                pass  # paired silently from loopback, with read
            with pytest.raises(GatewayAuthError) as err:
                async with _device_client(
                    gw, device, scopes=["operator.admin"], local_address=REMOTE
                ):
                    pass
            details = err.value.details
            assert str(err.value) == (
                "pairing required: device is asking for more scopes than currently approved"
            )
            assert details["reason"] == "scope-upgrade"
            assert details["approvedScopes"] == ["operator.read"]
            assert details["approvedRoles"] == ["operator"]
            async with _device_client(gw, device, scopes=["operator.read"], local_address=REMOTE):
                pass  # what was approved still works


async def test_device_tokens_are_accepted_rotated_and_revoked(gateway) -> None:
    device = DeviceIdentity.generate()
    scopes = ["operator.read", "operator.pairing"]
    with trio.fail_after(20):
        async with _device_client(gateway, device, scopes=scopes) as first:
            token = first.device_token
        assert token
        # The device token alone (no shared token) is a credential for that device.
        async with _device_client(
            gateway, device, token="", device_token=token, scopes=scopes
        ) as c:
            assert c.hello["auth"]["scopes"] == scopes and c.device_token == token
            with pytest.raises(
                GatewayRequestError, match=re.escape("missing scope: operator.write")
            ):
                await c.request("agent", {"message": "x", "idempotencyKey": "k"})
            # Self-rotation: the new token comes back in band; this connection is closed.
            rotated = await c.request(
                "device.token.rotate", {"deviceId": device.device_id, "role": "operator"}
            )
            assert rotated["tokenDelivery"] == "in-band" and rotated["token"] != token
            assert rotated["scopes"] == ["operator.pairing", "operator.read"]
            with trio.fail_after(5):
                await c._broken.wait()
        for bad, code in (
            (token, "AUTH_DEVICE_TOKEN_MISMATCH"),
            ("nope", "AUTH_DEVICE_TOKEN_MISMATCH"),
        ):
            with pytest.raises(GatewayAuthError) as err:
                async with _device_client(
                    gateway, device, token="", device_token=bad, scopes=scopes
                ):
                    pass
            assert err.value.details["code"] == code
        new = rotated["token"]
        with pytest.raises(GatewayAuthError) as wider:
            async with _device_client(
                gateway, device, token="", device_token=new, scopes=["operator.admin"]
            ):
                pass
        assert wider.value.details["code"] == "AUTH_SCOPE_MISMATCH"
        async with (
            _device_client(gateway, device, token="", device_token=new, scopes=scopes) as c,
            open_client(gateway) as admin,
        ):
            # An admin's rotation does not show the token; revocation ends the device's
            # connection and its token.
            other = await admin.request(
                "device.token.rotate", {"deviceId": device.device_id, "role": "operator"}
            )
            assert other["tokenDelivery"] == "withheld-cross-device" and "token" not in other
            await c._broken.wait()
            revoked = await admin.request(
                "device.token.revoke", {"deviceId": device.device_id, "role": "operator"}
            )
            assert revoked["deviceId"] == device.device_id and revoked["revokedAtMs"] > 0
            listing = await admin.request("device.pair.list", {})
        [paired] = [d for d in listing["paired"] if d["deviceId"] == device.device_id]
        assert paired["tokens"][0]["revokedAtMs"] == revoked["revokedAtMs"]
        # Revoked: the device re-pairs (silently, on loopback) with the shared token.
        async with _device_client(gateway, device, scopes=scopes) as again:
            assert again.device_token not in (token, new)


async def test_removing_a_device_closes_it_and_forgets_it(gateway) -> None:
    device = DeviceIdentity.generate()
    with trio.fail_after(20):
        async with open_client(gateway) as admin:
            async with _device_client(gateway, device, scopes=["operator.read"]) as c:
                removed = await admin.request("device.pair.remove", {"deviceId": device.device_id})
                assert removed == {"deviceId": device.device_id}
                await c._broken.wait()
                assert c.closed is not None and c.closed.code == 1008
            listing = await admin.request("device.pair.list", {})
            assert device.device_id not in {d["deviceId"] for d in listing["paired"]}
            with pytest.raises(GatewayRequestError, match="unknown deviceId"):
                await admin.request("device.pair.remove", {"deviceId": device.device_id})
            with pytest.raises(
                GatewayRequestError, match=re.escape("invalid device.pair.remove params")
            ):
                await admin.request("device.pair.remove", {"deviceId": ""})


async def test_a_device_token_caller_manages_only_its_own_device(gateway) -> None:
    mine, theirs = DeviceIdentity.generate(), DeviceIdentity.generate()
    scopes = ["operator.pairing"]
    with trio.fail_after(20):
        async with _device_client(gateway, theirs, scopes=scopes):
            pass
        async with _device_client(gateway, mine, scopes=scopes) as first:
            token = first.device_token
        async with _device_client(gateway, mine, token="", device_token=token, scopes=scopes) as c:
            listing = await c.request("device.pair.list", {})
            assert [d["deviceId"] for d in listing["paired"]] == [mine.device_id]
            with pytest.raises(GatewayRequestError, match="device pairing removal denied"):
                await c.request("device.pair.remove", {"deviceId": theirs.device_id})
            with pytest.raises(GatewayRequestError, match="device token rotation denied"):
                await c.request(
                    "device.token.rotate", {"deviceId": theirs.device_id, "role": "operator"}
                )
        # A read-only caller may not approve grants it does not hold itself.
        async with open_client(gateway, scopes=["operator.read"]) as reader:
            with pytest.raises(
                GatewayRequestError, match=re.escape("missing scope: operator.pairing")
            ):
                await reader.request("device.pair.list", {})


async def test_pairings_and_device_tokens_survive_a_restart(tmp_path: Path) -> None:
    device = DeviceIdentity.generate()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(10):
            async with _device_client(gw, device, scopes=["operator.read"]) as c:
                token = c.device_token
    async with remote_gateway(tmp_path) as gw:  # from "remote": no silent pairing to lean on
        with trio.fail_after(10):
            async with _device_client(
                gw,
                device,
                token="",
                device_token=token,
                scopes=["operator.read"],
                local_address=REMOTE,
            ) as c:
                assert c.device_token == token
            assert gw.pairing.paired(device.device_id) is not None


async def test_the_shared_test_device_is_paired_once(gateway) -> None:
    with trio.fail_after(10):
        for _ in range(3):
            async with open_client(gateway):
                pass
        writes = gateway.pairing.writes
        async with open_client(gateway):
            pass
    assert gateway.pairing.writes == writes  # a paired device's connect writes nothing
    assert gateway.pairing.paired(TEST_DEVICE.device_id) is not None
