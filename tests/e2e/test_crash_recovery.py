"""A crash forgets nothing it acknowledged: a gateway process with 200 runs accepted (and
some finished) is killed with SIGKILL and started again on the same state dir. Every
accepted run is reported (`agent.wait` answers `error`, the session row and transcript say
the run was interrupted, `runs.replay` gives its terminal event), the finished ones still
answer, their idempotency keys are remembered (a retry never runs twice), and the store
is intact (SQLite's integrity check). With `gateway.interruptedRuns: "rerun"` the
interrupted runs run again instead, in their sessions' order, once."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from actors.store._journal import INTERRUPTED
from transports.client._client import GatewayClient, GatewayRequestError, open_gateway_client
from transports.loadtest._gateway import _read_listening_url

CLI = [sys.executable, "-c", "import sys; from transports.cli._main import main; sys.exit(main())"]


def write_config(state: Path, **gateway: Any) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    config = state / "clawlane.json"
    config.write_text(
        json.dumps(
            {
                "gateway": {"auth": {"mode": "none"}, **gateway},
                "agents": {"defaults": {"maxConcurrent": 4}},
                "messages": {"queue": {"mode": "followup", "debounceMs": 0, "cap": 1000}},
            }
        )
    )
    return config


@contextlib.asynccontextmanager
async def gateway_process(state: Path, config: Path) -> AsyncIterator[tuple[str, trio.Process]]:
    """`clawlane gateway` in a child process on the state dir: (url, process). Killed (if
    still running) on exit."""
    argv = [*CLI, "gateway", "--port", "0", "--state-dir", str(state), "--config", str(config)]
    log_path = state.parent / f"gateway-{state.name}.log"
    with log_path.open("ab") as log:
        proc = await trio.lowlevel.open_process(
            argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL
        )
        try:
            yield await _read_listening_url(proc, log_path), proc
        finally:
            with trio.CancelScope(shield=True):
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
                assert proc.stdout is not None
                await proc.stdout.aclose()


class Frames:
    """Every frame a client received, with a way to wait for one."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self._changed = trio.Event()

    def append(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        self._changed.set()
        self._changed = trio.Event()

    async def until(self, predicate: Any) -> dict[str, Any]:
        while True:
            for f in self.frames:
                if predicate(f):
                    return f
            await self._changed.wait()


@contextlib.asynccontextmanager
async def client(url: str) -> AsyncIterator[tuple[GatewayClient, Frames]]:
    frames = Frames()
    async with open_gateway_client(
        url, client_id="test", mode="test", caps=["session-scoped-events"], on_frame=frames.append
    ) as c:
        yield c, frames


async def kill9(proc: trio.Process) -> None:
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert proc.returncode == -signal.SIGKILL


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        (result,) = conn.execute("PRAGMA integrity_check").fetchone()
        return str(result)
    finally:
        conn.close()


async def accept_all(
    c: GatewayClient, frames: Frames, requests: list[tuple[str, dict[str, Any]]]
) -> None:
    """Send every request back to back, in order (pipelined); each must be acknowledged."""
    ids = []
    for n, (method, params) in enumerate(requests):
        ids.append(f"pipelined-{n}")
        await c.send_raw(
            json.dumps({"type": "req", "id": ids[-1], "method": method, "params": params})
        )
    for rid in ids:
        res = await frames.until(lambda f, rid=rid: f.get("type") == "res" and f["id"] == rid)
        assert res["ok"] and res["payload"]["status"] in ("accepted", "started"), res


def user_texts(history: dict[str, Any]) -> list[str]:
    return [m["content"] for m in history["messages"] if m["role"] == "user"]


async def test_kill_9_with_200_runs_accepted_then_every_run_is_reported(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = write_config(state)
    sessions = [f"agent:main:crash{i}" for i in range(40)]
    finished = [f"done{i}" for i in range(10)]
    accepted: dict[str, tuple[str, str, str]] = {}  # run id -> (method, session, message)
    with trio.fail_after(120):
        async with gateway_process(state, config) as (url, proc), client(url) as (c, frames):
            for i, rid in enumerate(finished):  # runs that finish before the crash
                method = "agent" if i % 2 else "chat.send"
                key = sessions[i]
                if method == "agent":
                    final = await c.request(
                        "agent",
                        {"message": f"done {i}", "idempotencyKey": rid, "sessionKey": key},
                        expect_final=True,
                    )
                    assert final["status"] == "ok"
                else:
                    await c.request(
                        "chat.send",
                        {"message": f"done {i}", "idempotencyKey": rid, "sessionKey": key},
                    )
                    waited = await c.request("agent.wait", {"runId": rid, "timeoutMs": 10_000})
                    assert waited["status"] == "ok"
            requests = []
            for n in range(200):  # five per session; the first of each stalls (4 lanes)
                key = sessions[n % len(sessions)]
                rid = f"acc{n}"
                message = f"[[stall]] turn {n}"
                method = "chat.send" if n % 3 == 0 else "agent"
                accepted[rid] = (method, key, message)
                params = {"message": message, "idempotencyKey": rid, "sessionKey": key}
                requests.append((method, params))
            await accept_all(c, frames, requests)
            await kill9(proc)
        db = state / "clawlane.sqlite"
        assert integrity(db) == "ok"

        async with gateway_process(state, config) as (url, proc), client(url) as (c, frames):
            status = await c.request("status")
            assert status["clawlane"]["durability"]["recovered"]["interrupted"] == 200
            assert status["clawlane"]["runs"]["active"] == 0
            for rid in accepted:
                waited = await c.request("agent.wait", {"runId": rid, "timeoutMs": 1000})
                assert waited["status"] == "error" and waited["error"] == INTERRUPTED, waited
            for rid in finished:
                waited = await c.request("agent.wait", {"runId": rid, "timeoutMs": 1000})
                assert waited["status"] == "ok", waited
            # runs.replay of an interrupted run: its terminal event.
            replay = await c.request("runs.replay", {"runId": "acc1"})
            assert replay["ended"] is True and replay["replayed"] == 2
            terminal = await frames.until(
                lambda f: (
                    f.get("event") == "agent"
                    and f["payload"]["runId"] == "acc1"
                    and f["payload"]["stream"] == "lifecycle"
                    and f["payload"]["data"].get("phase") in ("end", "error")
                )
            )
            assert terminal["payload"]["data"] == {
                "phase": "error",
                "error": INTERRUPTED,
                "startedAt": terminal["payload"]["data"]["startedAt"],
                "endedAt": terminal["payload"]["data"]["endedAt"],
            }
            # The usage reports count the interrupted runs' lines (each an error).
            usage = await c.request("sessions.usage", {"limit": 1})
            messages = usage["aggregates"]["messages"]
            assert (messages["user"], messages["assistant"], messages["errors"]) == (210, 210, 200)
            # Sessions: the row and the transcript say so.
            listing = await c.request("sessions.list", {})
            rows = {r["key"]: r for r in listing["sessions"]}
            for key in sessions:
                row = rows[key]
                assert row["status"] == "failed" and row["abortedLastRun"] is True
                mine = [rid for rid, (_, k, _) in accepted.items() if k == key]
                assert row["lastRunId"] == mine[-1]
                assert row["hasActiveRun"] is False
                history = await c.request("chat.history", {"sessionKey": key})
                texts = user_texts(history)
                assert texts[-len(mine) :] == [accepted[rid][2] for rid in mine]
                notes = [
                    m
                    for m in history["messages"]
                    if m["role"] == "assistant" and m.get("errorMessage") == INTERRUPTED
                ]
                assert len(notes) == len(mine)
            # Retried keys never run twice: each answers from the cache (a run would answer
            # `accepted` / `started`).
            for i, rid in enumerate(finished):
                key = sessions[i]
                if i % 2:
                    again = await c.request(
                        "agent", {"message": "again", "idempotencyKey": rid, "sessionKey": key}
                    )
                    assert again["status"] == "ok" and again["summary"] == "completed"
                else:
                    again = await c.request(
                        "chat.send", {"message": "again", "idempotencyKey": rid, "sessionKey": key}
                    )
                    assert again["status"] == "ok"
            for rid in ("acc1", "acc2"):  # interrupted agent runs: the cached error
                try:
                    await c.request(
                        "agent", {"message": "again", "idempotencyKey": rid, "sessionKey": "x"}
                    )
                except GatewayRequestError as exc:
                    assert INTERRUPTED in str(exc)
                else:
                    raise AssertionError("an interrupted run's key ran again")
            try:
                await c.request(
                    "chat.send", {"message": "again", "idempotencyKey": "acc0", "sessionKey": "x"}
                )
            except GatewayRequestError as exc:
                assert INTERRUPTED in str(exc)
            else:
                raise AssertionError("an interrupted chat run's key ran again")
            status = await c.request("status")
            assert status["clawlane"]["runs"]["active"] == 0
            history = await c.request("chat.history", {"sessionKey": sessions[1]})
            assert "again" not in user_texts(history)
            # New work goes on normally on the same sessions.
            final = await c.request(
                "agent",
                {"message": "fresh", "idempotencyKey": "fresh1", "sessionKey": sessions[0]},
                expect_final=True,
            )
            assert final["status"] == "ok"
            proc.send_signal(signal.SIGTERM)
            assert await proc.wait() == 0
        assert integrity(db) == "ok"


async def test_with_rerun_the_interrupted_runs_run_again_in_order_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = write_config(state, interruptedRuns="rerun")
    key = "agent:main:again"
    with trio.fail_after(120):
        async with gateway_process(state, config) as (url, proc), client(url) as (c, frames):
            # One lane slot per session is busy with a stalled run; five wait behind it.
            await c.request(
                "agent", {"message": "[[stall]] block", "idempotencyKey": "b", "sessionKey": key}
            )
            queued = [f"q{i}" for i in range(5)]
            await accept_all(
                c,
                frames,
                [
                    (
                        "agent",
                        {
                            "message": f"[[deltas:2]] q {i}",
                            "idempotencyKey": rid,
                            "sessionKey": key,
                        },
                    )
                    for i, rid in enumerate(queued)
                ],
            )
            await kill9(proc)
        async with gateway_process(state, config) as (url, proc), client(url) as (c, _):
            status = await c.request("status")
            assert status["clawlane"]["durability"]["recovered"]["rerun"] == 6
            await c.request("sessions.abort", {"key": key, "runId": "b"})  # the stall, again
            for rid in queued:
                waited = await c.request("agent.wait", {"runId": rid, "timeoutMs": 10_000})
                assert waited["status"] == "ok", waited
            history = await c.request("chat.history", {"sessionKey": key})
            assert user_texts(history)[-5:] == [f"[[deltas:2]] q {i}" for i in range(5)]
            waited = await c.request("agent.wait", {"runId": "b", "timeoutMs": 10_000})
            assert waited["status"] == "timeout"  # aborted
            await c.request(
                "agent", {"message": "[[stall]] block2", "idempotencyKey": "b2", "sessionKey": key}
            )
            await kill9(proc)
        async with gateway_process(state, config) as (url, proc), client(url) as (c, _):
            status = await c.request("status")
            assert (
                status["clawlane"]["durability"]["recovered"]["rerun"] == 1
            )  # b2, its second execution
            await kill9(proc)
        # b2 was interrupted twice: reported failed, not run a third time.
        async with gateway_process(state, config) as (url, proc), client(url) as (c, _):
            status = await c.request("status")
            assert status["clawlane"]["durability"]["recovered"]["interrupted"] == 1
            assert status["clawlane"]["durability"]["recovered"]["rerun"] == 0
            waited = await c.request("agent.wait", {"runId": "b2", "timeoutMs": 1000})
            assert waited["status"] == "error" and waited["error"] == INTERRUPTED
        assert integrity(state / "clawlane.sqlite") == "ok"
