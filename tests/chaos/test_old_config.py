"""A node restarted with an older config file: under load, `config.patch` through node-a
changes the cluster's config (`agents.defaults.timeoutSeconds`: 777); node-b is killed
(SIGKILL, a crash) and started again from the file it had, an hour older than the
cluster's config. It adopts the cluster's config: `config.get` answers the patched hash on
both nodes, both serve one generation (`status`: the same inputs hash everywhere), node-b
serves runs again within the bound, and the runs of the load keep their invariants."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import trio

from tests.actors._databases import pg_url
from tests.chaos._checks import assert_checks, assert_same_config, figures
from tests.chaos._cluster import FULL, open_cluster
from tests.chaos._load import Load, drive, probe, until

__all__ = ["pg_url"]  # the fixture, used by name

pytestmark = pytest.mark.chaos

SESSIONS = 40 if FULL else 8
RESTART_BOUND_S = 30.0
"""From node-b's start to a run acknowledged and ended `ok` through it."""


async def test_a_node_restarted_with_an_older_config_file(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(150 if FULL else 90):
        async with open_cluster(tmp_path, pg_url) as cluster:
            a, b = cluster.nodes
            old = b.read_config()
            load, stop = Load("config"), trio.Event()
            found = figures("a node restarted with an older config file", load)
            recovery = found.recovery_s
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drive, load, cluster.nodes, SESSIONS, stop)
                await until(
                    lambda: all(load.ok_since(n.name, 0) >= 3 for n in cluster.nodes),
                    "runs",
                    timeout_s=30,
                )
                before = await assert_same_config(cluster)
                raw = json.dumps({"agents": {"defaults": {"timeoutSeconds": 777}}})
                base = before[a.name]["hash"]
                patched = await a.request("config.patch", {"raw": raw, "baseHash": base})
                await assert_same_config(cluster)
                await b.kill()  # a crash, in the middle of the load
                b.write_config(old)
                an_hour_ago = time.time() - 3600
                os.utime(b.config_path, (an_hour_ago, an_hour_ago))
                started = trio.current_time()
                await b.start()
                recovery["node-b listens"] = trio.current_time() - started
                ack, ok = await probe(load, b, started, timeout_s=RESTART_BOUND_S)
                recovery["node-b serves, ack"], recovery["ok"] = ack, ok
                await until(
                    lambda: load.ok_since(b.name, started) >= 3,
                    "runs through node-b again",
                    timeout_s=30,
                    detail=lambda: load.since(started),
                )
                stop.set()
            seen = await assert_same_config(cluster)
            assert {v["hash"] for v in seen.values()} == {patched["hash"]}, seen
            for node in cluster.nodes:
                got = await node.request("config.get", {})
                assert got["config"]["agents"]["defaults"]["timeoutSeconds"] == 777, node.name
            assert "timeoutSeconds" not in b.config_path.read_text()  # the file was not written
            found.notes.append(f"config.get hash on both nodes {patched['hash'][:12]}")
            # node-b's new process may not know a run its first one had (`timeout`)
            await assert_checks(cluster, load, found, forgotten=True)
