"""One agent turn with its plugin hooks around it: what happens between a message arriving
and the attempt loop's last model turn.

Order (OpenClaw's): `message_received` (observe) → `before_model_resolve` and the legacy
`before_agent_start` (model/provider overrides; the first defined wins) → the model is
resolved from the run's generation and its limits give the budget (context window minus the
compaction reserve) → the prompt is prepared (`_prompt.prepare_prompt`: skills snapshot from
the workspace and the resource roots, bootstrap files through `agent:bootstrap`) →
`before_prompt_build` (+ legacy) shapes the system prompt and the user prompt →
`before_agent_reply` may claim the turn (a synthetic reply or silence, no model call) → the
attempt loop (`llm_input`/`llm_output` inside) with compaction around it → `agent_end`
(observe), also on failure. Cancellation skips `agent_end`.

`run_turn` is that order as a chain of small steps, like a request going down httpx's
send → auth → redirects → transport: the steps up to the prompt (`_received`, `_model_ref`,
`_resolve_models`, `_prepare`, `_shape_prompt`) each return what the next needs; then
`_ending` (agent_end around the rest) → `_reply` (the claim, else block streaming around the
attempts) → `_attempts` (compaction and overflow retries) → `_attempt` (one run of the attempt
loop). Only a few calls per run; nothing per delta but `_TurnStream`.

Compaction (`_compactor.TurnCompactor`): before the first attempt when the context is already
over the budget; after a context-overflow error (`ProviderError.kind == "context_overflow"`),
then the attempt is retried, at most `MAX_OVERFLOW_RETRIES` times per run, continuing from what
the run already did (tools are not run again); and after a successful run whose context passed
the budget. On a retry after partial output, the text of the failed model turn is taken back:
`progress.text` returns to what earlier turns said and the next `assistant` event carries
`replace: true` with the whole text, so nothing is emitted twice.

Reasoning follows the session's reasoning level: "stream" forwards `thinking` events; "on"
keeps reasoning for the final payloads (`TurnResult.reasoning_text`) and, with block
streaming, sends it as its own block before the answer; "off" hides it.

Block streaming (`TurnSpec.block_streaming` enabled and an `on_block` sink): the turn's stream
feeds a `_blocks.BlockPipeline`, which the turn finishes at the end and closes (dropping what
is buffered) when the turn fails or is cancelled.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs
import msgspec

from ..heartbeat import drop_heartbeat_turns
from ..hooks._events import (
    AgentEndEvent,
    AgentHookContext,
    BeforeAgentReplyEvent,
    BeforeAgentStartEvent,
    BeforeModelResolveEvent,
    BeforePromptBuildEvent,
    MessageReceivedEvent,
)
from ..hooks._registry import AgentStartResult, HookRegistry
from ..llm._types import (
    AssistantMessage,
    Message,
    ModelProvider,
    ProviderError,
    TextContent,
    ThinkingContent,
    ToolSpec,
    UserMessage,
)
from ..loop._agent import AgentRunInput, Emit, RunProgress, now_ms, run_agent
from ..model._generation import GenerationError, ResolvedModel
from ._blocks import BlockPipeline, BlockReply
from ._compaction import MAX_OVERFLOW_RETRIES, ContextBudget, context_budget
from ._compactor import TurnCompactor
from ._fallback import FallbackProvider
from ._prompt import (
    PreparedPrompt,
    PromptSection,
    SkillsSnapshot,
    join_sections,
    prepare_prompt,
    with_tool_directory,
)
from ._prompt_report import SystemPromptReport
from ._reply import ReasoningMode
from ._turnspec import TurnResult, TurnSpec

__all__ = [
    "assistant_text",
    "reasoning_mode",
    "reasoning_text",
    "run_turn",
    "skills_environment",
]

log = logging.getLogger("clawlane.turn")

_NO_HOOK_CONTEXT: Final = AgentHookContext()


def skills_environment(skills: SkillsSnapshot) -> dict[str, str]:
    """The environment the run's eligible skills declare they need (`requirements.env`),
    taken from the gateway's environment, plus where the skills live."""
    env: dict[str, str] = {}
    for skill in skills.eligible:
        for name in skill.requirements.env:
            value = os.environ.get(name)
            if value is not None:
                env[name] = value
    if skills.eligible:
        env["CLAWLANE_SKILLS"] = ",".join(s.name for s in skills.eligible)
    return env


