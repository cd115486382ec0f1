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

Compaction (`_compaction`): before the first attempt when the context is already over the
budget; after a context-overflow error (`ProviderError.kind == "context_overflow"`), then the
attempt is retried, at most `MAX_OVERFLOW_RETRIES` times per run, continuing from what the run
already did (tools are not run again); and after a successful run whose context passed the
budget. Each emits `compaction` `{phase:"start"}` then `{phase:"end", willRetry, completed}`,
fires `before_compaction` and (when not retrying) `after_compaction`, and the internal
`session:compact:before/after` hooks. `TurnResult.compactions` carries what the session
persists (`_compaction.persist_run`). On a retry after partial output, the text of the failed
model turn is taken back: `progress.text` returns to what earlier turns said and the next
`assistant` event carries `replace: true` with the whole text, so nothing is emitted twice.

Reasoning follows the session's reasoning level: "stream" forwards `thinking` events; "on"
keeps reasoning for the final payloads (`TurnResult.reasoning_text`) and, with block
streaming, sends it as its own block before the answer; "off" hides it.

Block streaming (`TurnSpec.block_streaming` enabled and an `on_block` sink): the cleaned
assistant text (a silent `NO_REPLY` never becomes a block) is cut by `BlockChunker` and merged
by `BlockCoalescer`; `text_end` emits blocks as they are ready and flushes at the end of each
model turn (before a tool starts, at the end), `message_end` holds the text until then. The
coalescer's idle flush needs a `BlockFlusher` task (one per gateway, like `ChatFlusher`).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import attrs
import msgspec
import trio

from ..hooks._events import (
    AfterCompactionEvent,
    AgentEndEvent,
    AgentHookContext,
    BeforeAgentReplyEvent,
    BeforeAgentStartEvent,
    BeforeCompactionEvent,
    BeforeModelResolveEvent,
    BeforePromptBuildEvent,
    MessageReceivedEvent,
)
from ..hooks._internal import InternalHookEvent, InternalHooks
from ..hooks._registry import HookRegistry
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
from ..loop._agent import (
    AgentRunInput,
    Emit,
    NoTools,
    RunProgress,
    SteerInbox,
    ToolRunner,
    now_ms,
    run_agent,
)
from ..model._generation import GenerationError, ModelRuntimeGeneration, ResolvedModel, RunStores
from ..sessions._sessions import TranscriptEntry, build_context
from ._chunking import (
    DEFAULT_TEXT_CHUNK_LIMIT,
    BlockChunker,
    BlockCoalescer,
    BlockStreamingSettings,
)
from ._compaction import (
    MAX_OVERFLOW_RETRIES,
    CompactionReason,
    CompactionRecord,
    CompactionSettings,
    ContextBudget,
    context_budget,
    context_entry_ids,
    estimate_context_tokens,
    estimate_message_tokens,
    plan_compaction,
    summarize,
    summary_message,
)
from ._fallback import FallbackAttempts, FallbackProvider
from ._flusher import DeadlineFlusher
from ._prompt import (
    DEFAULT_BOOTSTRAP_MAX_CHARS,
    DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS,
    PromptCache,
    SkillsSnapshot,
    SystemPromptReport,
    join_sections,
    prepare_prompt,
)
from ._reply import ReasoningMode, SilentStreamFilter, format_reasoning

__all__ = [
    "BASE_SYSTEM_PROMPT",
    "BlockFlusher",
    "BlockPipeline",
    "BlockReply",
    "BlockSink",
    "HistoryEntries",
    "TurnResult",
    "TurnSpec",
    "assistant_text",
    "reasoning_mode",
    "reasoning_text",
    "run_turn",
]

log = logging.getLogger("clawlane.turn")

BASE_SYSTEM_PROMPT = (
    "You are a helpful assistant running inside clawlane, an OpenClaw-compatible gateway."
)

_NO_HOOK_CONTEXT: Final = AgentHookContext()

HistoryEntries = Callable[[], Awaitable[Sequence[TranscriptEntry]]]
"""Loads the session's transcript entries (to name the entry a compaction keeps from)."""


