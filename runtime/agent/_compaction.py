"""Compaction: keeping a session's model context inside its window (protocol notes §10).

A session's context is estimated in tokens (characters / 4, per message, as pi does). When it
passes the prompt budget (the model's context window minus the compaction reserve), or when a
provider rejects a request as too large (`ProviderError.kind == "context_overflow"`), the older
part of the context is summarised by the model itself (a summarisation turn through the same
provider) and replaced by that summary:

- `plan_compaction` picks the cut: walking back from the end it keeps at least
  `keepRecentTokens` of recent messages, and never cuts at a tool result, so a tool call is
  never separated from its result. An existing summary (the context's first message after an
  earlier compaction) is not summarised again but handed to the model as the previous summary
  to update.
- `summarize` runs the summarisation turn (`SUMMARY_SYSTEM_PROMPT`, the conversation serialised
  as text, no tools) and returns the summary, capped at `SUMMARY_MAX_CHARS`.
- `CompactionRecord` is what a compaction produced; `persist_run` turns a run's messages, its
  notes (rows beside its messages, `_run_notes`) and its compactions into transcript entries
  (`CompactionEntry {summary, firstKeptEntryId, tokensBefore}`) in the order they happened,
  and returns the context the next run starts from (summary + kept messages). Nothing is
  deleted: compaction adds an entry; the full history stays in the store, and
  `build_context` honours the latest compaction on the path.
- `compact_history` is the manual compaction (`sessions.compact`, `/compact [instructions]`),
  between runs, on the session's lane.

Settings are `agents.defaults.compaction` (`CompactionSettings`): `reserveTokens` 16384 with the
OpenClaw floor `reserveTokensFloor` 20000 (0 disables the floor), `keepRecentTokens` 20000.
`context_budget` clamps them for small windows: the reserve never takes more than half the
window, and the recent part kept never more than half of what is left.

Errors: `summarize` raises `ProviderError` (the summarisation turn failed); nothing else here
raises for bad input. Cancellation: `summarize` and `compact_history` are checkpoints;
cancelling them closes the model stream and nothing is recorded.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal

import attrs
import msgspec

from ..hooks._events import AfterCompactionEvent, AgentHookContext, BeforeCompactionEvent
from ..hooks._registry import HookRegistry
from ..llm._retry import stream_with_retry
from ..llm._tokens import (
    estimate_context_tokens,
    estimate_message_tokens,
    estimate_text_tokens,
    estimate_tools_tokens,
)
from ..llm._types import (
    AssistantMessage,
    Message,
    ModelProvider,
    ModelRequest,
    TextContent,
    TextDelta,
    ThinkingContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from ..model._generation import ModelRuntimeGeneration
from ..model._settings import DEFAULT_KEEP_RECENT_TOKENS as DEFAULT_KEEP_RECENT_TOKENS
from ..model._settings import DEFAULT_RESERVE_TOKENS as DEFAULT_RESERVE_TOKENS
from ..model._settings import DEFAULT_RESERVE_TOKENS_FLOOR as DEFAULT_RESERVE_TOKENS_FLOOR
from ..model._settings import CompactionSettings as CompactionSettings
from ..sessions._provenance import prompt_kept
from ..sessions._sessions import (
    COMPACTION_SUMMARY_PREFIX,
    CompactionEntry,
    TranscriptBuilder,
    TranscriptEntry,
    added_context,
    build_context,
    compaction_summary_message,
    context_entries,
    iso_timestamp,
)

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_RESERVE_TOKENS",
    "DEFAULT_RESERVE_TOKENS_FLOOR",
    "MAX_OVERFLOW_RETRIES",
    "SUMMARY_MAX_CHARS",
    "SUMMARY_SYSTEM_PROMPT",
    "CompactionPlan",
    "CompactionReason",
    "CompactionRecord",
    "CompactionSettings",
    "ContextBudget",
    "ManualCompaction",
    "RunNote",
    "compact_history",
    "compact_session",
    "context_budget",
    "context_entry_ids",
    "estimate_context_tokens",
    "estimate_message_tokens",
    "estimate_text_tokens",
    "estimate_tools_tokens",
    "is_summary_message",
    "persist_run",
    "plan_compaction",
    "serialize_conversation",
    "summarize",
    "summary_message",
    "summary_of",
]

MAX_OVERFLOW_RETRIES: Final = 3
"""Compact-and-retry attempts after context-overflow errors, per run."""
SUMMARY_MAX_CHARS: Final = 16_000
"""The safeguard cap on a summary's length."""
TOOL_RESULT_MAX_CHARS: Final = 2_000
"""A tool result is cut to this many characters in the text the summariser reads."""

