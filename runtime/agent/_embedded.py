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

Transcripts are kept in memory, or, with `store=`, through the gateway's store interface
(`SessionStore`: e.g. `actors.open_store` on a SQLite file), so an embedded app can close
and reopen a session. A turn's writes are committed before its terminal event; a turn that
could not be stored ends with `error` ("the turn was not stored: ..."), as in the gateway.

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
import trio

from ..llm._types import Message
from ..loop._agent import RunProgress, ToolRunner, now_ms
from ..model._config import Config
from ..model._generation import (
    GenerationBuilder,
    ModelRuntimeGeneration,
    ProviderFactory,
    default_provider_factory,
)
from ..model._plugins import PluginRegistry
from ..sessions._sessions import (
    SessionKeyError,
    SessionRow,
    TranscriptBuilder,
    TranscriptEntry,
    build_context,
    new_session_row,
    parse_session_key,
    resolve_session_key,
)
from ..tools import open_process_registry
from ._compaction import MessageTags, persist_run
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
    ) -> EmbeddedTurnResult:
        """Run one agent turn to its end and return its result.

        `session_key` as the gateway takes it (`agent:<id>:<rest>`, or a bare key for the
        agent's sessions); `model` overrides the agent's models (no fallback then); `tools`
        replaces the agent's tools (built-ins and plugin tools under its policy). A
        checkpoint; waits for the session's previous turn. Cancellation ends the turn with an
        aborted `end` event (`stopReason: "shutdown"`) and propagates.
        """
        try:
            key = self._key(session_key, agent_id)
        except SessionKeyError as exc:
            raise ValueError(str(exc)) from exc
        session = await self._session(key)
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
            parsed = parse_session_key(key)
            turn = _Turn(
                host=self,
                session=session,
                state=RunState(
                    run_id=run_id or str(uuid.uuid4()),
                    session_key=key,
                    session_id=session.row.sessionId,
                    agent_id=agent_id
                    or (parsed.agent_id if parsed else None)
                    or self._generation.default_agent,
                ),
                on_event=on_event,
            )
            try:
                return await turn.run(
                    message,
                    model=model,
                    timeout_s=timeout_s,
                    tools=tools,
                    system_prompt=system_prompt,
                )
            finally:
                processes = self.services.processes
                if turn.state.aborted and processes is not None:
                    processes.kill_run(turn.state.run_id)  # its background commands too

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
        """Open the background commands' registry. A checkpoint."""
        registry = await self._exits.enter_async_context(open_process_registry())
        self.services.processes = registry
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            with trio.CancelScope(shield=True):
                await self.aclose()
        finally:
            self.services.processes = None
            await self._exits.aclose()  # every background command killed, tree and all


@attrs.define(eq=False)
class _Turn:
    """One run of the embedded runtime: the host's side of the run lifecycle (where its
    events go, where its transcript is kept)."""

    host: EmbeddedRuntime
    session: _Session
    state: RunState
    on_event: EventCallback | None
    seq: int = 0
    progress: RunProgress = attrs.field(factory=RunProgress)
    result: TurnResult = attrs.field(factory=TurnResult)
    outcome: RunOutcome = attrs.field(factory=RunOutcome)
    tool_runner: ToolRunner | None = None
    sent: list[str] = attrs.field(factory=list)

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
    ) -> EmbeddedTurnResult:
        generation = self.host.generation  # fixed for the whole turn
        scope = trio.CancelScope()
        if timeout_s:
            scope.deadline = trio.current_time() + timeout_s
        self.emit("lifecycle", self.state.start(now_ms()))
        body = functools.partial(self._body, generation, message, model, tools, system_prompt)
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
        system_prompt: str | None,
    ) -> None:
        state, services = self.state, self.host.services
        agent = generation.agent(state.agent_id)
        state.agent_id = agent.id
        stores = generation.fork_stores(agent.id)
        state.generation = stores.generation
        workspace = await services.workspace_for(agent.id, agent.workspace)
        if tools is None:
            tools = services.run_tools(
                generation,
                agent_id=agent.id,
                session_key=state.session_key,
                session_id=state.session_id,
                run_id=state.run_id,
                workspace=workspace,
                send=self._message,
                model_ref=model or agent.primary,
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
            row=self.session.row,
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
            session.builder, messages, turn.compactions if messages else (), tags=tags
        )
        if context is None:
            session.history.extend(messages)
        else:
            session.history[:] = context
        session.row = ended_row(session.row, state, self.progress, turn)
        store = self.host._store
        if store is None:
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
