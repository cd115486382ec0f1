"""The gateway as a node of a cluster (issue 16): with `cluster.redis.url` set, `open_node`
opens the cluster (`actors.open_cluster`; a Redis that cannot be reached fails the start
with one line naming it), and the node keeps a heartbeat record in Redis (its id, when it
started, its load, the single-owner jobs it holds) renewed every third of `cluster.leaseTtlMs`
and expiring after it, so `status` and `health` list the live nodes. `single_owner` runs a
job (cron, the config file watch) on one node at a time (`actors.run_single_owner`).
Without `cluster.redis.url` there is no node: `open_node` yields None and nothing changes.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sized
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import attrs
import trio

from actors import Cluster, ClusterError, Publisher, RunRegistry, open_cluster, run_single_owner
from runtime.model import Config

__all__ = ["ClusterNode", "node_id_for", "open_node", "start_node"]

log = logging.getLogger("clawlane.cluster")

VIEW_TIMEOUT_S: Final = 2.0
"""`status` / `health` wait at most this long for the node records."""


class _Loaded(Protocol):
    cron: Any

    @property
    def registry(self) -> RunRegistry: ...
    @property
    def connections(self) -> Mapping[str, Any]: ...


def node_id_for(config: Config) -> str:
    """`cluster.nodeId`, else `<hostname>-<pid>-<random>`."""
    if config.cluster.nodeId:
        return config.cluster.nodeId
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


@attrs.define(eq=False)
class ClusterNode:
    """This node: its id, its cluster handle, the single-owner jobs it holds now."""

    cluster: Cluster
    ttl_s: float
    started_ms: int = attrs.field(factory=lambda: int(time.time() * 1000))
    jobs: set[str] = attrs.field(factory=set)
    beats: int = 0
    last_beat_error: str | None = None

    @property
    def node_id(self) -> str:
        return self.cluster.node_id

    def record(self, load: dict[str, Any]) -> bytes:
        return json.dumps(
            {
                "nodeId": self.node_id,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "startedAtMs": self.started_ms,
                "beatAtMs": int(time.time() * 1000),
                "load": load,
                "jobs": sorted(self.jobs),
            },
            separators=(",", ":"),
        ).encode()

    async def beat(self, load: dict[str, Any]) -> None:
        """Store the record now (`ClusterError` when Redis cannot take it)."""
        await self.cluster.nodes.beat(self.record(load), ttl_s=self.ttl_s)
        self.beats += 1
        self.last_beat_error = None

    async def run_heartbeat(self, load: Callable[[], dict[str, Any]]) -> None:
        """Renew the record every third of the TTL until cancelled; a failed renewal is
        logged and retried at the next beat."""
        while True:
            try:
                await self.beat(load())
            except ClusterError as exc:
                if self.last_beat_error is None:
                    log.warning("node %s: heartbeat not stored: %s", self.node_id, exc)
                self.last_beat_error = str(exc)
            await trio.sleep(self.ttl_s / 3)

    async def single_owner(self, name: str, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` while this node holds the lease `job:<name>` (until cancelled)."""

        async def owned() -> None:
            self.jobs.add(name)
            log.info("node %s: runs %s", self.node_id, name)
            try:
                await job()
            finally:
                self.jobs.discard(name)
                log.info("node %s: no longer runs %s", self.node_id, name)

        await run_single_owner(self.cluster.leases, name, owned)

    async def view(self) -> dict[str, Any]:
        """The `cluster` block of `status` and `health`: this node and every live node's
        record (or why they could not be read). A checkpoint."""
        view: dict[str, Any] = {
            "backend": self.cluster.backend,
            "nodeId": self.node_id,
            "leaseTtlMs": int(self.ttl_s * 1000),
            "jobs": sorted(self.jobs),
            "heartbeatError": self.last_beat_error,
        }
        records: dict[str, bytes] | None = None
        with trio.move_on_after(VIEW_TIMEOUT_S):
            try:
                records = await self.cluster.nodes.all()
            except ClusterError as exc:
                view["error"] = str(exc)
        if records is None:
            view.setdefault("error", "the node records could not be read in time")
            view["nodes"] = None
            return view
        nodes = []
        for node_id, raw in sorted(records.items()):
            try:
                nodes.append(json.loads(raw))
            except ValueError:
                nodes.append({"nodeId": node_id, "error": "unreadable record"})
        view["nodes"] = nodes
        return view


@asynccontextmanager
async def open_node(config: Config) -> AsyncIterator[ClusterNode | None]:
    """This process's node (None without `cluster.redis.url`). Raises `ClusterUnavailable`
    (one line naming the URL) when Redis cannot be reached. Its record is removed on exit."""
    if config.cluster.redis.url is None:
        yield None
        return
    async with open_cluster(config, node_id=node_id_for(config)) as cluster:
        node = ClusterNode(cluster, ttl_s=config.cluster.leaseTtlMs / 1000)
        try:
            yield node
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(VIEW_TIMEOUT_S):
                try:
                    await cluster.nodes.forget()
                except ClusterError as exc:
                    log.warning("node %s: record not removed (it expires): %s", node.node_id, exc)


def _load(gateway: _Loaded) -> dict[str, Any]:
    connections: Sized = gateway.connections
    return {
        "activeRuns": gateway.registry.statistics().active_runs,
        "connections": len(connections),
    }


async def start_node(
    node: ClusterNode,
    nursery: trio.Nursery,
    gateway: _Loaded,
    *,
    publisher: Publisher,
    cron: Callable[[], Awaitable[None]],
) -> None:
    """The node's first heartbeat (`ClusterError` if Redis refuses it), then as tasks of
    `nursery`: the heartbeat, and the config file watch and `cron` on one node at a time.
    Before the publisher runs (its files are watched only while the lease is held)."""
    await node.beat(_load(gateway))
    nursery.start_soon(node.run_heartbeat, lambda: _load(gateway))
    publisher.watch_files = False
    nursery.start_soon(node.single_owner, "config-watch", publisher.own_file_watch)

    async def cron_here() -> None:
        try:
            await cron()
        finally:
            gateway.cron = None  # cron.* answers UNAVAILABLE on the nodes not running it

    nursery.start_soon(node.single_owner, "cron", cron_here)
