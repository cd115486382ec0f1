"""The plugin hook registry: handlers ordered by priority and run by OpenClaw's rules.

A handler is called as `handler(event, ctx)` (or `handler(event)` when it takes one
argument); it may be sync or async, and may return `None` (no decision), the hook's result
`Struct` (`_events`), or a plain dict with the same keys, which is converted strictly: an
unknown key or a wrong type counts as the handler failing.

Handlers run by `priority`, highest first; equal priorities keep registration order.

- Modifying hooks run one after another and their results are merged by the rules of each
  hook (see the `run_*` methods). A failing handler is logged and skipped, except
  `before_tool_call` and `before_install`, which fail closed: an error or a timeout (15 s) is
  a block whose reason names the plugin.
- Observing hooks (`fire`) run concurrently in a nursery the caller awaits, each bounded by a
  timeout (agent_end 30 s, gateway_stop 5 s, others 15 s); errors and timeouts are logged and
  swallowed.

A sync handler runs on the trio thread: it must not block. Timeouts only interrupt handlers
at their checkpoints.

Errors raised here: `ValueError`/`TypeError` at registration (unknown hook name, a handler
that cannot be called as `(event)` or `(event, ctx)`, an async handler for the synchronous
`tool_result_persist`); `TypeError` from `fire` for an event of the wrong type.
"""

from __future__ import annotations

import copy
import inspect
import logging
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeVar

import attrs
import msgspec
import trio

from ..llm._types import Message
from ._events import (
    DEFAULT_HOOK_TIMEOUTS,
    EVENT_TYPES,
    HOOK_NAMES,
    AfterToolCallEvent,
    AgentHookContext,
    BeforeAgentReplyEvent,
    BeforeAgentReplyResult,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeInstallContext,
    BeforeInstallEvent,
    BeforeInstallResult,
    BeforeMessageWriteEvent,
    BeforeMessageWriteResult,
    BeforeModelResolveEvent,
    BeforeModelResolveResult,
    BeforePromptBuildEvent,
    BeforePromptBuildResult,
    BeforeToolCallEvent,
    BeforeToolCallResult,
    GatewayHookContext,
    InstallFinding,
    MessageHookContext,
    MessageSendingEvent,
    MessageSendingResult,
    MessageWriteContext,
    SessionEndEvent,
    SessionHookContext,
    SessionStartEvent,
    ToolApprovalRequest,
    ToolHookContext,
    ToolResultPersistContext,
    ToolResultPersistEvent,
    ToolResultPersistResult,
)

__all__ = [
    "AgentStartResult",
    "BeforeInstallDecision",
    "BeforeToolCallDecision",
    "HookHandler",
    "HookRegistration",
    "HookRegistry",
    "HookStatistics",
    "PromptBuildResult",
    "ReplyClaim",
]

log = logging.getLogger("clawlane.hooks")

_FAIL_CLOSED: Final = frozenset({"before_tool_call", "before_install"})
_PROMPT_JOIN: Final = "\n\n"


# --- decisions ---------------------------------------------------------------------------


@attrs.frozen
class BeforeToolCallDecision:
    """What the plugins decided about one tool call.

    `params` are the arguments to run with (the event's own when no plugin changed them).
    `require_approval` is the first approval request, as a dict with OpenClaw's keys and
    `pluginId` set to the requesting plugin: the call must not run before an operator allows
    it (`runtime.loop.RunTools` asks).
    """

    block: bool
    block_reason: str | None
    params: dict[str, Any]
    require_approval: dict[str, Any] | None


@attrs.frozen
class BeforeInstallDecision:
    block: bool
    block_reason: str | None
    findings: tuple[InstallFinding, ...] = ()


@attrs.frozen
class PromptBuildResult:
    """Merged before_prompt_build results; context strings are joined with a blank line."""

    system_prompt: str | None = None
    prepend_context: str | None = None
    prepend_system_context: str | None = None
    append_system_context: str | None = None
    append_context: str | None = None


@attrs.frozen
class AgentStartResult:
    """Merged results of the legacy before_agent_start hook."""

    provider_override: str | None = None
    model_override: str | None = None
    system_prompt: str | None = None
    prepend_context: str | None = None
    prepend_system_context: str | None = None
    append_system_context: str | None = None
    append_context: str | None = None