def _join(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)


def reasoning_mode(level: str | None) -> ReasoningMode:
    """A session's `reasoningLevel` as a mode: "on", "stream", else "off"."""
    value = (level or "").strip().lower()
    return "on" if value == "on" else "stream" if value == "stream" else "off"


def assistant_text(messages: Sequence[Message]) -> str:
    """The text of the assistant turns, joined as `RunProgress.text` accumulates it."""
    return "".join(
        c.text
        for m in messages
        if isinstance(m, AssistantMessage)
        for c in m.content
        if isinstance(c, TextContent)
    )


def reasoning_text(messages: Sequence[Message]) -> str:
    """The reasoning of the assistant turns, one paragraph per turn."""
    return "\n\n".join(
        c.thinking
        for m in messages
        if isinstance(m, AssistantMessage)
        for c in m.content
        if isinstance(c, ThinkingContent) and c.thinking.strip()
    )


# --- the event stream of a turn ----------------------------------------------------------


@attrs.define(eq=False)
class _TurnStream:
    """Wraps the caller's `emit`: reasoning per mode, block replies, and the rewind of a
    failed model turn's text before a retry."""

    emit: Emit
    progress: RunProgress
    mode: ReasoningMode
    blocks: BlockPipeline | None = None
    _replace: bool = False

    def __call__(self, stream: str, data: dict[str, Any]) -> None:
        if stream == "assistant":
            if self._replace:
                self._replace = False
                data = {**data, "delta": data.get("text", ""), "replace": True}
            self.emit(stream, data)
            if self.blocks is not None:
                self.blocks.on_text(self.progress.text)
            return
        if stream == "thinking":
            if self.blocks is not None:
                self.blocks.on_thinking(str(data.get("text", "")))
            if self.mode == "stream":
                self.emit(stream, data)
            return
        if stream == "tool" and data.get("phase") == "start" and self.blocks is not None:
            self.blocks.boundary()
        self.emit(stream, data)

    def rewind(self) -> None:
        committed = assistant_text(self.progress.messages)
        if self.progress.text != committed:
            self.progress.text = committed
            self._replace = True
            if self.blocks is not None:
                self.blocks.rewind(committed)


# --- the turn ----------------------------------------------------------------------------


async def run_turn(
    spec: TurnSpec, emit: Emit, progress: RunProgress, result: TurnResult
) -> TurnResult:
    """Run the turn; fills `result` as it goes (so a failing turn still says its model, and
    the compactions it made are persisted even when a later attempt fails).

    A checkpoint throughout; cancellation propagates at once (no `agent_end`, buffered block
    replies dropped). Raises `ProviderError` (model failure, also a context overflow that
    compaction could not cure) and `GenerationError` (model not resolvable).
    """
    hooks = spec.hooks if spec.hooks is not None and spec.hooks.has_any() else None
    # Only hooks read the context: without any, the shared empty one stands in.
    ctx = _hook_context(spec) if hooks is not None else _NO_HOOK_CONTEXT
    started = time.monotonic()
    model_ref = spec.model_ref
    legacy: AgentStartResult | None = None
    if hooks is not None:
        await _received(spec, hooks)
        model_ref, legacy = await _model_ref(spec, hooks, ctx)
    model, provider = _resolve_models(spec, model_ref, result)
    if hooks is not None:
        ctx = msgspec.structs.replace(
            ctx, modelProviderId=model.provider_id, modelId=model.model_id
        )
    window = spec.context_window or model.definition.contextWindow
    budget = context_budget(window, spec.compaction)
    if hasattr(spec.tools, "context_window"):
        spec.tools.context_window = window  # `read`'s pages, as OpenClaw sizes them
    prepared = await _prepare(spec, budget)
    system_prompt, sections, user = await _shape_prompt(
        spec, hooks, ctx, legacy, prepared, _tool_directory(spec.tools)
    )
    result.user_message = user
    tool_specs = spec.tools.specs()
    result.report_factory = _report_factory(spec, prepared, sections, tool_specs, model)
    mode = reasoning_mode(spec.reasoning_level)
    result.reasoning_mode = mode
    turn = _Turn(
        spec=spec,
        emit=emit,
        progress=progress,
        result=result,
        hooks=hooks,
        ctx=ctx,
        model=model,
        provider=provider,
        budget=budget,
        system_prompt=system_prompt,
        user=user,
        tools=tool_specs,
        mode=mode,
    )
    await _ending(turn, started)
    return result


