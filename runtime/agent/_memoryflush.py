"""The memory flush before compaction (`agents.defaults.compaction.memoryFlush`, on by default
as in OpenClaw): when a session's context nears the compaction threshold, a silent turn first
asks the agent to write what matters into its memory files (`memory/YYYY-MM-DD.md`), so that
facts from a long session outlive the summary.

- When: the context passes the flush threshold, `softThresholdTokens` (4000) below the
  compaction threshold (the prompt budget) and at most half of that budget below it, as
  OpenClaw's plan; or its text passes `forceFlushTranscriptBytes` (2 MiB); and always before
  a compaction that would otherwise run unflushed. At most once per compaction cycle and
  once per turn. The cycle is the session row's `compactionCount` (with the compactions of
  the turn so far); the ledger is the row's `memoryFlush` (`MemoryFlushRecord`), where
  OpenClaw keeps it, persisted with the row as the run ends: a restart, or another node of
  a cluster, sees what was flushed.
- What: a model turn on a private copy of the conversation (the history before the waiting
  user message, or the whole finished run after it) plus OpenClaw's flush prompt, with the
  flush system prompt appended to the run's, and the run's file and memory tools
  (`FlushTools`: `write`/`edit`/`apply_patch` reach the workspace; no `message`, no `exec`).
  Nothing of it enters the transcript, the run's reply, its tool-error fallback or its usage;
  its file writes are durable. The model may answer `NO_REPLY`.
- Shown as OpenClaw shows it: the run's `run_status` events `{phase: "memory_flushing"}`
  then `{phase: "preparing_context"}`; the flush turn's own events are not streamed.
- Skipped when the run cannot write (no `write`/`edit` tool: a read-only workspace), when a
  plugin harness runs the model (it owns its context), and when the flush is disabled.
- A flush that fails (provider error, bad `model`) is logged and the run goes on: it is
  optional maintenance. As OpenClaw's, the ledger counts it (`failed`, `failureCount`) and a
  later turn of the cycle tries again; after `MAX_FLUSH_FAILURES` the cycle is given up
  (`succeeded`, `exhausted`), and with `agents.defaults.compaction.notifyUser` the user is
  told as OpenClaw tells them: a compaction notice delivered as a block reply (a chat
  `final` of its own on the gateway), `DEGRADED_NOTICE`. Cancellation propagates.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from typing import Any, Final

import attrs

from ..llm._types import (
    Message,
    ProviderError,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from ..loop._agent import (
    AgentRunInput,
    Emit,
    NoTools,
    RunProgress,
    ToolOutcome,
    ToolRunner,
    now_ms,
    run_agent,
)
from ..model._generation import GenerationError, ResolvedModel
from ..model._settings import MemoryFlushSettings
from ..sessions._sessions import MemoryFlushRecord
from ._compaction import ContextBudget

__all__ = [
    "DEGRADED_NOTICE",
    "FLUSH_PROMPT_MARKER",
    "MAX_FLUSH_FAILURES",
    "FlushTools",
    "MemoryFlush",
    "flush_prompts",
    "flush_threshold",
    "flushed_in_cycle",
    "next_record",
]

log = logging.getLogger("clawlane.memory.flush")

FLUSH_PROMPT_MARKER: Final = "Pre-compaction memory flush."
"""How the flush turn's user message starts (the `local` model recognises it)."""
_SILENT: Final = "NO_REPLY"
_TARGET = "Store durable memories only in memory/YYYY-MM-DD.md (create memory/ if needed)."
_APPEND = (
    "If memory/YYYY-MM-DD.md already exists, APPEND new content only and do not overwrite"
    " existing entries."
)
_READ_ONLY = (
    "Treat workspace bootstrap/reference files such as MEMORY.md, DREAMS.md, SOUL.md, and"
    " AGENTS.md as read-only during this flush; never overwrite, replace, or edit them."
)
_PROMPT = " ".join(
    (
        FLUSH_PROMPT_MARKER,
        _TARGET,
        _READ_ONLY,
        _APPEND,
        "Do NOT create timestamped variant files (e.g., YYYY-MM-DD-HHMM.md); always use the"
        " canonical YYYY-MM-DD.md filename.",
        f"If nothing to store, reply with {_SILENT}.",
    )
)
_SYSTEM_PROMPT = " ".join(
    (
        "Pre-compaction memory flush turn.",
        "The session is near auto-compaction; capture durable memories to disk.",
        _TARGET,
        _READ_ONLY,
        _APPEND,
        f"You may reply, but usually {_SILENT} is correct.",
    )
)
_WRITING_TOOLS: Final = frozenset({"write", "edit", "apply_patch"})
_FLUSH_TOOLS: Final = _WRITING_TOOLS | {"read", "ls", "memory_search", "memory_get"}
_RUN_RECORDS: Final = ("failures", "sent_texts", "mutating_failed")
"""What a run's tool runner records for the run's reply (`runtime.loop.RunTools`)."""


