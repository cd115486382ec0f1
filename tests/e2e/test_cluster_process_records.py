"""Background jobs known to a node that joins a cluster after their node went (this process,
one PostgreSQL, one Redis): every node keeps its jobs in the cluster's job records (a
document in PostgreSQL, `transports.cluster._job_records`), so a node that never heard the
gone node's notices still lists its jobs.

- A starts a background job and closes (its job dies with it); C starts afterwards: `process
  list` through C shows the job ended `failed` (`node-lost`, its line naming A), `poll` says
  A is gone; `remove` forgets it in the records too.

The model is the `local` one, driven by `[[tool:...]]` directives; cross-node state with
`wait_for`. Skipped, saying why, when Redis or PostgreSQL cannot be reached.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from actors import PostgresDocument
from tests._procs import running, tool_directive, turn_text
from tests.actors._cluster_nodes import REDIS_URL, drop_prefix, require_redis
from tests.actors._databases import pg_url
from tests.conftest import open_client
from tests.e2e.test_cluster_nodes import ADMIN, Node, _serve, node_config, wait_for
from transports import Gateway, GatewayClient
from transports.cluster._job_records import JOBS_DOCUMENT

__all__ = ["pg_url"]  # the fixture, used by name

KEY = "agent:main:main"


class Cluster:
    """Nodes started one by one (`start(name)`), on one Redis `prefix` and one PostgreSQL."""

    def __init__(self, start: Callable[[str], Awaitable[Node]], prefix: str) -> None:
        self.start = start
        self.prefix = prefix


@asynccontextmanager
async def cluster(tmp_path: Path, pg: str) -> AsyncIterator[Cluster]:
    """A `Cluster` for the block; its nodes are closed at its end."""
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    nodes: list[Node] = []
    try:
        async with trio.open_nursery() as nursery:

            async def start(name: str) -> Node:
                stop, stopped = trio.Event(), trio.Event()
                config = node_config(pg, prefix, name, REDIS_URL)
                gw = await nursery.start(_serve, tmp_path / name, config, stop, stopped)
                nodes.append(Node(gw, stop, stopped))
                return nodes[-1]

            try:
                yield Cluster(start, prefix)
            finally:
                for node in nodes:
                    await node.close()
    finally:
        await drop_prefix(prefix)


def _session_id(text: str) -> str:
    found = re.search(r"Command still running \(session ([0-9a-z-]+), pid (\d+)\)", text)
    assert found is not None, text
    return found.group(1)


def _records(gw: Gateway) -> Any:
    router = gw.router
    assert router is not None and router.processes is not None
    return router.processes.records


async def _process(client: GatewayClient, run_id: str, **args: Any) -> str:
    return await turn_text(client, KEY, tool_directive("process", **args), run_id)


def _recorded(pg: str) -> bytes:
    document = PostgresDocument(pg, JOBS_DOCUMENT)
    try:
        body, _version = document.read()
    finally:
        document.close()
    return body or b""


async def test_a_node_joining_after_a_node_went_lists_its_jobs_lost(
    tmp_path: Path, pg_url: str
) -> None:
    """Before, C had never heard A's notices: it listed nothing."""
    with trio.fail_after(60):
        async with cluster(tmp_path, pg_url) as nodes:
            a = await nodes.start("node-a")
            async with open_client(a.gw, scopes=ADMIN) as at_a:
                exec_call = tool_directive("exec", command="sleep 300", background=True)
                sid = _session_id(await turn_text(at_a, KEY, exec_call, "a1"))
            await wait_for(
                lambda: sid.encode() in _recorded(pg_url), "A's job recorded", timeout_s=10
            )
            processes = a.gw.supervisor.processes
            assert processes is not None
            job = processes.get(KEY, sid)
            assert job is not None and job.pid is not None
            pid = job.pid
            await a.close()  # its job dies with it
            assert not running(pid)
            c = await nodes.start("node-c")
            await wait_for(lambda: _records(c.gw).reads >= 1, "C read the records", timeout_s=10)
            async with open_client(c.gw, scopes=ADMIN) as at_c:
                listed = await _process(at_c, "c1", action="list")
                assert f"{sid} failed" in listed and "[node node-a lost]" in listed, listed
                polled = await _process(at_c, "c2", action="poll", sessionId=sid)
                assert "node node-a" in polled and "gone" in polled
                removed = await _process(at_c, "c3", action="remove", sessionId=sid)
                assert f"Removed session {sid}." in removed
                assert sid not in await _process(at_c, "c4", action="list")
            await wait_for(
                lambda: sid.encode() not in _recorded(pg_url), "forgotten there", timeout_s=10
            )


async def test_a_node_started_again_lists_its_former_processs_jobs_lost(
    tmp_path: Path, pg_url: str
) -> None:
    """Before, its new process knew nothing of its former one's jobs."""
    with trio.fail_after(60):
        async with cluster(tmp_path, pg_url) as nodes:
            a = await nodes.start("node-a")
            async with open_client(a.gw, scopes=ADMIN) as at_a:
                exec_call = tool_directive("exec", command="sleep 300", background=True)
                sid = _session_id(await turn_text(at_a, KEY, exec_call, "a1"))
            await wait_for(
                lambda: sid.encode() in _recorded(pg_url), "A's job recorded", timeout_s=10
            )
            await a.close()
            again = await nodes.start("node-a")
            await wait_for(
                lambda: _records(again.gw).reads >= 1, "it read the records", timeout_s=10
            )
            async with open_client(again.gw, scopes=ADMIN) as at_again:
                listed = await _process(at_again, "a2", action="list")
                assert f"{sid} failed" in listed and "[node node-a lost]" in listed, listed
                polled = await _process(at_again, "a3", action="poll", sessionId=sid)
                assert "node node-a" in polled and "gone" in polled
