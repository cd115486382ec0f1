"""Compaction: the budget, the cut, the summarisation turn with the `local` model, the
entries it adds, and compaction inside a turn (threshold, overflow retry, hooks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.agent._compaction import (
    SUMMARY_SYSTEM_PROMPT,
    CompactionRecord,
    CompactionSettings,
    compact_history,
    compact_session,
    context_budget,
    context_entry_ids,
    estimate_context_tokens,
    estimate_message_tokens,
    is_summary_message,
    persist_run,
    plan_compaction,
    serialize_conversation,
    summarize,
    summary_of,
)
from runtime.agent._turn import run_turn
from runtime.agent._turnspec import BASE_SYSTEM_PROMPT, TurnResult, TurnSpec
from runtime.hooks._internal import InternalHookEvent, InternalHooks
from runtime.hooks._registry import HookRegistry
from runtime.llm._local import SUMMARY_MARKER, LocalProvider, request_tokens
from runtime.llm._types import (
    AssistantMessage,
    Message,
    ModelRequest,
    ProviderError,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from runtime.loop._agent import RunProgress
from runtime.model._generation import GenerationBuilder, GenerationError, ModelRuntimeGeneration
from runtime.sessions._sessions import (
    CompactionEntry,
    MessageEntry,
    TranscriptBuilder,
    TranscriptEntry,
    build_context,
)
from tests.conftest import local_config

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()  # noqa: SIM905


def user(text: str, ts: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=ts)


def assistant(text: str, ts: int = 2) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text)], timestamp=ts)


def call(call_id: str, name: str = "read") -> AssistantMessage:
    return AssistantMessage(
        content=[ToolCallContent(id=call_id, name=name, arguments={"path": "x"})],
        timestamp=3,
        stopReason="toolUse",
    )


def result(call_id: str, text: str = "data", name: str = "read") -> ToolResultMessage:
    return ToolResultMessage(
        toolCallId=call_id, toolName=name, content=[TextContent(text)], isError=False, timestamp=4
    )


def sentence(i: int, words: int = 60) -> str:
    return f"message {i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(words))


def conversation(pairs: int, words: int = 60) -> list[Message]:
    out: list[Message] = []
    for i in range(pairs):
        out += [user(sentence(i, words)), assistant(f"You said: {sentence(i, words)}")]
    return out


def stored(messages: Sequence[Message]) -> list[TranscriptEntry]:
    builder = TranscriptBuilder()
    return [builder.add_message(m) for m in messages]


def generation(context_window: int = 128_000) -> ModelRuntimeGeneration:
    config = local_config(
        models__providers__local={
            "api": "local",
            "models": [{"id": "echo", "contextWindow": context_window}],
        }
    )
    return GenerationBuilder().build_config(config, 1)


Events = list[tuple[str, dict[str, Any]]]


async def turn(
    gen: ModelRuntimeGeneration,
    message: str,
    entries: Sequence[TranscriptEntry] = (),
    *,
    with_ids: bool = True,
    **kw: Any,
) -> tuple[TurnResult, RunProgress, Events]:
    events: Events = []

    async def load() -> Sequence[TranscriptEntry]:
        await trio.lowlevel.checkpoint()
        return list(entries)

    spec = TurnSpec(
        run_id="r1",
        session_key="agent:main:t",
        session_id="s1",
        agent_id="main",
        message=message,
        history=build_context(entries),
        generation=gen,
        stores=gen.fork_stores(),
        model_ref="local/echo",
        history_entries=load if with_ids else None,
        **kw,
    )
    progress = RunProgress()
    out = TurnResult()
    with trio.fail_after(10):
        await run_turn(spec, lambda s, d: events.append((s, d)), progress, out)
    return out, progress, events


def replay(events: Events) -> str:
    """The assistant text a client rebuilds from `assistant` events (honouring `replace`)."""
    text = ""
    for stream, data in events:
        if stream == "assistant":
            text = data["delta"] if data.get("replace") else text + data["delta"]
    return text


def compaction_events(events: Events) -> list[dict[str, Any]]:
    return [d for s, d in events if s == "compaction"]


# --- budget, estimates, settings ---------------------------------------------------------


def test_the_default_budget_reserves_the_floor_and_keeps_twenty_thousand() -> None:
    budget = context_budget(128_000, CompactionSettings())
    assert (budget.reserve_tokens, budget.keep_recent_tokens) == (20_000, 20_000)
    assert budget.prompt_budget == 108_000
    no_floor = context_budget(128_000, CompactionSettings(reserveTokensFloor=0))
    assert no_floor.reserve_tokens == 16_384


def test_a_small_window_clamps_the_reserve_and_the_kept_part() -> None:
    budget = context_budget(6_000, CompactionSettings())
    assert budget.reserve_tokens == 3_000 and budget.prompt_budget == 3_000
    assert budget.keep_recent_tokens == 1_500


def test_settings_come_from_agent_defaults_and_bad_values_name_the_key() -> None:
    assert CompactionSettings.from_agent_defaults({}) == CompactionSettings()
    got = CompactionSettings.from_agent_defaults({"compaction": {"keepRecentTokens": 5}})
    assert got.keepRecentTokens == 5
    with pytest.raises(msgspec.ValidationError, match="reserveTokens"):
        CompactionSettings.from_agent_defaults({"compaction": {"reserveTokens": "x"}})


def test_tokens_are_estimated_as_characters_over_four() -> None:
    assert estimate_message_tokens(user("x" * 9)) == 3
    tools = [ToolSpec("t", "d", {"type": "object"})]
    total = estimate_context_tokens("abcd", [user("abcdefgh")], tools)
    assert total == 1 + 2 + (len(msgspec.json.encode(tools)) + 3) // 4


def test_the_local_model_counts_a_request_as_compaction_does() -> None:
    messages: list[Message] = [*conversation(3), call("c1"), result("c1", "x" * 101)]
    tools = [ToolSpec("read", "Read a file", {"type": "object", "properties": {}})]
    request = ModelRequest(model="echo", system_prompt="sys" * 7, messages=messages, tools=tools)
    assert request_tokens(request) == estimate_context_tokens("sys" * 7, messages, tools)
    assert SUMMARY_SYSTEM_PROMPT.startswith(SUMMARY_MARKER)


# --- the cut -----------------------------------------------------------------------------


def test_the_cut_keeps_the_recent_tokens_and_summarises_the_rest() -> None:
    messages = conversation(10)
    per_pair = estimate_message_tokens(messages[0]) + estimate_message_tokens(messages[1])
    plan = plan_compaction(messages, keep_recent_tokens=3 * per_pair)
    assert plan is not None and plan.start == 0 and plan.previous_summary is None
    kept = messages[plan.cut :]
    assert estimate_context_tokens("", kept) >= 3 * per_pair
    assert plan.cut == 14 and plan.to_summarize(messages) == messages[:14]
    assert plan_compaction(messages, keep_recent_tokens=10**6) is None
    forced = plan_compaction(messages, keep_recent_tokens=10**6, force=True)
    assert forced is not None and forced.cut == len(messages) - 1


@settings(max_examples=150, deadline=None)
@given(
    shape=st.lists(st.sampled_from(["u", "a", "tool", "tools2"]), min_size=1, max_size=25),
    keep=st.integers(min_value=0, max_value=400),
    force=st.booleans(),
)
def test_a_tool_call_is_never_separated_from_its_result(
    shape: list[str], keep: int, force: bool
) -> None:
    messages: list[Message] = []
    for i, kind in enumerate(shape):
        if kind == "u":
            messages.append(user(f"question {i} " * 5))
        elif kind == "a":
            messages.append(assistant(f"answer {i} " * 5))
        else:
            ids = [f"c{i}a"] + ([f"c{i}b"] if kind == "tools2" else [])
            messages.append(
                AssistantMessage(
                    content=[ToolCallContent(id=c, name="read", arguments={}) for c in ids],
                    timestamp=1,
                    stopReason="toolUse",
                )
            )
            messages += [result(c, "r" * 30) for c in ids]
    plan = plan_compaction(messages, keep_recent_tokens=keep, force=force)
    if plan is None:
        return
    kept, summarised = messages[plan.cut :], plan.to_summarize(messages)
    assert summarised and kept
    kept_results = {m.toolCallId for m in kept if isinstance(m, ToolResultMessage)}
    kept_calls = {
        c.id
        for m in kept
        if isinstance(m, AssistantMessage)
        for c in m.content
        if isinstance(c, ToolCallContent)
    }
    assert kept_results <= kept_calls


def test_an_earlier_summary_is_updated_not_summarised_again() -> None:
    entries = stored(conversation(6))
    builder = TranscriptBuilder.from_entries(entries)
    entries.append(
        builder.add_compaction("old facts", first_kept_entry_id=entries[8].id, tokens_before=9)
    )
    context = build_context(entries)
    assert is_summary_message(context[0]) and summary_of(context[0]) == "old facts"
    plan = plan_compaction(context, keep_recent_tokens=1)
    assert plan is not None and plan.start == 1 and plan.previous_summary == "old facts"
    assert all(not is_summary_message(m) for m in plan.to_summarize(context))
    ids = context_entry_ids(entries)
    assert len(ids) == len(context) and ids[0] is None
    assert ids[1:] == [e.id for e in entries[8:12]]


def test_the_conversation_is_serialised_with_roles_and_tool_results_cut() -> None:
    text = serialize_conversation([user("hi"), call("c1"), result("c1", "z" * 5000)])
    assert text.startswith('[User]: hi\n\n[Assistant tool calls]: read({"path":"x"})')
    assert "[Tool result read]: " + "z" * 2000 in text and "[... 3000 more characters]" in text


# --- the summarisation turn --------------------------------------------------------------


async def test_the_local_model_summarises_deterministically_and_carries_the_previous() -> None:
    provider = LocalProvider("local")
    messages: list[Message] = [
        user("[[tool:exec {}]] please fix the parser bug"),
        assistant("done"),
    ]
    with trio.fail_after(5):
        first = await summarize(provider, "echo", messages)
        again = await summarize(provider, "echo", messages)
        second = await summarize(
            provider, "echo", [user("now add tests for it")], previous_summary=first
        )
    assert first == again == "Summary (local model): the user said: please fix the parser bug."
    assert second.endswith("please fix the parser bug; now add tests for it.")


async def test_a_failing_summarisation_raises_a_provider_error() -> None:
    with trio.fail_after(5), pytest.raises(ProviderError):
        await summarize(LocalProvider("local"), "echo", [user("x [[summary-fail]]")])


# --- entries ------------------------------------------------------------------------------


def test_persisting_a_run_adds_entries_in_order_and_deletes_nothing() -> None:
    old = stored(conversation(4))
    builder = TranscriptBuilder.from_entries(old)
    run: list[Message] = [user("new"), call("c1"), result("c1"), assistant("answer")]
    retry = CompactionRecord(
        summary="S1",
        reason="overflow-retry",
        tokens_before=100,
        tokens_after=50,
        summarized=4,
        position=3,
        first_kept_entry_id=old[4].id,
        kept_history=tuple(build_context(old)[4:]),
    )
    after = CompactionRecord(
        summary="S2",
        reason="auto-threshold",
        tokens_before=90,
        tokens_after=20,
        summarized=6,
        position=4,
        first_kept_run_index=3,
    )
    entries, context = persist_run(builder, run, [after, retry])
    kinds = [type(e).__name__ for e in entries]
    assert kinds == [
        "MessageEntry",
        "MessageEntry",
        "MessageEntry",
        "CompactionEntry",
        "MessageEntry",
        "CompactionEntry",
    ]
    first, second = (e for e in entries if isinstance(e, CompactionEntry))
    assert first.firstKeptEntryId == old[4].id and first.details["reason"] == "overflow-retry"
    assert second.firstKeptEntryId == entries[4].id and second.tokensBefore == 90
    everything = old + entries
    assert context == build_context(everything)
    assert [m for m in context if not is_summary_message(m)] == [run[3]]
    assert sum(isinstance(e, MessageEntry) for e in everything) == 8 + 4
    no_compaction, same = persist_run(TranscriptBuilder(), run)
    assert same is None and len(no_compaction) == 4


async def test_manual_compaction_chains_an_entry_and_keeps_the_recent_part() -> None:
    entries = stored(conversation(8))
    builder = TranscriptBuilder.from_entries(entries)
    history = build_context(entries)
    seen: list[int] = []
    hooks = HookRegistry()
    fired: list[Any] = []
    hooks.register("before_compaction", fired.append)
    hooks.register("after_compaction", fired.append)

    async def before(plan: Any) -> None:
        seen.append(plan.cut)

    with trio.fail_after(5):
        done = await compact_history(
            builder=builder,
            history=history,
            history_ids=context_entry_ids(entries),
            provider=LocalProvider("local"),
            model_id="echo",
            keep_recent_tokens=4 * estimate_message_tokens(history[0]),
            instructions="focus on greek letters",
            before=before,
            hooks=hooks,
        )
    assert done is not None and seen
    assert done.entry.parentId == entries[-1].id
    assert done.entry.firstKeptEntryId == entries[seen[0]].id
    assert done.context == build_context([*entries, done.entry])
    assert done.record.summarized == seen[0]
    assert "message 0" in done.entry.summary
    assert [type(e).__name__ for e in fired] == ["BeforeCompactionEvent", "AfterCompactionEvent"]
    assert fired[1].compactedCount == seen[0] and fired[1].messageCount == len(done.context)
    with trio.fail_after(5):
        nothing = await compact_history(
            builder=builder,
            history=[history[0]],
            history_ids=[entries[0].id],
            provider=LocalProvider("local"),
            model_id="echo",
            keep_recent_tokens=1,
        )
    assert nothing is None


# --- compaction in a turn ----------------------------------------------------------------


async def test_an_overflow_compacts_retries_and_answers_once() -> None:
    gen = generation(context_window=6_000)  # keeps 1500 tokens of the ~2100
    entries = stored(conversation(12))
    history = build_context(entries)
    size = estimate_context_tokens("", history)
    out, progress, events = await turn(gen, f"go on [[overflow:{size}]]", entries)
    assert progress.text == "You said: go on"
    assert replay(events) == "You said: go on"
    deltas = [d["delta"] for s, d in events if s == "assistant"]
    assert "".join(deltas) == "You said: go on" and not any(d.get("replace") for s, d in events)
    assert compaction_events(events) == [
        {"phase": "start"},
        {"phase": "end", "willRetry": True, "completed": True},
    ]
    assert out.overflow_retries == 1 and len(out.compactions) == 1
    record = out.compactions[0]
    assert record.reason == "overflow-retry" and record.position == 1
    assert record.first_kept_entry_id in {e.id for e in entries}
    assert record.tokens_after < record.tokens_before
    assert out.user_message is not None
    run: list[Message] = [out.user_message, *progress.messages]
    persisted, context = persist_run(TranscriptBuilder.from_entries(entries), run, out.compactions)
    assert context == build_context([*entries, *persisted])
    assert context[-1] == progress.messages[-1]


async def test_an_overflow_after_partial_output_is_taken_back_not_repeated() -> None:
    gen = generation(context_window=6_000)
    entries = stored(conversation(12))
    size = estimate_context_tokens("", build_context(entries))
    out, progress, events = await turn(gen, f"one two three four [[overflow:{size}:2]]", entries)
    final = "You said: one two three four"
    assert progress.text == final and replay(events) == final
    texts = [d for s, d in events if s == "assistant"]
    replaced = [i for i, d in enumerate(texts) if d.get("replace")]
    assert replaced == [2] and texts[2]["delta"] == texts[2]["text"] == "You "
    assert "".join(d["delta"] for d in texts[2:]) == final
    order = [s for s, _ in events]
    assert order.index("compaction") == 2  # after the two deltas of the failed attempt
    assert out.overflow_retries == 1


async def test_overflow_retries_stop_after_three() -> None:
    gen = generation()
    entries = stored(conversation(30))
    with pytest.raises(ProviderError) as caught:
        await turn(gen, "[[fail:context_overflow:too long]]", entries)
    assert caught.value.kind == "context_overflow"


async def test_overflow_gives_up_when_there_is_nothing_left_to_compact() -> None:
    gen = generation()
    result = TurnResult()
    with pytest.raises(ProviderError):
        events: Events = []
        spec = TurnSpec(
            run_id="r",
            session_key="agent:main:t",
            session_id="s",
            agent_id="main",
            message="[[fail:context_overflow]]",
            history=[],
            generation=gen,
            stores=gen.fork_stores(),
            model_ref="local/echo",
        )
        with trio.fail_after(10):
            await run_turn(spec, lambda s, d: events.append((s, d)), RunProgress(), result)
    assert result.overflow_retries == 1 and result.compactions == []
    assert compaction_events(events) == []


async def test_a_failed_summary_ends_the_overflow_with_the_original_error() -> None:
    gen = generation()
    entries = stored([user("remember this [[summary-fail]]"), assistant("ok"), *conversation(6)])
    with pytest.raises(ProviderError) as caught:
        _out, _p, _e = await turn(gen, "[[fail:context_overflow:too big]]", entries)
    assert caught.value.message == "too big"


async def test_a_run_past_the_budget_compacts_after_it_and_fires_the_hooks() -> None:
    gen = generation(context_window=4_000)
    hooks = HookRegistry()
    internal = InternalHooks()
    seen: list[tuple[str, Any]] = []
    hooks.register("before_compaction", lambda e: seen.append(("before", e)))
    hooks.register("after_compaction", lambda e, ctx: seen.append(("after", (e, ctx))))

    def on_internal(event: InternalHookEvent) -> None:
        seen.append((event.key, event.context))

    internal.register("session", on_internal)
    entries = stored(conversation(8))  # ~1400 tokens, and ~400 more each way: over 2000
    assert estimate_context_tokens("", build_context(entries)) < 1_500
    out, progress, events = await turn(
        gen, sentence(99, 300), entries, hooks=hooks, internal_hooks=internal
    )
    assert progress.text.startswith("You said: message 99")
    assert compaction_events(events) == [
        {"phase": "start"},
        {"phase": "end", "willRetry": False, "completed": True},
    ]
    record = out.compactions[0]
    assert record.reason == "auto-threshold" and record.position == 2
    assert out.context_tokens == record.tokens_after < record.tokens_before
    names = [name for name, _ in seen]
    assert names == ["before", "session:compact:before", "after", "session:compact:after"]
    after_event, ctx = seen[2][1]
    assert after_event.compactedCount == record.summarized and ctx.modelId == "echo"
    assert seen[0][1].tokenCount == record.tokens_before


async def test_without_entry_ids_the_kept_part_starts_at_the_run() -> None:
    gen = generation(context_window=6_000)  # with ids, it would keep part of the history
    entries = stored(conversation(12))
    size = estimate_context_tokens("", build_context(entries))
    out, _progress, _events = await turn(gen, f"hi [[overflow:{size}]]", entries, with_ids=False)
    record = out.compactions[0]
    assert record.first_kept_entry_id is None and record.first_kept_run_index == 0
    assert record.kept_history == ()


async def test_a_stale_transcript_is_not_trusted_for_entry_ids(caplog: Any) -> None:
    gen = generation(context_window=6_000)
    entries = stored(conversation(12))
    stale = entries[:-2]
    events: Events = []

    async def load() -> Sequence[TranscriptEntry]:
        await trio.lowlevel.checkpoint()
        return stale

    size = estimate_context_tokens("", build_context(entries))
    spec = TurnSpec(
        run_id="r",
        session_key="agent:main:t",
        session_id="s",
        agent_id="main",
        message=f"x [[overflow:{size}]]",
        history=build_context(entries),
        generation=gen,
        stores=gen.fork_stores(),
        model_ref="local/echo",
        history_entries=load,
    )
    out = TurnResult()
    with trio.fail_after(10):
        await run_turn(spec, lambda s, d: events.append((s, d)), RunProgress(), out)
    assert out.compactions[0].first_kept_run_index == 0
    assert "does not match" in caplog.text


async def test_compaction_can_be_disabled() -> None:
    gen = generation()
    entries = stored(conversation(4))
    with pytest.raises(ProviderError):
        await turn(
            gen,
            "[[fail:context_overflow]]",
            entries,
            compaction=CompactionSettings(enabled=False),
        )


async def test_after_a_long_run_the_cut_may_fall_inside_the_run() -> None:
    gen = generation(context_window=4_000)  # budget 2000, keeps 1000
    entries = stored(conversation(1))
    out, progress, events = await turn(gen, sentence(7, 800), entries)
    assert compaction_events(events)[-1] == {
        "phase": "end",
        "willRetry": False,
        "completed": True,
    }
    record = out.compactions[0]
    assert record.first_kept_run_index == 1 and record.kept_history == ()
    assert out.user_message is not None
    run: list[Message] = [out.user_message, *progress.messages]
    persisted, context = persist_run(TranscriptBuilder.from_entries(entries), run, out.compactions)
    assert context == build_context([*entries, *persisted])
    assert context is not None and context[1:] == [progress.messages[-1]]
    assert (
        out.context_tokens
        == record.tokens_after
        == estimate_context_tokens(BASE_SYSTEM_PROMPT, context)
    )


async def test_sessions_compact_resolves_the_model_and_honours_max_lines() -> None:
    gen = generation(context_window=128_000)  # keeps 20000 tokens: all of it...
    entries = stored(conversation(6))
    with trio.fail_after(5):
        done = await compact_session(
            entries=entries,
            builder=TranscriptBuilder.from_entries(entries),
            generation=gen,
            model_ref="local/echo",
            max_kept_messages=3,  # ...unless told to keep at most 3 messages
        )
    assert done is not None and done.record.reason == "manual"
    assert done.entry.firstKeptEntryId == entries[-3].id
    assert len(done.context) == 1 + 3
    assert done.context == build_context([*entries, done.entry])
    with pytest.raises(GenerationError):
        await compact_session(
            entries=entries,
            builder=TranscriptBuilder.from_entries(entries),
            generation=gen,
            model_ref="local/nope",
        )


async def test_a_cancelled_compaction_still_closes_its_phase() -> None:
    gen = generation(context_window=6_000)
    entries = stored(conversation(12))
    hooks = HookRegistry()
    events: Events = []
    with trio.CancelScope() as scope:
        hooks.register("before_compaction", lambda e: scope.cancel())
        spec = TurnSpec(
            run_id="r",
            session_key="agent:main:t",
            session_id="s",
            agent_id="main",
            message="[[fail:context_overflow]]",
            history=build_context(entries),
            generation=gen,
            stores=gen.fork_stores(),
            model_ref="local/echo",
            hooks=hooks,
        )
        with trio.fail_after(10):
            await run_turn(spec, lambda s, d: events.append((s, d)), RunProgress(), TurnResult())
    assert scope.cancelled_caught
    assert compaction_events(events) == [
        {"phase": "start"},
        {"phase": "end", "willRetry": False, "completed": False},
    ]
