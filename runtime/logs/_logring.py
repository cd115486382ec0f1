"""The gateway's recent log records, for `logs.tail` (`openclaw logs`, `--follow`).

A `logging.Handler` formats each record once, as one line in OpenClaw's file-log shape (a
JSON object: `time`, `message`, `"0"`, `subsystem`, `_meta{logLevelName, date, name}`), and
keeps it in a ring bounded both in bytes and in count: the oldest lines go first when either
bound is passed, and a single line longer than `MAX_LINE_BYTES` is cut. When `logging.file`
is configured the same lines are also appended to that file (rotated at
`logging.maxFileBytes`, as OpenClaw does, keeping one `.1` archive), and `logs.tail` reads
the file instead, so records from before a restart are there too. Several processes may
append to one file (the workers of `gateway --workers`, which use one in the state dir when
`logging.file` is not set): each line is one `write` in append mode, and one of them
rotates it (under `<file>.lock`) while the others follow within `FILE_CHECK_S`.

Cursors are byte offsets, as OpenClaw's: into the file, or into the stream of every line the
ring ever held (`total_bytes`). A cursor the ring no longer reaches (its lines dropped) or a
file that shrank answers from the oldest line still there with `reset: true`.

`emit` runs in whichever thread logs (the store's worker logs too): the ring takes a lock;
the file is written under it, which is blocking I/O on the logging thread (as every file
handler); `read_tail` on a file is blocking too (call it in a worker thread).
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import fcntl
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Final

import attrs
import msgspec

MAX_RING_BYTES: Final = 4 * 1024 * 1024
MAX_RING_LINES: Final = 5_000
MAX_LINE_BYTES: Final = 16 * 1024
DEFAULT_MAX_FILE_BYTES: Final = 100 * 1024 * 1024
FILE_CHECK_S: Final = 1.0
"""How often a process writing the log file checks its size and whether another rotated it."""
TAIL_DEFAULT_LIMIT: Final = 500
TAIL_DEFAULT_MAX_BYTES: Final = 250_000
_LEVELS: Final = {
    "DEBUG": (2, "DEBUG"),
    "INFO": (3, "INFO"),
    "WARNING": (4, "WARN"),
    "ERROR": (5, "ERROR"),
    "CRITICAL": (6, "FATAL"),
}


_line_encoder: Final = msgspec.json.Encoder()
_names: dict[str, str] = {}
_stamp_second: list[Any] = [-1, ""]  # the last second formatted, and its text


def _stamp(created: float) -> str:
    """`2026-12-01T22:06:31.871+00:00` (what `isoformat(timespec="milliseconds")` gives in
    UTC), the seconds formatted once per second: this runs for every record kept."""
    second = int(created)
    if second != _stamp_second[0]:
        when = datetime.datetime.fromtimestamp(second, tz=datetime.UTC)
        _stamp_second[:] = [second, when.strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_stamp_second[1]}.{int((created - second) * 1000):03d}+00:00"


def format_record(record: logging.LogRecord, hostname: str) -> str:
    """One log line in OpenClaw's file-log shape (no newline), at most `MAX_LINE_BYTES`.
    Compact JSON, as OpenClaw's `JSON.stringify` writes it (msgspec: the gateway's INFO
    lines, a run's two among them, pass here)."""
    message = record.getMessage()
    if record.exc_info and record.exc_info[0] is not None:
        message += "\n" + logging.Formatter().formatException(record.exc_info)
    if len(message) > MAX_LINE_BYTES // 2:
        message = message[: MAX_LINE_BYTES // 2] + "…[truncated]"
    stamp = _stamp(record.created)
    level_id, level_name = _LEVELS.get(record.levelname, (3, record.levelname))
    subsystem = record.name.removeprefix("clawlane.") or "gateway"
    name = _names.get(subsystem)
    if name is None:
        name = _names[subsystem] = json.dumps({"subsystem": subsystem})
    line = {
        "0": message,
        "_meta": {
            "runtime": "python",
            "hostname": hostname,
            "date": stamp.replace("+00:00", "Z"),
            "logLevelId": level_id,
            "logLevelName": level_name,
            "name": name,
        },
        "time": stamp,
        "hostname": hostname,
        "subsystem": subsystem,
        "message": message,
    }
    return _line_encoder.encode(line).decode()


@attrs.frozen
class LogTail:
    """What `logs.tail` answers (`LogsTailResult`)."""

    file: str
    cursor: int
    size: int
    lines: list[str]
    truncated: bool = False
    reset: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "cursor": self.cursor,
            "size": self.size,
            "lines": self.lines,
            "truncated": self.truncated,
            "reset": self.reset,
        }


