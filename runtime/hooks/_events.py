"""The plugin hooks' names, timeouts, events, results and contexts (OpenClaw's contracts,
notes §6): every event and result is a frozen msgspec `Struct` with OpenClaw's camelCase field
names, which plugins receive and return (`runtime.plugin_sdk` re-exports them).

Which hook takes which event, and how the results of several handlers combine, is
`_registry.HookRegistry`'s business. Nothing here does I/O or raises beyond msgspec's own
validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, get_args

import msgspec

from ..llm._types import AssistantMessage, Message

__all__ = [
    "DEFAULT_HOOK_TIMEOUTS",
    "EVENT_TYPES",
    "HOOK_NAMES",
    "MODIFYING_HOOKS",
    "OBSERVING_HOOKS",
    "AfterCompactionEvent",
    "AfterToolCallEvent",
    "AgentEndEvent",
    "AgentHookContext",
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
    "HookName",
    "HookUsage",
    "InstallFinding",
    "LlmInputEvent",
    "LlmOutputEvent",
    "MessageHookContext",
    "MessageReceivedEvent",
    "MessageSendingEvent",
    "MessageSendingResult",
    "MessageSentEvent",
    "MessageWriteContext",
    "SessionEndEvent",
    "SessionHookContext",
    "SessionStartEvent",
    "ToolApprovalRequest",
    "ToolHookContext",
    "ToolResultPersistContext",
    "ToolResultPersistEvent",
    "ToolResultPersistResult",
]

ModifyingHookName = Literal[
    "before_model_resolve",
    "before_prompt_build",
    "before_agent_start",
    "before_agent_reply",
    "before_tool_call",
    "before_install",
    "message_sending",
    "tool_result_persist",
    "before_message_write",
]
ObservingHookName = Literal[
    "agent_end",
    "llm_input",
    "llm_output",
    "after_tool_call",
    "message_received",
    "message_sent",
    "before_compaction",
    "after_compaction",
    "session_start",
    "session_end",
    "gateway_start",
    "gateway_stop",
]
HookName = ModifyingHookName | ObservingHookName

MODIFYING_HOOKS: Final[frozenset[str]] = frozenset(get_args(ModifyingHookName))
OBSERVING_HOOKS: Final[frozenset[str]] = frozenset(get_args(ObservingHookName))
HOOK_NAMES: Final[frozenset[str]] = MODIFYING_HOOKS | OBSERVING_HOOKS

#: Seconds one handler may take. Observing hooks not listed get 15 s; modifying hooks not
#: listed get no timeout of their own (the run's timeout bounds them).
DEFAULT_HOOK_TIMEOUTS: Final[Mapping[str, float]] = MappingProxyType(
    {
        "before_tool_call": 15.0,
        "before_install": 15.0,
        "before_prompt_build": 15.0,
        "message_sending": 15.0,
        **{name: 15.0 for name in OBSERVING_HOOKS},
        "agent_end": 30.0,
        "gateway_stop": 5.0,
    }
)


# --- contexts ----------------------------------------------------------------------------


class _Data(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class AgentHookContext(_Data, frozen=True):
    """Context of the agent hooks (model/prompt/reply, llm_*, agent_end, compaction)."""

    runId: str | None = None
    agentId: str | None = None
    sessionKey: str | None = None
    sessionId: str | None = None
    workspaceDir: str | None = None
    modelProviderId: str | None = None
    modelId: str | None = None
    messageProvider: str | None = None
    trigger: str | None = None
    channelId: str | None = None


class ToolHookContext(_Data, frozen=True):
    """Context of before_tool_call / after_tool_call."""

    toolName: str
    agentId: str | None = None
    sessionKey: str | None = None
    sessionId: str | None = None
    runId: str | None = None
    toolCallId: str | None = None


class ToolResultPersistContext(_Data, frozen=True):
    agentId: str | None = None
    sessionKey: str | None = None
    toolName: str | None = None
    toolCallId: str | None = None


class MessageWriteContext(_Data, frozen=True):
    agentId: str | None = None
    sessionKey: str | None = None


class MessageHookContext(_Data, frozen=True):
    """Context of the message_* hooks."""

    channelId: str | None = None
    accountId: str | None = None
    conversationId: str | None = None


class SessionHookContext(_Data, frozen=True):
    sessionId: str
    agentId: str | None = None
    sessionKey: str | None = None


class GatewayHookContext(_Data, frozen=True):
    port: int | None = None
    workspaceDir: str | None = None


class BeforeInstallContext(_Data, frozen=True):
    targetType: Literal["skill", "plugin"]
    requestKind: str
    origin: str | None = None


# --- agent hooks -------------------------------------------------------------------------


class BeforeModelResolveEvent(_Data, frozen=True):
    prompt: str


class BeforeModelResolveResult(_Data, frozen=True):
    modelOverride: str | None = None
    providerOverride: str | None = None


class BeforePromptBuildEvent(_Data, frozen=True):
    prompt: str
    messages: list[Message] = []


class BeforePromptBuildResult(_Data, frozen=True):
    systemPrompt: str | None = None
    prependContext: str | None = None
    prependSystemContext: str | None = None
    appendSystemContext: str | None = None
    appendContext: str | None = None


class BeforeAgentStartEvent(_Data, frozen=True):
    """The legacy hook: before_model_resolve and before_prompt_build in one."""

    prompt: str
    messages: list[Message] | None = None


class BeforeAgentStartResult(_Data, frozen=True):
    modelOverride: str | None = None
    providerOverride: str | None = None
    systemPrompt: str | None = None
    prependContext: str | None = None
    prependSystemContext: str | None = None
    appendSystemContext: str | None = None
    appendContext: str | None = None


class BeforeAgentReplyEvent(_Data, frozen=True):
    cleanedBody: str


class BeforeAgentReplyResult(_Data, frozen=True):
    """`handled: true` claims the turn: `reply` is sent instead of a model reply (none =
    silence)."""

    handled: bool = False
    reply: dict[str, Any] | None = None
    reason: str | None = None


class HookUsage(_Data, frozen=True):
    input: int | None = None
    output: int | None = None
    cacheRead: int | None = None
    cacheWrite: int | None = None
    total: int | None = None


class LlmInputEvent(_Data, frozen=True):
    runId: str
    sessionId: str
    provider: str
    model: str
    prompt: str
    historyMessages: list[Message]
    imagesCount: int = 0
    systemPrompt: str | None = None


class LlmOutputEvent(_Data, frozen=True):
    runId: str
    sessionId: str
    provider: str
    model: str
    assistantTexts: list[str]
    lastAssistant: AssistantMessage | None = None
    usage: HookUsage | None = None


class AgentEndEvent(_Data, frozen=True):
    messages: list[Message]
    success: bool
    error: str | None = None
    durationMs: float | None = None


class BeforeCompactionEvent(_Data, frozen=True):
    messageCount: int
    compactingCount: int | None = None
    tokenCount: int | None = None
    messages: list[Message] | None = None
    sessionFile: str | None = None


class AfterCompactionEvent(_Data, frozen=True):
    messageCount: int
    compactedCount: int
    tokenCount: int | None = None
    sessionFile: str | None = None


# --- tool hooks --------------------------------------------------------------------------


class BeforeToolCallEvent(_Data, frozen=True):
    toolName: str
    params: dict[str, Any]
    runId: str | None = None
    toolCallId: str | None = None


class ToolApprovalRequest(_Data, frozen=True):
    """Ask an operator before the tool runs (`runtime.loop._approval`). `allowedDecisions`
    limits what the operator may answer (`deny` is always offered); `scope` is display-only
    (OpenClaw's `ApprovalScope`); `timeoutReason` replaces the tool error of an approval that
    expired; `timeoutBehavior` is deprecated and ignored (an expired approval never lets the
    call run). `onResolution` is an optional callable given how it ended: allow-once,
    allow-always, deny, timeout or cancelled."""

    title: str
    description: str
    severity: Literal["info", "warning", "critical"] | None = None
    timeoutMs: int | None = None
    timeoutBehavior: Literal["allow", "deny"] | None = None
    timeoutReason: str | None = None
    allowedDecisions: list[Literal["allow-once", "allow-always", "deny"]] | None = None
    scope: dict[str, Any] | None = None
    pluginId: str | None = None
    onResolution: Any = None


class BeforeToolCallResult(_Data, frozen=True):
    params: dict[str, Any] | None = None
    block: bool | None = None
    blockReason: str | None = None
    requireApproval: ToolApprovalRequest | None = None


class AfterToolCallEvent(_Data, frozen=True):
    toolName: str
    params: dict[str, Any]
    runId: str | None = None
    toolCallId: str | None = None
    result: Any = None
    error: str | None = None
    durationMs: float | None = None


class ToolResultPersistEvent(_Data, frozen=True):
    message: Message
    toolName: str | None = None
    toolCallId: str | None = None
    isSynthetic: bool | None = None


class ToolResultPersistResult(_Data, frozen=True):
    message: Message | None = None


class BeforeMessageWriteEvent(_Data, frozen=True):
    message: Message
    sessionKey: str | None = None
    agentId: str | None = None


class BeforeMessageWriteResult(_Data, frozen=True):
    block: bool | None = None
    message: Message | None = None


# --- install hook ------------------------------------------------------------------------


class InstallFinding(_Data, frozen=True):
    ruleId: str
    severity: Literal["info", "warn", "critical"]
    file: str
    line: int
    message: str


class BeforeInstallRequest(_Data, frozen=True):
    kind: Literal[
        "skill-install", "plugin-dir", "plugin-archive", "plugin-file", "plugin-npm", "plugin-git"
    ]
    mode: Literal["install", "update"]
    requestedSpecifier: str | None = None


class BuiltinScan(_Data, frozen=True):
    status: Literal["ok", "error"]
    scannedFiles: int = 0
    critical: int = 0
    warn: int = 0
    info: int = 0
    findings: list[InstallFinding] = []
    error: str | None = None


class BeforeInstallEvent(_Data, frozen=True):
    targetType: Literal["skill", "plugin"]
    targetName: str
    sourcePath: str
    sourcePathKind: Literal["file", "directory"]
    request: BeforeInstallRequest
    builtinScan: BuiltinScan
    origin: str | None = None
    skill: dict[str, Any] | None = None
    plugin: dict[str, Any] | None = None


class BeforeInstallResult(_Data, frozen=True):
    findings: list[InstallFinding] | None = None
    block: bool | None = None
    blockReason: str | None = None


# --- message hooks -----------------------------------------------------------------------


class MessageReceivedEvent(_Data, frozen=True, rename={"from_": "from"}):
    from_: str
    content: str
    timestamp: int | None = None
    metadata: dict[str, Any] | None = None


class MessageSendingEvent(_Data, frozen=True):
    to: str
    content: str
    metadata: dict[str, Any] | None = None


class MessageSendingResult(_Data, frozen=True):
    content: str | None = None
    cancel: bool | None = None


class MessageSentEvent(_Data, frozen=True):
    to: str
    content: str
    success: bool
    error: str | None = None


# --- session and gateway hooks -----------------------------------------------------------


class SessionStartEvent(_Data, frozen=True):
    sessionId: str
    sessionKey: str | None = None
    resumedFrom: str | None = None


class SessionEndEvent(_Data, frozen=True):
    sessionId: str
    messageCount: int
    sessionKey: str | None = None
    durationMs: float | None = None
    reason: Literal[
        "new", "reset", "idle", "daily", "compaction", "deleted", "shutdown", "restart", "unknown"
    ] = "unknown"


class GatewayStartEvent(_Data, frozen=True):
    port: int


class GatewayStopEvent(_Data, frozen=True):
    reason: str | None = None


EVENT_TYPES: Final[Mapping[str, type[_Data]]] = MappingProxyType(
    {
        "agent_end": AgentEndEvent,
        "llm_input": LlmInputEvent,
        "llm_output": LlmOutputEvent,
        "after_tool_call": AfterToolCallEvent,
        "message_received": MessageReceivedEvent,
        "message_sent": MessageSentEvent,
        "before_compaction": BeforeCompactionEvent,
        "after_compaction": AfterCompactionEvent,
        "session_start": SessionStartEvent,
        "session_end": SessionEndEvent,
        "gateway_start": GatewayStartEvent,
        "gateway_stop": GatewayStopEvent,
    }
)
"""The event type of each observing hook (`HookRegistry.fire` checks it)."""
