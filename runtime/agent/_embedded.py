"""The embedded runtime: `runtime/` as a library, without the gateway.

    async with open_embedded_runtime(config) as rt:
        result = await rt.run_turn("hello", session_key="demo", on_event=print)
        rt.publish(new_config)          # a new generation; runs in flight keep theirs

`open_embedded_runtime` builds generation 1 through the same `GenerationBuilder` the gateway's
publisher uses, so both publish the same generation shape at their activation boundary.
`publish(config)` builds the next generation completely and swaps it in whole; a failed build
raises (`GenerationError`) and the current generation keeps serving.

`run_turn` runs one agent turn in-process, the same turn the gateway runs: the run lifecycle
of `runtime.agent._run` (lifecycle `start`, exactly one `end` or `error`, the same stop reasons
and final `{payloads, meta}`) around `run_turn` with the host's `TurnServices` (the agent's
tools under its tool policy in its workspace, plugin hooks and tools, prompt assembly with
skills and bootstrap files, compaction, model fallback). Events are reported as the
gateway's `agent` event payloads (`{runId, seq, stream, ts, data, sessionKey, sessionId,
agentId}`, `seq` from 1). Turns of one session run one at a time, in order.

Used as `async with`, the runtime owns a process registry for the agents' background commands
(`exec` with `yieldMs`/`background`, then `process`); leaving the block kills every command
and its tree, and a turn aborted or cancelled kills those it started. Without `async with`
(`aclose()` only) commands run in the foreground. A job's end wakes nothing here: the next
turn polls it with `process`.

The tools that need a host are offered as the gateway offers them, over the runtime's own
sessions and in memory (`_embedded_sessions`, `_embedded_desks`):
- session tools: `sessions_list` / `sessions_history` / `session_status` / `agents_list` read
  its sessions; `sessions_send` runs a turn on the target and returns its reply inline
  (`mode: "notify"` queues it for the target's next turn); `sessions_spawn` runs a child
  `agent:<id>:subagent:<uuid>` as a task of the runtime (only as `async with`) within
  `agents.defaults.subagents` limits and announces its result with a turn on the parent;
  `subagents`, `agents_wait`, `sessions_yield` follow those tasks. Events of the turns the
  runtime starts itself go to `rt.on_event`.
- `ask_user`: the question is a `question.requested` event of the turn; answer it with
  `rt.answer_question(id, answers)` (`rt.pending_questions()` lists them); without an answer
  by its timeout the tool says no answer came (`question.resolved` either way).
- `progress_card`: read with `rt.progress_card(session_key)`; `progressCard.changed` events.
- `gateway`: `config.get` / `config.schema.lookup` of the current config (redacted); it
  writes nothing (`publish` changes the config).
- `automations` (`cron`): as `async with`, a scheduler with the jobs in memory for the
  runtime's life (`_embedded_cron`, `rt.cron`): due jobs run as the gateway runs them, their
  turns' events go to `rt.on_event`; without it every action is a tool error.
- `heartbeat_respond`: offered in `run_turn(..., heartbeat=True)`; the result's `heartbeat`
  is what it accepted.

Transcripts are kept in memory, or, with `store=`, through the gateway's store interface
(`SessionStore`: e.g. `actors.open_store` on a SQLite file), so an embedded app can close
and reopen a session; opened again (as `async with`) on such a store, it tells each parent the
ends of its subagents it was not told before the close (`_embedded_recovery`, `rt.recovered`).
A turn's writes are committed before its terminal event; a turn that could not be stored
ends with `error` ("the turn was not stored: ..."), as in the gateway.

Errors: `publish` raises `GenerationError` (and `ConfigError` for a bad auth profile store, as
a `GenerationError`); `run_turn` never raises for a failed run (the result says `error`), only
`ValueError` for a malformed session key and `trio.Cancelled`.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Protocol

import attrs
import msgspec
import trio

from ..llm._types import Message
from ..loop._agent import RunProgress, SteerInbox, ToolRunner, now_ms
from ..model._config import Config
from ..model._generation import (
    GenerationBuilder,
    ModelRuntimeGeneration,
    ProviderFactory,
    default_provider_factory,
)
from ..model._plugins import PluginRegistry
from ..sessions._branches import branch_messages
from ..sessions._sessions import (
    MessageEntry,
    SessionKeyError,
    SessionRow,
    TranscriptBuilder,
    TranscriptEntry,
    added_context,
    build_context,
    new_session_row,
    parse_session_key,
    resolve_session_key,
)
from ..tools import open_process_registry
from ._compaction import MessageTags, persist_run
from ._embedded_cron import EmbeddedCron, open_embedded_cron
from ._embedded_desks import (
    EmbeddedCards,
    EmbeddedConfigReader,
    EmbeddedQuestions,
    NoScheduler,
)
from ._embedded_recovery import recover_subagents, turn_notes
from ._embedded_sessions import EmbeddedSessions, TrackedRun
from ._reply import SilentStreamFilter
from ._run import RunOutcome, RunState, ended_row, final_payload, run_guarded, run_messages
from ._services import TurnServices
from ._turn import run_turn
from ._turnspec import TurnResult

__all__ = [
    "EmbeddedRuntime",
    "EmbeddedTurnResult",
    "EventCallback",
    "SessionStore",
    "open_embedded_runtime",
]

EventCallback = Callable[[dict[str, Any]], None]
"""Receives each event payload as a dict; synchronous, must not block."""


class SessionStore(Protocol):
    """Where an embedded runtime keeps session rows and transcripts: the interface of the
    gateway's store (`actors.Store`). Each call is a checkpoint; `save_turn` returns once
    the row and the entries are committed together and raises (any `Exception`) when they
    could not be."""

    async def get_session(self, key: str) -> SessionRow | None: ...

    async def load_entries(self, session_id: str) -> list[TranscriptEntry]: ...

    async def save_turn(
        self,
        *,
        row: SessionRow | None = None,
        session_id: str | None = None,
        entries: Sequence[TranscriptEntry] = (),
    ) -> None: ...


@attrs.define(eq=False)
class _Session:
    """One session of the embedded runtime: its row, its context, its lane."""

    row: SessionRow
    history: list[Message]
    builder: TranscriptBuilder
    entries: list[TranscriptEntry] = attrs.field(factory=list)
    """Its transcript, kept here when the runtime has no store."""
    lane: trio.Lock = attrs.field(factory=trio.Lock)
    stale: bool = False
    """A write failed: what is in memory is not what is stored (reload before the next turn)."""


@attrs.frozen
class EmbeddedTurnResult:
    """A finished turn: the gateway's final `{payloads, meta}` plus what is handy in-process."""

    run_id: str
    session_key: str
    session_id: str
    agent_id: str
    status: Literal["ok", "error", "aborted"]
    text: str
    payloads: tuple[Mapping[str, Any], ...]
    meta: Mapping[str, Any]
    error: str | None = None
    events: int = 0
    messages: tuple[str, ...] = ()
    """What the `message` tool sent during the turn, in order."""
    heartbeat: Mapping[str, Any] | None = None
    """In a heartbeat turn, what its `heartbeat_respond` accepted (None: not called)."""

    @property
    def generation(self) -> int:
        return int(self.meta["generation"])

    def to_payload(self) -> dict[str, Any]:
        """`{payloads, meta}` as in the gateway's final `agent` response."""
        return {"payloads": [dict(p) for p in self.payloads], "meta": dict(self.meta)}