def _tool_directory(tools: object) -> str | None:
    """OpenClaw's list of the tools Tool Search defers (`runtime.tools.ToolCatalog`: made
    once for a tool set), for the system prompt; None when the run's tools defer none."""
    catalog = getattr(getattr(tools, "toolset", None), "catalog", None)
    directory = getattr(catalog, "directory", None)
    return directory if isinstance(directory, str) else None


def _hook_context(spec: TurnSpec) -> AgentHookContext:
    return AgentHookContext(
        runId=spec.run_id,
        agentId=spec.agent_id,
        sessionKey=spec.session_key,
        sessionId=spec.session_id,
        workspaceDir=spec.workspace_dir,
        messageProvider=spec.channel,
        trigger="user",
        channelId=spec.channel,
    )


async def _received(spec: TurnSpec, hooks: HookRegistry) -> None:
    if hooks.has("message_received"):
        await hooks.fire(
            "message_received",
            MessageReceivedEvent(from_=spec.session_key, content=spec.message, timestamp=now_ms()),
        )


async def _model_ref(
    spec: TurnSpec, hooks: HookRegistry, ctx: AgentHookContext
) -> tuple[str, AgentStartResult | None]:
    """`before_model_resolve`, then the legacy `before_agent_start` (its other results are
    kept for the prompt): the model to run, with the first defined override of each kind."""
    model_ref = spec.model_ref
    legacy = None
    provider_o, model_o = await hooks.run_before_model_resolve(
        BeforeModelResolveEvent(prompt=spec.message), ctx
    )
    if hooks.has("before_agent_start"):
        legacy = await hooks.run_before_agent_start(
            BeforeAgentStartEvent(prompt=spec.message, messages=list(spec.history)), ctx
        )
        provider_o = provider_o if provider_o is not None else legacy.provider_override
        model_o = model_o if model_o is not None else legacy.model_override
    if model_o or provider_o:
        current_provider, _, current_model = spec.generation.aliases.get(
            model_ref, model_ref
        ).partition("/")
        model_ref = f"{provider_o or current_provider}/{model_o or current_model}"
        if model_o and "/" in model_o:
            model_ref = model_o
    return model_ref, legacy


def _resolve_models(
    spec: TurnSpec, model_ref: str, result: TurnResult
) -> tuple[ResolvedModel, ModelProvider]:
    """The model (raises `GenerationError`) and the provider to call: the model's own, or
    one that falls back to the usable `spec.fallbacks` in order."""
    model = spec.generation.resolve(model_ref, agent_id=spec.agent_id)
    result.model = model
    result.runtime = model.harness.id if model.harness is not None else "openclaw"
    candidates = [model]
    for ref in spec.fallbacks:
        try:
            candidates.append(spec.generation.resolve(ref, agent_id=spec.agent_id))
        except GenerationError as exc:
            log.warning("fallback model %s is not usable: %s", ref, exc)
    provider: ModelProvider = (
        FallbackProvider(candidates, attempts=result.attempts)
        if len(candidates) > 1
        else model.provider
    )
    return model, provider


async def _prepare(spec: TurnSpec, budget: ContextBudget) -> PreparedPrompt:
    """The prompt before the plugin hooks (a checkpoint: file I/O in worker threads); the
    environment the eligible skills need goes into the tools' environment."""
    prepared = await prepare_prompt(
        base=spec.system_prompt,
        budget=budget,
        workspace_dir=spec.workspace_dir,
        extra=spec.extra_system_prompt,
        resource_roots=spec.resource_roots,
        cache=spec.prompt_cache,
        internal_hooks=spec.internal_hooks,
        session_key=spec.session_key,
        session_id=spec.session_id,
        agent_id=spec.agent_id,
        bootstrap_max_chars=spec.bootstrap_max_chars,
        bootstrap_total_max_chars=spec.bootstrap_total_max_chars,
        bootstrap_files=not spec.light_context,
    )
    run_env = getattr(spec.tools, "env", None)
    if isinstance(run_env, dict):
        run_env.update(skills_environment(prepared.skills))
    return prepared


