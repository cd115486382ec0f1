"""How a run ends: its outcome, its writes, then one terminal event that tells the truth.

A run's end has three steps, in this order:

1. its outcome is decided (`ok`, `error`, `aborted`) and its final result built;
2. its writes (transcript entries, the session row, its run journal row) are handed to the
   store as one transaction (a group commit, shared with every other run ending then);
3. once that has committed (or failed), from the store's commit callback: its terminal
   lifecycle event and chat event go out, its waiters wake (`agent.wait`, the `agent`
   final `res`), its event stream closes, the requests merged into it end with it.

No task waits for step 3 (measured: a task waiting per run cost ~6 % of the gateway's
throughput); the session's next run waits for it instead (`SessionActor.end_pending`).

So a turn that could not be stored is never reported as a success: the run ends with
lifecycle `error` ("the turn was not stored: ..."), the final `res` is `UNAVAILABLE` with
that message, `agent.wait` answers `error`; the failure is logged and counted
(`Supervisor.turns_not_stored`); and the session forgets its in-memory transcript, so the
next run continues from what the store holds. The session's next run starts only after
that, so it sees the stored state. Whatever fails in steps 1-2 (a crash of the actor,
contained by the supervisor), step 3 happens.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from runtime.agent import (
    RunOutcome,
    TurnResult,
    ended_row,
    final_payload,
    persist_run,
    run_messages,
)
from runtime.llm import UserMessage
from runtime.loop import RunProgress, RunTools, now_ms
from runtime.sessions import MessageEntry

from ._chat import ChatStream, assistant_message
from ._registry import RunRecord
from ._store import StoreError

if TYPE_CHECKING:
    from ._session import RunRequest, SessionActor

log = logging.getLogger("clawlane.session")


@attrs.define(eq=False)
class RunEnd:
    """What the attempt loop leaves for the end of a run."""

    chat: ChatStream
    progress: RunProgress
    turn: TurnResult
    tools: RunTools | None
    outcome: RunOutcome


@attrs.define(eq=False)
class CommitWait:
    """A commit callback: `then` (if any) hears the outcome, and `event` is set once the
    writes committed (`error` None) or failed, for a task that must wait for them."""

    event: trio.Event = attrs.field(factory=trio.Event)
    error: StoreError | None = None
    then: Callable[[StoreError | None], None] | None = None

    def __call__(self, error: StoreError | None) -> None:
        self.error = error
        then, self.then = self.then, None  # it holds the run's actor: no cycle left behind
        try:
            if then is not None:
                then(error)
        finally:
            self.event.set()


@attrs.define(eq=False)
class EndWrite:
    """A run's writes on their way to the store: their commit, and the messages to
    announce (`session.message`) once they are stored."""

    commit: CommitWait
    messages: list[MessageEntry]


def finish_run(actor: SessionActor, req: RunRequest, end: RunEnd) -> None:
    """End `req`'s run (see the module docstring): decide, write, and announce once the
    writes have committed. Not a checkpoint. A run already ended (by shutdown, after its
    grace) is left as it is."""
    rec = req.record
    if rec.ended:
        return
    if rec.started_at is None:
        actor.supervisor.hub.emit_agent(rec.run_id, "lifecycle", rec.start(now_ms()))
    rec.decide(end.outcome, now_ms())
    write: EndWrite | None = None
    try:
        tools = end.tools
        rec.final = final_payload(
            rec,
            text=end.chat.final_text(),
            progress=end.progress,
            turn=end.turn,
            error=end.outcome.error,
            tool_failures=tools.failures if tools else (),
            sent_texts=tools.sent_texts if tools else (),
        )
        write = actor._record_end(rec, end.progress, end.turn.user_message, end.turn)
    finally:
        # Whatever failed above, the run has its terminal event and its waiters wake.
        if write is None:
            _ended(actor, req, end, None, None)
        else:
            commit = actor.end_pending = write.commit
            if commit.event.is_set():  # answered at once (the store is closed)
                _ended(actor, req, end, commit.error, write)
            else:
                commit.then = functools.partial(_ended, actor, req, end, write=write)


def _ended(
    actor: SessionActor,
    req: RunRequest,
    end: RunEnd,
    failure: StoreError | None,
    write: EndWrite | None,
) -> None:
    """The run's writes committed (`failure` None) or failed: announce its end."""
    if write is not None and actor.end_pending is write.commit:
        actor.end_pending = None  # settled: nothing to wait for, nothing kept alive
    try:
        if failure is not None:
            _not_stored(actor, req, failure)
        elif write is not None:
            actor.announce_messages(write.messages)
            actor.supervisor.retry_journal()
    finally:
        try:
            _announce_end(actor, req.record, end)
        finally:
            actor._finish_followers(req)


