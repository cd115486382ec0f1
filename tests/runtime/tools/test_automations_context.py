"""`contextMessages` counts the run's messages so far (`ToolContext.run_messages`) after the
session's transcript, as OpenClaw's transcript holds them as they come: the assistant's text
of this turn so far gives a line, tool results none, and the lines are sanitized as the
history's are (`sessions_history`'s redaction)."""

from __future__ import annotations

from typing import Any

import attrs
import trio

from runtime.llm._types import (
    AssistantMessage,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from runtime.tools import ToolContext, invoke_tool
from runtime.tools._automations import AutomationsTool
from tests.runtime.tools.test_automations import REMINDER, History


class Host:
    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        return params


RUN = (
    UserMessage(content="Remind me to buy milk", timestamp=1),
    AssistantMessage(
        content=[
            TextContent("Sure, with key sk-abcdefghijklmnopqrstuvwx1234"),
            ToolCallContent(id="c1", name="exec", arguments={}),
        ],
        timestamp=2,
    ),
    ToolResultMessage(
        toolCallId="c1", toolName="exec", content=[TextContent("ok")], isError=False, timestamp=3
    ),
)


async def test_the_runs_messages_follow_the_transcripts(ctx: ToolContext) -> None:
    earlier = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    history = History(earlier)
    running = attrs.evolve(ctx, run_messages=lambda: RUN)
    tool = AutomationsTool(Host(), history)  # type: ignore[arg-type]
    texts = []
    for count in (5, 3, 1):
        args = {"action": "add", "job": REMINDER, "contextMessages": count}
        result = await invoke_tool(tool, args, running)
        assert result.details is not None
        texts.append(result.details["payload"]["text"])
    alone = await invoke_tool(tool, {"action": "add", "job": REMINDER, "contextMessages": 5}, ctx)
    assert alone.details is not None
    five, three, one = texts
    assert five.split("\n")[3:] == [
        "- User: hello",
        "- Assistant: hi",
        "- User: Remind me to buy milk",
        "- Assistant: Sure, with key sk-abc…1234",
    ]
    assert three.split("\n")[3:] == five.split("\n")[5:]
    assert one == "Stand up"  # the newest is a tool result: no line
    assert alone.details["payload"]["text"].split("\n")[3:] == ["- User: hello", "- Assistant: hi"]