async def _shape_prompt(
    spec: TurnSpec,
    hooks: HookRegistry | None,
    ctx: AgentHookContext,
    legacy: AgentStartResult | None,
    prepared: PreparedPrompt,
    directory: str | None,
) -> tuple[str, Sequence[PromptSection], UserMessage]:
    """`before_prompt_build` (and the legacy hook's prompt results) around the prepared
    prompt, with the deferred tools' `directory`: the system prompt, its sections and the
    user message. Without a hook's contribution, the prepared prompt's (assembled once)."""
    hook_system: str | None = None
    prepend_context = append_context = None
    prepend_system = append_system = None
    if hooks is not None:
        built = await hooks.run_before_prompt_build(
            BeforePromptBuildEvent(prompt=spec.message, messages=list(spec.history)), ctx
        )
        if built.system_prompt is not None:
            hook_system = built.system_prompt
        elif legacy is not None and legacy.system_prompt is not None:
            hook_system = legacy.system_prompt
        prepend_context = _join(built.prepend_context, legacy.prepend_context if legacy else None)
        append_context = _join(built.append_context, legacy.append_context if legacy else None)
        prepend_system = _join(
            built.prepend_system_context, legacy.prepend_system_context if legacy else None
        )
        append_system = _join(
            built.append_system_context, legacy.append_system_context if legacy else None
        )
    sections: Sequence[PromptSection]
    if hook_system is None and not prepend_system and not append_system:
        sections, system_prompt = prepared.plain(directory)
    else:
        sections = with_tool_directory(
            prepared.sections(
                hook_system_prompt=hook_system,
                prepend_system=prepend_system,
                append_system=append_system,
            ),
            directory,
        )
        system_prompt = join_sections(sections)
    user_text = _join(prepend_context, spec.message, append_context)
    return system_prompt, sections, UserMessage(content=user_text, timestamp=now_ms())


def _report_factory(
    spec: TurnSpec,
    prepared: PreparedPrompt,
    sections: Sequence[PromptSection],
    tools: list[ToolSpec],
    model: ResolvedModel,
) -> Callable[[], SystemPromptReport]:
    """Builds the report of the run's system prompt when asked (`TurnResult.prompt_report`)."""
    return functools.partial(
        prepared.report,
        source="run",
        session_key=spec.session_key,
        session_id=spec.session_id,
        agent_id=spec.agent_id,
        sections=sections,
        tools=tools,
        history=spec.history,
        provider=model.provider_id,
        model=model.model_id,
        now_ms=now_ms(),
    )


@attrs.define(eq=False)
class _Turn:
    """What the steps after the prompt share (one per run)."""

    spec: TurnSpec
    emit: Emit
    progress: RunProgress
    result: TurnResult
    hooks: HookRegistry | None
    ctx: AgentHookContext
    model: ResolvedModel
    provider: ModelProvider
    budget: ContextBudget
    system_prompt: str
    user: UserMessage
    tools: list[ToolSpec]
    mode: ReasoningMode


async def _ending(turn: _Turn, started: float) -> None:
    """The reply, then `agent_end` whether it succeeded or failed (not when cancelled)."""
    success = False
    error: str | None = None
    try:
        await _reply(turn)
        success = True
    except Exception as exc:
        error = str(exc)
        raise
    finally:
        hooks = turn.hooks
        if hooks is not None and hooks.has("agent_end") and (success or error is not None):
            await hooks.fire(
                "agent_end",
                AgentEndEvent(
                    messages=list(turn.progress.messages),
                    success=success,
                    error=error,
                    durationMs=(time.monotonic() - started) * 1000,
                ),
                turn.ctx,
            )