@attrs.frozen
class ReplyClaim:
    """A plugin claimed the turn in before_agent_reply."""

    plugin_id: str
    reply: dict[str, Any] | None = None
    reason: str | None = None


@attrs.frozen
class HookStatistics:
    registrations: int
    by_hook: Mapping[str, int]
    plugins: tuple[str, ...]
    handler_errors: int
    handler_timeouts: int
    fail_closed: int


# --- the registry ------------------------------------------------------------------------

HookHandler = Callable[..., Any]
_R = TypeVar("_R", bound=msgspec.Struct)


@attrs.frozen(eq=False)
class HookRegistration:
    """One registered handler; `unregister` takes it back."""

    hook_name: str
    handler: HookHandler
    priority: int
    plugin_id: str
    seq: int
    takes_ctx: bool

    @property
    def label(self) -> str:
        """The plugin id, or the handler's name when it was registered without one."""
        return self.plugin_id or getattr(self.handler, "__qualname__", repr(self.handler))


@attrs.frozen
class _Ok:
    value: Any


@attrs.frozen
class _Failed:
    error: BaseException | None  # None: timed out
    timeout: float = 0.0

    def describe(self) -> str:
        if self.error is None:
            return f"timed out after {self.timeout:g}s"
        return f"failed: {type(self.error).__name__}: {self.error}"


def _takes_ctx(handler: HookHandler) -> bool:
    try:
        sig = inspect.signature(handler)
    except (TypeError, ValueError):  # some builtins: assume OpenClaw's (event, ctx)
        return True
    positional = [
        p
        for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())
    if len(required) > 2 or (not positional and not varargs):
        raise TypeError(f"hook handler {handler!r} must accept (event) or (event, ctx)")
    return varargs or len(positional) >= 2


def _is_async_callable(handler: HookHandler) -> bool:
    dunder_call = inspect.getattr_static(type(handler), "__call__", None)
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(dunder_call)


def _normalise(raw: Any, result_type: type[_R]) -> _R | None:
    """A handler's return value as `result_type`; raises if it is neither None, the Struct
    nor a mapping with exactly its keys."""
    if raw is None or isinstance(raw, result_type):
        return raw
    if isinstance(raw, Mapping):
        return msgspec.convert(dict(raw), result_type)
    raise TypeError(f"expected None, a dict or {result_type.__name__}, got {type(raw).__name__}")


def _join(left: str | None, right: str | None) -> str | None:
    if not right:
        return left
    if not left:
        return right
    return left + _PROMPT_JOIN + right


def _same_plugin(a: HookRegistration, b: HookRegistration) -> bool:
    return a is b or (a.plugin_id != "" and a.plugin_id == b.plugin_id)


def _approval_dict(request: ToolApprovalRequest, plugin_id: str) -> dict[str, Any]:
    out = {k: v for k, v in msgspec.structs.asdict(request).items() if v is not None}
    out["pluginId"] = plugin_id
    return out


def _default_ctx(hook_name: str, event: Any) -> Any:
    if isinstance(event, BeforeToolCallEvent | AfterToolCallEvent):
        return ToolHookContext(
            toolName=event.toolName, runId=event.runId, toolCallId=event.toolCallId
        )
    if isinstance(event, SessionStartEvent | SessionEndEvent):
        return SessionHookContext(sessionId=event.sessionId, sessionKey=event.sessionKey)
    if isinstance(event, BeforeInstallEvent):
        return BeforeInstallContext(
            targetType=event.targetType, requestKind=event.request.kind, origin=event.origin
        )
    if isinstance(event, ToolResultPersistEvent):
        return ToolResultPersistContext(toolName=event.toolName, toolCallId=event.toolCallId)
    if isinstance(event, BeforeMessageWriteEvent):
        return MessageWriteContext(sessionKey=event.sessionKey, agentId=event.agentId)
    if hook_name.startswith("message_"):
        return MessageHookContext()
    if hook_name.startswith("gateway_"):
        return GatewayHookContext()
    return AgentHookContext()


