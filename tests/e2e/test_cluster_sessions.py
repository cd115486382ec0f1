"""Sessions across a cluster's nodes: two gateways on one PostgreSQL schema and
one Redis. A session belongs to one node (its lease); a request reaching the other node is
forwarded, and its client gets the answers and the run's events as if local (per-run
`seq` without gaps); `agent.wait` and `runs.replay` work from either node; a repeated
idempotency key on the other node starts no second run; `chat.abort` reaches the run's
node; an unscoped reader on either node sees every node's runs. Skipped, saying why, only
when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.actors._cluster_nodes import raw_client
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e._events import recorder_events, run_events, terminal_events
from tests.e2e.test_cluster_nodes import ADMIN, Node, two_nodes, wait_for
from transports import GatewayClient, GatewayRequestError
from transports.cluster._route import Router

__all__ = ["pg_url"]  # the fixture, used by name

SCOPED = ["session-scoped-events"]


@asynccontextmanager
async def scoped_pair(
    nodes: list[Node], on_event: Any = None
) -> AsyncIterator[tuple[GatewayClient, GatewayClient]]:
    """An admin client with session-scoped events on each of the two nodes (`on_event`
    records what the second one receives)."""
    a, b = nodes
    async with (
        open_client(a.gw, scopes=ADMIN, caps=SCOPED) as ca,
        open_client(b.gw, scopes=ADMIN, caps=SCOPED, on_event=on_event) as cb,
    ):
        yield ca, cb


async def stored_final(router: Router, key: str) -> bytes | None:
    """The final of the claim `key` once Redis has it (it goes with the node's next batch
    of finals, which no event here announces: asked again every 50 ms, 5 s at most)."""
    for _ in range(100):
        claim = await router.cluster.claims.get(key)
        if claim is not None and claim.final is not None:
            return claim.final
        await trio.sleep(0.05)
    return None


def owner_of(nodes: list[Node], key: str) -> Node:
    owners = [n for n in nodes if n.gw.router is not None and key in n.gw.router.leases.held]
    assert len(owners) == 1, f"{key} is held by {len(owners)} nodes"
    return owners[0]


def both_know(nodes: list[Node]) -> bool:
    return all(n.gw.router is not None and len(n.gw.router.alive) == 2 for n in nodes)


def reads_all(node: Node, reader: Node) -> bool:
    """`node` knows that `reader` needs every run's frames (an unscoped reader, a
    watcher or a session-list subscriber connected there)."""
    assert node.gw.router is not None and reader.gw.node is not None
    return reader.gw.node.node_id in node.gw.router.wanting


def assert_gap_free(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs


async def test_a_request_on_the_other_node_is_forwarded_to_the_owner(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            events, on_event = recorder_events()
            async with scoped_pair(nodes, on_event) as (ca, cb):
                first = await ca.request(
                    "agent",
                    {"message": "one [[deltas:3]]", "idempotencyKey": "c1"},
                    expect_final=True,
                )
                assert first["status"] == "ok"
                assert owner_of(nodes, "agent:main:main") is a
                second = await cb.request(
                    "agent",
                    {"message": "two [[deltas:4]]", "idempotencyKey": "c2"},
                    expect_final=True,
                )
                assert second["status"] == "ok"
                assert second["result"]["payloads"]
                await wait_for(lambda: terminal_events(events, "c2"), "c2's end", timeout_s=5)
            assert a.gw.router is not None and a.gw.router.served >= 1
            assert b.gw.router is not None and b.gw.router.forwarded >= 1
            assert a.gw.registry.get("c2") is not None  # it ran on the owner
            assert b.gw.registry.get("c2") is None
            got = run_events(events, "c2")
            assert_gap_free(got)
            assert [e["data"]["phase"] for e in got if e["stream"] == "lifecycle"] == [
                "start",
                "end",
            ]
            assert sum(1 for e in got if e["stream"] == "assistant") >= 4
            chats = [p for (e, p, _s) in events if e == "chat" and p["runId"] == "c2"]
            assert chats and chats[-1]["state"] == "final"
            # per-connection seq without gaps too
            conn_seqs = [s for (_e, _p, s) in events if s is not None]
            assert conn_seqs == list(range(conn_seqs[0], conn_seqs[0] + len(conn_seqs)))


async def test_wait_replay_and_duplicates_from_the_other_node(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with scoped_pair(nodes) as (ca, cb):
                params = {"message": "hi [[deltas:3]]", "idempotencyKey": "w1", "sessionKey": "s1"}
                done = await ca.request("agent", params, expect_final=True)
                assert done["status"] == "ok"
                waited = await cb.request("agent.wait", {"runId": "w1", "timeoutMs": 5_000})
                assert waited["status"] == "ok" and waited["runId"] == "w1"
                replay = await cb.request("runs.replay", {"runId": "w1", "afterSeq": 0})
                assert replay["ended"] and replay["replayed"] >= 3 and not replay["gap"]
                # the same key on the other node, for a session that node owns: no second run
                other = {**params, "sessionKey": "s2"}
                again = await cb.request("agent", other, expect_final=True)
                assert again["status"] == "ok" and again["runId"] == "w1"
                assert b.gw.registry.get("w1") is None
                history = await cb.request("chat.history", {"sessionKey": "s2"})
                assert history["messages"] == []
            assert owner_of(nodes, "agent:main:s1") is a
            assert owner_of(nodes, "agent:main:s2") is b


async def test_abort_reaches_the_node_running_the_session(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            async with scoped_pair(nodes) as (ca, cb):
                slow = "slow [[deltas:200]] [[delay:50]]"
                await ca.request(
                    "chat.send", {"sessionKey": "x", "message": slow, "idempotencyKey": "slow"}
                )
                await wait_for(
                    lambda: a.gw.registry.get("slow") is not None, "accepted", timeout_s=5
                )
                aborted = await cb.request("chat.abort", {"sessionKey": "x"})
                assert aborted["aborted"] is True and aborted["runIds"] == ["slow"]
                waited = await cb.request("agent.wait", {"runId": "slow", "timeoutMs": 5_000})
                assert waited["status"] == "timeout"  # an aborted run reports timeout
                record = a.gw.registry.get("slow")
                assert record is not None and record.aborted


async def test_an_unscoped_reader_sees_runs_of_every_node(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            events, on_event = recorder_events()
            async with (
                open_client(a.gw, scopes=ADMIN, caps=SCOPED) as ca,
                open_client(b.gw, scopes=ADMIN, on_event=on_event),
            ):
                await wait_for(lambda: reads_all(a, b), "a knows b reads all", timeout_s=5)
                await ca.request(
                    "agent",
                    {"message": "seen [[deltas:3]]", "idempotencyKey": "u1"},
                    expect_final=True,
                )
                await wait_for(lambda: terminal_events(events, "u1"), "u1 on b", timeout_s=5)
            assert_gap_free(run_events(events, "u1"))


async def test_runs_sent_to_the_other_node_keep_their_order(tmp_path: Path, pg_url: str) -> None:
    """Five messages sent back to back through the node that does not own the session run
    in the order they were sent, one at a time, on the owner."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            async with scoped_pair(nodes) as (ca, cb):
                first = {"message": "own it", "idempotencyKey": "o0", "sessionKey": "ord"}
                await ca.request("agent", first, expect_final=True)
                for i in range(1, 6):  # back to back, without waiting for answers
                    params = {
                        "key": "ord",
                        "message": f"m{i} [[deltas:3]] [[delay:5]]",
                        "idempotencyKey": f"o{i}",
                    }  # each its own turn (`followup`)
                    frame = {"type": "req", "id": f"send-{i}", "method": "sessions.send"}
                    await cb.send_raw(json.dumps({**frame, "params": params}))
                await wait_for(
                    lambda: all(
                        (r := a.gw.registry.get(f"o{i}")) is not None and r.ended
                        for i in range(1, 6)
                    ),
                    "the five runs",
                    timeout_s=20,
                )
            records = [a.gw.registry.get(f"o{i}") for i in range(1, 6)]
            spans = [(r.started_at, r.ended_at) for r in records if r is not None]
            assert len(spans) == 5 and all(s is not None and e is not None for s, e in spans)
            flat = [t or 0 for span in spans for t in span]
            assert flat == sorted(flat)  # in order, one at a time
            assert owner_of(nodes, "agent:main:ord") is a


