"""The cluster primitives' contract, the same tests against the in-process implementation
and the real Redis (skipped, with the reason, only when Redis cannot be reached): leases
and their fencing tokens, holding and losing a lease, single-owner jobs, idempotency claims
across nodes, run streams, generation publication."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing

import pytest
import trio
import trio.testing

from actors.cluster._local import Cluster
from actors.cluster._primitives import (
    Claim,
    Lease,
    LeaseBusy,
    LeaseLost,
    NodeIdInUse,
    StreamEntry,
    StreamGap,
    run_single_owner,
)
from tests.actors._cluster_nodes import Nodes, open_nodes

pytestmark = pytest.mark.parametrize("backend", ["local", "redis"])


@pytest.fixture
async def nodes(backend: str) -> AsyncIterator[Nodes]:
    async with open_nodes(backend) as opened:
        yield opened


async def poll(condition_met: Callable[[], Awaitable[bool]], *, every: float = 0.01) -> None:
    """Wait (bounded by the caller's fail_after) until `condition_met()` is true: for state
    kept in Redis, which no trio event can announce."""
    while True:
        if await condition_met():
            return
        await trio.sleep(every)


async def test_a_lease_has_one_holder_at_a_time(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        lease = await a.leases.acquire("session:main")
        assert lease is not None and lease.owner == a.node_id
        assert await b.leases.acquire("session:main") is None
        assert await a.leases.acquire("session:main") is None
        assert await b.leases.fence("session:main") == lease.token
        assert await a.leases.release(lease) is True
        assert await b.leases.fence("session:main") is None
        assert await b.leases.acquire("session:other") is not None


async def test_release_only_removes_the_same_acquisition(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        first = await a.leases.acquire("k")
        assert first is not None
        await nodes.steal(first)
        second = await b.leases.acquire("k")
        assert second is not None
        assert await a.leases.release(first) is False
        assert await a.leases.renew(first) is False
        assert await b.leases.fence("k") == second.token
        assert await b.leases.release(second) is True


async def test_an_expired_lease_is_taken_over_with_a_higher_token(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        first = await a.leases.acquire("session:x")
        assert first is not None
        assert await b.leases.acquire("session:x") is None
        taken = None
        while taken is None:
            await trio.sleep(0.02)
            taken = await b.leases.acquire("session:x")
        assert taken.token > first.token
        assert taken.owner == b.node_id
        assert await a.leases.renew(first) is False
        assert await a.leases.fence("session:x") == taken.token


async def test_a_held_lease_is_renewed_past_its_ttl(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        async with trio.open_nursery() as nursery, a.leases.hold(nursery, "session:h") as held:
            await poll(lambda: _after(held.renewals >= 4))  # 4 renewals > 1 TTL
            assert not held.lost.is_set()
            assert await b.leases.acquire("session:h") is None
            assert await b.leases.fence("session:h") == held.token
        assert await b.leases.fence("session:h") is None
        assert await b.leases.acquire("session:h") is not None
        async with trio.open_nursery() as nursery:
            with pytest.raises(LeaseBusy):
                async with a.leases.hold(nursery, "session:h"):
                    pass  # pragma: no cover


async def test_a_lost_lease_is_noticed_and_cancels_the_holder(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        taken: Lease | None = None
        async with trio.open_nursery() as nursery:
            with pytest.raises(LeaseLost):
                async with a.leases.hold(nursery, "session:l") as held:
                    await nodes.steal(held.lease)
                    taken = await b.leases.acquire("session:l")
                    assert taken is not None and taken.token > held.token
                    await trio.sleep_forever()
        assert held.lost.is_set() and taken is not None
        assert await b.leases.fence("session:l") == taken.token


async def test_without_cancel_on_loss_the_holder_is_told_by_an_event(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        async with (
            trio.open_nursery() as nursery,
            a.leases.hold(nursery, "session:e", cancel_on_loss=False) as held,
        ):
            await nodes.steal(held.lease)
            assert await b.leases.acquire("session:e") is not None
            await held.lost.wait()


async def test_a_single_owner_job_runs_on_one_node_and_moves_when_it_stops(nodes: Nodes) -> None:
    with trio.fail_after(15):
        a, b = nodes.all[:2]
        running: list[str] = []
        started = {a.node_id: trio.Event(), b.node_id: trio.Event()}

        def job(node_id: str) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                running.append(node_id)
                started[node_id].set()
                await trio.sleep_forever()

            return run

        async with trio.open_nursery() as nursery:
            a_scope = trio.CancelScope()

            async def run_a() -> None:
                with a_scope:
                    await run_single_owner(a.leases, "reaper", job(a.node_id), retry_s=0.02)

            nursery.start_soon(run_a)
            await started[a.node_id].wait()
            nursery.start_soon(
                functools.partial(
                    run_single_owner, b.leases, "reaper", job(b.node_id), retry_s=0.02
                )
            )
            with trio.move_on_after(3 * nodes.lease_ttl_s):
                await started[b.node_id].wait()
            assert running == [a.node_id]
            a_scope.cancel()
            await started[b.node_id].wait()
            assert running == [a.node_id, b.node_id]
            nursery.cancel_scope.cancel()


async def test_an_idempotency_key_is_claimed_once_across_nodes(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        claims = {}

        async def claim(node_id: str, node: Cluster) -> None:
            claims[node_id] = await node.claims.claim("idem:1", node_id.encode())

        async with trio.open_nursery() as nursery:
            nursery.start_soon(claim, "a", a)
            nursery.start_soon(claim, "b", b)
        firsts = [name for name, c in claims.items() if c.first]
        assert len(firsts) == 1
        winner = firsts[0]
        loser = "b" if winner == "a" else "a"
        assert claims[loser].ack == winner.encode() and claims[loser].final is None
        assert await (a if winner == "b" else b).claims.finish("idem:1", b"final") is True
        again = await a.claims.claim("idem:1", b"other")
        assert (again.first, again.ack, again.final) == (False, winner.encode(), b"final")
        assert await b.claims.get("idem:1") == again
        assert await b.claims.get("idem:none") is None
        assert await b.claims.finish("idem:none", b"x") is False


async def test_a_claim_expires_after_its_ttl(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        a.claims.ttl_s = b.claims.ttl_s = 0.1
        assert (await a.claims.claim("idem:t", b"one")).first
        await poll(lambda: _is_none(b.claims.get("idem:t")))
        assert (await b.claims.claim("idem:t", b"two")).first


async def test_a_run_stream_replays_from_a_seq_and_follows_to_its_end(nodes: Nodes) -> None:
    with trio.fail_after(10):
        writer, reader = nodes.all[:2]
        for seq in range(1, 4):
            assert await writer.streams.append("run-1", seq, b"frame %d" % seq)
        assert await writer.streams.append("run-1", 2, b"again") is False
        replay = await reader.streams.read("run-1", after_seq=1)
        assert [(e.seq, e.frame) for e in replay.entries] == [(2, b"frame 2"), (3, b"frame 3")]
        assert not replay.gap and not replay.ended and replay.last_seq == 3
        assert (await reader.streams.read("run-1", 3)).entries == ()
        assert (await reader.streams.read("run-none")).entries == ()
        followed: list[StreamEntry] = []
        caught_up = trio.Event()

        async def follow() -> None:
            async with aclosing(reader.streams.follow("run-1", 1)) as entries:
                async for entry in entries:
                    followed.append(entry)
                    if entry.seq == 3:
                        caught_up.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            await caught_up.wait()
            await writer.streams.append("run-1", 4, b"frame 4")
            await writer.streams.append("run-1", 5, b"done", terminal=True)
        assert [e.seq for e in followed] == [2, 3, 4, 5]
        assert followed[-1].terminal and not followed[0].terminal
        ended = await reader.streams.read("run-1", 3)
        assert ended.ended and ended.last_seq == 5


async def test_a_run_stream_is_bounded_and_says_when_it_no_longer_reaches_back(
    nodes: Nodes,
) -> None:
    with trio.fail_after(20):
        writer, reader = nodes.all[:2]
        writer.streams.maxlen = 100
        for seq in range(1, 1001):
            await writer.streams.append("run-big", seq, b"x")
        kept = await reader.streams.read("run-big", 0, limit=10_000)
        assert kept.gap and kept.last_seq == 1000
        # Redis trims whole macro-nodes (`MAXLEN ~`): up to one node (100 entries) more.
        assert 100 <= len(kept.entries) <= 200
        first = kept.entries[0].seq
        assert not (await reader.streams.read("run-big", first - 1)).gap
        with pytest.raises(StreamGap):
            async with aclosing(reader.streams.follow("run-big", 0)) as entries:
                async for _ in entries:
                    pass  # pragma: no cover


async def test_an_ended_stream_expires_after_its_ttl(nodes: Nodes) -> None:
    with trio.fail_after(10):
        writer, reader = nodes.all[:2]
        writer.streams.ended_ttl_s = 0.1
        await writer.streams.append("run-e", 1, b"a")
        await writer.streams.append("run-e", 2, b"end", terminal=True)
        assert (await reader.streams.read("run-e")).ended
        await poll(lambda: _after_read_empty(reader, "run-e"))


async def test_a_publish_is_heard_by_every_subscriber(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b, c = nodes.all
        assert await a.generations.current() is None
        first = await a.generations.publish(b"hash-1")
        assert first is not None and first.number == 1
        heard: dict[str, list[tuple[int, bytes]]] = {b.node_id: [], c.node_id: []}
        ready = trio.Semaphore(0)

        async def subscribe(node_id: str, node: Cluster) -> None:
            async with node.generations.subscribe() as versions:
                async for version in versions:
                    heard[node_id].append((version.number, version.data))
                    ready.release()
                    if version.number == 2:
                        return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(subscribe, b.node_id, b)
            nursery.start_soon(subscribe, c.node_id, c)
            await ready.acquire()
            await ready.acquire()  # both have read version 1 and are subscribed
            assert await a.generations.publish(b"stale", after=0) is None
            second = await a.generations.publish(b"hash-2", after=1)
            assert second is not None and second.number == 2
        assert heard == {n: [(1, b"hash-1"), (2, b"hash-2")] for n in heard}
        assert await c.generations.current() == second


async def _after(value: bool) -> bool:
    await trio.lowlevel.checkpoint()
    return value


async def _is_none(value: Awaitable[object]) -> bool:
    return await value is None


async def _after_read_empty(node: Cluster, run_id: str) -> bool:
    read = await node.streams.read(run_id)
    return read.entries == ()


async def test_node_records_are_listed_until_forgotten_or_expired(nodes: Nodes) -> None:
    a, b = nodes.all[:2]
    with trio.fail_after(5):
        await a.nodes.beat(b"a1", ttl_s=0.3)
        await b.nodes.beat(b"b1", ttl_s=30)
        assert await b.nodes.all() == {a.node_id: b"a1", b.node_id: b"b1"}
        await a.nodes.beat(b"a2", ttl_s=0.3)
        assert (await a.nodes.all())[a.node_id] == b"a2"
        await b.nodes.forget()
        assert await a.nodes.all() == {a.node_id: b"a2"}

        async def a_expired() -> bool:
            return await b.nodes.all() == {}

        await poll(a_expired)


async def test_a_node_id_is_beaten_by_one_process_at_a_time(backend: str) -> None:
    async with open_nodes(backend, count=1, twin=True) as nodes:
        await _one_beater_per_node_id(*nodes.all)


async def _one_beater_per_node_id(first: Cluster, twin: Cluster) -> None:
    with trio.fail_after(10):
        await first.nodes.beat(b"first", ttl_s=30)
        with pytest.raises(NodeIdInUse) as refused:
            await twin.nodes.beat(b"twin", ttl_s=30)
        assert refused.value.record == b"first"
        assert await twin.nodes.holder() == (first.nodes.instance, b"first")
        await twin.nodes.forget()  # not its record: nothing is removed
        assert (await twin.nodes.all())[first.node_id] == b"first"
        await first.nodes.beat(b"first", ttl_s=0.3)  # its own: renewed, to expire soon

        async def first_expired() -> bool:
            return await twin.nodes.holder() is None

        await poll(first_expired)
        await twin.nodes.beat(b"twin", ttl_s=30)  # the id is free once the record expired
        with pytest.raises(NodeIdInUse):
            await first.nodes.beat(b"first again", ttl_s=30)
        await first.nodes.beat(b"first again", ttl_s=30, over=twin.nodes.instance)  # taken over
        assert (await twin.nodes.all())[first.node_id] == b"first again"
        await first.nodes.forget()
        assert first.node_id not in await twin.nodes.all()


async def test_holder_and_renew_many(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        one, two = await a.leases.acquire("s:1"), await a.leases.acquire("s:2")
        assert one is not None and two is not None
        assert await b.leases.holder("s:1") == one
        assert await b.leases.holder("s:none") is None
        await nodes.steal(two)
        assert await a.leases.renew_many([one, two]) == [True, False]
        assert await a.leases.renew_many([]) == []


async def acquire_all(node: Cluster, names: list[str]) -> list[Lease]:
    """Leases of `names`, all acquired by `node`."""
    leases = [await node.leases.acquire(name) for name in names]
    assert all(lease is not None for lease in leases)
    return [lease for lease in leases if lease is not None]


async def test_renew_many_in_chunks_answers_each_lease_in_order(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis renews in chunks of `RENEW_CHUNK` leases (3 here), each chunk's leases packed
    into one argument: every lease's answer comes back in its place across the chunks,
    whatever its key holds (a newline, a `|`, non-ASCII text)."""
    monkeypatch.setattr("actors.cluster._redis.RENEW_CHUNK", 3)
    with trio.fail_after(10):
        a = nodes.all[0]
        names = ["s:plain", "s:line\nbreak", "s:pipe|bar", "s:é ü 会话", "s:" + "x" * 300]
        names += [f"s:{i}" for i in range(5)]
        held = await acquire_all(a, names)
        stolen = {1, 3, 4, 8}  # in the first, second and third chunks
        for i in stolen:
            await nodes.steal(held[i])
        assert await a.leases.renew_many(held) == [i not in stolen for i in range(len(held))]
        for i, lease in enumerate(held):
            assert (await a.leases.holder(lease.key) == lease) is (i not in stolen)


async def test_release_many_gives_up_only_the_leases_still_held(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`release_many` answers as `release` would for each lease, in order, across Redis's
    chunks (3 here): a lease that lapsed, or that another node took since, is left alone."""
    monkeypatch.setattr("actors.cluster._redis.RENEW_CHUNK", 3)
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        names = ["r:1", "r:line\nbreak|x", "r:taken", "r:é 会话", "r:5", "r:6", "r:7"]
        held = await acquire_all(a, names)
        await nodes.steal(held[2])
        other = await b.leases.acquire("r:taken")
        await nodes.steal(held[5])
        assert await a.leases.release_many(held) == [True, True, False, True, True, False, True]
        assert await b.leases.holder("r:taken") == other
        for lease in held:
            if lease.key != "r:taken":
                assert await b.leases.holder(lease.key) is None
        assert await a.leases.release_many([]) == []


async def test_unfinished_claims_are_listed_by_owner_until_finished(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        assert (await a.claims.claim("run:1", b"ack", owner=a.node_id)).first
        assert (await a.claims.claim("run:2", b"ack", owner=a.node_id)).first
        assert not (await b.claims.claim("run:1", b"ack", owner=b.node_id)).first
        assert (await b.claims.claim("run:3", b"ack")).first  # no owner: not listed
        assert await b.claims.unfinished() == {a.node_id: ["run:1", "run:2"]}
        assert await b.claims.finish("run:1", b"final", owner=a.node_id)
        assert await a.claims.unfinished() == {a.node_id: ["run:2"]}
        await a.claims.finish("run:2", b"final", owner=a.node_id)
        assert await a.claims.unfinished() == {}


async def test_channels_carry_messages_in_order_from_a_cursor(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        start = await b.channels.tail("inbox:b")
        assert start == b.channels.START
        assert await b.channels.receive({"inbox:b": start}, timeout_s=0.05) == []
        await a.channels.send("inbox:b", [b"one", b"two"])
        await a.channels.send("events:a", [b"e1"])
        got = await b.channels.receive({"inbox:b": start, "events:a": start}, timeout_s=1)
        assert sorted((m.channel, m.data) for m in got) == [
            ("events:a", b"e1"),
            ("inbox:b", b"one"),
            ("inbox:b", b"two"),
        ]
        cursor = next(m.cursor for m in got if m.data == b"two")
        assert await b.channels.tail("inbox:b") == cursor

        async def later() -> None:
            await trio.testing.wait_all_tasks_blocked()  # the receiver is waiting
            await a.channels.send("inbox:b", [b"three"])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(later)
            got = await b.channels.receive({"inbox:b": cursor}, timeout_s=5)
        assert [m.data for m in got] == [b"three"]


async def test_a_channel_keeps_what_was_sent_within_its_retention(nodes: Nodes) -> None:
    """Messages older than `retention_s` are trimmed at the next send (Redis: by its own
    clock), so a channel's memory is what was sent in that time, not a count of messages."""
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        a.channels.retention_s = 0.3
        start = await b.channels.tail("inbox:r")
        await a.channels.send("inbox:r", [b"old-1", b"old-2"])
        await trio.sleep(0.5)  # past the retention, by the clock (nobody else to wait for)
        await a.channels.send("inbox:r", [b"new"])
        got = await b.channels.receive({"inbox:r": start}, timeout_s=1)
        assert [m.data for m in got] == [b"new"]


async def test_a_lapsed_lease_is_taken_again_only_if_nobody_took_it(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        first = await a.leases.acquire("s:late")
        assert first is not None
        assert await a.leases.reacquire(first) is None  # still held: nothing to take again
        await nodes.steal(first)  # it lapsed
        again = await a.leases.reacquire(first)
        assert again is not None and again.token > first.token and again.owner == a.node_id
        assert await b.leases.holder("s:late") == again
        await nodes.steal(again)
        other = await b.leases.acquire("s:late")  # another node took it meanwhile ...
        assert other is not None
        assert await b.leases.release(other)  # ... and let it go
        assert await a.leases.reacquire(again) is None  # what `a` holds in memory is stale


async def test_reacquire_many_takes_back_exactly_the_lapsed_leases_nobody_took(
    nodes: Nodes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reacquire_many` answers as `reacquire` would for each lease, in order, across
    Redis's chunks (3 leases here): a lease still held, or one another node took since,
    is not taken; a lapsed one comes back with a larger token."""
    monkeypatch.setattr("actors.cluster._redis.RENEW_CHUNK", 3)
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        names = ["s:held", "s:lapsed", "s:line\nbreak|x", "s:taken", "s:é 会话", "s:held-2", "s:z"]
        held = await acquire_all(a, names)
        lapsed = {1, 2, 4, 6}
        for i in [*lapsed, 3]:
            await nodes.steal(held[i])
        other = await b.leases.acquire("s:taken")  # another node took it and let it go
        assert other is not None and await b.leases.release(other)
        taken = await a.leases.reacquire_many(held)
        assert [again is not None for again in taken] == [i in lapsed for i in range(len(held))]
        for old, again in zip(held, taken, strict=True):
            if again is not None:
                assert again.key == old.key and again.owner == a.node_id
                assert again.token > old.token
                assert await b.leases.holder(old.key) == again
        assert await a.leases.reacquire_many([]) == []


async def test_claims_and_finals_in_one_step(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a, b = nodes.all[:2]
        assert await a.claims.claim_many([]) == []
        assert (await b.claims.claim("run:m2", b"b-ack", owner=b.node_id)).first
        got = await a.claims.claim_many(
            [("run:m1", b"a1"), ("run:m2", b"a2"), ("run:m1", b"again")], owner=a.node_id
        )
        assert [c.first for c in got] == [True, False, False]
        assert got[1].ack == b"b-ack" and got[2].ack == b"a1" and got[2].final is None
        assert await b.claims.unfinished() == {a.node_id: ["run:m1"], b.node_id: ["run:m2"]}
        done = await a.claims.finish_many([("run:m1", b"f1"), ("run:none", b"f")], owner=a.node_id)
        assert done == [True, False]
        assert await b.claims.get("run:m1") == Claim(False, b"a1", b"f1")
        assert await b.claims.unfinished() == {b.node_id: ["run:m2"]}
