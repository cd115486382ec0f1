"""Startup: what the run journal (`actors.store._journal`) says about the previous process.

`recover_runs` runs once, before the gateway listens:

- Runs still `accepted` were acknowledged and had not ended when the process stopped
  (killed, crashed, power lost). With `interrupted: "fail"` (the default) each is reported
  failed: its session's transcript gets the request's message and an assistant message
  saying the run was interrupted, the session row says the last run failed
  (`status: "failed"`, `abortedLastRun`, `lastRunId`), its journal row ends as `error`,
  and its record (restored, ended with error `INTERRUPTED`) answers `agent.wait`. With
  `"rerun"` each is queued again on its session, in the order the requests were received,
  with no connection attached (`agent.wait`, `runs.replay`, or a retry of its key follow
  it); a run interrupted `MAX_ATTEMPTS` times is reported failed instead.
- Runs ended within the idempotency cache's TTL come back as ended records, so that
  `agent.wait` answers for them and a retried key answers from the cache instead of
  running again (the transports rebuild the cached responses from `RecoveredRun`).

The writes made for a session's runs carry its actor's fence (`SessionActor.fence`, in
cluster mode), as the actor's own do.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs
import msgspec

from runtime.llm import AssistantMessage, Message, TextContent, UserMessage
from runtime.loop import now_ms
from runtime.protocol import GatewayError
from runtime.sessions import marked_prompt, prompt_kept

from ._admission import Admission
from ._errors import StoreError
from .runs import DEDUPE_MAX, DEDUPE_TTL_S, EventHub, RunRecord
from .session import RunRequest
from .store import (
    INTERRUPTED,
    AcceptedRun,
    JournalRow,
    RunOutcome,
    SpawnLink,
    WriteGroup,
    end_unless_ended,
    ended_row,
    usage_write,
)

if TYPE_CHECKING:
    from ._supervisor import Supervisor

log = logging.getLogger("clawlane.recovery")

InterruptedRuns = Literal["fail", "rerun"]
MAX_ATTEMPTS: Final = 2
"""A run executes at most this often (the first time, then once more after a restart)."""


@attrs.frozen
class RecoveredRun:
    """A run the journal knew: `kind` names its idempotency cache; `age_s` is how long ago
    it ended (0 for one ended or queued again by the recovery)."""

    kind: str
    record: RunRecord
    age_s: float
    interrupted: bool = False
    """Accepted and not ended when the previous process stopped (reported failed or
    queued again)."""
    spawn: SpawnLink | None = None
    """A subagent's run: the session that spawned it (`actors._subagents` announces it)."""


@attrs.frozen
class RecoveryReport:
    runs: list[RecoveredRun]
    interrupted: int
    """Runs accepted and not ended: reported failed."""
    rerun: int
    """Runs accepted and not ended: queued again."""


def _restored(row: JournalRow, outcome: RunOutcome) -> RunRecord:
    return RunRecord(
        run_id=row.run_id,
        session_key=row.session_key,
        session_id=row.session_id,
        agent_id=row.agent_id,
        accepted_at=row.accepted_at,
        status=outcome.status,
        started_at=outcome.startedAt,
        ended_at=row.ended_at,
        error=outcome.error,
        aborted=outcome.status == "aborted",
        abort_reason=outcome.abortReason,  # type: ignore[arg-type]
        final=outcome.final,
        restored=True,
    )