class LogRing(logging.Handler):
    """The ring of recent lines (and the optional log file)."""

    def __init__(
        self,
        *,
        max_bytes: int = MAX_RING_BYTES,
        max_lines: int = MAX_RING_LINES,
        file: Path | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        level: int = logging.INFO,
    ) -> None:
        super().__init__(level)
        self.max_bytes = max_bytes
        self.max_lines = max_lines
        self.file = file
        self.max_file_bytes = max_file_bytes
        self._hostname = socket.gethostname()
        self._lines: collections.deque[tuple[int, str]] = collections.deque()
        """(offset of the line in the stream of all lines, the line)."""
        self._sizes: collections.deque[int] = collections.deque()
        """Each line's size in the stream (its UTF-8 bytes + the newline), in step."""
        self._bytes = 0
        self.total_bytes = 0
        self.dropped = 0
        self._ring_lock = threading.Lock()
        self._fd = -1
        self._fd_path: Path | None = None
        self._size_seen = 0
        self._check_at = 0.0

    # --- writing -------------------------------------------------------------------------

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = format_record(record, self._hostname)
        except Exception:
            self.handleError(record)
            return
        self.append_line(line)

    def append_line(self, line: str) -> None:
        """Keep `line` (formatted already); drop the oldest past either bound."""
        size = len(line.encode("utf-8", "replace")) + 1
        with self._ring_lock:
            self._lines.append((self.total_bytes, line))
            self._sizes.append(size)
            self.total_bytes += size
            self._bytes += size
            while self._lines and (
                self._bytes > self.max_bytes or len(self._lines) > self.max_lines
            ):
                self._lines.popleft()
                self._bytes -= self._sizes.popleft()
                self.dropped += 1
            if self.file is not None:
                self._write_file(line)

    def _write_file(self, line: str) -> None:
        """Append `line` with one `write` on a descriptor kept open in append mode, so the
        processes sharing the file (the workers of `--workers`) never split each other's
        lines. Before a line that would find the file at `max_file_bytes` (as far as this
        process knows), and every `FILE_CHECK_S`: rotate it if it is that big (one
        process does, under a lock file), and follow a rotation another process did."""
        assert self.file is not None
        try:
            fd = self._fd if self._fd_path == self.file else self._open_file()
            now = time.monotonic()
            if now >= self._check_at or self._size_seen >= self.max_file_bytes:
                self._check_at = now + FILE_CHECK_S
                fd = self._rotate_or_follow(fd)
            self._size_seen += os.write(fd, (line + "\n").encode("utf-8", "replace"))
        except OSError:
            self._close_file()  # a log file that cannot be written must not break logging

    def _open_file(self) -> int:
        assert self.file is not None
        self._close_file()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        self._fd = os.open(self.file, flags, 0o644)
        self._fd_path = self.file
        self._size_seen = os.fstat(self._fd).st_size
        return self._fd

    def _close_file(self) -> None:
        fd, self._fd, self._fd_path = self._fd, -1, None
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _rotate_or_follow(self, fd: int) -> int:
        """The descriptor to write on: the file past `max_file_bytes` becomes `<file>.1`
        (the last archive replaced) and a new one is opened; a descriptor left on a file
        another process rotated is reopened on the new one."""
        assert self.file is not None
        mine = os.fstat(fd)
        self._size_seen = mine.st_size
        if mine.st_size >= self.max_file_bytes:
            lock = self.file.with_name(self.file.name + ".lock")
            with lock.open("a") as held:
                fcntl.flock(held, fcntl.LOCK_EX)  # one process rotates; released on close
                with contextlib.suppress(FileNotFoundError):
                    now = os.stat(self.file)
                    if now.st_ino == mine.st_ino and now.st_size >= self.max_file_bytes:
                        os.replace(self.file, self.file.with_name(self.file.name + ".1"))
        try:
            moved = os.stat(self.file).st_ino != mine.st_ino
        except FileNotFoundError:
            moved = True
        return self._open_file() if moved else fd

    # --- reading -------------------------------------------------------------------------

    def statistics(self) -> dict[str, int]:
        with self._ring_lock:
            return {
                "lines": len(self._lines),
                "bytes": self._bytes,
                "totalBytes": self.total_bytes,
                "dropped": self.dropped,
            }

    def read_tail(
        self,
        *,
        cursor: int | None,
        limit: int = TAIL_DEFAULT_LIMIT,
        max_bytes: int = TAIL_DEFAULT_MAX_BYTES,
    ) -> LogTail:
        """The lines after `cursor` (or the last ones when it is None), at most `limit`
        lines and `max_bytes` bytes. Blocking when a log file is configured."""
        if self.file is not None:
            return read_file_tail(self.file, cursor=cursor, limit=limit, max_bytes=max_bytes)
        with self._ring_lock:
            items = list(self._lines)
            size = self.total_bytes
        oldest = items[0][0] if items else size
        reset = cursor is not None and not oldest <= cursor <= size
        if cursor is None or reset:
            lines, truncated = _last(items, limit, max_bytes, from_start=False)
            end = size
        else:
            after = [item for item in items if item[0] >= cursor]
            lines, truncated = _last(after, limit, max_bytes, from_start=True)
            end = _end_of(lines[-1]) if truncated and lines else size
        return LogTail(
            file="(memory)",
            cursor=end,
            size=size,
            lines=[line for _, line in lines],
            truncated=truncated,
            reset=reset,
        )