@attrs.frozen
class BlockReply:
    """One block reply: a piece of the answer (or the reasoning) ready to deliver."""

    text: str
    index: int
    is_reasoning: bool = False


BlockSink = Callable[[BlockReply], None]
"""Receives block replies; synchronous and non-blocking, like `Emit`."""


@attrs.define(eq=False)
class TurnSpec:
    """What one turn runs with (built per run, never changed: a plain slotted class, as a
    frozen one costs twice as much to build for its ~35 fields)."""

    run_id: str
    session_key: str
    session_id: str
    agent_id: str
    message: str
    history: Sequence[Message]
    generation: ModelRuntimeGeneration
    stores: RunStores
    model_ref: str
    history_tokens: int | None = None
    """`history`'s estimated size when the caller knows it (else it is counted)."""
    system_prompt: str = BASE_SYSTEM_PROMPT
    extra_system_prompt: str | None = None
    workspace_dir: str | None = None
    tools: ToolRunner = attrs.field(factory=NoTools)
    hooks: HookRegistry | None = None
    idle_timeout: float | None = None
    channel: str = "webchat"
    steer_inbox: SteerInbox | None = None
    # prompt preparation
    resource_roots: Sequence[str] = ()
    prompt_cache: PromptCache | None = None
    internal_hooks: InternalHooks | None = None
    bootstrap_max_chars: int = DEFAULT_BOOTSTRAP_MAX_CHARS
    bootstrap_total_max_chars: int = DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS
    # model limits and compaction
    context_window: int | None = None
    """Overrides the model definition's `contextWindow`."""
    compaction: CompactionSettings = attrs.field(factory=CompactionSettings)
    history_entries: HistoryEntries | None = None
    """Without it, a compaction may only keep from this run's user message on."""
    # reply shaping
    reasoning_level: str | None = None
    block_streaming: BlockStreamingSettings | None = None
    on_block: BlockSink | None = None
    block_flusher: BlockFlusher | None = None
    text_chunk_limit: int = DEFAULT_TEXT_CHUNK_LIMIT
    # model fallback: tried in order when the primary fails before any output
    fallbacks: Sequence[str] = ()
    max_attempts: int = 3
    """Attempts of one model turn (retries of retryable provider errors)."""


@attrs.define
class TurnResult:
    model: ResolvedModel | None = None
    user_message: UserMessage | None = None
    claimed_by: str | None = None
    report_factory: Callable[[], SystemPromptReport] | None = None
    """Builds the report of the run's system prompt on demand (`prompt_report`): most runs
    are never asked for it, and building it costs more than the rest of a small run."""
    compactions: list[CompactionRecord] = attrs.field(factory=list)
    """Completed compactions, to persist with the run's messages (`persist_run`)."""
    attempts: FallbackAttempts = attrs.field(factory=FallbackAttempts)
    """The models tried (primary, then fallbacks), for the run meta."""
    runtime: str | None = None
    """The harness that ran the turn (`openclaw` or a plugin id)."""
    overflow_retries: int = 0
    context_tokens: int | None = None
    """The estimated size of the session's context when the turn ended."""
    reasoning_mode: ReasoningMode = "off"
    reasoning_text: str = ""
    block_replies: list[BlockReply] = attrs.field(factory=list)

    _report: SystemPromptReport | None = attrs.field(default=None, init=False)

    @property
    def prompt_report(self) -> SystemPromptReport | None:
        """The report of the run's system prompt (built when first asked for)."""
        if self._report is None and self.report_factory is not None:
            self._report = self.report_factory()
        return self._report


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


# --- block streaming ---------------------------------------------------------------------


def _clock_ms() -> int:
    return int(trio.current_time() * 1000)


