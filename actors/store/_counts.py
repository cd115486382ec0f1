"""What the store's writer counts and logs (`WriterCounts`), and the snapshot of it that
`Store.statistics()` returns (`StoreStatistics`).

A failed commit is logged at once, then at most one line per `FAILURE_LOG_INTERVAL_S` (with
the count since), so a full disk or a database away does not flood the log; a refused
fenced write that nobody hears of (no waiter, no callback) is logged as rarely.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from .._errors import FencedOut
from ._ops import Append, Group, PutRow, PutRun, Write

__all__ = ["FAILURE_LOG_INTERVAL_S", "StoreStatistics", "WriterCounts"]

log = logging.getLogger("clawlane.store")

FAILURE_LOG_INTERVAL_S: Final = 10.0


@attrs.frozen
class StoreStatistics:
    """A snapshot of the writer.

    `pending`: writes submitted (including those waiting for channel space) and not yet
    committed or failed. `commits`: transactions committed. `rows_written` /
    `entries_written`: session rows upserted and transcript entries appended by them.
    `last_batch_size`: writes in the last committed transaction. `failed_commits`:
    transactions rolled back; `failed_writes`: the writes they held; `last_error`,
    `last_error_at_ms`: the last failure's message and time; `failing`: the last commit
    failed (writes have not resumed yet); `runs_written`: run journal rows;
    `fenced_out`: fenced writes refused (`FencedOut`), not counted as written;
    `unresolved`: commits that got no answer, not yet known to have committed or not.
    """

    pending: int
    commits: int
    rows_written: int
    entries_written: int
    last_batch_size: int
    failed_commits: int
    failed_writes: int = 0
    last_error: str | None = None
    last_error_at_ms: int | None = None
    failing: bool = False
    runs_written: int = 0
    fenced_out: int = 0
    unresolved: int = 0


class WriterCounts:
    """The writer's counters, and its log of failures (`path`: the store, for messages)."""

    def __init__(self, path: Path | str) -> None:
        self._path = path
        self.commits = 0
        self.failed_commits = 0
        self.rows_written = 0
        self.entries_written = 0
        self.last_batch_size = 0
        self.failed_writes = 0
        self.last_error: str | None = None
        self.last_error_at: int | None = None
        self.failing = False
        self.runs_written = 0
        self.fenced_out = 0
        self._fenced_logged_at = float("-inf")
        self._failure_logged_at = float("-inf")
        self._failures_unlogged = 0

    def snapshot(self, *, pending: int, unresolved: int) -> StoreStatistics:
        return StoreStatistics(
            pending=pending,
            commits=self.commits,
            rows_written=self.rows_written,
            entries_written=self.entries_written,
            last_batch_size=self.last_batch_size,
            failed_commits=self.failed_commits,
            failed_writes=self.failed_writes,
            last_error=self.last_error,
            last_error_at_ms=self.last_error_at,
            failing=self.failing,
            runs_written=self.runs_written,
            fenced_out=self.fenced_out,
            unresolved=unresolved,
        )

    def committed(self, writes: Sequence[Write], results: Sequence[object]) -> None:
        """A transaction of `writes` committed, with `results` (a `FencedOut` each refused)."""
        self.commits += 1
        self.last_batch_size = len(writes)
        for op, result in zip(writes, results, strict=True):
            if isinstance(result, FencedOut):
                self.fenced_out += 1
                if op.waiter is None:
                    self._report_fenced(result)
                continue
            for part in op.writes if isinstance(op, Group) else (op,):
                if isinstance(part, PutRow):
                    self.rows_written += 1
                elif isinstance(part, Append):
                    self.entries_written += len(part.items)
                elif isinstance(part, PutRun):
                    self.runs_written += 1

    def resumed(self) -> None:
        """A commit went through: if writes were failing, they have resumed."""
        if self.failing:
            log.warning("store %s: writes resumed", self._path)
            self.failing = False

    def note_failure(self, exc: BaseException, *, failing: bool = True) -> None:
        """The store failed with `exc` (`statistics().last_error`); nothing counted.
        `failing`: writes are failing now (not so for an old commit found to have failed)."""
        self.last_error = f"{type(exc).__name__}: {exc}"
        self.last_error_at = int(time.time() * 1000)
        self.failing = self.failing or failing

    def failed(self, exc: BaseException, writes: int, *, failing: bool = True) -> None:
        """A commit of `writes` writes failed with `exc`: counted and logged (the first at
        once, then at most one line per interval, with the count since)."""
        self.failed_commits += 1
        self.failed_writes += writes
        self.note_failure(exc, failing=failing)
        self._failures_unlogged += 1
        now = time.monotonic()
        if now - self._failure_logged_at < FAILURE_LOG_INTERVAL_S:
            return
        log.error(
            "store %s: a commit of %d writes failed (%s); %d failed commits since the last "
            "report, %d in all; the writes are reported to their callers as not stored",
            self._path,
            writes,
            self.last_error,
            self._failures_unlogged,
            self.failed_commits,
        )
        self._failure_logged_at = now
        self._failures_unlogged = 0

    def _report_fenced(self, refused: FencedOut) -> None:
        now = time.monotonic()
        if now - self._fenced_logged_at >= FAILURE_LOG_INTERVAL_S:
            self._fenced_logged_at = now
            log.warning("store %s: %s (%d refused in all)", self._path, refused, self.fenced_out)
