"""A gateway whose store is PostgreSQL (`storage.backend: "postgres"`): a turn is stored
there and a second gateway on the same database sees it. Skipped, saying
why, only when PostgreSQL cannot be reached (`CLAWLANE_TEST_POSTGRES`)."""

from __future__ import annotations

from pathlib import Path

import trio

from runtime import parse_config
from tests.actors._databases import pg_url
from tests.conftest import open_client, running_gateway

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
