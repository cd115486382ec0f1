"""The tools of one run: policy applied, hooks around every call, events out.

`RunTools` implements the agent loop's `ToolRunner`: it offers only what the policy permits,
refuses (with an error result the model sees) a call to anything else, runs the
`before_tool_call` hooks (a block is terminal and fails closed; a `requireApproval` waits for
an operator through the run's `ApprovalGate`, see `_approval`), invokes the tool with its
arguments validated, streams partial output as `tool` `update` events, bounds the result's
images as OpenClaw does before a model sees them (`sanitize_result_images`: within 1200 px a
side and 5 MiB, else a JPEG, else a text saying why), sanitises the result for events, fires
`after_tool_call`, and lets `tool_result_persist` shape what is stored.
It also records what the `message` tool sent, for reply dedupe.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import msgspec
import trio

from ..hooks._events import (
    AfterToolCallEvent,
    BeforeToolCallEvent,
    ToolHookContext,
    ToolResultPersistEvent,
)
from ..hooks._registry import HookRegistry
from ..llm._types import Message, TextContent, ToolCallContent, ToolResultMessage, ToolSpec
from ..tools import (
    Tool,
    ToolCatalog,
    ToolContext,
    ToolPolicy,
    ToolResult,
    ToolSearchSettings,
    ToolSurface,
    invoke_tool,
    normalize_tool_name,
    sanitize_result,
    sanitize_result_images,
    tool_spec,
)
from ._agent import Emit, ToolOutcome, TurnYield
from ._approval import (
    NO_APPROVER,
    UNATTENDED,
    ApprovalGate,
    ApprovalOutcome,
    approval_params,
    notify_resolution,
    refusal,
    resolution_of,
    warn_timeout_behavior,
)
from ._searchcall import route as search_route

_to_builtins = msgspec.to_builtins


def _now_ms() -> int:
    return int(time.time() * 1000)


@attrs.frozen(eq=False)
class ToolSet:
    """The tools a policy permits, by name, and the specs offered to the model: the same for
    every run of an agent under one generation and plugin registry, so callers build it once
    and share it. With Tool Search (`search`: `tools.toolSearch`, see
    `runtime.tools.ToolSurface`) the specs are the directly offered tools and the control
    tools; `catalog` holds the rest, reached through `tool_call` (`_searchcall`)."""

    by_name: Mapping[str, Tool]
    specs: tuple[ToolSpec, ...]
    catalog: ToolCatalog | None = None

    @classmethod
    def of(
        cls,
        tools: Sequence[Tool],
        policy: ToolPolicy,
        search: ToolSearchSettings | None = None,
        *,
        owners: Mapping[str, str] | None = None,
    ) -> ToolSet:
        """`owners`: each plugin tool's plugin id (its Tool Search catalog id)."""
        by_name = {t.name: t for t in tools if policy.permits(t.name)}
        surface = ToolSurface.of(list(by_name.values()), search, owners=owners)
        for control in surface.direct:
            by_name.setdefault(control.name, control)
        specs = tuple(tool_spec(t) for t in surface.direct)
        return cls(MappingProxyType(by_name), specs, surface.catalog)

    def find(self, name: str) -> Tool | None:
        """The tool a model's call names: its exact name, else the tool an OpenClaw alias
        (`bash`, `apply-patch`) or a different case stands for."""
        tool = self.by_name.get(name)
        if tool is None:
            tool = self.by_name.get(normalize_tool_name(name))
        return tool


