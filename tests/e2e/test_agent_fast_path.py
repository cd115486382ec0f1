"""`agent` on the task-free path (`transports.methods.start_agent`), over real sockets.

The path is taken once a session's row is loaded: each test warms its session with one run
first, then checks that the request really went that way (an `_AgentCall` in the
connection's pending table, not a handler task) and that it behaves as the general path
does: ack then final on one id, cancel frames, store failures, repeats, a full queue."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import local_config, running_gateway
from tests.e2e._raw import hold_commits, raw_client, warm
from transports.methods._agent import _AgentCall
from transports.server._gateway import Gateway


def fast_calls(gw: Gateway) -> list[_AgentCall]:
    return [
        p for c in gw.connections.values() for p in c.pending.values() if isinstance(p, _AgentCall)
    ]


async def test_a_warm_session_runs_without_a_request_task(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as raw:
                await warm(raw, "fast")
                rid = await raw.send(
                    "agent",
                    {
                        "message": "[[deltas:3]] [[delay:30]] hi",
                        "idempotencyKey": "f1",
                        "sessionKey": "fast",
                    },
                )
                ack = await raw.response(rid, 1)
                assert ack["ok"] and ack["payload"]["runId"] == "f1"
                (call,) = fast_calls(gw)
                assert call.req_id == rid and call.record is not None
                final = await raw.response(rid, 2)
                assert final["payload"]["status"] == "ok"
                assert final["payload"]["result"]["payloads"] == [{"text": "You said: hi"}]
                assert fast_calls(gw) == []
                phases = [d["phase"] for d in raw.lifecycle("f1")]
                assert phases == ["start", "end"]
                # the row was durable before the ack, the run's messages after its end
                await gw.supervisor.store.flush()
                row = await gw.supervisor.store.get_session("agent:main:fast")
                assert row is not None and row.lastRunId == "f1"


async def test_a_cancel_frame_aborts_the_run_and_no_final_follows(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as raw:
                await warm(raw, "c")
                rid = await raw.send(
                    "agent", {"message": "[[stall]] x", "idempotencyKey": "c1", "sessionKey": "c"}
                )
                await raw.response(rid, 1)
                assert len(fast_calls(gw)) == 1
                await raw.until(
                    lambda f: f.get("event") == "agent" and f["payload"]["runId"] == "c1"
                )
                await raw.cancel(rid)
                record = gw.registry.get("c1")
                assert record is not None
                await record.done.wait()
                assert record.abort_reason == "rpc"
                # the connection goes on: another request, answered in full
                _, final = await raw.run(
                    {"message": "after", "idempotencyKey": "c2", "sessionKey": "c"}
                )
                assert final["payload"]["status"] == "ok"
                assert len(raw.responses(rid)) == 1  # the ack only
                assert fast_calls(gw) == []


async def test_a_cancel_frame_before_the_row_is_durable_drops_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as raw:
                await warm(raw, "d")
                store = gw.supervisor.store
                release = hold_commits(store, monkeypatch)
                rid = await raw.send(  # a new label: the row must be durable before the ack
                    "agent",
                    {"message": "never", "idempotencyKey": "d1", "sessionKey": "d", "label": "L"},
                )
                await trio.testing.wait_all_tasks_blocked()
                assert len(fast_calls(gw)) == 1
                await raw.cancel(rid)
                await trio.testing.wait_all_tasks_blocked()
                assert fast_calls(gw) == []
                release.set()
                await store.flush()
                await trio.testing.wait_all_tasks_blocked()
                assert gw.registry.get("d1") is None
                assert raw.responses(rid) == []
                # the key was released: the same key runs now
                _, final = await raw.run(
                    {"message": "now", "idempotencyKey": "d1", "sessionKey": "d"}
                )
                assert final["payload"]["status"] == "ok"


async def test_a_store_failure_is_unavailable_and_the_key_is_released(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as raw:
                await warm(raw, "s")
                path = gw.supervisor.store.path

                def trigger(sql: str) -> None:
                    conn = sqlite3.connect(path)
                    with conn:
                        conn.execute(sql)
                    conn.close()

                await trio.to_thread.run_sync(
                    trigger,
                    "CREATE TRIGGER refuse BEFORE UPDATE ON sessions WHEN NEW.key = 'agent:main:s' "
                    "BEGIN SELECT RAISE(ABORT, 'refused by trigger'); END",
                )
                rid = await raw.send(  # a new label: the row is written before the ack
                    "agent",
                    {"message": "x", "idempotencyKey": "s1", "sessionKey": "s", "label": "L"},
                )
                res = await raw.response(rid)
                assert not res["ok"] and res["error"]["code"] == "UNAVAILABLE"
                assert "refused by trigger" in res["error"]["message"]
                assert gw.registry.get("s1") is None and fast_calls(gw) == []
                await trio.to_thread.run_sync(trigger, "DROP TRIGGER refuse")
                _, final = await raw.run(
                    {"message": "x", "idempotencyKey": "s1", "sessionKey": "s"}
                )
                assert final["payload"]["status"] == "ok"


async def test_repeats_of_a_key_get_the_one_run_across_connections(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as a, raw_client(gw) as b:
                await warm(a, "r")
                params = {
                    "message": "[[deltas:4]] [[delay:20]] once",
                    "idempotencyKey": "r1",
                    "sessionKey": "r",
                }
                ids = [
                    await a.send("agent", params),
                    await b.send("agent", params),
                    await a.send("agent", params),
                ]
                finals = [await (a if i != 1 else b).response(rid, 2) for i, rid in enumerate(ids)]
                assert [f["payload"]["status"] for f in finals] == ["ok"] * 3
                starts = [d for d in a.lifecycle("r1") if d["phase"] == "start"]
                assert len(starts) == 1
                again = await b.send("agent", params)
                assert (await b.response(again))["payload"]["status"] == "ok"  # the cached final


async def test_a_full_queue_rejects_the_request_and_registers_nothing(tmp_path: Path) -> None:
    config = local_config(messages__queue__cap=1, messages__queue__drop="new")
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as raw:
                await warm(raw, "q")
                busy = await raw.send(
                    "agent", {"message": "[[stall]] a", "idempotencyKey": "q1", "sessionKey": "q"}
                )
                await raw.response(busy, 1)
                queued = await raw.send(
                    "agent", {"message": "b", "idempotencyKey": "q2", "sessionKey": "q"}
                )
                await raw.response(queued, 1)
                rejected = await raw.send(
                    "agent", {"message": "c", "idempotencyKey": "q3", "sessionKey": "q"}
                )
                error = await raw.response(rejected, 1)
                assert not error["ok"] and "queue is full" in error["error"]["message"]
                assert error["error"]["code"] == "INVALID_REQUEST"
                assert gw.registry.get("q3") is None and raw.lifecycle("q3") == []
                await trio.testing.wait_all_tasks_blocked()
                assert len(raw.responses(rejected)) == 1  # the error; no ack, no final
                assert gw.registry.statistics().active_runs == 2
                gw.registry.get("q1").abort("rpc")  # type: ignore[union-attr]
                assert (await raw.response(queued, 2))["payload"]["status"] == "ok"


async def test_the_ack_waits_until_the_run_is_in_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as raw:
                await warm(raw, "w")
                store = gw.supervisor.store
                release = hold_commits(store, monkeypatch)
                rid = await raw.send(
                    "agent",
                    {"message": "[[deltas:2]] now", "idempotencyKey": "w1", "sessionKey": "w"},
                )
                await trio.testing.wait_all_tasks_blocked()
                # The request is on its way (no task), but nothing is acknowledged (nor
                # registered) before its journal row has committed.
                assert len(fast_calls(gw)) == 1 and raw.responses(rid) == []
                assert gw.registry.get("w1") is None
                release.set()
                ack, final = await raw.response(rid, 1), await raw.response(rid, 2)
                assert ack["payload"]["status"] == "accepted"
                assert final["payload"]["status"] == "ok"
                await store.flush()
                row = await store.get_session("agent:main:w")
                assert row is not None and row.lastRunId == "w1"
                assert row.updatedAt >= ack["payload"]["acceptedAt"]
                (journal,) = [r for r in await store.load_runs(since_ms=0) if r.run_id == "w1"]
                assert journal.state == "ok" and journal.kind == "agent"


async def test_a_bug_on_the_fast_path_fails_the_request_not_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transports.methods._agent as agent_module

    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(15):
            async with raw_client(gw) as raw:
                await warm(raw, "b")

                def broken(*args: Any) -> Any:
                    raise RuntimeError("injected")

                with monkeypatch.context() as m:
                    m.setattr(agent_module, "_build_request", broken)
                    rid = await raw.send(
                        "agent", {"message": "x", "idempotencyKey": "b1", "sessionKey": "b"}
                    )
                    res = await raw.response(rid)
                assert not res["ok"] and res["error"]["code"] == "UNAVAILABLE"
                assert "injected" in res["error"]["message"]
                assert fast_calls(gw) == [] and gw.registry.dedupe.get("agent:b1") is None
                _, final = await raw.run(  # the key was released: it runs now
                    {"message": "again", "idempotencyKey": "b1", "sessionKey": "b"}
                )
                assert final["payload"]["status"] == "ok"
