"""Redis killed and started again empty (a redis-server of the scenario's own, no
persistence) while runs go to both nodes on many sessions: while it is away, what needs it
is refused `UNAVAILABLE`; once it is back, both nodes serve runs again within the bound;
every acknowledged run ended once, nothing ran twice, every node serves the same config."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from tests.actors._databases import pg_url
from tests.chaos._checks import assert_checks, figures
from tests.chaos._cluster import FULL, Node, open_cluster
from tests.chaos._load import Load, drive, probe, until

__all__ = ["pg_url"]  # the fixture, used by name

pytestmark = pytest.mark.chaos

SESSIONS = 40 if FULL else 8
DOWN_S = 4.0 if FULL else 1.0
RECOVERY_BOUND_S = 10.0
"""From Redis back to a run acknowledged and ended `ok` on each node."""


async def test_redis_restarted_empty_under_load(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(150 if FULL else 60):
        async with open_cluster(tmp_path, pg_url) as cluster:
            load, stop = Load("redis"), trio.Event()
            found = figures("Redis restarted empty under load", load)
            recovery = found.recovery_s
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drive, load, cluster.nodes, SESSIONS, stop)
                names = [n.name for n in cluster.nodes]
                await until(
                    lambda: all(load.ok_since(n, 0) >= 3 for n in names), "runs", timeout_s=30
                )
                await cluster.redis.stop()
                down_at = trio.current_time()
                await until(lambda: load.refusals()["UNAVAILABLE"] >= 1, "a refusal", timeout_s=20)
                await trio.sleep(max(0.0, down_at + DOWN_S - trio.current_time()))  # the outage
                cluster.assert_running()
                await cluster.redis.start()
                back = trio.current_time()

                async def recover(node: Node) -> None:
                    ack, ok = await probe(load, node, back, timeout_s=RECOVERY_BOUND_S)
                    recovery[f"{node.name} ack"], recovery[f"{node.name} ok"] = ack, ok

                async with trio.open_nursery() as probes:
                    for node in cluster.nodes:
                        probes.start_soon(recover, node)
                await until(
                    lambda: all(load.ok_since(n, back) >= 3 for n in names),
                    "runs on both nodes again",
                    timeout_s=30,
                )
                stop.set()
            found.notes.append(f"{SESSIONS} sessions, Redis down {back - down_at:.1f} s")
            await assert_checks(cluster, load, found, forgotten=True)
