"""The plugin SDK: the one module a clawlane plugin imports.

A plugin is a Python module (or package) with a `register` function::

    from runtime.plugin_sdk import BeforeToolCallEvent, PluginApi

    PLUGIN_ID = "no-rm"  # optional; defaults to the module's name

    def register(api: PluginApi) -> None:
        def guard(event: BeforeToolCallEvent, ctx: object) -> dict[str, object] | None:
            if event.toolName == "exec" and "rm -rf" in str(event.params.get("command")):
                return {"block": True, "blockReason": "no rm -rf"}
            return None

        api.on("before_tool_call", guard, priority=10)

`register` may be `async`. Handlers may be sync or async, take `(event)` or `(event, ctx)`,
and return `None`, the hook's result Struct (`BeforeToolCallResult(...)`) or a dict with the
same (camelCase) keys. Events, results and contexts keep OpenClaw's field names; which hook
takes which event, and how results of several plugins combine, is described in
`runtime.hooks._registry` (OpenClaw's rules: priority descending, `block`/`cancel` true terminal,
false a no-op; `before_tool_call` and `before_install` fail closed).

Tools registered with `api.register_tool` follow `Tool` (name, description, params Struct
type, mutating, `async run(args, ctx)`); harnesses are described by `HarnessSpec`.
"""

from __future__ import annotations

from .hooks._events import HOOK_NAMES as HOOK_NAMES
from .hooks._events import MODIFYING_HOOKS as MODIFYING_HOOKS
from .hooks._events import OBSERVING_HOOKS as OBSERVING_HOOKS
from .hooks._events import AfterCompactionEvent as AfterCompactionEvent
from .hooks._events import AfterToolCallEvent as AfterToolCallEvent
from .hooks._events import AgentEndEvent as AgentEndEvent
from .hooks._events import AgentHookContext as AgentHookContext
from .hooks._events import BeforeAgentReplyEvent as BeforeAgentReplyEvent
from .hooks._events import BeforeAgentReplyResult as BeforeAgentReplyResult
from .hooks._events import BeforeAgentStartEvent as BeforeAgentStartEvent
from .hooks._events import BeforeAgentStartResult as BeforeAgentStartResult
from .hooks._events import BeforeCompactionEvent as BeforeCompactionEvent
from .hooks._events import BeforeInstallContext as BeforeInstallContext
from .hooks._events import BeforeInstallEvent as BeforeInstallEvent
from .hooks._events import BeforeInstallRequest as BeforeInstallRequest
from .hooks._events import BeforeInstallResult as BeforeInstallResult
from .hooks._events import BeforeMessageWriteEvent as BeforeMessageWriteEvent
from .hooks._events import BeforeMessageWriteResult as BeforeMessageWriteResult
from .hooks._events import BeforeModelResolveEvent as BeforeModelResolveEvent
from .hooks._events import BeforeModelResolveResult as BeforeModelResolveResult
from .hooks._events import BeforePromptBuildEvent as BeforePromptBuildEvent
from .hooks._events import BeforePromptBuildResult as BeforePromptBuildResult
from .hooks._events import BeforeToolCallEvent as BeforeToolCallEvent
from .hooks._events import BeforeToolCallResult as BeforeToolCallResult
from .hooks._events import BuiltinScan as BuiltinScan
from .hooks._events import GatewayHookContext as GatewayHookContext
from .hooks._events import GatewayStartEvent as GatewayStartEvent
from .hooks._events import GatewayStopEvent as GatewayStopEvent
from .hooks._events import HookName as HookName
from .hooks._events import HookUsage as HookUsage
from .hooks._events import InstallFinding as InstallFinding
from .hooks._events import LlmInputEvent as LlmInputEvent
from .hooks._events import LlmOutputEvent as LlmOutputEvent
from .hooks._events import MessageHookContext as MessageHookContext
from .hooks._events import MessageReceivedEvent as MessageReceivedEvent
from .hooks._events import MessageSendingEvent as MessageSendingEvent
from .hooks._events import MessageSendingResult as MessageSendingResult
from .hooks._events import MessageSentEvent as MessageSentEvent
from .hooks._events import MessageWriteContext as MessageWriteContext
from .hooks._events import SessionEndEvent as SessionEndEvent
from .hooks._events import SessionHookContext as SessionHookContext
from .hooks._events import SessionStartEvent as SessionStartEvent
from .hooks._events import ToolApprovalRequest as ToolApprovalRequest
from .hooks._events import ToolHookContext as ToolHookContext
from .hooks._events import ToolResultPersistContext as ToolResultPersistContext
from .hooks._events import ToolResultPersistEvent as ToolResultPersistEvent
from .hooks._events import ToolResultPersistResult as ToolResultPersistResult
from .llm._types import AssistantMessage as AssistantMessage
from .llm._types import ImageContent as ImageContent
from .llm._types import Message as Message
from .llm._types import ModelDelta as ModelDelta
from .llm._types import ModelRequest as ModelRequest
from .llm._types import StopDelta as StopDelta
from .llm._types import TextContent as TextContent
from .llm._types import TextDelta as TextDelta
from .llm._types import ThinkingContent as ThinkingContent
from .llm._types import ToolCallContent as ToolCallContent
from .llm._types import ToolCallEnd as ToolCallEnd
from .llm._types import ToolResultMessage as ToolResultMessage
from .llm._types import UserMessage as UserMessage
from .loop._agent import AgentRunInput as AgentRunInput
from .loop._agent import RunProgress as RunProgress
from .loop._agent import run_agent as run_agent
from .model._harness import ProviderRoute as ProviderRoute
from .model._plugins import HarnessSpec as HarnessSpec
from .model._plugins import PluginApi as PluginApi
from .model._plugins import PluginTool as PluginTool
from .tools._tool import Tool as Tool
from .tools._tool import ToolContext as ToolContext
from .tools._tool import ToolResult as ToolResult
from .tools._tool import text_result as text_result

