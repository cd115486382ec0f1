"""The audit recorder: the runs' and tool calls' lifecycle events, projected into the audit
log (`actors.store._audit`) off the runs' path, as OpenClaw's gateway records its ledger.

The hub hands it each `lifecycle` and `tool` event as it is emitted (`EventHub.audit`);
`AuditRecorder.record` projects it into one row (a few dict reads, no I/O) and puts it on a
bounded queue (`queue_max`, OpenClaw's 4096; a deque, and an event set only to wake a
writer that waits: cheaper than a memory channel, at two events a run, with the same bound
and order). A full queue drops the event: it is
counted (`statistics().dropped`) and logged at most once a minute, and the run goes on (the
log is best effort, as OpenClaw says of its own). The writer task (`run`) takes what is
waiting and hands it to the store's next group commit (`Store.add_audit`: inserted with the
batch's other audit rows as it ends, never cutting its multi-row inserts), then waits for
that commit before taking more: while one commit is in flight the next batch gathers.

The projection is OpenClaw's: a run's `lifecycle` start is `agent.run.started`; its end is
`agent.run.finished`, `succeeded`, or `cancelled` (`run_cancelled`) when it was aborted,
`timed_out` (`run_timed_out`) when its time ran out, `failed` (`run_failed`) for an error;
a tool's `start` is `tool.action.started` and its `result` `tool.action.finished`,
`succeeded`, `failed` (`tool_failed`), or `blocked` (`tool_blocked`) when a plugin or the
policy refused the call. The actor is the run's agent; the tool call id is kept as its
SHA-256, a tool name that is not a tool name as `unknown`. `logging.audit.enabled: false`
stops new records (those kept are still listed until they expire).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

import attrs
import trio

from .._errors import StoreError
from ..store import Store

__all__ = ["QUEUE_MAX", "AuditRecorder", "AuditStatistics", "audit_row"]

log = logging.getLogger("clawlane.audit")

QUEUE_MAX: Final = 4096
BATCH_MAX: Final = 2048
_LOG_INTERVAL_S: Final = 60.0
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_:.-]{1,64}")
_BLOCKED: Final = "tool call blocked"


@attrs.frozen
class AuditStatistics:
    """`recorded`: events handed to the store; `dropped`: events dropped (the queue was
    full); `failed`: events whose batch failed to commit; `pending`: events waiting."""

    recorded: int
    dropped: int
    failed: int
    pending: int


def _run_end(data: dict[str, Any]) -> tuple[str, str | None]:
    if data.get("phase") == "error":
        return "failed", "run_failed"
    if data.get("aborted"):
        if data.get("stopReason") == "timeout":
            return "timed_out", "run_timed_out"
        return "cancelled", "run_cancelled"
    return "succeeded", None


def _tool_end(data: dict[str, Any]) -> tuple[str, str | None]:
    if not data.get("isError"):
        return "succeeded", None
    result = data.get("result")
    content = result.get("content") if isinstance(result, dict) else None
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, dict) else None
    if isinstance(text, str) and text.startswith(_BLOCKED):
        return "blocked", "tool_blocked"
    return "failed", "tool_failed"


def audit_row(
    run_id: str,
    seq: int,
    ts: int,
    stream: str,
    data: dict[str, Any],
    agent_id: str | None,
    session_key: str | None,
    session_id: str | None,
) -> tuple[Any, ...] | None:
    """The audit row (`actors.store._audit.COLUMNS` without `event_id`) of one agent event,
    or None when it is none of the audited ones. Not a checkpoint."""
    phase = data.get("phase")
    tool_name = tool_call_id = None
    if stream == "lifecycle":
        if phase == "start":
            occurred, kind, action = data.get("startedAt"), "agent_run", "agent.run.started"
            status, error_code = "started", None
        elif phase in ("end", "error"):
            occurred, kind, action = data.get("endedAt"), "agent_run", "agent.run.finished"
            status, error_code = _run_end(data)
        else:
            return None
    elif stream == "tool" and phase in ("start", "result"):
        kind = "tool_action"
        occurred = None
        name = data.get("name")
        name = name.strip() if isinstance(name, str) else ""
        if not name:
            return None
        tool_name = name if _TOOL_NAME.fullmatch(name) else "unknown"
        call_id = data.get("toolCallId")
        if isinstance(call_id, str) and call_id:
            tool_call_id = "sha256:" + hashlib.sha256(call_id.encode()).hexdigest()
        if phase == "start":
            action, status, error_code = "tool.action.started", "started", None
        else:
            action = "tool.action.finished"
            status, error_code = _tool_end(data)
    else:
        return None
    at = occurred if isinstance(occurred, int) and occurred >= 0 else ts
    agent = agent_id or "unknown"
    return (
        f"{at}:{run_id}:{seq}:{action}",
        seq,
        at,
        kind,
        action,
        status,
        error_code,
        "agent" if agent_id else "system",
        agent,
        agent,
        session_key or None,
        session_id or None,
        run_id,
        tool_call_id,
        tool_name,
    )


class AuditRecorder:
    """Records the audited events of the runs into `store`'s audit log (see the module
    docstring). `enabled()` is read for each event (`logging.audit.enabled`)."""

    def __init__(
        self, store: Store, enabled: Callable[[], bool], *, queue_max: int = QUEUE_MAX
    ) -> None:
        self.store = store
        self._enabled = enabled
        self._queue: deque[tuple[Any, ...]] = deque()
        self._queue_max = queue_max
        self._arrived = trio.Event()
        """Set by `record` when the writer waits for a row (`_waiting`)."""
        self._waiting = False
        self._handed = 0
        """1 when the queue's oldest row came as the writer waited: as a channel hands a
        waiting receiver its value, it does not count toward `queue_max`."""
        self._enqueued = 0
        self._settled = 0
        self._recorded = 0
        self._dropped = 0
        self._failed = 0
        self._progress = trio.Event()
        self._flushing = 0
        """Flushes waiting on `_progress` (none: a commit makes no new event)."""
        self._logged_at = float("-inf")
        self._running = False

    def statistics(self) -> AuditStatistics:
        """Not a checkpoint."""
        return AuditStatistics(
            recorded=self._recorded,
            dropped=self._dropped,
            failed=self._failed,
            pending=self._enqueued - self._settled,
        )

    def record(
        self,
        run_id: str,
        seq: int,
        ts: int,
        stream: str,
        data: dict[str, Any],
        agent_id: str | None,
        session_key: str | None,
        session_id: str | None,
    ) -> None:
        """One agent event (the hub calls it for `lifecycle` and `tool` events). Never
        blocks, not a checkpoint: a full queue drops the event (counted)."""
        if not self._enabled():
            return
        row = audit_row(run_id, seq, ts, stream, data, agent_id, session_key, session_id)
        if row is None:
            return
        if self._waiting:  # handed to the waiting writer, beyond the bound as by a channel
            self._waiting = False
            self._handed = 1
            self._arrived.set()
        elif len(self._queue) - self._handed >= self._queue_max:
            self._dropped += 1
            now = time.monotonic()
            if now - self._logged_at >= _LOG_INTERVAL_S:
                self._logged_at = now
                log.warning("audit: the queue is full; %d events dropped", self._dropped)
            return
        self._queue.append(row)
        self._enqueued += 1

    async def flush(self) -> None:
        """Wait until every event recorded before the call is in the store (or was lost
        with a failed commit). When the writer task is not running (not yet, or cancelled,
        as at shutdown) the caller writes what waits itself. A checkpoint."""
        target = self._enqueued
        while self._settled < target:
            if self._running:
                self._flushing += 1
                try:
                    await self._progress.wait()
                finally:
                    self._flushing -= 1
                continue
            rows = self._take(BATCH_MAX)
            if not rows:
                break
            await self._write(rows)
        await trio.lowlevel.checkpoint()

    async def run(self) -> None:
        """The writer task: insert what waits, one batch per commit of the store. Runs
        until cancelled; a batch taken when it is cancelled is still handed to the store
        (its commit not waited for), and what is left for `flush`."""
        self._running = True
        try:
            while True:
                if not self._queue:
                    if self._arrived.is_set():
                        self._arrived = trio.Event()
                    self._waiting = True
                    try:
                        await self._arrived.wait()
                    finally:
                        self._waiting = False
                    continue
                await self._write(self._take(BATCH_MAX))
        finally:
            self._running = False
            self._progress.set()  # a flush waiting on this task writes what is left

    def _take(self, most: int) -> list[tuple[Any, ...]]:
        """What waits in the queue, up to `most` rows, oldest first. Not a checkpoint."""
        queue = self._queue
        self._handed = 0
        if len(queue) <= most:
            rows = list(queue)
            queue.clear()
            return rows
        return [queue.popleft() for _ in range(most)]

    async def _write(self, rows: list[tuple[Any, ...]]) -> None:
        try:
            added = await self.store.add_audit(rows, int(time.time() * 1000))
        except StoreError as exc:
            self._failed += len(rows)
            log.warning("audit: %d events not recorded: %s", len(rows), exc)
        else:
            if added:
                self._recorded += len(rows)
            else:
                self._failed += len(rows)
        finally:
            self._settled += len(rows)
            if self._flushing:
                self._progress.set()
                self._progress = trio.Event()
