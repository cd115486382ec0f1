"""The subagent runs a host spawned, as tasks the spawning session controls.

`TaskBook` keeps each `sessions_spawn` run (`SpawnedRun`: its task id is its run id, the
parent and child sessions, the label, the run's record) and answers OpenClaw's `subagents`
(`list`, `wait`, `cancel`), `agents_wait` and `sessions_yield`'s claim (`claim_yield`,
`unsettled`: a run may yield for the children it spawned itself) for a calling session. A
session sees and controls the tasks of its tree: the runs it spawned and, recursively, those
its children spawned. The book holds at most `BOOK_MAX` runs; past that the oldest ended
ones are forgotten. Everything runs in the trio thread; only the waits are checkpoints.

The book is the hosts' one home of this (the gateway's `actors._subagents`, the embedded
runtime's `_embedded_sessions`): it reads a run through `TaskRecord` (the gateway's
`actors.RunRecord`, the embedded runtime's `TrackedRun`) and its tie to the parent through
`TaskLink` (the gateway's journaled `SpawnLink`).
"""

from __future__ import annotations

import collections
import datetime
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

import attrs
import trio

from ..loop._agent import now_ms
from ._run import AbortReason, RunStatus

__all__ = [
    "BOOK_MAX",
    "SpawnedRun",
    "TaskBook",
    "TaskLink",
    "TaskRecord",
    "pending_children_message",
    "reply_text",
]

BOOK_MAX: Final = 512
WAIT_MAX_S: Final = 60
RECENT_MINUTES: Final = 30
_STATUS: Final = {"queued": "queued", "running": "running", "ok": "completed", "error": "failed"}


class TaskRecord(Protocol):
    """What the book reads of a spawned run and how it stops it."""

    run_id: str
    status: RunStatus
    abort_reason: AbortReason | None
    started_at: int | None
    ended_at: int | None
    error: str | None
    final: dict[str, Any] | None
    done: trio.Event

    @property
    def ended(self) -> bool: ...

    def abort(self, reason: AbortReason) -> bool:
        """Ask the run to stop; False if it already ended. Not a checkpoint."""
        ...


class TaskLink(Protocol):
    """A spawned run's tie to the session that spawned it (the journal's field names)."""

    @property
    def parentKey(self) -> str: ...

    @property
    def parentAgent(self) -> str: ...

    @property
    def label(self) -> str | None: ...

    @property
    def announce(self) -> bool:
        """Its result is announced to the parent (`expectsCompletionMessage` not false)."""
        ...

    @property
    def cleanup(self) -> str | None: ...

    @property
    def requesterRun(self) -> str | None:
        """The parent's run that spawned it."""
        ...


def pending_children_message(children: list[dict[str, Any]]) -> str:
    """OpenClaw's `already_pending` message for the pending `children` of a session."""
    paused = [c for c in children if c["state"] == "paused"]
    active = [c for c in children if c["state"] != "paused"]
    parts = []
    if active:
        owner = (
            "An earlier turn of this session already yielded for"
            if any(c["wakeArmed"] for c in active)
            else "An earlier turn of this session already spawned"
        )
        parts.append(
            f"{owner} {_count(len(active))} whose completion is still pending: "
            f"{'; '.join(map(_describe, active))}. Their completion will arrive in this "
            "session as a later turn; do not re-spawn, re-send, or poll to wake them."
        )
    if paused:
        one = len(paused) == 1
        parts.append(
            f"{_count(len(paused))} spawned by an earlier turn of this session "
            f"{'is' if one else 'are'} paused by {'its' if one else 'their'} own "
            "sessions_yield and will not complete until an incoming continuation arrives: "
            f"{'; '.join(map(_describe, paused))}. Send that continuation with sessions_send "
            "if this session owns it; otherwise the work stays waiting."
        )
    parts.append("This turn owns no new claim, so no yield is needed: end this turn normally.")
    return " ".join(parts)


def _count(n: int) -> str:
    return f"{n} {'child session' if n == 1 else 'child sessions'}"