__all__ = [
    "HOOK_NAMES",
    "MODIFYING_HOOKS",
    "OBSERVING_HOOKS",
    "AfterCompactionEvent",
    "AfterToolCallEvent",
    "AgentEndEvent",
    "AgentHookContext",
    "AgentRunInput",
    "AssistantMessage",
    "BeforeAgentReplyEvent",
    "BeforeAgentReplyResult",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BeforeCompactionEvent",
    "BeforeInstallContext",
    "BeforeInstallEvent",
    "BeforeInstallRequest",
    "BeforeInstallResult",
    "BeforeMessageWriteEvent",
    "BeforeMessageWriteResult",
    "BeforeModelResolveEvent",
    "BeforeModelResolveResult",
    "BeforePromptBuildEvent",
    "BeforePromptBuildResult",
    "BeforeToolCallEvent",
    "BeforeToolCallResult",
    "BuiltinScan",
    "GatewayHookContext",
    "GatewayStartEvent",
    "GatewayStopEvent",
    "HarnessSpec",
    "HookName",
    "HookUsage",
    "ImageContent",
    "InstallFinding",
    "LlmInputEvent",
    "LlmOutputEvent",
    "Message",
    "MessageHookContext",
    "MessageReceivedEvent",
    "MessageSendingEvent",
    "MessageSendingResult",
    "MessageSentEvent",
    "MessageWriteContext",
    "ModelDelta",
    "ModelRequest",
    "PluginApi",
    "PluginTool",
    "ProviderRoute",
    "RunProgress",
    "SessionEndEvent",
    "SessionHookContext",
    "SessionStartEvent",
    "StopDelta",
    "TextContent",
    "TextDelta",
    "ThinkingContent",
    "Tool",
    "ToolApprovalRequest",
    "ToolCallContent",
    "ToolCallEnd",
    "ToolContext",
    "ToolHookContext",
    "ToolResult",
    "ToolResultMessage",
    "ToolResultPersistContext",
    "ToolResultPersistEvent",
    "ToolResultPersistResult",
    "UserMessage",
    "run_agent",
    "text_result",
]