def _not_stored(actor: SessionActor, req: RunRequest, failure: StoreError) -> None:
    sup = actor.supervisor
    rec = req.record
    sup.turns_not_stored += 1
    message = f"the turn was not stored: {failure}"
    log.error("run %s on %s: %s", rec.run_id, actor.key, message)
    rec.fail(message, "store")
    assert rec.final is not None
    rec.final["meta"]["stored"] = False
    actor.forget_transcript()
    row = sup.end_row(req)
    if row is not None:
        sup.journal_later(row)  # the journal says so too, once the disk is back


def _announce_end(actor: SessionActor, rec: RunRecord, end: RunEnd) -> None:
    sup = actor.supervisor
    hub = sup.hub
    chat = end.chat
    ended = rec.ended_at or now_ms()
    try:
        chat.end_agent()  # held `assistant` text goes before the lifecycle end
        hub.emit_agent(rec.run_id, "lifecycle", rec.terminal_event())
        if rec.status == "error":
            chat.close(
                "error",
                errorMessage=rec.error or "run failed",
                errorKind=_chat_error_kind(end.outcome.error_kind),
            )
        else:
            text = chat.text if rec.status == "aborted" else chat.final_text()
            fields: dict[str, Any] = {
                "stopReason": rec.abort_reason
                if rec.status == "aborted"
                else end.progress.stop_reason
            }
            if text:
                fields["message"] = assistant_message(text, ended)
            chat.close("final" if rec.status == "ok" else "aborted", **fields)
    finally:
        sup.registry.finish(rec)
        hub.close_run(rec.run_id)
        if hub.has_change_subscribers:
            hub.sessions_changed(
                {
                    "sessionKey": actor.key,
                    "phase": "error" if rec.status == "error" else "end",
                    "runId": rec.run_id,
                    "ts": ended,
                }
            )


def record_end(
    actor: SessionActor,
    rec: RunRecord,
    progress: RunProgress,
    user: UserMessage | None,
    turn: TurnResult | None = None,
) -> EndWrite | None:
    """Hand the run's messages, its compactions, the row and its journal row to the store
    as one transaction (`SessionActor._record_end`). A compaction replaces the in-memory
    context by its summary and the kept messages; the store keeps everything. Returns what
    to wait for (None when the session has no row)."""
    sup = actor.supervisor
    if actor.row is None:
        return None
    messages = run_messages(rec, progress, user)
    compactions = turn.compactions if turn is not None and user is not None else []
    entries: list[Any] = []
    if messages and actor._builder is not None and actor._history is not None:
        entries, context = persist_run(
            actor._builder, messages, compactions, tags=actor._row_tags(rec, messages)
        )
        if context is None:
            actor._extend_history(messages)
        else:
            actor._history[:] = context
            actor._history_tokens = None
    row = actor.row = ended_row(actor.row, rec, progress, turn)
    running = actor.running
    journal = sup.end_row(running) if running is not None and running.record is rec else None
    commit = CommitWait()
    sup.store_commit(
        run=journal, row=row, session_id=row.sessionId, entries=entries, on_commit=commit
    )
    return EndWrite(commit, [e for e in entries if isinstance(e, MessageEntry)])


def _chat_error_kind(kind: str | None) -> str:
    return {
        "rate_limit": "rate_limit",
        "timeout": "timeout",
        "context_overflow": "context_length",
    }.get(kind or "", "unknown")