class EmbeddedRuntime:
    """Create with `open_embedded_runtime`. Use from one trio thread."""

    def __init__(
        self,
        *,
        builder: GenerationBuilder,
        generation: ModelRuntimeGeneration,
        services: TurnServices,
        store: SessionStore | None = None,
        retry_attempts: int = 3,
    ) -> None:
        self._builder = builder
        self._generation = generation
        self.services = services
        """The hooks (`services.hooks`), plugins, caches and workspaces of every turn."""
        self._store = store
        self._retry_attempts = retry_attempts
        self._sessions: dict[str, _Session] = {}
        self._loading: dict[str, trio.Lock] = {}
        self._retired: list[Any] = []
        self.published: list[Callable[[ModelRuntimeGeneration], None]] = []
        self._exits = contextlib.AsyncExitStack()
        self._turns: dict[str, _Turn] = {}
        """The turn going on in each session (a session runs one at a time)."""
        self._nursery: trio.Nursery | None = None
        self.on_event: EventCallback | None = None
        """Receives the events of the turns the runtime starts itself (a `sessions_send`
        target's, a subagent's, an announce), as `run_turn`'s `on_event` does."""
        self.questions = EmbeddedQuestions(self._emit_in)
        self.cards = EmbeddedCards(self._emit_in)
        self.sessions = EmbeddedSessions(self)
        services.questions = self.questions
        services.cards = self.cards
        services.config_reader = EmbeddedConfigReader(lambda: self._generation.config)
        services.sessions = self.sessions
        services.automations = NoScheduler()
        self.cron: EmbeddedCron | None = None
        """The scheduler behind `automations`, while used as `async with`."""
        self.recovered: list[str] = []
        """The subagent tasks whose telling the opening took up (`_embedded_recovery`)."""
        self._closing = False

    # --- generations ----------------------------------------------------------------------

    @property
    def generation(self) -> ModelRuntimeGeneration:
        """The published generation (runs starting now use it)."""
        return self._generation

    @property
    def builder(self) -> GenerationBuilder:
        return self._builder

    def publish(self, config: Config | None = None) -> ModelRuntimeGeneration:
        """Build the next generation from `config` (the current one when None, e.g. after a
        plugin registered a harness) and swap it in. Not a checkpoint; blocking I/O for the
        auth profile stores. Raises `GenerationError`; the current generation keeps serving.
        """
        config = self._generation.config if config is None else config
        snapshot = self.services.plugins.snapshot()
        generation = self._builder.build_config(config, self._generation.number + 1, snapshot)
        self._generation = generation
        self._retired.extend(self._builder.collect_retired(keep=[generation]))
        for callback in list(self.published):
            callback(generation)
        return generation

    # --- sessions -------------------------------------------------------------------------

    def transcript(self, session_key: str) -> list[Message]:
        """The session's context messages so far (a copy; empty for a session not used
        since the runtime opened)."""
        session = self._sessions.get(self._key(session_key, None))
        return list(session.history) if session is not None else []

    def progress_card(self, session_key: str) -> dict[str, Any] | None:
        """The session's progress card (`{sessionKey, revision, updatedAt, markdown?,
        steps?}`), or None."""
        return self.cards.get(self._key(session_key, None))

    def pending_questions(self) -> list[dict[str, Any]]:
        """The questions `ask_user` is waiting on (the `question.requested` records)."""
        return self.questions.pending()

    def answer_question(
        self, question_id: str, answers: Mapping[str, Sequence[str] | str]
    ) -> dict[str, list[str]]:
        """Answer a pending `ask_user` question: `{<questionId>: value or [values]}`; its
        turn goes on with the answers (canonical form, returned). Raises `KeyError` (no
        such question pending) and `ValueError` (answers that do not answer it:
        `runtime.tools.InvalidAnswerError`). Not a checkpoint."""
        given = {k: [v] if isinstance(v, str) else list(v) for k, v in answers.items()}
        return self.questions.answer(question_id, given)

    def _emit_in(self, session_key: str, stream: str, data: dict[str, Any]) -> None:
        turn = self._turns.get(session_key)
        if turn is not None:
            turn.emit(stream, data)

    def _key(self, raw: str | None, agent_id: str | None) -> str:
        return resolve_session_key(
            raw, agent_id=agent_id, default_agent=self._generation.default_agent
        )

    async def _session(self, key: str) -> _Session:
        """The session, loaded from the store on first use (or made). A checkpoint."""
        session = self._sessions.get(key)
        if session is not None:
            return session
        async with self._loading.setdefault(key, trio.Lock()):
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = await self._load(key)
        self._loading.pop(key, None)
        return session

    async def _load(self, key: str) -> _Session:
        row = await self._store.get_session(key) if self._store is not None else None
        if row is None:
            return _Session(new_session_row(key, now_ms=now_ms()), [], TranscriptBuilder())
        assert self._store is not None
        entries = await self._store.load_entries(row.sessionId)
        return _Session(row, build_context(entries), TranscriptBuilder.from_entries(entries))

    # --- turns ----------------------------------------------------------------------------

    async def run_turn(
        self,
        message: str,
        *,
        session_key: str | None = None,
        on_event: EventCallback | None = None,
        agent_id: str | None = None,
        model: str | None = None,
        run_id: str | None = None,
        timeout_s: float | None = None,
        tools: ToolRunner | None = None,
        system_prompt: str | None = None,
        extra_system_prompt: str | None = None,
        heartbeat: bool = False,
    ) -> EmbeddedTurnResult:
        """Run one agent turn to its end and return its result.

        `session_key` as the gateway takes it (`agent:<id>:<rest>`, or a bare key for the
        agent's sessions); `model` overrides the agent's models (no fallback then); `tools`
        replaces the agent's tools (built-ins and plugin tools under its policy);
        `extra_system_prompt` is added to the system prompt; `heartbeat` offers
        `heartbeat_respond` (the result's `heartbeat` is what it accepted). System events
        queued for the session (`sessions_send` `mode: "notify"`) come before `message`. A
        checkpoint; waits for the session's previous turn. Cancellation ends the turn with
        an aborted `end` event (`stopReason: "shutdown"`) and propagates.
        """
        try:
            key = self._key(session_key, agent_id)
        except SessionKeyError as exc:
            raise ValueError(str(exc)) from exc
        record = await self.new_run(key, agent_id, run_id)
        return await self.run(
            record,
            message,
            on_event=on_event,
            model=model,
            timeout_s=timeout_s,
            tools=tools,
            system_prompt=system_prompt,
            extra_system_prompt=extra_system_prompt,
            heartbeat=heartbeat,
        )

    async def new_run(
        self, key: str, agent_id: str | None = None, run_id: str | None = None
    ) -> TrackedRun:
        """A run of session `key` (a resolved key), not started yet. A checkpoint."""
        session = await self._session(key)
        parsed = parse_session_key(key)
        return TrackedRun(
            run_id=run_id or str(uuid.uuid4()),
            session_key=key,
            session_id=session.row.sessionId,
            agent_id=agent_id
            or (parsed.agent_id if parsed else None)
            or self._generation.default_agent,
        )

    async def run(
        self,
        record: TrackedRun,
        message: str,
        *,
        on_event: EventCallback | None = None,
        model: str | None = None,
        timeout_s: float | None = None,
        tools: ToolRunner | None = None,
        system_prompt: str | None = None,
        extra_system_prompt: str | None = None,
        heartbeat: bool = False,
        light_context: bool = False,
    ) -> EmbeddedTurnResult:
        """Run `record` (from `new_run`) to its end: `run_turn`'s turn; its events go to
        `on_event`, else to `self.on_event` (`light_context`: no workspace bootstrap files in
        its system prompt). `record.done` is set however it ends."""
        key = record.session_key
        session = await self._session(key)
        try:
            async with session.lane:
                await self._close_retired()
                if session.stale:
                    fresh = await self._load(key)
                    session.row, session.history, session.builder = (
                        fresh.row,
                        fresh.history,
                        fresh.builder,
                    )
                    session.stale = False
                record.session_id = session.row.sessionId
                turn = _Turn(
                    host=self,
                    session=session,
                    state=record,
                    on_event=on_event or self.on_event,
                    heartbeat=heartbeat,
                    light_context=light_context,
                )
                self._turns[key] = turn
                try:
                    return await turn.run(
                        message,
                        model=model,
                        timeout_s=timeout_s,
                        tools=tools,
                        system_prompt=system_prompt,
                        extra_system_prompt=extra_system_prompt,
                    )
                finally:
                    self._turns.pop(key, None)
                    turn.inbox.close()  # what it did not take goes on as a turn of its own
                    if turn.state.aborted:  # its background commands and subagents too
                        if not self._closing:  # (those the closing cuts off stay owed)
                            self.sessions.stop(key, record.run_id)
                        if self.services.processes is not None:
                            self.services.processes.kill_run(record.run_id)
        finally:
            record.done.set()

    # --- what the session tools reach (`_embedded_sessions.SessionsRuntime`) --------------

    def queue_system_event(self, session_key: str, text: str) -> None:
        """Queue `text` for the session's next turn (it comes before that turn's message)."""
        self.services.system_events.enqueue(session_key, text)

    async def session_row(self, key: str) -> SessionRow | None:
        """The session's row: in memory, else the store's; None for an unknown session."""
        session = self._sessions.get(key)
        if session is not None or self._store is None:
            await trio.lowlevel.checkpoint()
            return session.row if session is not None else None
        return await self._store.get_session(key)

    async def session_rows(self) -> list[SessionRow]:
        """The sessions in memory, and those the store lists (a store with
        `list_sessions`, as the gateway's), most recently updated first."""
        rows = {key: session.row for key, session in self._sessions.items()}
        lister = getattr(self._store, "list_sessions", None)
        if lister is not None:
            for row in await lister(limit=None):
                rows.setdefault(row.key, row)
        else:
            await trio.lowlevel.checkpoint()
        return sorted(rows.values(), key=lambda r: r.updatedAt, reverse=True)

    async def session_branch(self, key: str) -> list[MessageEntry]:
        """The message entries of the session's active branch."""
        session = self._sessions.get(key)
        if self._store is None:
            await trio.lowlevel.checkpoint()
            return branch_messages(session.entries) if session is not None else []
        row = session.row if session is not None else await self._store.get_session(key)
        return branch_messages(await self._store.load_entries(row.sessionId)) if row else []

    async def update_row(self, key: str, agent_id: str, **changes: Any) -> SessionRow:
        """Change the session's row (made when new) and store it."""
        session = await self._session(key)
        if session.row.agentId != agent_id:
            changes.setdefault("agentId", agent_id)
        session.row = msgspec.structs.replace(session.row, **changes)
        if self._store is not None:
            await self._store.save_turn(row=session.row)
        return session.row

    def peek_row(self, key: str) -> SessionRow | None:
        session = self._sessions.get(key)
        return session.row if session is not None else None

    def jobs_await_collection(self, key: str) -> bool:
        processes = self.services.processes
        return processes is not None and processes.awaits_collection(key)

    def running(self) -> list[RunState]:
        return [turn.state for turn in self._turns.values()]

    def steering(self, key: str) -> tuple[TrackedRun, SteerInbox] | None:
        """The turn of session `key` going on and the inbox steering messages into it."""
        turn = self._turns.get(key)
        return None if turn is None else (turn.state, turn.inbox)

    @property
    def has_tasks(self) -> bool:
        return self._nursery is not None

    def start_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        if self._nursery is None:
            return False
        self._nursery.start_soon(fn, *args)
        return True

    async def forget_session(self, key: str) -> None:
        """Drop the session from memory (a stored one stays in the store)."""
        self._sessions.pop(key, None)
        await trio.lowlevel.checkpoint()

    # --- lifecycle ------------------------------------------------------------------------

    async def _close_retired(self) -> None:
        retired, self._retired = self._retired, []
        for provider in retired:
            await provider.aclose()

    async def aclose(self) -> None:
        """Close every provider transport. A checkpoint."""
        await self._close_retired()
        live = {
            id(p): p
            for ag in self._generation.agent_generations.values()
            for p in ag.providers.values()
        }
        for provider in self._builder.collect_retired():
            live.setdefault(id(provider), provider)
        for provider in live.values():
            await provider.aclose()

    async def __aenter__(self) -> EmbeddedRuntime:
        """Open the background commands' registry and the nursery of the runtime's own
        tasks (subagents, announcements, `sessions_send` targets, the scheduler). A
        checkpoint."""
        registry = await self._exits.enter_async_context(open_process_registry())
        self.services.processes = registry
        nursery = await self._exits.enter_async_context(trio.open_nursery())
        self._exits.callback(nursery.cancel_scope.cancel)  # leaving cancels them first
        self._nursery = nursery
        self.cron = await self._exits.enter_async_context(open_embedded_cron(self))
        if self._store is not None:  # what its parents were not told before it closed
            self.recovered = await recover_subagents(self._store, self.sessions, self.start_soon)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._nursery, self.cron, self._closing = None, None, True
        try:
            await self._exits.aclose()  # its tasks cancelled, every background command killed
        finally:
            self.services.processes = None
            with trio.CancelScope(shield=True):
                await self.aclose()


