"""How a run ends: its outcome, its writes, then one terminal event that tells the truth.

A run's end has three steps, in this order:

1. its outcome is decided (`ok`, `error`, `aborted`) and its final result built; an aborted
   run's background commands are killed (`TurnServices.processes`), their trees with them;
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

In cluster mode the session's writes carry its lease's fencing token (`SessionActor.
store_commit`, which ending writes through): a run whose writes were refused because
another node took the lease (`FencedOut`) ends `error` the same way, its message saying
that the session's lease moved to another node.

The requests that end with a run without running (steered or coalesced into it:
`finish_followers`) and those that never ran (dropped, cleared, aborted while queued:
`end_unrun`) end here too. The session actor is seen through `RunHost`: what ending a run
needs of it, and no more.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

import attrs
import msgspec
import trio

from runtime.agent import AbortReason, RunOutcome, TurnResult, final_payload
from runtime.llm import UserMessage
from runtime.loop import RunProgress, RunTools, now_ms
from runtime.sessions import MemoryFlushRecord, MessageEntry, SessionRow
from runtime.usage import PriceTable, effective_usage_mode, usage_footer

from .._errors import StoreError
from ..runs import ChatStream, RunRecord, assistant_message
from ..store import WriteGroup
from ._request import RunRequest
from ._services import SessionCommit, SessionServices

log = logging.getLogger("clawlane.session")


@attrs.define(eq=False)
class RunEnd:
    """What the attempt loop leaves for the end of a run."""

    chat: ChatStream
    progress: RunProgress
    turn: TurnResult
    tools: RunTools | None
    outcome: RunOutcome
    footer: str | None = None
    """The usage footer (`/usage`) appended to the reply, set when the run ends ok."""


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


class RunHost(Protocol):
    """What ending a run needs of the session actor that ran it (`SessionActor`)."""

    end_pending: CommitWait | None
    row: SessionRow | None

    @property
    def key(self) -> str: ...

    @property
    def services(self) -> SessionServices[Any]: ...

    def record_end(
        self,
        rec: RunRecord,
        progress: RunProgress,
        user: UserMessage | None,
        turn: TurnResult | None = None,
    ) -> EndWrite | None:
        """Hand the run's writes to the store; what to wait for (None: no row)."""
        ...

    def announce_messages(self, entries: list[MessageEntry]) -> None: ...

    def forget_transcript(self) -> None: ...

    def store_commit(self, group: WriteGroup) -> None:
        """The session's writes, with its fence (`SessionActor.store_commit`)."""
        ...


def store_flush_ledger(actor: RunHost, record: MemoryFlushRecord) -> None:
    """A running turn's memory flush ledger (`TurnSpec.on_memory_flush`) in the session's
    row, handed to the store at once with the fence, not only as the run ends (OpenClaw
    stores it right after the flush): a run cut short after its flush does not flush again
    in that compaction cycle. Not a checkpoint."""
    if actor.row is not None:
        actor.row = msgspec.structs.replace(actor.row, memoryFlush=record)
        actor.store_commit(WriteGroup(row=actor.row, session_id=actor.row.sessionId))


def finish_run(actor: RunHost, req: RunRequest, end: RunEnd) -> None:
    """End `req`'s run (see the module docstring): decide, write, and announce once the
    writes have committed. Not a checkpoint. A run already ended (by shutdown, after its
    grace) is left as it is."""
    rec = req.record
    if rec.ended:
        return
    if rec.started_at is None:
        actor.services.hub.emit_agent(rec.run_id, "lifecycle", rec.start(now_ms()))
    rec.decide(end.outcome, now_ms())
    processes = actor.services.turn.processes
    if rec.aborted and processes is not None:
        processes.kill_run(rec.run_id)  # its background commands stop with it
    write: EndWrite | None = None
    try:
        tools = end.tools
        if rec.status == "ok":
            end.footer = _usage_footer(actor, end.progress)
        rec.final = final_payload(
            rec,
            text=_with_footer(end.chat.final_text(), end.footer),
            progress=end.progress,
            turn=end.turn,
            error=end.outcome.error,
            tool_failures=tools.failures if tools else (),
            sent_texts=tools.sent_texts if tools else (),
        )
        write = actor.record_end(rec, end.progress, end.turn.user_message, end.turn)
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
    actor: RunHost,
    req: RunRequest,
    end: RunEnd,
    failure: StoreError | None,
    write: EndWrite | None,
) -> None:
    """The run's writes committed (`failure` None) or failed: announce its end."""
    if write is not None and actor.end_pending is write.commit:
        actor.end_pending = None  # settled: nothing to wait for, nothing kept alive
    services = actor.services
    try:
        if failure is not None:
            _not_stored(actor, req, failure)
        elif write is not None:
            actor.announce_messages(write.messages)
            services.retry_journal()
    finally:
        try:
            _announce_end(services, actor.key, req.record, end)
        finally:
            finish_followers(services, req, commit=actor.store_commit)


def _not_stored(actor: RunHost, req: RunRequest, failure: StoreError) -> None:
    services = actor.services
    rec = req.record
    services.counters.turns_not_stored += 1
    message = f"the turn was not stored: {failure}"
    log.error("run %s on %s: %s", rec.run_id, actor.key, message)
    rec.fail(message, "store")
    assert rec.final is not None
    rec.final["meta"]["stored"] = False
    actor.forget_transcript()
    row = req.end_row()
    if row is not None:
        services.journal_later(row)  # the journal says so too, once the disk is back


