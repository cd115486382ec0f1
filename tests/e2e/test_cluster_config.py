"""One cluster, one config: two gateways in this process, each with its own state dir and
config file (as on two machines), on one PostgreSQL schema and one Redis (a random key
prefix). `config.get` on either node answers the cluster's config and hash; `config.patch`
through either is a compare-and-set on it; a node restarted from an older file adopts the
cluster's config, and `--seed-config` makes its file the cluster's; the file watch publishes
a changed file and refuses an older one; a node that cannot build the cluster's config says
so in `status`, where every node's generation and inputs hash are listed. Skipped, saying
why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model import GenerationError, config_to_builtins
from runtime.model._config import load_config, write_config_text
from tests.actors._cluster_nodes import drop_prefix, require_redis
from tests.actors._databases import pg_url
from tests.conftest import open_client, running_gateway
from tests.e2e.test_cluster_nodes import ADMIN, SECRET, node_config
from transports import Gateway, GatewayRequestError

__all__ = ["pg_url"]  # the fixture, used by name

TIMEOUT = 90
WITHIN_S = 5.0


class Cluster:
    """Nodes `a` and `b` of one cluster, each in a task of its own, started (and started
    again) from their config files."""

    def __init__(self, tmp_path: Path, pg: str, nursery: trio.Nursery) -> None:
        self.tmp_path, self.pg, self.nursery = tmp_path, pg, nursery
        self.prefix = f"clawlane-test:{secrets.token_hex(6)}:"
        self.nodes: dict[str, tuple[Gateway, trio.Event, trio.Event]] = {}

    def path(self, name: str) -> Path:
        return self.tmp_path / name / "clawlane.json"

    def write(self, name: str, timeout_s: int | None, *, age_s: float = 0.0) -> None:
        """Node `name`'s config file (with `agents.defaults.timeoutSeconds`), modified
        `age_s` ago."""
        raw = config_to_builtins(node_config(self.pg, self.prefix, f"node-{name}"))
        if timeout_s is not None:
            raw["agents"]["defaults"]["timeoutSeconds"] = timeout_s
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_config_text(path, json.dumps(raw, indent=2))
        at = time.time() - age_s
        os.utime(path, (at, at))

    async def start(self, name: str, *, seed: bool = False) -> Gateway:
        stop, stopped = trio.Event(), trio.Event()
        path = self.path(name)

        async def serve(*, task_status: Any) -> None:
            try:
                async with running_gateway(
                    path.parent, load_config(path), config_path=path, seed_config=seed
                ) as gw:
                    task_status.started(gw)
                    await stop.wait()
            finally:
                stopped.set()

        gw: Gateway = await self.nursery.start(serve)
        self.nodes[name] = (gw, stop, stopped)
        return gw

    async def stop(self, name: str) -> None:
        _, stop, stopped = self.nodes.pop(name)
        stop.set()
        await stopped.wait()


@asynccontextmanager
async def cluster(tmp_path: Path, pg: str) -> AsyncIterator[Cluster]:
    await require_redis()
    try:
        async with trio.open_nursery() as nursery:
            nodes = Cluster(tmp_path, pg, nursery)
            try:
                yield nodes
            finally:
                for name in list(nodes.nodes):
                    await nodes.stop(name)
    finally:
        await drop_prefix(nodes.prefix)


def timeout_of(gw: Gateway) -> float | None:
    return gw.supervisor.generation.config.agents.defaults.timeoutSeconds


async def request(gw: Gateway, method: str, params: dict[str, Any]) -> Any:
    async with open_client(gw, scopes=ADMIN) as client:
        return await client.request(method, params)


async def patch(gw: Gateway, base_hash: str, timeout_s: int) -> dict[str, Any]:
    raw = json.dumps({"agents": {"defaults": {"timeoutSeconds": timeout_s}}})
    result: dict[str, Any] = await request(gw, "config.patch", {"raw": raw, "baseHash": base_hash})
    return result


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll `check` every 50 ms for at most `WITHIN_S` (what it reads changes in the other
    node's tasks, in Redis and in PostgreSQL, which no trio event announces)."""
    deadline = trio.current_time() + WITHIN_S
    while not await check():
        assert trio.current_time() < deadline, f"not within {WITHIN_S} s: {what}"
        await trio.sleep(0.05)


async def same_generation_everywhere(*gateways: Gateway) -> str:
    """Wait until `status` on every node lists every node with one inputs hash (each node's
    own and the node records'); that hash."""
    hashes: set[str] = set()

    async def check() -> bool:
        hashes.clear()
        for gw in gateways:
            view = (await request(gw, "status", {}))["clawlane"]["cluster"]
            hashes.add(view["generation"]["inputsHash"])
            records = view["nodes"] or []
            if len(records) != len(gateways):
                return False
            for record in records:
                generation = record["generation"]
                if generation is None or generation["failed"] is not None:
                    return False
                hashes.add(generation["inputsHash"])
        return len(hashes) == 1

    await eventually(check, "one generation on every node")
    (found,) = hashes
    return found


