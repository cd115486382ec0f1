"""One gateway process per state dir: an exclusive lock on `<state-dir>/gateway.lock`.

As OpenClaw's state ownership lock (its `gateway-lock` doc): the state dir's SQLite file and
the cron jobs belong to one process, so every job fires once. The lock is `flock(2)` on an
open file: the kernel releases it when the process ends however it ends (SIGKILL included),
so a stale file never blocks a restart. The file holds the owner's pid, for the message. A
second gateway on the same state dir fails at once with one clear line (`GatewayLockError`,
a `GatewayConfigError`: the CLI prints it and exits 2).

With the scale-out issue several processes share jobs through a Redis lease per job slot
(`actors._cron.FiringLease`), and this lock moves to per-node state only. The workers of
`clawlane gateway --workers N` (`_workers`) share one state dir: their parent holds
`gateway.lock` for as long as it runs, and worker i holds `gateway-w<i>.lock`
(`worker_lock_name`), so a second gateway on the dir is still refused and two copies of
one worker never run.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from ._errors import TransportError

__all__ = ["LOCK_NAME", "GatewayLockError", "state_dir_lock", "worker_lock_name"]

LOCK_NAME: Final = "gateway.lock"


class GatewayLockError(TransportError):
    """Another gateway owns the state dir."""


def worker_lock_name(index: int) -> str:
    """The lock file of worker `index` of a `--workers` gateway."""
    return f"gateway-w{index}.lock"


@contextmanager
def state_dir_lock(state_dir: Path, *, worker: int | None = None) -> Iterator[Path]:
    """Hold the state dir's lock (`gateway.lock`, or with `worker` that worker's) for the
    block. Raises `GatewayLockError` at once when another process holds it. Blocking file
    I/O (a few syscalls); not a checkpoint."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / (LOCK_NAME if worker is None else worker_lock_name(worker))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise GatewayLockError(
                f"gateway already running on state dir {state_dir.resolve()} (pid {owner}); "
                "stop it or pass another --state-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
