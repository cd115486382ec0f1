"""A gateway whose store is PostgreSQL (`storage.backend: "postgres"`): a turn is stored
there and a second gateway on the same database sees it. Skipped, saying
why, only when PostgreSQL cannot be reached (`CLAWLANE_TEST_POSTGRES`)."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime import parse_config
from tests._tcp_proxy import open_tcp_proxy
from tests.actors._databases import pg_url
from tests.conftest import client_auth, gateway_url, open_client, running_gateway
from transports import GatewayRequestError, open_gateway_client

__all__ = ["pg_url"]  # the fixture, used by name


async def test_a_gateway_on_postgres_stores_turns_a_second_gateway_reads(
    tmp_path: Path, pg_url: str
) -> None:
    config = parse_config(
        {
            "agents": {"defaults": {"maxConcurrent": 8}},
            "storage": {"backend": "postgres", "postgres": {"url": pg_url}},
        }
    )
    with trio.fail_after(30):
        async with running_gateway(tmp_path / "a", config) as gw, open_client(gw) as client:
            final = await client.request(
                "agent",
                {"message": "remember the owl", "idempotencyKey": "pg-1", "sessionKey": "pg"},
                expect_final=True,
            )
            assert final["status"] == "ok"
            listed = await client.request("sessions.list", {})
            # where the sessions are: the server (no password), not a SQLite file
            assert listed["path"] == gw.supervisor.store.path
            assert listed["path"].startswith("postgresql://") and "@" not in listed["path"]
        assert not (tmp_path / "a" / "state" / "clawlane.sqlite").exists()
        async with running_gateway(tmp_path / "b", config) as gw, open_client(gw) as client:
            history = await client.request("chat.history", {"sessionKey": "pg"})
    texts = [str(m.get("content")) for m in history["messages"]]
    assert any("remember the owl" in t for t in texts), texts


async def test_a_postgres_outage_is_answered_as_one_and_is_over_when_the_link_heals(
    tmp_path: Path, pg_url: str
) -> None:
    """With the gateway's link to PostgreSQL cut, a request that reads the store is answered
    `UNAVAILABLE`, retryable, naming the store (not an internal error), and the connection
    lives on; once the link heals, the next request is answered (no read fails on a
    connection that died during the cut)."""
    server = urllib.parse.urlsplit(pg_url)
    frames: list[dict[str, Any]] = []
    with trio.fail_after(30):
        async with open_tcp_proxy(server.hostname or "127.0.0.1", server.port or 5432) as proxy:
            parts = server._replace(netloc=f"{server.username}@127.0.0.1:{proxy.port}")
            config = parse_config(
                {"storage": {"backend": "postgres", "postgres": {"url": parts.geturl()}}}
            )
            async with (
                running_gateway(tmp_path, config) as gw,
                open_gateway_client(
                    gateway_url(gw), on_frame=frames.append, **client_auth(gw)
                ) as client,
            ):
                final = await client.request(
                    "agent",
                    {"message": "hi", "idempotencyKey": "blip-1", "sessionKey": "blip"},
                    expect_final=True,
                )
                assert final["status"] == "ok"
                assert len((await client.request("sessions.list", {}))["sessions"]) == 1
                proxy.cut()
                with pytest.raises(GatewayRequestError) as info:
                    await client.request("sessions.list", {})
                assert info.value.code == "UNAVAILABLE"
                assert info.value.message.startswith("the store is unavailable: read from ")
                assert "postgresql://" in info.value.message
                assert "internal error" not in info.value.message
                error = next(f for f in reversed(frames) if f.get("ok") is False)["error"]
                assert error["retryable"] is True
                proxy.heal()
                assert len((await client.request("sessions.list", {}))["sessions"]) == 1
                again = await client.request(
                    "agent",
                    {"message": "again", "idempotencyKey": "blip-2", "sessionKey": "blip"},
                    expect_final=True,
                )
                assert again["status"] == "ok"
