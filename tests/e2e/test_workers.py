"""`clawlane gateway --workers N`, as a user runs it: a real parent
process whose workers share one port (SO_REUSEPORT), one PostgreSQL schema and one Redis
(under a random key prefix). Both workers are nodes in `status`, connections to the one
port reach both, an agent run completes through it; a worker killed is started again, but
not more than 3 times a minute; SIGTERM to the parent stops every worker; a config that
cannot be shared, a bad `--workers` and a worker that cannot start are each one line and a
non-zero exit. Skipped, saying why,
only when Redis or PostgreSQL cannot be reached (the config checks need neither)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.actors._cluster_nodes import REDIS_URL, drop_prefix, free_port, require_redis
from tests.actors._databases import pg_url
from transports.access._auth import read_token_file, token_path
from transports.client._client import GatewayClientError, GatewayRequestError, open_gateway_client
from transports.loadtest._gateway import _read_listening_url
from transports.server._workers import MAX_RESTARTS

__all__ = ["pg_url"]  # the fixture, used by name

CLI = [sys.executable, "-c", "import sys; from transports.cli._main import main; sys.exit(main())"]
NODES = {"wk-w0", "wk-w1"}


def write_config(state: Path, **config: Any) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    path = state / "clawlane.json"
    path.write_text(json.dumps({"agents": {"defaults": {"maxConcurrent": 4}}, **config}))
    return path


def shared_config(pg: str, prefix: str, redis_url: str = REDIS_URL) -> dict[str, Any]:
    return {
        "storage": {"backend": "postgres", "postgres": {"url": pg}},
        "cluster": {
            "redis": {"url": redis_url, "keyPrefix": prefix},
            "leaseTtlMs": 1_000,
            "nodeId": "wk",
        },
    }


class Workers:
    """The parent process, its URL, and the token its first start created."""

    def __init__(self, proc: trio.Process, url: str, token: str | None) -> None:
        self.proc = proc
        self.url = url
        self.token = token

    async def status(self) -> dict[str, Any]:
        """`status` on a connection of its own (so each may reach either worker)."""
        async with open_gateway_client(self.url, token=self.token) as client:
            result: dict[str, Any] = await client.request("status", None, timeout=10)
        return result

    async def nodes(self) -> dict[str, int]:
        """The live nodes in `clawlane.cluster`: node id -> pid."""
        view = (await self.status())["clawlane"]["cluster"]
        return {n["nodeId"]: n["pid"] for n in view["nodes"]}


@asynccontextmanager
async def run_workers(tmp_path: Path, pg: str, count: int = 2) -> AsyncIterator[Workers]:
    """`clawlane gateway --workers count --port 0` on a fresh state dir; SIGKILLed (and its
    workers stopped by the closed pipe) if the test leaves it running."""
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    state = tmp_path / "state"
    config = write_config(state, **shared_config(pg, prefix))
    argv = [*CLI, "gateway", "--port", "0", "--state-dir", str(state), "--config", str(config)]
    log_path = tmp_path / "gateway.log"
    try:
        with log_path.open("ab") as log:
            proc = await trio.lowlevel.open_process(
                [*argv, "--workers", str(count)], stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
            try:
                url = await _read_listening_url(proc, log_path, offset=0)
                yield Workers(proc, url, read_token_file(token_path(state)))
            finally:
                with trio.CancelScope(shield=True):
                    if proc.returncode is None:
                        proc.kill()
                        await proc.wait()
    finally:
        await drop_prefix(prefix)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def until_nodes(workers: Workers, check: Any, *, timeout_s: float) -> dict[str, int]:
    """Poll the node records until `check(nodes)` (a worker starts in another process,
    which no event here announces). An attempt may fail or stall: a connection the kernel
    had queued for a worker as it was killed is lost (unless `net.ipv4.tcp_migrate_req`)."""
    with trio.fail_after(timeout_s):
        while True:
            with trio.move_on_after(2):
                try:
                    nodes = await workers.nodes()
                except (GatewayClientError, OSError):
                    pass
                else:
                    if check(nodes):
                        return nodes
            await trio.sleep(0.1)


async def test_two_workers_share_the_port_and_serve_a_run(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(90):
        async with run_workers(tmp_path, pg_url) as workers:
            assert workers.url.startswith("ws://127.0.0.1:")
            assert workers.token is not None  # the parent created it once, for all
            status = await workers.status()
            view = status["clawlane"]["cluster"]
            assert {n["nodeId"] for n in view["nodes"]} == NODES
            pids = {n["pid"] for n in view["nodes"]}
            assert len(pids) == 2 and workers.proc.pid not in pids
            # the kernel spreads connections to the one port over both workers
            served_by = set()
            for _ in range(40):
                served_by.add((await workers.status())["clawlane"]["cluster"]["nodeId"])
                if served_by == NODES:
                    break
            assert served_by == NODES
            async with open_gateway_client(workers.url, token=workers.token) as client:
                final = await client.request(
                    "agent",
                    {"message": "through the workers", "idempotencyKey": secrets.token_hex(8)},
                    expect_final=True,
                    timeout=30,
                )
            assert final["status"] == "ok"
            # one gateway per state dir still: the parent holds the state dir's lock
            state = tmp_path / "state"
            second = await trio.run_process(
                [*CLI, "gateway", "--port", "0", "--state-dir", str(state)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            assert second.returncode == 2
            assert b"gateway already running on state dir" in second.stderr


async def test_logs_tail_on_any_worker_shows_every_workers_lines(
    tmp_path: Path, pg_url: str
) -> None:
    """`logs.tail` (`openclaw logs`) answers the whole gateway's lines on every worker
    without `logging.file`: a run served by each worker (one that fails: a run that goes
    well logs at DEBUG) is in the tail read through the other one (each worker's ring would
    hold only its own), from one file in the state dir."""
    with trio.fail_after(90):
        async with run_workers(tmp_path, pg_url) as workers:
            runs: dict[str, str] = {}
            for _ in range(40):
                async with open_gateway_client(workers.url, token=workers.token) as client:
                    status = await client.request("status", None, timeout=10)
                    node = status["clawlane"]["cluster"]["nodeId"]
                    if node in runs:
                        continue
                    runs[node] = run_id = f"logged-{node}-{secrets.token_hex(4)}"
                    params = {"message": "[[fail:auth:bad key]] log me", "idempotencyKey": run_id}
                    with pytest.raises(GatewayRequestError, match="bad key"):
                        await client.request("agent", params, expect_final=True, timeout=30)
                if set(runs) == NODES:
                    break
            assert set(runs) == NODES
            tails: dict[str, str] = {}
            for _ in range(40):
                async with open_gateway_client(workers.url, token=workers.token) as client:
                    status = await client.request("status", None, timeout=10)
                    node = status["clawlane"]["cluster"]["nodeId"]
                    tail = await client.request("logs.tail", {"limit": 1000}, timeout=10)
                    assert tail["file"] == str(tmp_path / "state" / "logs" / "gateway.log")
                    tails[node] = "\n".join(tail["lines"])
                if set(tails) == NODES:
                    break
            for node, text in tails.items():
                for run_id in runs.values():
                    assert f"run ended runId={run_id}" in text, (node, run_id)
            assert "clawlane gateway listening on ws://" in tails["wk-w0"]  # the parent's line


async def test_a_worker_that_dies_is_started_again(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(90):
        async with run_workers(tmp_path, pg_url) as workers:
            before = await workers.nodes()
            assert set(before) == NODES
            os.kill(before["wk-w1"], signal.SIGKILL)
            after = await until_nodes(
                workers,
                lambda nodes: set(nodes) == NODES and nodes["wk-w1"] != before["wk-w1"],
                timeout_s=30,
            )
            assert after["wk-w0"] == before["wk-w0"] and not alive(before["wk-w1"])
            assert workers.proc.returncode is None


async def test_a_worker_dying_too_often_stops_the_gateway(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(120):
        async with run_workers(tmp_path, pg_url) as workers:
            pid = (await workers.nodes())["wk-w1"]
            for _ in range(MAX_RESTARTS):
                os.kill(pid, signal.SIGKILL)
                nodes = await until_nodes(
                    workers, lambda n, old=pid: n.get("wk-w1") not in (None, old), timeout_s=30
                )
                pid = nodes["wk-w1"]
            os.kill(pid, signal.SIGKILL)  # one more within the minute: the parent gives up
            assert await workers.proc.wait() == 1
    log = (tmp_path / "gateway.log").read_text()
    assert (
        f"clawlane: worker 1 exited (code -9) after {MAX_RESTARTS} restarts within 60 s; "
        "giving up (stopped the others)"
    ) in log
    assert "worker 0 stopped" in log


async def test_sigterm_to_the_parent_stops_every_worker(tmp_path: Path, pg_url: str) -> None:
    with trio.fail_after(90):
        async with run_workers(tmp_path, pg_url) as workers:
            pids = list((await workers.nodes()).values())
            assert len(pids) == 2 and all(alive(pid) for pid in pids)
            workers.proc.send_signal(signal.SIGTERM)
            assert await workers.proc.wait() == 0
            # the parent waited for (and reaped) its workers before it exited
            assert not any(alive(pid) for pid in pids)
    log = (tmp_path / "gateway.log").read_text()
    assert log.count("listening on ws://") == 1
    assert "worker 0 stopped" in log and "worker 1 stopped" in log


async def gateway_fails(tmp_path: Path, config: dict[str, Any], *flags: str) -> list[str]:
    """Run `clawlane gateway` expecting a failure: its exit code checked by the caller
    through the returned stderr lines (the last one is the code, as text)."""
    state = tmp_path / "state"
    write_config(state, **config)
    with trio.fail_after(60):
        result = await trio.run_process(
            [*CLI, "gateway", "--port", "0", "--state-dir", str(state), *flags],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return [*result.stderr.decode().splitlines(), str(result.returncode)]


PG_ANYWHERE = "postgresql://postgres@127.0.0.1:1/never"
"""Not reached: the checks run before anything connects."""


async def test_workers_without_redis_are_one_line_naming_the_key(tmp_path: Path) -> None:
    config = {"storage": {"backend": "postgres", "postgres": {"url": PG_ANYWHERE}}}
    assert await gateway_fails(tmp_path, config, "--workers", "2") == [
        "clawlane: --workers 2 needs cluster.redis.url in the config (the workers form one "
        "cluster through Redis)",
        "2",
    ]


async def test_workers_on_sqlite_are_one_line_naming_the_key(tmp_path: Path) -> None:
    config = {"cluster": {"redis": {"url": "redis://127.0.0.1:1/0"}}}
    lines = await gateway_fails(tmp_path, config, "--workers", "3")
    assert len(lines) == 2 and lines[1] == "2", lines
    assert lines[0].startswith('clawlane: --workers 3 needs storage.backend "postgres"')


@pytest.mark.parametrize("count", ["0", "-1", "65"])
async def test_a_bad_worker_count_names_the_flag(tmp_path: Path, count: str) -> None:
    lines = await gateway_fails(tmp_path, {}, "--workers", count)
    assert len(lines) == 2 and lines[1] == "2", lines
    assert lines[0].startswith(f"clawlane: --workers {count} is out of range: give 1 to 64")


async def test_a_worker_that_cannot_start_is_one_line_and_stops_the_rest(
    tmp_path: Path,
) -> None:
    port = free_port()  # nothing listens there: no worker can reach "its" Redis
    config = shared_config(PG_ANYWHERE, "clawlane-test:none:", f"redis://127.0.0.1:{port}/0")
    lines = await gateway_fails(tmp_path, config, "--workers", "2", "--log-level", "warning")
    assert lines[-1] == "4", lines
    failures = [line for line in lines if line.startswith("clawlane: ")]
    assert len(failures) == 1, lines
    assert failures[0].startswith("clawlane: worker ")
    assert f"cannot reach Redis at redis://127.0.0.1:{port}/0" in failures[0]
    assert "listening on ws://" not in "\n".join(lines)
