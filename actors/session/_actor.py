"""The SessionActor: one per session key, owning its serialized run lane.

At most one run of a session executes at a time, in submission order; later messages wait
as follow-ups (the other queue modes come with the session-lanes work). An actor has a task
only while it has work: `Supervisor.submit` starts its drain task, which exits when the
queue is empty, so an idle session costs one small object.

Each run: wait for a global lane slot (cancellable: an abort while queued ends the run at once),
fork stores from the generation current at that moment and keep them to the end, emit lifecycle
`start`, run the attempt loop, and emit exactly one terminal lifecycle event (`end` or `error`)
whatever happens: provider error, crash, timeout, abort, shutdown. The terminal event waits for the
run's writes to commit (`actors.session._ending`): a turn not stored ends with an error saying so.

Fencing (cluster mode): `fence` is set by the cluster layer while this node holds the
session's lease (its key and the lease's token); every durable write of the actor carries
it (`store_commit`, `put_row_durable`). When the store refuses one (`FencedOut`: another
node took the lease since), the actor logs it once and attempts no further write with that
fence: each answers `FencedOut` at once, so its runs end `error` ("the session's lease
moved to another node"); a new fence (the lease taken again) lets writes resume.

An actor never sees the supervisor: it is spawned with `SessionServices`
(`actors.session._services`), the hub, registry, store and turn services plus the few
callables it needs of the supervisor (the current generation, the global lanes, the write
backlog, journal retries, restarting its drain task, the reset hooks).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import msgspec
import trio

from runtime import telemetry
from runtime.agent import (
    AbortReason,
    BlockReply,
    MessageTags,
    RunOutcome,
    RunRefusedError,
    TurnResult,
    compact_session,
    ended_row,
    persist_run,
    run_guarded,
    run_messages,
    run_notes,
    run_tags,
    run_turn,
)
from runtime.heartbeat import holds_heartbeat_turns
from runtime.llm import Message, UserMessage, estimate_message_tokens
from runtime.loop import RunProgress, RunTools, SteerInbox, now_ms, provider_clean
from runtime.model import ModelRuntimeGeneration
from runtime.sessions import (
    MessageEntry,
    SessionRow,
    TranscriptBuilder,
    TranscriptEntry,
    added_context,
    branch_messages,
    build_context,
    cap_row,
    hidden_in_display,
    history_row,
    new_session_id,
    new_session_row,
    openclaw_row_meta,
)

from .._errors import ActorError, FencedOut, StoreError
from ..runs import ChatStream, RunRecord, log_run_started
from ..store import Fence, WriteGroup, usage_write
from ._ending import CommitWait, EndWrite, RunEnd, end_unrun, finish_run, store_flush_ledger
from ._lane import Lane, QueueSettings, resolve_queue_settings
from ._request import RunRequest
from ._sent import message_sender, send_message
from ._services import SessionServices
from ._traced import traced_run

log = logging.getLogger("clawlane.session")


@attrs.define(eq=False)
class SessionActor:
    """One session's actor; spawned by the supervisor with its `services`."""

    key: str
    agent_id: str
    services: SessionServices[SessionActor]
    row: SessionRow | None = None
    loaded: trio.Event = attrs.field(factory=trio.Event)
    lane: Lane = attrs.field(factory=Lane)
    running: RunRequest | None = None
    last_enqueue: float = float("-inf")
    draining: bool = False
    last_active: float = attrs.field(factory=time.monotonic)
    crashes: collections.deque[float] = attrs.field(factory=collections.deque)
    failed_until: float = float("-inf")
    created: bool = False
    """The session had no row: it is new (`session_start` fires)."""
    row_persisted: bool = False
    """A row with this session id has been committed (loaded from the store, or written
    durably since): accepting a run then needs no write before its ack."""
    _history: list[Message] | None = None
    _history_tokens: int | None = None
    _history_clean: bool | None = None
    """The estimated size of `_history` (None: not known, count it again)."""
    _builder: TranscriptBuilder | None = None
    _queue_settings: tuple[tuple[object, ...], QueueSettings] | None = None
    _message_seq: int = 0
    """Messages in the stored transcript (what `session.message` and `chat.history` number)."""
    end_pending: CommitWait | None = None
    """The last run's writes, until they commit and its end is announced (`settled`)."""
    fence: Fence | None = None
    """The session's lease token while this node holds it (cluster mode; set by the cluster
    layer): carried by every durable write. None: unfenced (one process)."""
    _refused: FencedOut | None = None
    """The store refused a write carrying `fence` (with the key and tokens it named)."""

    @property
    def busy(self) -> bool:
        return self.draining or bool(self.lane) or self.running is not None

    @property
    def queue(self) -> collections.deque[RunRequest]:
        return self.lane.items

    # --- the row --------------------------------------------------------------------------

    def change_row(self, **changes: Any) -> SessionRow:
        """Change the session's row in memory and return it; whoever writes it to the store
        says so with `row_stored` once that write has committed. Not a checkpoint."""
        assert self.row is not None
        self.row = msgspec.structs.replace(self.row, **changes)
        return self.row

    def row_stored(self) -> None:
        """A committed write held the current row: accepting a run needs no write before its
        ack. Not a checkpoint."""
        self.row_persisted = True

    async def save_row(self, **changes: Any) -> SessionRow:
        """Change the row and store it durably. A checkpoint. Raises `StoreError`."""
        row = self.change_row(**changes)
        await self.put_row_durable(row)
        self.row_persisted = True
        return row

    # --- durable writes, with the session's fence ------------------------------------------

    def store_commit(self, group: WriteGroup) -> None:
        """This session's writes that commit together (`SessionServices.store_commit`),
        given the session's `fence`; once a write with this fence was refused, none is
        attempted and the group's `on_commit` hears `FencedOut` at once. Not a
        checkpoint."""
        fence = self.fence
        if fence is not None:
            refused = self.fenced_out()
            if refused is not None:
                if group.on_commit is not None:
                    group.on_commit(refused)
                return
            on_commit = functools.partial(self._heard, fence, group.on_commit)
            group = attrs.evolve(group, on_commit=on_commit, fence=fence)
        self.services.store_commit(group)

    async def put_row_durable(self, row: SessionRow) -> None:
        """`Store.put_session_durable` with `fence` (see `store_commit`). A checkpoint.
        Raises `StoreError` (`FencedOut`)."""
        fence = self.fence
        refused = self.fenced_out()
        if refused is not None:
            await trio.lowlevel.checkpoint()
            raise refused
        try:
            await self.services.store.put_session_durable(row, fence=fence)
        except FencedOut as exc:
            if fence is not None:
                self._heard(fence, None, exc)
            raise

    def fenced_out(self) -> FencedOut | None:
        """The refusal of the current `fence` (a fresh error each call), or None: writes
        may be attempted. Not a checkpoint."""
        refused, fence = self._refused, self.fence
        if refused is None or fence is None or fence.token != refused.token:
            return None
        return FencedOut(refused.key, refused.token, refused.current)

    def _heard(
        self,
        fence: Fence,
        then: Callable[[StoreError | None], None] | None,
        error: StoreError | None,
    ) -> None:
        """A fenced write's outcome: a refusal stops the actor's writes with that fence
        (logged once), then `then` hears it."""
        try:
            known = self._refused
            if isinstance(error, FencedOut) and (known is None or known.token != error.token):
                log.warning(
                    "session %s: its writes with fencing token %d are refused, the store holds "
                    "token %d: the session's lease moved to another node; no further write "
                    "is attempted with that token",
                    self.key,
                    fence.token,
                    error.current,
                )
                self._refused = error
        finally:
            if then is not None:
                then(error)

    # --- queue modes ----------------------------------------------------------------------

    def queue_settings(self, requested: str | None = None) -> QueueSettings:
        """Mode: per-request > session setting > byChannel > messages.queue.mode > steer."""
        gen = self.services.generation()
        row = self.row
        key = (
            gen.number,
            requested,
            row.queueMode if row else None,
            row.queueDebounceMs if row else None,
            row.queueCap if row else None,
            row.queueDrop if row else None,
        )
        known = self._queue_settings
        if known is not None and known[0] == key:
            return known[1]
        settings = resolve_queue_settings(gen.config.messages.queue, row, requested)
        self._queue_settings = (key, settings)
        return settings

    def would_reject(self, settings: QueueSettings) -> bool:
        return self.busy and settings.mode != "interrupt" and self.lane.would_reject(settings)

    def enqueue(self, req: RunRequest, settings: QueueSettings) -> bool:
        """Place a request per its queue mode. Returns True when the drain task must start.

        Not a checkpoint. Raises `LaneFull` (drop policy `new`, queue at its cap)."""
        if telemetry.STATE.on:
            telemetry.record("queue.lane.enqueue", 1, {"openclaw.lane": req.lane})
        req.queue_mode = settings.mode
        if req.wanted is not None and not req.wanted():
            self.finish_unrun(req, "dropped")
            return False
        if not self.busy:
            self.lane.items.append(req)
            return True
        self.last_enqueue = trio.current_time()
        req.queued_while_busy = True
        running = self.running
        if settings.mode == "interrupt":
            for dropped in self.lane.clear():
                self.finish_unrun(dropped, "interrupt")
            if running is not None:
                running.record.abort("interrupt")
            self.lane.items.append(req)
            return False
        if (
            settings.mode == "steer"
            and running is not None
            and running.inbox is not None
            and running.inbox.offer(req.message, req.record.run_id, req.record.provenance)
        ):
            running.followers.append(req)
            req.record.status = "running"
            return False
        for dropped in self.lane.offer(req, settings):
            self.finish_unrun(dropped, "dropped")
        return False

    def abort(self, run_id: str | None, reason: AbortReason) -> list[str]:
        """Abort queued turns first, then the active run (or just `run_id`). Not a checkpoint."""
        aborted: list[str] = []
        if run_id is not None:
            queued = self.lane.remove(run_id)
            if queued is not None:
                self.finish_unrun(queued, reason)
                return [run_id]
            running = self.running
            if running is not None and running.record.run_id == run_id:
                return [run_id] if running.record.abort(reason) else []
            return []
        for queued in self.lane.clear():
            self.finish_unrun(queued, reason)
            aborted.append(queued.record.run_id)
        running = self.running
        if running is not None and running.record.abort(reason):
            aborted.append(running.record.run_id)
        return aborted

    def finish_unrun(self, req: RunRequest, reason: AbortReason) -> None:
        """End a request that never ran (dropped, cleared, aborted while queued)."""
        end_unrun(self.services, self.key, req, reason, commit=self.store_commit)

    async def settled(self) -> None:
        """Wait until the last run's writes have committed and its end is announced (so
        that what comes next sees what was stored). A checkpoint only when it waits."""
        pending = self.end_pending
        if pending is not None and not pending.event.is_set():
            await pending.event.wait()

    async def append_messages(
        self, messages: list[Message], tags: list[MessageTags] | None = None
    ) -> list[MessageEntry]:
        """Append messages outside a run (`chat.inject`, a slash command and its reply), each
        with its `tags`, returning once they are stored. A checkpoint. Raises `StoreError`
        (the session then reloads its transcript)."""
        await self.settled()
        _, builder = await self._transcript()
        assert self.row is not None and self._history is not None
        tags = tags or []
        entries = [
            builder.add_message(
                m,
                idempotency_key=tags[i].idempotency_key if i < len(tags) else None,
                run_id=tags[i].run_id if i < len(tags) else None,
            )
            for i, m in enumerate(messages)
        ]
        self._extend_history(messages)
        await self._commit_durable(WriteGroup(session_id=self.row.sessionId, entries=entries))
        self.announce_messages(entries)
        return entries

    async def _commit_durable(self, group: WriteGroup) -> None:
        """Writes of this session outside a run, waited for; a failure makes the session
        forget its in-memory transcript (the store's is the truth). A checkpoint."""
        commit = CommitWait()
        self.store_commit(attrs.evolve(group, on_commit=commit))
        await commit.event.wait()
        if commit.error is not None:
            self.forget_transcript()
            raise commit.error

    async def append_entries(self, entries: Sequence[TranscriptEntry]) -> None:
        """Append `entries` to this session's transcript durably, the lane held meanwhile
        (a fork's start, a branch marker: its next run reads them). A checkpoint. Raises
        `StoreError`."""
        assert self.row is not None
        async with self._quiet():
            group = WriteGroup(session_id=self.row.sessionId, entries=entries)
            await self._commit_durable(group)
            self.forget_transcript()

    @contextlib.asynccontextmanager
    async def _quiet(self) -> AsyncIterator[None]:
        """Hold the lane (runs submitted meanwhile wait) until the session has settled."""
        self.draining = True
        try:
            await self.settled()
            yield
        finally:
            self.draining = False
            if self.lane:
                self.services.restart_drain(self)

    def forget_transcript(self) -> None:
        """Drop the in-memory transcript: the next use loads it from the store (after a
        write failed, what is in memory is not what is stored). Not a checkpoint."""
        self._history = None
        self._history_tokens = self._history_clean = None
        self._builder = None

    async def compact(
        self, *, max_kept_messages: int | None, instructions: str | None = None
    ) -> dict[str, Any]:
        """Manual compaction (`sessions.compact`): only while no run is active or queued.
        Adds a compaction entry (nothing is deleted). A checkpoint.

        Raises `SessionBusy`, `GenerationError`, `ProviderError`."""
        if self.busy:
            raise SessionBusy("the session has a run in progress; compact it when the run ends")
        services = self.services
        assert self.row is not None
        async with self._quiet():  # runs submitted meanwhile wait for us
            await services.store.flush()
            entries = await services.store.load_entries(self.row.sessionId)
            _, builder = await self._transcript()
            generation, turn = services.generation(), services.turn
            agent = generation.agent(self.agent_id)
            done = await compact_session(
                entries=entries,
                builder=builder,
                generation=generation,
                model_ref=self._model_override() or agent.primary,
                agent_id=agent.id,
                settings=turn.turn_settings(generation)["compaction"],
                instructions=instructions,
                max_kept_messages=max_kept_messages,
                idle_timeout=turn.idle_timeout(generation),
                hooks=turn.hooks,
            )
            if done is None:
                return {"compacted": False}
            self._history = list(done.context)
            self._history_tokens = self._history_clean = None
            self.row = msgspec.structs.replace(
                self.row,
                compactionCount=self.row.compactionCount + 1,
                contextTokens=done.record.tokens_after,
                updatedAt=now_ms(),
            )
            await self._commit_durable(
                WriteGroup(session_id=self.row.sessionId, entries=[done.entry], row=self.row)
            )
            return {
                "compacted": True,
                "tokensBefore": done.record.tokens_before,
                "tokensAfter": done.record.tokens_after,
                "firstKeptEntryId": done.entry.firstKeptEntryId,
            }

    async def reset_and_announce(self, reason: str) -> SessionRow:
        """`sessions.reset` / `/new` / `/reset`: a fresh session id, with the hooks around it.
        A checkpoint (hooks, durable row write)."""
        services = self.services
        old = self.row
        row = self.reset_session()
        await self.put_row_durable(row)
        self.row_persisted = True
        await services.session_lifecycle(self, old, reason)
        return row

    def announce_messages(self, entries: list[MessageEntry]) -> None:
        """`session.message` for each new transcript message, to the session's watchers."""
        hub = self.services.hub
        base = self._message_seq
        self._message_seq += len(entries)
        if not hub.may_be_watched(self.key):
            return
        for i, entry in enumerate(entries, 1):
            if hidden_in_display(entry.message):
                continue  # OpenClaw's display shows no row of it
            message = history_row(entry.message)
            message["__openclaw"] = openclaw_row_meta(entry, base + i)
            if entry.idempotencyKey is not None:
                message["idempotencyKey"] = entry.idempotencyKey
            hub.session_message(
                self.key,
                {
                    "sessionKey": self.key,
                    "agentId": self.agent_id,
                    "message": cap_row(message),  # OpenClaw's display cut (8,000)
                    "messageId": entry.id,
                    "messageSeq": base + i,
                },
            )

    # --- loading --------------------------------------------------------------------------

    async def load(self) -> None:
        """Load the persisted row, or create one. Called once by the supervisor."""
        try:
            row = await self.services.store.get_session(self.key)
            if row is None:
                self.created = True
                row = new_session_row(self.key, now_ms=now_ms())
                if row.agentId != self.agent_id:
                    row = msgspec.structs.replace(row, agentId=self.agent_id)
                # A new session id has no transcript yet: nothing to load.
                self._history, self._builder, self._message_seq = [], TranscriptBuilder(), 0
                self._history_tokens, self._history_clean = 0, True
            else:
                self.row_persisted = True
            self.row = row
        finally:
            self.loaded.set()

    async def _transcript(self) -> tuple[list[Message], TranscriptBuilder]:
        if self._history is None or self._builder is None:
            assert self.row is not None
            entries: list[TranscriptEntry] = await self.services.store.load_entries(
                self.row.sessionId
            )
            self._history = build_context(entries)
            self._history_tokens = self._history_clean = None
            self._builder = TranscriptBuilder.from_entries(entries)
            self._message_seq = len(branch_messages(entries))  # the branch's, numbered
        return self._history, self._builder

    def _extend_history(self, messages: list[Message]) -> None:
        assert self._history is not None
        self._history.extend(messages)
        if self._history_tokens is not None:
            self._history_tokens += sum(estimate_message_tokens(m) for m in messages)
        if self._history_clean:
            self._history_clean = provider_clean(messages) and not holds_heartbeat_turns(messages)

    def history_clean(self) -> bool:
        """Whether the context goes to a provider as it is (`provider_clean`, and no heartbeat
        turn for the run to drop): kept as it grows, so a run need not walk it all."""
        if self._history_clean is None:
            history = self._history or ()
            self._history_clean = provider_clean(history) and not holds_heartbeat_turns(history)
        return self._history_clean

    def history_tokens(self) -> int:
        """The estimated size of the session's context messages. Not a checkpoint."""
        if self._history_tokens is None:
            self._history_tokens = sum(estimate_message_tokens(m) for m in self._history or ())
        return self._history_tokens

    def context_bytes(self) -> int:
        """The context kept in memory, estimated (4 bytes a token, 300 a message); 0: none."""
        history = self._history
        return 0 if history is None else self.history_tokens() * 4 + len(history) * 300

    def drop_context(self) -> bool:
        """Let an idle, settled session's in-memory context go (the next run loads it).
        False: it stays (a run holds it, or the last run's writes are not committed)."""
        if self._history is not None and (self.busy or self.end_pending is not None):
            return False
        self.forget_transcript()
        return True

    def _model_override(self) -> str | None:
        row = self.row
        if row is None or not row.modelOverride:
            return None
        if "/" in row.modelOverride or not row.providerOverride:
            return row.modelOverride
        return f"{row.providerOverride}/{row.modelOverride}"

    def reset_session(self) -> SessionRow:
        """Give the session a fresh id (a new, empty transcript)."""
        assert self.row is not None
        t = now_ms()
        self.row = msgspec.structs.replace(
            new_session_row(self.key, now_ms=t, session_id=new_session_id()),
            agentId=self.row.agentId,
            createdAt=self.row.createdAt,
            label=self.row.label,
            responseUsage=self.row.responseUsage,  # a reset keeps the footer (`/usage`)
        )
        self._history = []
        self._history_tokens = self._history_clean = None
        self.row_persisted = False
        self._builder = TranscriptBuilder()
        self._message_seq = 0
        return self.row

    # --- the lane -------------------------------------------------------------------------

    async def drain(self) -> None:
        """Run queued turns in order until the lane is empty. Follow-ups wait out the
        debounce (measured from the last message queued while busy) so bursts coalesce."""
        while self.lane:
            await self.settled()  # the previous run's end (its writes) first
            if not self.lane:
                break
            head = self.lane.items[0]
            if head.queued_while_busy and head.debounce:
                settings = self.queue_settings(None)
                # The deadline moves while messages keep arriving: a timer, not a wait for
                # another task.
                while trio.current_time() < self.last_enqueue + settings.debounce_ms / 1000:  # noqa: ASYNC110
                    await trio.sleep_until(self.last_enqueue + settings.debounce_ms / 1000)
            turn = self.lane.take_next()
            if turn is None:
                break
            req = turn.request
            req.prompt = turn.prompt
            req.followers.extend(turn.coalesced)
            self.running = req
            try:
                if telemetry.STATE.on:
                    await traced_run(self._execute, req, self)
                else:
                    await self._execute(req)
            finally:
                self.running = None
                self.last_active = time.monotonic()
                if req.inbox is not None:
                    # Steered messages the run could no longer take run as follow-ups (when wanted).
                    for text in req.inbox.close():
                        follower = next((f for f in req.followers if f.message == text), None)
                        if follower is None:
                            continue
                        req.followers.remove(follower)
                        if follower.wanted is not None and not follower.wanted():
                            self.finish_unrun(follower, "dropped")
                            continue
                        follower.record.status = "queued"
                        self.lane.items.appendleft(follower)
                # The requests merged into the run end with it (`actors.session._ending`).

    async def _execute(self, req: RunRequest) -> None:
        """Run `req`'s turn (`runtime.run_guarded`), then end it (`actors.session._ending`)."""
        rec = req.record
        services = self.services
        chat = ChatStream(
            services.hub, rec.run_id, flusher=services.chat_flusher, heartbeat=rec.heartbeat
        )
        run = _Run(req=req, chat=chat, scope=trio.CancelScope())
        rec.cancel_scope = run.scope
        if rec.aborted:
            run.scope.cancel()
        try:
            await run_guarded(
                run.scope,
                functools.partial(self._turn, run),
                run.outcome,
                what=f"run {rec.run_id} on {self.key}",
            )
        finally:
            finish_run(self, req, RunEnd(chat, run.progress, run.turn, run.tools, run.outcome))

    async def _turn(self, run: _Run) -> None:
        """The body of a run: a global lane slot, the generation's stores, lifecycle
        `start`, the turn. A checkpoint; cancelled by the run's scope."""
        services, req = self.services, run.req
        rec = req.record
        if trio.current_time() < self.failed_until:
            raise RunRefusedError("session is restarting after repeated crashes")
        refused = self.fenced_out()
        if refused is not None:  # its end could not be stored: do not run the model
            raise RunRefusedError(str(refused))
        lane = services.lane_for(req.lane)
        acquired = lane.try_acquire()
        if req.timeout_s and acquired:
            run.scope.deadline = trio.current_time() + req.timeout_s
        async with lane.hold(acquired=acquired):
            generation: ModelRuntimeGeneration = services.generation()
            stores = generation.fork_stores(self.agent_id)
            rec.generation = stores.generation
            if req.timeout_s and not acquired:
                run.scope.deadline = trio.current_time() + req.timeout_s
            if req.reset:
                row = await self.reset_and_announce(req.reset_reason)
                rec.session_id = row.sessionId
                services.hub.open_run(rec.run_id, self.key, session_id=rec.session_id)
            self._started(rec)
            history, _ = await self._transcript()
            agent = generation.agent(self.agent_id)
            turn = services.turn
            workspace = turn.known_workspace(agent.id, agent.workspace) or await turn.workspace_for(
                agent.id, agent.workspace
            )
            model_ref = req.model_ref or self._model_override() or agent.primary
            cwd = self.row.spawnedCwd if self.row is not None else None  # a subagent's `cwd`
            run.tools = turn.run_tools(
                generation,
                agent_id=self.agent_id,
                session_key=self.key,
                session_id=rec.session_id,
                run_id=rec.run_id,
                workspace=Path(cwd) if cwd else workspace,
                send=message_sender(run.chat, rec.run_id),
                cron=req.lane == "cron",
                model_ref=model_ref,
                heartbeat=rec.heartbeat,
            )
            req.inbox = SteerInbox()
            spec = turn.turn_spec(
                generation,
                stores,
                run_id=rec.run_id,
                session_key=self.key,
                session_id=rec.session_id,
                agent_id=agent.id,
                message=turn.system_events.prepend(self.key, req.prompt or req.message),
                steer_inbox=req.inbox,
                history=list(history),
                history_tokens=self.history_tokens(),
                history_clean=self.history_clean(),
                model_ref=model_ref,
                extra_system_prompt=req.extra_system_prompt,
                workspace=workspace,
                tools=run.tools,
                cron=req.lane == "cron",
                reasoning_level=self.row.reasoningLevel if self.row else None,
                history_entries=functools.partial(services.store.load_entries, rec.session_id),
                fallbacks=agent.fallbacks if not req.model_ref else (),
                on_block=run.deliver_block,
                row=self.row,
                on_memory_flush=functools.partial(store_flush_ledger, self),
                light_context=req.light_context,
            )
            log_run_started(rec, spec.model_ref)  # issue 14: "run started" log line
            await run_turn(spec, run.emit, run.progress, run.turn)

    def _started(self, rec: RunRecord) -> None:
        """Lifecycle `start` (and `sessions.changed` to those who follow sessions)."""
        hub = self.services.hub
        hub.emit_agent(rec.run_id, "lifecycle", rec.start(now_ms()))
        if hub.has_change_subscribers:
            hub.sessions_changed(
                {
                    "sessionKey": self.key,
                    "phase": "start",
                    "runId": rec.run_id,
                    "ts": rec.started_at,
                }
            )

    def _row_tags(self, rec: RunRecord, messages: list[Message]) -> list[MessageTags]:
        running = self.running
        steered = list(running.inbox.taken_keys) if running and running.inbox else []
        return run_tags(rec.run_id, messages, steered)

    def record_end(
        self,
        rec: RunRecord,
        progress: RunProgress,
        user: UserMessage | None,
        turn: TurnResult | None = None,
    ) -> EndWrite | None:
        """Hand the run's messages (and notes), its compactions, the row and its journal row
        to the store as one transaction (for `actors.session._ending.finish_run`). A
        compaction replaces the in-memory context by its summary and the kept messages; the
        store keeps everything. Returns what to wait for (None when the session has no
        row). Not a checkpoint."""
        if self.row is None:
            return None
        messages = run_messages(rec, progress, user)
        compactions = turn.compactions if turn is not None and user is not None else []
        entries: list[Any] = []
        if messages and self._builder is not None and self._history is not None:
            builder, tags = self._builder, self._row_tags(rec, messages)
            notes = run_notes(progress, messages, rec.run_id, rec.yield_claim)
            entries, context = persist_run(builder, messages, compactions, tags=tags, notes=notes)
            if context is None:
                self._extend_history(added_context(entries))
            else:
                self._history[:] = context
                self._history_tokens = self._history_clean = None
        row = self.row = ended_row(self.row, rec, progress, turn)
        running = self.running
        journal = running.end_row() if running is not None and running.record is rec else None
        commit = CommitWait()
        self.store_commit(
            WriteGroup(
                run=journal,
                row=row,
                session_id=row.sessionId,
                entries=entries,
                on_commit=commit,  # the run's usage goes with its transcript
                usage=usage_write(self, row.sessionId, messages, self.services.generation().config)
                if entries
                else None,
            )
        )
        return EndWrite(commit, [e for e in entries if isinstance(e, MessageEntry)])


@attrs.define(eq=False)
class _Run:
    """A run in progress: where its events go, what it has produced so far."""

    req: RunRequest
    chat: ChatStream
    scope: trio.CancelScope
    progress: RunProgress = attrs.field(factory=RunProgress)
    turn: TurnResult = attrs.field(factory=TurnResult)
    tools: RunTools | None = None
    outcome: RunOutcome = attrs.field(factory=RunOutcome)

    def deliver_block(self, block: BlockReply) -> None:
        """A block reply (block streaming) or a notice: a chat `final` of its own."""
        run_id, kind = self.req.record.run_id, "notice" if block.is_notice else "block"
        send_message(self.chat, run_id, f"{kind}-{run_id}-{block.index}", block.text)

    def emit(self, stream: str, data: dict[str, Any]) -> None:
        chat = self.chat
        if stream == "tool" and data.get("phase") == "start":
            chat.flush()
        if stream == "assistant":
            chat.on_assistant_event(data, self.progress.text)  # coalesced (`actors.runs._chat`)
        else:
            chat.flush_agent()
            chat.hub.emit_agent(self.req.record.run_id, stream, data)


class SessionBusy(ActorError):
    """The session has a run in progress (manual compaction must wait)."""
