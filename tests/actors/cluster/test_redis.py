"""The Redis side of the cluster primitives, where Redis itself misbehaves: not reachable at
start (one line, no password), connections dropped under the client (CLIENT KILL), a Redis
stopped and restarted (calls fail with `ClusterUnavailable`, a held lease is given up in
time, everything recovers, fencing tokens still grow though the data is gone), the keys'
expiries, and `open_cluster` choosing the backend from the config."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import aclosing

import msgspec
import pytest
import trio

from actors import ClusterUnavailable, LeaseLost, open_cluster, open_redis_cluster
from actors.cluster._primitives import StreamEntry
from actors.cluster._redis import redact_url
from runtime.model import parse_config
from tests.actors._cluster_nodes import (
    REDIS_URL,
    Nodes,
    OwnRedis,
    free_port,
    open_nodes,
    raw_client,
    require_redis,
)

pytestmark = pytest.mark.filterwarnings("ignore:Unclosed <MemoryObject:ResourceWarning")
"""coredis 6.9.0 leaves a pair of anyio memory streams unclosed for each connection attempt
that fails (garbage, collected; only the ResourceWarning): ignored here, and collected at
the end of each test so that no later test sees them."""


@pytest.fixture(autouse=True)
def _collect_failed_connections() -> Iterator[None]:
    yield
    gc.collect()


async def test_an_unreachable_redis_fails_at_start_with_one_line() -> None:
    url = f"redis://user:s3cret@127.0.0.1:{free_port()}/0"
    with trio.fail_after(10), pytest.raises(ClusterUnavailable) as caught:
        async with open_redis_cluster(url, node_id="n1", connect_timeout_s=1.0):
            pass  # pragma: no cover
    message = str(caught.value)
    assert message.startswith("cannot reach Redis at redis://user:***@127.0.0.1:")
    assert "\n" not in message and "s3cret" not in message
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


async def test_open_cluster_follows_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    await require_redis()
    with trio.fail_after(10):
        async with open_cluster(parse_config({}), node_id="solo") as local:
            assert local.backend == "local" and local.leases.ttl_s == 5.0
        monkeypatch.setenv("CLAWLANE_TEST_REDIS", REDIS_URL)
        config = parse_config(
            {
                "cluster": {
                    "redis": {"url": "${CLAWLANE_TEST_REDIS}", "keyPrefix": "clawlane-test:"},
                    "leaseTtlMs": 1500,
                }
            }
        )
        assert config.cluster.redis.url == REDIS_URL
        async with open_cluster(config, node_id="n1") as remote:
            assert remote.backend == "redis" and remote.leases.ttl_s == 1.5
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({"cluster": {"leaseTtlMs": 1}}, type(config))


@pytest.fixture
async def nodes() -> object:
    async with open_nodes("redis") as opened:
        yield opened


async def _kill_connections_of(node_id: str) -> int:
    """CLIENT KILL every connection the node's clients have open (found by their names,
    `clawlane:<node>:<role>`)."""
    killed = 0
    async with raw_client() as admin:
        for client in await admin.client_list():
            if str(client.get("name", "")).startswith(f"clawlane:{node_id}:"):
                killed += int(await admin.client_kill(identifier=int(client["id"])))
    return killed


async def test_dropped_connections_are_made_again(nodes: Nodes) -> None:
    with trio.fail_after(15):
        a, b = nodes.all[:2]
        lease = await a.leases.acquire("session:k")
        assert lease is not None
        followed: list[StreamEntry] = []
        heard: list[int] = []
        following, subscribed = trio.Event(), trio.Event()

        async def follow() -> None:
            async with aclosing(b.streams.follow("run-k")) as entries:
                async for entry in entries:
                    followed.append(entry)
                    following.set()

        async def subscribe() -> None:
            async with b.generations.subscribe() as versions:
                subscribed.set()
                async for version in versions:
                    heard.append(version.number)
                    if version.number == 2:
                        return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            nursery.start_soon(subscribe)
            await a.streams.append("run-k", 1, b"one")
            await following.wait()
            await subscribed.wait()
            assert await _kill_connections_of(a.node_id) >= 1
            assert await _kill_connections_of(b.node_id) >= 2  # commands, follow, pub/sub
            assert await a.leases.renew(lease) is True
            assert await b.leases.fence("session:k") == lease.token
            await a.streams.append("run-k", 2, b"two", terminal=True)
            assert (await a.generations.publish(b"v1")) is not None
            assert (await a.generations.publish(b"v2")) is not None
        assert [(e.seq, e.frame) for e in followed] == [(1, b"one"), (2, b"two")]
        assert heard[-1] == 2


async def test_a_stopped_redis_fails_calls_loses_held_leases_and_recovers() -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            own = OwnRedis(nursery)
            await own.start()
            async with open_redis_cluster(own.url, node_id="n1", lease_ttl_s=0.6) as node:
                before = await node.leases.acquire("session:r")
                assert before is not None
                with pytest.raises(LeaseLost):
                    async with node.leases.hold(nursery, "session:held") as held:
                        await own.stop()
                        with pytest.raises(ClusterUnavailable, match="Redis unavailable"):
                            await node.streams.append("run-r", 1, b"x")
                        with pytest.raises(ClusterUnavailable):
                            await node.claims.claim("idem:r", b"ack")
                        await trio.sleep_forever()
                assert held.lost.is_set()
                assert trio.current_time() < held.deadline + 0.5
                await own.start()
                after = await node.leases.acquire("session:r")
                assert after is not None and after.token > before.token
                assert await node.streams.append("run-r", 1, b"x") is True
                assert (await node.claims.claim("idem:r", b"ack")).first
            nursery.cancel_scope.cancel()


async def test_keys_expire_as_documented(nodes: Nodes) -> None:
    with trio.fail_after(10):
        a = nodes.all[0]
        await a.streams.append("run-t", 1, b"a")
        await a.claims.claim("idem:t", b"ack")
        lease = await a.leases.acquire("session:t")
        assert lease is not None
        async with raw_client() as client:
            run_key = f"{nodes.prefix}run:run-t"
            assert 0 < await client.pttl(run_key) <= a.streams.idle_ttl_s * 1000
            await a.streams.append("run-t", 2, b"end", terminal=True)
            assert 0 < await client.pttl(run_key) <= a.streams.ended_ttl_s * 1000
            assert 0 < await client.pttl(f"{nodes.prefix}idem:idem:t") <= 300_000
            assert 0 < await client.pttl(f"{nodes.prefix}lease:session:t") <= 500
            assert 3_600_000 < await client.pttl(f"{nodes.prefix}fence:session:t") <= 86_400_000


async def test_a_key_whose_fence_expired_still_gets_a_larger_token(nodes: Nodes) -> None:
    """Fence keys expire (a day), so Redis does not keep one per session key ever used;
    tokens stay larger than every earlier one (the server's clock), and a lease whose
    fence expired while it lapsed is taken again."""
    with trio.fail_after(10):
        a = nodes.all[0]
        first = await a.leases.acquire("session:f")
        assert first is not None
        fence_key = f"{nodes.prefix}fence:session:f"
        async with raw_client() as client:
            await client.delete([fence_key])  # as after a day
        await nodes.steal(first)  # and the lease lapsed
        again = await a.leases.reacquire(first)
        assert again is not None and again.token > first.token
        assert await a.leases.release(again)
        async with raw_client() as client:
            await client.delete([fence_key])
        later = await a.leases.acquire("session:f")
        assert later is not None and later.token > again.token
