"""The plugin hook registry (ordering, decision rules, failure policy) and internal hooks."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.hooks._events import (
    DEFAULT_HOOK_TIMEOUTS,
    HOOK_NAMES,
    MODIFYING_HOOKS,
    OBSERVING_HOOKS,
    AgentEndEvent,
    BeforeAgentReplyEvent,
    BeforeAgentStartEvent,
    BeforeInstallEvent,
    BeforeInstallRequest,
    BeforeMessageWriteEvent,
    BeforeModelResolveEvent,
    BeforePromptBuildEvent,
    BeforeToolCallEvent,
    BeforeToolCallResult,
    BuiltinScan,
    GatewayStartEvent,
    GatewayStopEvent,
    InstallFinding,
    LlmInputEvent,
    MessageReceivedEvent,
    MessageSendingEvent,
    MessageSendingResult,
    SessionEndEvent,
    SessionHookContext,
    SessionStartEvent,
    ToolApprovalRequest,
    ToolHookContext,
    ToolResultPersistEvent,
)
from runtime.hooks._internal import BootstrapFile, InternalHookEvent, InternalHooks
from runtime.hooks._registry import HookRegistry
from runtime.llm._types import TextContent, ToolResultMessage, UserMessage

LIMIT = 10  # seconds; every test runs under trio.fail_after(LIMIT)


def tool_event(**params: Any) -> BeforeToolCallEvent:
    return BeforeToolCallEvent(toolName="exec", params=dict(params), runId="r1", toolCallId="c1")


def install_event() -> BeforeInstallEvent:
    return BeforeInstallEvent(
        targetType="plugin",
        targetName="x",
        sourcePath="/tmp/x",
        sourcePathKind="directory",
        request=BeforeInstallRequest(kind="plugin-dir", mode="install"),
        builtinScan=BuiltinScan(status="ok"),
    )


def tool_message(text: str) -> ToolResultMessage:
    return ToolResultMessage(
        toolCallId="c1",
        toolName="exec",
        content=[TextContent(text=text)],
        isError=False,
        timestamp=1,
    )


def recording(ran: list[str], name: str, result: Any = None) -> Callable[[Any], Any]:
    """A one-argument handler that notes `name` in `ran` and returns `result`."""

    def handler(event: Any) -> Any:
        ran.append(name)
        return result

    return handler


# --- the decision-rule tables ------------------------------------------------------------

BLOCK_OUTCOMES = ("block", "allow", "none", "raise")


def block_cases() -> list[Any]:
    cases = []
    for n in (2, 3):
        for combo in itertools.product(BLOCK_OUTCOMES, repeat=n):
            cases.append(pytest.param(combo, id="-".join(combo)))
    return cases


def expected_block(combo: tuple[str, ...]) -> tuple[bool, int | None, list[int]]:
    """(blocked, index of the deciding handler, indexes of handlers that ran)."""
    ran = []
    for i, outcome in enumerate(combo):
        ran.append(i)
        if outcome in ("block", "raise"):
            return True, i, ran
    return False, None, ran


def register_block_outcomes(
    hooks: HookRegistry, hook_name: str, combo: tuple[str, ...], ran: list[int]
) -> None:
    """Handler i has priority 100 - i (highest first) but is registered in reverse order."""
    for i in reversed(range(len(combo))):
        outcome = combo[i]

        async def handler(event: Any, ctx: Any, *, i: int = i, outcome: str = outcome) -> Any:
            ran.append(i)
            await trio.lowlevel.checkpoint()
            if outcome == "block":
                return {"block": True, "blockReason": f"blocked by p{i}"}
            if outcome == "allow":
                return {"block": False}
            if outcome == "raise":
                raise RuntimeError(f"p{i} exploded")
            return None

        hooks.register(hook_name, handler, priority=100 - i, plugin_id=f"p{i}")


@pytest.mark.parametrize("combo", block_cases())
async def test_before_tool_call_decision_table(combo: tuple[str, ...]) -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        ran: list[int] = []
        register_block_outcomes(hooks, "before_tool_call", combo, ran)
        decision = await hooks.run_before_tool_call(tool_event(command="ls"))
        blocked, decider, expected_ran = expected_block(combo)
        assert decision.block is blocked
        assert ran == expected_ran
        if not blocked:
            assert decision.block_reason is None
        elif combo[decider or 0] == "block":
            assert decision.block_reason == f"blocked by p{decider}"
        else:
            assert decision.block_reason is not None
            assert f"'p{decider}'" in decision.block_reason
            assert f"p{decider} exploded" in decision.block_reason
        assert decision.params == {"command": "ls"}


@pytest.mark.parametrize("combo", block_cases())
async def test_before_install_decision_table(combo: tuple[str, ...]) -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        ran: list[int] = []
        register_block_outcomes(hooks, "before_install", combo, ran)
        decision = await hooks.run_before_install(install_event())
        blocked, decider, expected_ran = expected_block(combo)
        assert decision.block is blocked
        assert ran == expected_ran
        if blocked and combo[decider or 0] == "block":
            assert decision.block_reason == f"blocked by p{decider}"
        elif blocked:
            assert decision.block_reason is not None
            assert f"'p{decider}'" in decision.block_reason
            assert "RuntimeError" in decision.block_reason
        else:
            assert decision.block_reason is None


SENDING_OUTCOMES = ("cancel", "keep", "rewrite", "none", "raise")


def sending_cases() -> list[Any]:
    cases = []
    for n in (2, 3):
        for combo in itertools.product(SENDING_OUTCOMES, repeat=n):
            cases.append(pytest.param(combo, id="-".join(combo)))
    return cases


@pytest.mark.parametrize("combo", sending_cases())
async def test_message_sending_decision_table(combo: tuple[str, ...]) -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        seen: list[tuple[int, str]] = []
        for i in reversed(range(len(combo))):

            def handler(event: MessageSendingEvent, *, i: int = i, outcome: str = combo[i]) -> Any:
                seen.append((i, event.content))
                if outcome == "cancel":
                    return MessageSendingResult(cancel=True)
                if outcome == "keep":
                    return {"cancel": False}
                if outcome == "rewrite":
                    return {"content": f"{event.content}+p{i}"}
                if outcome == "raise":
                    raise RuntimeError("boom")
                return None

            hooks.register("message_sending", handler, priority=100 - i, plugin_id=f"p{i}")

        content, cancelled = await hooks.run_message_sending(
            MessageSendingEvent(to="u1", content="hi")
        )

        expected_content = "hi"
        expected_seen = []
        expected_cancel = False
        for i, outcome in enumerate(combo):
            expected_seen.append((i, expected_content))
            if outcome == "rewrite":
                expected_content += f"+p{i}"
            if outcome == "cancel":
                expected_cancel = True
                break
        assert seen == expected_seen
        assert cancelled is expected_cancel
        assert content == expected_content


# --- before_tool_call: named claims --------------------------------------------------------


async def test_block_false_from_higher_priority_does_not_prevent_lower_block() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register("before_tool_call", lambda e, c: {"block": False}, priority=10)
        hooks.register(
            "before_tool_call", lambda e, c: {"block": True, "blockReason": "no"}, priority=1
        )
        decision = await hooks.run_before_tool_call(tool_event())
        assert decision.block is True
        assert decision.block_reason == "no"


async def test_block_is_terminal_and_lower_priorities_do_not_run() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        ran: list[str] = []
        hooks.register("before_tool_call", lambda e, c: ran.append("low"), priority=-5)
        hooks.register(
            "before_tool_call",
            recording(ran, "high", BeforeToolCallResult(block=True)),
            priority=5,
        )
        decision = await hooks.run_before_tool_call(tool_event())
        assert decision.block is True
        assert ran == ["high"]


async def test_params_last_defined_wins() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register("before_tool_call", lambda e, c: {"params": {"n": 1}}, priority=3)
        hooks.register("before_tool_call", lambda e, c: None, priority=2)
        hooks.register("before_tool_call", lambda e, c: {"params": {"n": 2}}, priority=1)
        decision = await hooks.run_before_tool_call(tool_event(n=0))
        assert decision == decision.__class__(False, None, {"n": 2}, None)


async def test_params_frozen_once_another_plugin_requested_approval() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        approval = ToolApprovalRequest(title="Run it?", description="exec", severity="warning")
        hooks.register(
            "before_tool_call",
            lambda e, c: BeforeToolCallResult(params={"n": 1}, requireApproval=approval),
            priority=3,
            plugin_id="approver",
        )
        hooks.register(
            "before_tool_call",
            lambda e, c: {
                "params": {"n": 99},
                "requireApproval": {"title": "second", "description": "ignored"},
            },
            priority=2,
            plugin_id="other",
        )
        decision = await hooks.run_before_tool_call(tool_event(n=0))
        assert decision.block is False
        assert decision.params == {"n": 1}
        assert decision.require_approval == {
            "title": "Run it?",
            "description": "exec",
            "severity": "warning",
            "pluginId": "approver",
        }


async def test_params_after_own_approval_may_still_change_by_the_same_plugin() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register(
            "before_tool_call",
            lambda e, c: {"requireApproval": {"title": "t", "description": "d"}},
            priority=2,
            plugin_id="same",
        )
        hooks.register(
            "before_tool_call", lambda e, c: {"params": {"n": 5}}, priority=1, plugin_id="same"
        )
        decision = await hooks.run_before_tool_call(tool_event(n=0))
        assert decision.params == {"n": 5}
        assert decision.require_approval is not None
        assert decision.require_approval["pluginId"] == "same"


async def test_block_after_approval_keeps_approval_and_blocks() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register(
            "before_tool_call",
            lambda e, c: {"requireApproval": {"title": "t", "description": "d"}},
            priority=2,
            plugin_id="a",
        )
        hooks.register("before_tool_call", lambda e, c: {"block": True}, priority=1, plugin_id="b")
        decision = await hooks.run_before_tool_call(tool_event())
        assert decision.block is True
        assert decision.require_approval is not None


async def test_an_approval_request_may_carry_openclaws_newer_keys() -> None:
    """`allowedDecisions`, `scope` and `timeoutReason` (OpenClaw 2026.9) are a request, not a
    handler failing (which would block the call)."""
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        scope = {"kind": "payment", "amount": "1.00", "currency": "EUR", "target": "Stripe"}
        approval = {
            "title": "Pay",
            "description": "1 EUR",
            "allowedDecisions": ["allow-once", "deny"],
            "scope": scope,
            "timeoutReason": "nobody answered",
        }
        hooks.register(
            "before_tool_call", lambda e, c: {"requireApproval": approval}, plugin_id="payer"
        )
        decision = await hooks.run_before_tool_call(tool_event())
        assert decision.block is False
        assert decision.require_approval == {**approval, "pluginId": "payer"}


async def test_handlers_see_isolated_copies_of_params() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        seen: list[dict[str, Any]] = []

        def mutate(event: BeforeToolCallEvent) -> None:
            event.params["nested"]["x"] = "mutated"
            event.params["extra"] = True

        hooks.register("before_tool_call", mutate, priority=2)
        hooks.register("before_tool_call", lambda e: seen.append(e.params), priority=1)
        event = tool_event(nested={"x": "orig"})
        decision = await hooks.run_before_tool_call(event)
        assert seen == [{"nested": {"x": "orig"}}]
        assert event.params == {"nested": {"x": "orig"}}
        assert decision.params == {"nested": {"x": "orig"}}


async def test_invalid_result_fails_closed() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register("before_tool_call", lambda e, c: {"blok": True}, plugin_id="typo")
        decision = await hooks.run_before_tool_call(tool_event())
        assert decision.block is True
        assert decision.block_reason is not None
        assert "'typo'" in decision.block_reason
        assert "blok" in decision.block_reason


async def test_before_tool_call_timeout_fails_closed(autojump_clock: Any) -> None:
    with trio.fail_after(100):
        hooks = HookRegistry()
        ran: list[str] = []

        async def stuck(event: Any, ctx: Any) -> None:
            await trio.sleep_forever()

        hooks.register("before_tool_call", stuck, priority=1, plugin_id="slowpoke")
        hooks.register("before_tool_call", lambda e, c: ran.append("low"), priority=0)
        start = trio.current_time()
        decision = await hooks.run_before_tool_call(tool_event())
        assert trio.current_time() - start == pytest.approx(15.0)
        assert decision.block is True
        assert (
            decision.block_reason == "plugin 'slowpoke' before_tool_call hook timed out after 15s"
        )
        assert ran == []
        assert hooks.statistics().handler_timeouts == 1
        assert hooks.statistics().fail_closed == 1


async def test_before_install_timeout_fails_closed(autojump_clock: Any) -> None:
    with trio.fail_after(100):
        hooks = HookRegistry()

        async def stuck(event: Any) -> None:
            await trio.sleep_forever()

        hooks.register("before_install", stuck, plugin_id="scanner")
        decision = await hooks.run_before_install(install_event())
        assert decision.block is True
        assert decision.block_reason is not None
        assert "'scanner'" in decision.block_reason
        assert "timed out" in decision.block_reason


async def test_before_install_findings_are_concatenated() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        finding = {"ruleId": "r", "severity": "warn", "file": "a.py", "line": 1, "message": "m"}
        hooks.register("before_install", lambda e: {"findings": [finding]}, priority=2)
        hooks.register(
            "before_install",
            lambda e: {"findings": [{**finding, "line": 2}], "block": False},
            priority=1,
        )
        decision = await hooks.run_before_install(install_event())
        assert decision.block is False
        assert [f.line for f in decision.findings] == [1, 2]
        assert all(isinstance(f, InstallFinding) for f in decision.findings)


async def test_no_handlers_means_no_decision() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        event = tool_event(a=1)
        decision = await hooks.run_before_tool_call(event)
        assert (decision.block, decision.params, decision.require_approval) == (
            False,
            {"a": 1},
            None,
        )
        assert await hooks.run_message_sending(MessageSendingEvent(to="u", content="c")) == (
            "c",
            False,
        )
        assert (await hooks.run_before_install(install_event())).block is False
        assert hooks.has("before_tool_call") is False


# --- ordering ----------------------------------------------------------------------------


async def test_priority_descending_and_ties_keep_registration_order() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        order: list[str] = []
        for name, priority in [
            ("a0", 0),
            ("b5", 5),
            ("c5", 5),
            ("d-1", -1),
            ("e10", 10),
            ("f0", 0),
        ]:
            hooks.register(
                "before_model_resolve",
                lambda e, *, name=name: order.append(name),
                priority=priority,
            )
        await hooks.run_before_model_resolve(BeforeModelResolveEvent(prompt="p"))
        assert order == ["e10", "b5", "c5", "a0", "f0", "d-1"]
        assert [r.priority for r in hooks.handlers("before_model_resolve")] == [10, 5, 5, 0, 0, -1]


# --- other modifying hooks -------------------------------------------------------------------


async def test_before_model_resolve_first_defined_wins() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register("before_model_resolve", lambda e: {"modelOverride": "m-high"}, priority=3)
        hooks.register(
            "before_model_resolve",
            lambda e: {"modelOverride": "m-mid", "providerOverride": "p-mid"},
            priority=2,
        )
        hooks.register("before_model_resolve", lambda e: {"providerOverride": "p-low"}, priority=1)
        result = await hooks.run_before_model_resolve(BeforeModelResolveEvent(prompt="p"))
        assert result == ("p-mid", "m-high")


async def test_before_prompt_build_merges_in_priority_order() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register(
            "before_prompt_build",
            lambda e, c: {"prependContext": "A", "appendSystemContext": "X"},
            priority=3,
        )
        hooks.register(
            "before_prompt_build",
            lambda e, c: {"systemPrompt": "S1", "prependContext": "B", "prependSystemContext": "P"},
            priority=2,
        )
        hooks.register("before_prompt_build", lambda e, c: {"systemPrompt": "S2"}, priority=1)

        def explode(e: Any) -> None:
            raise RuntimeError("skipped")

        hooks.register("before_prompt_build", explode, priority=0)
        merged = await hooks.run_before_prompt_build(
            BeforePromptBuildEvent(prompt="hi", messages=[UserMessage(content="hi", timestamp=1)])
        )
        assert merged.system_prompt == "S1"
        assert merged.prepend_context == "A\n\nB"
        assert merged.prepend_system_context == "P"
        assert merged.append_system_context == "X"
        assert merged.append_context is None


async def test_before_agent_start_legacy_merges_resolve_and_prompt_rules() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register(
            "before_agent_start",
            lambda e: {"modelOverride": "m1", "prependContext": "one"},
            priority=2,
        )
        hooks.register(
            "before_agent_start",
            lambda e: {"modelOverride": "m2", "providerOverride": "p2", "prependContext": "two"},
            priority=1,
        )
        result = await hooks.run_before_agent_start(BeforeAgentStartEvent(prompt="x"))
        assert (result.provider_override, result.model_override) == ("p2", "m1")
        assert result.prepend_context == "one\n\ntwo"


async def test_before_agent_reply_first_claim_wins() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        ran: list[str] = []
        hooks.register("before_agent_reply", recording(ran, "a", {"handled": False}), priority=3)
        hooks.register(
            "before_agent_reply",
            recording(ran, "b", {"handled": True, "reply": {"text": "canned"}}),
            priority=2,
            plugin_id="claimer",
        )
        hooks.register("before_agent_reply", recording(ran, "c", {"handled": True}), priority=1)
        claim = await hooks.run_before_agent_reply(BeforeAgentReplyEvent(cleanedBody="hi"))
        assert claim is not None
        assert (claim.plugin_id, claim.reply) == ("claimer", {"text": "canned"})
        assert ran == ["a", "b"]
        assert (
            await HookRegistry().run_before_agent_reply(BeforeAgentReplyEvent(cleanedBody="x"))
            is None
        )


def test_tool_result_persist_is_synchronous_and_chains_replacements() -> None:
    hooks = HookRegistry()
    seen: list[str] = []

    def redact(event: ToolResultPersistEvent, ctx: Any) -> dict[str, Any]:
        text = event.message.content[0]
        assert isinstance(text, TextContent)
        seen.append(text.text)
        return {"message": tool_message(text.text.replace("secret", "***"))}

    def suffix(event: ToolResultPersistEvent) -> Any:
        text = event.message.content[0]
        assert isinstance(text, TextContent)
        seen.append(text.text)
        return {
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "exec",
                "content": [{"type": "text", "text": text.text + "!"}],
                "isError": False,
                "timestamp": 2,
            }
        }

    def returns_coroutine(event: Any) -> Any:
        async def later() -> None:
            pass

        return later()

    hooks.register("tool_result_persist", redact, priority=2)
    hooks.register("tool_result_persist", suffix, priority=1)
    hooks.register("tool_result_persist", returns_coroutine, priority=0)
    out = hooks.run_tool_result_persist(ToolResultPersistEvent(message=tool_message("a secret")))
    assert seen == ["a secret", "a ***"]
    assert out == ToolResultMessage(
        toolCallId="c1",
        toolName="exec",
        content=[TextContent(text="a ***!")],
        isError=False,
        timestamp=2,
    )
    assert hooks.statistics().handler_errors == 1


def test_tool_result_persist_rejects_async_handlers() -> None:
    async def handler(event: Any) -> None:
        pass

    with pytest.raises(ValueError, match="synchronous"):
        HookRegistry().register("tool_result_persist", handler)


async def test_before_message_write_block_stops_and_replacements_chain() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        ran: list[str] = []
        hooks.register(
            "before_message_write",
            recording(ran, "rewrite", {"message": UserMessage(content="rewritten", timestamp=2)}),
            priority=3,
        )
        hooks.register(
            "before_message_write",
            lambda e: ran.append(f"saw {e.message.content}"),
            priority=2,
        )
        event = BeforeMessageWriteEvent(message=UserMessage(content="orig", timestamp=1))
        assert await hooks.run_before_message_write(event) == UserMessage(
            content="rewritten", timestamp=2
        )
        assert ran == ["rewrite", "saw rewritten"]

        hooks.register("before_message_write", lambda e: {"block": True}, priority=1)
        hooks.register("before_message_write", lambda e: ran.append("never"), priority=0)
        ran.clear()
        assert await hooks.run_before_message_write(event) is None
        assert ran == ["rewrite", "saw rewritten"]


async def test_failing_modifying_hook_is_logged_and_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()

        def broken(event: Any) -> None:
            raise RuntimeError("kaput")

        hooks.register("message_sending", broken, priority=2, plugin_id="flaky")
        hooks.register("message_sending", lambda e: {"content": "fine"}, priority=1)
        with caplog.at_level(logging.ERROR, logger="clawlane.hooks"):
            result = await hooks.run_message_sending(MessageSendingEvent(to="u", content="c"))
        assert result == ("fine", False)
        assert "message_sending handler from flaky failed: RuntimeError: kaput" in caplog.text


# --- sync and async handlers ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync-1", "sync-2", "async-1", "async-2", "callable-object"])
async def test_sync_and_async_handlers_with_or_without_ctx(kind: str) -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        seen: list[Any] = []

        def s1(event: BeforeToolCallEvent) -> dict[str, Any]:
            return {"params": {"kind": kind}}

        def s2(event: BeforeToolCallEvent, ctx: ToolHookContext) -> dict[str, Any]:
            seen.append(ctx)
            return {"params": {"kind": kind}}

        async def a1(event: BeforeToolCallEvent) -> dict[str, Any]:
            await trio.lowlevel.checkpoint()
            return {"params": {"kind": kind}}

        async def a2(event: BeforeToolCallEvent, ctx: ToolHookContext) -> BeforeToolCallResult:
            await trio.lowlevel.checkpoint()
            seen.append(ctx)
            return BeforeToolCallResult(params={"kind": kind})

        class Obj:
            async def __call__(self, event: BeforeToolCallEvent, ctx: Any = None) -> Any:
                seen.append(ctx)
                return {"params": {"kind": kind}}

        handlers: dict[str, Callable[..., Any]] = {"sync-1": s1, "sync-2": s2, "async-1": a1}
        handlers.update({"async-2": a2, "callable-object": Obj()})
        handler = handlers[kind]
        hooks.register("before_tool_call", handler)
        decision = await hooks.run_before_tool_call(tool_event())
        assert decision.params == {"kind": kind}
        if kind.endswith("-2") or kind == "callable-object":
            assert seen == [ToolHookContext(toolName="exec", runId="r1", toolCallId="c1")]


async def test_explicit_ctx_is_passed_through() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        seen: list[Any] = []
        hooks.register("session_start", lambda e, c: seen.append(c))
        ctx = SessionHookContext(sessionId="s1", agentId="main")
        await hooks.fire("session_start", SessionStartEvent(sessionId="s1"), ctx)
        await hooks.fire("session_start", SessionStartEvent(sessionId="s2", sessionKey="k"))
        assert seen == [ctx, SessionHookContext(sessionId="s2", sessionKey="k")]


# --- observing hooks -----------------------------------------------------------------------


async def test_observing_hooks_run_concurrently() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        a_started, b_started = trio.Event(), trio.Event()
        finished: list[str] = []

        async def a(event: AgentEndEvent) -> None:
            a_started.set()
            await b_started.wait()
            finished.append("a")

        async def b(event: AgentEndEvent) -> None:
            b_started.set()
            await a_started.wait()
            finished.append("b")

        hooks.register("agent_end", a, priority=1)
        hooks.register("agent_end", b, priority=0)
        await hooks.fire("agent_end", AgentEndEvent(messages=[], success=True))
        assert sorted(finished) == ["a", "b"]


async def test_raising_observing_hook_is_contained(caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        done = trio.Event()

        async def broken(event: Any, ctx: Any) -> None:
            await trio.lowlevel.checkpoint()
            raise RuntimeError("observer broke")

        async def fine(event: Any, ctx: Any) -> None:
            await trio.lowlevel.checkpoint()
            done.set()

        hooks.register("llm_input", broken, plugin_id="broken-observer")
        hooks.register("llm_input", fine)
        event = LlmInputEvent(
            runId="r", sessionId="s", provider="local", model="m", prompt="p", historyMessages=[]
        )
        with caplog.at_level(logging.ERROR, logger="clawlane.hooks"):
            await hooks.fire("llm_input", event)
        assert done.is_set()
        assert "llm_input handler from broken-observer failed" in caplog.text
        assert hooks.statistics().handler_errors == 1


@pytest.mark.parametrize(
    ("hook_name", "event", "seconds"),
    [
        pytest.param("agent_end", AgentEndEvent(messages=[], success=False), 30.0, id="agent_end"),
        pytest.param("gateway_stop", GatewayStopEvent(reason="shutdown"), 5.0, id="gateway_stop"),
        pytest.param("gateway_start", GatewayStartEvent(port=1), 15.0, id="gateway_start"),
        pytest.param(
            "message_received",
            MessageReceivedEvent(from_="u", content="c"),
            15.0,
            id="message_received",
        ),
    ],
)
async def test_observing_hook_timeouts(
    autojump_clock: Any, hook_name: str, event: Any, seconds: float
) -> None:
    with trio.fail_after(100):
        hooks = HookRegistry()
        finished = trio.Event()

        async def stuck(event: Any) -> None:
            await trio.sleep_forever()

        async def quick(event: Any) -> None:
            finished.set()

        hooks.register(hook_name, stuck, plugin_id="stuck")
        hooks.register(hook_name, quick)
        start = trio.current_time()
        await hooks.fire(hook_name, event)
        assert trio.current_time() - start == pytest.approx(seconds)
        assert finished.is_set()
        assert hooks.statistics().handler_timeouts == 1


async def test_timeouts_can_be_overridden_per_hook(autojump_clock: Any) -> None:
    with trio.fail_after(100):
        hooks = HookRegistry(timeouts={"before_tool_call": 2.0})
        assert hooks.timeouts["agent_end"] == DEFAULT_HOOK_TIMEOUTS["agent_end"] == 30.0

        async def stuck(event: Any) -> None:
            await trio.sleep_forever()

        hooks.register("before_tool_call", stuck)
        start = trio.current_time()
        assert (await hooks.run_before_tool_call(tool_event())).block is True
        assert trio.current_time() - start == pytest.approx(2.0)
        with pytest.raises(ValueError, match="no_such_hook"):
            HookRegistry(timeouts={"no_such_hook": 1.0})


async def test_fire_checks_hook_kind_and_event_type() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        with pytest.raises(ValueError, match="before_tool_call"):
            await hooks.fire("before_tool_call", tool_event())
        with pytest.raises(TypeError, match="SessionEndEvent"):
            await hooks.fire("session_end", SessionStartEvent(sessionId="s"))
        await hooks.fire(
            "session_end", SessionEndEvent(sessionId="s", messageCount=0, reason="reset")
        )


async def test_observing_handler_return_values_are_ignored() -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        hooks.register("gateway_start", lambda e: {"anything": "goes"})
        await hooks.fire("gateway_start", GatewayStartEvent(port=18789))
        assert hooks.statistics().handler_errors == 0


# --- registration ------------------------------------------------------------------------------


def test_unknown_hook_name_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match="before_tool_cal'"):
        HookRegistry().register("before_tool_cal", lambda e: None)


def test_handler_signatures_are_checked_at_registration() -> None:
    hooks = HookRegistry()
    with pytest.raises(TypeError, match="event"):
        hooks.register("agent_end", lambda: None)
    with pytest.raises(TypeError, match="event"):
        hooks.register("agent_end", lambda a, b, c: None)
    with pytest.raises(TypeError, match="priority"):
        hooks.register("agent_end", lambda e: None, priority=True)
    hooks.register("agent_end", lambda *args: None)


def test_unregister_plugin_and_statistics() -> None:
    hooks = HookRegistry()
    hooks.register("agent_end", lambda e: None, plugin_id="a")
    hooks.register("before_tool_call", lambda e: None, plugin_id="a")
    reg = hooks.register("before_tool_call", lambda e: None, plugin_id="b")
    stats = hooks.statistics()
    assert stats.registrations == 3
    assert dict(stats.by_hook) == {"agent_end": 1, "before_tool_call": 2}
    assert stats.plugins == ("a", "b")
    assert hooks.unregister_plugin("a") == 2
    assert hooks.has("agent_end") is False
    assert hooks.has("before_tool_call") is True
    assert hooks.unregister(reg) is True
    assert hooks.unregister(reg) is False
    assert hooks.has("before_tool_call") is False
    assert hooks.statistics().registrations == 0


def test_hook_name_sets() -> None:
    assert MODIFYING_HOOKS.isdisjoint(OBSERVING_HOOKS)
    assert len(HOOK_NAMES) == 21
    assert {"before_message_write", "llm_output", "before_agent_start"} <= HOOK_NAMES


# --- internal hooks ------------------------------------------------------------------------------


async def test_internal_hooks_type_then_type_action_both_fire() -> None:
    with trio.fail_after(LIMIT):
        internal = InternalHooks()
        calls: list[str] = []

        async def on_command(event: InternalHookEvent) -> None:
            await trio.lowlevel.checkpoint()
            calls.append(f"command({event.action})")

        internal.register("command:new", lambda e: calls.append("command:new"))
        internal.register("command", on_command)
        internal.register("command:reset", lambda e: calls.append("command:reset"))
        for action in ("new", "reset", "stop"):
            await internal.trigger(InternalHookEvent(type="command", action=action, sessionKey="k"))
        assert calls == [
            "command(new)",
            "command:new",
            "command(reset)",
            "command:reset",
            "command(stop)",
        ]


async def test_internal_hook_errors_are_logged_and_the_rest_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(LIMIT):
        internal = InternalHooks()

        def broken(event: InternalHookEvent) -> None:
            raise RuntimeError("operator hook broke")

        def greet(event: InternalHookEvent) -> None:
            event.messages.append("fresh session")

        internal.register("command", broken)
        internal.register("command:new", greet)
        event = InternalHookEvent(type="command", action="new", sessionKey="agent:main:main")
        with caplog.at_level(logging.ERROR, logger="clawlane.hooks"):
            await internal.trigger(event)
        assert event.messages == ["fresh session"]
        assert "internal hook error [command:new]" in caplog.text
        assert "operator hook broke" in caplog.text


async def test_agent_bootstrap_handlers_add_and_remove_files() -> None:
    with trio.fail_after(LIMIT):
        internal = InternalHooks()
        files = [
            BootstrapFile("AGENTS.md", "/ws/AGENTS.md", "agents"),
            BootstrapFile("SOUL.md", "/ws/SOUL.md", "soul"),
        ]

        def drop_soul(event: InternalHookEvent) -> None:
            assert event.context["workspaceDir"] == "/ws"
            event.context["bootstrapFiles"][:] = [
                f for f in event.context["bootstrapFiles"] if f.name != "SOUL.md"
            ]

        async def add_extra(event: InternalHookEvent) -> None:
            await trio.lowlevel.checkpoint()
            event.context["bootstrapFiles"].append(BootstrapFile("EXTRA.md", "/ws/EXTRA.md", "x"))
            event.context["bootstrapFiles"].append({"name": "D.md", "path": "/ws/D.md"})
            event.context["bootstrapFiles"].append("not a file")

        internal.register("agent", drop_soul)
        internal.register("agent:bootstrap", add_extra)
        out = await internal.run_agent_bootstrap(files, workspace_dir="/ws", session_key="k")
        assert [f.name for f in out] == ["AGENTS.md", "EXTRA.md", "D.md"]
        assert out[2] == BootstrapFile("D.md", "/ws/D.md", None)
        assert [f.name for f in files] == ["AGENTS.md", "SOUL.md"]
        assert await InternalHooks().run_agent_bootstrap(files, workspace_dir="/ws") == files


# --- property: any priorities, any outcomes ------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=-3, max_value=3), st.sampled_from(BLOCK_OUTCOMES)),
        max_size=6,
    )
)
async def test_before_tool_call_matches_the_reference_model(
    handlers: list[tuple[int, str]],
) -> None:
    with trio.fail_after(LIMIT):
        hooks = HookRegistry()
        ran: list[int] = []
        for index, (priority, outcome) in enumerate(handlers):

            def handler(event: Any, *, index: int = index, outcome: str = outcome) -> Any:
                ran.append(index)
                if outcome == "raise":
                    raise RuntimeError(f"h{index}")
                return {"block": outcome == "block"} if outcome != "none" else None

            hooks.register("before_tool_call", handler, priority=priority, plugin_id=f"h{index}")

        order = sorted(
            range(len(handlers)), key=lambda i: -handlers[i][0]
        )  # stable: ties keep order
        expected_ran: list[int] = []
        expected_block = False
        for i in order:
            expected_ran.append(i)
            if handlers[i][1] in ("block", "raise"):
                expected_block = True
                break
        decision = await hooks.run_before_tool_call(tool_event())
        assert ran == expected_ran
        assert decision.block is expected_block