async def recover_runs(
    sup: Supervisor,
    *,
    interrupted: InterruptedRuns = "fail",
    ttl_s: float = DEDUPE_TTL_S,
    keep: int = DEDUPE_MAX,
    pending_too: bool = True,
) -> RecoveryReport:
    """Report (or queue again) the runs the previous process accepted and did not end;
    restore the ended ones of the last `ttl_s` (at most `keep`). A checkpoint; call it
    before serving. Raises `StoreError`. `pending_too=False` (a cluster node: the journal
    is shared, and runs not ended may be another live node's) leaves the runs not ended
    alone: the cluster reports those of a lost node (`report_lost`)."""
    wall = time.time()
    rows = await sup.store.load_runs(since_ms=int((wall - ttl_s) * 1000))
    ended = sorted((r for r in rows if r.ended), key=lambda r: r.ended_at or 0)[-keep:]
    recovered: list[RecoveredRun] = []
    for row in ended:
        try:
            outcome = row.outcome()
        except msgspec.DecodeError:
            outcome = RunOutcome(status="error", error="the run's stored outcome is unreadable")
        rec = _restored(row, outcome)
        sup.registry.add(rec)
        sup.registry.finish(rec)
        age = max(0.0, wall - (row.ended_at or 0) / 1000)
        recovered.append(RecoveredRun(row.kind, rec, age, spawn=outcome.spawn))
    pending = [(r, _accepted(r)) for r in rows if not r.ended and pending_too]
    pending.sort(key=lambda pair: pair[1].order)  # the order the requests were received
    failed = rerun = 0
    for row, accepted in pending:
        if interrupted == "rerun" and accepted.attempt < MAX_ATTEMPTS:
            rec = await _run_again(sup, row, accepted)
            rerun += 1
        else:
            rec = await _report_interrupted(sup, row, accepted)
            failed += 1
        recovered.append(RecoveredRun(row.kind, rec, 0.0, True, accepted.spawn))
    await sup.store.flush()
    if failed or rerun:
        log.warning(
            "recovered %d runs the previous process accepted and did not finish: "
            "%d reported failed (%s), %d queued again",
            failed + rerun,
            failed,
            INTERRUPTED,
            rerun,
        )
    return RecoveryReport(recovered, failed, rerun)


async def report_lost(sup: Supervisor, run_id: str, *, since_ms: int) -> bool:
    """A run accepted by a node that was lost: if the journal still has it not ended
    (accepted after `since_ms`), report it failed as a restart would (its session's
    transcript and row, its journal row, its record). The caller owns the session. Returns
    whether it did. A checkpoint; raises `StoreError`."""
    rows = await sup.store.load_runs(since_ms=since_ms)
    for row in rows:
        if row.run_id == run_id and not row.ended:
            await _report_interrupted(sup, row, _accepted(row))
            await sup.store.flush()
            return True
    return False


async def end_lost_in_journal(sup: Supervisor, row: JournalRow) -> bool:
    """A lost node's run whose session another node serves now (so the lost node can no
    longer end it: its fence moved on): its journal row ended `error` (interrupted),
    unless it has an end row by then, without touching the session (its owner's). True
    when it wrote the row. A checkpoint; raises `StoreError`."""
    accepted = _accepted(row)
    outcome = RunOutcome(status="error", error=INTERRUPTED, spawn=accepted.spawn)
    end = ended_row(row.identity, ended_at=now_ms(), outcome=outcome)
    return await sup.store.write(end_unless_ended(end), what="end a lost node's run")


async def recall_run(
    sup: Supervisor, run_id: str, *, restore: bool = True
) -> RecoveredRun | JournalRow | None:
    """What the journal says of a run this process does not know (a cluster node whose
    Redis forgot the run's claim, or whose node cannot be asked: the run may have been
    accepted by any node). An ended run comes back as `recover_runs` restores one: its
    record, ended, in the registry (`agent.wait` answers it;
    `transports.methods.restore_idempotency` makes its cached answer); with `restore`
    false the record is kept out of the registry (only read). A run accepted and not ended
    is its journal row (a node may be running it: it must not run again). None: the
    journal has no row of it. A checkpoint; raises `StoreError`."""
    row = await sup.store.load_run(run_id)
    if row is None or not row.ended:
        return row
    try:
        outcome = row.outcome()
    except msgspec.DecodeError:
        outcome = RunOutcome(status="error", error="the run's stored outcome is unreadable")
    rec = _restored(row, outcome)
    if restore:
        sup.registry.add(rec)
        sup.registry.finish(rec)
    age = max(0.0, time.time() - (row.ended_at or 0) / 1000)
    return RecoveredRun(row.kind, rec, age)


def _accepted(row: JournalRow) -> AcceptedRun:
    try:
        return row.accepted()
    except msgspec.DecodeError:
        return AcceptedRun(message="", attempt=MAX_ATTEMPTS)  # unreadable: report it


