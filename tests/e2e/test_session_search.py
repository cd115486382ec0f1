"""`sessions.search` over a real socket, on SQLite (FTS5) and on PostgreSQL (its full-text
search): messages are found as soon as their run has ended, ranked, with snippets, within
one agent's sessions or the keys named, or within the Control UI's session-list scope
(with the sessions' rows); a deleted session's messages are gone from the index; bad
params are `INVALID_REQUEST` naming what; every answer validates against OpenClaw
2026.9.6's `SessionsSearchResult`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model import parse_config
from tests._schema import validate
from tests.actors._databases import pg_url
from tests.conftest import client_auth, frame_checker, gateway_url, running_gateway
from transports import GatewayClient, GatewayRequestError, open_gateway_client

__all__ = ["pg_url"]  # the fixture, used by name

CONFIG: dict[str, Any] = {
    "agents": {"defaults": {"maxConcurrent": 4}, "list": [{"id": "main"}, {"id": "ops"}]}
}


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    return {
        "storage": {"backend": "postgres", "postgres": {"url": request.getfixturevalue("pg_url")}}
    }


@asynccontextmanager
async def search_gateway(tmp_path: Path, storage: dict[str, Any]) -> AsyncIterator[GatewayClient]:
    async with (
        running_gateway(tmp_path, parse_config({**CONFIG, **storage})) as gw,
        open_gateway_client(
            gateway_url(gw),
            client_id="test",
            mode="test",
            on_frame=frame_checker().check,
            on_event=lambda *_: None,
            **client_auth(gw),
        ) as c,
    ):
        yield c


async def say(c: GatewayClient, key: str, text: str) -> None:
    final = await c.request(
        "agent",
        {"message": text, "sessionKey": key, "idempotencyKey": f"{key}:{text}"[:200]},
        expect_final=True,
    )
    assert final["status"] == "ok"


async def search(c: GatewayClient, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await c.request("sessions.search", params)
    validate("SessionsSearchResult", result)
    return result


async def refused(c: GatewayClient, params: dict[str, Any]) -> str:
    with pytest.raises(GatewayRequestError) as info:
        await c.request("sessions.search", params)
    assert info.value.code == "INVALID_REQUEST", info.value
    return info.value.message


def hits(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["sessionKey"], r["role"]) for r in result["results"]]


async def test_messages_are_found_ranked_and_scoped(
    tmp_path: Path, storage: dict[str, Any]
) -> None:
    with trio.fail_after(60):
        async with search_gateway(tmp_path, storage) as c:
            await say(c, "agent:main:alpha", "the quick brown fox jumps over the lazy dog")
            await say(c, "agent:main:beta", "a lazy afternoon with coffee")
            await say(c, "agent:main:gamma", "nothing to see here")
            await say(c, "agent:ops:delta", "lazy dogs in the ops agent")

            found = await search(c, query="lazy")
            # The default agent's sessions only; both the message and its echo, newest first
            # among equals; snippets hold the word.
            assert {k for k, _ in hits(found)} == {"agent:main:alpha", "agent:main:beta"}
            assert {role for _, role in hits(found)} == {"user", "assistant"}
            assert all("lazy" in r["snippet"].lower() for r in found["results"])
            assert all(r["messageId"] and r["sessionId"] for r in found["results"])

            # Every token must occur.
            both = await search(c, query="lazy  dog")
            assert {k for k, _ in hits(both)} == {"agent:main:alpha"}
            assert (await search(c, query="lazy zebra"))["results"] == []

            # The keys named (an agent's keys qualified by agentId).
            only = await search(c, query="lazy", sessionKeys=["agent:main:beta"])
            assert {k for k, _ in hits(only)} == {"agent:main:beta"}
            ops = await search(c, query="lazy", agentId="ops", sessionKeys=["delta"])
            assert {k for k, _ in hits(ops)} == {"agent:ops:delta"}

            limited = await search(c, query="lazy", limit=1)
            assert len(limited["results"]) == 1 and limited["truncated"] is True

            # The Control UI's scope: its session list's filters, and the rows of the hits.
            scoped = await search(c, query="lazy", limit=25, scope={"agentId": "ops"})
            assert {k for k, _ in hits(scoped)} == {"agent:ops:delta"}
            assert [s["key"] for s in scoped["sessions"]] == ["agent:ops:delta"]
            every = await search(c, query="lazy", scope={})
            assert {k for k, _ in hits(every)} == {
                "agent:main:alpha",
                "agent:main:beta",
                "agent:ops:delta",
            }
            assert {s["key"] for s in every["sessions"]} == {k for k, _ in hits(every)}
            by_label = await search(c, query="lazy", scope={"search": "beta"})
            assert {k for k, _ in hits(by_label)} == {"agent:main:beta"}
            await c.request("sessions.patch", {"key": "agent:main:beta", "category": "Naps"})
            by_group = await search(c, query="lazy", scope={"group": "Naps"})
            assert {k for k, _ in hits(by_group)} == {"agent:main:beta"}
            ungrouped = await search(c, query="lazy", scope={"group": ""})
            assert "agent:main:beta" not in {k for k, _ in hits(ungrouped)}
            assert (await search(c, query="lazy", scope={"archived": True}))["results"] == []

            # Kept current: a new message is found at once; a deleted session's are gone.
            await say(c, "agent:main:gamma", "suddenly lazy too")
            assert "agent:main:gamma" in {k for k, _ in hits(await search(c, query="lazy"))}
            await c.request("sessions.delete", {"key": "agent:main:alpha"})
            assert "agent:main:alpha" not in {k for k, _ in hits(await search(c, query="lazy"))}


async def test_bad_params_are_refused_naming_what(tmp_path: Path, storage: dict[str, Any]) -> None:
    with trio.fail_after(60):
        async with search_gateway(tmp_path, storage) as c:
            assert "query must not be empty" in await refused(c, {"query": "   "})
            assert "query" in await refused(c, {})
            assert "limit" in await refused(c, {"query": "x", "limit": 26})
            assert "agentId requires sessionKeys" in await refused(
                c, {"query": "x", "agentId": "ops"}
            )
            assert "Unknown agent id" in await refused(
                c, {"query": "x", "agentId": "nope", "sessionKeys": ["main"]}
            )
            assert "one agent per call" in await refused(
                c, {"query": "x", "sessionKeys": ["agent:main:a", "agent:ops:b"]}
            )
            assert "scope" in await refused(c, {"query": "x", "agentId": "main", "scope": {}})
            assert "bogus" in await refused(c, {"query": "x", "scope": {"bogus": 1}})
            # Punctuation alone, quotes, FTS syntax: a query like any other.
            for odd in ['"', "AND OR NOT", "*", "(x", "'; DROP TABLE entries; --", "\\u0000"]:
                assert (await search(c, query=odd))["results"] == []


async def test_sqlite_folds_diacritics_as_openclaw(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with search_gateway(tmp_path, {}) as c:
            await say(c, "agent:main:cafe", "meet me at the Café Noir")
            found = await search(c, query="cafe noir")
            assert {k for k, _ in hits(found)} == {"agent:main:cafe"}