async def test_config_get_and_writes_through_either_node_are_the_clusters(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(TIMEOUT):
        async with cluster(tmp_path, pg_url) as nodes:
            nodes.write("a", None)
            nodes.write("b", None)
            a, b = await nodes.start("a"), await nodes.start("b")
            first = await request(b, "config.get", {})
            assert first["hash"] == (await request(a, "config.get", {}))["hash"]
            patched = await patch(a, first["hash"], 777)
            assert timeout_of(a) == 777
            # config.get on B answers what A wrote, with its hash, and B runs it
            got = await request(b, "config.get", {})
            assert got["hash"] == patched["hash"] != first["hash"]
            assert got["config"]["agents"]["defaults"]["timeoutSeconds"] == 777
            assert SECRET not in json.dumps(got)  # redacted as ever
            await eventually(lambda: _is(timeout_of(b) == 777), "node b runs 777")
            hash_777 = await same_generation_everywhere(a, b)
            # through B on A's new hash: it goes through; on the old one: refused
            again = await patch(b, patched["hash"], 778)
            with pytest.raises(GatewayRequestError, match="config changed since last load") as info:
                await patch(b, patched["hash"], 5)
            assert info.value.code == "INVALID_REQUEST"
            with pytest.raises(GatewayRequestError, match="config changed since last load"):
                await patch(a, patched["hash"], 5)
            await eventually(lambda: _is(timeout_of(a) == timeout_of(b) == 778), "778 on both")
            assert (await request(a, "config.get", {}))["hash"] == again["hash"]
            assert await same_generation_everywhere(a, b) != hash_777
            # the files were not written: the cluster's config is in PostgreSQL
            for name in ("a", "b"):
                assert "timeoutSeconds" not in nodes.path(name).read_text()


async def _is(value: bool) -> bool:
    await trio.lowlevel.checkpoint()
    return value


async def test_a_restarted_node_adopts_the_clusters_config_unless_told_to_seed_it(
    tmp_path: Path, pg_url: str
) -> None:
    with trio.fail_after(TIMEOUT):
        async with cluster(tmp_path, pg_url) as nodes:
            nodes.write("a", 100)
            nodes.write("b", 100)
            a, b = await nodes.start("a"), await nodes.start("b")
            base = (await request(a, "config.get", {}))["hash"]
            patched = await patch(a, base, 777)
            await eventually(lambda: _is(timeout_of(b) == 777), "node b runs 777")
            # B restarts (a deploy, a crash) from its file, older than the cluster's config
            await nodes.stop("b")
            nodes.write("b", 100, age_s=3600)
            b = await nodes.start("b")
            assert timeout_of(b) == 777
            assert (await request(b, "config.get", {}))["hash"] == patched["hash"]
            hashed = await same_generation_everywhere(a, b)
            assert hashed == a.supervisor.generation.inputs_hash
            # told to seed: B's file becomes the cluster's config, and A runs it
            await nodes.stop("b")
            nodes.write("b", 200)
            b = await nodes.start("b", seed=True)
            assert timeout_of(b) == 200
            await eventually(lambda: _is(timeout_of(a) == 200), "node a runs the seeded config")
            got = await request(a, "config.get", {})
            assert got["hash"] == (await request(b, "config.get", {}))["hash"]
            assert got["config"]["agents"]["defaults"]["timeoutSeconds"] == 200
            await same_generation_everywhere(a, b)
            status = await request(b, "status", {})
            document = status["clawlane"]["cluster"]["generation"]["document"]
            assert document["seed"] is True and document["error"] is None


async def test_the_file_watch_publishes_a_changed_file_and_refuses_an_older_one(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """And a node that cannot build the cluster's config says so in `status`."""
    with trio.fail_after(TIMEOUT):
        async with cluster(tmp_path, pg_url) as nodes:
            nodes.write("a", 100)
            nodes.write("b", 100)
            gateways = {"a": await nodes.start("a"), "b": await nodes.start("b")}

            def watcher() -> str | None:
                for name, gw in gateways.items():
                    if gw.node is not None and "config-watch" in gw.node.jobs:
                        return name
                return None

            await eventually(lambda: _is(watcher() is not None), "a node watches the file")
            name = watcher()
            assert name is not None
            watching = gateways[name]
            other = gateways["b" if name == "a" else "a"]
            # a changed file: published to the cluster, run by both
            nodes.write(name, 300)
            await eventually(lambda: _is(timeout_of(other) == 300), "the other node runs 300")
            assert timeout_of(watching) == 300
            await same_generation_everywhere(watching, other)
            # a file older than the cluster's config: refused, and said so
            nodes.write(name, 400, age_s=3600)
            assert watching.publisher is not None

            def refused() -> bool:
                error = watching.publisher.last_error if watching.publisher else None
                return error is not None and error.reason == "file"

            await eventually(lambda: _is(refused()), "the older file refused")
            got = await request(watching, "config.get", {})
            assert got["config"]["agents"]["defaults"]["timeoutSeconds"] == 300
            assert "older than the cluster's config" in got["lastError"]["message"]
            assert timeout_of(watching) == timeout_of(other) == 300
            # a node that cannot build the cluster's config keeps its generation, says so
            assert other.publisher is not None
            serving = other.supervisor.generation.number

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise GenerationError("no provider for this test")

            monkeypatch.setattr(other.publisher.builder, "build", fail)
            await patch(watching, got["hash"], 500)
            other_id = other.node.node_id if other.node is not None else ""

            async def says_so() -> bool:
                view = (await request(watching, "status", {}))["clawlane"]["cluster"]
                records = {r["nodeId"]: r for r in view["nodes"] or []}
                failed = records.get(other_id, {}).get("generation", {}).get("failed")
                return failed is not None and "no provider for this test" in failed

            await eventually(says_so, "the failure in status on the other node")
            assert other.supervisor.generation.number == serving and timeout_of(other) == 300
            own = (await request(other, "status", {}))["clawlane"]["cluster"]["generation"]
            assert "no provider for this test" in own["document"]["error"]
            # once it builds again, a write through it clears what status said
            monkeypatch.undo()
            latest = (await request(other, "config.get", {}))["hash"]
            await patch(other, latest, 600)
            assert timeout_of(other) == 600
            await eventually(lambda: _is(timeout_of(watching) == 600), "600 on both")
            await same_generation_everywhere(watching, other)  # no node says it failed
            own = (await request(other, "status", {}))["clawlane"]["cluster"]["generation"]
            assert own["document"]["error"] is None
