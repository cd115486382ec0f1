"""The Supervisor: the generation snapshot, the session actors, the global lane.

It holds the published `ModelRuntimeGeneration` (one reference, swapped atomically by
`publish`); spawns a session actor's drain task when work arrives and reaps idle actors;
owns the global lane (`agents.defaults.maxConcurrent`); and contains crashes: a session
actor that crashes is restarted within its intensity/period (OTP style, default 3 in 5 s),
after which that session reports errors for one period instead of looping. One session's
crash never reaches another.

Accepting a run is one step, `accept_run`: the run is registered, its event stream opened
and it is queued on its session's lane, or (when any of that fails) it ends at once with
its terminal event; nothing in between can leave a record that never ends. The order in
which runs reach a session's lane is fixed by `order` (`actors.runs._order`) when the requests
are received.

Persistence is never awaited on a run's way in: writes go to the store without blocking
(`*_nowait`, with commit callbacks where an answer depends on them); when the store's
channel is full they wait in a backlog that one task feeds to the store (counted in
`statistics()`). A run's end waits for its own writes (see `SessionActor`), so what it
reports is what was stored. A write's `fence` (cluster mode: its session's lease token)
travels with it through the backlog.

Shutdown (`shutdown_runs`): no run is accepted any more, every run is aborted, and a run
that has not ended within `SHUTDOWN_GRACE_S` is ended by the supervisor (its terminal
event, its waiters woken), so nothing holds shutdown.

Background commands (`processes`, the `exec` jobs of every session): `open_supervisor` owns
their registry, so every job's process tree is killed when the supervisor ends, after the
runs; a deleted session's jobs die with it (`forget_session`) and an aborted run's with it
(`actors.session._ending`). When a backgrounded job ends by itself its session is woken as
OpenClaw does (`exec_finished`): its `Exec completed|failed (...)` event is queued as a system
event of that session and a heartbeat wake (`heartbeats.request_wake`, `exec-event`) runs a
turn there that tells it, the events that arrive meanwhile joining it; a `process` poll that
returns the job's end takes the event back first (`exec_collected`).
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, KeysView
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Protocol

import attrs
import msgspec
import trio

from runtime.agent import TurnServices
from runtime.heartbeat import EventDelivery, WakeIntent, WakeResult
from runtime.hooks import InternalHookEvent, SessionEndEvent, SessionStartEvent
from runtime.llm import Pacer
from runtime.loop import now_ms
from runtime.model import ModelRuntimeGeneration
from runtime.sessions import SessionRow, resolve_session_key
from runtime.tools import Job, ProcessRegistry, open_process_registry

from ._errors import ActorError, StoreError
from .runs import (
    AuditRecorder,
    ChatFlusher,
    EventHub,
    RunRecord,
    RunRegistry,
    SubmissionOrder,
    Subscriber,
)
from .session import (
    GlobalLane,
    LaneFull,
    QueueSettings,
    RunRequest,
    SessionActor,
    SessionCounters,
    SessionServices,
    end_unrun,
)
from .store import (
    Fence,
    JournalRow,
    RunOutcome,
    Store,
    WriteBacklog,
    WriteGroup,
    backfill_usage,
    end_unless_ended,
    ended_row,
    memory_indexes,
)

log = logging.getLogger("clawlane.supervisor")

RESTART_INTENSITY: Final = 3
RESTART_PERIOD_S: Final = 5.0
REAP_INTERVAL_S: Final = 30.0


SUBAGENT_LANE_CAP: Final = 8
CRON_LANE_CAP: Final = 1
NESTED_LANE_CAP: Final = 1
JOURNAL_RETRY_MAX: Final = 10_000
"""Journal rows kept to write again after their run's writes failed (beyond: a restart
reports those runs interrupted, which is also an error)."""
SHUTDOWN_GRACE_S: Final = 10.0
"""How long shutdown waits for aborted runs to end before ending them itself."""


class RunRefused(ActorError):
    """`accept_run` did not take the run (nothing was registered)."""


class RunInFlight(RunRefused):
    """A run with this id is still in flight."""


class ShuttingDown(RunRefused):
    """The gateway is shutting down: no new runs."""


class HeartbeatControl(Protocol):
    """What the supervisor holds of the agents' heartbeats, for the methods and the tools
    that reach them through it: `actors.heartbeat.Heartbeats`, a floor above this one."""

    last_event: dict[str, Any] | None

    async def set_enabled(self, enabled: bool) -> None: ...
    def session_for(self, agent_id: str) -> str: ...
    def enqueue(self, session_key: str, text: str) -> None: ...
    def wake_now(self, agent_id: str, reason: str, session_key: str | None = None) -> None: ...
    def request_wake(
        self,
        agent_id: str,
        *,
        source: str,
        intent: WakeIntent,
        reason: str,
        session_key: str | None = None,
        coalesce_s: float = ...,
    ) -> None: ...
    async def wake_and_wait(
        self, agent_id: str, *, source: str, intent: WakeIntent, reason: str
    ) -> WakeResult: ...
    async def deliver_event(
        self, agent_id: str, session_key: str, text: str, *, context_key: str, wait: bool
    ) -> EventDelivery: ...


@attrs.frozen
class SupervisorStatistics:
    generation: int
    sessions: int
    busy_sessions: int
    queued_runs: int
    lane_in_use: int
    lane_capacity: int
    lane_waiting: int
    crashes: int
    persist_backlog: int
    turns_not_stored: int = 0
    runs_forced_end: int = 0
    submissions_waiting: int = 0
    idle_context_bytes: int = 0
    contexts_dropped: int = 0


class IdleContexts:
    """The contexts idle session actors keep in memory, least recently used first, bounded
    in bytes (estimated: `SessionActor.context_bytes`). Past `max_bytes` the oldest let
    theirs go (`drop_context`) and load it from the store at their next run. Without this
    every session used within `gateway.idleSessionSeconds` kept its whole context: a client writing 2 MiB
    messages to 1,000 new sessions a minute held 20 GB. The bound is the config's
    `gateway.idleContextsMaxBytes`, set again by each generation (`resize`)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.dropped = 0
        self._held: collections.OrderedDict[str, tuple[SessionActor, int]] = (
            collections.OrderedDict()
        )

    def idle(self, actor: SessionActor) -> None:
        """`actor`'s lane has emptied: its context counts; the oldest past the bound go.
        One whose last writes have not committed yet stays, and goes at a later call."""
        self.release(actor.key)
        size = actor.context_bytes()
        if size:
            self._held[actor.key] = (actor, size)
            self.bytes += size
        self._trim()

    def resize(self, max_bytes: int) -> None:
        """A new bound (a new generation's); lowered, the oldest past it go at once."""
        self.max_bytes = max_bytes
        self._trim()

    def _trim(self) -> None:
        for _ in range(len(self._held)):
            if self.bytes <= self.max_bytes:
                return
            key, (oldest, oldest_size) = self._held.popitem(last=False)
            self.bytes -= oldest_size
            if oldest.drop_context():
                self.dropped += 1
            elif not oldest.busy:  # settling: it stays, newest now
                self._held[key] = (oldest, oldest_size)
                self.bytes += oldest_size

    def release(self, key: str) -> None:
        """`key`'s session runs again, or is gone: its context no longer counts here."""
        held = self._held.pop(key, None)
        if held is not None:
            self.bytes -= held[1]


