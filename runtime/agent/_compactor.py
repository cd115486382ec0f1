"""Compaction inside a turn (`TurnCompactor`): before the first attempt when the context is
already over the budget, after a context-overflow error (then the attempt is retried), and
after a successful run whose context passed the budget.

Each compaction emits `compaction` `{phase:"start"}` then `{phase:"end", willRetry,
completed}`, fires `before_compaction` and (when not retrying) `after_compaction`, and the
internal `session:compact:before/after` hooks; `TurnResult.compactions` carries what the
session persists (`_compaction.persist_run`). The memory flush (`_memoryflush`) runs before
the attempts when the context nears the threshold (`flush_memory`) and before a threshold
compaction that would otherwise run unflushed. `compact` is a checkpoint (the summary is a model
call); cancelling it closes the phase (`completed: false`) and propagates.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from ..hooks._events import AfterCompactionEvent, AgentHookContext, BeforeCompactionEvent
from ..hooks._internal import InternalHookEvent
from ..hooks._registry import HookRegistry
from ..llm._types import Message, ModelProvider, ProviderError, ToolSpec, UserMessage
from ..loop._agent import Emit, RunProgress, now_ms
from ..loop._traced import TracedProvider
from ..model._generation import ResolvedModel
from ..sessions._sessions import build_context
from ..telemetry import STATE, current, start_span
from ._blocks import BlockReply
from ._compaction import (
    CompactionReason,
    CompactionRecord,
    ContextBudget,
    context_entry_ids,
    estimate_context_tokens,
    estimate_message_tokens,
    plan_compaction,
    summarize,
    summary_message,
)
from ._memoryflush import DEGRADED_NOTICE, MemoryFlush
from ._turnspec import TurnResult, TurnSpec

__all__ = ["TurnCompactor"]

log = logging.getLogger("clawlane.turn")


@attrs.define(eq=False)
class TurnCompactor:
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
    history_clean: bool = False
    """`history` is as a provider sees it (`TurnSpec.history_clean`) until compacted."""
    _ids: list[str | None] | None = None
    _fixed_tokens: int | None = None
    """System prompt, tool schemas, history and the user message: what does not change
    while the attempts run (until a compaction replaces the history)."""
    _flush: MemoryFlush | None = None

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

    def _memory_flush(self) -> MemoryFlush | None:
        """The turn's memory flush, while it may still run (None: off, done, or impossible)."""
        spec = self.spec
        if self._flush is None:
            self._flush = MemoryFlush(
                settings=spec.compaction.memoryFlush,
                budget=self.budget,
                session_id=spec.session_id,
                session_key=spec.session_key,
                agent_id=spec.agent_id,
                run_id=spec.run_id,
                tools=spec.tools,
                system_prompt=self.system_prompt,
                idle_timeout=spec.idle_timeout,
                record=spec.memory_flush,
            )
        self._flush.compaction_count = spec.compaction_count + len(self.result.compactions)
        usable = spec.compaction.enabled and self._flush.enabled(self.model)
        return self._flush if usable else None

    def _flushed(self, flush: MemoryFlush) -> None:
        """Keep the ledger after a flush: in the result (the row as the run ends), and in
        the store at once (`TurnSpec.on_memory_flush`); a flush given up is told to the
        user with `compaction.notifyUser` (OpenClaw's notice, as a block reply)."""
        spec = self.spec
        self.result.memory_flush = flush.record
        if flush.record is not None and spec.on_memory_flush is not None:
            spec.on_memory_flush(flush.record)
        if flush.exhausted and spec.compaction.notifyUser and spec.on_block is not None:
            spec.on_block(BlockReply(DEGRADED_NOTICE, 0, is_notice=True))

    async def flush_memory(self) -> None:
        """Before the attempts: the memory flush when the context nears the compaction
        threshold (on the history, without the waiting user message). A checkpoint."""
        flush = self._memory_flush()
        if flush is not None and flush.due(self.tokens(), self.history):
            await flush.run(self.model, self.history, self.emit, self.spec.generation)
            self._flushed(flush)

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
        this run's messages (after the run); else this run's messages are all kept. With
        telemetry on, inside an `openclaw.compaction` span (its reason, attempt, outcome)."""
        if not STATE.on:
            return await self._compact(
                reason, will_retry=will_retry, whole_run=whole_run, attempt=attempt
            )
        span = start_span(
            "openclaw.compaction",
            {"openclaw.compaction.reason": reason, "openclaw.compaction.attempt": attempt},
        )
        completed = False
        try:
            with current(span):
                completed = await self._compact(
                    reason, will_retry=will_retry, whole_run=whole_run, attempt=attempt
                )
            return completed
        finally:
            span.set_attribute("openclaw.compaction.completed", completed)
            span.end()

    def _provider(self) -> ModelProvider:
        """The model that writes the summary (with telemetry on: a span per request, a child
        of the compaction's)."""
        provider = self.model.provider
        return TracedProvider(provider, self.model.provider_id) if STATE.on else provider

    async def _compact(
        self, reason: CompactionReason, *, will_retry: bool, whole_run: bool, attempt: int
    ) -> bool:
        ids = await self._history_ids()
        items = self.items()
        n_history = len(self.history)
        last = len(items) - 1 if whole_run else n_history

        def allowed(i: int) -> bool:
            return i <= last and (i >= n_history or ids[i] is not None)

        keep = self.budget.keep_recent_tokens >> max(0, attempt - 1)
        # What every request carries (system prompt, tool schemas) plus the kept tail must
        # leave room under the budget for the summary: with many tools offered, the fixed
        # part alone can be most of a small window.
        fixed = estimate_context_tokens(self.system_prompt, [], self.tools)
        keep = min(keep, max(0, self.budget.prompt_budget - fixed) // 2)
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
        flush = self._memory_flush() if reason == "auto-threshold" else None
        if flush is not None and not flush.flushed():
            # Save what matters before the summary replaces it (after the run: the whole run).
            seen = items if whole_run else self.history
            await flush.run(self.model, seen, self.emit, self.spec.generation)
            self._flushed(flush)
        self.emit("compaction", {"phase": "start"})
        await self._fire_before(len(items), plan.cut - plan.start, tokens_before)
        summary = ""
        try:
            summary = await summarize(
                self._provider(),
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
        self.history_clean = False
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
