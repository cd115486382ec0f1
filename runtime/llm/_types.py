"""The one small interface between the agent loop and a model provider.

A provider streams one model turn as typed deltas (`ModelDelta`). Messages use the pi-ai
shapes that OpenClaw persists in transcripts (`UserMessage`, `AssistantMessage`,
`ToolResultMessage`), so the same values go to providers, to the store and to clients.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol

import msgspec

from ..protocol import ClawlaneError

# --- message content (pi-ai) -------------------------------------------------------------


class TextContent(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    text: str


class ThinkingContent(msgspec.Struct, frozen=True, tag="thinking", tag_field="type"):
    thinking: str


class ImageContent(msgspec.Struct, frozen=True, tag="image", tag_field="type"):
    data: str
    mimeType: str


class ToolCallContent(msgspec.Struct, frozen=True, tag="toolCall", tag_field="type"):
    id: str
    name: str
    arguments: dict[str, Any]


UserContent = TextContent | ImageContent
AssistantContent = TextContent | ThinkingContent | ToolCallContent

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


class UsageCost(msgspec.Struct, frozen=True):
    """What a call cost in USD as its provider reported it (OpenClaw's `usage.cost`); all
    zero when it reported nothing (the usage reports then price the call themselves)."""

    input: float = 0.0
    output: float = 0.0
    cacheRead: float = 0.0
    cacheWrite: float = 0.0
    total: float = 0.0


class Usage(msgspec.Struct, frozen=True):
    input: int = 0
    output: int = 0
    cacheRead: int = 0
    cacheWrite: int = 0
    totalTokens: int = 0
    cost: UsageCost = UsageCost()


class InputProvenance(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where a user message came from when it is no person's (OpenClaw's input provenance):
    `kind` is `inter_session` for what another session or an internal tool routed here (a
    subagent's completion: `sourceTool` `subagent_announce`, `subagent_settle`),
    `internal_system` or `external_user`."""

    kind: str
    sourceSessionKey: str | None = None
    sourceChannel: str | None = None
    sourceTool: str | None = None


class UserMessage(msgspec.Struct, frozen=True, tag="user", tag_field="role", omit_defaults=True):
    content: str | list[UserContent]
    timestamp: int
    display: bool = True
    """False: kept for the model's context, shown by no history (OpenClaw's `display`)."""
    provenance: InputProvenance | None = None


class AssistantMessage(
    msgspec.Struct, frozen=True, tag="assistant", tag_field="role", omit_defaults=True
):
    content: list[AssistantContent]
    timestamp: int
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = Usage()
    stopReason: StopReason = "stop"
    errorMessage: str | None = None


class ToolResultMessage(
    msgspec.Struct, frozen=True, tag="toolResult", tag_field="role", omit_defaults=True
):
    toolCallId: str
    toolName: str
    content: list[UserContent]
    isError: bool
    timestamp: int


Message = UserMessage | AssistantMessage | ToolResultMessage


# --- a model turn ------------------------------------------------------------------------


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool offered to the model: its parameters as a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(msgspec.Struct, frozen=True):
    """Everything a provider needs for one turn.

    `model` is the provider's own model id (already alias-normalised); `params` are the
    per-model request parameters from config (temperature, maxTokens, ...).
    """

    model: str
    system_prompt: str
    messages: list[Message]
    tools: list[ToolSpec] = []
    params: dict[str, Any] = {}
    reasoning: bool = False
    known_tokens: tuple[int, int] | None = None
    """(n, tokens): the first n `messages` are `tokens` by `estimate_message_tokens`, as the
    caller counted them already (the session's context, kept as it grows): what sizes the
    request (the `local` model's usage) need not walk them again. Sent to no provider."""
    traceparent: str | None = None
    """The W3C `traceparent` of this request's model-call span (telemetry on): sent as the
    HTTP request's `traceparent` header, never in its body."""


# --- deltas ------------------------------------------------------------------------------


class TextDelta(msgspec.Struct, frozen=True, tag="text"):
    text: str


class ThinkingDelta(msgspec.Struct, frozen=True, tag="thinking"):
    text: str


class ToolCallStart(msgspec.Struct, frozen=True, tag="tool_call_start"):
    index: int
    id: str
    name: str


class ToolCallArgsDelta(msgspec.Struct, frozen=True, tag="tool_call_delta"):
    index: int
    delta: str


class ToolCallEnd(msgspec.Struct, frozen=True, tag="tool_call_end"):
    """A complete tool call: `arguments` is the whole JSON text the model produced."""

    index: int
    id: str
    name: str
    arguments: str


class UsageDelta(msgspec.Struct, frozen=True, tag="usage"):
    usage: Usage


class StopDelta(msgspec.Struct, frozen=True, tag="stop"):
    reason: StopReason


ModelDelta = (
    TextDelta
    | ThinkingDelta
    | ToolCallStart
    | ToolCallArgsDelta
    | ToolCallEnd
    | UsageDelta
    | StopDelta
)


# --- errors ------------------------------------------------------------------------------

ProviderErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "context_overflow",
    "timeout",
    "network",
    "malformed",
    "bad_request",
    "server",
    "unknown",
]

_RETRYABLE: frozenset[str] = frozenset({"rate_limit", "overloaded", "timeout", "network", "server"})


class ProviderError(ClawlaneError):
    """A model turn failed. `kind` classifies it; `retryable` says whether a retry may help.

    Raised by `ModelProvider.stream` (possibly after some deltas were yielded). Lower-level
    errors (httpx, JSON) are mapped to this with `raise ... from exc`.
    """

    def __init__(
        self,
        kind: ProviderErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ProviderErrorKind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in _RETRYABLE


class ModelProvider(Protocol):
    """One configured provider (one `models.providers.<id>` entry)."""

    id: str
    api: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        """Stream one model turn.

        An async generator: iterate it inside `contextlib.aclosing`. Cancellation closes the
        underlying request at once. Failures raise `ProviderError`.
        """
        ...

    async def aclose(self) -> None:
        """Release pooled connections. A checkpoint."""
        ...