CompactionReason = Literal["auto-threshold", "overflow-retry", "manual"]


# --- settings and budget -----------------------------------------------------------------


@attrs.frozen
class ContextBudget:
    """A model's limits as compaction applies them (all in tokens)."""

    context_window: int
    reserve_tokens: int
    keep_recent_tokens: int

    @property
    def prompt_budget(self) -> int:
        """What a request may hold: the window minus the reserve. Past it, compact."""
        return self.context_window - self.reserve_tokens


_budgets: dict[tuple[int, int], tuple[CompactionSettings, ContextBudget]] = {}


def context_budget(context_window: int, settings: CompactionSettings) -> ContextBudget:
    """The budget of a model with `context_window` tokens.

    reserve = max(reserveTokens, reserveTokensFloor) (floor 0: no floor), at most half the
    window; keep = keepRecentTokens, at most half of the prompt budget. Remembered per
    window and settings object (runs of a generation share theirs).
    """
    key = (context_window, id(settings))
    known = _budgets.get(key)
    if known is not None and known[0] is settings:
        return known[1]
    budget = _context_budget(context_window, settings)
    if len(_budgets) >= 256:
        _budgets.clear()
    _budgets[key] = (settings, budget)  # holds `settings`: its id is not reused meanwhile
    return budget


def _context_budget(context_window: int, settings: CompactionSettings) -> ContextBudget:
    window = max(1, context_window)
    reserve = settings.reserveTokens
    if settings.reserveTokensFloor > 0:
        reserve = max(reserve, settings.reserveTokensFloor)
    reserve = max(0, min(reserve, window // 2))
    keep = max(0, min(settings.keepRecentTokens, (window - reserve) // 2))
    return ContextBudget(context_window=window, reserve_tokens=reserve, keep_recent_tokens=keep)


# --- token estimates ---------------------------------------------------------------------

_specs_encoder: Final = msgspec.json.Encoder()


# --- summaries in the context ------------------------------------------------------------

_SUMMARY_TAGS: Final = re.compile(r"\A<summary>\n(.*)\n</summary>\Z", re.DOTALL)


def _text_of(message: Message) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(c.text for c in content if isinstance(c, TextContent))


def is_summary_message(message: Message) -> bool:
    """Is this the user message that stands for an earlier compaction's summary?"""
    return isinstance(message, UserMessage) and _text_of(message).startswith(
        COMPACTION_SUMMARY_PREFIX
    )


def summary_of(message: Message) -> str | None:
    """The summary text of a summary message (see `is_summary_message`), else None."""
    if not is_summary_message(message):
        return None
    body = _text_of(message).removeprefix(COMPACTION_SUMMARY_PREFIX)
    match = _SUMMARY_TAGS.match(body)
    return match[1] if match else body


def summary_message(summary: str, *, now_ms: int) -> UserMessage:
    """The summary as the context carries it (the text `build_context` gives it)."""
    entry = CompactionEntry(
        id="",
        parentId=None,
        timestamp=iso_timestamp(now_ms),
        summary=summary,
        firstKeptEntryId="",
        tokensBefore=0,
    )
    return compaction_summary_message(entry)


def context_entry_ids(entries: Sequence[TranscriptEntry]) -> list[str | None]:
    """The entry id of each message `build_context(entries)` returns, in order (None for the
    summary message of a compaction)."""
    return [None if isinstance(e, CompactionEntry) else e.id for e in context_entries(entries)]


# --- the cut -----------------------------------------------------------------------------


@attrs.frozen
class CompactionPlan:
    """Where to cut `messages` (see `plan_compaction`): `messages[start:cut]` are summarised,
    `messages[cut:]` kept; `previous_summary` is the summary at `messages[0]`, if any."""

    cut: int
    start: int
    previous_summary: str | None
    tokens_before: int

    def to_summarize(self, messages: Sequence[Message]) -> list[Message]:
        return list(messages[self.start : self.cut])


def plan_compaction(
    messages: Sequence[Message],
    *,
    keep_recent_tokens: int,
    allowed: Callable[[int], bool] = lambda _i: True,
    force: bool = False,
    forced_cut: Literal["latest", "earliest"] = "latest",
    tokens_before: int | None = None,
) -> CompactionPlan | None:
    """Choose the cut of a compaction, or None when there is nothing to compact.

    A cut at `i` keeps `messages[i:]`. It is valid when `messages[i]` is not a tool result
    (a call and its result stay on one side), `i` is past the previous summary and at least one
    message is summarised, `i < len(messages)` (something recent is kept) and `allowed(i)`.
    The chosen cut is the latest valid one that keeps at least `keep_recent_tokens`; when the
    whole context is smaller than that, None, unless `force` (an overflow: the provider knows
    better than the estimate), which takes the latest valid cut (or the earliest one, keeping
    all that `allowed` permits, with `forced_cut="earliest"`).
    """
    n = len(messages)
    start = 1 if n and is_summary_message(messages[0]) else 0
    previous = summary_of(messages[0]) if start else None

    def valid(i: int) -> bool:
        return (
            start < i < n
            and not isinstance(messages[i], ToolResultMessage)
            and not is_summary_message(messages[i])
            and allowed(i)
        )

    before = tokens_before if tokens_before is not None else estimate_context_tokens("", messages)
    kept = 0
    limit: int | None = None  # the latest index whose suffix holds keep_recent_tokens
    for i in range(n - 1, -1, -1):
        kept += estimate_message_tokens(messages[i])
        if kept >= keep_recent_tokens:
            limit = i
            break
    if limit is not None:
        for i in range(limit, start, -1):
            if valid(i):
                return CompactionPlan(
                    cut=i, start=start, previous_summary=previous, tokens_before=before
                )
    if not force:
        return None
    order = range(n - 1, start, -1) if forced_cut == "latest" else range(start + 1, n)
    for i in order:
        if valid(i):
            return CompactionPlan(
                cut=i, start=start, previous_summary=previous, tokens_before=before
            )
    return None


# --- the summarisation turn --------------------------------------------------------------

SUMMARY_SYSTEM_PROMPT: Final = (
    "You are a context summarization assistant. You read a conversation between a user and an"
    " AI assistant and write a structured summary of it, which another model will use to carry"
    " on the work. Do not continue the conversation and do not answer questions asked in it:"
    " output only the summary."
)

_SUMMARY_FORMAT: Final = """Use this format:

## Goal
What the user is trying to achieve.

## Constraints and preferences
Requirements and preferences the user stated.

## Progress
What was done, what is in progress, what is blocked.

## Key decisions
Decisions made and why.

## Next steps
What should happen next.

## Critical context
Anything else needed to continue: file paths, identifiers, names, numbers and error messages,
written exactly as they appear."""


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters]"


def serialize_conversation(messages: Sequence[Message]) -> str:
    """The conversation as plain text for the summariser, one block per message:
    `[User]: ...`, `[Assistant]: ...`, `[Assistant thinking]: ...`, `[Assistant tool calls]:
    name({json})`, `[Tool result name]: ...` (tool results cut to `TOOL_RESULT_MAX_CHARS`)."""
    lines: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            text = _text_of(m)
            if text.strip():
                lines.append(f"[User]: {text}")
        elif isinstance(m, AssistantMessage):
            thinking = "".join(c.thinking for c in m.content if isinstance(c, ThinkingContent))
            text = "".join(c.text for c in m.content if isinstance(c, TextContent))
            calls = [
                f"{c.name}({_specs_encoder.encode(c.arguments).decode()})"
                for c in m.content
                if isinstance(c, ToolCallContent)
            ]
            if thinking.strip():
                lines.append(f"[Assistant thinking]: {thinking}")
            if text.strip():
                lines.append(f"[Assistant]: {text}")
            if calls:
                lines.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        else:
            label = "Tool error" if m.isError else "Tool result"
            lines.append(f"[{label} {m.toolName}]: {_cap(_text_of(m), TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(lines)


def summary_request(
    model_id: str,
    messages: Sequence[Message],
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    params: Mapping[str, Any] | None = None,
    now_ms: int = 0,
) -> ModelRequest:
    """The request of a summarisation turn: one user message, no tools."""
    parts = [f"<conversation>\n{serialize_conversation(messages)}\n</conversation>"]
    if previous_summary:
        parts.append(f"<previous-summary>\n{previous_summary}\n</previous-summary>")
        ask = (
            "Update the previous summary with the conversation above: keep what still matters"
            " from it and add what happened since."
        )
    else:
        ask = "Write a checkpoint summary of the conversation above."
    parts.append(f"{ask} {_SUMMARY_FORMAT}")
    if instructions and instructions.strip():
        parts.append(f"Additional focus: {instructions.strip()}")
    return ModelRequest(
        model=model_id,
        system_prompt=SUMMARY_SYSTEM_PROMPT,
        messages=[UserMessage(content="\n\n".join(parts), timestamp=now_ms)],
        tools=[],
        params=dict(params or {}),
    )


async def summarize(
    provider: ModelProvider,
    model_id: str,
    messages: Sequence[Message],
    *,
    previous_summary: str | None = None,
    instructions: str | None = None,
    params: Mapping[str, Any] | None = None,
    idle_timeout: float | None = None,
    now_ms: int = 0,
) -> str:
    """Ask the model for a summary of `messages`. Returns "" when it answered nothing.

    Raises `ProviderError`. A checkpoint; cancelling it closes the model stream.
    """
    request = summary_request(
        model_id,
        messages,
        previous_summary=previous_summary,
        instructions=instructions,
        params=params,
        now_ms=now_ms,
    )
    pieces: list[str] = []
    stream = stream_with_retry(provider, request, idle_timeout=idle_timeout)
    async with contextlib.aclosing(stream) as deltas:  # type: ignore[type-var]
        async for delta in deltas:
            if isinstance(delta, TextDelta):
                pieces.append(delta.text)
    summary = "".join(pieces).strip()
    if len(summary) > SUMMARY_MAX_CHARS:
        summary = summary[:SUMMARY_MAX_CHARS].rstrip() + "\n[summary truncated]"
    return summary


# --- records and persistence -------------------------------------------------------------


@attrs.frozen
class CompactionRecord:
    """A completed compaction, as the session persists it.

    `position` is how many of the run's messages (its user message first) precede the entry.
    The first kept message is an existing history entry (`first_kept_entry_id`) or one of the
    run's messages (`first_kept_run_index`, 0 = the user message). `kept_history` holds the
    history messages kept before the run's user message (empty when the cut is in the run).
    """

    summary: str
    reason: CompactionReason
    tokens_before: int
    tokens_after: int
    summarized: int
    position: int
    first_kept_entry_id: str | None = None
    first_kept_run_index: int | None = None
    kept_history: tuple[Message, ...] = ()

    def details(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "tokensAfter": self.tokens_after,
            "summarized": self.summarized,
        }


@attrs.frozen
class MessageTags:
    """What a transcript row records about where its message came from."""

    idempotency_key: str | None = None
    run_id: str | None = None
    steer_target: str | None = None


RunNote = tuple[int, Callable[[TranscriptBuilder], TranscriptEntry]]
"""A transcript row a run adds beside its messages (`runtime.agent._run_notes`): written
before the run's message at that index (after the last one for their count), by a call
that chains it onto the builder."""


def persist_run(
    builder: TranscriptBuilder,
    run_messages: Sequence[Message],
    compactions: Sequence[CompactionRecord] = (),
    *,
    tags: Sequence[MessageTags] = (),
    notes: Sequence[RunNote] = (),
) -> tuple[list[TranscriptEntry], list[Message] | None]:
    """Transcript entries for a run's messages (user message first, unless OpenClaw keeps
    no row of it: `runtime.sessions.prompt_kept`), its compactions and its `notes`, in the
    order they happened; and the context the session continues from when the run compacted
    (None: the old context plus `added_context(entries)`). `tags[i]` (when given) names the
    row of `run_messages[i]`: its idempotency key, run, steer target."""
    ordered = sorted(compactions, key=lambda c: c.position)
    placed = sorted(notes, key=lambda n: n[0])
    entries: list[TranscriptEntry] = []
    at: list[int] = []  # where each run message's entry is in `entries`
    last: tuple[CompactionEntry, Sequence[Message], int] | None = None
    pending = noted = 0

    def add_before(upto: int) -> None:
        nonlocal pending, noted, last
        while pending < len(ordered) and ordered[pending].position <= upto:
            record = ordered[pending]
            pending += 1
            if record.first_kept_entry_id is not None:
                first_kept = record.first_kept_entry_id
                start = at[0] if at and at[0] >= 0 else len(entries)
            else:
                run_start = record.first_kept_run_index or 0
                if run_start >= len(at) or at[run_start] < 0:
                    continue  # cannot point at a message not written: drop the record
                first_kept = entries[at[run_start]].id
                start = at[run_start]
            entry = builder.add_compaction(
                record.summary,
                first_kept_entry_id=first_kept,
                tokens_before=record.tokens_before,
            )
            entry = msgspec.structs.replace(entry, details=record.details())
            entries.append(entry)
            last = (entry, record.kept_history, start)
        while noted < len(placed) and placed[noted][0] <= upto:
            entries.append(placed[noted][1](builder))
            noted += 1

    for i, message in enumerate(run_messages):
        add_before(i)
        if i == 0 and isinstance(message, UserMessage) and not prompt_kept(message):
            at.append(-1)  # no row: it stands for the run's next message
            continue
        if at and at[0] < 0:
            at[0] = len(entries)
        tag = tags[i] if i < len(tags) else MessageTags()
        entry = builder.add_message(
            message,
            idempotency_key=tag.idempotency_key,
            run_id=tag.run_id,
            steer_target=tag.steer_target,
        )
        at.append(len(entries))
        entries.append(entry)
    add_before(len(run_messages))
    if last is None:
        return entries, None
    compaction, kept, start = last
    context = [compaction_summary_message(compaction), *kept, *added_context(entries[start:])]
    return entries, context


# --- manual compaction -------------------------------------------------------------------


@attrs.frozen
class ManualCompaction:
    """The outcome of `compact_history`: the entry to append and the context that follows."""

    entry: CompactionEntry
    context: list[Message]
    record: CompactionRecord


async def compact_history(
    *,
    builder: TranscriptBuilder,
    history: Sequence[Message],
    history_ids: Sequence[str | None],
    provider: ModelProvider,
    model_id: str,
    keep_recent_tokens: int,
    instructions: str | None = None,
    params: Mapping[str, Any] | None = None,
    idle_timeout: float | None = None,
    now_ms: int = 0,
    before: Callable[[CompactionPlan], Awaitable[None]] | None = None,
    hooks: HookRegistry | None = None,
    ctx: AgentHookContext | None = None,
    max_kept_messages: int | None = None,
) -> ManualCompaction | None:
    """Compact a session's context now (`sessions.compact`): summarise all but the recent
    `keep_recent_tokens` (at least something is summarised when there is anything to
    summarise), and chain the compaction entry onto `builder`'s leaf.

    `max_kept_messages` (`sessions.compact`'s `maxLines`) also keeps no more than that many
    recent messages. `history_ids[i]` is the entry id of `history[i]`: from the stored entries, pass
    `history=build_context(entries), history_ids=context_entry_ids(entries)`. Returns None
    when there is nothing to compact or the model answered nothing. Raises `ProviderError`.
    `before_compaction` / `after_compaction` plugin hooks fire when `hooks` is given; `before`
    is called with the plan first. The caller persists `entry`, replaces its in-memory context
    by `context`, and bumps the row's `compactionCount`. Run it on the session's lane (never
    beside a run of that session).
    """
    ids = list(history_ids)
    if len(ids) != len(history):
        return None
    lowest = len(history) - max_kept_messages if max_kept_messages else 0
    plan = plan_compaction(
        history,
        keep_recent_tokens=keep_recent_tokens,
        allowed=lambda i: ids[i] is not None and i >= lowest,
        force=True,
        forced_cut="earliest" if max_kept_messages else "latest",
    )
    if plan is None:
        return None
    if before is not None:
        await before(plan)
    if hooks is not None and hooks.has("before_compaction"):
        await hooks.fire(
            "before_compaction",
            BeforeCompactionEvent(
                messageCount=len(history),
                compactingCount=plan.cut - plan.start,
                tokenCount=plan.tokens_before,
            ),
            ctx,
        )
    summary = await summarize(
        provider,
        model_id,
        plan.to_summarize(history),
        previous_summary=plan.previous_summary,
        instructions=instructions,
        params=params,
        idle_timeout=idle_timeout,
        now_ms=now_ms,
    )
    if not summary:
        return None
    done = _chain_compaction(builder, history, ids, plan, summary, now_ms)
    if hooks is not None and hooks.has("after_compaction"):
        await hooks.fire(
            "after_compaction",
            AfterCompactionEvent(
                messageCount=len(done.context),
                compactedCount=done.record.summarized,
                tokenCount=done.record.tokens_after,
            ),
            ctx,
        )
    return done


def _chain_compaction(
    builder: TranscriptBuilder,
    history: Sequence[Message],
    ids: Sequence[str | None],
    plan: CompactionPlan,
    summary: str,
    now_ms: int,
) -> ManualCompaction:
    """The compaction entry of `summary` chained onto `builder`'s leaf, and the context after
    it (the summary, then the history from the plan's cut on). Not a checkpoint."""
    first_kept = ids[plan.cut]
    assert first_kept is not None
    kept = tuple(history[plan.cut :])
    after = estimate_context_tokens("", [summary_message(summary, now_ms=now_ms), *kept])
    record = CompactionRecord(
        summary=summary,
        reason="manual",
        tokens_before=plan.tokens_before,
        tokens_after=after,
        summarized=plan.cut - plan.start,
        position=0,
        first_kept_entry_id=first_kept,
        kept_history=kept,
    )
    entry = builder.add_compaction(
        summary, first_kept_entry_id=first_kept, tokens_before=plan.tokens_before
    )
    entry = msgspec.structs.replace(entry, details=record.details())
    context = [compaction_summary_message(entry), *kept]
    return ManualCompaction(entry=entry, context=context, record=record)


async def compact_session(
    *,
    entries: Sequence[TranscriptEntry],
    builder: TranscriptBuilder,
    generation: ModelRuntimeGeneration,
    model_ref: str,
    agent_id: str | None = None,
    settings: CompactionSettings | None = None,
    instructions: str | None = None,
    max_kept_messages: int | None = None,
    idle_timeout: float | None = None,
    hooks: HookRegistry | None = None,
    ctx: AgentHookContext | None = None,
) -> ManualCompaction | None:
    """`sessions.compact` / `/compact [instructions]` for a session whose stored transcript is
    `entries` and whose `builder` continues it: resolve the model (`model_ref`, as a run would)
    on `generation`, take its budget, and `compact_history` with it. Raises `GenerationError`
    (model not resolvable) and `ProviderError` (the summarisation failed). A checkpoint.
    """
    model = generation.resolve(model_ref, agent_id=agent_id)
    stores = generation.fork_stores(agent_id)
    budget = context_budget(model.definition.contextWindow, settings or CompactionSettings())
    return await compact_history(
        builder=builder,
        history=build_context(entries),
        history_ids=context_entry_ids(entries),
        provider=stores.providers[model.provider_id],
        model_id=model.model_id,
        keep_recent_tokens=budget.keep_recent_tokens,
        instructions=instructions,
        params=model.params,
        idle_timeout=idle_timeout,
        now_ms=time.time_ns() // 1_000_000,
        hooks=hooks,
        ctx=ctx,
        max_kept_messages=max_kept_messages,
    )
