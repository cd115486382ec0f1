"""A well-behaved plugin: a guard hook, an observer, a tool and a harness."""

from __future__ import annotations

from typing import Any

import attrs
import msgspec

from runtime.plugin_sdk import (
    AgentEndEvent,
    BeforeToolCallEvent,
    HarnessSpec,
    PluginApi,
    ToolContext,
    ToolResult,
    text_result,
)

PLUGIN_ID = "good"

SEEN_AGENT_ENDS: list[AgentEndEvent] = []


class EchoArgs(msgspec.Struct, forbid_unknown_fields=True):
    text: str


@attrs.frozen
class EchoTool:
    name: str = "good_echo"
    description: str = "Echo the text back."
    params: type[msgspec.Struct] = EchoArgs
    mutating: bool = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return text_result(args.text)


def _guard(event: BeforeToolCallEvent, ctx: object) -> dict[str, Any] | None:
    if event.toolName == "exec":
        return {"block": True, "blockReason": "good plugin forbids exec"}
    return None


async def _on_agent_end(event: AgentEndEvent) -> None:
    SEEN_AGENT_ENDS.append(event)


async def _run_harness(*args: Any, **kwargs: Any) -> None:
    return None


def register(api: PluginApi) -> None:
    api.on("before_tool_call", _guard, priority=5)
    api.on("agent_end", _on_agent_end)
    api.register_tool(EchoTool())
    api.register_harness(
        HarnessSpec(
            id="good-harness",
            supports=lambda route: getattr(route, "provider", None) == "good",
            priority=1,
            run=_run_harness,
        )
    )
    api.logger.info("good plugin registered")