@attrs.define(eq=False)
class _Turn:
    """One run of the embedded runtime: the host's side of the run lifecycle (where its
    events go, where its transcript is kept)."""

    host: EmbeddedRuntime
    session: _Session
    state: TrackedRun
    on_event: EventCallback | None
    heartbeat: bool = False
    light_context: bool = False
    seq: int = 0
    progress: RunProgress = attrs.field(factory=RunProgress)
    result: TurnResult = attrs.field(factory=TurnResult)
    outcome: RunOutcome = attrs.field(factory=RunOutcome)
    tool_runner: ToolRunner | None = None
    sent: list[str] = attrs.field(factory=list)
    inbox: SteerInbox = attrs.field(factory=SteerInbox)

    def emit(self, stream: str, data: dict[str, Any]) -> None:
        self.seq += 1
        if self.on_event is not None:
            state = self.state
            self.on_event(
                {
                    "runId": state.run_id,
                    "seq": self.seq,
                    "stream": stream,
                    "ts": now_ms(),
                    "data": data,
                    "sessionKey": state.session_key,
                    "sessionId": state.session_id,
                    "agentId": state.agent_id,
                }
            )

    async def run(
        self,
        message: str,
        *,
        model: str | None,
        timeout_s: float | None,
        tools: ToolRunner | None,
        system_prompt: str | None,
        extra_system_prompt: str | None,
    ) -> EmbeddedTurnResult:
        generation = self.host.generation  # fixed for the whole turn
        scope = self.state.cancel_scope = trio.CancelScope()
        if timeout_s:
            scope.deadline = trio.current_time() + timeout_s
        if self.state.aborted:  # stopped while it waited for its session
            scope.cancel()
        self.emit("lifecycle", self.state.start(now_ms()))
        message = self.host.services.system_events.prepend(self.state.session_key, message)
        body = functools.partial(
            self._body, generation, message, model, tools, (system_prompt, extra_system_prompt)
        )
        try:
            await run_guarded(scope, body, self.outcome, what=f"run {self.state.run_id}")
        finally:
            with trio.CancelScope(shield=True):
                await self._end()
        return self._result()

    async def _body(
        self,
        generation: ModelRuntimeGeneration,
        message: str,
        model: str | None,
        tools: ToolRunner | None,
        prompts: tuple[str | None, str | None],
    ) -> None:
        state, services = self.state, self.host.services
        system_prompt, extra_system_prompt = prompts
        agent = generation.agent(state.agent_id)
        state.agent_id = agent.id
        stores = generation.fork_stores(agent.id)
        state.generation = stores.generation
        workspace = await services.workspace_for(agent.id, agent.workspace)
        cwd = self.session.row.spawnedCwd  # a subagent's `cwd`: its tools work there
        if tools is None:
            tools = services.run_tools(
                generation,
                agent_id=agent.id,
                session_key=state.session_key,
                session_id=state.session_id,
                run_id=state.run_id,
                workspace=Path(cwd) if cwd else workspace,
                send=self._message,
                model_ref=model or agent.primary,
                heartbeat=self.heartbeat,
            )
        self.tool_runner = tools
        spec = services.turn_spec(
            generation,
            stores,
            run_id=state.run_id,
            session_key=state.session_key,
            session_id=state.session_id,
            agent_id=agent.id,
            message=message,
            history=list(self.session.history),
            history_tokens=None,
            model_ref=model or agent.primary,
            fallbacks=agent.fallbacks if model is None else (),
            workspace=workspace,
            tools=tools,
            reasoning_level=self.session.row.reasoningLevel,
            history_entries=self._entries if self.host._store is not None else None,
            system_prompt=system_prompt,
            extra_system_prompt=extra_system_prompt,
            row=self.session.row,
            steer_inbox=self.inbox,
            light_context=self.light_context,
        )
        spec.max_attempts = self.host._retry_attempts
        await run_turn(spec, self.emit, self.progress, self.result)

    def _message(self, text: str, ts: int) -> None:
        """A message the `message` tool sent (the gateway sends it as a chat `final` of its
        own; here it is kept for the result's `messages`)."""
        self.sent.append(text)

    async def _entries(self) -> Sequence[TranscriptEntry]:
        assert self.host._store is not None
        return await self.host._store.load_entries(self.state.session_id)

    async def _end(self) -> None:
        """Decide the outcome, store the turn, then the one terminal event. A checkpoint."""
        state, progress, turn = self.state, self.progress, self.result
        state.decide(self.outcome, now_ms())
        failures = getattr(self.tool_runner, "failures", ())
        sent = getattr(self.tool_runner, "sent_texts", ())
        text = SilentStreamFilter()
        text.feed(progress.text)
        state.final = final_payload(
            state,
            text=text.finish(),
            progress=progress,
            turn=turn,
            error=self.outcome.error,
            tool_failures=failures,
            sent_texts=sent,
        )
        try:
            await self._store_turn()
        except Exception as exc:
            state.fail(f"the turn was not stored: {exc}", "store")
        self.emit("lifecycle", state.terminal_event())

    async def _store_turn(self) -> None:
        session, state, turn = self.session, self.state, self.result
        messages = run_messages(state, self.progress, turn.user_message)
        tags = [
            MessageTags(
                idempotency_key=f"{state.run_id}:user" if i == 0 else None, run_id=state.run_id
            )
            for i in range(len(messages))
        ]
        entries, context = persist_run(
            session.builder,
            messages,
            turn.compactions if messages else (),
            tags=tags,
            notes=turn_notes(state, self.progress, messages, self.inbox.taken_keys),
        )
        if context is None:
            session.history.extend(added_context(entries))
        else:
            session.history[:] = context
        session.row = ended_row(session.row, state, self.progress, turn)
        store = self.host._store
        if store is None:
            session.entries.extend(entries)
            return
        try:
            await store.save_turn(
                row=session.row, session_id=session.row.sessionId, entries=entries
            )
        except BaseException:
            session.stale = True  # the next turn continues from what the store holds
            raise

    def _result(self) -> EmbeddedTurnResult:
        state = self.state
        final = state.final or {"payloads": [], "meta": {}}
        status: Literal["ok", "error", "aborted"] = (
            "error" if state.status == "error" else "aborted" if state.aborted else "ok"
        )
        return EmbeddedTurnResult(
            run_id=state.run_id,
            session_key=state.session_key,
            session_id=state.session_id,
            agent_id=state.agent_id,
            status=status,
            text=self.progress.text,
            payloads=tuple(final["payloads"]),
            meta=final["meta"],
            error=state.error if status == "error" else None,
            events=self.seq,
            messages=tuple(self.sent),
            heartbeat=(
                self.host.services.heartbeat_responses.take(state.run_id)
                if self.heartbeat
                else None
            ),
        )