@attrs.define(eq=False)
class BlockPipeline:
    """One run's block replies: silent-token filter → chunker → coalescer → sink.

    Synchronous; `poll` does the coalescer's idle flush (called by a `BlockFlusher`).
    """

    settings: BlockStreamingSettings
    sink: BlockSink
    reasoning_blocks: bool = False
    text_chunk_limit: int = DEFAULT_TEXT_CHUNK_LIMIT
    flusher: BlockFlusher | None = None
    clock: Callable[[], int] = _clock_ms
    sent: list[BlockReply] = attrs.field(factory=list)
    _filter: SilentStreamFilter = attrs.field(factory=SilentStreamFilter)
    _visible: str = ""
    _pushed: int = 0
    _thinking: str = ""
    _closed: bool = False
    _chunker: BlockChunker = attrs.field(init=False)
    _coalescer: BlockCoalescer = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._chunker = self.settings.chunker(self.text_chunk_limit)
        self._coalescer = self.settings.coalescer(self.text_chunk_limit)

    @property
    def streams_early(self) -> bool:
        return self.settings.blockStreamingBreak == "text_end"

    def _deliver(self, text: str, *, reasoning: bool = False) -> None:
        if not text.strip():
            return
        block = BlockReply(text=text, index=len(self.sent), is_reasoning=reasoning)
        self.sent.append(block)
        self.sink(block)

    def _offer(self, block: str) -> None:
        for out in self._coalescer.offer(block, self.clock()):
            self._deliver(out)
        if self._coalescer.deadline_ms() is not None and self.flusher is not None:
            self.flusher.add(self)

    def _push(self) -> None:
        new = self._visible[self._pushed :]
        self._pushed = len(self._visible)
        if new:
            for block in self._chunker.push(new):
                self._offer(block)

    def _reasoning_done(self) -> None:
        if self._thinking:
            thinking, self._thinking = self._thinking, ""
            if self.reasoning_blocks:
                self._deliver(format_reasoning(thinking), reasoning=True)

    def on_thinking(self, cumulative: str) -> None:
        """The reasoning of the current model turn so far."""
        self._thinking = cumulative

    def on_text(self, cumulative: str) -> None:
        """The run's assistant text so far (as `progress.text`)."""
        if self._closed:
            return
        self._reasoning_done()
        shown = self._filter.feed(cumulative)
        if shown is None:
            return
        self._visible = shown
        self._pushed = min(self._pushed, len(shown))
        if self.streams_early:
            self._push()

    def boundary(self) -> None:
        """The end of a model turn's text: flush everything buffered."""
        if self._closed:
            return
        self._reasoning_done()
        self._push()
        for block in self._chunker.flush():
            self._offer(block)
        out = self._coalescer.flush()
        if out is not None:
            self._deliver(out)

    def rewind(self, committed: str) -> None:
        """A model turn failed after streaming some text: drop what is still buffered and go
        on from `committed` (the text of the turns that completed). Blocks already delivered
        stay delivered."""
        self._chunker.reset()
        self._coalescer = self.settings.coalescer(self.text_chunk_limit)
        self._filter = SilentStreamFilter()
        shown = self._filter.feed(committed) if committed else None
        self._visible = shown or ""
        self._pushed = len(self._visible)
        self._thinking = ""

    def finish(self) -> None:
        """The run ended: release a held fragment that turned out to be text, flush all."""
        if self._closed:
            return
        final = self._filter.finish()
        if final.startswith(self._visible):
            self._visible = final
        self.boundary()
        self._closed = True

    def close(self) -> None:
        """The run failed or was cancelled: drop what is buffered."""
        self._closed = True

    def due_ms(self) -> int | None:
        return None if self._closed else self._coalescer.deadline_ms()

    def poll(self, now_ms: int) -> None:
        if not self._closed:
            out = self._coalescer.poll(now_ms)
            if out is not None:
                self._deliver(out)


class BlockFlusher(DeadlineFlusher[BlockPipeline]):
    """Runs the coalescers' idle flushes of every run. One task for all runs: start `run`
    in a nursery that outlives the runs (it sleeps while no run has a block waiting)."""

    def __init__(self) -> None:
        super().__init__(_clock_ms)


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


# --- compaction in a turn ----------------------------------------------------------------


