"""The cluster a fault scenario breaks: gateway processes (`clawlane gateway`, as an
operator runs them) on loopback ports, each with a state dir of its own, on one PostgreSQL
schema (the `pg_url` fixture's) and one redis-server of the scenario's own (no persistence:
a restart brings it back empty), under one key prefix. Each node reaches Redis and
PostgreSQL through TCP proxies the scenario owns (`tests._tcp_proxy`), so that one node's
links can be cut or partitioned while the other's stay up.

Every process is started in a process group of its own and killed (SIGCONT first, for a
frozen one) when the cluster closes, whatever the scenario's checks did."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from tests._tcp_proxy import TcpProxy, open_tcp_proxy
from tests.actors._cluster_nodes import OwnRedis
from tests.e2e.test_workers import CLI
from transports.client._client import GatewayClient, open_gateway_client
from transports.loadtest._gateway import _read_listening_url

FULL = os.environ.get("CLAWLANE_CHAOS", "").strip().lower() == "full"
"""`scripts/chaos` (without `--quick`) sets `CLAWLANE_CHAOS=full`: more load, longer faults.
Otherwise each scenario runs its quick version (what `scripts/test` runs)."""

TTL_MS = 1_000
"""The sessions' lease TTL (`cluster.leaseTtlMs`) of every scenario."""


def through(url: str, port: int) -> str:
    """`url` with its host and port replaced by a proxy's on loopback `port`."""
    parts = urllib.parse.urlsplit(url)
    userinfo = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{port}"
    netloc = f"{userinfo[0]}@{host}" if len(userinfo) == 2 else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class Node:
    """One gateway process: `start()` (again after `kill()`), `freeze()`/`thaw()`
    (SIGSTOP/SIGCONT), `client()`; `redis` and `pg` are its links."""

    def __init__(self, name: str, tmp: Path, redis: TcpProxy, pg: TcpProxy) -> None:
        self.name = name
        self.state = tmp / name
        self.config_path = self.state / "clawlane.json"
        self.log_path = tmp / f"{name}.log"
        self.redis = redis
        self.pg = pg
        self.proc: trio.Process | None = None
        self.url = ""
        self.frozen = False

    def write_config(self, config: dict[str, Any]) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(config, indent=2))

    def read_config(self) -> dict[str, Any]:
        config: dict[str, Any] = json.loads(self.config_path.read_text())
        return config

    async def start(self) -> None:
        """Start the process on its config file and wait for it to listen (30 s)."""
        assert self.proc is None, f"{self.name} is running"
        argv = [*CLI, "gateway", "--port", "0", "--state-dir", str(self.state)]
        argv += ["--config", str(self.config_path)]
        with self.log_path.open("ab") as log:
            offset = log.tell()
            self.proc = await trio.lowlevel.open_process(
                argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )
        try:
            self.url = await _read_listening_url(self.proc, self.log_path, offset=offset)
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.kill()
            raise

    async def kill(self) -> None:
        """SIGKILL its process group (thawed first) and reap it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.returncode is None:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
        self.frozen = False
        with trio.CancelScope(shield=True):
            await proc.wait()

    def freeze(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGCONT)
        self.frozen = False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @asynccontextmanager
    async def client(self, *, events: bool = False) -> AsyncIterator[GatewayClient]:
        """A connection to the node; its events are dropped as they come unless `events`
        (then the caller reads `client.events`, or the connection stalls once 1,024 wait:
        the client stops reading the socket, and with it the answers to its requests)."""
        on_event = None if events else _drop_event
        async with open_gateway_client(self.url, on_event=on_event) as client:
            yield client

    async def request(self, method: str, params: Any = None, *, timeout: float = 10) -> Any:  # noqa: ASYNC109
        """One request on a connection of its own."""
        async with self.client() as client:
            return await client.request(method, params, timeout=timeout)


def _drop_event(_event: str, _payload: Any, _seq: int | None) -> None:
    pass


class Cluster:
    """The nodes (`nodes[0]` is node-a), the redis-server, and the schema's URL (without
    proxies: for the checks' own reads)."""

    def __init__(self, redis: OwnRedis, nodes: list[Node], pg_url: str, prefix: str) -> None:
        self.redis = redis
        self.nodes = nodes
        self.pg_url = pg_url
        self.prefix = prefix

    def assert_running(self) -> None:
        """Every node's process is still running (else: which exited, its log's last line)."""
        gone = []
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is not None:
                lines = node.log().strip().splitlines() or [""]
                last = [line for line in lines if line.startswith("clawlane:")] or lines
                gone.append(f"{node.name} exited {node.proc.returncode}: {last[-1][:300]}")
        assert not gone, "; ".join(gone)

    def log_notes(self, lines: int = 20) -> str:
        """The last warnings and errors each node logged (for a failed scenario's report)."""
        out = []
        for node in self.nodes:
            found = [
                line[:300]
                for line in node.log().splitlines()
                if " WARNING " in line or " ERROR " in line or line.startswith("clawlane:")
            ]
            out.append(f"{node.name} ({node.log_path}), last warnings and errors:")
            out.extend(f"  {line}" for line in found[-lines:])
        return "\n".join(out)

    def node_config(self, node: Node) -> dict[str, Any]:
        """What each node's file says at first: the same but for its id and its links."""
        return {
            "agents": {"defaults": {"maxConcurrent": 8}},
            "gateway": {"auth": {"mode": "none"}},
            "storage": {
                "backend": "postgres",
                "postgres": {"url": through(self.pg_url, node.pg.port)},
            },
            "cluster": {
                "redis": {
                    "url": f"redis://127.0.0.1:{node.redis.port}/0",
                    "keyPrefix": self.prefix,
                },
                "leaseTtlMs": TTL_MS,
                "nodeId": node.name,
            },
        }


@asynccontextmanager
async def open_cluster(
    tmp_path: Path, pg_url: str, names: tuple[str, ...] = ("node-a", "node-b")
) -> AsyncIterator[Cluster]:
    """A redis-server, two proxies per node, and the nodes started one after the other
    (the first migrates the schema). Everything is stopped on the way out."""
    async with trio.open_nursery() as services:
        redis = OwnRedis(services)
        await redis.start()
        try:
            async with AsyncExitStack() as stack:
                nodes = []
                for name in names:
                    to_redis = await stack.enter_async_context(
                        open_tcp_proxy("127.0.0.1", redis.port)
                    )
                    to_pg = await stack.enter_async_context(
                        open_tcp_proxy("127.0.0.1", urllib.parse.urlsplit(pg_url).port or 5432)
                    )
                    nodes.append(Node(name, tmp_path, to_redis, to_pg))
                prefix = f"clawlane-chaos:{secrets.token_hex(4)}:"
                cluster = Cluster(redis, nodes, pg_url, prefix)
                try:
                    for node in nodes:
                        node.write_config(cluster.node_config(node))
                        await node.start()
                    yield cluster
                except BaseException as exc:
                    exc.add_note(cluster.log_notes())
                    raise
                finally:
                    with trio.CancelScope(shield=True):
                        for node in nodes:
                            await node.kill()
        finally:
            services.cancel_scope.cancel()
