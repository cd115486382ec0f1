"""The rows a run adds beside its messages (`runtime.agent._run_notes`): `persist_run` writes
each where it happened, the context the session continues from (with or without a
compaction in the run) is the one `build_context` reads back from the entries; a hidden
custom message is in that context but in no branch of messages a history shows, and a call
made through `tool_call` is in the branch but not in the context."""

from __future__ import annotations

import functools

from runtime.agent._compaction import CompactionRecord, persist_run
from runtime.agent._run_notes import YIELD_CONTEXT, run_notes, yield_context
from runtime.llm._types import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from runtime.loop._agent import NestedCall, RunProgress, TurnYield
from runtime.sessions._branches import branch_messages
from runtime.sessions._nested_tool import INPUT_OMITTED, history_row
from runtime.sessions._sessions import (
    CustomMessage,
    CustomMessageEntry,
    MessageEntry,
    TranscriptBuilder,
    added_context,
    build_context,
)


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=1)


def run_of_a_yield() -> list[Message]:
    call = ToolCallContent(id="y", name="sessions_yield", arguments={})
    return [
        user("spawn and wait"),
        AssistantMessage(content=[call], timestamp=2, stopReason="toolUse"),
        ToolResultMessage(
            toolCallId="y",
            toolName="sessions_yield",
            content=[TextContent('{"status": "yielded"}')],
            isError=False,
            timestamp=3,
        ),
    ]


def test_a_yield_leaves_a_hidden_context_message_after_the_run() -> None:
    builder = TranscriptBuilder()
    old = [builder.add_message(user("hello")), builder.add_message(user("again"))]
    run = run_of_a_yield()
    progress = RunProgress(messages=run[1:], yielded=TurnYield("waiting for kid"))
    notes = run_notes(progress, run, "r1")
    entries, context = persist_run(builder, run, notes=notes)
    assert context is None
    assert [type(e) for e in entries] == [MessageEntry] * 3 + [CustomMessageEntry]
    hidden = entries[-1]
    assert isinstance(hidden, CustomMessageEntry) and hidden.display is False
    assert hidden.customType == "openclaw.sessions_yield"
    assert hidden.content == f"waiting for kid\n\n{YIELD_CONTEXT}"
    assert hidden.details == {"source": "sessions_yield", "message": "waiting for kid"}
    everything = [*old, *entries]
    grown = [*build_context(old), *added_context(entries)]
    assert grown == build_context(everything)
    assert grown[-1] == UserMessage(content=hidden.content, timestamp=grown[-1].timestamp)
    assert [e.message for e in branch_messages(everything)] == [user("hello"), user("again"), *run]


def test_a_run_that_compacted_continues_from_its_summary_and_its_notes() -> None:
    builder = TranscriptBuilder()
    old = [builder.add_message(user(f"turn {i}")) for i in range(4)]
    run = run_of_a_yield()
    compaction = CompactionRecord(
        summary="S",
        reason="auto-threshold",
        tokens_before=90,
        tokens_after=20,
        summarized=5,
        position=1,
        first_kept_run_index=0,
    )
    notes = [(len(run), functools.partial(yield_context, "later"))]
    entries, context = persist_run(builder, run, [compaction], notes=notes)
    assert context is not None and context == build_context([*old, *entries])
    assert context[1:-1] == run and isinstance(context[-1], UserMessage)


def test_nothing_is_noted_for_a_run_that_wrote_no_message() -> None:
    assert run_notes(RunProgress(yielded=TurnYield("x")), [], "r1") == []


def test_a_call_through_tool_call_is_written_before_its_result_and_left_out_of_context() -> None:
    call = ToolCallContent(id="c", name="tool_call", arguments={"id": "ls"})
    run: list[Message] = [
        user("list it"),
        AssistantMessage(content=[call], timestamp=2, stopReason="toolUse"),
        ToolResultMessage(
            toolCallId="c",
            toolName="tool_call",
            content=[TextContent("{}")],
            isError=False,
            timestamp=3,
        ),
    ]
    big = {"path": "x" * 9000}
    nested = NestedCall(
        tool_call_id="tool_search_code:c:ls:1",
        parent_tool_call_id="c",
        tool_name="ls",
        input=big,
        result={"content": [{"type": "text", "text": "a.txt"}], "isError": False},
        is_error=False,
        started_at=10,
        ended_at=12,
    )
    progress = RunProgress(messages=run[1:], nested=[(1, nested)])
    builder = TranscriptBuilder()
    entries, context = persist_run(builder, run, notes=run_notes(progress, run, "r1"))
    assert context is None
    row = entries[2]
    assert isinstance(row, MessageEntry) and isinstance(row.message, CustomMessage)
    assert row.runId == "r1" and row.idempotencyKey is not None
    details = row.message.details
    assert details["afterEntryId"] == entries[1].id and details["startOrder"] == 0
    assert details["input"] == INPUT_OMITTED  # over 8 KiB of JSON
    assert details["result"] == {"content": [{"type": "text", "text": "a.txt"}]}
    assert row.idempotencyKey == f"{details['scopeId']}:tool_search_code:c:ls:1"
    assert added_context(entries) == run == build_context(entries)
    assert [e.message for e in branch_messages(entries)] == [*run[:2], row.message, run[2]]
    shown = history_row(row.message)
    assert [b["type"] for b in shown["content"]] == ["toolCall", "toolResult"]
    assert shown["content"][0]["arguments"] == INPUT_OMITTED and "details" not in shown
