"""OpenClaw's session tools: `sessions_list`, `sessions_history`, `sessions_send`,
`session_status`, `agents_list` and `sessions_spawn`, with its names and parameter schemas.

The sessions live above the runtime (the gateway's supervisor owns them), so each tool is a
shell over a `SessionsHost` the host passes in (`session_tools(host)`), the way `message`
gets its `send`: the host answers with the result's payload (OpenClaw's `jsonResult`: the
payload as indented JSON text, and as `details`). A payload whose `status` is `error`,
`forbidden` or `timeout` is an error result the model sees; so is a `ToolError` the host
raises (the message is the result's text, through `invoke_tool`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal, Protocol

import msgspec

from ._tool import Tool, ToolContext, ToolResult, text_result

__all__ = [
    "AgentsListParams",
    "SessionStatusParams",
    "SessionsHistoryParams",
    "SessionsHost",
    "SessionsListParams",
    "SessionsSendParams",
    "SessionsSpawnParams",
    "session_tools",
]

_ERROR_STATUSES: Final = frozenset({"error", "forbidden", "timeout"})

ListKind = Literal["main", "group", "cron", "hook", "node", "other"]


class _Params(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    pass


class SessionsListParams(_Params, frozen=True):
    """Filters of `sessions_list` (OpenClaw's names)."""

    kinds: list[ListKind] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None
    offset: Annotated[int, msgspec.Meta(ge=0)] | None = None
    activeMinutes: Annotated[int, msgspec.Meta(ge=1)] | None = None
    activeOnly: bool | None = None
    excludeSubagents: bool | None = None
    messageLimit: Annotated[int, msgspec.Meta(ge=0)] | None = None
    label: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    agentId: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    search: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    spawnedBy: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    includeLastMessage: bool | None = None


class SessionsHistoryParams(_Params, frozen=True):
    """`sessions_history`: one session's transcript, newest tail first bounded by `limit`."""

    sessionKey: Annotated[str, msgspec.Meta(min_length=1)]
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
    offset: (
        Annotated[
            int,
            msgspec.Meta(
                ge=0, description="Plain-pagination offset: messages skipped from the end."
            ),
        ]
        | None
    ) = None
    includeTools: bool | None = None


class SessionsSendParams(_Params, frozen=True):
    """`sessions_send`: run another session with `message`, waiting up to `timeoutSeconds`
    (default 30; 0: do not wait) for its reply."""

    message: str
    sessionKey: str | None = None
    label: Annotated[str, msgspec.Meta(min_length=1, max_length=512)] | None = None
    agentId: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    timeoutSeconds: Annotated[int, msgspec.Meta(ge=0)] | None = None
    watch: bool | None = None
    mode: Literal["notify", "steer", "followup", "resume"] | None = None


class SessionStatusParams(_Params, frozen=True):
    """`session_status`: the status of this session, or of `sessionKey`."""

    sessionKey: str | None = None
    model: str | None = None
    changesSince: Annotated[int, msgspec.Meta(ge=0)] | None = None


class AgentsListParams(_Params, frozen=True):
    """`agents_list` takes no arguments."""


class SessionsSpawnParams(_Params, frozen=True):
    """`sessions_spawn`: run `task` in a new subagent session; its result is announced back
    to this session when it ends."""

    task: str
    taskName: (
        Annotated[
            str, msgspec.Meta(description="Stable later-target alias; starts lowercase letter.")
        ]
        | None
    ) = None
    label: (
        Annotated[str, msgspec.Meta(description="Short task title shown in UI lists.")] | None
    ) = None
    runtime: Literal["subagent"] | None = None
    agentId: str | None = None
    model: str | None = None
    runTimeoutSeconds: (
        Annotated[int, msgspec.Meta(ge=0, description="Per-run timeout in seconds; 0 disables it.")]
        | None
    ) = None
    thinking: str | None = None
    mode: Literal["run"] | None = None
    cleanup: Literal["delete", "keep"] | None = None
    expectsCompletionMessage: (
        Annotated[
            bool, msgspec.Meta(description="false: no completion handoff when the child finishes.")
        ]
        | None
    ) = None
    context: Literal["isolated", "fork"] | None = None


class SessionsHost(Protocol):
    """What the session tools need from the host that owns the sessions (the gateway).

    Each method answers for one call in the run `ctx` describes, with OpenClaw's result
    payload; it may raise `ToolError` (the model sees the message). All but `agents` are
    checkpoints; cancelling the run cancels the call (a run it started goes on).
    """

    async def list_sessions(self, ctx: ToolContext, args: SessionsListParams) -> dict[str, Any]: ...

    async def history(self, ctx: ToolContext, args: SessionsHistoryParams) -> dict[str, Any]: ...

    async def send(self, ctx: ToolContext, args: SessionsSendParams) -> dict[str, Any]: ...

    async def status(self, ctx: ToolContext, args: SessionStatusParams) -> dict[str, Any]: ...

    def agents(self, ctx: ToolContext) -> dict[str, Any]: ...

    async def spawn(self, ctx: ToolContext, args: SessionsSpawnParams) -> dict[str, Any]: ...


def _result(payload: dict[str, Any]) -> ToolResult:
    is_error = payload.get("status") in _ERROR_STATUSES
    return text_result(json.dumps(payload, indent=2), is_error=is_error, details=payload)


class _SessionTool:
    mutating = False

    def __init__(self, host: SessionsHost) -> None:
        self.host = host


class SessionsListTool(_SessionTool):
    name = "sessions_list"
    description = (
        "List sessions on this gateway with optional filters (kinds, label, agentId, search, "
        "activeMinutes, spawnedBy) and paging (limit, offset); each row has its key, agent, "
        "kind, model, tokens, status and parent/child links."
    )
    params = SessionsListParams

    async def run(self, args: SessionsListParams, ctx: ToolContext) -> ToolResult:
        return _result(await self.host.list_sessions(ctx, args))


class SessionsHistoryTool(_SessionTool):
    name = "sessions_history"
    description = (
        "Read the transcript of a session (by its key), sanitized and bounded: tool results "
        "only with includeTools, long text truncated, credentials redacted."
    )
    params = SessionsHistoryParams

    async def run(self, args: SessionsHistoryParams, ctx: ToolContext) -> ToolResult:
        return _result(await self.host.history(ctx, args))


class SessionsSendTool(_SessionTool):
    name = "sessions_send"
    description = (
        "Run another existing session on this gateway with a message and wait up to "
        "timeoutSeconds (default 30; 0: fire-and-forget) for its reply, returned inline."
    )
    params = SessionsSendParams
    mutating = True

    async def run(self, args: SessionsSendParams, ctx: ToolContext) -> ToolResult:
        return _result(await self.host.send(ctx, args))


class SessionStatusTool(_SessionTool):
    name = "session_status"
    description = (
        "Show a /status-style card for this session (or sessionKey): model, tokens, context "
        "use and estimated cost."
    )
    params = SessionStatusParams

    async def run(self, args: SessionStatusParams, ctx: ToolContext) -> ToolResult:
        return _result(await self.host.status(ctx, args))


class AgentsListTool(_SessionTool):
    name = "agents_list"
    description = (
        "List the agent ids sessions_spawn may target from this session, with their models."
    )
    params = AgentsListParams

    async def run(self, args: AgentsListParams, ctx: ToolContext) -> ToolResult:
        return _result(self.host.agents(ctx))


class SessionsSpawnTool(_SessionTool):
    name = "sessions_spawn"
    description = (
        "Spawn an isolated subagent session that works on `task` in the background; returns "
        "at once with childSessionKey and runId, and the child's result is announced back to "
        "this session as a new message when it finishes."
    )
    params = SessionsSpawnParams
    mutating = True

    async def run(self, args: SessionsSpawnParams, ctx: ToolContext) -> ToolResult:
        return _result(await self.host.spawn(ctx, args))


def session_tools(host: SessionsHost) -> list[Tool]:
    """The session tools over `host`, in OpenClaw's catalog order."""
    return [
        SessionsListTool(host),
        SessionsHistoryTool(host),
        SessionsSendTool(host),
        SessionsSpawnTool(host),
        SessionStatusTool(host),
        AgentsListTool(host),
    ]
