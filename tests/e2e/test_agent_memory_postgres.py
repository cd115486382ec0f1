"""Memory search on a gateway whose store is PostgreSQL (a real server, a schema of the test's
own): a session writes a note, a new session finds it with `memory_search` through the index
in PostgreSQL (no SQLite index file in the state dir; the chunks are rows of
`memory_chunks`); `doctor.memory.status` names the server; and a second gateway on the same
database with a workspace of its own (another node) indexes its own files under a scope of
its own, so it does not find the first one's note."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import psycopg
import trio

from tests.actors._databases import pg_url
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import recorder_events, run_events

__all__ = ["pg_url"]  # the fixture, used by name


async def _run(client: Any, key: str, run_id: str, message: str) -> None:
    final = await client.request(
        "agent",
        {"message": message, "idempotencyKey": run_id, "sessionKey": key},
        expect_final=True,
    )
    assert final["status"] == "ok", final


def _found(events: Any, run_id: str) -> list[dict[str, Any]]:
    (result,) = [
        p["data"]
        for p in run_events(events, run_id, "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] == "memory_search"
    ]
    assert not result["isError"], result
    return result["result"]["details"]["results"]  # type: ignore[no-any-return]


def _chunks(url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.agent_id, c.path, c.text FROM memory_chunks AS c"
            " JOIN memory_scopes AS s ON s.id = c.scope_id ORDER BY c.id"
        ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


async def test_a_note_is_found_by_a_new_session_through_the_index_in_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    config = local_config(storage={"backend": "postgres", "postgres": {"url": pg_url}})
    events, on_event = recorder_events()
    tuesday = dt.datetime(2026, 12, 8, 10, 0).astimezone().timestamp()
    query = json.dumps({"query": "launch code word"})
    with trio.fail_after(60):
        async with running_gateway(tmp_path / "a", config) as gw:
            gw.supervisor.services.memory.clock = lambda: tuesday
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                note = {"path": "memory/2026-12-07.md", "content": "The launch code word is OWL.\n"}
                await _run(client, "agent:main:monday", "mon", f"[[tool:write {json.dumps(note)}]]")
                await _run(client, "agent:main:tuesday", "tue", f"[[tool:memory_search {query}]]")
                status = await client.request("doctor.memory.status", {})
            assert not (tmp_path / "a" / "state" / "memory").exists()  # no SQLite index
        rows = await trio.to_thread.run_sync(_chunks, pg_url)
        assert rows == [("main", "memory/2026-12-07.md", "The launch code word is OWL.")]
        # another node, its own workspace: its own scope, where the note is not
        async with (
            running_gateway(tmp_path / "b", config) as gw,
            open_client(gw, caps=["tool-events"], on_event=on_event) as client,
        ):
            await _run(client, "agent:main:other", "other", f"[[tool:memory_search {query}]]")
    (hit,) = _found(events, "tue")
    assert hit["path"] == "memory/2026-12-07.md" and "OWL" in hit["snippet"]
    assert _found(events, "other") == []
    index = status["index"]
    assert (index["files"], index["chunks"]) == (1, 1)
    assert index["dbPath"].startswith("postgresql://") and "@" not in index["dbPath"]
