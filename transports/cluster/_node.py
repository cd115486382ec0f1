"""The gateway as a node of a cluster: with `cluster.redis.url` set, `open_node`
opens the cluster (`actors.open_cluster`; a Redis that cannot be reached fails the start
with one line naming it), and the node keeps a heartbeat record in Redis (its id, when it
started, its load, the single-owner jobs it holds, the generation it serves: its number,
inputs hash, the cluster config version and why one did not build) renewed every third of
`cluster.leaseTtlMs` (and at once when its generation changes) and expiring after it, so
`status` and `health` list the live nodes and what each runs. `single_owner` runs a
job (cron, the config file watch) on one node at a time (`actors.run_single_owner`).
`GenerationSync`: a config this node publishes is announced through `Generations`
(the effective config as JSON: it holds what `${VAR}` expanded to); the other nodes build
it and swap, and one whose build fails keeps serving its generation and says so in its
`cluster.generation` block. On PostgreSQL the config is the cluster's document
(`actors.ConfigDocument`, `Publisher.use_document`): a write of it is announced as its
version only, and the other nodes read the document and build it.
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
import psutil
import trio

from actors import (
    DOCUMENT_REASONS,
    Cluster,
    ClusterError,
    NodeIdInUse,
    Publisher,
    StoreError,
    Version,
    open_cluster,
    run_single_owner,
)
from runtime.model import (
    Config,
    ConfigError,
    GenerationError,
    ModelRuntimeGeneration,
    config_to_builtins,
    parse_config,
    redact_config,
    restore_redacted,
)

from .._errors import GatewayConfigError
from ._approvals import ClusterApprovals
from ._heartbeats import ClusterHeartbeats
from ._presence import Presence
from ._processes import ClusterProcesses
from ._route import Router, RouterHost

__all__ = [
    "ClusterNode",
    "GenerationSync",
    "claim_node_id",
    "node_id_for",
    "open_node",
    "start_node",
]

log = logging.getLogger("clawlane.cluster")

RETRY_S: Final = 1.0
"""A failed announcement or a lost subscription is tried again after this long."""
LOCAL_REASONS: Final = frozenset({"startup", "cluster"})
"""Publishes not announced: each node's own start, and what came from another node."""
VIEW_TIMEOUT_S: Final = 2.0
"""`status` / `health` wait at most this long for the node records."""


class _Loaded(RouterHost, Protocol):
    cron: Any
    router: Router | None
    presence_list: Presence

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
    sync: GenerationSync | None = None
    router: Router | None = None
    beats: int = 0
    last_beat_error: str | None = None
    _beat_now: trio.Event = attrs.field(factory=trio.Event)

    def beat_soon(self) -> None:
        """Renew the record now rather than at the next beat (what it says changed: a
        generation published or not built). Not a checkpoint."""
        self._beat_now.set()

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
                "generation": self.sync.record() if self.sync is not None else None,
            },
            separators=(",", ":"),
        ).encode()

    async def beat(self, load: dict[str, Any], *, over: str | None = None) -> None:
        """Store the record now (`ClusterError` when Redis cannot take it; `NodeIdInUse`
        when another process's record holds this id)."""
        await self.cluster.nodes.beat(self.record(load), ttl_s=self.ttl_s, over=over)
        self.beats += 1
        self.last_beat_error = None

    async def run_heartbeat(self, load: Callable[[], dict[str, Any]]) -> None:
        """Renew the record every third of the TTL (and at `beat_soon`) until cancelled; a
        failed renewal (or one Redis has not answered within the TTL) is logged and retried
        at the next beat. Raises `GatewayConfigError` (the gateway
        stops) when another process has taken this node id meanwhile: it started while
        this node's record had expired (Redis away or this process stalled past the TTL),
        and the two would renew each other's leases and read each other's inbox."""
        failing = False
        while True:
            error: str | None = None
            with trio.move_on_after(self.ttl_s) as cut:  # Redis cut off: it would wait on
                try:
                    await self.beat(load())
                except NodeIdInUse as exc:
                    raise GatewayConfigError(_in_use(self, _record_of(exc.record) or {})) from exc
                except ClusterError as exc:
                    error = str(exc)
            if cut.cancelled_caught:
                error = "Redis did not answer within the lease TTL"
            if error is not None:
                if self.last_beat_error is None:
                    log.warning("node %s: heartbeat not stored: %s", self.node_id, error)
                self.last_beat_error = error
            elif failing:
                log.info("node %s: heartbeat stored again", self.node_id)
            failing = error is not None
            with trio.move_on_after(self.ttl_s / 3):
                await self._beat_now.wait()
            self._beat_now = trio.Event()

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
            "generation": self.sync.view() if self.sync is not None else None,
            "sessions": self.router.view() if self.router is not None else None,
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


