"""`diagnostics.stability` and `gateway.identity.get` over a real socket, as OpenClaw's CLI
(`openclaw gateway stability`, `openclaw doctor`) reads them."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
import trio

from tests.conftest import running_gateway
from transports import GatewayRequestError


async def test_runs_show_up_as_stability_events(connect, gateway) -> None:
    with trio.fail_after(20):
        async with connect() as client:
            empty = await client.request("diagnostics.stability", {})
            assert empty["count"] == 0 and empty["events"] == [] and empty["capacity"] == 1000
            for n in range(3):
                final = await client.request(
                    "agent", {"message": f"hi {n}", "idempotencyKey": f"s{n}"}, expect_final=True
                )
                assert final["status"] == "ok"
            snap = await client.request("diagnostics.stability", {"limit": 2})
            assert snap["count"] == 6 and len(snap["events"]) == 2
            assert snap["summary"]["byType"] == {"model.usage": 3, "message.processed": 3}
            assert snap["firstSeq"] == 1 and snap["lastSeq"] == 6
            usage = await client.request("diagnostics.stability", {"type": "model.usage"})
            assert [e["provider"] for e in usage["events"]] == ["local"] * 3
            assert all(e["usage"]["output"] > 0 for e in usage["events"])
            assert "hi" not in str(usage)  # metadata only: no prompt, no reply
            done = await client.request(
                "diagnostics.stability", {"type": "message.processed", "sinceSeq": 4}
            )
            assert [e["outcome"] for e in done["events"]] == ["completed"]
            exporters = await client.request(
                "diagnostics.stability", {"type": "telemetry.exporter"}
            )
            assert exporters["events"] == [] and exporters["capacity"] == 16
            for bad in ({"limit": 0}, {"limit": 1001}, {"sinceSeq": -1}, {"kind": "x"}):
                with pytest.raises(GatewayRequestError) as info:
                    await client.request("diagnostics.stability", bad)
                assert info.value.code == "INVALID_REQUEST"
                assert next(iter(bad)) in info.value.message


async def test_the_gateway_has_one_identity_kept_across_restarts(tmp_path: Path, connect) -> None:
    with trio.fail_after(20):
        async with running_gateway(tmp_path / "own") as gw, connect(gw) as client:
            first = await client.request("gateway.identity.get", {})
            again = await client.request("gateway.identity.get", {})
        async with running_gateway(tmp_path / "own") as gw, connect(gw) as client:
            restarted = await client.request("gateway.identity.get", {})
    assert first == again == restarted
    raw = base64.urlsafe_b64decode(first["publicKey"] + "=" * (-len(first["publicKey"]) % 4))
    assert len(raw) == 32 and first["deviceId"] == hashlib.sha256(raw).hexdigest()
    key_file = tmp_path / "own" / "state" / "identity" / "gateway-device.json"
    assert key_file.stat().st_mode & 0o777 == 0o600
