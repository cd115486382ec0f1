"""Tool Search in a run: a `tool_call` runs its target as a call of its own, as OpenClaw's.

`route` is asked first by `RunTools.call` when the run's tools have a catalog
(`runtime.tools.ToolSurface`):

- `tool_call`: its own `before_tool_call` hooks (a block or an approval refused ends it
  there), then the target it names (`call_target`: by id or name, its input under `args` or
  flattened) runs through `RunTools.call` as a nested call, so the policy, the target's
  `before_tool_call` / `after_tool_call` hooks, approvals and `exec`'s policy apply to it as to
  a direct call. A client sees the target's own `tool` events, named for the real tool, with
  OpenClaw's nested call id (`tool_search_code:<parent id>:<name>:<n>`) and
  `parentToolCallId` (the `tool_call`'s id), between the `tool_call`'s `start` and `result`.
  The model reads OpenClaw's envelope: `{tool: {id, name, source}, result}` as JSON text, an
  error when the target's result is one; `details` keeps the hit and the result. The
  target's call is also kept for display (`ToolOutcome.nested`: the transcript writes it
  before the `tool_call`'s result as OpenClaw's nested tool activity; never for the model).
- a deferred tool called by its name: mode `directory` runs it as a direct call; mode
  `tools` refuses it with an error saying to use `tool_call` (OpenClaw's tools mode has no
  such function either).

Anything else: None, the call goes on as a direct one. `call_directly` runs a call that is
not the model's (`tools.invoke`) past all this: any permitted tool by its name.

The target's result reaches the model as it reaches a client (`sanitize_result`: text
bounded, images as placeholders). A checkpoint when it runs a tool; cancellation
propagates.
"""

from __future__ import annotations

import json
import re
import time
import weakref
from typing import Any, Protocol

import attrs
import msgspec

from ..hooks._events import (
    AfterToolCallEvent,
    ToolHookContext,
    ToolResultPersistEvent,
)
from ..hooks._registry import HookRegistry
from ..llm._types import TextContent, ToolCallContent, ToolResultMessage
from ..tools import (
    ToolCatalog,
    ToolError,
    ToolResult,
    call_target,
    normalize_tool_name,
    sanitize_result,
)
from ._agent import Emit, NestedCall, ToolOutcome, now_ms


class RunTools(Protocol):
    """What this needs of the run's tool runner (`_toolrunner.RunTools`)."""

    hooks: HookRegistry | None
    agent_id: str
    session_key: str
    session_id: str
    run_id: str

    async def call(self, call: ToolCallContent, emit: Emit) -> ToolOutcome: ...

    def _error(self, call: ToolCallContent, text: str) -> ToolOutcome: ...

    def hook_context(self, call: ToolCallContent) -> ToolHookContext: ...

    async def before_call(
        self, call: ToolCallContent, params: dict[str, Any], hook_ctx: ToolHookContext
    ) -> dict[str, Any] | ToolOutcome: ...


__all__ = ["call_directly", "route"]

_passing: weakref.WeakKeyDictionary[RunTools, set[str]] = weakref.WeakKeyDictionary()
"""The ids of the calls each runner runs past `route` (a nested call, an operator's): by
call, not by task context, so nothing the call starts (a subagent's run) inherits it."""
_ID_PART = re.compile(r"[^A-Za-z0-9_.:-]+")


async def route(
    runner: RunTools, catalog: ToolCatalog, call: ToolCallContent, emit: Emit
) -> ToolOutcome | None:
    """The outcome of `call` when Tool Search owns it, else None (see the module docstring)."""
    if call.id in _passing.get(runner, ()):
        return None
    if call.name == "tool_call":
        return await _tool_call(runner, catalog, call, emit)
    entry = catalog.deferred(normalize_tool_name(call.name))
    if entry is None or catalog.settings.mode == "directory":
        return None
    return runner._error(
        call,
        f"tool {call.name!r} is deferred: call it through tool_call with "
        f'{{"id": "{entry.id}", "args": {{...}}}}',
    )


async def call_directly(runner: RunTools, call: ToolCallContent, emit: Emit) -> ToolOutcome:
    """`runner.call` for a call that does not come from the model (an operator's
    `tools.invoke`): any permitted tool by its name, deferred or not, as OpenClaw invokes
    tools outside a model's surface. What the call asked to run once its result is kept
    runs as it returns (no run keeps it: its caller takes it). A checkpoint."""
    outcome = await _pass(runner, call, emit)
    for commit in outcome.kept:
        commit()
    return attrs.evolve(outcome, kept=())


