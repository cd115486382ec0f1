"""The embedded runtime: `runtime/` as a library, without the gateway.

    async with open_embedded_runtime(config) as rt:
        result = await rt.run_turn("hello", session_key="demo", on_event=print)
        rt.publish(new_config)          # a new generation; runs in flight keep theirs

`open_embedded_runtime` builds generation 1 through the same `GenerationBuilder` the gateway's
publisher uses, so both publish the same generation shape at their activation boundary.
`publish(config)` builds the next generation completely and swaps it in whole; a failed build
raises (`GenerationError`) and the current generation keeps serving.

`run_turn` runs one agent turn in-process: it forks stores from the generation current at its
start and keeps them to its end, resolves the agent's primary and fallback models, selects
the harness (`openclaw` runs `run_agent`; a plugin harness runs its own loop), streams with
model fallback (`FallbackProvider`), and reports the same events the gateway sends as `agent`
event payloads (`{runId, seq, stream, ts, data, sessionKey, sessionId, agentId}`, `seq` from
1, lifecycle `start` then exactly one `end` or `error`). Transcripts are kept in memory, one
per session key; turns of one session run one at a time, in order.

Errors: `publish` raises `GenerationError` (and `ConfigError` for a bad auth profile store, as
a `GenerationError`); `run_turn` never raises for a failed run (the result says `error`), only
`trio.Cancelled`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import attrs
import trio

from ._agent import AgentRunInput, NoTools, RunProgress, ToolRunner, now_ms
from ._config import Config
from ._fallback import FallbackAttempts, FallbackProvider
from ._generation import (
    GenerationBuilder,
    GenerationError,
    ModelRuntimeGeneration,
    ProviderFactory,
    ResolvedModel,
    default_provider_factory,
)
from ._plugins import PluginRegistry
from ._sessions import SessionKeyError, new_session_id, parse_session_key, resolve_session_key
from .llm._retry import resolve_idle_timeout, stream_with_retry
from .llm._types import Message, ModelDelta, ModelRequest, ProviderError, UserMessage

__all__ = ["EmbeddedRuntime", "EmbeddedTurnResult", "EventCallback", "open_embedded_runtime"]

EventCallback = Callable[[dict[str, Any]], None]
"""Receives each event payload as a dict; synchronous, must not block."""

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant running inside clawlane, an OpenClaw-compatible gateway."
)


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
        plugins: PluginRegistry | None = None,
        retry_attempts: int = 3,
    ) -> None:
        self._builder = builder
        self._generation = generation
        self._plugins = plugins
        self._retry_attempts = retry_attempts
        self._transcripts: dict[str, list[Message]] = {}
        self._session_ids: dict[str, str] = {}
        self._lanes: dict[str, trio.Lock] = {}
        self._retired: list[Any] = []
        self.published: list[Callable[[ModelRuntimeGeneration], None]] = []

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
        snapshot = self._plugins.snapshot() if self._plugins is not None else None
        generation = self._builder.build_config(config, self._generation.number + 1, snapshot)
        self._generation = generation
        self._retired.extend(self._builder.collect_retired(keep=[generation]))
        for callback in list(self.published):
            callback(generation)
        return generation

    # --- turns ----------------------------------------------------------------------------

    def transcript(self, session_key: str) -> list[Message]:
        """The session's messages so far (a copy)."""
        return list(self._transcripts.get(self._key(session_key, None), ()))

    def _key(self, raw: str | None, agent_id: str | None) -> str:
        return resolve_session_key(
            raw, agent_id=agent_id, default_agent=self._generation.default_agent
        )

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
        agent's sessions); `model` overrides the agent's models (no fallback then). A
        checkpoint; waits for the session's previous turn. Cancellation ends the turn with an
        aborted `end` event and propagates.
        """
        try:
            key = self._key(session_key, agent_id)
        except SessionKeyError as exc:
            raise ValueError(str(exc)) from exc
        lane = self._lanes.setdefault(key, trio.Lock())
        async with lane:
            await self._close_retired()
            return await self._run(
                message,
                key=key,
                on_event=on_event,
                agent_id=agent_id,
                model=model,
                run_id=run_id or str(uuid.uuid4()),
                timeout_s=timeout_s,
                tools=tools or NoTools(),
                system_prompt=system_prompt or DEFAULT_SYSTEM_PROMPT,
            )

    async def _run(
        self,
        message: str,
        *,
        key: str,
        on_event: EventCallback | None,
        agent_id: str | None,
        model: str | None,
        run_id: str,
        timeout_s: float | None,
        tools: ToolRunner,
        system_prompt: str,
    ) -> EmbeddedTurnResult:
        generation = self._generation  # fixed for the whole turn
        parsed = parse_session_key(key)
        aid = agent_id or (parsed.agent_id if parsed is not None else None)
        session_id = self._session_ids.setdefault(key, new_session_id())
        seq = 0
        started_mono = time.monotonic()
        progress = RunProgress()
        attempts = FallbackAttempts()
        error: str | None = None
        error_kind: str | None = None
        runtime_id: str | None = None
        agent_name = aid or generation.default_agent
        user = UserMessage(content=message, timestamp=now_ms())
        started = now_ms()

        def emit(stream: str, data: dict[str, Any]) -> None:
            nonlocal seq
            seq += 1
            if on_event is not None:
                on_event(
                    {
                        "runId": run_id,
                        "seq": seq,
                        "stream": stream,
                        "ts": now_ms(),
                        "data": data,
                        "sessionKey": key,
                        "sessionId": session_id,
                        "agentId": agent_name,
                    }
                )

        scope = trio.CancelScope()
        if timeout_s:
            scope.deadline = trio.current_time() + timeout_s
        emit("lifecycle", {"phase": "start", "startedAt": started})
        outer_cancel = False
        try:
            with scope:
                stores = generation.fork_stores(aid)
                spec = generation.agent(aid)
                agent_name = spec.id
                candidates = self._candidates(generation, spec.id, model)
                primary = candidates[0]
                assert primary.harness is not None
                runtime_id = primary.harness.id
                idle = resolve_idle_timeout(
                    generation.config.agents.defaults.llm.idleTimeoutSeconds,
                    None,
                )
                retry_attempts = self._retry_attempts

                def open_stream(
                    m: ResolvedModel, request: ModelRequest
                ) -> AsyncIterator[ModelDelta]:
                    return stream_with_retry(
                        stores.providers.get(m.provider_id, m.provider),
                        request,
                        idle_timeout=idle,
                        max_attempts=retry_attempts,
                    )

                provider = FallbackProvider(candidates, attempts=attempts, open_stream=open_stream)
                inp = AgentRunInput(
                    run_id=run_id,
                    provider=provider,
                    provider_id=primary.provider_id,
                    model_id=primary.model_id,
                    api=primary.api,
                    system_prompt=system_prompt,
                    history=list(self._transcripts.get(key, ())),
                    user_message=user,
                    params=dict(primary.params),
                    tools=tools,
                    max_attempts=1,
                    idle_timeout=None,
                    session_id=session_id,
                )
                await primary.harness.run(inp, emit, progress)
        except ProviderError as exc:
            error, error_kind = exc.message, exc.kind
        except GenerationError as exc:
            error = str(exc)
        except trio.Cancelled:
            outer_cancel = True
            raise
        except Exception as exc:
            error = f"internal error: {type(exc).__name__}: {exc}"
        finally:
            ended = now_ms()
            aborted = scope.cancelled_caught or outer_cancel
            if error is not None and not aborted:
                status: Literal["ok", "error", "aborted"] = "error"
                emit(
                    "lifecycle",
                    {"phase": "error", "error": error, "startedAt": started, "endedAt": ended},
                )
            elif aborted:
                status = "aborted"
                emit(
                    "lifecycle",
                    {
                        "phase": "end",
                        "startedAt": started,
                        "endedAt": ended,
                        "aborted": True,
                        "stopReason": "shutdown" if outer_cancel else "timeout",
                    },
                )
            else:
                status = "ok"
                emit(
                    "lifecycle",
                    {"phase": "end", "startedAt": started, "endedAt": ended, "aborted": False},
                )
            messages = self._transcripts.setdefault(key, [])
            if status != "error" or progress.messages:
                messages.append(user)
                messages.extend(progress.messages)
        payloads: list[dict[str, Any]] = []
        if progress.text:
            payloads.append({"text": progress.text})
        if error is not None and status == "error":
            payloads.append({"text": error, "isError": True})
        usage = progress.usage
        meta: dict[str, Any] = {
            "durationMs": int((time.monotonic() - started_mono) * 1000),
            "agentMeta": {
                "sessionId": session_id,
                "agentId": agent_name,
                "usage": {
                    "input": usage.input,
                    "output": usage.output,
                    "cacheRead": usage.cacheRead,
                    "cacheWrite": usage.cacheWrite,
                    "total": usage.totalTokens,
                },
            },
            "generation": generation.number,
            "runtime": runtime_id,
            "attempts": attempts.to_meta(),
            "stopReason": ("timeout" if status == "aborted" else progress.stop_reason),
        }
        if attempts.selected is not None:
            meta["agentMeta"]["provider"] = attempts.selected.provider_id
            meta["agentMeta"]["model"] = attempts.selected.model_id
        if status == "aborted":
            meta["aborted"] = True
        if error is not None:
            meta["error"] = {"kind": error_kind or "runtime", "message": error}
        return EmbeddedTurnResult(
            run_id=run_id,
            session_key=key,
            session_id=session_id,
            agent_id=agent_name,
            status=status,
            text=progress.text,
            payloads=tuple(payloads),
            meta=meta,
            error=error if status == "error" else None,
            events=seq,
        )

    @staticmethod
    def _candidates(
        generation: ModelRuntimeGeneration, agent_id: str, model: str | None
    ) -> list[ResolvedModel]:
        """The primary (or the override) resolved, then the fallbacks that resolve."""
        if model is not None:
            return [generation.resolve(model, agent_id=agent_id)]
        spec = generation.agent(agent_id)
        primary = generation.resolve(spec.primary, agent_id=agent_id)
        out = [primary]
        for ref in spec.fallbacks:
            try:
                out.append(generation.resolve(ref, agent_id=agent_id))
            except GenerationError:
                continue  # no auth for it in this generation: reported as a build warning
        return out

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
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with trio.CancelScope(shield=True):
            await self.aclose()


def open_embedded_runtime(
    config: Config,
    *,
    state_dir: Path | None = None,
    plugins: PluginRegistry | None = None,
    provider_factory: ProviderFactory = default_provider_factory,
    retry_attempts: int = 3,
) -> EmbeddedRuntime:
    """Open an embedded runtime on `config` with generation 1 published.

    `state_dir` is where per-agent auth profile stores live (`agents/<id>/auth-profiles.json`);
    `plugins` provides plugin harnesses (republish with `publish()` after it changes).
    Blocking I/O (auth profile stores). Raises `GenerationError` when generation 1 cannot be
    built. Use it as `async with` (or call `aclose()`) to release provider connections.
    """
    builder = GenerationBuilder(state_dir=state_dir, provider_factory=provider_factory)
    snapshot = plugins.snapshot() if plugins is not None else None
    generation = builder.build_config(config, 1, snapshot)
    return EmbeddedRuntime(
        builder=builder, generation=generation, plugins=plugins, retry_attempts=retry_attempts
    )
