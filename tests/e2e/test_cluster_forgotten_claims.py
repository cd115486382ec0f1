"""What the run journal (PostgreSQL) answers when Redis cannot.

A retried idempotency key whose claim Redis forgot (it restarted empty) never runs its run
a second time: within a claim's TTL of Redis's memory beginning again, a key found
unclaimed is looked up in the journal first. A run that ended is answered as it ended (its
record and cached answer restored from the journal); one accepted and not ended is refused
`UNAVAILABLE` (retryable), whichever node is asked. And `agent.wait` for a run of a node
taken for lost answers as the journal ended it.

Two gateways in this process on PostgreSQL and the shared Redis, under a key prefix of the
test's own; "Redis restarted empty" is every key under that prefix deleted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from actors.store import AcceptedRun, RunIdentity, WriteGroup, accepted_row
from tests.actors._cluster_nodes import drop_prefix, raw_client
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, Node, two_nodes, wait_for
from transports import GatewayRequestError

__all__ = ["pg_url"]  # the fixture, used by name


def prefix_of(node: Node) -> str:
    prefix: str = node.gw.supervisor.generation.config.cluster.redis.keyPrefix
    return prefix


async def forget_everything(node: Node) -> None:
    """Redis restarted empty, as far as this cluster's keys go."""
    await drop_prefix(prefix_of(node))


def times_in(messages: list[dict[str, object]], role: str, text: str) -> int:
    return sum(m.get("role") == role and text in str(m.get("content")) for m in messages)


async def test_a_retry_whose_claim_was_forgotten_is_answered_from_the_journal(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            params = {
                "message": "[[reply:done once]]",
                "idempotencyKey": "forgotten-1",
                "sessionKey": "forgotten",
            }
            async with open_client(a.gw, scopes=ADMIN) as ca:
                first = await ca.request("agent", params, expect_final=True, timeout=30)
            assert first["status"] == "ok"
            await forget_everything(a)
            await a.close()  # the session and the run's memory go with node A
            async with open_client(b.gw, scopes=ADMIN) as cb:
                again = await cb.request("agent", params, expect_final=True, timeout=30)
                assert again["status"] == "ok"
                assert again["result"]["payloads"] == first["result"]["payloads"]
                waited = await cb.request("agent.wait", {"runId": "forgotten-1", "timeoutMs": 0})
                assert waited["status"] == "ok"
                got = await cb.request("chat.history", {"sessionKey": "forgotten"})
            record = b.gw.registry.get("forgotten-1")
            assert record is not None and record.restored  # from the journal, not run on B
            assert times_in(got["messages"], "assistant", "done once") == 1
            assert times_in(got["messages"], "user", "[[reply:done once]]") == 1
            # a new key runs as ever (the journal has no row of it)
            async with open_client(b.gw, scopes=ADMIN) as cb:
                fresh = {**params, "idempotencyKey": "forgotten-2", "message": "[[reply:new]]"}
                assert (await cb.request("agent", fresh, expect_final=True))["status"] == "ok"


async def test_a_retry_of_a_run_accepted_and_not_ended_is_refused_not_run(
    tmp_path: Path, pg_url: str
) -> None:
    """The journal has the run accepted and not ended (a node may be running it, its
    claim gone with Redis): each retry is refused UNAVAILABLE, and nothing runs."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            identity = RunIdentity(
                "in-flight-1",
                "agent",
                "agent:main:inflight",
                "sid-x",
                "main",
                int(time.time() * 1000),
            )
            row = accepted_row(identity, request=AcceptedRun(message="[[reply:twice?]]"))
            await a.gw.supervisor.store.commit_durable(WriteGroup(run=row))
            await forget_everything(a)
            params = {
                "message": "[[reply:twice?]]",
                "idempotencyKey": "in-flight-1",
                "sessionKey": "inflight",
            }
            for node in (b, a, b):
                async with open_client(node.gw, scopes=ADMIN) as client:
                    with pytest.raises(GatewayRequestError) as info:
                        await client.request("agent", params, expect_final=True, timeout=30)
                assert info.value.code == "UNAVAILABLE"
                assert "accepted and has not ended" in info.value.message
            for node in nodes:
                assert node.gw.registry.get("in-flight-1") is None


async def test_agent_wait_for_a_run_of_a_lost_node_answers_as_the_journal_ended_it(
    tmp_path: Path, pg_url: str
) -> None:
    """A node takes another for lost while the run's claim has no final (it ended there,
    its final not stored in Redis): `agent.wait` answers how the journal says it ended,
    not `error` for the node's absence; a run the journal has not seen end still answers
    that its node was lost."""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes
            params = {"message": "[[reply:ok there]]", "idempotencyKey": "w-1", "sessionKey": "w"}
            async with open_client(a.gw, scopes=ADMIN) as ca:
                assert (await ca.request("agent", params, expect_final=True))["status"] == "ok"
            prefix = prefix_of(a)
            await a.close()
            async with raw_client() as redis:  # its final never reached Redis
                await redis.hdel(f"{prefix}idem:run:w-1", ["f"])
            router = b.gw.router
            assert router is not None
            await wait_for(lambda: "node-a" not in router.alive, "node-a gone", timeout_s=20)
            async with open_client(b.gw, scopes=ADMIN) as cb:
                waited = await cb.request("agent.wait", {"runId": "w-1", "timeoutMs": 0})
            assert waited["status"] == "ok" and "endedAt" in waited, waited
            assert b.gw.registry.get("w-1") is None  # read, not taken over