@attrs.define(eq=False)
class GenerationSync:
    """Announces this node's publishes and applies the other nodes'."""

    node: ClusterNode
    publisher: Publisher
    version: int | None = None
    """The cluster version this node serves (announced or applied), None before any."""
    failed: dict[str, Any] | None = None
    """The last version this node could not build: {version, origin, error, atMs}."""
    _pending: bytes | None = None
    _wake: trio.Event = attrs.field(factory=trio.Event)

    def on_publish(self, generation: ModelRuntimeGeneration) -> None:
        """`Publisher.on_publish`: queue an announcement (not for starts and applied ones,
        nor for writes of the cluster's config document: `on_document` announces them)."""
        reason = self.publisher.statistics().last_reason
        if reason in LOCAL_REASONS:
            return
        if self.publisher.document is not None and reason in DOCUMENT_REASONS:
            return
        # Secrets never go to Redis: each node puts back its own (as `config.apply` does).
        config = redact_config(config_to_builtins(generation.config))
        payload = {"origin": self.node.node_id, "config": config}
        self._pending = json.dumps(payload, separators=(",", ":")).encode()
        self._wake.set()

    def on_document(self, version: int) -> None:
        """`Publisher.on_document`: announce a write of the cluster's config document (its
        version: every node reads the document itself)."""
        payload = {"origin": self.node.node_id, "document": version}
        self._pending = json.dumps(payload, separators=(",", ":")).encode()
        self._wake.set()

    async def run_announcer(self) -> None:
        """Announce the latest queued publish (retried while Redis is away) until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            data = self._pending
            if data is None:
                continue
            try:
                version = await self.node.cluster.generations.publish(data)
            except ClusterError as exc:
                log.warning(
                    "node %s: generation not announced, retrying: %s", self.node.node_id, exc
                )
                await trio.sleep(RETRY_S)
                self._wake.set()
                continue
            if self._pending is data:
                self._pending = None
            if version is not None:
                self.version = version.number

    async def run_follower(self) -> None:
        """Apply every version another node announces, until cancelled."""
        while True:
            try:
                async with self.node.cluster.generations.subscribe() as versions:
                    async for version in versions:
                        await self.apply(version)
            except ClusterError as exc:
                log.warning(
                    "node %s: generations not followed, retrying: %s", self.node.node_id, exc
                )
            await trio.sleep(RETRY_S)

    async def apply(self, version: Version) -> None:
        """Build the announced config and swap to it; a failure keeps the serving one."""
        if self.version is not None and version.number <= self.version:
            return
        try:
            payload = json.loads(version.data)
            origin = str(payload["origin"])
            if origin == self.node.node_id:  # this node's own publish: it serves it
                self.version, self.failed = version.number, None
                return
            if "document" in payload and self.publisher.document is not None:
                await self.publisher.adopt_document(reason="cluster")
            else:
                own = config_to_builtins(self.publisher.supervisor.generation.config)
                config = parse_config(restore_redacted(payload["config"], own))
                await self.publisher.publish_config(config, reason="cluster")
        except (
            ValueError,
            KeyError,
            TypeError,
            ConfigError,
            GenerationError,
            StoreError,
        ) as exc:
            log.error(
                "node %s: cluster generation %d not applied: %s",
                self.node.node_id,
                version.number,
                exc,
            )
            self.failed = {
                "version": version.number,
                "error": str(exc),
                "atMs": int(time.time() * 1000),
            }
            self.node.beat_soon()  # `status` on every node says so
            return
        self.version = version.number
        self.failed = None

    def view(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "serving": self.publisher.supervisor.generation.number,
            "inputsHash": self.publisher.supervisor.generation.inputs_hash,
            "failed": self.failed,
            "document": self.publisher.document_view(),
        }

    def record(self) -> dict[str, Any]:
        """This node's generation in its node record (so `status` on any node lists every
        node's): its number and inputs hash, the cluster config version it serves, and
        why the last one it was given did not build (None: it serves it)."""
        generation = self.publisher.supervisor.generation
        failed = self.publisher.document_error  # on PostgreSQL: the document is the config
        if self.publisher.document is None and self.failed is not None:
            failed = str(self.failed["error"])
        return {
            "number": generation.number,
            "inputsHash": generation.inputs_hash,
            "configVersion": self.publisher.document_version,
            "failed": failed,
        }


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


async def claim_node_id(node: ClusterNode, load: dict[str, Any]) -> None:
    """Store the node's first record, refusing to start under the id of a node that
    lives: `cluster.nodeId` copied with the config to a second machine, or a second gateway
    started with it here. Two processes under one id would renew each other's leases and
    read each other's inbox. A record of this id from a process that is gone (a worker or
    a node started again after a crash, on this machine) is taken over. The claim is one
    compare-and-set in Redis, so of two processes starting at once one wins.
    Raises `GatewayConfigError`, `ClusterError`."""
    held = await node.cluster.nodes.holder()
    over: str | None = None
    if held is not None:
        other = _record_of(held[1])
        if other is not None and _lives(other, node.started_ms):
            raise GatewayConfigError(_in_use(node, other))
        over = held[0]
    try:
        await node.beat(load, over=over)
    except NodeIdInUse as exc:
        raise GatewayConfigError(_in_use(node, _record_of(exc.record) or {})) from exc


def _in_use(node: ClusterNode, other: dict[str, Any]) -> str:
    age_ms = max(0, int(time.time() * 1000) - int(other.get("beatAtMs") or 0))
    return (
        f"cluster.nodeId {node.node_id!r} is in use by host {other.get('host')} pid "
        f"{other.get('pid')} (its heartbeat is {age_ms} ms old): give each node its own "
        f"cluster.nodeId, or leave it unset (a unique id is made), or wait "
        f"{int(node.ttl_s * 1000)} ms (cluster.leaseTtlMs) if that node is gone"
    )


def _record_of(raw: bytes | None) -> dict[str, Any] | None:
    try:
        record = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _lives(record: dict[str, Any], started_ms: int) -> bool:
    """Whether the process of a node record other than this one's may still run: on
    another machine (its record has not expired), or here a process by its pid that was
    started before the record was (not the pid reused)."""
    pid, since = record.get("pid"), record.get("startedAtMs")
    if record.get("host") != socket.gethostname():
        return True
    if pid == os.getpid():
        return since != started_ms  # another node of this process (tests run several)
    if not isinstance(pid, int) or not isinstance(since, int):
        return False
    try:
        created: float = psutil.Process(pid).create_time()
    except psutil.Error:
        return False
    return created * 1000 <= since + 1_000


def _load(gateway: _Loaded) -> dict[str, Any]:
    connections: Sized = gateway.connections
    router = gateway.router
    return {
        "activeRuns": gateway.actors.registry.statistics().active_runs,
        "connections": len(connections),
        "sessionsOwned": len(router.leases.held) if router is not None else 0,  # their leases
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
    Before the publisher runs (its files are watched only while the lease is held).
    Raises `GatewayConfigError` when another live process has this node's id."""
    await claim_node_id(node, _load(gateway))
    nursery.start_soon(node.run_heartbeat, lambda: _load(gateway))
    publisher.watch_files = False
    nursery.start_soon(node.single_owner, "config-watch", publisher.own_file_watch)
    node.sync = sync = GenerationSync(node, publisher)
    publisher.on_publish.append(sync.on_publish)
    publisher.on_document.append(sync.on_document)
    publisher.on_publish.append(lambda _: node.beat_soon())  # its record names the generation
    nursery.start_soon(sync.run_announcer)
    nursery.start_soon(sync.run_follower)

    async def cron_here() -> None:
        try:
            while True:
                failed: BaseException | None = None
                try:
                    await cron()
                except* StoreError as group:  # the database is away: cron starts once it is back
                    failed = group.exceptions[0]
                if failed is None:
                    return
                log.warning("node %s: cron not started, retrying: %s", node.node_id, failed)
                gateway.cron = None
                await trio.sleep(RETRY_S)
        finally:
            gateway.cron = None  # cron.* answers UNAVAILABLE on the nodes not running it

    nursery.start_soon(node.single_owner, "cron", cron_here)
    router = gateway.router = Router(
        gateway, node.cluster, ttl_s=node.ttl_s, started_ms=node.started_ms
    )
    node.router = router
    gateway.methods.router = router  # requests reach it through the method table
    router.approvals = ClusterApprovals.attach(gateway, router)
    router.beats = ClusterHeartbeats.attach(gateway, router)  # heartbeats run where sessions are
    if router.beats is not None:
        await router.beats.start(nursery)  # the cluster's set-heartbeats, before serving
    nursery.start_soon(router.approvals.run)
    router.processes = ClusterProcesses.attach(gateway, router)  # `process` reaches every node
    if router.processes is not None:
        await nursery.start(router.processes.run)
    gateway.presence_list.node_id = node.node_id
    await router.start(nursery)
    nursery.start_soon(gateway.presence_list.run_telling, router.tell_all)
    nursery.start_soon(node.single_owner, "reaper", router.reaper.run)