def open_embedded_runtime(
    config: Config,
    *,
    state_dir: Path | None = None,
    store: SessionStore | None = None,
    workspace_root: Path | None = None,
    plugins: PluginRegistry | None = None,
    provider_factory: ProviderFactory = default_provider_factory,
    retry_attempts: int = 3,
) -> EmbeddedRuntime:
    """Open an embedded runtime on `config` with generation 1 published.

    `state_dir` is where per-agent auth profile stores live (`agents/<id>/auth-profiles.json`)
    and, unless `workspace_root` says otherwise, the agents' workspaces (`workspaces/<id>`,
    as the gateway lays them out; without either, `.clawlane/workspaces` like the gateway's
    default state dir); an agent's configured
    `workspace` wins. `store` keeps sessions and transcripts (default: in memory).
    `plugins` provides plugin harnesses, tools and hooks (republish with `publish()` after
    it changes). Blocking I/O (auth profile stores). Raises `GenerationError` when
    generation 1 cannot be built. Use it as `async with` (or call `aclose()`) to release
    provider connections.
    """
    builder = GenerationBuilder(state_dir=state_dir, provider_factory=provider_factory)
    services = TurnServices(
        workspace_root=workspace_root or (state_dir or Path(".clawlane")) / "workspaces",
        plugins=plugins,
    )
    generation = builder.build_config(config, 1, services.plugins.snapshot())
    return EmbeddedRuntime(
        builder=builder,
        generation=generation,
        services=services,
        store=store,
        retry_attempts=retry_attempts,
    )
