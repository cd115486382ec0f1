"""A store that cannot write says so: a failed transcript or row write is never reported as
success. A request whose acceptance cannot be written gets `UNAVAILABLE` (nothing runs); a
run whose turn cannot be written ends with an error saying so (final `res`, lifecycle,
`chat` event, `agent.wait`); the failure is logged and counted in `status`; reads keep
working; writes resume when the disk does, and the session goes on from what was stored.

Twice: with a seam that makes the store's commits fail on demand (always runs), and with
the state dir on a real, full file system (a 3 MiB tmpfs mounted by the test: root only;
skipped with the reason otherwise)."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import actors.store._sqlite as sqlite_module
from tests._needs import missing
from tests.conftest import local_config, running_gateway
from tests.e2e._raw import Raw, raw_client, warm


class Disk:
    """The seam: the store's commits fail while `full` (all of them, or only those that
    carry a run's transcript entries, as when the disk fills up during a run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        self.only_turns = False
        original = sqlite_module.write_batch

        def write_batch(conn: sqlite3.Connection, writes: Any, *args: Any) -> list[object]:
            has_entries = any(
                isinstance(part, sqlite_module.Append)
                for op in writes
                for part in (op.writes if isinstance(op, sqlite_module.Group) else (op,))
            )
            if self.full and (has_entries or not self.only_turns):
                raise sqlite3.OperationalError("database or disk is full")
            return original(conn, writes, *args)

        monkeypatch.setattr(sqlite_module, "write_batch", write_batch)


async def request(raw: Raw, method: str, params: dict[str, Any]) -> dict[str, Any]:
    rid = await raw.send(method, params)
    return await raw.response(rid)


async def agent(raw: Raw, key: str, run_id: str, message: str) -> list[dict[str, Any]]:
    """The answers to one `agent` request: [error] or [ack, final]."""
    rid = await raw.send("agent", {"message": message, "idempotencyKey": run_id, "sessionKey": key})
    first = await raw.response(rid)
    if not first["ok"]:
        return [first]
    return [first, await raw.response(rid, 2)]