class Supervisor:
    """Create with `open_supervisor`. All methods run in the trio thread."""

    def __init__(
        self,
        *,
        generation: ModelRuntimeGeneration,
        store: Store,
        hub: EventHub,
        registry: RunRegistry,
        nursery: trio.Nursery,
        workspace_root: Path,
    ) -> None:
        self._generation = generation
        self.store = store
        self.hub = hub
        self.registry = registry
        self.chat_flusher = ChatFlusher()
        self.pacer = Pacer()  # the local model's pacing timer (see `runtime.llm._pacer`)
        self._nursery = nursery
        self._sessions: dict[str, SessionActor] = {}
        self.lanes: dict[str, GlobalLane] = {
            "main": GlobalLane("main", generation.config.agents.defaults.maxConcurrent),
            "subagent": GlobalLane("subagent", SUBAGENT_LANE_CAP),
            "cron": GlobalLane("cron", CRON_LANE_CAP),
            "nested": GlobalLane("nested", NESTED_LANE_CAP),
        }
        self.lane = self.lanes["main"].slots
        self._idle_ttl = float(generation.config.gateway.idleSessionSeconds)
        self.idle_contexts = IdleContexts(generation.config.gateway.idleContextsMaxBytes)
        self._crashes = 0
        self.writes = WriteBacklog(store)
        """Durable writes handed over without blocking wait here while the store is busy."""
        self.order = SubmissionOrder()
        self.session_gate: Callable[[str], Awaitable[None]] | None = None
        """In a cluster (the router's `take_session`): awaited before a run that no request
        brought (a cron firing) uses a session, so that this node owns it."""
        self.session_fence: Callable[[str], Fence] | None = None
        """In a cluster (the router's `SessionLeases.fence_of`): the fence an actor made
        here carries from its start, its writes refused unless this node holds the
        session's lease (an actor made as the lease was being lost must not write unfenced)."""
        self.closing = False
        """Set by `shutdown_runs`: `accept_run` refuses new runs."""
        self.usage_backfilled = trio.Event()
        """Set when `backfill_usage` has ended (done or stopped)."""
        self.counters = SessionCounters()
        self.audit: AuditRecorder | None = None
        """The runs' audit log (`actors.runs.AuditRecorder`), set by `open_supervisor`."""
        self.heartbeats: HeartbeatControl | None = None
        """The agents' heartbeats (`actors.heartbeat.open_heartbeats` sets them while open)."""
        self.processes: ProcessRegistry | None = None
        """The background commands' registry (`use_processes`); None: exec in the foreground."""
        self._forced = 0
        self._journal_retry: dict[str, JournalRow] = {}
        self.services = TurnServices(workspace_root=workspace_root)
        """The hooks, plugins, caches and workspaces every run's turn uses."""
        self.hooks = self.services.hooks
        self.internal_hooks = self.services.internal_hooks
        self.prompt_cache = self.services.prompt_cache
        self.block_flusher = self.services.block_flusher
        self.plugins = self.services.plugins
        self.started_at = time.time()
        self.session_services: SessionServices[SessionActor] = SessionServices(
            hub=hub,
            registry=registry,
            store=store,
            chat_flusher=self.chat_flusher,
            turn=self.services,
            generation=lambda: self._generation,
            lane_for=self.lane_for,
            store_commit=self.store_commit,
            journal_later=self.journal_later,
            retry_journal=self.retry_journal,
            restart_drain=self.restart_drain,
            session_lifecycle=self.session_lifecycle,
            counters=self.counters,
        )
        """What each session actor gets at spawn (instead of the supervisor)."""

    @property
    def turns_not_stored(self) -> int:
        """Runs whose end could not be written (reported to their callers as errors)."""
        return self.counters.turns_not_stored

    # --- generation -----------------------------------------------------------------------

    @property
    def generation(self) -> ModelRuntimeGeneration:
        return self._generation

    def publish(self, generation: ModelRuntimeGeneration) -> ModelRuntimeGeneration:
        """Swap the published generation atomically. Returns the one it replaced."""
        old = self._generation
        if generation.number <= old.number:
            raise ValueError(f"generation {generation.number} is not newer than {old.number}")
        self._generation = generation
        self.lane.total_tokens = generation.config.agents.defaults.maxConcurrent  # main lane
        self.idle_contexts.resize(generation.config.gateway.idleContextsMaxBytes)
        self._idle_ttl = float(generation.config.gateway.idleSessionSeconds)
        return old

    def idle_timeout(self, *, cron: bool = False) -> float | None:
        """The LLM idle window; `cron`: a run on the cron lane (no watchdog by default)."""
        return self.services.idle_timeout(self._generation, cron=cron)

    def turn_settings(self) -> dict[str, Any]:
        """The current generation's per-run settings (`TurnServices.turn_settings`)."""
        return self.services.turn_settings(self._generation)

    async def workspace_for(self, agent_id: str, configured: str | None) -> Path:
        """The agent's workspace (created when missing). A checkpoint."""
        return await self.services.workspace_for(agent_id, configured)

    # --- sessions -------------------------------------------------------------------------

    def resolve_key(self, raw: str | None, agent_id: str | None) -> str:
        """Canonical session key (raises `SessionKeyError`)."""
        return resolve_session_key(
            raw, agent_id=agent_id, default_agent=self._generation.default_agent
        )

    async def session(self, key: str, agent_id: str) -> SessionActor:
        """The actor for `key`, loading its row on first use. A checkpoint. Raises
        `StoreError` when its row cannot be read (the database away): the actor is
        forgotten, and the next request loads it again."""
        while (actor := self._sessions.get(key)) is not None:
            await actor.loaded.wait()
            if actor.row is not None:
                return actor
            if self._sessions.get(key) is actor:  # its load failed: load it here
                del self._sessions[key]
        actor = SessionActor(key=key, agent_id=agent_id, services=self.session_services)
        if self.session_fence is not None:
            actor.fence = self.session_fence(key)
        self._sessions[key] = actor
        try:
            await actor.load()
        finally:
            if actor.row is None and self._sessions.get(key) is actor:
                del self._sessions[key]
        assert actor.row is not None
        if actor.created and self.hooks.has("session_start"):
            await self.hooks.fire(
                "session_start",
                SessionStartEvent(sessionId=actor.row.sessionId, sessionKey=key),
            )
        return actor

    async def forget_session(self, key: str, *, delete_transcript: bool = True) -> bool:
        """Delete a session's row (and transcript) and forget its actor; its background
        commands are killed. A checkpoint."""
        if self.processes is not None:
            self.processes.kill_session(key)
        actor = self._sessions.pop(key, None)
        self.idle_contexts.release(key)
        if actor is not None and actor.row is not None and self.hooks.has("session_end"):
            await self.hooks.fire(
                "session_end",
                SessionEndEvent(
                    sessionId=actor.row.sessionId, sessionKey=key, messageCount=0, reason="deleted"
                ),
            )
        return await self.store.delete_session(key, delete_transcript=delete_transcript)

    async def session_lifecycle(
        self, actor: SessionActor, old: SessionRow | None, reason: str
    ) -> None:
        """Hooks around a reset: `session_end` for the old id, `session_start` for the new
        one, and the internal `command:new` / `command:reset` hook; the session's ended
        background commands are forgotten (running ones go on, as in OpenClaw). A
        checkpoint."""
        if self.processes is not None:
            self.processes.clear_finished(actor.key)
        hooks = self.hooks
        if old is not None and hooks.has("session_end"):
            await hooks.fire(
                "session_end",
                SessionEndEvent(
                    sessionId=old.sessionId,
                    sessionKey=actor.key,
                    messageCount=0,
                    reason="new" if reason == "new" else "reset",
                ),
            )
        if actor.row is not None and hooks.has("session_start"):
            await hooks.fire(
                "session_start",
                SessionStartEvent(
                    sessionId=actor.row.sessionId,
                    sessionKey=actor.key,
                    resumedFrom=old.sessionId if old else None,
                ),
            )
        action = "new" if reason == "new" else "reset"
        if self.internal_hooks.has_listeners("command", action):
            await self.internal_hooks.trigger(
                InternalHookEvent(
                    type="command",
                    action=action,
                    sessionKey=actor.key,
                    context={"previousSessionId": old.sessionId if old else None},
                )
            )
        await trio.lowlevel.checkpoint()

    def peek_session(self, key: str) -> SessionActor | None:
        return self._sessions.get(key)

    def session_keys(self) -> KeysView[str]:
        """The keys of the sessions with an actor here (a live view)."""
        return self._sessions.keys()

    def drop_session(self, key: str) -> SessionActor | None:
        """Forget the actor of `key` without touching what is stored (in a cluster: this
        node lost the session's lease, or gives an idle session up to another node). The
        caller aborts its runs, if it has any."""
        self.idle_contexts.release(key)
        return self._sessions.pop(key, None)

    def sessions(self) -> list[SessionActor]:
        return list(self._sessions.values())

    # --- background commands --------------------------------------------------------------

    def use_processes(self, processes: ProcessRegistry) -> None:
        """Give runs `processes` for `exec` and `process`, and hear of their jobs' ends."""
        self.processes = self.services.processes = processes
        processes.on_exit = self.exec_finished
        processes.on_collected = self.exec_collected

    def exec_finished(self, job: Job) -> None:
        """A backgrounded job ended by itself: `exec_ended` with its end. Not a checkpoint."""
        self.exec_ended(job.agent_id, job.session_key, job.id, job.exit_event())

    def exec_ended(self, agent_id: str, key: str, job_id: str, text: str) -> None:
        """Background job `job_id` of session `key` ended (here, or on another node of a
        cluster, which sends it to the session's owner): `text` is queued as a system event
        of the session, and (but for a subagent's, which polls, as in OpenClaw) a heartbeat
        wake tells the session at once (`actors.heartbeat`: OpenClaw's `exec-event` wake,
        once the session is free). No ordinary turn reads it (as OpenClaw's): without that
        heartbeat it stays queued for the next one that tells it. Not a checkpoint."""
        if self.closing:
            return
        self.services.system_events.enqueue(key, text, context_key=f"exec:{job_id}")
        if self.heartbeats is not None and ":subagent:" not in key:
            self.heartbeats.request_wake(
                agent_id,
                source="exec-event",
                intent="event",
                reason="exec-event",
                session_key=key,
                coalesce_s=0.0,
            )

    def exec_collected(self, key: str, job_id: str) -> None:
        """A `process` poll returned the end of job `job_id` of session `key`: its completion,
        if queued here, is taken out (OpenClaw's poll removes it), so no heartbeat tells it
        again and a subagent's queue does not keep it. Not a checkpoint."""
        self.services.system_events.take_context(key, f"exec:{job_id}")

    def accept_run(
        self,
        actor: SessionActor,
        request: RunRequest,
        settings: QueueSettings,
        *,
        owner: Subscriber | None = None,
    ) -> None:
        """Register the run of `request` (its record, its event stream, with `owner` as the
        connection that started it) and place it on its session's lane, as one step.

        Raises, before anything is registered: `ShuttingDown`, `RunInFlight` (a run with
        this id has not ended), `LaneFull` (the queue is at its cap, drop policy `new`).
        Anything failing after the record is registered ends the run at once (terminal
        event, waiters woken) and is raised. Not a checkpoint."""
        rec = request.record
        if self.closing:
            raise ShuttingDown("the gateway is shutting down; the run was not accepted")
        existing = self.registry.get(rec.run_id)
        if existing is not None and not existing.ended:
            raise RunInFlight(f"run {rec.run_id} is already in flight")
        if actor.would_reject(settings):
            raise LaneFull(
                f"the session's queue is full ({settings.cap} pending); message rejected"
            )
        try:
            self.registry.add(rec)
            self.hub.open_run(
                rec.run_id,
                actor.key,
                owner=owner,
                session_id=rec.session_id,
                agent_id=rec.agent_id,
            )
            self.submit(actor, request, settings)
        except BaseException:
            log.exception("run %s could not be queued on %s", rec.run_id, actor.key)
            actor.lane.remove(rec.run_id)
            if self.registry.get(rec.run_id) is rec:
                actor.finish_unrun(request, "dropped")
            else:
                self.journal_refused(request, "the run could not be registered")
            raise

    def journal_refused(self, request: RunRequest, reason: str) -> None:
        """A run journaled as accepted that `accept_run` refused (or that was cancelled
        before it): end its journal row, so that a restart does not report it."""
        rec = request.record
        if rec.ended or not request.journaled:
            return
        t = now_ms()
        outcome = RunOutcome(status="error", error=reason)
        self.store_commit(
            WriteGroup(run=ended_row(request.identity(), ended_at=t, outcome=outcome))
        )

    def journal_later(self, row: JournalRow) -> None:
        """A run's end row that could not be written (its turn was not stored): write it
        again once writes succeed (`retry_journal`), so that a restart reports the run as
        it ended. Not a checkpoint."""
        if len(self._journal_retry) < JOURNAL_RETRY_MAX:
            self._journal_retry[row.run_id] = row

    def retry_journal(self) -> None:
        """Enqueue the end rows `journal_later` kept (a run's writes just committed: the
        disk is back). Not a checkpoint."""
        if not self._journal_retry:
            return
        rows, self._journal_retry = self._journal_retry, {}
        for row in rows.values():
            current = self.registry.get(row.run_id)
            if current is not None and not current.ended:
                continue  # the id runs again: its own end row will be written

            def done(error: StoreError | None, row: JournalRow = row) -> None:
                if error is not None:
                    self.journal_later(row)

            # unless the first commit, reported failed, went through: one end per run
            self.store_commit(WriteGroup(calls=(end_unless_ended(row),), on_commit=done))

    def settle_dropped(self, actor: SessionActor, queued: list[RunRequest]) -> None:
        """The runs `actor` had queued when this node found its session's lease lost: they
        never ran here, and another node holds the session now (their writes would be
        refused). Each ends as the journal has it when it has ended there already (the
        other node's reaper reported it interrupted while this node could not act: frozen,
        cut off from Redis), else `aborted`, its end row written without the session's
        fence unless one exists by then: so every node answers it alike (but for a report
        landing between that read and this write). Not a checkpoint: a task does it."""
        self._nursery.start_soon(self._settle_dropped, actor, queued)

    async def _settle_dropped(self, actor: SessionActor, queued: list[RunRequest]) -> None:
        for req in queued:
            ended_as = None
            try:
                row = await self.store.load_run(req.record.run_id)
                if row is not None and row.ended and row.state == "error":
                    ended_as = row.outcome().error or "run failed"
            except (StoreError, msgspec.DecodeError):
                pass  # cannot tell: it ends aborted here
            commit, key = self._end_once, actor.key
            end_unrun(actor.services, key, req, "interrupt", commit=commit, ended_as=ended_as)

    def _end_once(self, group: WriteGroup) -> None:
        """`group`'s run end row, unless the run's acceptance already has one; no fence."""
        if group.run is not None:
            self.store_commit(WriteGroup(calls=(end_unless_ended(group.run),)))

    def submit(
        self, actor: SessionActor, request: RunRequest, settings: QueueSettings | None = None
    ) -> None:
        """Place a run on its session's lane per the queue mode. Not a checkpoint; never
        blocks. Raises `LaneFull` when the queue is at its cap with drop policy `new`."""
        actor.enqueue(request, settings or actor.queue_settings("followup"))
        actor.last_active = time.monotonic()
        self.idle_contexts.release(actor.key)
        self.restart_drain(actor)

    def restart_drain(self, actor: SessionActor) -> None:
        """Start the actor's drain task if work is waiting and none runs."""
        if not actor.draining and actor.lane:
            actor.draining = True
            self._nursery.start_soon(self._drain, actor, name=f"session:{actor.key}")

    def lane_for(self, name: str) -> GlobalLane:
        lane = self.lanes.get(name)
        if lane is None:
            raise ValueError(f"unknown lane {name!r} (expected one of {', '.join(self.lanes)})")
        return lane

    async def _drain(self, actor: SessionActor) -> None:
        try:
            while True:
                try:
                    await actor.drain()
                    return
                except Exception:
                    self._crashes += 1
                    log.exception("session actor %s crashed", actor.key)
                    now = trio.current_time()
                    actor.crashes.append(now)
                    while actor.crashes and now - actor.crashes[0] > RESTART_PERIOD_S:
                        actor.crashes.popleft()
                    if len(actor.crashes) > RESTART_INTENSITY:
                        log.error("session actor %s exceeded its restart intensity", actor.key)
                        actor.failed_until = now + RESTART_PERIOD_S
                    # Restart: the loop drains what is left; failed sessions end each run
                    # with a lifecycle error until the period passes.
        finally:
            actor.draining = False
            actor.running = None
            if not actor.lane and self._sessions.get(actor.key) is actor:
                try:
                    self.idle_contexts.idle(actor)
                except Exception:  # an unsized context: not counted, the supervisor lives
                    log.exception("session actor %s: its idle context not counted", actor.key)

    async def _reaper(self) -> None:
        while True:
            await trio.sleep(REAP_INTERVAL_S)
            self.reap_idle()

    def reap_idle(self, *, now: float | None = None) -> int:
        """Forget actors idle for longer than `gateway.idleSessionSeconds`. Returns how
        many."""
        now = time.monotonic() if now is None else now
        idle = [
            k
            for k, a in self._sessions.items()
            if not a.busy and a.loaded.is_set() and now - a.last_active > self._idle_ttl
        ]
        for k in idle:
            del self._sessions[k]
            self.idle_contexts.release(k)
        return len(idle)

    # --- persistence without blocking runs -----------------------------------------------

    def store_commit(self, group: WriteGroup) -> None:
        """Writes that commit together, through the write backlog when the store's channel
        is full (`WriteBacklog.commit`). Not a checkpoint."""
        self.writes.commit(group)

    def statistics(self) -> SupervisorStatistics:
        lane = self.lane.statistics()
        return SupervisorStatistics(
            generation=self._generation.number,
            sessions=len(self._sessions),
            busy_sessions=sum(1 for a in self._sessions.values() if a.busy),
            queued_runs=sum(len(a.queue) for a in self._sessions.values()),
            lane_in_use=lane.borrowed_tokens,
            lane_capacity=int(lane.total_tokens),
            lane_waiting=lane.tasks_waiting,
            crashes=self._crashes,
            persist_backlog=len(self.writes),
            turns_not_stored=self.turns_not_stored,
            runs_forced_end=self._forced,
            submissions_waiting=self.order.statistics().tickets,
            idle_context_bytes=self.idle_contexts.bytes,
            contexts_dropped=self.idle_contexts.dropped,
        )

    async def backfill_usage(self) -> None:
        """Add the usage of turns stored before the aggregates were kept (`backfill_usage`:
        once per session); the gateway runs it in the background after startup. A store
        failure is logged, and the next start goes on from there."""
        try:
            await backfill_usage(self.store, lambda: self.generation.config)
        except StoreError as exc:
            log.warning("usage backfill stopped: %s (the next start goes on)", exc)
        finally:
            self.usage_backfilled.set()

    async def shutdown_runs(self, *, grace_s: float | None = None) -> None:
        """Refuse new runs, abort every run (queued or active) with reason `shutdown` and
        wait for their ends; a run that has not ended after `grace_s` is ended here (its
        terminal event, its waiters woken: nothing holds shutdown). A checkpoint."""
        self.closing = True
        records = self.registry.active()
        for r in records:
            r.abort("shutdown")
        with trio.move_on_after(SHUTDOWN_GRACE_S if grace_s is None else grace_s):
            for r in records:
                await r.done.wait()
        for r in self.registry.active():
            self._force_end(r)
        self.retry_journal()
        await self.writes.drain()

    def _force_end(self, rec: RunRecord) -> None:
        """End a run its session actor did not end (a bug elsewhere; logged)."""
        log.error("run %s on %s did not end at shutdown; ending it", rec.run_id, rec.session_key)
        self._forced += 1
        t = now_ms()
        rec.aborted = True
        rec.abort_reason = rec.abort_reason or "shutdown"
        rec.status = "aborted"
        rec.started_at = rec.started_at or t
        rec.ended_at = t
        rec.final = rec.final or {
            "payloads": [],
            "meta": {"aborted": True, "stopReason": "shutdown"},
        }
        try:
            self.hub.open_run(rec.run_id, rec.session_key, session_id=rec.session_id)
            self.hub.emit_agent(
                rec.run_id,
                "lifecycle",
                {
                    "phase": "end",
                    "startedAt": rec.started_at,
                    "endedAt": t,
                    "aborted": True,
                    "stopReason": rec.abort_reason,
                },
            )
            self.hub.emit_chat(rec.run_id, "aborted", stopReason=rec.abort_reason)
        finally:
            self.registry.finish(rec)
            self.hub.close_run(rec.run_id)