async def _report_interrupted(sup: Supervisor, row: JournalRow, accepted: AcceptedRun) -> RunRecord:
    """The run failed: say so in its session (transcript, row), its journal row and its
    record."""
    t = now_ms()
    outcome = RunOutcome(status="error", error=INTERRUPTED, spawn=accepted.spawn)
    journal = ended_row(row.identity, ended_at=t, outcome=outcome)
    rec = _restored(journal, outcome)
    sup.registry.add(rec)
    sup.registry.finish(rec)
    if await sup.store.get_session(row.session_key) is None:
        sup.store_commit(WriteGroup(run=journal))  # the session was deleted since: only the journal
        return rec
    actor = await sup.session(row.session_key, row.agent_id)
    assert actor.row is not None
    _, builder = await actor._transcript()
    prompt = marked_prompt(
        UserMessage(content=accepted.message, timestamp=row.accepted_at), accepted.provenance
    )
    messages: list[Message] = [
        prompt,
        AssistantMessage(
            content=[TextContent(f"⚠️ {INTERRUPTED}")],
            timestamp=t,
            stopReason="error",
            errorMessage=INTERRUPTED,
        ),
    ]
    kept = messages if prompt_kept(prompt) else messages[1:]  # a child's announce: no row
    entries = [builder.add_message(m) for m in kept] if accepted.message else []
    stored = actor.change_row(
        updatedAt=t,
        status="failed",
        endedAt=t,
        abortedLastRun=True,
        lastRunId=row.run_id,
    )
    usage = usage_write(actor, stored.sessionId, messages, sup.generation.config)
    actor.store_commit(
        WriteGroup(
            run=journal,
            row=stored,
            session_id=stored.sessionId,
            entries=entries,
            usage=usage if entries else None,  # its lines count in the usage reports
        )
    )
    actor.forget_transcript()  # the next run reads what was just written
    return rec


def replay_terminal(hub: EventHub, rec: RunRecord) -> None:
    """Give a restored run an event stream in this process (for `runs.replay`): its
    lifecycle `start`, then its terminal event. Not a checkpoint."""
    started = rec.started_at or rec.accepted_at
    ended = rec.ended_at or started
    hub.open_run(rec.run_id, rec.session_key, session_id=rec.session_id, agent_id=rec.agent_id)
    try:
        hub.emit_agent(rec.run_id, "lifecycle", {"phase": "start", "startedAt": started})
        data: dict[str, Any] = {"startedAt": started, "endedAt": ended}
        if rec.status == "error":
            data.update(phase="error", error=rec.error or "run failed")
        else:
            data.update(phase="end", aborted=rec.aborted)
            if rec.aborted:
                data["stopReason"] = rec.abort_reason
        hub.emit_agent(rec.run_id, "lifecycle", data)
    finally:
        hub.close_run(rec.run_id)


async def _run_again(sup: Supervisor, row: JournalRow, accepted: AcceptedRun) -> RunRecord:
    """Queue the run again (its journal row counts the attempt first); reported failed
    when its session is gone or will not take it."""
    if await sup.store.get_session(row.session_key) is None:
        return await _report_interrupted(sup, row, accepted)
    actor = await sup.session(row.session_key, row.agent_id)
    assert actor.row is not None
    again = msgspec.structs.replace(accepted, attempt=accepted.attempt + 1)
    rec = RunRecord(
        run_id=row.run_id,
        session_key=row.session_key,
        session_id=actor.row.sessionId,
        agent_id=row.agent_id,
        accepted_at=row.accepted_at,
        provenance=accepted.provenance,
    )
    request = RunRequest(
        record=rec,
        message=accepted.message,
        lane=accepted.lane,
        timeout_s=accepted.timeoutS,
        model_ref=accepted.modelRef,
        extra_system_prompt=accepted.extraSystemPrompt,
        reset=accepted.reset,
        reset_reason=accepted.resetReason,
        debounce=accepted.debounce,
        kind=row.kind,
        origin=accepted.origin or "webchat",
        spawn=accepted.spawn,
        light_context=accepted.lightContext,
    )
    admission = Admission(sup, kind=row.kind, run_id=row.run_id, dedupe=False)
    try:
        await admission.admit(actor, request, accepted.queueMode, writes_row=False, accepted=again)
    except GatewayError as exc:
        if isinstance(exc.__cause__, StoreError):
            raise exc.__cause__ from None  # the journal cannot be written: startup fails
        log.warning("run %s could not be queued again (%s): reported failed", row.run_id, exc)
        return await _report_interrupted(sup, row, accepted)
    return rec
