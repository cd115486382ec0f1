"""`agents.defaults.compaction.memoryFlush` as OpenClaw's keys take it, where the flush
starts (OpenClaw's plan: `softThresholdTokens` below the compaction threshold, never more
than half of it), its ledger (the session row's `memoryFlush`, as OpenClaw's), and the tools
the flush turn gets."""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs
import msgspec
import pytest
import trio

from runtime.agent._blocks import BlockReply
from runtime.agent._compaction import ContextBudget
from runtime.agent._memoryflush import (
    DEGRADED_NOTICE,
    FLUSH_PROMPT_MARKER,
    MAX_FLUSH_FAILURES,
    FlushTools,
    MemoryFlush,
    flush_prompts,
    flush_threshold,
    next_record,
)
from runtime.agent._turn import run_turn
from runtime.agent._turnspec import TurnResult, TurnSpec
from runtime.llm._types import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCallContent,
    ToolSpec,
    UserMessage,
)
from runtime.loop._agent import Emit, NoTools, RunProgress, ToolOutcome
from runtime.model._config import ConfigError, parse_config
from runtime.model._settings import CompactionSettings, MemoryFlushSettings
from runtime.sessions import (
    MemoryFlushRecord,
    SessionRow,
    decode_session_row,
    encode_session_row,
)
from tests.runtime.agent.test_compaction import generation


def _flush(raw: dict[str, object]) -> MemoryFlushSettings:
    config = parse_config({"agents": {"defaults": {"compaction": {"memoryFlush": raw}}}})
    compaction = config.agents.defaults.compaction
    assert compaction is not None
    return compaction.memoryFlush


def test_openclaw_keys_load_and_default_on() -> None:
    assert MemoryFlushSettings().enabled
    assert MemoryFlushSettings().force_bytes() == 2 * 1024 * 1024
    flush = _flush(
        {
            "enabled": True,
            "model": "local/echo",
            "softThresholdTokens": 6000,
            "forceFlushTranscriptBytes": "2mb",
        }
    )
    assert (flush.model, flush.softThresholdTokens, flush.force_bytes()) == (
        "local/echo",
        6000,
        2 * 1024 * 1024,
    )
    assert _flush({"forceFlushTranscriptBytes": 0}).force_bytes() == 0
    assert not _flush({"enabled": False}).enabled


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"forceFlushTranscriptBytes": "two megs"}, "forceFlushTranscriptBytes"),
        ({"softThresholdTokens": -1}, "softThresholdTokens"),
        ({"prompt": "save"}, "prompt"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_key(raw: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError) as info:
        _flush(raw)
    assert "memoryFlush" in str(info.value) and words in str(info.value)


def test_the_flush_threshold_follows_openclaws_plan() -> None:
    budget = ContextBudget(context_window=32_768, reserve_tokens=8_192, keep_recent_tokens=20_000)
    assert flush_threshold(budget, MemoryFlushSettings()) == 24_576 - 4_000
    small = ContextBudget(context_window=6_000, reserve_tokens=3_000, keep_recent_tokens=1_500)
    assert flush_threshold(small, MemoryFlushSettings()) == 1_500  # the margin: half at most
    assert flush_threshold(small, MemoryFlushSettings(softThresholdTokens=0)) == 3_000


def test_the_prompts_name_todays_note() -> None:
    now = dt.datetime(2026, 12, 7, 9, 30).astimezone()
    prompt, system, path = flush_prompts(now)
    assert path == "memory/2026-12-07.md"
    assert prompt.startswith(FLUSH_PROMPT_MARKER) and "memory/2026-12-07.md" in prompt
    assert "NO_REPLY" in prompt and "Current time: 2026-12-07 09:30" in prompt
    assert system.startswith("Pre-compaction memory flush turn.") and "YYYY" not in system


@attrs.define
class _RunTools:
    """A run's tool runner as far as the flush sees it: specs, calls, what it records."""

    failures: list[tuple[str, str, bool]] = attrs.field(factory=list)
    sent_texts: list[str] = attrs.field(factory=list)
    called: list[str] = attrs.field(factory=list)

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(name=n, description=n, parameters={}) for n in ("write", "message")]

    async def call(self, call: ToolCallContent, emit: Emit) -> ToolOutcome:
        self.called.append(call.name)
        self.failures.append((call.name, "disk full", True))
        self.sent_texts.append("sent")
        return await NoTools().call(call, emit)