@attrs.define(eq=False)
class _Compactor:
    """The compaction state of one turn: the history the attempts start from (it shrinks
    when compacted) and the entry ids of its messages (loaded when first needed)."""

    spec: TurnSpec
    model: ResolvedModel
    budget: ContextBudget
    emit: Emit
    progress: RunProgress
    result: TurnResult
    user: UserMessage
    system_prompt: str
    tools: list[ToolSpec]
    hooks: HookRegistry | None
    ctx: AgentHookContext
    history: list[Message]
    history_tokens: int | None = None
    _ids: list[str | None] | None = None
    _fixed_tokens: int | None = None
    """System prompt, tool schemas, history and the user message: what does not change
    while the attempts run (until a compaction replaces the history)."""

    def items(self) -> list[Message]:
        return [*self.history, self.user, *self.progress.messages]

    def tokens(self) -> int:
        fixed = self._fixed_tokens
        if fixed is None:
            if self.history_tokens is None:
                self.history_tokens = sum(estimate_message_tokens(m) for m in self.history)
            fixed = self._fixed_tokens = self.history_tokens + estimate_context_tokens(
                self.system_prompt, [self.user], self.tools
            )
        return fixed + sum(estimate_message_tokens(m) for m in self.progress.messages)

    def over_budget(self) -> bool:
        return self.spec.compaction.enabled and self.tokens() > self.budget.prompt_budget

    async def _history_ids(self) -> list[str | None]:
        if self._ids is None:
            ids: list[str | None] = [None] * len(self.history)
            loader = self.spec.history_entries
            if loader is not None:
                entries = await loader()
                if build_context(entries) == list(self.history):
                    ids = context_entry_ids(entries)
                else:
                    log.warning(
                        "compaction: the stored transcript of %s does not match the context;"
                        " keeping from the current message",
                        self.spec.session_key,
                    )
            self._ids = ids
        return self._ids

    async def compact(
        self, reason: CompactionReason, *, will_retry: bool, whole_run: bool, attempt: int = 0
    ) -> bool:
        """Compact the context; True when it completed. `whole_run`: the cut may fall inside
        this run's messages (after the run); else this run's messages are all kept."""
        ids = await self._history_ids()
        items = self.items()
        n_history = len(self.history)
        last = len(items) - 1 if whole_run else n_history

        def allowed(i: int) -> bool:
            return i <= last and (i >= n_history or ids[i] is not None)

        keep = self.budget.keep_recent_tokens >> max(0, attempt - 1)
        tokens_before = estimate_context_tokens(self.system_prompt, items, self.tools)
        plan = plan_compaction(
            items,
            keep_recent_tokens=keep,
            allowed=allowed,
            force=reason == "overflow-retry",
            tokens_before=tokens_before,
        )
        if plan is None:
            return False
        self.emit("compaction", {"phase": "start"})
        await self._fire_before(len(items), plan.cut - plan.start, tokens_before)
        summary = ""
        try:
            summary = await summarize(
                self.model.provider,
                self.model.model_id,
                plan.to_summarize(items),
                previous_summary=plan.previous_summary,
                params=self.model.params,
                idle_timeout=self.spec.idle_timeout,
                now_ms=now_ms(),
            )
        except ProviderError as exc:
            log.warning("compaction of %s failed: %s", self.spec.session_key, exc.message)
        except BaseException:
            # Cancelled (abort, timeout, shutdown): close the phase for whoever watches it.
            self.emit("compaction", {"phase": "end", "willRetry": False, "completed": False})
            raise
        completed = bool(summary)
        context: list[Message] = []
        if completed:
            context = self._apply(items, plan.cut, plan.start, summary, reason, tokens_before, ids)
        self.emit(
            "compaction",
            {"phase": "end", "willRetry": will_retry and completed, "completed": completed},
        )
        if completed and not will_retry:
            await self._fire_after(len(context), plan.cut - plan.start)
        return completed

    def _apply(
        self,
        items: list[Message],
        cut: int,
        start: int,
        summary: str,
        reason: CompactionReason,
        tokens_before: int,
        ids: list[str | None],
    ) -> list[Message]:
        """Record the compaction and shrink the history; returns the context after it.

        A cut inside this run (after it) leaves the history as just the summary: the run is
        over, and the session continues from what `persist_run` rebuilds."""
        n_history = len(self.history)
        position = 1 + len(self.progress.messages)
        head = summary_message(summary, now_ms=now_ms())
        if cut < n_history:
            kept = tuple(self.history[cut:])
            record_kw: dict[str, Any] = {"first_kept_entry_id": ids[cut], "kept_history": kept}
            self.history = [head, *kept]
            self._ids = [None, *ids[cut:]]
        else:
            record_kw = {"first_kept_run_index": cut - n_history}
            self.history = [head]
            self._ids = [None]
        self._fixed_tokens = self.history_tokens = None
        after_items = [head, *items[cut:]]
        tokens_after = estimate_context_tokens(self.system_prompt, after_items, self.tools)
        self.result.compactions.append(
            CompactionRecord(
                summary=summary,
                reason=reason,
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                summarized=cut - start,
                position=position,
                **record_kw,
            )
        )
        self.result.context_tokens = tokens_after
        return after_items

    async def _fire_before(self, count: int, compacting: int, tokens: int) -> None:
        if self.hooks is not None and self.hooks.has("before_compaction"):
            await self.hooks.fire(
                "before_compaction",
                BeforeCompactionEvent(
                    messageCount=count, compactingCount=compacting, tokenCount=tokens
                ),
                self.ctx,
            )
        await self._internal("compact:before", {"messageCount": count, "tokenCount": tokens})

    async def _fire_after(self, count: int, compacted: int) -> None:
        tokens = self.result.context_tokens
        if self.hooks is not None and self.hooks.has("after_compaction"):
            await self.hooks.fire(
                "after_compaction",
                AfterCompactionEvent(
                    messageCount=count, compactedCount=compacted, tokenCount=tokens
                ),
                self.ctx,
            )
        await self._internal("compact:after", {"compactedCount": compacted, "tokenCount": tokens})

    async def _internal(self, action: str, context: dict[str, Any]) -> None:
        internal = self.spec.internal_hooks
        if internal is not None and internal.has_listeners("session", action):
            await internal.trigger(
                InternalHookEvent(
                    type="session",
                    action=action,
                    sessionKey=self.spec.session_key,
                    context={"sessionId": self.spec.session_id, **context},
                )
            )


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
    ctx = (
        AgentHookContext(
            runId=spec.run_id,
            agentId=spec.agent_id,
            sessionKey=spec.session_key,
            sessionId=spec.session_id,
            workspaceDir=spec.workspace_dir,
            messageProvider=spec.channel,
            trigger="user",
            channelId=spec.channel,
        )
        if hooks is not None
        else _NO_HOOK_CONTEXT
    )
    started = time.monotonic()
    prompt = spec.message
    if hooks is not None and hooks.has("message_received"):
        await hooks.fire(
            "message_received",
            MessageReceivedEvent(from_=spec.session_key, content=prompt, timestamp=now_ms()),
        )
    model_ref = spec.model_ref
    legacy = None
    if hooks is not None:
        provider_o, model_o = await hooks.run_before_model_resolve(
            BeforeModelResolveEvent(prompt=prompt), ctx
        )
        if hooks.has("before_agent_start"):
            legacy = await hooks.run_before_agent_start(
                BeforeAgentStartEvent(prompt=prompt, messages=list(spec.history)), ctx
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
    if hooks is not None:
        ctx = msgspec.structs.replace(
            ctx, modelProviderId=model.provider_id, modelId=model.model_id
        )
    budget = context_budget(spec.context_window or model.definition.contextWindow, spec.compaction)
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
    )
    run_env = getattr(spec.tools, "env", None)
    if isinstance(run_env, dict):
        run_env.update(skills_environment(prepared.skills))

    hook_system: str | None = None
    prepend_context = append_context = None
    prepend_system = append_system = None
    if hooks is not None:
        built = await hooks.run_before_prompt_build(
            BeforePromptBuildEvent(prompt=prompt, messages=list(spec.history)), ctx
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
    if hook_system is None and not prepend_system and not append_system:
        plain, system_prompt = prepared.plain()
        sections = list(plain)
    else:
        sections = prepared.sections(
            hook_system_prompt=hook_system,
            prepend_system=prepend_system,
            append_system=append_system,
        )
        system_prompt = join_sections(sections)
    user_text = _join(prepend_context, prompt, append_context)
    user = UserMessage(content=user_text, timestamp=now_ms())
    result.user_message = user
    tool_specs = spec.tools.specs()
    result.report_factory = functools.partial(
        prepared.report,
        source="run",
        session_key=spec.session_key,
        session_id=spec.session_id,
        agent_id=spec.agent_id,
        sections=sections,
        tools=tool_specs,
        history=spec.history,
        provider=model.provider_id,
        model=model.model_id,
        now_ms=now_ms(),
    )
    mode = reasoning_mode(spec.reasoning_level)
    result.reasoning_mode = mode

    success = False
    error: str | None = None
    blocks: BlockPipeline | None = None
    try:
        if hooks is not None and hooks.has("before_agent_reply"):
            claim = await hooks.run_before_agent_reply(
                BeforeAgentReplyEvent(cleanedBody=prompt), ctx
            )
            if claim is not None:
                result.claimed_by = claim.plugin_id
                text = _claim_text(claim.reply)
                if text:
                    progress.text = text
                    emit("assistant", {"text": text, "delta": text})
                success = True
                return result
        settings = spec.block_streaming
        if settings is not None and settings.enabled and spec.on_block is not None:
            sink = spec.on_block

            def deliver(block: BlockReply) -> None:
                result.block_replies.append(block)
                sink(block)

            blocks = BlockPipeline(
                settings=settings,
                sink=deliver,
                reasoning_blocks=mode == "on",
                text_chunk_limit=spec.text_chunk_limit,
                flusher=spec.block_flusher,
            )
        stream = _TurnStream(emit=emit, progress=progress, mode=mode, blocks=blocks)
        compactor = _Compactor(
            spec=spec,
            model=model,
            budget=budget,
            emit=emit,
            progress=progress,
            result=result,
            user=user,
            system_prompt=system_prompt,
            tools=tool_specs,
            hooks=hooks,
            ctx=ctx,
            history=list(spec.history),
            history_tokens=spec.history_tokens,
        )
        if compactor.over_budget():
            await compactor.compact("auto-threshold", will_retry=False, whole_run=False)
        while True:
            inp = AgentRunInput(
                run_id=spec.run_id,
                provider=provider,
                provider_id=model.provider_id,
                model_id=model.model_id,
                api=model.api,
                system_prompt=system_prompt,
                history=list(compactor.history),
                user_message=user,
                params=dict(model.params),
                tools=spec.tools,
                emit_thinking=mode != "off",
                idle_timeout=spec.idle_timeout,
                session_id=spec.session_id,
                hooks=hooks,
                steer_inbox=spec.steer_inbox,
                resume=list(progress.messages),
                max_attempts=spec.max_attempts,
            )
            try:
                if model.harness is not None:
                    await model.harness.run(inp, stream, progress)
                else:
                    await run_agent(inp, stream, progress)
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
                    "overflow-retry",
                    will_retry=True,
                    whole_run=False,
                    attempt=result.overflow_retries,
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
        success = True
        return result
    except Exception as exc:
        error = str(exc)
        raise
    finally:
        if blocks is not None:
            blocks.close()
        if hooks is not None and hooks.has("agent_end") and (success or error is not None):
            await hooks.fire(
                "agent_end",
                AgentEndEvent(
                    messages=list(progress.messages),
                    success=success,
                    error=error,
                    durationMs=(time.monotonic() - started) * 1000,
                ),
                ctx,
            )


def _claim_text(reply: Any) -> str:
    if isinstance(reply, dict):
        text = reply.get("text")
        return text if isinstance(text, str) else ""
    if isinstance(reply, str):
        return reply
    return ""
