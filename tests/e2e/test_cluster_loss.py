"""Losing a node of a cluster: two gateway processes (node-a, node-b) on one
PostgreSQL schema and one Redis, lease TTL 1 s. node-a is killed (SIGKILL) in the middle of
a run it accepted: the run is reported failed from node-b (`agent.wait` answers `error`
naming node-a; the session's transcript says the run was interrupted), a retry of its
idempotency key runs nothing, the session is served by node-b (with a newer fencing token
in the store), and everything node-a acknowledged before is still there. Skipped, saying
why, only when Redis or PostgreSQL cannot be reached."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

from tests.actors._cluster_nodes import drop_prefix, raw_client, require_redis
from tests.actors._databases import pg_url
from tests.e2e.test_workers import CLI, shared_config, write_config
from transports.client._client import GatewayRequestError, open_gateway_client
from transports.loadtest._gateway import _read_listening_url

__all__ = ["pg_url"]  # the fixture, used by name

SLOW = "a long answer [[deltas:400]] [[delay:50]]"


@asynccontextmanager
async def node(
    tmp_path: Path, pg: str, prefix: str, name: str, *, ttl_ms: int = 1_000
) -> AsyncIterator[Any]:
    """One gateway process named `name` (no auth, a port of its own)."""
    config = shared_config(pg, prefix)
    config["cluster"].update(nodeId=name, leaseTtlMs=ttl_ms)
    config["gateway"] = {"auth": {"mode": "none"}}
    state = tmp_path / name
    path = write_config(state, **config)
    log_path = tmp_path / f"{name}.log"
    argv = [*CLI, "gateway", "--port", "0", "--state-dir", str(state), "--config", str(path)]
    with log_path.open("ab") as log:
        offset = log.tell()
        proc = await trio.lowlevel.open_process(
            argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL
        )
        try:
            proc.url = await _read_listening_url(proc, log_path, offset=offset)  # type: ignore[attr-defined]
            yield proc
        finally:
            with trio.CancelScope(shield=True):
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()


async def until(check: Any, what: str, *, timeout_s: float) -> Any:
    """Ask again every 100 ms until `check()` answers (the other process's state and
    Redis expiry, which no event here announces)."""
    with trio.move_on_after(timeout_s):
        while True:
            result = await check()
            if result:
                return result
            await trio.sleep(0.1)
    raise AssertionError(f"not within {timeout_s} s: {what}")


def fence_of(pg: str, key: str) -> int | None:
    with psycopg.connect(pg) as conn:
        row = conn.execute(
            "SELECT token FROM session_fences WHERE session_key = %s", (key,)
        ).fetchone()
    return None if row is None else int(row[0])


async def test_a_node_killed_mid_run(tmp_path: Path, pg_url: str) -> None:
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    try:
        with trio.fail_after(90):
            await _kill_mid_run(tmp_path, pg_url, prefix)
    finally:
        await drop_prefix(prefix)


async def _kill_mid_run(tmp_path: Path, pg: str, prefix: str) -> None:
    async with node(tmp_path, pg, prefix, "node-a") as a, node(tmp_path, pg, prefix, "node-b") as b:
        async with open_gateway_client(a.url) as ca:
            done = await ca.request(
                "agent",
                {"message": "kept [[deltas:2]]", "idempotencyKey": "kept", "sessionKey": "k"},
                expect_final=True,
            )
            assert done["status"] == "ok"
            params = {"sessionKey": "k", "message": SLOW, "idempotencyKey": "lost"}
            ack = await ca.request("chat.send", params)
            assert ack["status"] == "started"
            first_fence = await trio.to_thread.run_sync(fence_of, pg, "agent:main:k")
            assert first_fence is not None
        a.kill()  # SIGKILL, mid-run
        await a.wait()
        async with open_gateway_client(b.url) as cb:

            async def failed() -> dict[str, Any] | None:
                waited = await cb.request("agent.wait", {"runId": "lost", "timeoutMs": 500})
                return waited if waited["status"] == "error" else None

            waited = await until(failed, "the lost run reported failed", timeout_s=30)
            assert "node-a" in waited["error"]
            # its frames went with node-a: a replay says so (read the transcript instead)
            replay = await cb.request("runs.replay", {"runId": "lost", "afterSeq": 3})
            assert replay == {
                "runId": "lost",
                "replayed": 0,
                "gap": True,
                "lastSeq": 3,
                "ended": True,
            }

            async def reported() -> bool:
                history = await cb.request("chat.history", {"sessionKey": "k", "limit": 50})
                return "interrupted" in "\n".join(map(_text, history["messages"])).lower()

            # the reaper (one node) says so in the session's transcript
            await until(reported, "the transcript says the run was interrupted", timeout_s=30)
            # a retry of the key runs nothing: it answers the failure
            with pytest.raises(GatewayRequestError) as info:
                await cb.request("chat.send", params)
            assert info.value.code == "UNAVAILABLE" and "interrupted" in str(info.value)
            # the session is node-b's now, with a newer fencing token
            again = {"message": "after [[deltas:2]]", "idempotencyKey": "after", "sessionKey": "k"}
            after = await cb.request("agent", again, expect_final=True)
            assert after["status"] == "ok"
            fence = await trio.to_thread.run_sync(fence_of, pg, "agent:main:k")
            assert fence is not None and fence > first_fence
            history = await cb.request("chat.history", {"sessionKey": "k", "limit": 50})
        texts = [_text(m) for m in history["messages"]]
        joined = "\n".join(texts)
        assert "kept" in joined  # acknowledged before the kill: still there
        assert "interrupted" in joined.lower()  # the transcript says the run was interrupted
        assert sum("a long answer" in t for t in texts) == 1  # the lost run's message, once
        assert "after" in texts[-2]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


async def test_a_request_forwarded_to_a_node_that_restarts_is_answered(
    tmp_path: Path, pg_url: str
) -> None:
    """node-a is killed mid-run and started again under its id before its record expires
    (a `--workers` worker restarted): node-b, whose client's run node-a was running, never
    sees node-a gone, and the new process never heard of the request. It is answered all
    the same (it waited for ever), once node-b hears from node-a's new process."""
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    ttl = 20_000  # node-a's record outlives its first process by far
    try:
        with trio.fail_after(60):
            await _restart_mid_run(tmp_path, pg_url, prefix, ttl)
    finally:
        await drop_prefix(prefix)


