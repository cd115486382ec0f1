"""Process trees under a keeper: exit statuses, and what a crashed owner left killed at start.

Liveness is read from the OS in a bounded loop: waiting for the kernel, not for another task.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import trio

from runtime.tools._proctree import (
    JOB_ENV,
    KEEPER_MARK,
    KEEPER_SOURCE,
    JobRecords,
    _start_ticks,
    decode_status,
    kill_tree,
    new_job_token,
    spawn_tree,
)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def _assert_gone(pid: int, polls: int = 250) -> None:
    for _ in range(polls):
        if not _running(pid):
            return
        await trio.sleep(0.02)
    raise AssertionError(f"{pid} still runs")


def _env(token: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", os.defpath), JOB_ENV: token}


async def test_the_keeper_reports_the_commands_exit_and_signal(tmp_path: Path) -> None:
    with trio.fail_after(10):
        code = await spawn_tree(["/bin/sh", "-c", "exit 5"], cwd=tmp_path, env=_env("t"))
        signalled = await spawn_tree(
            ["/bin/sh", "-c", "kill -USR1 $$"], cwd=tmp_path, env=_env("t")
        )
        assert await code.wait() == 5
        await signalled.wait()
    assert decode_status(code.returncode) == (5, None)
    assert decode_status(signalled.returncode) == (None, "SIGUSR1")


async def test_kill_tree_reaches_a_double_forked_daemon(tmp_path: Path) -> None:
    command = "(setsid sh -c 'sleep 100 & echo $!' &); sleep 100"
    with trio.fail_after(10):
        proc = await spawn_tree(["/bin/sh", "-c", command], cwd=tmp_path, env=_env("t"))
        assert proc.stdout is not None
        said = b""
        while not said.endswith(b"\n"):
            said += await proc.stdout.receive_some()
        daemon = int(said)
        assert _running(daemon)
        await kill_tree(proc)
        assert decode_status(proc.returncode) == (None, "SIGKILL")
        await _assert_gone(daemon)


async def test_sweep_kills_what_a_dead_owner_left_and_keeps_a_live_owners(
    tmp_path: Path,
) -> None:
    records = JobRecords(tmp_path / "jobs")
    dead_token, live_token = new_job_token(), new_job_token()
    with trio.fail_after(10):
        # Stand-ins for a crashed gateway's leftovers: marked processes outside any keeper.
        orphan = await trio.lowlevel.open_process(
            ["sleep", "100"], env=_env(dead_token), stdin=subprocess.DEVNULL
        )
        kept = await trio.lowlevel.open_process(
            ["sleep", "100"], env=_env(live_token), stdin=subprocess.DEVNULL
        )
        gone_owner = await trio.lowlevel.open_process(["true"])
        await gone_owner.wait()  # a pid that no longer runs: the crashed owner
        (tmp_path / "jobs").mkdir()
        dead = f"{gone_owner.pid} 1 {orphan.pid} 1\n"
        (tmp_path / "jobs" / f"{dead_token}.job").write_text(dead)
        live = f"1 {_start_ticks(1)} {kept.pid} 1\n"  # init runs on
        (tmp_path / "jobs" / f"{live_token}.job").write_text(live)
        assert await trio.to_thread.run_sync(records.sweep) == 1
        await orphan.wait()
        assert _running(kept.pid)
        assert sorted(p.name for p in (tmp_path / "jobs").iterdir()) == [f"{live_token}.job"]
        kept.kill()
        await kept.wait()


async def test_records_follow_a_job(tmp_path: Path) -> None:
    records = JobRecords(tmp_path / "jobs")
    with trio.fail_after(10):
        proc = await spawn_tree(["sleep", "100"], cwd=tmp_path, env=_env("tok"))
        records.add("tok", proc.pid)
        owner, owner_start, pid, start = (tmp_path / "jobs" / "tok.job").read_text().split()
        assert (int(owner), int(pid)) == (os.getpid(), proc.pid)
        assert (int(owner_start), int(start)) == (_start_ticks(os.getpid()), _start_ticks(proc.pid))
        await kill_tree(proc)
        records.remove("tok")
    assert list((tmp_path / "jobs").iterdir()) == []


async def test_a_keeper_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    """trio starts processes from worker threads, which exit when idle: a keeper must not
    take the death of that thread for its owner's (PR_SET_PDEATHSIG is per thread)."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        argv = [sys.executable, "-I", "-S", "-c", KEEPER_SOURCE, KEEPER_MARK, str(os.getpid())]
        started.append(subprocess.Popen([*argv, "sleep", "100"], stdin=subprocess.DEVNULL))

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()  # the keeper's parent thread is gone; its owner process lives
    [keeper] = started
    try:
        with trio.fail_after(10):
            for _ in range(25):  # 0.5 s for a wrongly delivered kill to take effect
                assert keeper.poll() is None
                await trio.sleep(0.02)
    finally:
        keeper.terminate()
        keeper.wait()
    assert keeper.returncode == -signal.SIGKILL  # the command died of the keeper's kill