async def stored_texts(raw: Raw, key: str) -> list[str]:
    history = await request(raw, "chat.history", {"sessionKey": key})
    assert history["ok"], history
    texts = []
    for m in history["payload"]["messages"]:
        if m["role"] == "user":
            texts.append(m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
    return texts


async def test_a_turn_that_cannot_be_stored_is_reported_and_writes_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    disk = Disk(monkeypatch)
    caplog.set_level(logging.ERROR)
    key = "agent:main:d"
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(30):
            async with raw_client(gw) as raw:
                await warm(raw, "d")
                await request(raw, "sessions.messages.subscribe", {"key": key})
                disk.full, disk.only_turns = True, True  # the disk fills during the runs
                lost = []
                for i in range(3):
                    ack, final = await agent(raw, key, f"lost{i}", f"lost {i}")
                    assert ack["payload"]["status"] == "accepted"
                    assert not final["ok"] and final["error"]["code"] == "UNAVAILABLE"
                    assert "not stored" in final["error"]["message"]
                    assert final["payload"]["status"] == "error"
                    lost.append(f"lost {i}")
                ends = [d for d in raw.lifecycle("lost0") if d["phase"] in ("end", "error")]
                assert [d["phase"] for d in ends] == ["error"] and "not stored" in ends[0]["error"]
                waited = await request(raw, "agent.wait", {"runId": "lost1", "timeoutMs": 1000})
                assert waited["payload"]["status"] == "error"
                chat = await request(
                    raw,
                    "chat.send",
                    {"message": "lost chat", "idempotencyKey": "lc", "sessionKey": key},
                )
                assert chat["ok"]
                chat_end = await raw.until(
                    lambda f: (
                        f["type"] == "event"
                        and f["event"] == "chat"
                        and f["payload"]["runId"] == "lc"
                        and f["payload"]["state"] in ("final", "error")
                    )
                )
                assert chat_end["payload"]["state"] == "error"
                assert "not stored" in chat_end["payload"]["errorMessage"]
                # No session.message for what was not stored.
                announced = [
                    f
                    for f in raw.frames
                    if f["type"] == "event" and f["event"] == "session.message"
                ]
                assert announced == []
                status = (await request(raw, "status", {}))["payload"]["clawlane"]["durability"]
                assert status["turnsNotStored"] == 4
                assert status["storeFailedCommits"] >= 4
                assert "disk is full" in status["storeLastError"]
                assert "disk is full" in caplog.text and "not stored" in caplog.text
                # Reads keep working.
                assert (await request(raw, "sessions.list", {}))["ok"]
                assert await stored_texts(raw, key) == ["warm"]

                disk.full = False  # space is back
                ack, final = await agent(raw, key, "kept", "kept")
                assert final["ok"] and final["payload"]["status"] == "ok"
                assert await stored_texts(raw, key) == ["warm", "kept"]
                status = (await request(raw, "status", {}))["payload"]["clawlane"]["durability"]
                assert status["storeFailing"] is False
    async with running_gateway(tmp_path, local_config()) as gw:  # and after a restart
        with trio.fail_after(30):
            async with raw_client(gw) as raw:
                assert await stored_texts(raw, key) == ["warm", "kept"]
                waited = await request(raw, "agent.wait", {"runId": "lost0", "timeoutMs": 1000})
                assert waited["payload"]["status"] == "error"  # the journal says so too
                _, final = await agent(raw, key, "later", "later")
                assert final["ok"]
                assert await stored_texts(raw, key) == ["warm", "kept", "later"]


async def test_a_request_whose_acceptance_cannot_be_written_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Disk(monkeypatch)
    async with running_gateway(tmp_path, local_config()) as gw:
        with trio.fail_after(30):
            async with raw_client(gw) as raw:
                await warm(raw, "a")
                disk.full = True
                for key, rid in (("agent:main:a", "a1"), ("agent:main:new", "n1")):
                    (res,) = await agent(raw, key, rid, "x")
                    assert (
                        res["error"]["code"] == "UNAVAILABLE"
                        and "disk is full" in res["error"]["message"]
                    )
                    assert gw.registry.get(rid) is None
                res = await request(
                    raw, "chat.send", {"message": "x", "idempotencyKey": "c1", "sessionKey": "a"}
                )
                assert not res["ok"] and res["error"]["code"] == "UNAVAILABLE"
                assert (await request(raw, "sessions.list", {}))["ok"]
                assert await stored_texts(raw, "agent:main:a") == ["warm"]
                disk.full = False
                _, final = await agent(raw, "agent:main:new", "n1", "x")
                assert final["ok"]


# --- a real full file system ---------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        missing("tmpfs", "mounting one needs root (the full-disk test runs as root in CI)")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        missing("tmpfs", f"cannot mount one here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def fill(path: Path) -> None:
    """Write `path` until the file system is full: unbuffered, so that nothing is left to
    write as the file closes (a buffered file's close wrote its rest, and raised ENOSPC)."""
    with path.open("wb", buffering=0) as f:
        for size in (65536, 512):  # big writes, then small ones into what is left
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC


async def test_a_full_file_system_never_loses_a_turn_it_reported_stored(tmp_path: Path) -> None:
    state = tmp_path / "state"
    key = "agent:main:full"
    big = "y" * 120_000  # one word: one delta, but room on the disk
    with tmpfs(state, "3m"):
        reported_ok: list[str] = []
        refused = not_stored = 0
        outcomes: dict[str, str] = {}
        async with running_gateway(tmp_path, local_config()) as gw:
            with trio.fail_after(60):
                async with raw_client(gw) as raw:
                    await warm(raw, "full")
                    filler = state / "filler"
                    await trio.to_thread.run_sync(fill, filler)
                    # Room for a run's acceptance (its journal row holds the message), not
                    # for its end (the message, the reply, the final result): the disk
                    # fills up during the run.
                    size = filler.stat().st_size
                    os.truncate(filler, size - 200_000)
                    for i in range(5):
                        answers = await agent(raw, key, f"f{i}", f"turn{i} {big}")
                        final = answers[-1]
                        outcomes[f"f{i}"] = "ok" if final["ok"] else "refused"
                        if final["ok"]:
                            reported_ok.append(f"turn{i} {big}")
                            continue
                        assert final["error"]["code"] == "UNAVAILABLE"
                        if len(answers) == 1:
                            refused += 1  # its acceptance could not be written
                        else:
                            assert "the turn was not stored" in final["error"]["message"]
                            not_stored += 1
                            outcomes[f"f{i}"] = "not stored"
                    (res,) = await agent(raw, "agent:main:newcomer", "nc", f"hi {big}")
                    assert not res["ok"] and res["error"]["code"] == "UNAVAILABLE"
                    # Both ways a full disk shows: a run whose end did not fit, requests
                    # whose acceptance did not (else the test tested nothing).
                    assert not_stored >= 1 and refused >= 1, (not_stored, refused)
                    status = (await request(raw, "status", {}))["payload"]["clawlane"]["durability"]
                    assert status["storeFailedCommits"] >= 1 and status["storeLastError"]
                    # Reads keep working on the full disk.
                    assert (await request(raw, "sessions.list", {}))["ok"]
                    stored = await stored_texts(raw, key)
                    assert all(t in stored for t in reported_ok)
                    filler.unlink()  # space is back
                    _, final = await agent(raw, key, "back", "back again")
                    assert final["ok"]
                    (res,) = (await agent(raw, "agent:main:newcomer", "nc", "hi"))[-1:]
                    assert res["ok"]
                    stored = await stored_texts(raw, key)
                    assert all(t in stored for t in reported_ok) and stored[-1] == "back again"
        async with running_gateway(tmp_path, local_config()) as gw:
            with trio.fail_after(60):
                async with raw_client(gw) as raw:
                    after = await stored_texts(raw, key)
                    assert after == stored
                    for rid, outcome in outcomes.items():  # the journal says how each ended
                        waited = await request(raw, "agent.wait", {"runId": rid, "timeoutMs": 100})
                        got = waited["payload"]
                        if outcome == "ok":
                            assert got["status"] == "ok", got
                        elif outcome == "not stored":
                            assert got["status"] == "error" and "not stored" in got["error"], got
                        else:  # never acknowledged, never known
                            assert got["status"] == "timeout", got
                    assert await stored_texts(raw, "agent:main:newcomer") == ["hi"]