def _describe(child: dict[str, Any]) -> str:
    key = child["childSessionKey"]
    name = f"{child['label']} ({key})" if child.get("label") else key
    started = child.get("startedAt")
    when = ""
    if isinstance(started, int):
        stamp = datetime.datetime.fromtimestamp(started / 1000, datetime.UTC)
        when = f", started {stamp.isoformat(timespec='milliseconds').replace('+00:00', 'Z')}"
    return f"{name}, {child['state']}{when}"


def reply_text(record: TaskRecord) -> str:
    """The text a run replied (its final payloads' text, joined)."""
    final = record.final or {}
    payloads = final.get("payloads") or []
    return "\n\n".join(
        str(p.get("text")) for p in payloads if isinstance(p, dict) and p.get("text")
    )


@attrs.define(eq=False)
class SpawnedRun:
    """One `sessions_spawn` run."""

    record: TaskRecord
    """Its run; after a continuation resumed it (`sessions_yield` `waitFor: "message"`),
    the continuation's."""
    parent_key: str
    child_key: str
    label: str | None
    link: TaskLink
    """What the journal keeps of it: the parent, whether it announces, the spawning run."""
    created_at: int = attrs.field(factory=now_ms)
    asked: str = ""
    """What it was asked to do (`sessions_spawn`'s `task`)."""
    requester_done: trio.Event | None = None
    """Set when the spawning run has ended (None: not known, as after a restart): its end
    is not told before (`_yield_batch`)."""
    requester_yielded: bool = False
    """The spawning run ended its turn with `sessions_yield` waiting for it."""
    yield_generation: int = 0
    """Which of its parent's yields claimed it (1 for the first)."""
    settled: bool = False
    """Its run has ended for good (not paused): its end waits only for its telling."""
    batched: bool = False
    """Its end is told in its yield's batch (`_yield_batch.take_batch`)."""
    ready: bool = False
    """No yield claimed it, it was told on its own and its spawning run has ended: it waits
    only for its wave (`_yield_batch.take_waves`)."""
    waved: bool = False
    """Its wave was dealt with (told together in a settle run, or nothing to tell)."""
    delivered: bool = False
    """Its end was dealt with: announced to the parent, or nothing to announce."""
    paused: bool = False
    """Its run ended with `sessions_yield` `waitFor: "message"`: it waits for a
    continuation (`sessions_send`), and the parent hears of it only after that."""
    resumed: trio.Event = attrs.field(factory=trio.Event)
    """Set when a continuation takes a paused task on (or a stop ends it)."""
    suppressed: bool = False
    """Stopped by its parent's abort (a cascade): nothing is announced."""
    task_id: str = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.task_id = self.record.run_id

    @property
    def requester_run(self) -> str | None:
        """The parent's run that spawned it (a `sessions_yield` of that run claims it)."""
        return self.link.requesterRun

    @property
    def announce(self) -> bool:
        """Its result is announced to the parent (`expectsCompletionMessage` not false)."""
        return self.link.announce

    @property
    def private(self) -> bool:
        """Its end is told privately, to the parent session it was spawned from only
        (`completionTarget: "parent"`; a link that has no such field: no)."""
        return getattr(self.link, "completionTarget", None) == "parent"

    @property
    def requester_session(self) -> str | None:
        """The id of the parent session it was spawned from (kept for a private one)."""
        found = getattr(self.link, "requesterSessionId", None)
        return found if isinstance(found, str) else None

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
        self._yields: dict[str, int] = {}
        """How many yields of each session claimed children."""
        self.on_claim: Callable[[str, str, int, list[SpawnedRun]], None] | None = None
        """Told `(caller, run_id, generation, children)` of each claim (`claim_yield`)."""

    def add(self, run: SpawnedRun) -> None:
        self._runs[run.task_id] = run
        if len(self._runs) > BOOK_MAX:
            ended = [k for k, r in self._runs.items() if _done_with(r)]
            for key in ended[: len(self._runs) - BOOK_MAX]:
                del self._runs[key]

    def tree(self, caller: str, run_id: str | None = None) -> list[SpawnedRun]:
        """The runs `caller` spawned (only its run `run_id`, when given) and, recursively,
        those its children spawned."""
        parents, seen, found = [caller], {caller}, []
        while parents:
            parent = parents.pop()
            for run in self._runs.values():
                if run.parent_key == parent and (
                    parent != caller or run_id is None or run.requester_run == run_id
                ):
                    found.append(run)
                    if run.child_key not in seen:
                        seen.add(run.child_key)
                        parents.append(run.child_key)
        return found

    def get(self, task_id: str) -> SpawnedRun | None:
        """The task `task_id` (its first run's id), if the book has it."""
        return self._runs.get(task_id)

    def children(self, parent_key: str) -> list[SpawnedRun]:
        """The runs session `parent_key` spawned itself, in the order they were spawned."""
        return [r for r in self._runs.values() if r.parent_key == parent_key]

    def parent_of(self, child_key: str) -> str | None:
        """The session that spawned subagent session `child_key` (None: no task of it)."""
        return next(
            (r.parent_key for r in reversed(self._runs.values()) if r.child_key == child_key),
            None,
        )

    def by_child_run(self, child_key: str, run_id: str) -> SpawnedRun | None:
        """The task of subagent session `child_key` whose run is now `run_id`."""
        return next(
            (
                r
                for r in reversed(self._runs.values())
                if r.child_key == child_key and r.record.run_id == run_id
            ),
            None,
        )

    def paused(self, child_key: str) -> SpawnedRun | None:
        """The task of subagent session `child_key` paused for a continuation, if any: marked
        so, or its run just ended with `sessions_yield` (its follower not told yet)."""
        return next(
            (
                r
                for r in reversed(self._runs.values())
                if r.child_key == child_key and (r.paused or _ended_yielded(r))
            ),
            None,
        )

    def pause(self, child_key: str, run_id: str) -> bool:
        """Subagent `child_key`'s run `run_id` yields for a continuation (`sessions_yield`
        `waitFor: "message"`): its task waits, announcing nothing, until `resume`. False
        when that run is no task of this book's."""
        run = self.by_child_run(child_key, run_id)
        if run is None:
            return False
        run.paused = True
        return True

    @staticmethod
    def resume(run: SpawnedRun, record: TaskRecord) -> None:
        """Run `record` (a continuation sent to the paused child, or the announce of its
        own children) carries `run`'s task on: the task's result, and its announce, are
        that run's (unless it yields again)."""
        run.record = record
        run.paused = False
        run.resumed.set()
        run.resumed = trio.Event()

    def pending(self, caller: str) -> list[SpawnedRun]:
        """The runs `caller` spawned itself that have not ended."""
        return [
            r
            for r in self._runs.values()
            if r.parent_key == caller and (not r.record.ended or r.paused)
        ]

    # --- sessions_yield ------------------------------------------------------------------

    def claim_yield(self, caller: str, run_id: str) -> bool:
        """Whether run `run_id` of `caller` spawned children that announce back (a
        `sessions_yield` of that run is then accepted: each is marked as waited for)."""
        mine = [
            r
            for r in self._runs.values()
            if r.parent_key == caller and r.requester_run == run_id and r.announce
        ]
        if mine:
            generation = self._yields[caller] = self._yields.get(caller, 0) + 1
            for run in mine:
                run.requester_yielded = True
                run.yield_generation = generation
            if self.on_claim is not None:
                self.on_claim(caller, run_id, generation, mine)
        return bool(mine)

    def restore_claim(self, run: SpawnedRun, generation: int) -> None:
        """After a restart: `run` was claimed by its session's yield number `generation`
        (kept in the transcript: `_run_notes.yield_claims`)."""
        run.requester_yielded, run.yield_generation = True, generation
        self._yields[run.parent_key] = max(self._yields.get(run.parent_key, 0), generation)

    def batch(self, run: SpawnedRun) -> list[SpawnedRun]:
        """The children whose ends are told together with `run`'s: those the same yield of
        the same run claimed (`run` alone when no yield claimed it), oldest first."""
        if not run.requester_yielded:
            return [run]
        return [
            r
            for r in self._runs.values()
            if r.parent_key == run.parent_key
            and r.requester_run == run.requester_run
            and r.requester_yielded
            and r.yield_generation == run.yield_generation
        ]

    def unsettled(self, caller: str, exclude_run: str | None) -> list[dict[str, Any]]:
        """OpenClaw's pending children of `caller` not spawned by run `exclude_run`: the
        latest announcing run of each child that is running, paused (yielded for a message)
        or completing (its announce not yet handed over), oldest first."""
        latest: dict[str, SpawnedRun] = {}
        for run in self._runs.values():
            if run.parent_key == caller and run.announce:
                latest[run.child_key] = run
        children = []
        for run in latest.values():
            if exclude_run is not None and run.requester_run == exclude_run:
                continue
            if not run.record.ended:
                state = "running"
            elif run.paused:
                state = "paused"
            elif not run.delivered:
                state = "completing"
            else:
                continue
            child: dict[str, Any] = {"runId": run.task_id, "childSessionKey": run.child_key}
            if run.label:
                child["label"] = run.label
            child["startedAt"] = run.record.started_at or run.created_at
            child |= {"state": state, "wakeArmed": run.requester_yielded}
            children.append(child)
        return sorted(children, key=lambda c: c["startedAt"])

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
        """`subagents` `wait`, as OpenClaw's: until one of the listed tasks of the caller's
        tree has ended (`reason: completed`, those ended in `completed`), or `timeout_s` (at
        most 60) passed (`timeout`); a listed task not in the tree answers at once
        (`unavailable`, listed). A timeout cancels nothing. A checkpoint."""
        wanted = list(dict.fromkeys(task_ids))
        mine = {r.task_id: r for r in self.tree(caller)}
        runs = [mine[t] for t in wanted if t in mine]
        unavailable = [t for t in wanted if t not in mine]
        if runs and not unavailable and not any(r.record.ended for r in runs):
            await _wait_any([r.record for r in runs], min(timeout_s, WAIT_MAX_S))
        await trio.lowlevel.checkpoint()
        completed = [r.task_id for r in runs if r.record.ended]
        reason = "unavailable" if unavailable else "completed" if completed else "timeout"
        result: dict[str, Any] = {
            "status": "ok",
            "action": "wait",
            "reason": reason,
            "tasks": [r.task() for r in runs],
            "completed": completed,
            "attention": [],
        }
        if unavailable:
            result["unavailable"] = unavailable
        return result

    def cancel(self, caller: str, task_id: str) -> dict[str, Any]:
        """`subagents` `cancel`: abort the task's run and its descendants' (they announce
        nothing; the task itself announces its cancellation); a task outside the caller's
        tree is `forbidden`. Not a checkpoint."""
        run = next((r for r in self.tree(caller) if r.task_id == task_id), None)
        if run is None:
            return {"status": "forbidden", "error": "Task outside session tree."}
        cancelled = run.record.abort("stop")
        for below in self.tree(run.child_key):  # OpenClaw's cascade: its descendants too
            below.suppressed = True
            below.record.abort("stop")
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


def _ended_yielded(run: SpawnedRun) -> bool:
    """`run`'s run ended its turn with `sessions_yield` (and no abort stopped its task)."""
    rec = run.record
    if run.suppressed or not rec.ended or rec.status != "ok":
        return False
    meta = (rec.final or {}).get("meta") or {}
    return meta.get("yielded") is True


def _done_with(run: SpawnedRun) -> bool:
    """Whether the book may forget `run`: ended, and told (with its yield's batch, else in
    its wave)."""
    told = run.delivered if run.requester_yielded else run.waved
    return run.record.ended and not run.paused and told


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


async def _wait_any(records: list[TaskRecord], timeout_s: float) -> None:
    """Until one of `records` has ended, or `timeout_s` passed."""

    async def first(record: TaskRecord, scope: trio.CancelScope) -> None:
        await record.done.wait()
        scope.cancel()

    with trio.move_on_after(timeout_s):
        async with trio.open_nursery() as nursery:
            for record in records:
                nursery.start_soon(first, record, nursery.cancel_scope)


async def _wait_all(records: Iterable[TaskRecord], timeout_s: float) -> None:
    with trio.move_on_after(timeout_s):
        for record in list(records):
            await record.done.wait()
    await trio.lowlevel.checkpoint()
