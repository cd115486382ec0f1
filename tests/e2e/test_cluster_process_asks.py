"""`process` through a cluster that has a node which never answers job asks (a node of an
earlier version, which knows nothing of jobs: here a node record beaten into Redis with no
gateway behind it), beside two gateways (this process, one PostgreSQL, one Redis):

- `process list` through B asks A (which answers: its job is listed `[on node-a]`) but not
  the silent node, so it answers at once rather than after the ask's wait; a poll of a job no
  node has is answered at once too (not after waiting for the silent node).

Skipped, saying why, when Redis or PostgreSQL cannot be reached.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import trio

from actors.cluster._redis import open_redis_cluster
from tests.actors._cluster_nodes import REDIS_URL
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, wait_for
from tests.e2e.test_cluster_process_records import cluster
from tests.e2e.test_cluster_processes import _process, _start_on_a_then_move

__all__ = ["pg_url"]  # the fixture, used by name

OLD = "node-old"


def _old_record() -> bytes:
    now = int(time.time() * 1000)
    return json.dumps(
        {
            "nodeId": OLD,
            "host": "elsewhere",
            "pid": 1,
            "startedAtMs": now,
            "beatAtMs": now,
            "load": {"activeRuns": 0, "connections": 0, "sessionsOwned": 0},
            "jobs": [],
            "generation": None,
        }
    ).encode()


async def test_a_node_that_never_answers_job_asks_holds_no_call_up(
    tmp_path: Path, pg_url: str
) -> None:
    """Before, `list` waited 5 s for the silent node, and a poll of an unknown job 15 s."""
    with trio.fail_after(60):
        async with cluster(tmp_path, pg_url) as nodes:
            a = await nodes.start("node-a")
            b = await nodes.start("node-b")
            async with (
                open_redis_cluster(REDIS_URL, node_id=OLD, prefix=nodes.prefix) as old,
                trio.open_nursery() as beating,
            ):
                record = _old_record()

                async def beat() -> None:
                    while True:
                        await old.nodes.beat(record, ttl_s=1.0)
                        await trio.sleep(0.2)

                beating.start_soon(beat)
                router = b.gw.router
                assert router is not None and router.processes is not None
                await wait_for(lambda: OLD in router.alive, "the silent node alive", timeout_s=10)
                async with (
                    open_client(a.gw, scopes=ADMIN) as at_a,
                    open_client(b.gw, scopes=ADMIN) as at_b,
                ):
                    sid = await _start_on_a_then_move(a, at_a, "sleep 300")
                    started = trio.current_time()
                    listed = await _process(at_b, "b1", action="list")
                    took = trio.current_time() - started
                    assert f"{sid} running" in listed and "[on node-a]" in listed, listed
                    assert took < 1.5, f"list took {took:.1f} s"
                    started = trio.current_time()
                    polled = await _process(at_b, "b2", action="poll", sessionId="nobody")
                    took = trio.current_time() - started
                    assert "No session found for nobody" in polled, polled
                    assert took < 1.5, f"poll took {took:.1f} s"
                beating.cancel_scope.cancel()
