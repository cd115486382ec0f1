"""`automations`' own parts, over stand-in hosts: `timeoutMs` (how long a call waits) and
`contextMessages` (the recent chat lines OpenClaw adds to a reminder), whose gateway paths
tests/e2e/test_automations_tool.py covers."""

from __future__ import annotations

from typing import Any

import trio

from runtime.tools import ToolContext, invoke_tool
from runtime.tools._automations import AutomationsTool
from runtime.tools._automations_job import context_lines, with_context

REMINDER = {
    "name": "r",
    "schedule": {"kind": "at", "at": "2099-01-01T00:00:00Z"},
    "payload": {"kind": "systemEvent", "text": "Stand up"},
}


class SlowHost:
    """Answers every method after `delay` seconds, recording what it was asked."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await trio.sleep(self.delay)
        self.calls.append((method, params))
        return {"ok": True, "method": method, **params}


class History:
    """A sessions host whose `history` answers `messages`, or raises `error`."""

    def __init__(self, messages: list[dict[str, Any]], error: Exception | None = None) -> None:
        self.messages = messages
        self.error = error
        self.asked: list[Any] = []

    async def history(self, ctx: ToolContext, args: Any) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        self.asked.append(args)
        if self.error is not None:
            raise self.error
        return {"sessionKey": args.sessionKey, "messages": self.messages[-args.limit :]}


async def test_a_read_past_timeout_ms_is_given_up_with_openclaws_timeout_error(
    ctx: ToolContext, autojump_clock: Any
) -> None:
    host = SlowHost(delay=5)
    with trio.fail_after(200):  # the clock jumps
        late = await invoke_tool(AutomationsTool(host), {"action": "list", "timeoutMs": 50}, ctx)
        start = trio.current_time()
        default = await invoke_tool(AutomationsTool(SlowHost(delay=61)), {"action": "status"}, ctx)
        waited = trio.current_time() - start
        quick = await invoke_tool(AutomationsTool(host), {"action": "list", "timeoutMs": 9000}, ctx)
    assert late.is_error and late.content[0].text.endswith(  # type: ignore[union-attr]
        "gateway request timeout for cron.list"
    )
    assert default.is_error and waited == 60  # OpenClaw's default bound, 60 s
    assert not quick.is_error and quick.details == {"ok": True, "method": "cron.list"}


async def test_a_write_past_timeout_ms_is_not_cut_short(
    ctx: ToolContext, autojump_clock: Any
) -> None:
    """Cancelling a write could leave it half done, so it finishes and answers."""
    host = SlowHost(delay=5)
    with trio.fail_after(60):
        args = {"action": "add", "job": REMINDER, "timeoutMs": 50}
        result = await invoke_tool(AutomationsTool(host), args, ctx)
    assert not result.is_error and [m for m, _ in host.calls] == ["cron.add"]


async def test_context_messages_read_the_calling_sessions_history(
    ctx: ToolContext, autojump_clock: Any
) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
        {"role": "toolResult", "content": [{"type": "text", "text": "ignored"}]},
        {"role": "user", "content": [{"type": "text", "text": " second\n\nline "}]},
    ]
    sessions = History(messages)
    host = SlowHost(delay=0)
    tool = AutomationsTool(host, sessions)  # type: ignore[arg-type]
    with trio.fail_after(5):
        await invoke_tool(tool, {"action": "add", "job": REMINDER, "contextMessages": 3}, ctx)
        await invoke_tool(tool, {"action": "add", "job": REMINDER}, ctx)
        failing = AutomationsTool(host, History([], error=RuntimeError("gone")))  # type: ignore[arg-type]
        await invoke_tool(failing, {"action": "add", "job": REMINDER, "contextMessages": 2}, ctx)
        late = AutomationsTool(SlowHost(delay=0), _Stalled())  # type: ignore[arg-type]
        args = {"action": "add", "job": REMINDER, "contextMessages": 2, "timeoutMs": 10}
        stalled = await invoke_tool(late, args, ctx)
    [asked] = sessions.asked
    assert asked.sessionKey == "agent:main:main" and asked.limit == 3 and asked.includeTools
    texts = [params["payload"]["text"] for _, params in host.calls]
    assert texts == [
        "Stand up\n\nRecent context:\n- Assistant: one\n- User: second line",
        "Stand up",  # no contextMessages
        "Stand up",  # the history could not be read
    ]
    assert stalled.details is not None and stalled.details["payload"]["text"] == "Stand up"
    assert REMINDER["payload"] == {"kind": "systemEvent", "text": "Stand up"}  # not changed


class _Stalled:
    async def history(self, ctx: ToolContext, args: Any) -> dict[str, Any]:
        await trio.sleep_forever()
        raise AssertionError


def test_context_lines_are_cut_as_openclaw_cuts_them() -> None:
    long = "word " * 100
    emoji = "x" * 216 + "\U0001f600" + "tail"  # the pair would straddle the cut
    lines = context_lines([{"role": "user", "content": long}], 10)
    assert lines == ["- User: " + " ".join(["word"] * 100)[:217].rstrip() + "..."]
    assert len(lines[0]) == len("- User: ") + 220
    [cut] = context_lines([{"role": "assistant", "content": emoji}], 1)
    assert cut == "- Assistant: " + "x" * 216 + "..."
    many = [{"role": "user", "content": "y" * 300}] * 5  # each line 228: three reach 684
    assert len(context_lines(many, 10)) == 3
    assert context_lines(many, 0) == [] and len(context_lines(many, 99)) == 3


def test_with_context_replaces_an_earlier_context_block() -> None:
    once = with_context("Stand up", ["- User: a"])
    assert once == "Stand up\n\nRecent context:\n- User: a"
    assert with_context(once, ["- User: b"]) == "Stand up\n\nRecent context:\n- User: b"
