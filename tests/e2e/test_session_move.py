"""`sessions.move` over a real socket: OpenClaw 2026.9.6's params are checked (the expected
placement, the target's kind, `abandonSource` towards the gateway only), an unknown
session is `INVALID_REQUEST`, a profile target needs `operator.admin`, and a clawlane
session, which always runs on the gateway (placement `local`), is refused as OpenClaw
refuses a local session."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from transports import GatewayClient, GatewayRequestError

EXPECTED = {"generation": 0, "environmentId": "env-1", "ownerEpoch": 1}


async def refused(c: GatewayClient, params: dict[str, Any]) -> GatewayRequestError:
    with pytest.raises(GatewayRequestError) as info:
        await c.request("sessions.move", params)
    return info.value


async def test_a_local_session_cannot_move(connect) -> None:
    with trio.fail_after(30):
        async with connect(on_event=lambda *_: None) as c:
            await c.request(
                "agent",
                {"message": "hi", "sessionKey": "agent:main:m", "idempotencyKey": "m1"},
                expect_final=True,
            )
            for target in ({"kind": "gateway"}, {"kind": "device", "deviceId": "phone"}):
                error = await refused(
                    c, {"key": "agent:main:m", "expected": EXPECTED, "target": target}
                )
                assert error.code == "INVALID_REQUEST"
                assert error.message == "session cannot move from placement local"
            error = await refused(
                c, {"key": "agent:main:nope", "expected": EXPECTED, "target": {"kind": "gateway"}}
            )
            assert error.code == "INVALID_REQUEST" and "session not found" in error.message
            for params, named in (
                ({"key": "agent:main:m", "target": {"kind": "gateway"}}, "expected"),
                (
                    {"key": "agent:main:m", "expected": EXPECTED, "target": {"kind": "moon"}},
                    "target",
                ),
                (
                    {
                        "key": "agent:main:m",
                        "expected": {**EXPECTED, "ownerEpoch": 0},
                        "target": {"kind": "gateway"},
                    },
                    "ownerEpoch",
                ),
                (
                    {
                        "key": "agent:main:m",
                        "expected": EXPECTED,
                        "target": {"kind": "device", "deviceId": "d"},
                        "abandonSource": True,
                    },
                    "abandonSource",
                ),
            ):
                error = await refused(c, params)
                assert error.code == "INVALID_REQUEST" and named in error.message, error
        async with connect(scopes=["operator.read", "operator.write"]) as writer:
            error = await refused(
                writer,
                {
                    "key": "agent:main:m",
                    "expected": EXPECTED,
                    "target": {"kind": "profile", "profileId": "p"},
                },
            )
            assert error.code == "FORBIDDEN" and "operator.admin" in error.message
