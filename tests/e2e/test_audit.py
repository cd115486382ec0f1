"""`audit.list` and `audit.activity.list` over a real gateway (loopback): the runs' and tool
calls' records in the store's audit log, in OpenClaw 2026.9.6's shapes, paged by cursor,
filtered, its refusals; the log kept across a restart, bounded, on PostgreSQL too; and a
failing audit insert rolls back alone, never the run's own writes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import AuditFilter, AuditTable
from actors.store import _audit
from runtime.model import parse_config
from tests.actors._databases import pg_url
from tests.conftest import frame_checker, open_client, running_gateway
from transports import GatewayRequestError

__all__ = ["pg_url"]  # the fixture, used by name


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    return {
        "storage": {"backend": "postgres", "postgres": {"url": request.getfixturevalue("pg_url")}}
    }


async def _run(client: Any, key: str, run_id: str, message: str) -> dict[str, Any]:
    return dict(
        await client.request(
            "agent",
            {"message": message, "sessionKey": key, "idempotencyKey": run_id},
            expect_final=True,
        )
    )


async def test_runs_and_tool_calls_are_listed_newest_first_in_openclaws_shape(
    tmp_path: Path, storage: dict[str, Any]
) -> None:
    write = json.dumps({"path": "notes.txt", "content": "hi"})
    async with running_gateway(tmp_path, parse_config(storage)) as gw:
        with trio.fail_after(30):
            async with open_client(gw) as client:
                await _run(client, "agent:main:a", "r1", "hello")
                await _run(client, "agent:main:b", "r2", f"[[tool:write {write}]]")
                await _run(client, "agent:main:b", "r3", "[[tool:nope {}]]")
                listed = await client.request("audit.list", {})
                activity = await client.request("audit.activity.list", {"limit": 500})
                r2 = await client.request("audit.list", {"runId": "r2"})
                tools = await client.request("audit.list", {"kind": "tool_action"})
                failed = await client.request("audit.list", {"status": "failed"})
                agent_b = await client.request("audit.list", {"sessionKey": "agent:main:b"})
    checker = frame_checker()
    checker.validate("AuditListResult", listed)
    checker.validate("AuditActivityListResult", activity)
    events = listed["events"]
    seqs = [e["sequence"] for e in events]
    assert seqs == sorted(seqs, reverse=True) and len(set(seqs)) == len(seqs)
    assert "nextCursor" not in listed
    runs = [(e["runId"], e["action"], e["status"]) for e in events if e["kind"] == "agent_run"]
    assert runs[::-1] == [
        ("r1", "agent.run.started", "started"),
        ("r1", "agent.run.finished", "succeeded"),
        ("r2", "agent.run.started", "started"),
        ("r2", "agent.run.finished", "succeeded"),
        ("r3", "agent.run.started", "started"),
        ("r3", "agent.run.finished", "succeeded"),
    ]
    [start, end] = [e for e in r2["events"] if e["kind"] == "tool_action"][::-1]
    assert (start["action"], start["status"]) == ("tool.action.started", "started")
    assert (end["action"], end["status"]) == ("tool.action.finished", "succeeded")
    assert start["toolName"] == "write" and start["toolCallId"].startswith("sha256:")
    assert start["toolCallId"] == end["toolCallId"]
    assert start["actor"] == {"type": "agent", "id": "main"} and start["agentId"] == "main"
    assert start["sessionKey"] == "agent:main:b" and start["sessionId"]
    assert all(e["redaction"] == "metadata_only" for e in events)
    assert "hi" not in json.dumps(listed)  # arguments and results are not kept
    assert {e["runId"] for e in r2["events"]} == {"r2"}
    assert {e["kind"] for e in tools["events"]} == {"tool_action"}
    [bad] = [e for e in failed["events"]]
    assert (bad["runId"], bad["toolName"], bad["errorCode"]) == ("r3", "nope", "tool_failed")
    assert {e["runId"] for e in agent_b["events"]} == {"r2", "r3"}
    assert [e["sequence"] for e in activity["events"]] == seqs
    assert all(e["eventType"] == e["kind"] and e["schemaVersion"] == 1 for e in activity["events"])


async def test_pages_follow_the_cursor_and_bad_filters_are_refused(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw) as client:
                for i in range(3):
                    await _run(client, "agent:main:p", f"p{i}", "hi")
                first = await client.request("audit.list", {"limit": 4})
                second = await client.request(
                    "audit.list", {"limit": 4, "cursor": first["nextCursor"]}
                )
                window = await client.request(
                    "audit.list", {"after": 0, "before": first["events"][-1]["occurredAt"]}
                )
                refused: dict[str, str] = {}
                for method, params in [
                    ("audit.list", {"cursor": "x1"}),
                    ("audit.list", {"after": 10, "before": 5}),
                    ("audit.list", {"limit": 501}),
                    ("audit.list", {"kind": "message"}),
                    ("audit.list", {"bogus": 1}),
                    ("audit.activity.list", {"kind": "message", "sessionKey": "agent:main:p"}),
                    ("audit.activity.list", {"kind": "agent_run", "channel": "slack"}),
                    ("audit.activity.list", {"sessionKey": "agent:main:p", "direction": "inbound"}),
                ]:
                    with pytest.raises(GatewayRequestError) as info:
                        await client.request(method, params)
                    assert info.value.code == "INVALID_REQUEST"
                    refused[json.dumps(params)] = info.value.message
                messages = await client.request("audit.activity.list", {"kind": "message"})
    assert len(first["events"]) == 4 and len(second["events"]) == 2
    assert "nextCursor" not in second
    assert first["nextCursor"] == str(first["events"][-1]["sequence"])
    assert max(e["sequence"] for e in second["events"]) < first["events"][-1]["sequence"]
    assert all(e["occurredAt"] <= first["events"][-1]["occurredAt"] for e in window["events"])
    assert refused['{"cursor": "x1"}'] == "invalid audit.list range or cursor"
    assert refused['{"after": 10, "before": 5}'] == "invalid audit.list range or cursor"
    assert "limit" in refused['{"limit": 501}'] and "bogus" in refused['{"bogus": 1}']
    assert refused['{"kind": "agent_run", "channel": "slack"}'] == (
        "invalid audit.activity.list filters: channel only applies to kind message"
    )
    assert refused['{"sessionKey": "agent:main:p", "direction": "inbound"}'] == (
        "invalid audit.activity.list filters: direction cannot be combined with sessionKey"
    )
    assert messages == {"events": []}


async def test_an_aborted_run_is_cancelled_and_the_log_outlives_a_restart(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw) as client:
                ack = await client.request(
                    "agent",
                    {
                        "message": "[[delay:2000]] slow",
                        "sessionKey": "agent:main:s",
                        "idempotencyKey": "slow",
                    },
                )
                assert ack["status"] == "accepted"
                await client.request("chat.abort", {"sessionKey": "agent:main:s"})
                await client.request("agent.wait", {"runId": "slow", "timeoutMs": 10_000})
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw) as client:
                listed = await client.request("audit.list", {"runId": "slow"})
    [end, start] = listed["events"]
    assert start["action"] == "agent.run.started"
    assert (end["status"], end["errorCode"]) == ("cancelled", "run_cancelled")


async def test_disabled_audit_records_nothing(tmp_path: Path) -> None:
    config = parse_config({"logging": {"audit": {"enabled": False, "messages": "all"}}})
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw) as client:
                await _run(client, "agent:main:q", "q1", "hi")
                listed = await client.request("audit.list", {})
    assert listed == {"events": []}


def _rows(n: int, start_ms: int, run: str = "r") -> list[tuple[Any, ...]]:
    return [
        (
            f"{run}:{i}",
            i + 1,
            start_ms + i,
            "agent_run",
            "agent.run.started",
            "started",
            None,
            "agent",
            "main",
            "main",
            "agent:main:x",
            "sid",
            f"{run}{i}",
            None,
            None,
        )
        for i in range(n)
    ]


async def test_the_log_is_bounded_by_rows_and_age(tmp_path: Path, monkeypatch: Any) -> None:
    from actors import open_store

    monkeypatch.setattr(_audit, "MAX_ROWS", 50)
    monkeypatch.setattr(_audit, "PRUNE_BATCH", 8)
    now = 10 * _audit.RETENTION_MS
    async with open_store(tmp_path / "s.db") as store:
        table = AuditTable(store)
        old = _rows(5, now - _audit.RETENTION_MS - 100, "old")
        assert await store.write(table.inserter(old, now)) == 5  # expired at once
        assert await store.write(table.inserter(_rows(60, now - 1000), now)) == 60
        again = _rows(60, now - 1000)[-10:]
        assert await store.write(table.inserter(again, now)) == 0  # an event is kept once
        page = await table.list(AuditFilter(limit=500), now)
    assert len(page.events) == 42  # beyond 50: down to 50 - 8
    assert {e["runId"] for e in page.events} == {f"r{i}" for i in range(18, 60)}


async def test_a_failing_audit_insert_rolls_back_alone(tmp_path: Path) -> None:
    from actors import open_store

    async with open_store(tmp_path / "s.db") as store:
        table = AuditTable(store)
        bad = [("x",)]  # too few columns: the insert fails

        def both(conn: Any) -> int:
            conn.execute("CREATE TABLE other(v TEXT)")
            conn.execute("INSERT INTO other(v) VALUES ('kept')")
            return table.inserter(bad, 1)(conn)

        assert await store.write(both) == -1
        kept = await store.read(lambda c: c.execute("SELECT v FROM other").fetchall())
        page = await table.list(AuditFilter(), 1)
    assert [tuple(r) for r in kept] == [("kept",)]
    assert page.events == [] and table.failures == 1


async def test_a_flush_without_the_writer_writes_what_waits(tmp_path: Path) -> None:
    """At shutdown the writer task may be cancelled before the runs' last events are in:
    the supervisor's flush writes them itself instead of waiting for it."""
    from actors import open_store
    from actors.runs import AuditRecorder

    t = int(time.time() * 1000)
    start = {"phase": "start", "startedAt": t}
    end = {"phase": "end", "startedAt": t, "endedAt": t + 1, "aborted": False}
    with trio.fail_after(10):
        async with open_store(tmp_path / "s.db") as store:
            rec = AuditRecorder(store, lambda: True)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(rec.run)
                rec.record("a", 1, t, "lifecycle", start, "main", "agent:main:k", "sid")
                await rec.flush()
                nursery.cancel_scope.cancel()
            rec.record("a", 2, t + 1, "lifecycle", end, "main", "agent:main:k", "sid")
            rec.record("a", 3, t + 2, "tool", {"phase": "start", "name": "read"}, None, None, None)
            await rec.flush()
            page = await AuditTable(store).list(AuditFilter(), t + 3)
    assert [e["action"] for e in page.events] == [
        "tool.action.started",
        "agent.run.finished",
        "agent.run.started",
    ]
    assert page.events[0]["actor"] == {"type": "system", "id": "unknown"}
    assert rec.statistics().recorded == 3 and rec.statistics().pending == 0