@attrs.define(eq=False)
class FlushTools:
    """The run's tools as the flush turn gets them: the file and memory tools only (no
    message to the user, no command), and nothing it does counts in what the run's runner
    records for the reply (a failed flush write is no tool-error reply of the run)."""

    inner: ToolRunner

    def specs(self) -> list[ToolSpec]:
        return [spec for spec in self.inner.specs() if spec.name in _FLUSH_TOOLS]

    async def call(self, call: ToolCallContent, emit: Emit) -> ToolOutcome:
        if call.name not in _FLUSH_TOOLS:
            return await NoTools().call(call, emit)
        records = [getattr(self.inner, name, None) for name in _RUN_RECORDS]
        kept = [(r, len(r)) for r in records if isinstance(r, list)]
        try:
            return await self.inner.call(call, emit)
        finally:
            for record, size in kept:
                del record[size:]


def flush_prompts(now: dt.datetime) -> tuple[str, str, str]:
    """The flush turn's user prompt, system prompt and target path for the day of `now`
    (timezone-aware: the gateway's local day), as OpenClaw words them."""
    local = now.astimezone()
    stamp = local.date().isoformat()
    time_line = f"Current time: {local.strftime('%Y-%m-%d %H:%M %Z').strip()}"
    prompt = f"{_PROMPT.replace('YYYY-MM-DD', stamp)}\n{time_line}"
    return prompt, _SYSTEM_PROMPT.replace("YYYY-MM-DD", stamp), f"memory/{stamp}.md"


