"""The memory flush before compaction (`agents.defaults.compaction.memoryFlush`, on by default
as in OpenClaw): when a session's context nears the compaction threshold, a silent turn first
asks the agent to write what matters into its memory files (`memory/YYYY-MM-DD.md`), so that
facts from a long session outlive the summary.

- When: the context passes the flush threshold, `softThresholdTokens` (4000) below the
  compaction threshold (the prompt budget) and at most half of that budget below it, as
  OpenClaw's plan; or its text passes `forceFlushTranscriptBytes` (2 MiB); and always before
  a compaction that would otherwise run unflushed. At most once per compaction cycle
  (`FlushLedger`: the cycle is the session and the summary its context starts from) and once
  per turn.
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
  optional maintenance. Cancellation propagates.

The ledger is in process memory (bounded): after a restart, or on another node of a
cluster, a session near its threshold may flush once more in the same cycle.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections import OrderedDict
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
from ._compaction import ContextBudget, summary_of

__all__ = [
    "FLUSH_PROMPT_MARKER",
    "FlushLedger",
    "FlushTools",
    "MemoryFlush",
    "flush_prompts",
    "flush_threshold",
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


def _cycle(history: Sequence[Message]) -> str:
    """The compaction cycle a context is in: the summary it starts from (none: the first)."""
    summary = summary_of(history[0]) if history else None
    if summary is None:
        return ""
    return hashlib.blake2b(summary.encode(), digest_size=12).hexdigest()


@attrs.define
class FlushLedger:
    """Which compaction cycle each session last flushed in (bounded: the oldest sessions are
    forgotten first). Not a checkpoint; one per process (`LEDGER`)."""

    capacity: int = 4096
    _cycles: OrderedDict[str, str] = attrs.field(factory=OrderedDict)

    def flushed(self, session_id: str, history: Sequence[Message]) -> bool:
        return self._cycles.get(session_id) == _cycle(history)

    def record(self, session_id: str, history: Sequence[Message]) -> None:
        self._cycles[session_id] = _cycle(history)
        self._cycles.move_to_end(session_id)
        while len(self._cycles) > self.capacity:
            self._cycles.popitem(last=False)


LEDGER: Final = FlushLedger()


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
    ledger: FlushLedger = LEDGER
    done: bool = False
    """This turn flushed already (or tried to)."""

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
            near = force > 0 and _text_bytes(history) >= force
        return near and not self.ledger.flushed(self.session_id, history)

    async def run(
        self,
        model: ResolvedModel,
        history: Sequence[Message],
        context: Sequence[Message],
        emit: Any,
        generation: Any,
    ) -> bool:
        """Run the flush turn on a copy of `context` (the cycle is `history`'s); True when it
        ran to its end. Emits the run's `run_status` phases. A checkpoint; a failure is
        logged, cancellation propagates."""
        self.done = True
        self.ledger.record(self.session_id, history)
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