async def _tool_call(
    runner: RunTools, catalog: ToolCatalog, call: ToolCallContent, emit: Emit
) -> ToolOutcome:
    hooks = runner.hooks
    hook_ctx = runner.hook_context(call)
    gated = await runner.before_call(call, dict(call.arguments), hook_ctx)
    if isinstance(gated, ToolOutcome):
        return gated
    params = gated
    try:
        entry, target_input = call_target(params, catalog)
    except ToolError as exc:
        return runner._error(call, str(exc))
    if not isinstance(target_input, dict):
        return runner._error(call, f"invalid arguments for {entry.name}: args must be an object")
    started, started_ms = time.monotonic(), now_ms()
    nested = _nested_call(runner, call, entry.name, target_input)
    outcome = await _run_nested(runner, call, nested, emit)
    activity = NestedCall(
        tool_call_id=nested.id,
        parent_tool_call_id=call.id,
        tool_name=entry.name,
        input=nested.arguments,
        result=outcome.result,
        is_error=outcome.message.isError,
        started_at=started_ms,
        ended_at=now_ms(),
    )
    shown_target = outcome.result
    is_error = outcome.message.isError
    envelope = {"tool": {"id": entry.id, "name": entry.name, "source": "openclaw"}}
    text = json.dumps({**envelope, "result": shown_target}, ensure_ascii=False, indent=2)
    details: dict[str, Any] = {"tool": entry.compact(), "result": shown_target}
    if is_error:
        details["status"] = "error"
    result = ToolResult(content=[TextContent(text)], is_error=is_error, details=details)
    shown = msgspec.to_builtins(sanitize_result(result))
    if hooks is not None and hooks.has("after_tool_call"):
        await hooks.fire(
            "after_tool_call",
            AfterToolCallEvent(
                toolName=call.name,
                params=params,
                runId=runner.run_id,
                toolCallId=call.id,
                result=shown,
                error="tool failed" if is_error else None,
                durationMs=(time.monotonic() - started) * 1000,
            ),
            hook_ctx,
        )
    message = ToolResultMessage(
        toolCallId=call.id,
        toolName=call.name,
        content=list(result.content),
        isError=is_error,
        timestamp=int(time.time() * 1000),
    )
    if hooks is not None and hooks.has("tool_result_persist"):
        persisted = hooks.run_tool_result_persist(
            ToolResultPersistEvent(message=message, toolName=call.name, toolCallId=call.id)
        )
        message = persisted if isinstance(persisted, ToolResultMessage) else message
    meta = f"tool_call {entry.name}"
    return ToolOutcome(
        message=message, result=shown, meta=meta, nested=(activity,), kept=outcome.kept
    )


async def _pass(runner: RunTools, call: ToolCallContent, emit: Emit) -> ToolOutcome:
    """`runner.call(call)` with `route` stepping aside for it."""
    passing = _passing.setdefault(runner, set())
    passing.add(call.id)
    try:
        return await runner.call(call, emit)
    finally:
        passing.discard(call.id)


def _nested_call(
    runner: RunTools, parent: ToolCallContent, name: str, arguments: dict[str, Any]
) -> ToolCallContent:
    """OpenClaw's id for a call made through Tool Search (numbered in the run)."""
    n = _sequence[runner] = _sequence.get(runner, 0) + 1
    part = _ID_PART.sub("_", parent.id.strip())[:120] or "call"
    return ToolCallContent(id=f"tool_search_code:{part}:{name}:{n}", name=name, arguments=arguments)


_sequence: weakref.WeakKeyDictionary[RunTools, int] = weakref.WeakKeyDictionary()
"""Each run's count of calls made through Tool Search."""


async def _run_nested(
    runner: RunTools, parent: ToolCallContent, nested: ToolCallContent, emit: Emit
) -> ToolOutcome:
    """The target's call through the runner (policy, hooks, approvals), its `tool` events
    carrying `parentToolCallId`."""

    def nested_emit(stream: str, data: dict[str, Any]) -> None:
        if stream == "tool" and data.get("toolCallId") == nested.id:
            data = {**data, "parentToolCallId": parent.id}
        emit(stream, data)

    nested_emit(
        "tool",
        {
            "phase": "start",
            "name": nested.name,
            "toolCallId": nested.id,
            "args": nested.arguments,
        },
    )
    outcome = await _pass(runner, nested, nested_emit)
    data: dict[str, Any] = {
        "phase": "result",
        "name": nested.name,
        "toolCallId": nested.id,
        "isError": outcome.message.isError,
        "result": outcome.result,
    }
    if outcome.meta is not None:
        data["meta"] = outcome.meta
    nested_emit("tool", data)
    return outcome