def flush_threshold(budget: ContextBudget, settings: MemoryFlushSettings) -> int:
    """The context size (tokens) from which the flush runs: the compaction threshold minus
    `softThresholdTokens`, the margin never more than half the threshold (OpenClaw's plan)."""
    threshold = budget.prompt_budget
    soft = min(settings.softThresholdTokens, max(0, threshold) // 2)
    return max(0, threshold - soft)


MAX_FLUSH_FAILURES: Final = 3
"""Failed flushes in a compaction cycle before it is given up (OpenClaw's)."""
DEGRADED_NOTICE: Final = "⚠️ Memory maintenance temporarily failed; continuing your reply."
"""OpenClaw's notice when the flush is given up (`memory_flush_degraded`, with
`compaction.notifyUser`)."""


def flushed_in_cycle(record: MemoryFlushRecord | None, compaction_count: int) -> bool:
    """Has the session flushed in the cycle `compaction_count` names? (OpenClaw's
    `hasAlreadyFlushedForCurrentCompaction`.)"""
    return record is not None and record.compactionCount == compaction_count


def next_record(
    record: MemoryFlushRecord | None, compaction_count: int, *, ok: bool
) -> MemoryFlushRecord:
    """The ledger after a flush in the cycle `compaction_count`: `succeeded` there; or one
    more failure, the cycle given up (`succeeded`) at `MAX_FLUSH_FAILURES`."""
    if ok:
        return MemoryFlushRecord(kind="succeeded", compactionCount=compaction_count)
    failures = (record.failureCount or 0) + 1 if record and record.kind == "failed" else 1
    if failures >= MAX_FLUSH_FAILURES:
        log.warning("memory flush failed %d times; skipping it until the next compaction", failures)
        return MemoryFlushRecord(kind="succeeded", compactionCount=compaction_count)
    last = record.compactionCount if record is not None else None
    return MemoryFlushRecord(kind="failed", compactionCount=last, failureCount=failures)


def _text_bytes(messages: Sequence[Message]) -> int:
    total = 0
    for m in messages:
        content: Any = getattr(m, "content", "")
        if isinstance(content, str):
            total += len(content.encode())
            continue
        for c in content:
            text = getattr(c, "text", None) or getattr(c, "thinking", None)
            if isinstance(text, str):
                total += len(text.encode())
    return total


@attrs.define(eq=False)
class MemoryFlush:
    """The flush of one turn (`TurnCompactor` holds it): `due` says whether the context
    calls for it, `run` runs it (at most once per turn and compaction cycle)."""

    settings: MemoryFlushSettings
    budget: ContextBudget
    session_id: str
    session_key: str
    agent_id: str
    run_id: str
    tools: ToolRunner
    system_prompt: str
    idle_timeout: float | None
    record: MemoryFlushRecord | None = None
    """The ledger: the session row's `memoryFlush` (then this turn's flush's)."""
    compaction_count: int = 0
    """The cycle the context is in: the row's `compactionCount` plus this turn's
    compactions (the compactor keeps it current)."""
    done: bool = False
    """This turn flushed already (or tried to)."""
    exhausted: bool = False
    """This turn's flush failed for the `MAX_FLUSH_FAILURES`th time: the cycle is given up."""

    def flushed(self) -> bool:
        """Flushed in the current cycle (by this turn or an earlier one)."""
        return flushed_in_cycle(self.record, self.compaction_count)

    def enabled(self, model: ResolvedModel) -> bool:
        plugin = model.harness is not None and not model.harness.builtin
        if not self.settings.enabled or self.done or plugin:
            return False
        return any(spec.name in _WRITING_TOOLS for spec in self.tools.specs())

    def due(self, tokens: int, history: Sequence[Message]) -> bool:
        """Does a context of `tokens` (whose history is `history`) call for the flush?"""
        near = tokens >= flush_threshold(self.budget, self.settings) > 0
        if not near:
            force = self.settings.force_bytes() or 0
            # The estimate counts a quarter token or more a character and a character is at
            # most 4 bytes: a context under force / 16 tokens holds less text, unwalked.
            near = force > 0 and tokens * 16 >= force and _text_bytes(history) >= force
        return near and not self.flushed()

    async def run(
        self, model: ResolvedModel, context: Sequence[Message], emit: Any, generation: Any
    ) -> bool:
        """Run the flush turn on a copy of `context`; True when it ran to its end. Emits the
        run's `run_status` phases and keeps the outcome in `record`. A checkpoint; a failure
        is logged, cancellation propagates (the ledger left as it was)."""
        self.done = True
        ok = await self._run(model, context, emit, generation)
        self.record = next_record(self.record, self.compaction_count, ok=ok)
        self.exhausted = not ok and self.record.kind == "succeeded"
        return ok

    async def _run(
        self, model: ResolvedModel, context: Sequence[Message], emit: Any, generation: Any
    ) -> bool:
        if self.settings.model:
            try:
                model = generation.resolve(self.settings.model, agent_id=self.agent_id)
            except GenerationError as exc:
                log.warning(
                    "memory flush of %s: memoryFlush.model %r is not usable: %s",
                    self.session_key,
                    self.settings.model,
                    exc,
                )
                return False
        prompt, system, path = flush_prompts(dt.datetime.now(dt.UTC))
        emit("run_status", {"phase": "memory_flushing"})
        try:
            return await self._turn(model, context, prompt, system, path)
        finally:
            emit("run_status", {"phase": "preparing_context"})

    async def _turn(
        self,
        model: ResolvedModel,
        context: Sequence[Message],
        prompt: str,
        system: str,
        path: str,
    ) -> bool:
        inp = AgentRunInput(
            run_id=f"{self.run_id}:memory-flush",
            provider=model.provider,
            provider_id=model.provider_id,
            model_id=model.model_id,
            api=model.api,
            system_prompt=f"{self.system_prompt}\n\n{system}" if self.system_prompt else system,
            history=list(context),
            user_message=UserMessage(content=[TextContent(prompt)], timestamp=now_ms()),
            params=dict(model.params),
            tools=FlushTools(self.tools),
            idle_timeout=self.idle_timeout,
            session_id=self.session_id,
        )
        progress = RunProgress()
        log.info("memory flush of %s: asking the agent to save to %s", self.session_key, path)
        try:
            await run_agent(inp, _silent, progress)
        except ProviderError as exc:
            log.warning("memory flush of %s failed: %s", self.session_key, exc.message)
            return False
        log.info(
            "memory flush of %s done (%d tool calls)",
            self.session_key,
            sum(isinstance(m, ToolResultMessage) for m in progress.messages),
        )
        return True


def _silent(stream: str, data: dict[str, Any]) -> None:
    """The flush turn's own events: not streamed (OpenClaw does not show them either)."""
    del stream, data