async def test_a_renewal_that_comes_too_late_keeps_the_session_if_nobody_took_it(
    tmp_path: Path, pg_url: str
) -> None:
    """An overloaded node renews after its lease lapsed: it takes the session again (a
    newer token on its actor) unless another node took it meanwhile; then it lets the
    session go (the actor is forgotten)."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            ra, rb = a.gw.router, b.gw.router
            assert ra is not None and rb is not None
            async with open_client(a.gw, scopes=ADMIN) as ca:
                params = {"message": "x", "idempotencyKey": "late1", "sessionKey": "late"}
                await ca.request("agent", params, expect_final=True)
            key = "agent:main:late"
            prefix = a.gw.supervisor.generation.config.cluster.redis.keyPrefix
            lease = ra.leases.held[key]
            async with raw_client() as redis:
                await redis.delete([f"{prefix}lease:session:{key}"])  # it lapsed
            await ra.leases._renew_all()
            again = ra.leases.held[key]
            assert again.token > lease.token and ra.leases.leases_late == 1
            actor = a.gw.supervisor.peek_session(key)
            assert actor is not None and actor.fence is not None
            assert actor.fence.token == again.token
            async with raw_client() as redis:
                await redis.delete([f"{prefix}lease:session:{key}"])
            taken = await rb.cluster.leases.acquire(f"session:{key}")  # b took it meanwhile
            assert taken is not None
            await ra.leases._renew_all()
            assert key not in ra.leases.held and ra.leases.leases_lost == 1
            assert a.gw.supervisor.peek_session(key) is None


async def test_sessions_reaped_idle_give_their_leases_up_and_move_on_their_next_request(
    tmp_path: Path, pg_url: str
) -> None:
    """The idle reaper forgets a node's idle actors; the lease pass then gives all their
    leases up at once (`release_many`), so the next request on another node takes the
    session there. A session whose actor is still here keeps its lease."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            ra, rb = a.gw.router, b.gw.router
            assert ra is not None and rb is not None
            names = ["idle1", "idle2", "idle3", "kept"]
            async with open_client(a.gw, scopes=ADMIN) as ca:
                for name in names:
                    params = {"message": "x", "idempotencyKey": f"r-{name}", "sessionKey": name}
                    await ca.request("agent", params, expect_final=True)
            keys = [f"agent:main:{name}" for name in names]
            assert all(owner_of(nodes, key) is a for key in keys)
            kept = a.gw.supervisor.peek_session(keys[-1])
            assert kept is not None
            kept.last_active = 10.0**12  # used just now, as far as the reaper can tell
            assert a.gw.supervisor.reap_idle(now=10.0**9) == 3
            await ra.leases._release_idle()
            assert sorted(ra.leases.held) == [keys[-1]]
            for key in keys[:3]:
                assert await ra.cluster.leases.holder(f"session:{key}") is None
            async with open_client(b.gw, scopes=ADMIN) as cb:
                params = {"message": "y", "idempotencyKey": "r-again", "sessionKey": "idle2"}
                await cb.request("agent", params, expect_final=True)
            assert owner_of(nodes, keys[1]) is b
            assert owner_of(nodes, keys[-1]) is a


