"""What OpenClaw 2026.9.6's Control UI sends to open and to fork a session: `sessions.resolve`
with a `reference` (a page's address, `/chat/<agent>/<session>`: a reload, a bookmark, a
shared link) and `sessions.create` with `fork` (a new session starting from another's
transcript), on a real gateway."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import local_config, open_client, running_gateway
from transports import GatewayClient, GatewayRequestError
from transports.methods._sessions import session_slug

TIMEOUT = 30


async def _turn(client: GatewayClient, key: str, message: str, run_id: str) -> None:
    final = await client.request(
        "agent",
        {"message": message, "idempotencyKey": run_id, "sessionKey": key},
        expect_final=True,
    )
    assert final["status"] == "ok"


def _texts(history: dict[str, Any]) -> list[str]:
    out = []
    for m in history["messages"]:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        else:
            out.append("".join(c.get("text", "") for c in content if isinstance(c, dict)))
    return out


def test_the_slug_is_openclaws():
    assert session_slug("Plan the Q3 offsite!") == "plan-the-q3-offsite"
    assert session_slug("deadbeef 1234") == ""  # only hex digits: no slug
    assert session_slug("  Über cool  ") == "ber-cool"
    assert session_slug("x" * 60) == "x" * 48
    assert session_slug(None) == ""


async def test_a_page_address_resolves_by_key_then_by_slug(tmp_path: Path) -> None:
    u1, u2, u3 = (str(uuid.uuid4()) for _ in range(3))
    with trio.fail_after(TIMEOUT):
        async with running_gateway(tmp_path, local_config()) as gw, open_client(gw) as client:
            await _turn(client, "work", "hello", "r1")
            exact = await client.request(
                "sessions.resolve",
                {
                    "reference": {"key": "agent:main:work", "slug": "whatever"},
                    "agentId": "main",
                    "includeGlobal": True,
                    "includeUnknown": True,
                    "allowMissing": True,
                },
            )
            assert exact == {"ok": True, "key": "agent:main:work", "agentId": "main"}
            for key, label in ((f"dashboard-{u1}", "Trip plans"), (f"dashboard-{u2}", "Budget")):
                await client.request("sessions.create", {"key": key, "label": label})
            # the address names a key that moved on (another id), and the title's slug
            by_slug = await client.request(
                "sessions.resolve",
                {"reference": {"key": f"agent:main:dashboard-{u3}", "slug": "trip-plans"}},
            )
            assert by_slug == {
                "ok": True,
                "key": f"agent:main:dashboard-{u1}",
                "agentId": "main",
                "displayName": "Trip plans",
            }
            await client.request(
                "sessions.create", {"key": f"dashboard-{u3}", "label": "Trip: plans"}
            )
            gone = f"agent:main:dashboard-{uuid.uuid4()}"
            both = await client.request(
                "sessions.resolve", {"reference": {"key": gone, "slug": "trip-plans"}}
            )
            assert both["ok"] is False
            assert sorted(c["key"] for c in both["candidates"]) == sorted(
                [f"agent:main:dashboard-{u1}", f"agent:main:dashboard-{u3}"]
            )
            missing = {"reference": {"key": gone, "slug": "nothing-here"}}
            with pytest.raises(GatewayRequestError, match=f"No session found: {gone}") as info:
                await client.request("sessions.resolve", missing)
            assert info.value.code == "INVALID_REQUEST"
            allowed = await client.request("sessions.resolve", {**missing, "allowMissing": True})
            assert allowed == {"ok": False}
            with pytest.raises(GatewayRequestError, match=r"\(not multiple\)"):
                await client.request(
                    "sessions.resolve", {"key": "work", "reference": {"key": "agent:main:work"}}
                )
            with pytest.raises(GatewayRequestError, match="is required"):
                await client.request("sessions.resolve", {"agentId": "main"})
            with pytest.raises(
                GatewayRequestError, match=r"unknown field `size` - at `\$\.reference`"
            ):
                await client.request(
                    "sessions.resolve", {"reference": {"key": "agent:main:work", "size": 1}}
                )


async def test_a_fork_starts_with_the_parents_transcript(tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        async with running_gateway(tmp_path, local_config()) as gw, open_client(gw) as client:
            await _turn(client, "parent", "the owl is grey", "p1")
            await _turn(client, "parent", "and it hoots", "p2")
            parent = _texts(await client.request("chat.history", {"sessionKey": "parent"}))
            created = await client.request(
                "sessions.create",
                {"key": "child", "parentSessionKey": "parent", "fork": True, "label": "Fork"},
            )
            assert created["ok"] is True and created["key"] == "agent:main:child"
            assert created["entry"]["forkedFromParent"] is True
            child = _texts(await client.request("chat.history", {"sessionKey": "child"}))
            assert child == parent and "the owl is grey" in child
            await _turn(client, "child", "only in the fork", "c1")
            child = _texts(await client.request("chat.history", {"sessionKey": "child"}))
            assert child[: len(parent)] == parent and "only in the fork" in child
            after = _texts(await client.request("chat.history", {"sessionKey": "parent"}))
            assert after == parent  # the parent goes on unchanged
            bad: list[tuple[dict[str, Any], str]] = [
                ({"key": "c2", "fork": True}, "fork requires parentSessionKey"),
                ({"key": "c3", "forkFrom": "last-completed"}, "forkFrom requires fork=true"),
                ({"key": "c4", "fork": True, "parentSessionKey": "nope"}, "No session found: nope"),
                (
                    {"key": "child", "fork": True, "parentSessionKey": "parent"},
                    "a fork starts a new session: agent:main:child exists already",
                ),
            ]
            for params, message in bad:
                with pytest.raises(GatewayRequestError, match=message) as info:
                    await client.request("sessions.create", params)
                assert info.value.code == "INVALID_REQUEST"


async def test_a_busy_parent_is_forked_up_to_its_last_finished_reply(tmp_path: Path) -> None:
    with trio.fail_after(TIMEOUT):
        async with running_gateway(tmp_path, local_config()) as gw, open_client(gw) as client:
            await _turn(client, "busy", "first", "b1")
            ack = await client.request(
                "agent",
                {"message": "[[delay:2000]] slow", "idempotencyKey": "b2", "sessionKey": "busy"},
            )
            assert ack["status"] == "accepted"
            actor = gw.supervisor.peek_session("agent:main:busy")
            while actor is None or not actor.busy:
                await trio.testing.wait_all_tasks_blocked()
                actor = gw.supervisor.peek_session("agent:main:busy")
            with pytest.raises(GatewayRequestError, match="is still active") as info:
                await client.request(
                    "sessions.create", {"key": "f1", "parentSessionKey": "busy", "fork": True}
                )
            assert info.value.code == "UNAVAILABLE"
            forked = await client.request(
                "sessions.create",
                {
                    "key": "f2",
                    "parentSessionKey": "busy",
                    "fork": True,
                    "forkFrom": "last-completed",
                },
            )
            assert forked["entry"]["forkedFromParent"] is True
            texts = _texts(await client.request("chat.history", {"sessionKey": "f2"}))
            assert "first" in texts and not any("slow" in t for t in texts)
            await client.request("chat.abort", {"sessionKey": "busy"})