def _end_of(item: tuple[int, str]) -> int:
    return item[0] + len(item[1].encode("utf-8", "replace")) + 1


def _last(
    items: list[tuple[int, str]], limit: int, max_bytes: int, *, from_start: bool
) -> tuple[list[tuple[int, str]], bool]:
    """At most `limit` items within `max_bytes`: the first ones when following a cursor
    (`from_start`), else the last ones. Returns them and whether any were left out."""
    chosen: list[tuple[int, str]] = []
    used = 0
    seq = items if from_start else list(reversed(items))
    for item in seq:
        size = len(item[1].encode("utf-8", "replace")) + 1
        if len(chosen) >= limit or used + size > max_bytes:
            break
        chosen.append(item)
        used += size
    truncated = len(chosen) < len(items)
    if not from_start:
        chosen.reverse()
    return chosen, truncated


def read_file_tail(path: Path, *, cursor: int | None, limit: int, max_bytes: int) -> LogTail:
    """`logs.tail` over a log file, as OpenClaw reads its own: blocking file I/O."""
    try:
        size = path.stat().st_size
    except OSError:
        return LogTail(file=str(path), cursor=0, size=0, lines=[])
    reset = cursor is not None and cursor > size
    start = max(0, size - max_bytes) if cursor is None or reset else cursor
    with path.open("rb") as fh:
        fh.seek(start)
        data = fh.read(max(0, min(size - start, max_bytes)))
    truncated = start > 0 and (cursor is None or reset)
    if truncated and b"\n" in data:
        data = data[data.index(b"\n") + 1 :]  # a partial first line is not a record
    end = start + len(data)
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1  # a partial last line waits for the next read
        end = start + cut
        data = data[:cut]
    lines = [line.decode("utf-8", "replace") for line in data.split(b"\n") if line]
    if len(lines) > limit:
        truncated = True
        if cursor is None or reset:
            lines = lines[-limit:]
        else:
            kept = lines[:limit]
            end = start + sum(len(line.encode("utf-8")) + 1 for line in kept)
            lines = kept
    return LogTail(
        file=str(path), cursor=end, size=size, lines=lines, truncated=truncated, reset=reset
    )


_installed: LogRing | None = None
_LEVEL_NAMES: Final = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "fatal": logging.CRITICAL,
    "silent": logging.CRITICAL + 10,
}
"""OpenClaw's `logging.level` names."""


def install_log_ring(
    *, file: Path | None = None, max_file_bytes: int | None = None, level: str | None = None
) -> LogRing:
    """The process's ring, attached to the root logger once (reconfigured on later calls:
    one gateway per process is the rule, tests start many)."""
    global _installed
    ring = _installed
    if ring is None:
        ring = _installed = LogRing()
        logging.getLogger().addHandler(ring)
    ring.file = file
    ring.max_file_bytes = max_file_bytes or DEFAULT_MAX_FILE_BYTES
    ring.setLevel(_LEVEL_NAMES.get(level or "info", logging.INFO))
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
    # The loggers' own levels (`--log-level`) are left as they are: the ring and the file
    # keep what the process logs, at `logging.level` or above.
    return ring