@attrs.define(eq=False)
class RunTools:
    """Per-run tool runner. Not shared between runs. `toolset` (when given) is the
    precomputed `ToolSet.of(tools, policy)`."""

    tools: Sequence[Tool]
    policy: ToolPolicy
    workspace: Path
    agent_id: str
    session_key: str
    session_id: str
    run_id: str
    deliver_message: Callable[[str], Awaitable[None]]
    hooks: HookRegistry | None = None
    mutating_failed: list[str] = attrs.field(factory=list)
    sent_texts: list[str] = attrs.field(factory=list)
    failures: list[tuple[str, str, bool]] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    """The run's environment for commands (filled from the skills snapshot by `run_turn`)."""
    toolset: ToolSet | None = None
    approvals: ApprovalGate | None = None
    """Where a call a plugin wants approved is asked (None: no one to ask, such calls are
    refused)."""
    trigger: str = "user"
    """What started the run: `user`, or `cron` (unattended: no approval is asked for)."""
    yielded: TurnYield | None = None
    """A call ended the turn (`sessions_yield` through `ToolContext.end_turn`)."""
    context_window: int | None = None
    image_max_side: int | None = None
    """The longest side a tool result's image keeps (`agents.defaults.imageMaxDimensionPx`;
    None: OpenClaw's 1200 px)."""
    """The run's model's context window in tokens (set once the model is known), for the
    calls' `ToolContext`."""
    run_messages: Callable[[], tuple[Message, ...]] | None = None
    """The run's messages so far (set by `run_agent` as it starts), for the calls'
    `ToolContext`."""
    _by_name: Mapping[str, Tool] = attrs.field(init=False)
    _yielding: TurnYield | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        if self.toolset is None:
            self.toolset = ToolSet.of(self.tools, self.policy)
        self._by_name = self.toolset.by_name

    def specs(self) -> list[ToolSpec]:
        assert self.toolset is not None
        return list(self.toolset.specs)

    def _error(self, call: ToolCallContent, text: str) -> ToolOutcome:
        message = ToolResultMessage(
            toolCallId=call.id,
            toolName=call.name,
            content=[TextContent(text)],
            isError=True,
            timestamp=_now_ms(),
        )
        self.failures.append((call.name, text, False))
        return ToolOutcome(
            message=message, result={"content": [{"type": "text", "text": text}], "isError": True}
        )

    async def _send(self, text: str) -> None:
        await self.deliver_message(text)
        self.sent_texts.append(text)

    async def call(self, call: ToolCallContent, emit: Emit) -> ToolOutcome:
        assert self.toolset is not None
        if self.toolset.catalog is not None:  # Tool Search: `tool_call`, a deferred name
            routed = await search_route(self, self.toolset.catalog, call, emit)
            if routed is not None:
                return routed
        tool = self.toolset.find(call.name)
        if tool is None:
            return self._error(call, f"tool {call.name!r} is not available to this agent")
        hooks = self.hooks
        ctx_hook = self.hook_context(call)
        gated = await self.before_call(call, dict(call.arguments), ctx_hook)
        if isinstance(gated, ToolOutcome):
            return gated
        params = gated
        started = time.monotonic()
        self._yielding = None
        kept: list[Callable[[], None]] = []
        result = await invoke_tool(tool, params, self._context(call, emit, kept.append))
        result = await sanitize_result_images(result, max_side=self.image_max_side)
        duration_ms = (time.monotonic() - started) * 1000
        if result.is_error:
            text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
            self.failures.append((call.name, text, bool(getattr(tool, "mutating", False))))
        shown = _to_builtins(sanitize_result(result))
        if hooks is not None and hooks.has("after_tool_call"):
            event = AfterToolCallEvent(
                toolName=call.name,
                params=params,
                runId=self.run_id,
                toolCallId=call.id,
                result=shown,
                error=None if not result.is_error else "tool failed",
                durationMs=duration_ms,
            )
            await hooks.fire("after_tool_call", event, ctx_hook)
        message = ToolResultMessage(
            toolCallId=call.id,
            toolName=call.name,
            content=list(result.content),
            isError=result.is_error,
            timestamp=_now_ms(),
        )
        if hooks is not None and hooks.has("tool_result_persist"):
            message = _persisted(hooks, message, call)
        yielded = self._take_yield(result)
        return ToolOutcome(
            message=message,
            result=shown,
            meta=_summary(call.name, params),
            yielded=yielded,
            kept=tuple(kept),
        )

    def hook_context(self, call: ToolCallContent) -> ToolHookContext:
        """What the `before_tool_call` / `after_tool_call` hooks are told of `call`."""
        return ToolHookContext(
            toolName=call.name,
            agentId=self.agent_id,
            sessionKey=self.session_key,
            sessionId=self.session_id,
            runId=self.run_id,
            toolCallId=call.id,
        )

    async def before_call(
        self, call: ToolCallContent, params: dict[str, Any], hook_ctx: ToolHookContext
    ) -> dict[str, Any] | ToolOutcome:
        """The `before_tool_call` gate, for a call the model made directly or through Tool
        Search's `tool_call`: the params to run with (a plugin may change them), or the
        outcome of a call a plugin blocked or whose approval was refused. A checkpoint when
        a hook runs."""
        hooks = self.hooks
        if hooks is None or not hooks.has("before_tool_call"):
            return params
        decision = await hooks.run_before_tool_call(
            BeforeToolCallEvent(
                toolName=call.name, params=params, runId=self.run_id, toolCallId=call.id
            ),
            hook_ctx,
        )
        if decision.block:
            reason = decision.block_reason or "blocked by a plugin"
            return self._error(call, f"tool call blocked: {reason}")
        if decision.require_approval is not None:
            refused = await self._approve(call, decision.require_approval)
            if refused is not None:
                return self._error(call, refused)
        return dict(decision.params)

    async def _approve(self, call: ToolCallContent, approval: dict[str, Any]) -> str | None:
        """Ask an operator whether the call may run: None when allowed, else the error the
        model sees. A checkpoint; cancelled (the run aborted), the gate cancels the approval
        and the cancellation goes on."""
        callback = approval.get("onResolution")
        warn_timeout_behavior(approval)
        try:
            params = approval_params(
                approval,
                tool_name=call.name,
                tool_call_id=call.id,
                agent_id=self.agent_id,
                session_key=self.session_key,
            )
        except msgspec.ValidationError as exc:
            await notify_resolution(callback, "cancelled")
            return f"tool call not approved: the plugin's approval request is invalid ({exc})"
        gate = self.approvals
        if gate is None or self.trigger != "user":
            await notify_resolution(callback, "cancelled")
            return NO_APPROVER if gate is None else UNATTENDED.format(trigger=self.trigger)
        try:
            outcome = await gate.request(params, run_id=self.run_id)
        except trio.Cancelled:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await notify_resolution(callback, "cancelled")
            raise
        offered = params.allowedDecisions if isinstance(params.allowedDecisions, list) else []
        if outcome.decision is not None and outcome.decision not in offered:
            outcome = ApprovalOutcome(None, "timeout", outcome.approval_id)  # fails closed
        await notify_resolution(callback, resolution_of(outcome))
        return None if outcome.allowed else refusal(outcome, approval)

    def _context(
        self, call: ToolCallContent, emit: Emit, on_kept: Callable[[Callable[[], None]], None]
    ) -> ToolContext:
        """What the tool sees of its run; its partial results go out as `update` events,
        what it asks to run once its result is kept goes to `on_kept` (the outcome's)."""

        def on_update(partial: Any) -> None:
            if isinstance(partial, ToolResult):
                partial = _to_builtins(sanitize_result(partial))
            emit(
                "tool",
                {
                    "phase": "update",
                    "name": call.name,
                    "toolCallId": call.id,
                    "partialResult": partial,
                },
            )

        return ToolContext(
            workspace=self.workspace,
            agent_id=self.agent_id,
            session_key=self.session_key,
            session_id=self.session_id,
            run_id=self.run_id,
            on_update=on_update,
            send_message=self._send,
            env=self.env,
            end_turn=self._end_turn,
            on_kept=on_kept,
            context_window=self.context_window,
            image_max_side=self.image_max_side,
            run_messages=self.run_messages,
        )

    def _take_yield(self, result: ToolResult) -> TurnYield | None:
        """The turn's end a call that succeeded asked for (the run's first), else None."""
        yielded, self._yielding = self._yielding, None
        if yielded is None or result.is_error or self.yielded is not None:
            return None
        self.yielded = yielded
        return yielded

    def _end_turn(self, message: str, acknowledgment: str | None) -> None:
        """The call asks the run to end its turn once its result is in."""
        self._yielding = TurnYield(message, acknowledgment)


def _persisted(
    hooks: HookRegistry, message: ToolResultMessage, call: ToolCallContent
) -> ToolResultMessage:
    """The tool result as `tool_result_persist` hooks shape it for the transcript."""
    persisted = hooks.run_tool_result_persist(
        ToolResultPersistEvent(message=message, toolName=call.name, toolCallId=call.id)
    )
    return persisted if isinstance(persisted, ToolResultMessage) else message


def _summary(name: str, params: dict[str, Any]) -> str:
    for key in ("path", "command", "text"):
        value = params.get(key)
        if isinstance(value, str):
            return f"{name} {value[:80]}"
        if isinstance(value, list):
            return f"{name} {' '.join(map(str, value))[:80]}"
    return name