def _announce_end(services: SessionServices[Any], key: str, rec: RunRecord, end: RunEnd) -> None:
    hub = services.hub
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
            if rec.status == "ok":
                text = _with_footer(text, end.footer)
            fields: dict[str, Any] = {
                "stopReason": rec.abort_reason
                if rec.status == "aborted"
                else end.progress.stop_reason
            }
            if text:
                fields["message"] = assistant_message(text, ended)
            if rec.status == "ok" and end.progress.yielded is not None:
                # the turn ended with sessions_yield: OpenClaw's final says so, and its TUI
                # shows the turn as yielded (not completed) only with this stop reason
                fields |= {"yielded": True, "stopReason": "end_turn"}
            chat.close("final" if rec.status == "ok" else "aborted", **fields)
    finally:
        services.registry.finish(rec)
        hub.close_run(rec.run_id)
        if hub.has_change_subscribers:
            hub.sessions_changed(
                {
                    "sessionKey": key,
                    "phase": "error" if rec.status == "error" else "end",
                    "runId": rec.run_id,
                    "ts": ended,
                }
            )


def end_unrun(
    services: SessionServices[Any],
    key: str,
    req: RunRequest,
    reason: AbortReason,
    *,
    commit: SessionCommit | None = None,
    ended_as: str | None = None,
) -> None:
    """End a request that never ran (dropped, cleared, aborted while queued) on session
    `key`: its start and aborted end, its waiters woken, its journal row (written with
    `commit`, the session's `store_commit`; by default the supervisor's). `ended_as`: the
    journal already ended it `error` with this message (another node's): so it ends here
    too, and nothing is written. Not a checkpoint."""
    rec = req.record
    if rec.ended:
        return
    t = now_ms()
    start = rec.start(rec.started_at or t)
    if ended_as is None:
        rec.aborted = True
        rec.abort_reason = reason
        rec.decide(RunOutcome(cancelled=True), t)
        rec.final = {
            "payloads": [],
            "meta": {"durationMs": 0, "aborted": True, "stopReason": reason},
        }
    else:
        rec.decide(RunOutcome(error=ended_as), t)
    hub = services.hub
    try:
        hub.open_run(rec.run_id, key, session_id=rec.session_id, agent_id=rec.agent_id)
        hub.emit_agent(rec.run_id, "lifecycle", start)
        hub.emit_agent(rec.run_id, "lifecycle", rec.terminal_event())
        if ended_as is None:
            hub.emit_chat(rec.run_id, "aborted", stopReason=reason)
        else:
            hub.emit_chat(rec.run_id, "error", errorMessage=ended_as)
    finally:
        # Whatever failed above, the run has ended: its waiters wake, its stream closes.
        services.registry.finish(rec)
        hub.close_run(rec.run_id)
        if ended_as is None:
            _journal_end(commit or services.store_commit, req)


def finish_followers(
    services: SessionServices[Any], host: RunRequest, *, commit: SessionCommit | None = None
) -> None:
    """Requests steered or coalesced into `host` end with it (their journal rows written
    with `commit`, as in `end_unrun`). Not a checkpoint."""
    hub = services.hub
    h = host.record
    for req in host.followers:
        rec = req.record
        if rec.ended:
            continue
        start = rec.start(rec.started_at or h.started_at or now_ms())
        rec.ended_at = h.ended_at or now_ms()
        rec.status = h.status
        rec.aborted = h.aborted
        rec.abort_reason = h.abort_reason
        rec.error = h.error
        rec.generation = h.generation
        hub.emit_agent(rec.run_id, "lifecycle", start)
        if h.status == "error":
            hub.emit_chat(rec.run_id, "error", errorMessage=h.error or "run failed")
        else:
            hub.emit_chat(
                rec.run_id,
                "aborted" if h.aborted else "final",
                **({"stopReason": h.abort_reason} if h.aborted else {}),
            )
        hub.emit_agent(rec.run_id, "lifecycle", {**rec.terminal_event(), "mergedInto": h.run_id})
        final = dict(h.final or {"payloads": [], "meta": {}})
        final["meta"] = {**final.get("meta", {}), "mergedInto": h.run_id}
        rec.final = final
        services.registry.finish(rec)
        hub.close_run(rec.run_id)
        _journal_end(commit or services.store_commit, req)


def _journal_end(commit: SessionCommit, req: RunRequest) -> None:
    """The journal row of a run that ended without writes of its own."""
    row = req.end_row()
    if row is not None:
        commit(WriteGroup(run=row))


def _usage_footer(actor: RunHost, progress: RunProgress) -> str | None:
    """The reply's usage footer in the session's mode (`runtime.usage._footer`)."""
    row = actor.row
    if row is None:
        return None
    config = actor.services.generation().config
    mode = effective_usage_mode(row.responseUsage, config.messages.responseUsage, row.channel)
    if mode == "off":
        return None
    return usage_footer(mode, progress.messages, PriceTable.for_config(config))


def _with_footer(text: str, footer: str | None) -> str:
    """`footer` on a line of its own after `text` (alone when the reply has no text)."""
    if not footer:
        return text
    if not text:
        return footer
    sep = "" if text.endswith("\n") else "\n"
    return f"{text}{sep}{footer}"


def _chat_error_kind(kind: str | None) -> str:
    return {
        "rate_limit": "rate_limit",
        "timeout": "timeout",
        "context_overflow": "context_length",
    }.get(kind or "", "unknown")
