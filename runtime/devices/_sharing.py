"""The pairing file shared by processes (`clawlane gateway --workers N`: the workers share
the state dir, so they share `devices/pairing.json`).

Each process keeps the records in memory (`PairingStore`), as one gateway does, and syncs
with the file under an exclusive `flock` on `pairing.json.lock`:

- `refresh` (before a device is authenticated): when the file changed since this process
  last synced (its size, mtime or inode), its records are taken in;
- `flush` (after a change, before it is acknowledged): under the lock, what another process
  wrote since is taken in, then the file is written with this process's changes on top.

Taking in is a three-way merge per record (a pending request by id, a device by id): what
this process changed since the last sync (added, replaced, removed) wins; every other
record is as the file has it. Two processes changing the same device at the same moment:
the later write wins for that device (as one process's later write would). Blocking
functions here run in a worker thread.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

__all__ = ["FileLock", "Stamp", "merge", "stamp"]

_V = TypeVar("_V")

Stamp = tuple[int, int, int] | None
"""A file's (inode, size, mtime in ns), None when it does not exist."""


def stamp(path: Path) -> Stamp:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class FileLock:
    """An exclusive `flock` on `<path>.lock`, taken in one worker-thread call and released
    in another (the merge runs in the trio thread in between). Blocking."""

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(path.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor releases the lock


def merge(disk: Mapping[str, _V], base: Mapping[str, _V], mine: Mapping[str, _V]) -> dict[str, _V]:
    """The records after taking in `disk`: those this process changed since `base` (the
    last sync) as it has them, the others as the file has them."""
    merged = dict(disk)
    for key, value in mine.items():
        if base.get(key) != value:
            merged[key] = value  # added or replaced here
    for key in base:
        if key not in mine:
            merged.pop(key, None)  # removed here
    return merged