@asynccontextmanager
async def open_supervisor(
    *,
    generation: ModelRuntimeGeneration,
    store: Store,
    hub: EventHub | None = None,
    registry: RunRegistry | None = None,
    workspace_root: Path,
    processes_dir: Path | None = None,
) -> AsyncIterator[Supervisor]:
    """Run a supervisor. On exit every run ends with its terminal event and the backlog
    is handed to the store before the nursery closes; then every background command is
    killed. Running commands are recorded in `processes_dir` (default: `processes` beside
    the workspace root, in the state dir), and what a crashed gateway left there is killed
    first."""
    records = processes_dir or workspace_root.parent / "processes"
    async with (
        open_process_registry(records_dir=records) as processes,
        trio.open_nursery() as nursery,
    ):
        sup = Supervisor(
            generation=generation,
            store=store,
            hub=hub or EventHub(),
            registry=registry or RunRegistry(),
            nursery=nursery,
            workspace_root=workspace_root,
        )
        sup.use_processes(processes)
        memory = memory_indexes(store)  # on PostgreSQL: the memory indexes there too
        if memory is not None:
            sup.services.memory.use_indexes(memory)
        del generation  # the supervisor holds the serving one; a pinned one never retires
        audit = sup.audit = AuditRecorder(
            store, lambda: sup.generation.config.logging.audit.enabled
        )
        sup.hub.audit = audit.record
        nursery.start_soon(audit.run, name="audit-writer")
        nursery.start_soon(sup.pacer.run, name="pacer")
        nursery.start_soon(sup.chat_flusher.run, name="chat-flusher")
        nursery.start_soon(sup.block_flusher.run, name="block-flusher")
        nursery.start_soon(sup._reaper, name="session-reaper")
        nursery.start_soon(sup.writes.feed, name="persist-backlog")
        try:
            yield sup
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(SHUTDOWN_GRACE_S + 20):
                await sup.shutdown_runs()
                await audit.flush()  # the runs' ends, in the audit log
                if memory is not None:
                    await trio.to_thread.run_sync(memory.close)
            nursery.cancel_scope.cancel()