async def test_the_flush_gets_file_tools_and_leaves_the_runs_records_alone() -> None:
    inner = _RunTools(failures=[("read", "earlier", False)])
    tools = FlushTools(inner)
    assert [s.name for s in tools.specs()] == ["write"]
    events: list[str] = []
    write = ToolCallContent(id="1", name="write", arguments={"path": "memory/x.md"})
    outcome = await tools.call(write, lambda stream, data: events.append(stream))
    assert outcome.message.isError and inner.called == ["write"]
    assert inner.failures == [("read", "earlier", False)] and inner.sent_texts == []
    message = ToolCallContent(id="2", name="message", arguments={"text": "hi"})
    refused = await tools.call(message, lambda stream, data: None)
    assert refused.message.isError and inner.called == ["write"]


def _flush_of(
    settings: MemoryFlushSettings, record: MemoryFlushRecord | None = None, count: int = 0
) -> MemoryFlush:
    budget = ContextBudget(context_window=32_768, reserve_tokens=8_192, keep_recent_tokens=20_000)
    return MemoryFlush(
        settings=settings,
        budget=budget,
        session_id="s1",
        session_key="agent:main:s1",
        agent_id="main",
        run_id="r1",
        tools=NoTools(),
        system_prompt="",
        idle_timeout=None,
        record=record,
        compaction_count=count,
    )


def test_due_near_the_threshold_or_past_the_byte_size_once_per_cycle() -> None:
    flush = _flush_of(MemoryFlushSettings(forceFlushTranscriptBytes="1kb"))
    short = [UserMessage(content="hello", timestamp=0)]
    long = [UserMessage(content="x" * 2048, timestamp=0)]
    assert not flush.due(1_000, short)
    assert flush.due(20_576, short)  # the threshold: 24,576 - 4,000
    assert flush.due(1_000, long)  # past forceFlushTranscriptBytes
    flush.record = MemoryFlushRecord(kind="succeeded", compactionCount=0)
    assert not flush.due(30_000, long)  # flushed in this cycle
    flush.compaction_count = 1
    assert flush.due(30_000, long)  # a compaction started a new cycle
    # the ledger as the session row has it after a restart
    again = _flush_of(MemoryFlushSettings(), MemoryFlushRecord("succeeded", 3), count=3)
    assert not again.due(30_000, short)
    off = _flush_of(MemoryFlushSettings(forceFlushTranscriptBytes=0))
    assert not off.due(1_000, long)


def test_the_ledger_counts_failures_and_gives_the_cycle_up_as_openclaw() -> None:
    done = next_record(None, 2, ok=True)
    assert done == MemoryFlushRecord(kind="succeeded", compactionCount=2)
    record: MemoryFlushRecord | None = done
    for failures in range(1, MAX_FLUSH_FAILURES):
        record = next_record(record, 3, ok=False)  # the cycle after: it keeps failing
        assert record == MemoryFlushRecord("failed", compactionCount=2, failureCount=failures)
    record = next_record(record, 3, ok=False)
    assert record == MemoryFlushRecord("succeeded", compactionCount=3)  # given up for cycle 3
    assert next_record(None, 0, ok=False) == MemoryFlushRecord("failed", failureCount=1)
    # kept in the session row under OpenClaw's names
    row = SessionRow(key="agent:main:s", sessionId="s", agentId="main", createdAt=1, updatedAt=1)
    stored = msgspec.structs.replace(row, compactionCount=3, memoryFlush=record)
    raw = msgspec.json.decode(encode_session_row(stored))
    assert raw["memoryFlush"] == {"kind": "succeeded", "compactionCount": 3}
    assert decode_session_row(encode_session_row(stored)) == stored


