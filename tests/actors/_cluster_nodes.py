"""Cluster nodes for the contract tests: two or more nodes on one backend (`local`: shared
in-process tables; `redis`: one client each on the real Redis at `REDIS_URL`, under a
random key prefix removed afterwards), and a Redis server of a test's own for the tests
that stop and restart it."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import coredis
import trio

from actors.cluster._local import Cluster, LocalLeases, LocalNodeRecords, open_local_cluster
from actors.cluster._primitives import ClusterUnavailable, Lease
from actors.cluster._redis import open_redis_cluster
from tests._needs import missing

REDIS_URL = os.environ.get("CLAWLANE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


async def require_redis(url: str = REDIS_URL) -> None:
    """When Redis cannot be reached: skip the test saying why, or fail it under CI."""
    try:
        async with open_redis_cluster(url, node_id="probe", connect_timeout_s=1.0):
            pass
    except ClusterUnavailable as exc:
        missing("Redis", f"not reachable: {exc}")


class Nodes:
    """Nodes on one backend: `open_nodes` opens them (in the task that will close them:
    coredis's client keeps a task group); tests take them from `all`."""

    def __init__(self, backend: str, stack: AsyncExitStack, lease_ttl_s: float) -> None:
        self.backend = backend
        self.prefix = f"clawlane-test:{secrets.token_hex(6)}:"
        self.lease_ttl_s = lease_ttl_s
        self._stack = stack
        self._nodes: list[Cluster] = []

    @property
    def all(self) -> list[Cluster]:
        return list(self._nodes)

    async def add(self, node_id: str | None = None) -> Cluster:
        """A new node: by default under an id of its own; `node_id` gives it another's (a
        second process started under that id)."""
        node_id = node_id or f"{self.prefix}node{len(self._nodes)}"
        if self.backend == "redis":
            opened = open_redis_cluster(
                REDIS_URL, node_id=node_id, prefix=self.prefix, lease_ttl_s=self.lease_ttl_s
            )
            node = await self._stack.enter_async_context(opened)
        elif not self._nodes:
            opened_local = open_local_cluster(node_id=node_id, lease_ttl_s=self.lease_ttl_s)
            node = await self._stack.enter_async_context(opened_local)
        else:
            first = self._nodes[0]
            assert isinstance(first.leases, LocalLeases)
            assert isinstance(first.nodes, LocalNodeRecords)
            node = Cluster(
                node_id=node_id,
                leases=first.leases.view(node_id),
                claims=first.claims,
                streams=first.streams,
                generations=first.generations,
                nodes=first.nodes.view(node_id),
                channels=first.channels,
                backend="local",
            )
        self._nodes.append(node)
        return node

    async def steal(self, lease: Lease) -> None:
        """The lease's key is gone as if it expired (Redis: deleted)."""
        first = self._nodes[0]
        if isinstance(first.leases, LocalLeases):
            first.leases.expire_now(lease.key)
            return
        async with raw_client() as client:
            await client.delete([f"{self.prefix}lease:{lease.key}"])


@asynccontextmanager
async def raw_client(url: str = REDIS_URL) -> AsyncIterator[coredis.Redis[bytes]]:
    client: coredis.Redis[bytes] = coredis.Redis.from_url(url, decode_responses=False)
    async with client:
        yield client


async def drop_prefix(prefix: str) -> None:
    async with raw_client() as client:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(keys)


@asynccontextmanager
async def open_nodes(
    backend: str, *, count: int = 3, lease_ttl_s: float = 0.5, twin: bool = False
) -> AsyncIterator[Nodes]:
    """`count` nodes; with `twin` one more, last, under the first one's id (a second
    process started under that id)."""
    if backend == "redis":
        await require_redis()
    prefix = ""
    try:
        async with AsyncExitStack() as stack:
            nodes = Nodes(backend, stack, lease_ttl_s)
            prefix = nodes.prefix
            for _ in range(count):
                await nodes.add()
            if twin:
                await nodes.add(nodes.all[0].node_id)
            yield nodes
    finally:
        if backend == "redis":
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await drop_prefix(prefix)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class OwnRedis:
    """A redis-server of the test's own (no persistence), started and stopped at will."""

    def __init__(self, nursery: trio.Nursery) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            missing("redis-server", "not installed (needed to restart a Redis)")
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._nursery = nursery
        self._process: trio.Process | None = None

    async def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--save", "", "--appendonly", "no"]
        self._process = await self._nursery.start(_run_quietly, args)
        with trio.fail_after(10):
            while True:
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", self.port)
                except OSError:
                    await trio.sleep(0.02)
                    continue
                await stream.aclose()
                return

    async def stop(self) -> None:
        assert self._process is not None
        self._process.kill()
        await self._process.wait()
        self._process = None


async def _run_quietly(
    args: list[str], *, task_status: trio.TaskStatus[trio.Process] = trio.TASK_STATUS_IGNORED
) -> None:
    process = await trio.lowlevel.open_process(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    task_status.started(process)
    try:
        await process.wait()
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