async def test_a_run_in_flight_is_waited_for_and_never_started_twice_from_the_other_node(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            async with scoped_pair(nodes) as (ca, cb):
                slow = {
                    "message": "slow [[deltas:20]] [[delay:20]]",
                    "idempotencyKey": "f1",
                    "sessionKey": "fa",
                }
                ack = await ca.request("agent", slow)
                assert ack["status"] == "accepted"
                # the same key for a session of b's own, while the run is in flight on a
                await cb.request(
                    "agent",
                    {"message": "own", "idempotencyKey": "fb0", "sessionKey": "fb"},
                    expect_final=True,
                )
                again = await cb.request("agent", {**slow, "sessionKey": "fb"}, expect_final=True)
                assert again["runId"] == "f1" and again["status"] == "ok"
                waited = await cb.request("agent.wait", {"runId": "f1", "timeoutMs": 10_000})
                assert waited["status"] == "ok"
            assert b.gw.registry.get("f1") is None  # it ran once, on a
            record = a.gw.registry.get("f1")
            assert record is not None and record.status == "ok"
            assert owner_of(nodes, "agent:main:fb") is b


async def test_replay_from_the_other_node_follows_the_run_to_its_end(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            events, on_event = recorder_events()
            async with scoped_pair(nodes, on_event) as (ca, cb):
                slow = {
                    "message": "slow [[deltas:30]] [[delay:20]]",
                    "idempotencyKey": "rp1",
                    "sessionKey": "rp",
                }
                await ca.request("agent", slow)
                await wait_for(lambda: a.gw.hub.last_seq("rp1") >= 3, "a few events", timeout_s=10)
                replay = await cb.request("runs.replay", {"runId": "rp1", "afterSeq": 0})
                assert replay["replayed"] >= 3 and not replay["gap"]
                await wait_for(lambda: terminal_events(events, "rp1"), "the end", timeout_s=10)
            got = run_events(events, "rp1")
            assert_gap_free(got)
            assert got[-1]["stream"] == "lifecycle" and got[-1]["data"]["phase"] == "end"


async def test_watchers_and_session_list_subscribers_on_the_other_node(
    tmp_path: Path, pg_url: str
) -> None:
    """A connection on one node that watches a session (`sessions.messages.subscribe`) or
    the session list (`sessions.subscribe`) hears what happens on the other node."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            events, on_event = recorder_events()
            async with scoped_pair(nodes, on_event) as (ca, cb):
                await wait_for(lambda: both_know(nodes), "a and b know each other", timeout_s=5)
                first = {"message": "own", "idempotencyKey": "w0", "sessionKey": "watched"}
                await ca.request("agent", first, expect_final=True)
                await cb.request("sessions.messages.subscribe", {"key": "watched"})
                await cb.request("sessions.subscribe", {})
                await wait_for(lambda: reads_all(a, b), "a knows b watches", timeout_s=5)
                params = {"sessionKey": "watched", "message": "hi [[deltas:2]]"}
                await ca.request("chat.send", {**params, "idempotencyKey": "w1"})
                await wait_for(lambda: terminal_events(events, "w1"), "w1 on b", timeout_s=5)
                await wait_for(
                    lambda: any(e == "session.message" for e, _p, _s in events),
                    "a session.message on b",
                    timeout_s=5,
                )
                await wait_for(
                    lambda: any(e == "sessions.changed" for e, _p, _s in events),
                    "a sessions.changed on b",
                    timeout_s=5,
                )
            assert owner_of(nodes, "agent:main:watched") is a
            assert_gap_free(run_events(events, "w1"))


async def test_a_session_list_subscriber_gets_the_changes_not_every_runs_frames(
    tmp_path: Path, pg_url: str
) -> None:
    """A session-list subscriber with session-scoped events needs `sessions.changed` and
    `session.message` (as OpenClaw 2026.9 sends them) from the other nodes, not their runs'
    frames: they sent every run's frames to the feed for it."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            assert a.gw.router is not None and b.gw.node is not None
            router, b_id = a.gw.router, b.gw.node.node_id
            events, on_event = recorder_events()
            async with scoped_pair(nodes, on_event) as (ca, cb):
                await wait_for(lambda: both_know(nodes), "a and b know each other", timeout_s=5)
                await cb.request("sessions.subscribe", {})
                await wait_for(lambda: b_id in router.wanting, "a knows b lists", timeout_s=5)
                before = router.outbox.frames_queued
                params = {"sessionKey": "listed", "message": "hi [[deltas:20]]"}
                await ca.request("agent", {**params, "idempotencyKey": "l1"}, expect_final=True)
                await wait_for(
                    lambda: any(e == "sessions.changed" for e, _p, _s in events),
                    "a sessions.changed on b",
                    timeout_s=5,
                )
                await wait_for(
                    lambda: (
                        {p["message"]["role"] for e, p, _s in events if e == "session.message"}
                        == {"user", "assistant"}
                    ),
                    "the run's messages on b",
                    timeout_s=5,
                )
            relayed = router.outbox.frames_queued - before
            assert 0 < relayed < 10, relayed  # the run's 22 agent frames and chat stayed home
            assert not any(e in ("agent", "chat") for e, _p, _s in events)


async def test_a_cancelled_request_still_ends_its_claim(tmp_path: Path, pg_url: str) -> None:
    """`cancel` for an `agent` request aborts its run; the run's claim gets its final all
    the same (a claim left open would be reported interrupted if the node died later)."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            router = a.gw.router
            assert router is not None
            async with open_client(a.gw, scopes=ADMIN, caps=SCOPED) as ca:
                params = {"message": "slow [[deltas:200]] [[delay:50]]", "idempotencyKey": "cx"}
                frame = {"type": "req", "id": "agent-cx", "method": "agent", "params": params}
                await ca.send_raw(json.dumps(frame))
                await wait_for(
                    lambda: (r := a.gw.registry.get("cx")) is not None and r.started_at is not None,
                    "the run started",
                    timeout_s=10,
                )
                await ca.cancel("agent-cx")
                await wait_for(
                    lambda: (r := a.gw.registry.get("cx")) is not None and r.ended,
                    "the run ended",
                    timeout_s=10,
                )
            assert await stored_final(router, "run:cx") is not None
            unfinished = await router.cluster.claims.unfinished()
            assert "run:cx" not in unfinished.get(router.node_id, [])


async def test_a_repeat_after_the_cache_forgot_the_run_runs_nothing(
    tmp_path: Path, pg_url: str
) -> None:
    """The idempotency cache is bounded; the claim outlives it: a repeated key answers
    from the claim's final on the node that ran it, and runs nothing again."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            router = a.gw.router
            assert router is not None
            async with open_client(a.gw, scopes=ADMIN, caps=SCOPED) as ca:
                params = {"message": "once [[deltas:2]]", "idempotencyKey": "rk"}
                first = await ca.request("agent", params, expect_final=True)
                await stored_final(router, "run:rk")
                a.gw.registry.dedupe.discard("agent:rk")  # evicted from the bounded cache
                again = await ca.request("agent", params, expect_final=True)
                history = await ca.request("chat.history", {"sessionKey": "main"})
            assert again["status"] == "ok" and again["result"] == first["result"]
            users = [m for m in history["messages"] if m.get("role") == "user"]
            assert len(users) == 1


async def test_finals_past_the_nodes_budget_keep_no_reply_text(tmp_path: Path, pg_url: str) -> None:
    """What a node's claims keep in Redis is bounded in bytes: a final past the node's
    budget is stored without its reply text, and a repeated key still answers `ok`
    (`payloadsDropped`, as the registry does past its own bound) and runs nothing."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            router = a.gw.router
            assert router is not None
            router.finals_budget.max_bytes = 1_500
            async with open_client(a.gw, scopes=ADMIN, caps=SCOPED) as ca:
                small = {"message": "[[reply:short]]", "idempotencyKey": "fb1", "sessionKey": "f1"}
                big = {"message": "[[reply:" + "y" * 2_000 + "]]", "idempotencyKey": "fb2"}
                big["sessionKey"] = "f2"
                first = await ca.request("agent", small, expect_final=True)
                second = await ca.request("agent", big, expect_final=True)
                assert "y" * 2_000 in json.dumps(second["result"])  # the caller gets it all
                kept_small = await stored_final(router, "run:fb1")
                kept_big = await stored_final(router, "run:fb2")
                assert kept_small is not None and b"short" in kept_small
                assert kept_big is not None and len(kept_big) < 1_000
                a.gw.registry.dedupe.discard("agent:fb2")  # evicted from the bounded cache
                again = await ca.request("agent", big, expect_final=True)
                history = await ca.request("chat.history", {"sessionKey": "f2"})
            assert first["result"]["payloads"]
            assert again["status"] == "ok" and again["result"]["payloads"] == []
            assert again["result"]["meta"]["payloadsDropped"] is True
            assert len([m for m in history["messages"] if m.get("role") == "user"]) == 1


async def test_a_request_that_may_not_run_touches_no_session(tmp_path: Path, pg_url: str) -> None:
    """A caller without the method's scope, or with bad params, gets its error before the
    router does anything: no lease taken, no claim, no session row."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a = nodes[0]
            router = a.gw.router
            assert router is not None
            async with (
                open_client(a.gw, scopes=["operator.read"]) as reader,
                open_client(a.gw, scopes=ADMIN) as admin,
            ):
                with pytest.raises(GatewayRequestError) as denied:
                    await reader.request(
                        "chat.send",
                        {"sessionKey": "nope", "message": "x", "idempotencyKey": "d1"},
                    )
                assert "scope" in str(denied.value).lower()
                with pytest.raises(GatewayRequestError) as bad:
                    await admin.request(
                        "chat.send", {"sessionKey": "nope2", "idempotencyKey": "d2"}
                    )
                assert bad.value.code == "INVALID_REQUEST" and "message" in str(bad.value)
                listed = await admin.request("sessions.list", {})
            keys = {s["key"] for s in listed["sessions"]}
            assert not {"agent:main:nope", "agent:main:nope2"} & keys
            assert not {"agent:main:nope", "agent:main:nope2"} & set(router.leases.held)
            assert await router.cluster.claims.get("run:d1") is None
            assert await router.cluster.claims.get("run:d2") is None
