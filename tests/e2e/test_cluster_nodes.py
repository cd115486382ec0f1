"""Gateways as cluster nodes: two gateways in this process, each
with its own state dir, sharing one PostgreSQL schema and one Redis (under a random key
prefix): both list each other in `status` and `health`; cron and the config file watch run
on exactly one of them, and the other takes over when that one closes; a config published
on one is built and served by the other, which keeps its generation and says so when that
build fails; a Redis that cannot be reached at start is one line and exit 4. Skipped, saying why, only when Redis or
PostgreSQL cannot be reached."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import CronScheduler
from runtime.model import GenerationError, config_to_builtins, parse_config
from runtime.model._config import Config
from tests.actors._cluster_nodes import REDIS_URL, drop_prefix, require_redis
from tests.actors._databases import pg_url
from tests.conftest import local_config, open_client, running_gateway
from transports import Gateway

__all__ = ["pg_url"]  # the fixture, used by name

ADMIN = ["operator.admin", "operator.read", "operator.write"]
TTL_MS = 1_000
CLI = [sys.executable, "-c", "import sys; from transports.cli._main import main; sys.exit(main())"]


SECRET = "sk-cluster-test-secret"
"""A provider key both nodes are configured with (it must never reach Redis)."""


def node_config(
    pg: str, prefix: str, node_id: str, redis_url: str = REDIS_URL, **extra: Any
) -> Config:
    return local_config(
        **extra,
        gateway__auth={"mode": "none"},
        models__providers__local={"api": "local", "apiKey": SECRET, "models": [{"id": "echo"}]},
        storage={"backend": "postgres", "postgres": {"url": pg}},
        cluster={
            "redis": {"url": redis_url, "keyPrefix": prefix},
            "leaseTtlMs": TTL_MS,
            "nodeId": node_id,
        },
    )


class Node:
    """A gateway running in a task of its own, so that either can be closed first."""

    def __init__(self, gw: Gateway, stop: trio.Event, stopped: trio.Event) -> None:
        self.gw = gw
        self._stop = stop
        self.stopped = stopped

    async def close(self) -> None:
        self._stop.set()
        await self.stopped.wait()


async def _serve(
    tmp: Path, config: Config, stop: trio.Event, stopped: trio.Event, *, task_status: Any
) -> None:
    try:
        async with running_gateway(tmp, config) as gw:
            task_status.started(gw)
            await stop.wait()
    finally:
        stopped.set()


@asynccontextmanager
async def two_nodes(
    tmp_path: Path, pg: str, redis_url: str = REDIS_URL, **extra: Any
) -> AsyncIterator[list[Node]]:
    """Nodes A and B (`extra`: more config, as `local_config` takes it)."""
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    try:
        async with trio.open_nursery() as nursery:
            nodes = []
            for name in ("node-a", "node-b"):
                stop, stopped = trio.Event(), trio.Event()
                config = node_config(pg, prefix, name, redis_url, **extra)
                gw = await nursery.start(_serve, tmp_path / name, config, stop, stopped)
                nodes.append(Node(gw, stop, stopped))
            try:
                yield nodes
            finally:
                for node in nodes:
                    await node.close()
    finally:
        await drop_prefix(prefix)


async def wait_for(predicate: Any, what: str, *, timeout_s: float) -> None:
    """Poll `predicate` every 50 ms for at most `timeout_s` (what it reads changes in other
    nodes' tasks and in Redis, which no trio event announces)."""
    deadline = trio.current_time() + timeout_s
    while True:
        if predicate() or trio.current_time() >= deadline:
            break
        await trio.sleep(0.05)
    assert predicate(), f"not within {timeout_s} s: {what}"


def holders(nodes: list[Node], job: str) -> list[Node]:
    return [n for n in nodes if n.gw.node is not None and job in n.gw.node.jobs]


async def test_both_nodes_appear_in_status_and_health(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            for node in nodes:
                async with open_client(node.gw, scopes=ADMIN) as client:
                    status = await client.request("status", {})
                    health = await client.request("health", {})
                # the sessions are in PostgreSQL, not in a SQLite file of the state dir
                (where,) = status["sessions"]["paths"]
                assert where.startswith("postgresql://") and "@" not in where
                for view in (status["clawlane"]["cluster"], health["clawlane"]["cluster"]):
                    assert view["backend"] == "redis" and view["leaseTtlMs"] == TTL_MS
                    assert view["nodeId"] == node.gw.node.node_id  # type: ignore[union-attr]
                    listed = {n["nodeId"]: n for n in view["nodes"]}
                    assert set(listed) == {"node-a", "node-b"}
                    for record in listed.values():
                        assert record["pid"] > 0 and record["startedAtMs"] > 0
                        assert set(record["load"]) == {
                            "activeRuns",
                            "connections",
                            "sessionsOwned",
                        }
            # single-owner work: one node watches the config file, one runs cron
            await wait_for(
                lambda: len(holders(nodes, "config-watch")) == 1, "a watcher", timeout_s=5
            )
            await wait_for(lambda: len(holders(nodes, "cron")) == 1, "a cron owner", timeout_s=5)
            watching = [n.gw.publisher.watch_files for n in nodes]  # type: ignore[union-attr]
            assert sorted(watching) == [False, True]
            assert sum(n.gw.cron is not None for n in nodes) == 1
            # the idle reaper (and everything else) still runs on each node
            closing = nodes[0]
            await closing.close()
            async with open_client(nodes[1].gw, scopes=ADMIN) as client:
                for _ in range(100):
                    view = (await client.request("status", {}))["clawlane"]["cluster"]
                    if [n["nodeId"] for n in view["nodes"]] == ["node-b"]:
                        break
                    await trio.sleep(0.05)
                assert [n["nodeId"] for n in view["nodes"]] == ["node-b"]


def agent_job(every_ms: int) -> dict[str, Any]:
    return {
        "name": "tick",
        "enabled": True,
        "schedule": {"kind": "every", "everyMs": every_ms},
        "sessionTarget": "isolated",
        "wakeMode": "now",
        "payload": {"kind": "agentTurn", "message": "Tick."},
        "delivery": {"mode": "none"},
    }


def cron_of(gw: Gateway) -> CronScheduler | None:
    return gw.cron


async def runs_of(gw: Gateway, job_id: str) -> list[dict[str, Any]]:
    async with open_client(gw, scopes=ADMIN) as client:
        page = await client.request("cron.runs", {"id": job_id, "limit": 200})
    return list(page["entries"])


async def test_cron_fires_on_one_node_and_moves_when_it_closes(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(90):
        async with two_nodes(tmp_path, pg_url) as nodes:
            await wait_for(lambda: len(holders(nodes, "cron")) == 1, "a cron owner", timeout_s=5)
            [owner] = holders(nodes, "cron")
            [other] = [n for n in nodes if n is not owner]
            assert other.gw.cron is None
            async with open_client(owner.gw, scopes=ADMIN) as client:
                job = await client.request("cron.add", agent_job(1_500))
            assert owner.gw.cron is not None
            cron = owner.gw.cron
            await wait_for(lambda: cron.statistics().fired >= 2, "two firings", timeout_s=20)
            await wait_for(lambda: not cron.statistics().running, "the firing ends", timeout_s=10)
            fired = cron.statistics().fired
            entries = await runs_of(owner.gw, job["id"])
            ids = [e["runId"] for e in entries if e.get("action", "finished") == "finished"]
            assert len(ids) == len(set(ids)) == fired  # each slot fired once, by one node
            assert other.gw.cron is None
            # the owner closes: the other node takes the lease within the TTL and fires
            closed_at = trio.current_time()
            await owner.close()
            await wait_for(
                lambda: other.gw.cron is not None, "the takeover", timeout_s=TTL_MS / 1000 * 2
            )
            assert trio.current_time() - closed_at < TTL_MS / 1000 * 2
            took_over = cron_of(other.gw)
            assert took_over is not None and job["id"] in took_over.jobs
            await wait_for(
                lambda: took_over.statistics().fired >= 1, "a firing there", timeout_s=20
            )
            await wait_for(lambda: not took_over.statistics().running, "its end", timeout_s=10)
            after = await runs_of(other.gw, job["id"])
            run_ids = [e["runId"] for e in after]
            assert len(run_ids) == len(set(run_ids)) == fired + took_over.statistics().fired


def max_concurrent(gw: Gateway) -> int:
    return gw.supervisor.generation.config.agents.defaults.maxConcurrent


async def publish_max_concurrent(gw: Gateway, value: int) -> None:
    raw = config_to_builtins(gw.supervisor.generation.config)
    raw["agents"]["defaults"]["maxConcurrent"] = value
    assert gw.publisher is not None
    await gw.publisher.publish_config(parse_config(raw), reason="test")


async def cluster_generation(gw: Gateway) -> dict[str, Any]:
    async with open_client(gw, scopes=ADMIN) as client:
        status = await client.request("status", {})
    return dict(status["clawlane"]["cluster"]["generation"])


async def test_a_publish_on_one_node_is_built_by_the_other(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            a, b = nodes[0].gw, nodes[1].gw
            assert max_concurrent(a) == max_concurrent(b) == 8
            await publish_max_concurrent(a, 5)
            await wait_for(lambda: max_concurrent(b) == 5, "node b swaps", timeout_s=5)
            # secrets never go to Redis: each node puts back its own
            assert a.node is not None
            announced = await a.node.cluster.generations.current()
            assert announced is not None and SECRET.encode() not in announced.data
            assert b.supervisor.generation.config.models.providers["local"].apiKey == SECRET
            seen_a, seen_b = await cluster_generation(a), await cluster_generation(b)
            assert seen_a["version"] == seen_b["version"] is not None
            assert seen_a["failed"] is None and seen_b["failed"] is None
            assert b.publisher is not None and b.publisher.history()[-1]["reason"] == "cluster"
            # a node whose build fails keeps its generation and says so
            serving = b.supervisor.generation.number

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise GenerationError("no provider for this test")

            monkeypatch.setattr(b.publisher.builder, "build", fail)
            await publish_max_concurrent(a, 6)
            assert max_concurrent(a) == 6
            sync = b.node.sync if b.node is not None else None
            assert sync is not None
            await wait_for(lambda: sync.failed is not None, "node b's failure", timeout_s=5)
            assert max_concurrent(b) == 5 and b.supervisor.generation.number == serving
            view = await cluster_generation(b)
            assert view["version"] == seen_b["version"] and view["serving"] == serving
            assert view["failed"]["version"] == seen_b["version"] + 1
            assert "no provider for this test" in view["failed"]["error"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def failed_start(state: Path, config: dict[str, Any]) -> tuple[int, list[str]]:
    """`clawlane gateway` on a new state dir holding `config`, until it exits: its exit
    code and the lines it wrote to stderr."""
    await trio.Path(state).mkdir()
    await trio.Path(state / "clawlane.json").write_text(json.dumps(config))
    result: subprocess.CompletedProcess[bytes] = await trio.run_process(
        [*CLI, "gateway", "--port", "0", "--state-dir", str(state)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return result.returncode, result.stderr.decode().splitlines()


async def test_an_unreachable_redis_is_one_line_and_exit_4(tmp_path: Path) -> None:
    port = _closed_port()
    url = f"redis://:hunter2@127.0.0.1:{port}/0"
    config = {"gateway": {"auth": {"mode": "none"}}, "cluster": {"redis": {"url": url}}}
    with trio.fail_after(60):
        code, lines = await failed_start(tmp_path / "state", config)
    assert code == 4, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"clawlane: cannot reach Redis at redis://:***@127.0.0.1:{port}/0")
    assert "hunter2" not in lines[0]


async def test_a_second_process_under_a_live_nodes_id_refuses_to_start(
    tmp_path: Path, pg_url: str
) -> None:
    """`cluster.nodeId` copied with the config to a second gateway: it stops at start with
    one line naming the key and the process using the id (exit 2), instead of sharing the
    first one's leases and inbox. (A process started again under the id of one that is
    gone is not refused: tests/e2e/test_cluster_loss.py.)"""
    with trio.fail_after(60):
        async with two_nodes(tmp_path, pg_url) as nodes:
            running = nodes[0].gw.supervisor.generation.config
            copied = config_to_builtins(running)
            copied["gateway"]["port"] = 0
            code, lines = await failed_start(tmp_path / "second", copied)
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("clawlane: cluster.nodeId 'node-a' is in use by host ")
    assert f"pid {os.getpid()} " in lines[0]