async def _restart_mid_run(tmp_path: Path, pg: str, prefix: str, ttl: int) -> None:
    async with (
        node(tmp_path, pg, prefix, "node-b", ttl_ms=ttl) as b,
        node(tmp_path, pg, prefix, "node-a", ttl_ms=ttl) as a,
    ):
        async with open_gateway_client(a.url) as ca:  # node-a owns the session
            params = {"message": "one", "idempotencyKey": "r1", "sessionKey": "k"}
            await ca.request("agent", params, expect_final=True)
        async with open_gateway_client(b.url) as cb, trio.open_nursery() as nursery:

            async def restart_a() -> None:
                async for event, payload, _seq in cb.events:  # node-a streams the run
                    if event == "agent" and payload.get("runId") == "r2":
                        break
                a.kill()
                await a.wait()
                async with node(tmp_path, pg, prefix, "node-a", ttl_ms=ttl):
                    await trio.sleep_forever()

            nursery.start_soon(restart_a)
            params = {"sessionKey": "k", "message": SLOW, "idempotencyKey": "r2"}
            with pytest.raises(GatewayRequestError) as info:
                await cb.request("agent", params, expect_final=True)
            nursery.cancel_scope.cancel()
    assert info.value.code == "UNAVAILABLE" and "restarted" in str(info.value)


async def test_a_node_whose_id_another_process_took_stops(tmp_path: Path, pg_url: str) -> None:
    """A second process claimed node-a's id while node-a's record had expired (node-a
    stalled, or Redis was away, past the TTL): at its next heartbeat node-a finds the other
    process's record, and exits 2 with one line naming `cluster.nodeId` and that process,
    instead of sharing its leases and inbox."""
    await require_redis()
    prefix = f"clawlane-test:{secrets.token_hex(6)}:"
    try:
        with trio.fail_after(60):
            async with node(tmp_path, pg_url, prefix, "node-a") as proc:
                other = {"nodeId": "node-a", "host": "elsewhere", "pid": 4242}
                other["beatAtMs"] = int(time.time() * 1000)
                async with raw_client() as redis:
                    key = f"{prefix}node:node-a"
                    await redis.set(key, b"0123456789abcdef" + json.dumps(other).encode())
                assert await proc.wait() == 2
    finally:
        await drop_prefix(prefix)
    lines = (tmp_path / "node-a.log").read_text().splitlines()
    assert any(
        line.startswith("clawlane: cluster.nodeId 'node-a' is in use by host elsewhere pid 4242")
        for line in lines
    ), lines
