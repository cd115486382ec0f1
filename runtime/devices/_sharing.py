"""The pairing records shared by processes: a document every process syncs with.

Each process keeps the records in memory (`PairingStore`), as one gateway does, and syncs
with a shared document (`SharedDocument`) under the document's exclusive lock:

- `refresh` (before a device is authenticated): when the document changed since this
  process last synced (its version: one cheap check when nothing changed), its records
  are taken in;
- `flush` (after a change, before it is acknowledged): under the lock, what another process
  wrote since is taken in, then the document is written with this process's changes on top.

Two documents: `FileDocument`, the state dir's `devices/pairing.json` under a `flock`
(processes on one state dir), and `actors.PostgresDocument`, a row in the cluster's
PostgreSQL under a row lock (`storage.backend: "postgres"`: every gateway of the cluster,
on any machine, the workers of `clawlane gateway --workers N` among them).

Taking in is a three-way merge per record (a pending request by id, a device by id): what
this process changed since the last sync (added, replaced, removed) wins; every other
record is as the document has it. Two processes changing the same device at the same
moment: the later write wins for that device (as one process's later write would).
Blocking functions here run in a worker thread.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Protocol, TypeVar

__all__ = ["DocumentVersion", "FileDocument", "FileLock", "SharedDocument", "merge", "stamp"]

_V = TypeVar("_V")

DocumentVersion = tuple[int, ...] | None
"""A shared document's version as its owner tells it (only ever compared for equality);
None when the document does not exist."""


class SharedDocument(Protocol):
    """One document several processes read and write whole, under an exclusive lock.

    Every method but `where`/`errors` blocks (call it in a worker thread); the pairing store
    calls one at a time. Between `lock_and_read` and `release` the caller holds the lock:
    it writes at most once (`write_locked`) and always releases, also after an error (a
    failed `lock_and_read` may have taken it). What a holder wrote is what the others read
    once it has released."""

    @property
    def where(self) -> str:
        """The document in messages (a path; a server and a name, never a password)."""
        ...

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """What the blocking methods raise when the document cannot be read or written (the
        pairing store reports them as `PairingStoreError`)."""
        ...

    def current(self) -> DocumentVersion:
        """The version now, without the lock (a cheap check)."""
        ...

    def lock_and_read(self, known: DocumentVersion) -> tuple[bytes | None, DocumentVersion]:
        """Take the exclusive lock, then read: (body, version), the body None when the
        version is `known` (unchanged) or the document does not exist."""
        ...

    def write_locked(self, data: bytes) -> DocumentVersion:
        """Replace the document (the lock held); its new version."""
        ...

    def release(self) -> None:
        """Release the lock (nothing when it is not held); the write, if any, is done."""
        ...


def stamp(path: Path) -> DocumentVersion:
    """A file's (inode, size, mtime in ns), None when it does not exist."""
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


class FileDocument:
    """A file as the shared document (`SharedDocument`) of the processes of one machine:
    locked with `FileLock`, written atomically (a temporary file, fsync, rename, fsync of
    the folder; mode 0600 in a 0700 folder), versioned by `stamp`. Raises `OSError`."""

    errors: Final = (OSError,)

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path)

    @property
    def where(self) -> str:
        return str(self.path)

    def current(self) -> DocumentVersion:
        return stamp(self.path)

    def lock_and_read(self, known: DocumentVersion) -> tuple[bytes | None, DocumentVersion]:
        self._lock.acquire()
        seen = stamp(self.path)
        if seen == known or seen is None:
            return None, seen
        return self.path.read_bytes(), seen

    def write_locked(self, data: bytes) -> DocumentVersion:
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = folder / f".{self.path.name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return stamp(self.path)

    def release(self) -> None:
        self._lock.release()


def merge(disk: Mapping[str, _V], base: Mapping[str, _V], mine: Mapping[str, _V]) -> dict[str, _V]:
    """The records after taking in `disk`: those this process changed since `base` (the
    last sync) as it has them, the others as the document has them."""
    merged = dict(disk)
    for key, value in mine.items():
        if base.get(key) != value:
            merged[key] = value  # added or replaced here
    for key in base:
        if key not in mine:
            merged.pop(key, None)  # removed here
    return merged
