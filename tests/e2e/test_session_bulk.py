"""`sessions.patchMany` and `sessions.cleanup` over a real socket: one patch applied to many
sessions with an outcome each (a failing target fails alone), OpenClaw's scope rule for the
patch's fields; the store maintenance of `openclaw sessions cleanup` (idle sessions pruned,
message-less ones with fixMissing, per-peer direct sessions with fixDmScope, never the main
or active session), on SQLite and PostgreSQL. Answers validate against OpenClaw 2026.9.6's
definitions where it has one."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from runtime.model import parse_config
from runtime.sessions import new_session_row
from tests._schema import validate
from tests.actors._databases import pg_url
from tests.conftest import client_auth, frame_checker, gateway_url, running_gateway
from transports import GatewayClient, GatewayRequestError, open_gateway_client
from transports.server._gateway import Gateway

__all__ = ["pg_url"]  # the fixture, used by name

CONFIG: dict[str, Any] = {
    "agents": {"defaults": {"maxConcurrent": 4}, "list": [{"id": "main"}, {"id": "ops"}]}
}
DAY = 86_400_000


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    return {
        "storage": {"backend": "postgres", "postgres": {"url": request.getfixturevalue("pg_url")}}
    }


@asynccontextmanager
async def bulk_gateway(
    tmp_path: Path, storage: dict[str, Any] | None = None
) -> AsyncIterator[tuple[Gateway, GatewayClient]]:
    async with (
        running_gateway(tmp_path, parse_config({**CONFIG, **(storage or {})})) as gw,
        open_gateway_client(
            gateway_url(gw),
            client_id="test",
            mode="test",
            on_frame=frame_checker().check,
            on_event=lambda *_: None,
            **client_auth(gw),
        ) as c,
    ):
        yield gw, c


async def say(c: GatewayClient, key: str, text: str = "hello") -> None:
    final = await c.request(
        "agent",
        {"message": text, "sessionKey": key, "idempotencyKey": f"{key}:{text}"},
        expect_final=True,
    )
    assert final["status"] == "ok"


async def row_of(gw: Gateway, key: str) -> Any:
    return await gw.supervisor.store.get_session(key)


async def test_patch_many_applies_one_patch_with_an_outcome_each(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with bulk_gateway(tmp_path) as (gw, c):
            for name in ("a", "b"):
                await say(c, f"agent:main:{name}")
            sid_a = (await row_of(gw, "agent:main:a")).sessionId
            result = await c.request(
                "sessions.patchMany",
                {
                    "targets": [
                        {"key": "agent:main:a", "expectedSessionId": sid_a},
                        {"key": "b", "agentId": "main"},
                        {"key": "agent:main:b", "expectedSessionId": "not-its-id"},
                    ],
                    "patch": {"thinkingLevel": "high", "label": "Triage"},
                },
            )
            validate("SessionsPatchManyResult", result)
            outcomes = result["outcomes"]
            assert [o["ok"] for o in outcomes] == [True, False, False]
            assert outcomes[1]["agentId"] == "main" and outcomes[1]["key"] == "b"
            assert outcomes[1]["error"]["code"] == "INVALID_REQUEST"
            assert "label already in use" in outcomes[1]["error"]["message"]
            assert "not-its-id" in outcomes[2]["error"]["message"]
            a = await row_of(gw, "agent:main:a")
            assert (a.thinkingLevel, a.label) == ("high", "Triage")

            result = await c.request(
                "sessions.patchMany",
                {
                    "targets": [{"key": "agent:main:a"}, {"key": "agent:main:b"}],
                    "patch": {"thinkingLevel": None, "verboseLevel": "on"},
                },
            )
            validate("SessionsPatchManyResult", result)
            assert [o["ok"] for o in result["outcomes"]] == [True, True]
            for name in ("a", "b"):
                row = await row_of(gw, f"agent:main:{name}")
                assert (row.thinkingLevel, row.verboseLevel) == (None, "on")

            for bad, named in (
                ({"targets": [], "patch": {"label": "x"}}, "targets"),
                ({"targets": [{"key": "agent:main:a"}], "patch": {}}, "patch"),
                ({"targets": [{"key": "agent:main:a"}], "patch": {"nope": 1}}, "patch.nope"),
                (
                    {"targets": [{"key": "agent:main:a"}], "patch": {"thinkingLevel": 3}},
                    "thinkingLevel",
                ),
                ({"targets": [{"key": "agent:main:a", "x": 1}], "patch": {"label": "y"}}, "x"),
            ):
                with pytest.raises(GatewayRequestError) as info:
                    await c.request("sessions.patchMany", bad)
                assert info.value.code == "INVALID_REQUEST" and named in info.value.message


async def test_patch_many_needs_admin_beyond_the_control_uis_fields(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with bulk_gateway(tmp_path) as (gw, admin):
            await say(admin, "agent:main:a")
            async with open_gateway_client(
                gateway_url(gw),
                client_id="test",
                mode="test",
                scopes=["operator.read", "operator.write"],
                on_event=lambda *_: None,
                **client_auth(gw),
            ) as writer:
                ok = await writer.request(
                    "sessions.patchMany",
                    {"targets": [{"key": "agent:main:a"}], "patch": {"thinkingLevel": "low"}},
                )
                assert ok["outcomes"][0]["ok"] is True
                for patch in ({"verboseLevel": "on"}, {"permissionMode": "full"}):
                    with pytest.raises(GatewayRequestError) as info:
                        await writer.request(
                            "sessions.patchMany",
                            {"targets": [{"key": "agent:main:a"}], "patch": patch},
                        )
                    assert info.value.code == "FORBIDDEN"
                    assert "operator.admin" in info.value.message
                with pytest.raises(GatewayRequestError) as info:
                    await writer.request("sessions.cleanup", {})
                assert info.value.code == "FORBIDDEN"


async def test_cleanup_prunes_as_openclaws_maintenance(
    tmp_path: Path, storage: dict[str, Any]
) -> None:
    with trio.fail_after(60):
        async with bulk_gateway(tmp_path, storage) as (gw, c):
            await say(c, "agent:main:main")
            await say(c, "agent:main:recent")
            await say(c, "agent:main:empty-but-used")
            await say(c, "agent:main:direct:peer-1")
            await say(c, "agent:ops:old-ops")
            store = gw.supervisor.store
            old = msgspec.structs.replace(
                await row_of(gw, "agent:main:recent"),
                key="agent:main:stale",
                sessionId="sid-stale",
                updatedAt=1_000,
            )
            await store.put_session(old)  # idle for decades, with no transcript
            old_main = msgspec.structs.replace(await row_of(gw, "agent:main:main"), updatedAt=1_000)
            await store.put_session(old_main)  # the main session: never pruned
            empty = new_session_row(
                "agent:main:no-messages", now_ms=int(time.time() * 1000), session_id="sid-e"
            )
            await store.put_session(empty)
            active = new_session_row(
                "agent:main:active-empty", now_ms=int(time.time() * 1000), session_id="sid-x"
            )
            await store.put_session(active)
            await store.flush()

            result = await c.request("sessions.cleanup", {})
            assert result["agentId"] == "main" and result["mode"] == "enforce"
            assert (result["pruned"], result["missing"], result["dmScopeRetired"]) == (1, 0, 0)
            assert result["beforeCount"] == 7 and result["afterCount"] == 6
            assert result["applied"] is True and result["wouldMutate"] is True
            assert await row_of(gw, "agent:main:stale") is None
            assert await row_of(gw, "agent:main:main") is not None

            result = await c.request(
                "sessions.cleanup",
                {"fixMissing": True, "fixDmScope": True, "activeKey": "active-empty"},
            )
            assert (result["missing"], result["dmScopeRetired"]) == (1, 1)
            assert await row_of(gw, "agent:main:no-messages") is None
            assert await row_of(gw, "agent:main:direct:peer-1") is None
            assert await row_of(gw, "agent:main:active-empty") is not None
            assert await row_of(gw, "agent:main:recent") is not None
            assert (await c.request("sessions.cleanup", {}))["wouldMutate"] is False

            both = await c.request("sessions.cleanup", {"allAgents": True})
            assert both["allAgents"] is True
            assert [s["agentId"] for s in both["stores"]] == ["main", "ops"]
            with pytest.raises(GatewayRequestError) as info:
                await c.request("sessions.cleanup", {"agent": "nobody"})
            assert info.value.code == "INVALID_REQUEST" and "nobody" in info.value.message
            with pytest.raises(GatewayRequestError) as info:
                await c.request("sessions.cleanup", {"dryRun": True})
            assert info.value.code == "INVALID_REQUEST" and "dryRun" in info.value.message
