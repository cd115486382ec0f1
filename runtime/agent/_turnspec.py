"""What one agent turn runs with (`TurnSpec`) and what it gives back (`TurnResult`).

Both are plain in-process records built per run (`run_turn` in `_turn` runs the turn); nothing
here does I/O.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import attrs

from ..hooks._internal import InternalHooks
from ..hooks._registry import HookRegistry
from ..llm._types import Message, UserMessage
from ..loop._agent import NoTools, SteerInbox, ToolRunner
from ..model._generation import ModelRuntimeGeneration, ResolvedModel, RunStores
from ..sessions._sessions import MemoryFlushRecord, TranscriptEntry
from ._blocks import BlockFlusher, BlockReply, BlockSink
from ._bootstrap import DEFAULT_BOOTSTRAP_MAX_CHARS, DEFAULT_BOOTSTRAP_TOTAL_MAX_CHARS
from ._chunking import DEFAULT_TEXT_CHUNK_LIMIT, BlockStreamingSettings
from ._compaction import CompactionRecord, CompactionSettings
from ._fallback import FallbackAttempts
from ._prompt import PromptCache
from ._prompt_report import SystemPromptReport
from ._reply import ReasoningMode

__all__ = ["BASE_SYSTEM_PROMPT", "HistoryEntries", "TurnResult", "TurnSpec"]

BASE_SYSTEM_PROMPT = (
    "You are a helpful assistant running inside clawlane, an OpenClaw-compatible gateway."
)

HistoryEntries = Callable[[], Awaitable[Sequence[TranscriptEntry]]]
"""Loads the session's transcript entries (to name the entry a compaction keeps from)."""


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
    history_clean: bool = False
    """`history` is as a provider sees it (`runtime.loop.provider_clean`) and holds no
    heartbeat prompt (`runtime.heartbeat.holds_heartbeat_turns`), as the caller knows: the
    attempts send it without walking it again."""
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
    light_context: bool = False
    """No workspace bootstrap files in the system prompt (OpenClaw's lightweight bootstrap
    context: a heartbeat with `lightContext`); `agent:bootstrap` hooks may still add some."""
    # model limits and compaction
    context_window: int | None = None
    """Overrides the model definition's `contextWindow`."""
    compaction: CompactionSettings = attrs.field(factory=CompactionSettings)
    history_entries: HistoryEntries | None = None
    """Without it, a compaction may only keep from this run's user message on."""
    compaction_count: int = 0
    """The session row's `compactionCount` as the run starts (the memory flush's cycle)."""
    memory_flush: MemoryFlushRecord | None = None
    """The session row's `memoryFlush`: the memory flush's ledger."""
    on_memory_flush: Callable[[MemoryFlushRecord], None] | None = None
    """Stores the ledger as soon as a flush ran (or failed), before the run goes on, as
    OpenClaw's does: a run cut short after its flush must not flush again in the cycle.
    Must not block."""
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
    memory_flush: MemoryFlushRecord | None = None
    """The memory flush's ledger when the turn flushed (or tried to): the row's new
    `memoryFlush` (`ended_row`)."""

    _report: SystemPromptReport | None = attrs.field(default=None, init=False)

    @property
    def prompt_report(self) -> SystemPromptReport | None:
        """The report of the run's system prompt (built when first asked for)."""
        if self._report is None and self.report_factory is not None:
            self._report = self.report_factory()
        return self._report
