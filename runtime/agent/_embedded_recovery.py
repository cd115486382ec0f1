"""The embedded runtime opened again on its store takes up the subagent tellings it left.

OpenClaw restores its subagent registry after a restart and tells each parent what it was not
told yet (`restoreSubagentRuns`, its orphan recovery): a child that had ended is announced (or
told with its yield's batch, or in its wave's settle run), and one the restart cut off ends
as `subagent run terminated`. The embedded runtime has no registry of its own; what it needs
is kept in its sessions' transcripts, as custom entries beside the runs' messages
(`_run_notes`):

- the spawning run keeps each child it spawned (`spawn_notes`: the child session, its task
  id, its task and label, how its end is told), and its `sessions_yield` the children it
  claimed (`yield_claims`);
- a subagent's own run keeps how it ended (`run_ends`, `run_end`);
- a parent's run that told a child keeps the announce or settle run it was, or the
  announces steered into it (`told_notes`, `told_by`); a settle run's kept prompt (its
  `<id>:user` row) counts too. An announce cut off by a shutdown counts as not told: its
  prompt is kept nowhere (OpenClaw keeps no row of it).

`recover_subagents` (when the runtime opens as `async with` on a store that lists its
sessions) reads every parent's transcript, puts each child it spawned back in the task book
(`_subagent_book`) with its outcome (its last run's end; a child with no end of its task's
run, or one cut off by a shutdown, failed with `subagent run terminated`), and follows
those not told through the usual telling (`_yield_batch.tell`): an announce, its yield's
batch, its wave; children told on their own whose wave no settle run told yet have their
waves settled; a child paused by its own `sessions_yield` (`waitFor: "message"`) waits for
its continuation again (OpenClaw's restored `sessions_yield` pause). A telling made then
keeps its note in turn, so opening the runtime again tells nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..llm._types import Message
from ..loop._agent import RunProgress, now_ms
from ..sessions._sessions import MessageEntry, TranscriptEntry, parse_session_key
from ._announce import TERMINATED, announce_task
from ._compaction import RunNote
from ._embedded_sessions import ChildLink, EmbeddedSessions, TrackedRun
from ._run import RunState
from ._run_notes import SpawnNote, run_ends, run_notes, spawn_notes, told_notes, yield_claims
from ._subagent_book import SpawnedRun
from ._yield_batch import settled_children, take_waves

__all__ = ["recover_subagents", "run_end", "told_by", "turn_notes"]

log = logging.getLogger("clawlane.embedded")

StartSoon = Callable[..., Any]


def turn_notes(
    state: RunState,
    progress: RunProgress,
    messages: Sequence[Message],
    steered: Iterable[str | None],
) -> list[RunNote]:
    """`run_notes` for run `state` of the embedded runtime (`steered`: the keys its inbox
    took): its yield's claim, the subagents it spawned, what it told, a subagent's end."""
    return run_notes(
        progress,
        messages,
        state.run_id,
        state.yield_claim,
        spawns=state.spawns,
        told=told_by(state, steered),
        ended=run_end(state),
    )


def told_by(state: RunState, steered: Iterable[str | None]) -> list[str]:
    """The announce and settle runs whose telling run `state` carried: itself, when it is
    one, and the announces steered into it (`steered`: the keys its inbox took); none when
    a shutdown cut it off (an announce's prompt is kept nowhere: it is told again)."""
    if state.aborted and state.abort_reason == "shutdown":
        return []
    runs = [k for k in steered if k and announce_task(k)]
    if announce_task(state.run_id) or settled_children(state.run_id):
        runs.insert(0, state.run_id)
    return runs


def run_end(state: RunState) -> dict[str, Any] | None:
    """How a subagent session's run ended, kept beside its messages (None for the run of a
    session that is no subagent)."""
    if ":subagent:" not in state.session_key:
        return None
    return {
        "runId": state.run_id,
        "status": state.status,
        "abortReason": state.abort_reason,
        "error": state.error,
        "startedAt": state.started_at,
        "endedAt": state.ended_at,
        "final": state.final,
    }


async def recover_subagents(
    store: Any, sessions: EmbeddedSessions, start_soon: StartSoon
) -> list[str]:
    """Put the children the store's parents spawned back in `sessions`' book and start
    telling (`start_soon`, in the runtime's nursery) what their parents were not told (see
    the module docstring). Returns the task ids followed. A checkpoint; raises what the
    store's listing raises (a parent whose transcript cannot be read is logged and left)."""
    lister = getattr(store, "list_sessions", None)
    if lister is None:
        return []
    owed: list[SpawnedRun] = []
    told: list[SpawnedRun] = []
    for row in await lister(limit=None):
        if not row.childSessions:
            continue
        try:
            entries = await store.load_entries(row.sessionId)
            found = await _children(store, sessions, row.key, entries)
        except Exception:
            log.exception("could not read the subagents of %s", row.key)
            continue
        for run in found:
            if not run.delivered:
                owed.append(run)
            elif not run.waved and not run.requester_yielded:
                told.append(run)
    for run in owed:
        start_soon(sessions._follow, run)
    for run in told:
        run.ready = True
    _resettle(sessions, (r.parent_key for r in told), start_soon)
    return [r.task_id for r in owed]


async def _children(
    store: Any, sessions: EmbeddedSessions, parent_key: str, entries: Sequence[TranscriptEntry]
) -> list[SpawnedRun]:
    """The children the runs of `parent_key` (its transcript `entries`) spawned, back in the
    book with their outcomes and what of their ends was told."""
    spawned = spawn_notes(entries)
    if not spawned:
        return []
    keys = (e.idempotencyKey for e in entries if isinstance(e, MessageEntry))
    runs = told_notes(entries) | {k.removesuffix(":user") for k in keys if k}
    announced = {announce_task(r) for r in runs}
    settled = {child for r in runs for child in settled_children(r)}
    claims = yield_claims(entries)
    found = []
    for requester, note in spawned:
        if sessions.book.get(note.run_id) is not None:
            continue
        record = await _outcome(store, note)
        link = ChildLink(
            parentKey=parent_key,
            parentAgent=note.parent_agent,
            label=note.label,
            announce=note.announce,
            cleanup=note.cleanup,
            requesterRun=requester,
            completionTarget=note.completion_target,
            requesterSessionId=note.requester_session,
            attachmentsDir=note.attachments_dir,
        )
        run = SpawnedRun(record, parent_key, note.child_key, note.label, link=link)
        run.created_at, run.asked = note.created_at, note.task
        run.suppressed = record.status == "aborted" and record.abort_reason == "stop"
        claim = claims.get(note.run_id)
        if claim is not None and claim[0] == requester:
            sessions.book.restore_claim(run, claim[1].generation)
            done = note.run_id in settled
            run.settled = run.batched = done
        else:
            done = note.run_id in announced or not run.announce or run.suppressed
            run.settled, run.waved = done, note.run_id in settled
        run.delivered = done
        sessions.book.add(run)
        found.append(run)
    return found


async def _outcome(store: Any, note: SpawnNote) -> TrackedRun:
    """Child `note`'s task as it ended: its last run's end, kept in its transcript (a run
    cut off by a shutdown, or no end of its task's run: `subagent run terminated`). A run
    that ended with its own `sessions_yield` leaves the task paused (`_yield_batch.
    wait_child`): a continuation takes it on (`sessions_send`), as before the close."""
    parsed = parse_session_key(note.child_key)
    row = await store.get_session(note.child_key)
    record = TrackedRun(
        run_id=note.run_id,
        session_key=note.child_key,
        session_id=row.sessionId if row is not None else "",
        agent_id=parsed.agent_id if parsed is not None else note.parent_agent,
    )
    ends = run_ends(await store.load_entries(row.sessionId)) if row is not None else []
    ids = [end.get("runId") for end in ends]
    last = ends[-1] if note.run_id in ids else None
    if last is None or last.get("abortReason") == "shutdown":
        record.status, record.error = "error", TERMINATED
        record.started_at = last.get("startedAt") if last else None
        record.ended_at = (last.get("endedAt") if last else None) or now_ms()
    else:
        record.status = last.get("status") or "error"
        record.abort_reason = last.get("abortReason")
        record.aborted = record.status == "aborted"
        record.error = last.get("error")
        record.started_at, record.ended_at = last.get("startedAt"), last.get("endedAt")
        record.final = last.get("final")  # (one yielded waits for its continuation)
    record.done.set()
    return record


def _resettle(sessions: EmbeddedSessions, parents: Iterable[str], start_soon: StartSoon) -> None:
    """Settle the waves of `parents` and their ancestors that are due now, each in a task
    of its own (as `_yield_batch.tell` does after a telling)."""
    seen: set[str] = set()
    for parent in dict.fromkeys(parents):
        key: str | None = parent
        while key is not None and key not in seen:
            seen.add(key)
            for wave in take_waves(sessions.book, key):
                start_soon(_settle, sessions, wave)
            key = sessions.book.parent_of(key)


async def _settle(sessions: EmbeddedSessions, wave: list[SpawnedRun]) -> None:
    """A wave the runtime's opening rebuilt, told. Never raises but `Cancelled`."""
    try:
        await sessions.settle(wave[0], wave)
    except Exception:
        log.exception("could not settle the subagents of %s", wave[0].parent_key)
