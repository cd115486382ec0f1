"""The subagent runs a gateway spawned, as tasks the spawning session controls.

`TaskBook` keeps each `sessions_spawn` run (`SpawnedRun`: its task id is its run id, the
parent and child sessions, the label, the run's record) and answers OpenClaw's `subagents`
(`list`, `wait`, `cancel`), `agents_wait` and `sessions_yield` for a calling session. A
session sees and controls the tasks of its tree: the runs it spawned and, recursively, those
its children spawned. The book holds at most `BOOK_MAX` runs; past that the oldest ended
ones are forgotten. Everything runs in the trio thread; only the waits are checkpoints.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any, Final

import attrs
import trio

from runtime.loop import now_ms

from .runs import RunRecord

__all__ = ["BOOK_MAX", "SpawnedRun", "TaskBook", "reply_text"]

BOOK_MAX: Final = 512
WAIT_MAX_S: Final = 60
RECENT_MINUTES: Final = 30
_STATUS: Final = {"queued": "queued", "running": "running", "ok": "completed", "error": "failed"}


def reply_text(record: RunRecord) -> str:
    """The text a run replied (its final payloads' text, joined)."""
    final = record.final or {}
    payloads = final.get("payloads") or []
    return "\n\n".join(
        str(p.get("text")) for p in payloads if isinstance(p, dict) and p.get("text")
    )


@attrs.define(eq=False)
class SpawnedRun:
    """One `sessions_spawn` run."""

    record: RunRecord
    parent_key: str
    child_key: str
    label: str | None
    created_at: int = attrs.field(factory=now_ms)

    @property
    def task_id(self) -> str:
        return self.record.run_id

    def status(self) -> str:
        """OpenClaw's task status: queued, running, completed, failed, timed_out, cancelled."""
        rec = self.record
        if rec.status == "aborted":
            return "timed_out" if rec.abort_reason == "timeout" else "cancelled"
        return _STATUS.get(rec.status, "failed")

    def updated_at(self) -> int:
        rec = self.record
        return rec.ended_at or rec.started_at or self.created_at

    def task(self) -> dict[str, Any]:
        """The run as a `subagents` task row."""
        rec = self.record
        row: dict[str, Any] = {
            "taskId": self.task_id,
            "runtime": "subagent",
            "status": self.status(),
            "sessionKey": self.child_key,
        }
        if self.label:
            row["label"] = self.label
        if rec.ended:
            row["deliveryStatus"] = "delivered"
            summary = reply_text(rec)
            if summary:
                row["terminalSummary"] = summary[:400]
        if rec.error:
            row["error"] = rec.error[:120]
        return row

    def completion(self) -> dict[str, Any]:
        """The run as an `agents_wait` completion."""
        rec = self.record
        status = {"ok": "done", "error": "failed"}.get(rec.status, "killed")
        if rec.status == "aborted" and rec.abort_reason == "timeout":
            status = "timeout"
        done: dict[str, Any] = {
            "runId": self.task_id,
            "status": status,
            "result": reply_text(rec),
            "sessionKey": self.child_key,
        }
        if rec.error:
            done["error"] = rec.error
        if self.label:
            done["label"] = self.label
        return done


class TaskBook:
    """The spawned runs by task id (see the module docstring)."""

    def __init__(self) -> None:
        self._runs: collections.OrderedDict[str, SpawnedRun] = collections.OrderedDict()

    def add(self, run: SpawnedRun) -> None:
        self._runs[run.task_id] = run
        if len(self._runs) > BOOK_MAX:
            ended = [k for k, r in self._runs.items() if r.record.ended]
            for key in ended[: len(self._runs) - BOOK_MAX]:
                del self._runs[key]

    def tree(self, caller: str) -> list[SpawnedRun]:
        """The runs `caller` spawned and, recursively, those its children spawned."""
        parents, seen, found = [caller], {caller}, []
        while parents:
            parent = parents.pop()
            for run in self._runs.values():
                if run.parent_key == parent:
                    found.append(run)
                    if run.child_key not in seen:
                        seen.add(run.child_key)
                        parents.append(run.child_key)
        return found

    def pending(self, caller: str) -> list[SpawnedRun]:
        """The runs `caller` spawned itself that have not ended."""
        return [r for r in self._runs.values() if r.parent_key == caller and not r.record.ended]

    # --- subagents ----------------------------------------------------------------------

    def list_view(self, caller: str, recent_minutes: int | None) -> dict[str, Any]:
        """`subagents` `list`: active tasks, and those ended within `recent_minutes`."""
        minutes = min(recent_minutes or RECENT_MINUTES, 24 * 60)
        cutoff = now_ms() - minutes * 60_000
        runs = [r for r in self.tree(caller) if not r.record.ended or r.updated_at() >= cutoff]
        runs.sort(key=lambda r: r.updated_at(), reverse=True)
        active = [_view(r) for r in runs if not r.record.ended]
        recent = [_view(r) for r in runs if r.record.ended]
        lines = [f"{len(active)} active, {len(recent)} recent subagent runs"]
        lines += [f"- {v['label'] or v['sessionKey']}: {v['status']}" for v in active + recent]
        return {
            "status": "ok",
            "action": "list",
            "requesterSessionKey": caller,
            "callerSessionKey": caller,
            "callerIsSubagent": ":subagent:" in caller,
            "total": len(runs),
            "taskTotal": len(runs),
            "tasks": [r.task() for r in runs],
            "active": active,
            "recent": recent,
            "text": "\n".join(lines),
        }

    async def wait(self, caller: str, task_ids: list[str], timeout_s: float) -> dict[str, Any]:
        """`subagents` `wait`: until every listed task of the caller's tree has ended, or
        `timeout_s` (at most 60) passed; a timeout cancels nothing. A checkpoint."""
        mine = {r.task_id: r for r in self.tree(caller)}
        runs = [mine[t] for t in dict.fromkeys(task_ids) if t in mine]
        await _wait_all((r.record for r in runs), min(timeout_s, WAIT_MAX_S))
        return {
            "status": "ok",
            "action": "wait",
            "tasks": [r.task() for r in runs],
            "pending": [r.task_id for r in runs if not r.record.ended],
            "missing": [t for t in dict.fromkeys(task_ids) if t not in mine],
        }

    def cancel(self, caller: str, task_id: str) -> dict[str, Any]:
        """`subagents` `cancel`: abort the task's run (and, through its announce, nothing
        else); a task outside the caller's tree is `forbidden`. Not a checkpoint."""
        run = next((r for r in self.tree(caller) if r.task_id == task_id), None)
        if run is None:
            return {"status": "forbidden", "error": "Task outside session tree."}
        cancelled = run.record.abort("stop")
        result: dict[str, Any] = {
            "status": "cancelled" if cancelled else "error",
            "taskId": task_id,
            "found": True,
            "cancelled": cancelled,
        }
        if not cancelled:
            result["reason"] = "the task has already ended"
        return result

    # --- agents_wait --------------------------------------------------------------------

    async def agents_wait(self, caller: str, ids: list[str], timeout_s: float) -> dict[str, Any]:
        """`agents_wait`: the listed runs' completions once they have ended, waiting up to
        `timeout_s`; runs not spawned by the caller's tree are errors. A checkpoint."""
        mine = {r.task_id: r for r in self.tree(caller)}
        errors = []
        runs = []
        for run_id in dict.fromkeys(ids):
            if run_id in mine:
                runs.append(mine[run_id])
            else:
                error = "not_owner" if run_id in self._runs else "not_found"
                errors.append({"runId": run_id, "error": error})
        await _wait_all((r.record for r in runs), timeout_s)
        result: dict[str, Any] = {
            "completed": [r.completion() for r in runs if r.record.ended],
            "pending": [r.task_id for r in runs if not r.record.ended],
        }
        if errors:
            result["errors"] = errors
            if not runs:
                result["success"] = False
        return result


def _view(run: SpawnedRun) -> dict[str, Any]:
    rec = run.record
    return {
        "runId": run.task_id,
        "sessionKey": run.child_key,
        "label": run.label,
        "status": run.status(),
        "startedAt": rec.started_at,
        "endedAt": rec.ended_at,
    }


async def _wait_all(records: Iterable[RunRecord], timeout_s: float) -> None:
    with trio.move_on_after(timeout_s):
        for record in list(records):
            await record.done.wait()
    await trio.lowlevel.checkpoint()
