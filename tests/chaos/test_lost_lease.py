"""A node loses a session's lease in the middle of a run: partitioned from Redis (every
byte to and from Redis lost, nothing closed) or frozen (SIGSTOP) past the lease TTL, then
healed or thawed. The node gives up the leases it cannot renew within their TTL (and its
copies of the sessions), so the other node serves the session within the bound; the
stale run ends with one outcome on both nodes (`aborted` when its node stopped it, its turn
so far stored before the other node took the session), and nothing it wrote after the
lease was lost reached the transcript (the session's fencing token moved on); the healed
node serves runs again; light load on other sessions throughout keeps every run's
invariants."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from tests.actors._databases import pg_url
from tests.chaos._checks import Figures, assert_checks, fence_of, figures, times_in_transcripts
from tests.chaos._cluster import FULL, TTL_MS, Cluster, Node, open_cluster
from tests.chaos._load import Load, Run, drive, probe, until

__all__ = ["pg_url"]  # the fixture, used by name

pytestmark = pytest.mark.chaos

FAULT_S = 6.0 if FULL else 2.5
"""How long the node stays partitioned or frozen (the lease TTL is 1 s)."""
TAKEOVER_BOUND_S = TTL_MS / 1000 + 4.0
"""From the fault's start to a run on the session acknowledged and ended `ok` by the other
node (the lease expires after its TTL; the rest is margin for a loaded machine)."""
RECOVERY_BOUND_S = 10.0
"""From the fault's end to a run acknowledged and ended `ok` by the node that had it."""
VICTIM = "victim"


def faults(node: Node) -> dict[str, tuple[Callable[[], None], Callable[[], None]]]:
    return {
        "partitioned from Redis": (node.redis.drop, node.redis.heal),
        "frozen (SIGSTOP)": (node.freeze, node.thaw),
    }


async def start_victim(cluster: Cluster, load: Load) -> Run:
    """A run on node-a that would last ~10 s, once node-a streams it."""
    a = cluster.nodes[0]
    async with a.client(events=True) as client:
        first = await load.send(client, a, VICTIM)  # node-a takes the session
        assert first.acked_at is not None, first
        await load.wait(client, first)
        assert first.outcome == "ok", first
        run, params = load.new_run(a, VICTIM)
        params["message"] = f"[[reply:stale {run.run_id}]] [[deltas:200]] [[delay:50]]"
        ack = await client.request("agent", params)
        assert ack["status"] == "accepted", ack
        run.acked_at = trio.current_time()
        async for event, payload, _seq in client.events:
            if (
                event == "agent"
                and payload.get("runId") == run.run_id
                and payload.get("stream") == "assistant"
            ):
                return run
    raise AssertionError("node-a closed the connection before the run streamed")


async def lost_lease(tmp_path: Path, pg: str, fault: str) -> Figures:
    async with open_cluster(tmp_path, pg) as cluster:
        a, b = cluster.nodes
        start, end = faults(a)[fault]
        load, stop = Load("lease"), trio.Event()
        found = figures(f"a node {fault} mid-run", load)
        recovery = found.recovery_s
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drive, load, cluster.nodes, 4, stop)
            victim = await start_victim(cluster, load)
            key = f"agent:main:{VICTIM}"
            fence = await trio.to_thread.run_sync(fence_of, cluster.pg_url, key)
            start()
            at = trio.current_time()
            ack, ok = await probe(load, b, at, timeout_s=TAKEOVER_BOUND_S, session=VICTIM)
            recovery["node-b takes the session, ack"], recovery["ok"] = ack, ok
            await trio.sleep(max(0.0, at + FAULT_S - trio.current_time()))  # the fault lasts
            cluster.assert_running()
            end()
            back = trio.current_time()
            ack, ok = await probe(load, a, back, timeout_s=RECOVERY_BOUND_S)
            recovery["node-a serves again, ack"], recovery["ok "] = ack, ok
            await until(
                lambda: all(load.ok_since(n.name, back) >= 2 for n in cluster.nodes),
                "runs on both nodes again",
                timeout_s=30,
                detail=lambda: load.since(back),
            )
            stop.set()
        await assert_checks(cluster, load, found)
        # no stale write: its fence moved, and the victim's reply never reached the
        # transcript, unless its own node stopped it (`aborted`: its lease not renewed in
        # time) and stored its turn so far before the other node took the session (a later
        # write with its token would have been refused)
        assert victim.outcome in ("error", "aborted"), victim
        counts = await times_in_transcripts(cluster, [victim])
        stored = ((0, 0), (1, 0), (1, 1)) if victim.outcome == "aborted" else ((0, 0), (1, 0))
        assert counts[victim.run_id] in stored, counts  # its message at most
        after = await trio.to_thread.run_sync(fence_of, cluster.pg_url, key)
        assert fence is not None and after is not None and after > fence, (fence, after)
        found.notes.append(f"the stale run ended {victim.outcome}, fence {fence} -> {after}")
        return found


@pytest.mark.parametrize(
    "fault",
    [
        "partitioned from Redis",
        "frozen (SIGSTOP)",
    ],
)
async def test_a_node_that_loses_its_lease_mid_run(tmp_path: Path, pg_url: str, fault: str) -> None:
    with trio.fail_after(150 if FULL else 75):
        await lost_lease(tmp_path, pg_url, fault)