async def test_the_ledger_is_handed_over_as_soon_as_the_flush_ran() -> None:
    """`TurnSpec.on_memory_flush` hears the ledger right after the flush, before the run's
    own answer streams (the session actor stores it then, as OpenClaw does)."""
    gen = generation(context_window=12_000)  # budget 6,000: the flush from 3,000 tokens
    history: list[Message] = []
    for i in range(4):  # about 3,500 tokens: past the flush threshold, short of compaction
        history.append(UserMessage(content="note " * 700 + str(i), timestamp=0))
        history.append(AssistantMessage(content=[TextContent(f"ok {i}")], timestamp=0))
    events: list[tuple[str, Any]] = []
    spec = TurnSpec(
        run_id="r1",
        session_key="agent:main:t",
        session_id="s1",
        agent_id="main",
        message="and now?",
        history=history,
        generation=gen,
        stores=gen.fork_stores(),
        model_ref="local/echo",
        tools=_RunTools(),
        compaction_count=2,
        memory_flush=MemoryFlushRecord("succeeded", compactionCount=1),
        on_memory_flush=lambda record: events.append(("ledger", record)),
    )
    result = TurnResult()
    with trio.fail_after(10):
        await run_turn(spec, lambda s, d: events.append((s, d)), RunProgress(), result)
    streams = [s if s != "run_status" else d["phase"] for s, d in events]
    ledger = MemoryFlushRecord("succeeded", compactionCount=2)
    assert ("ledger", ledger) in events and result.memory_flush == ledger
    flushed = streams.index("ledger")
    assert streams[:flushed] == ["memory_flushing", "preparing_context"]
    assert "assistant" in streams[flushed:]  # the run's own answer came after


@pytest.mark.parametrize(
    ("failures", "notify", "told"), [(2, True, True), (2, False, False), (1, True, False)]
)
async def test_a_flush_given_up_is_told_to_the_user_with_notify_user(
    failures: int, notify: bool, told: bool
) -> None:
    """The flush failing for the third time in a cycle gives it up; with
    `compaction.notifyUser` the user gets OpenClaw's notice as a block reply (the gateway
    sends it as a chat `final` of its own), and the run answers as ever."""
    gen = generation(context_window=12_000)
    history: list[Message] = []
    for i in range(4):  # past the flush threshold, short of compaction
        history.append(UserMessage(content="note " * 700 + str(i), timestamp=0))
        history.append(AssistantMessage(content=[TextContent(f"ok {i}")], timestamp=0))
    blocks: list[BlockReply] = []
    flush = MemoryFlushSettings(model="nowhere/no-such-model")  # every flush fails
    spec = TurnSpec(
        run_id="r1",
        session_key="agent:main:t",
        session_id="s1",
        agent_id="main",
        message="and now?",
        history=history,
        generation=gen,
        stores=gen.fork_stores(),
        model_ref="local/echo",
        tools=_RunTools(),
        compaction=CompactionSettings(memoryFlush=flush, notifyUser=notify),
        compaction_count=2,
        memory_flush=MemoryFlushRecord("failed", compactionCount=1, failureCount=failures),
        on_block=blocks.append,
    )
    result, progress = TurnResult(), RunProgress()
    with trio.fail_after(10):
        await run_turn(spec, lambda s, d: None, progress, result)
    assert result.memory_flush == next_record(spec.memory_flush, 2, ok=False)
    notices = [b for b in blocks if b.is_notice]
    assert notices == ([BlockReply(DEGRADED_NOTICE, 0, is_notice=True)] if told else [])
    assert DEGRADED_NOTICE == "⚠️ Memory maintenance temporarily failed; continuing your reply."
    assert progress.text == "You said: and now?"  # the run's own answer, without the notice