def _merge_timeouts(overrides: Mapping[str, float]) -> Mapping[str, float]:
    unknown = set(overrides) - HOOK_NAMES
    if unknown:
        raise ValueError(f"timeouts for unknown hooks: {sorted(unknown)}")
    return MappingProxyType({**DEFAULT_HOOK_TIMEOUTS, **overrides})


@attrs.define(eq=False)
class HookRegistry:
    """The plugin hooks of one gateway, ordered and run by OpenClaw's rules.

    Registration replaces the per-hook tuple whole, so a run in progress keeps the handlers it
    started with. `timeouts` overrides `DEFAULT_HOOK_TIMEOUTS` per hook name (seconds).
    """

    timeouts: Mapping[str, float] = attrs.field(
        factory=dict, converter=_merge_timeouts, kw_only=True
    )
    _by_hook: dict[str, tuple[HookRegistration, ...]] = attrs.field(init=False, factory=dict)
    _seq: int = attrs.field(init=False, default=0)
    _error_count: int = attrs.field(init=False, default=0)
    _timeout_count: int = attrs.field(init=False, default=0)
    _fail_closed_count: int = attrs.field(init=False, default=0)

    # -- registration --------------------------------------------------------------------

    def register(
        self, hook_name: str, handler: HookHandler, *, priority: int = 0, plugin_id: str = ""
    ) -> HookRegistration:
        """Add a handler. Not a checkpoint.

        Raises:
            ValueError: unknown hook name, or an async handler for `tool_result_persist`.
            TypeError: the handler cannot be called as `(event)` or `(event, ctx)`, or
                `priority` is not an int.
        """
        if hook_name not in HOOK_NAMES:
            raise ValueError(f"unknown hook name {hook_name!r}")
        if not callable(handler):
            raise TypeError(f"hook handler for {hook_name!r} is not callable: {handler!r}")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"hook priority must be an int, got {priority!r}")
        if hook_name == "tool_result_persist" and _is_async_callable(handler):
            raise ValueError("tool_result_persist is synchronous: its handler must not be async")
        takes_ctx = _takes_ctx(handler)
        self._seq += 1
        reg = HookRegistration(
            hook_name=hook_name,
            handler=handler,
            priority=priority,
            plugin_id=plugin_id,
            seq=self._seq,
            takes_ctx=takes_ctx,
        )
        regs = (*self._by_hook.get(hook_name, ()), reg)
        self._by_hook[hook_name] = tuple(sorted(regs, key=lambda r: (-r.priority, r.seq)))
        return reg

    def unregister(self, registration: HookRegistration) -> bool:
        """Remove one registration; False if it was not registered."""
        regs = self._by_hook.get(registration.hook_name, ())
        if registration not in regs:
            return False
        kept = tuple(r for r in regs if r is not registration)
        self._set(registration.hook_name, kept)
        return True

    def unregister_plugin(self, plugin_id: str) -> int:
        """Remove every handler registered under `plugin_id`; returns how many."""
        removed = 0
        for name, regs in list(self._by_hook.items()):
            kept = tuple(r for r in regs if r.plugin_id != plugin_id)
            removed += len(regs) - len(kept)
            self._set(name, kept)
        return removed

    def _set(self, hook_name: str, regs: tuple[HookRegistration, ...]) -> None:
        if regs:
            self._by_hook[hook_name] = regs
        else:
            self._by_hook.pop(hook_name, None)

    def has(self, hook_name: str) -> bool:
        """Whether any handler is registered for `hook_name` (a dict lookup)."""
        return hook_name in self._by_hook

    def has_any(self) -> bool:
        """Whether any handler is registered at all (the hot path skips hook work if not)."""
        return bool(self._by_hook)

    def handlers(self, hook_name: str) -> tuple[HookRegistration, ...]:
        """The registrations for `hook_name` in the order they run."""
        return self._by_hook.get(hook_name, ())

    def statistics(self) -> HookStatistics:
        by_hook = {name: len(regs) for name, regs in sorted(self._by_hook.items())}
        plugins = {r.plugin_id for regs in self._by_hook.values() for r in regs if r.plugin_id}
        return HookStatistics(
            registrations=sum(by_hook.values()),
            by_hook=MappingProxyType(by_hook),
            plugins=tuple(sorted(plugins)),
            handler_errors=self._error_count,
            handler_timeouts=self._timeout_count,
            fail_closed=self._fail_closed_count,
        )

    # -- calling one handler -------------------------------------------------------------

    async def _call(
        self, reg: HookRegistration, event: Any, ctx: Any, result_type: type[_R] | None
    ) -> _Ok | _Failed:
        """Run one handler under its hook's timeout; never raises `Exception`. With no
        `result_type` (observing hooks) the handler's return value is ignored."""
        timeout = self.timeouts.get(reg.hook_name, math.inf)
        with trio.move_on_after(timeout):
            try:
                raw = reg.handler(event, ctx) if reg.takes_ctx else reg.handler(event)
                if inspect.isawaitable(raw):
                    raw = await raw
                return _Ok(None if result_type is None else _normalise(raw, result_type))
            except Exception as exc:
                return self._failed(reg, exc)
        return self._failed(reg, None, timeout)

    def _failed(self, reg: HookRegistration, exc: Exception | None, timeout: float = 0) -> _Failed:
        failure = _Failed(exc, timeout)
        if exc is None:
            self._timeout_count += 1
        else:
            self._error_count += 1
        if reg.hook_name in _FAIL_CLOSED:
            self._fail_closed_count += 1
            log.error(
                "[hooks] %s handler from %s %s; failing closed",
                reg.hook_name,
                reg.label,
                failure.describe(),
                exc_info=exc,
            )
        else:
            log.error(
                "[hooks] %s handler from %s %s",
                reg.hook_name,
                reg.label,
                failure.describe(),
                exc_info=exc,
            )
        return failure

    # -- policy hooks (fail closed) ------------------------------------------------------

    async def run_before_tool_call(
        self, event: BeforeToolCallEvent, ctx: ToolHookContext | None = None
    ) -> BeforeToolCallDecision:
        """Ask the plugins whether and how a tool call may run. Checkpoints inside async
        handlers only; cancellation propagates (no decision is made).

        Rules: `block: true` is terminal (lower priorities do not run); `block: false` is no
        decision; `params` last-defined wins, but once a plugin requested approval other
        plugins can no longer change them; the first `requireApproval` wins. A handler that
        raises, returns something invalid or times out blocks, with a reason naming it.
        Each handler sees the original params (its own deep copy).
        """
        regs = self._by_hook.get("before_tool_call", ())
        params = event.params
        if not regs:
            return BeforeToolCallDecision(False, None, params, None)
        ctx = ctx if ctx is not None else _default_ctx("before_tool_call", event)
        reason: str | None = None
        approval: dict[str, Any] | None = None
        approver: HookRegistration | None = None
        for reg in regs:
            own = msgspec.structs.replace(event, params=copy.deepcopy(event.params))
            call = await self._call(reg, own, ctx, BeforeToolCallResult)
            if isinstance(call, _Failed):
                why = f"plugin {reg.label!r} before_tool_call hook {call.describe()}"
                return BeforeToolCallDecision(True, why, params, approval)
            result: BeforeToolCallResult | None = call.value
            if result is None:
                continue
            frozen = approver is not None and not _same_plugin(approver, reg)
            if result.params is not None and not frozen:
                params = result.params
            if result.blockReason is not None:
                reason = result.blockReason
            if approval is None and result.requireApproval is not None:
                approval = _approval_dict(result.requireApproval, reg.plugin_id)
                approver = reg
                params = copy.deepcopy(params)
            if result.block is True:
                return BeforeToolCallDecision(True, reason, params, approval)
        return BeforeToolCallDecision(False, None, params, approval)

    async def run_before_install(
        self, event: BeforeInstallEvent, ctx: BeforeInstallContext | None = None
    ) -> BeforeInstallDecision:
        """Ask the plugins whether an install may proceed; same block rules as
        `run_before_tool_call` (terminal block, fail closed). Findings are concatenated."""
        regs = self._by_hook.get("before_install", ())
        if not regs:
            return BeforeInstallDecision(False, None)
        ctx = ctx if ctx is not None else _default_ctx("before_install", event)
        reason: str | None = None
        findings: list[InstallFinding] = []
        for reg in regs:
            call = await self._call(reg, event, ctx, BeforeInstallResult)
            if isinstance(call, _Failed):
                why = f"plugin {reg.label!r} before_install hook {call.describe()}"
                return BeforeInstallDecision(True, why, tuple(findings))
            result: BeforeInstallResult | None = call.value
            if result is None:
                continue
            findings.extend(result.findings or ())
            if result.blockReason is not None:
                reason = result.blockReason
            if result.block is True:
                return BeforeInstallDecision(True, reason, tuple(findings))
        return BeforeInstallDecision(False, None, tuple(findings))

    # -- modifying hooks (fail open) -----------------------------------------------------

    async def run_message_sending(
        self, event: MessageSendingEvent, ctx: MessageHookContext | None = None
    ) -> tuple[str, bool]:
        """Returns `(content, cancelled)`. `cancel: true` is terminal, `cancel: false` is no
        decision; rewritten `content` is what lower priorities see. Failures are skipped."""
        regs = self._by_hook.get("message_sending", ())
        content = event.content
        if not regs:
            return content, False
        ctx = ctx if ctx is not None else _default_ctx("message_sending", event)
        for reg in regs:
            current = (
                event
                if content == event.content
                else msgspec.structs.replace(event, content=content)
            )
            call = await self._call(reg, current, ctx, MessageSendingResult)
            if isinstance(call, _Failed) or call.value is None:
                continue
            result: MessageSendingResult = call.value
            if result.content is not None:
                content = result.content
            if result.cancel is True:
                return content, True
        return content, False

    async def run_before_model_resolve(
        self, event: BeforeModelResolveEvent, ctx: AgentHookContext | None = None
    ) -> tuple[str | None, str | None]:
        """Returns `(provider_override, model_override)`; the first defined of each wins."""
        provider: str | None = None
        model: str | None = None
        for result in await self._results(
            "before_model_resolve", event, ctx, BeforeModelResolveResult
        ):
            provider = provider if provider is not None else result.providerOverride
            model = model if model is not None else result.modelOverride
        return provider, model

    async def run_before_prompt_build(
        self, event: BeforePromptBuildEvent, ctx: AgentHookContext | None = None
    ) -> PromptBuildResult:
        """`systemPrompt`: first defined wins; context strings are concatenated in priority
        order, joined with a blank line."""
        merged = PromptBuildResult()
        for r in await self._results("before_prompt_build", event, ctx, BeforePromptBuildResult):
            merged = PromptBuildResult(
                system_prompt=(
                    merged.system_prompt if merged.system_prompt is not None else r.systemPrompt
                ),
                prepend_context=_join(merged.prepend_context, r.prependContext),
                prepend_system_context=_join(merged.prepend_system_context, r.prependSystemContext),
                append_system_context=_join(merged.append_system_context, r.appendSystemContext),
                append_context=_join(merged.append_context, r.appendContext),
            )
        return merged

    async def run_before_agent_start(
        self, event: BeforeAgentStartEvent, ctx: AgentHookContext | None = None
    ) -> AgentStartResult:
        """The legacy hook, merged by the before_model_resolve and before_prompt_build
        rules together."""
        m = AgentStartResult()
        for r in await self._results("before_agent_start", event, ctx, BeforeAgentStartResult):
            m = AgentStartResult(
                provider_override=(
                    m.provider_override if m.provider_override is not None else r.providerOverride
                ),
                model_override=m.model_override
                if m.model_override is not None
                else r.modelOverride,
                system_prompt=m.system_prompt if m.system_prompt is not None else r.systemPrompt,
                prepend_context=_join(m.prepend_context, r.prependContext),
                prepend_system_context=_join(m.prepend_system_context, r.prependSystemContext),
                append_system_context=_join(m.append_system_context, r.appendSystemContext),
                append_context=_join(m.append_context, r.appendContext),
            )
        return m

    async def _results(
        self, hook_name: str, event: Any, ctx: Any, result_type: type[_R]
    ) -> list[_R]:
        """Every handler's result in priority order, failures and `None`s left out."""
        regs = self._by_hook.get(hook_name, ())
        if not regs:
            return []
        ctx = ctx if ctx is not None else _default_ctx(hook_name, event)
        out: list[_R] = []
        for reg in regs:
            call = await self._call(reg, event, ctx, result_type)
            if isinstance(call, _Ok) and call.value is not None:
                out.append(call.value)
        return out

    async def run_before_agent_reply(
        self, event: BeforeAgentReplyEvent, ctx: AgentHookContext | None = None
    ) -> ReplyClaim | None:
        """The first handler answering `handled: true` claims the turn; the rest do not
        run. None: nobody claimed it."""
        ctx = ctx if ctx is not None else _default_ctx("before_agent_reply", event)
        for reg in self._by_hook.get("before_agent_reply", ()):
            call = await self._call(reg, event, ctx, BeforeAgentReplyResult)
            if isinstance(call, _Ok) and call.value is not None and call.value.handled:
                result: BeforeAgentReplyResult = call.value
                return ReplyClaim(reg.label, result.reply, result.reason)
        return None

    async def run_before_message_write(
        self, event: BeforeMessageWriteEvent, ctx: MessageWriteContext | None = None
    ) -> Message | None:
        """The message to write, or None when a handler blocked the write (terminal). Each
        handler sees the message as replaced by the ones before it."""
        message = event.message
        regs = self._by_hook.get("before_message_write", ())
        if not regs:
            return message
        ctx = ctx if ctx is not None else _default_ctx("before_message_write", event)
        for reg in regs:
            current = (
                event
                if message is event.message
                else msgspec.structs.replace(event, message=message)
            )
            call = await self._call(reg, current, ctx, BeforeMessageWriteResult)
            if isinstance(call, _Failed) or call.value is None:
                continue
            result: BeforeMessageWriteResult = call.value
            if result.block is True:
                return None
            if result.message is not None:
                message = result.message
        return message

    def run_tool_result_persist(
        self, event: ToolResultPersistEvent, ctx: ToolResultPersistContext | None = None
    ) -> Message:
        """Synchronous (not a checkpoint): each handler may replace the tool result message
        that is persisted; the next one sees the replacement. A handler returning an
        awaitable is a mistake: it is closed unawaited, logged and ignored."""
        message = event.message
        regs = self._by_hook.get("tool_result_persist", ())
        if not regs:
            return message
        ctx = ctx if ctx is not None else _default_ctx("tool_result_persist", event)
        for reg in regs:
            current = (
                event
                if message is event.message
                else msgspec.structs.replace(event, message=message)
            )
            try:
                raw = reg.handler(current, ctx) if reg.takes_ctx else reg.handler(current)
                if inspect.isawaitable(raw):
                    close = getattr(raw, "close", None)
                    if close is not None:
                        close()
                    raise TypeError("returned an awaitable; this hook is synchronous")
                result = _normalise(raw, ToolResultPersistResult)
            except Exception as exc:
                self._failed(reg, exc)
                continue
            if result is not None and result.message is not None:
                message = result.message
        return message

    # -- observing hooks -----------------------------------------------------------------

    async def fire(self, hook_name: str, event: Any, ctx: Any = None) -> None:
        """Run an observing hook's handlers concurrently and wait for them all (in a nursery
        when there is more than one).

        Each handler is bounded by its hook's timeout; errors and timeouts are logged and
        swallowed. Cancelling the caller cancels the handlers.

        Raises:
            ValueError: `hook_name` is not an observing hook.
            TypeError: `event` is not that hook's event type.
        """
        expected = EVENT_TYPES.get(hook_name)
        if expected is None:
            raise ValueError(f"{hook_name!r} is not an observing hook")
        if not isinstance(event, expected):
            raise TypeError(f"{hook_name} takes {expected.__name__}, got {type(event).__name__}")
        regs = self._by_hook.get(hook_name, ())
        if not regs:
            return
        ctx = ctx if ctx is not None else _default_ctx(hook_name, event)
        if len(regs) == 1:
            await self._call(regs[0], event, ctx, None)
            return
        async with trio.open_nursery() as nursery:
            for reg in regs:
                nursery.start_soon(
                    self._observe, reg, event, ctx, name=f"hook {hook_name} {reg.label}"
                )

    async def _observe(self, reg: HookRegistration, event: Any, ctx: Any) -> None:
        await self._call(reg, event, ctx, None)