async def _reply(turn: _Turn) -> None:
    """`before_agent_reply` may claim the turn (its reply is the answer); else the model
    answers, with block streaming around the attempts when enabled."""
    hooks = turn.hooks
    if hooks is not None and hooks.has("before_agent_reply"):
        claim = await hooks.run_before_agent_reply(
            BeforeAgentReplyEvent(cleanedBody=turn.spec.message), turn.ctx
        )
        if claim is not None:
            turn.result.claimed_by = claim.plugin_id
            text = _claim_text(claim.reply)
            if text:
                turn.progress.text = text
                turn.emit("assistant", {"text": text, "delta": text})
            return
    blocks = _block_pipeline(turn)
    try:
        await _attempts(turn, blocks)
    finally:
        if blocks is not None:
            blocks.close()


def _block_pipeline(turn: _Turn) -> BlockPipeline | None:
    """The run's block pipeline, when block streaming is on and someone takes the blocks."""
    spec = turn.spec
    settings = spec.block_streaming
    if settings is None or not settings.enabled or spec.on_block is None:
        return None
    sink = spec.on_block
    result = turn.result

    def deliver(block: BlockReply) -> None:
        result.block_replies.append(block)
        sink(block)

    return BlockPipeline(
        settings=settings,
        sink=deliver,
        reasoning_blocks=turn.mode == "on",
        text_chunk_limit=spec.text_chunk_limit,
        flusher=spec.block_flusher,
    )


async def _attempts(turn: _Turn, blocks: BlockPipeline | None) -> None:
    """Compaction before the attempts when over the budget, the attempts (compacting and
    retrying after a context overflow), compaction after them when over the budget."""
    spec, progress, result = turn.spec, turn.progress, turn.result
    stream = _TurnStream(emit=turn.emit, progress=progress, mode=turn.mode, blocks=blocks)
    compactor = TurnCompactor(
        spec=spec,
        model=turn.model,
        budget=turn.budget,
        emit=turn.emit,
        progress=progress,
        result=result,
        user=turn.user,
        system_prompt=turn.system_prompt,
        tools=turn.tools,
        hooks=turn.hooks,
        ctx=turn.ctx,
        history=list(spec.history),
        history_tokens=spec.history_tokens,
        history_clean=spec.history_clean,
    )
    await compactor.flush_memory()
    if compactor.over_budget():
        await compactor.compact("auto-threshold", will_retry=False, whole_run=False)
    while True:
        try:
            await _attempt(turn, stream, compactor)
            break
        except ProviderError as exc:
            if (
                exc.kind != "context_overflow"
                or not spec.compaction.enabled
                or result.overflow_retries >= MAX_OVERFLOW_RETRIES
            ):
                raise
            result.overflow_retries += 1
            stream.rewind()
            if not await compactor.compact(
                "overflow-retry", will_retry=True, whole_run=False, attempt=result.overflow_retries
            ):
                raise
    if blocks is not None:
        blocks.finish()
    compacted = compactor.over_budget() and await compactor.compact(
        "auto-threshold", will_retry=False, whole_run=True
    )
    if not compacted:
        result.context_tokens = compactor.tokens()
    result.reasoning_text = reasoning_text(progress.messages)


async def _attempt(turn: _Turn, stream: _TurnStream, compactor: TurnCompactor) -> None:
    """One run of the attempt loop (or the model's harness) from the compactor's history
    on, continuing from what the run already did."""
    spec, model = turn.spec, turn.model
    history = compactor.history
    clean = compactor.history_clean
    inp = AgentRunInput(
        run_id=spec.run_id,
        provider=turn.provider,
        provider_id=model.provider_id,
        model_id=model.model_id,
        api=model.api,
        system_prompt=turn.system_prompt,
        # heartbeats that were noise (OpenClaw's); a clean history holds none
        history=history if clean else drop_heartbeat_turns(history),
        user_message=turn.user,
        params=dict(model.params),
        tools=spec.tools,
        emit_thinking=turn.mode != "off",
        idle_timeout=spec.idle_timeout,
        session_id=spec.session_id,
        hooks=turn.hooks,
        steer_inbox=spec.steer_inbox,
        resume=list(turn.progress.messages),
        max_attempts=spec.max_attempts,
        history_clean=clean,
        history_tokens=compactor.history_tokens if clean else None,
    )
    if model.harness is not None:
        await model.harness.run(inp, stream, turn.progress)
    else:
        await run_agent(inp, stream, turn.progress)


def _claim_text(reply: Any) -> str:
    if isinstance(reply, dict):
        text = reply.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(reply, str):
        return reply
    return ""
