"""`agent` and `agent.wait` end to end over real sockets, with the `local` model."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import (
    client_auth,
    gateway_url,
    local_config,
    open_client,
    raw_handshake,
    running_gateway,
)
from tests.e2e._events import Events, recorder_events, run_events, terminal_events
from transports import GatewayRequestError, open_gateway_client


async def test_agent_acks_then_answers_on_one_request_id(connect) -> None:
    events, on_event = recorder_events()
    with trio.fail_after(10):
        async with connect(on_event=on_event) as client:
            ack = await client.request(
                "agent", {"message": "hi [[deltas:3]]", "idempotencyKey": "r1"}
            )
            assert ack["runId"] == "r1" and ack["status"] == "accepted" and ack["acceptedAt"] > 0
            final = await client.request(
                "agent", {"message": "hi [[deltas:3]]", "idempotencyKey": "r2"}, expect_final=True
            )
            assert final["status"] == "ok" and final["summary"] == "completed"
            assert final["result"]["payloads"] == [{"text": "You said: hi"}]
            assert final["result"]["meta"]["generation"] == 1
            assert final["result"]["meta"]["agentMeta"]["sessionId"]
            waited = await client.request("agent.wait", {"runId": "r1"})
            assert waited["status"] == "ok"
    stream = run_events(events, "r2")
    assert [e["stream"] for e in stream] == [
        "lifecycle",
        "assistant",
        "assistant",
        "assistant",
        "lifecycle",
    ]
    assert [e["seq"] for e in stream] == [1, 2, 3, 4, 5]
    assert stream[0]["data"]["phase"] == "start" and stream[-1]["data"]["phase"] == "end"
    assert stream[-1]["data"]["aborted"] is False
    assert (
        "".join(e["data"]["delta"] for e in stream if e["stream"] == "assistant") == "You said: hi"
    )
    assert all(e["sessionKey"] == "agent:main:main" for e in stream)
    chat = [p for (e, p, _s) in events if e == "chat" and p["runId"] == "r2"]
    assert chat[-1]["state"] == "final"
    assert chat[-1]["message"]["content"][0]["text"] == "You said: hi"
    assert "".join(c.get("deltaText", "") for c in chat if c["state"] == "delta") == "You said: hi"


async def test_both_responses_arrive_on_the_same_id_for_a_raw_client(gateway) -> None:
    import json

    from transports.client._client import open_websocket

    with trio.fail_after(10):
        async with open_websocket(gateway_url(gateway)) as ws:
            await raw_handshake(ws, caps=["session-scoped-events"], gw=gateway)
            await ws.send_message(
                json.dumps(
                    {
                        "type": "req",
                        "id": "a1",
                        "method": "agent",
                        "params": {"message": "yo", "idempotencyKey": "raw-1"},
                    }
                )
            )
            responses: list[dict[str, Any]] = []
            while len(responses) < 2:
                frame = json.loads(await ws.get_message())
                if frame["type"] == "res":
                    responses.append(frame)
            assert [r["id"] for r in responses] == ["a1", "a1"]
            assert responses[0]["payload"]["status"] == "accepted"
            assert responses[1]["payload"]["status"] == "ok"


async def test_duplicate_key_never_starts_a_second_run_across_connections(connect, gateway) -> None:
    events, on_event = recorder_events()
    with trio.fail_after(15):
        async with connect(on_event=on_event) as a, connect() as b:
            params = {"message": "once [[deltas:5]] [[delay:20]]", "idempotencyKey": "dup"}
            results: list[Any] = []

            async def send(client: Any) -> None:
                results.append(await client.request("agent", params, expect_final=True))

            async with trio.open_nursery() as n:
                n.start_soon(send, a)
                n.start_soon(send, b)
                n.start_soon(send, a)
            assert len(results) == 3
            assert all(r["status"] == "ok" for r in results)
            assert len({id(r) for r in results}) == 3
            again = await b.request("agent", params)
            assert again["status"] == "ok"  # cached final after completion
    starts = [p for p in run_events(events, "dup", "lifecycle") if p["data"]["phase"] == "start"]
    assert len(starts) == 1
    assert len(terminal_events(events, "dup")) == 1
    assert gateway.registry.get("dup") is not None


async def test_unknown_or_mistyped_params_name_the_field_and_the_connection_lives(connect) -> None:
    with trio.fail_after(10):
        async with connect() as client:
            with pytest.raises(GatewayRequestError) as err:
                await client.request("agent", {"message": "x", "idempotencyKey": "k", "bogus": 1})
            assert err.value.code == "INVALID_REQUEST" and "bogus" in err.value.message
            with pytest.raises(GatewayRequestError) as err:
                await client.request(
                    "agent", {"message": "x", "idempotencyKey": "k", "timeout": "soon"}
                )
            assert "$.timeout" in err.value.message
            with pytest.raises(GatewayRequestError) as err:
                await client.request("agent", {"message": "", "idempotencyKey": "k"})
            assert "message" in err.value.message
            await client.send_raw("{not json")
            await client.send_raw('{"type":"req","id":"x"}')
            await client.send_raw('{"type":"weird","id":"y"}')
            with pytest.raises(GatewayRequestError) as err:
                await client.request(
                    "agent", {"message": "x", "idempotencyKey": "k", "sessionKey": "agent:"}
                )
            assert "malformed session key" in err.value.message
            final = await client.request(
                "agent", {"message": "still here", "idempotencyKey": "ok1"}, expect_final=True
            )
            assert final["status"] == "ok"


async def test_session_key_resolution(connect, gateway) -> None:
    with trio.fail_after(10):
        async with connect() as client:
            await client.request(
                "agent",
                {"message": "a", "idempotencyKey": "s1", "sessionKey": "Foo"},
                expect_final=True,
            )
            await client.request(
                "agent", {"message": "b", "idempotencyKey": "s2"}, expect_final=True
            )
            listed = await client.request("sessions.list")
            keys = {s["key"] for s in listed["sessions"]}
            assert keys == {"agent:main:foo", "agent:main:main"}
            with pytest.raises(GatewayRequestError, match="unknown agent"):
                await client.request(
                    "agent", {"message": "c", "idempotencyKey": "s3", "agentId": "ghost"}
                )


async def test_provider_failure_is_unavailable_and_lifecycle_error(connect) -> None:
    events, on_event = recorder_events()
    with trio.fail_after(10):
        async with connect(on_event=on_event) as client:
            with pytest.raises(GatewayRequestError) as err:
                await client.request(
                    "agent",
                    {"message": "[[fail:overloaded:busy now]]", "idempotencyKey": "f1"},
                    expect_final=True,
                )
            assert err.value.code == "UNAVAILABLE" and "busy now" in err.value.message
            assert err.value.payload == {"runId": "f1", "status": "error", "summary": "busy now"}
            waited = await client.request("agent.wait", {"runId": "f1"})
            assert waited["status"] == "error" and waited["error"] == "busy now"
    terminal = terminal_events(events, "f1")
    assert [t["data"]["phase"] for t in terminal] == ["error"]
    chat = [p for (e, p, _s) in events if e == "chat" and p["runId"] == "f1"]
    assert chat[-1]["state"] == "error" and chat[-1]["errorMessage"] == "busy now"


async def test_run_timeout_ends_aborted_and_wait_reports_timeout(connect) -> None:
    events, on_event = recorder_events()
    with trio.fail_after(15):
        async with connect(on_event=on_event) as client:
            final = await client.request(
                "agent",
                {"message": "[[stall:2]] slow one two three", "idempotencyKey": "t1", "timeout": 1},
                expect_final=True,
            )
            assert final["result"]["meta"]["aborted"] is True
            assert final["result"]["meta"]["stopReason"] == "timeout"
            assert final["result"]["payloads"] == [{"text": "You said:"}]
            waited = await client.request("agent.wait", {"runId": "t1"})
            assert waited["status"] == "timeout"
    end = terminal_events(events, "t1")
    assert len(end) == 1 and end[0]["data"]["aborted"] is True
    chat = [p for (e, p, _s) in events if e == "chat" and p["runId"] == "t1"]
    assert chat[-1]["state"] == "aborted" and chat[-1]["stopReason"] == "timeout"


async def test_agent_wait_times_out_without_aborting_the_run(connect, gateway) -> None:
    with trio.fail_after(15):
        async with connect() as client:
            await client.request(
                "agent", {"message": "[[deltas:4]] [[delay:150]] a b c d", "idempotencyKey": "w1"}
            )
            waited = await client.request("agent.wait", {"runId": "w1", "timeoutMs": 50})
            assert waited == {"runId": "w1", "status": "timeout"}
            record = gateway.registry.get("w1")
            assert record is not None and not record.aborted
            waited = await client.request("agent.wait", {"runId": "w1", "timeoutMs": 10_000})
            assert waited["status"] == "ok" and waited["endedAt"] >= waited["startedAt"]
            polled = await client.request("agent.wait", {"runId": "w1", "timeoutMs": 0})
            assert polled == waited  # an ended run answers a poll, not "timeout"


async def test_agent_wait_for_an_unknown_run_waits_until_it_appears(connect) -> None:
    with trio.fail_after(15):
        async with connect() as client:
            result: list[Any] = []

            async def wait() -> None:
                result.append(
                    await client.request("agent.wait", {"runId": "later", "timeoutMs": 10_000})
                )

            async with trio.open_nursery() as n:
                n.start_soon(wait)
                await trio.testing.wait_all_tasks_blocked()
                await client.request(
                    "agent", {"message": "x", "idempotencyKey": "later"}, expect_final=True
                )
            assert result[0]["status"] == "ok"
            short = await client.request("agent.wait", {"runId": "never", "timeoutMs": 10})
            assert short["status"] == "timeout"


async def test_runs_on_one_session_never_overlap_and_other_sessions_run_concurrently(
    connect,
) -> None:
    events, on_event = recorder_events()
    with trio.fail_after(20):
        async with connect(on_event=on_event) as client:
            async with trio.open_nursery() as n:
                for i in range(4):
                    n.start_soon(
                        client.request,
                        "agent",
                        {
                            "message": f"[[deltas:3]] [[delay:30]] same {i}",
                            "idempotencyKey": f"same{i}",
                            "sessionKey": "lane",
                        },
                    )
                for i in range(3):
                    n.start_soon(
                        client.request,
                        "agent",
                        {
                            "message": f"[[deltas:3]] [[delay:30]] other {i}",
                            "idempotencyKey": f"other{i}",
                            "sessionKey": f"o{i}",
                        },
                    )
            for i in range(4):
                await client.request("agent.wait", {"runId": f"same{i}"})
            for i in range(3):
                await client.request("agent.wait", {"runId": f"other{i}"})

    def span(run_id: str) -> tuple[int, int]:
        life = run_events(events, run_id, "lifecycle")
        return life[0]["data"]["startedAt"], life[-1]["data"]["endedAt"]

    same = sorted(span(f"same{i}") for i in range(4))
    for (_s1, e1), (s2, _e2) in itertools.pairwise(same):
        assert e1 <= s2, "two runs of one session overlapped"
    others = [span(f"other{i}") for i in range(3)]
    assert max(s for s, _ in others) < min(e for _, e in others), (
        "other sessions did not run concurrently"
    )


async def test_the_global_lane_cap_holds(tmp_path: Path) -> None:
    config = local_config(agents__defaults__maxConcurrent=2)
    events, on_event = recorder_events()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(20):
            async with open_client(gw, on_event=on_event) as client:

                async def run(i: int) -> None:
                    await client.request(
                        "agent",
                        {
                            "message": "[[deltas:3]] [[delay:30]] x",
                            "idempotencyKey": f"g{i}",
                            "sessionKey": f"s{i}",
                        },
                        expect_final=True,
                    )

                async with trio.open_nursery() as n:
                    for i in range(6):
                        n.start_soon(run, i)
                assert gw.supervisor.statistics().lane_in_use == 0
    spans = []
    for i in range(6):
        life = run_events(events, f"g{i}", "lifecycle")
        spans.append((life[0]["data"]["startedAt"], life[-1]["data"]["endedAt"]))
    peak = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert peak == 2


async def test_every_run_has_gap_free_seq_and_one_terminal_event(connect) -> None:
    events, on_event = recorder_events()
    with trio.fail_after(20):
        async with connect(on_event=on_event) as client:
            async with trio.open_nursery() as n:
                for i in range(20):
                    msg = [
                        "ok [[deltas:4]]",
                        "[[fail]]",
                        "[[fail-after:2]] a b c d",
                        "[[reply:NO_REPLY]]",
                    ][i % 4]
                    n.start_soon(
                        client.request,
                        "agent",
                        {"message": msg, "idempotencyKey": f"m{i}", "sessionKey": f"k{i % 5}"},
                    )
            for i in range(20):
                await client.request("agent.wait", {"runId": f"m{i}"})
    conn_seqs = [s for (_e, _p, s) in events if s is not None]
    assert len(conn_seqs) == len(events)
    assert conn_seqs == list(range(conn_seqs[0], conn_seqs[0] + len(conn_seqs)))
    for i in range(20):
        seqs = [p["seq"] for p in run_events(events, f"m{i}")]
        assert seqs == list(range(1, len(seqs) + 1))
        assert len(terminal_events(events, f"m{i}")) == 1
    silent = [
        p for (e, p, _s) in events if e == "chat" and p["runId"] == "m3" and p["state"] == "final"
    ]
    assert silent and "message" not in silent[0]
    assert not [
        p for (e, p, _s) in events if e == "chat" and p["runId"] == "m3" and p["state"] == "delta"
    ]


async def test_a_slow_consumer_is_closed_1008_while_others_finish(tmp_path: Path) -> None:

    import trio_websocket

    from transports.client._client import open_websocket

    async with running_gateway(tmp_path, max_buffered_bytes=256 * 1024) as gw:
        gw.close_grace_s = 30
        url = gateway_url(gw)
        with trio.fail_after(30):
            async with open_websocket(url, message_queue_size=1) as slow:
                await raw_handshake(slow, gw=gw)
                # The slow client stops reading here; the fast one floods runs.
                async with open_gateway_client(
                    url,
                    client_id="test",
                    mode="test",
                    caps=["session-scoped-events"],
                    **client_auth(gw),
                ) as fast:
                    for i in range(40):
                        final = await fast.request(
                            "agent",
                            {
                                "message": "[[deltas:200]] " + "word " * 50,
                                "idempotencyKey": f"flood{i}",
                                "sessionKey": f"f{i % 4}",
                            },
                            expect_final=True,
                        )
                        assert final["status"] == "ok"
                        if (
                            not any(
                                c.ws.close_reason == "slow consumer"
                                for c in gw.connections.values()
                            )
                            and i < 39
                        ):
                            continue
                        break
                    assert any(
                        c.ws.close_reason == "slow consumer" for c in gw.connections.values()
                    )
                    assert (await fast.request("health"))["ok"]
                with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                    while True:
                        await slow.get_message()
                assert closed.value.reason is not None
                assert (
                    closed.value.reason.code == 1008
                    and closed.value.reason.reason == "slow consumer"
                )


async def test_sessions_and_transcripts_survive_a_restart(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with (
            running_gateway(tmp_path) as gw,
            open_client(gw) as client,
        ):
            await client.request(
                "agent",
                {"message": "remember me", "idempotencyKey": "p1", "sessionKey": "keep"},
                expect_final=True,
            )
            sid = (await client.request("sessions.list"))["sessions"][0]["sessionId"]
        async with running_gateway(tmp_path) as gw:
            store = gw.supervisor.store
            rows = await store.list_sessions()
            assert [r.key for r in rows] == ["agent:main:keep"] and rows[0].sessionId == sid
            entries = await store.load_entries(sid)
            roles = [type(e.message).__name__ for e in entries]  # type: ignore[union-attr]
            assert roles == ["UserMessage", "AssistantMessage"]
            async with open_client(gw) as client:
                await client.request(
                    "agent",
                    {"message": "again", "idempotencyKey": "p2", "sessionKey": "keep"},
                    expect_final=True,
                )
            await store.flush()
            entries = await store.load_entries(sid)
            assert len(entries) == 4
            assert entries[2].parentId == entries[1].id


async def test_reset_command_needs_admin_and_starts_a_fresh_session_id(connect) -> None:
    with trio.fail_after(15):
        async with connect() as admin, connect(scopes=["operator.write"]) as writer:
            first = await admin.request(
                "agent", {"message": "hello", "idempotencyKey": "n1"}, expect_final=True
            )
            sid1 = first["result"]["meta"]["agentMeta"]["sessionId"]
            with pytest.raises(GatewayRequestError) as err:
                await writer.request("agent", {"message": "/new", "idempotencyKey": "n2"})
            assert err.value.code == "FORBIDDEN"
            second = await admin.request(
                "agent", {"message": "/reset", "idempotencyKey": "n3"}, expect_final=True
            )
            sid2 = second["result"]["meta"]["agentMeta"]["sessionId"]
            assert sid2 != sid1
            third = await admin.request(
                "agent", {"message": "/new carry on", "idempotencyKey": "n4"}, expect_final=True
            )
            assert third["result"]["payloads"] == [{"text": "You said: carry on"}]


async def test_shutdown_ends_inflight_runs_and_tells_clients(tmp_path: Path) -> None:
    events: Events = []
    streaming, ended = trio.Event(), trio.Event()

    def on_event(event: str, payload: Any, seq: int | None) -> None:
        events.append((event, payload, seq))
        if event == "agent" and payload["stream"] == "assistant":
            streaming.set()
        if event == "agent" and payload["data"].get("phase") == "end":
            ended.set()

    stop = trio.Event()

    async def serve(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with running_gateway(tmp_path) as gw:
            task_status.started(gw)
            await stop.wait()

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            gw = await nursery.start(serve)
            async with open_client(gw, on_event=on_event) as client:
                await client.request(
                    "agent", {"message": "[[stall:1]] a b c", "idempotencyKey": "sd"}
                )
                await streaming.wait()
                stop.set()
                await ended.wait()
    end = terminal_events(events, "sd")
    assert (
        len(end) == 1
        and end[0]["data"]["aborted"] is True
        and end[0]["data"]["stopReason"] == "shutdown"
    )
    assert any(e == "shutdown" for (e, _p, _s) in events)
    async with running_gateway(tmp_path) as gw:
        rows = await gw.supervisor.store.list_sessions()
        assert rows[0].status == "aborted"
