"""OpenClaw's session tools: `sessions_list`, `sessions_history`, `sessions_send`,
`session_status`, `agents_list`, `sessions_spawn`, `agents_wait`, `sessions_yield` and
`subagents`, with its names and parameter schemas.

The sessions live above the runtime (the gateway's supervisor owns them), so each tool is a
shell over a `SessionsHost` the host passes in (`session_tools(host)`), the way `message`
gets its `send`: the host answers with the result's payload (OpenClaw's `jsonResult`: the
payload as indented JSON text, and as `details`). A payload whose `status` is `error`,
`forbidden` or `timeout` is an error result the model sees. A `ToolError` the host raises
is answered as OpenClaw's agent answers a tool that throws (`thrown_result`: `{status,
tool, error}`), as is a payload of just those three fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Sequence
from typing import Annotated, Any, Final, Literal, Protocol

import msgspec

from ._errors import ToolError
from ._policy import ToolPolicy
from ._tool import Tool, ToolContext, ToolResult, text_result, thrown_message, thrown_result

__all__ = [
    "AgentsListParams",
    "AgentsWaitParams",
    "SessionStatusParams",
    "SessionsHistoryParams",
    "SessionsHost",
    "SessionsListParams",
    "SessionsSendParams",
    "SessionsSpawnParams",
    "SessionsYieldParams",
    "SpawnAttachAs",
    "SpawnAttachment",
    "SubagentsParams",
    "session_tools",
    "subagent_denied",
    "subagent_policy",
]

SUBAGENT_DENIED: Final = frozenset(
    {
        "gateway",
        "agents_list",
        "openclaw",
        "session_status",
        "progress_card",
        "automations",
        "message",
        "sessions_send",
        "conversations_list",
        "conversations_send",
        "conversations_turn",
    }
)
"""The tools OpenClaw never offers a subagent session, whatever its depth."""
LEAF_DENIED: Final = SUBAGENT_DENIED | {
    "subagents",
    "sessions_list",
    "sessions_history",
    "sessions_search",
    "sessions_spawn",
}
"""... and those a leaf subagent (at `maxSpawnDepth`) is not offered either."""

_ERROR_STATUSES: Final = frozenset(
    {
        "error",
        "failed",
        "failure",
        "timeout",
        "timed_out",
        "blocked",
        "denied",
        "forbidden",
        "unavailable",
        "approval-unavailable",
        "disabled",
        "aborted",
        "cancelled",
        "canceled",
        "killed",
        "invalid",
    }
)
"""The statuses OpenClaw's agent counts as an error result (`isToolResultError`)."""
_TASK_NAME: Final = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_RESERVED_TASK_NAMES: Final = frozenset({"all", "last"})

ListKind = Literal["main", "group", "cron", "hook", "node", "other"]


class _Params(msgspec.Struct, frozen=True):
    """OpenClaw 2026.9.6's session tool parameters: none of its schemas forbids other
    fields, so a field clawlane does not know is ignored, as OpenClaw's validation ignores it."""


class SessionsListParams(_Params, frozen=True):
    """Filters of `sessions_list` (OpenClaw's names)."""

    kinds: list[ListKind] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None
    offset: Annotated[int, msgspec.Meta(ge=0, le=9007199254740991)] | None = None
    activeMinutes: Annotated[int, msgspec.Meta(ge=1)] | None = None
    activeOnly: bool | None = None
    excludeSubagents: bool | None = None
    relationship: (
        Annotated[
            Literal["owned", "created", "involving"],
            msgspec.Meta(
                description="Relation to the authenticated requesting user; unavailable "
                "without a trusted user identity."
            ),
        ]
        | None
    ) = None
    ownerId: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    creatorId: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    projectId: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    workspaceDir: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    group: str | None = None
    pinned: bool | None = None
    messageLimit: Annotated[int, msgspec.Meta(ge=0)] | None = None
    label: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    agentId: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    search: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    spawnedBy: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    archived: (
        bool
        | Annotated[
            Literal["all"], msgspec.Meta(extra_json_schema={"type": "string", "const": "all"})
        ]
        | None
    ) = None
    includeDerivedTitles: bool | None = None
    includeLastMessage: bool | None = None


class SessionsHistoryParams(_Params, frozen=True):
    """`sessions_history`: one session's transcript, newest tail first bounded by `limit`."""

    sessionKey: Annotated[str, msgspec.Meta(min_length=1)]
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
    offset: (
        Annotated[
            int,
            msgspec.Meta(
                ge=0,
                description="Plain-pagination offset. Ignored when messageId is set; limit "
                "still bounds anchored history.",
            ),
        ]
        | None
    ) = None
    messageId: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                description="Return history around this message id. Ignores offset; limit "
                "bounds the window.",
            ),
        ]
        | None
    ) = None
    sessionId: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                description="Transcript session id that owns messageId. Requires messageId; "
                "omit for the latest tail.",
            ),
        ]
        | None
    ) = None
    includeTools: bool | None = None


_SEND_MODES: Final = ("notify", "steer", "followup", "resume")


class SessionsSendParams(_Params, frozen=True, kw_only=True):
    """`sessions_send`: run another session with `message`, waiting up to `timeoutSeconds`
    (default 30; 0: do not wait) for its reply."""

    sessionKey: str | None = None
    label: Annotated[str, msgspec.Meta(min_length=1, max_length=512)] | None = None
    agentId: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    message: str
    timeoutSeconds: Annotated[int, msgspec.Meta(ge=0)] | None = None
    watch: bool | None = None
    mode: (
        Annotated[
            Literal["notify", "steer", "followup", "resume"],
            msgspec.Meta(
                extra_json_schema={"anyOf": [{"type": "string", "const": m} for m in _SEND_MODES]}
            ),
        ]
        | None
    ) = None


class SessionStatusParams(_Params, frozen=True):
    """`session_status`: the status of this session, or of `sessionKey`."""

    sessionKey: str | None = None
    model: str | None = None
    changesSince: Annotated[int, msgspec.Meta(ge=0)] | None = None


class AgentsListParams(_Params, frozen=True):
    """`agents_list` takes no arguments."""


class SpawnAttachment(_Params, frozen=True):
    """One inline file of `sessions_spawn`'s `attachments`: `content` as UTF-8 text, or
    base64 with `encoding: "base64"`."""

    name: str
    content: str
    encoding: Literal["utf8", "base64"] | None = None
    mimeType: str | None = None


class SpawnAttachAs(_Params, frozen=True):
    """`sessions_spawn`'s `attachAs`: where the child is asked to think of its attachments
    as mounted (a hint in its system prompt)."""

    mountPath: str | None = None


class SessionsSpawnParams(_Params, frozen=True):
    """`sessions_spawn`: run `task` in a new subagent session; its result is announced back
    to this session when it ends."""

    task: str
    taskName: (
        Annotated[
            str,
            msgspec.Meta(
                description="Stable later-target alias; starts lowercase letter; then "
                "lowercase/digit/_/-."
            ),
        ]
        | None
    ) = None
    label: (
        Annotated[
            str,
            msgspec.Meta(
                description="Short task title shown in UI lists; name the work, not the agent."
            ),
        ]
        | None
    ) = None
    runtime: Literal["subagent"] | None = None
    agentId: str | None = None
    model: str | None = None
    runTimeoutSeconds: (
        Annotated[
            int,
            msgspec.Meta(
                ge=0,
                description="Per-run timeout in seconds; overrides the configured subagent "
                "default. Zero disables the timeout.",
            ),
        ]
        | None
    ) = None
    thinking: str | None = None
    cwd: (
        Annotated[
            str,
            msgspec.Meta(
                description="Child working directory. Visible paths outside configured agent "
                "workspaces require operator.admin. Mutually exclusive with "
                "projectId/projectGitUrl. With no source selector and worktree=true: inherit "
                "the same-agent parent managed repository; otherwise use the target agent "
                "workspace."
            ),
        ]
        | None
    ) = None
    mode: Literal["run"] | None = None
    cleanup: Literal["delete", "keep"] | None = None
    expectsCompletionMessage: (
        Annotated[
            bool,
            msgspec.Meta(
                description="false: fire-and-forget; requester gets no completion handoff when "
                "the child finishes."
            ),
        ]
        | None
    ) = None
    completionTarget: (
        Annotated[
            Literal["parent"],
            msgspec.Meta(
                description="parent: return results in a private requester turn; no automatic "
                "channel delivery. Native hidden run only; unavailable with ACP, collect, "
                "visible, thread, session mode, or expectsCompletionMessage=false."
            ),
        ]
        | None
    ) = None
    context: (
        Annotated[
            Literal["isolated", "fork"],
            msgspec.Meta(
                description='Native: explicit context="isolated" starts clean; context="fork" '
                "copies requester transcript and requires the same agent. Omitted context is "
                "isolated."
            ),
        ]
        | None
    ) = None
    lightContext: (
        Annotated[
            bool,
            msgspec.Meta(
                description="Light bootstrap; subagent only; unavailable with visible=true."
            ),
        ]
        | None
    ) = None
    attachments: (
        Annotated[
            list[SpawnAttachment],
            msgspec.Meta(
                max_length=50,
                description="Inline snapshots; visible=true accepts only an empty array.",
            ),
        ]
        | None
    ) = None
    attachAs: Annotated[
        SpawnAttachAs | None,
        msgspec.Meta(
            description="Attachment mount hint; visible=true accepts only an omitted or blank "
            "mountPath."
        ),
    ] = None


class SubagentsParams(_Params, frozen=True):
    """`subagents`: `list` this session tree's subagent runs (the default), `wait` for
    `taskIds` (at most `timeoutSeconds`, 60), or `cancel` `taskId`."""

    action: Literal["list", "wait", "cancel"] | None = None
    recentMinutes: Annotated[int, msgspec.Meta(ge=1)] | None = None
    taskId: Annotated[str, msgspec.Meta(description="Task id")] | None = None
    taskIds: (
        Annotated[
            list[Annotated[str, msgspec.Meta(min_length=1)]],
            msgspec.Meta(min_length=1, max_length=32),
        ]
        | None
    ) = None
    timeoutSeconds: Annotated[int, msgspec.Meta(ge=0, le=60)] | None = None


class AgentsWaitParams(_Params, frozen=True):
    """`agents_wait`: wait for spawned runs (`ids`: their run ids) to finish."""

    ids: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1)]],
        msgspec.Meta(min_length=1, max_length=1000),
    ]
    timeoutSeconds: Annotated[float, msgspec.Meta(ge=0)] | None = None


class SessionsYieldParams(_Params, frozen=True):
    """`sessions_yield`: end this turn to receive the pending subagents' results."""

    waitFor: (
        Annotated[
            Literal["message"],
            msgspec.Meta(
                description="Explicitly pause an unfinished subagent until an incoming "
                "continuation message. Does not schedule a message or submit the final result.",
                extra_json_schema={"type": "string", "const": "message"},
            ),
        ]
        | None
    ) = None
    message: (
        Annotated[
            str,
            msgspec.Meta(description="Private context for the resumed turn; not sent to the user."),
        ]
        | None
    ) = None
    acknowledgment: (
        Annotated[
            str,
            msgspec.Meta(
                description="Optional waiting reply for an otherwise-silent interactive parent turn."
            ),
        ]
        | None
    ) = None


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

    async def subagents(self, ctx: ToolContext, args: SubagentsParams) -> dict[str, Any]: ...

    async def agents_wait(self, ctx: ToolContext, args: AgentsWaitParams) -> dict[str, Any]: ...

    def yield_turn(self, ctx: ToolContext, args: SessionsYieldParams) -> dict[str, Any]: ...

    def subagent_role(self, session_key: str) -> str | None:
        """`orchestrator` or `leaf` for a subagent session (as its depth is now against
        `maxSpawnDepth`), None for any other session. Not a checkpoint."""
        ...


def subagent_denied(role: str | None) -> frozenset[str]:
    """The tools a session of subagent `role` is not offered (none for other sessions)."""
    if role is None:
        return frozenset()
    return LEAF_DENIED if role == "leaf" else SUBAGENT_DENIED


def subagent_policy(
    role: str | None,
    allow: Sequence[str] | None = None,
    also_allow: Sequence[str] | None = None,
    deny: Sequence[str] | None = None,
) -> ToolPolicy | None:
    """What a session of subagent `role` is offered besides its agent's policy: OpenClaw's
    fixed denials for the role and `tools.subagents.tools` (`allow`, `also_allow`, `deny`);
    None for other sessions. Raises `ToolPolicyError` for an unknown group."""
    if role is None:
        return None
    denied = [*(deny or ()), *sorted(subagent_denied(role))]
    return ToolPolicy.of(allow=allow, deny=denied, also_allow=also_allow)


def _result(payload: dict[str, Any]) -> ToolResult:
    message = thrown_message(payload)
    if message is not None:
        return thrown_result(str(payload["tool"]), message)
    text = json.dumps(payload, indent=2, ensure_ascii=False)  # as JSON.stringify
    return text_result(text, is_error=_is_error(payload), details=payload)


def _is_error(payload: dict[str, Any]) -> bool:
    """OpenClaw's `isToolResultError` over a payload: `ok`/`success` false, an error status
    not explicitly successful, `timedOut`, or an `error`."""
    ok, success = payload.get("ok"), payload.get("success")
    if ok is False or success is False:
        return True
    status = payload.get("status")
    status = status.strip().lower() if isinstance(status, str) else None
    if status in _ERROR_STATUSES and ok is not True and success is not True:
        return True
    return payload.get("timedOut") is True or bool(payload.get("error"))


class _SessionTool:
    mutating = False
    name: str

    def __init__(self, host: SessionsHost) -> None:
        self.host = host

    async def _answer(self, call: Awaitable[dict[str, Any]]) -> ToolResult:
        """The host's payload as the tool's result; a `ToolError` it raises as OpenClaw's
        thrown tool (`thrown_result`)."""
        try:
            return _result(await call)
        except ToolError as exc:
            return thrown_result(self.name, str(exc))


class SessionsListTool(_SessionTool):
    name = "sessions_list"
    description = (
        "List sessions on this gateway with optional filters (kinds, label, agentId, search, "
        "activeMinutes, spawnedBy, creatorId/ownerId, workspaceDir, group, pinned, archived) "
        "and paging (limit, offset); each row has its key, agent, kind, model, tokens, status "
        "and parent/child links; includeDerivedTitles adds derived titles."
    )
    params = SessionsListParams

    async def run(self, args: SessionsListParams, ctx: ToolContext) -> ToolResult:
        return await self._answer(self.host.list_sessions(ctx, args))


class SessionsHistoryTool(_SessionTool):
    name = "sessions_history"
    description = (
        "Read the transcript of a session (by its key), sanitized and bounded: tool results "
        "only with includeTools, long text truncated, credentials redacted. messageId (a "
        "row's __openclaw.id) reads the window around that message; sessionId requires it."
    )
    params = SessionsHistoryParams

    async def run(self, args: SessionsHistoryParams, ctx: ToolContext) -> ToolResult:
        return await self._answer(self.host.history(ctx, args))


class SessionsSendTool(_SessionTool):
    name = "sessions_send"
    description = (
        "Run another existing session on this gateway with a message and wait up to "
        "timeoutSeconds (default 30; 0: fire-and-forget) for its reply, returned inline."
    )
    params = SessionsSendParams
    mutating = True

    async def run(self, args: SessionsSendParams, ctx: ToolContext) -> ToolResult:
        return await self._answer(self.host.send(ctx, args))


class SessionStatusTool(_SessionTool):
    name = "session_status"
    description = (
        'Show visible-session model/usage/time/cost/tasks. `sessionKey="current"` for '
        "current; UI labels are not keys. `model` overrides; `model=default` resets. Use for "
        "active model/session questions."
    )
    params = SessionStatusParams

    async def run(self, args: SessionStatusParams, ctx: ToolContext) -> ToolResult:
        """The card's text for the model (as OpenClaw's), the payload as `details`."""
        try:
            payload = await self.host.status(ctx, args)
        except ToolError as exc:  # OpenClaw's tool throws for a missing or refused session
            return thrown_result(self.name, str(exc))
        card = payload.get("statusText")
        if payload.get("ok") is True and isinstance(card, str):
            return text_result(card, details=payload)
        return _result(payload)


class AgentsListTool(_SessionTool):
    name = "agents_list"
    description = (
        "List configured agent ids with name/model/runtime metadata, allowed as "
        '`sessions_spawn(runtime:"subagent")` targets.'
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
        """As OpenClaw's: a blank task throws, an invalid `taskName` is an error, and a
        refusal of a spawn that asked for an `agentId` names it as `role`."""
        if not args.task.strip():
            return thrown_result(self.name, "task required")
        task_name = (args.taskName or "").strip()
        if task_name and not _TASK_NAME.match(task_name):
            error = f'Invalid taskName "{task_name}". Use 1-64 chars matching [a-z][a-z0-9_-]*.'
            return _result({"status": "error", "error": error})
        if task_name in _RESERVED_TASK_NAMES:
            error = (
                f'Invalid taskName "{task_name}". Reserved subagent targets cannot be used as '
                "taskName values."
            )
            return _result({"status": "error", "error": error})
        try:
            payload = await self.host.spawn(ctx, args)
        except ToolError as exc:
            return thrown_result(self.name, str(exc))
        role = (args.agentId or "").strip()
        if role and payload.get("status") in ("error", "forbidden") and "tool" not in payload:
            payload = {**payload, "role": role}
        return _result(payload)


class SubagentsTool(_SessionTool):
    name = "subagents"
    description = (
        "Background work: list status, wait for selected taskIds to finish or need attention, "
        "or cancel a taskId. wait keeps this turn active; timeout does not cancel work or "
        "consume completion delivery."
    )
    params = SubagentsParams
    mutating = True

    async def run(self, args: SubagentsParams, ctx: ToolContext) -> ToolResult:
        return await self._answer(self.host.subagents(ctx, args))


class AgentsWaitTool(_SessionTool):
    name = "agents_wait"
    description = (
        "Wait up to timeoutSeconds for subagent runs this session spawned (ids: their "
        "runIds) and collect their results: completed ones with their text, the rest pending."
    )
    params = AgentsWaitParams

    async def run(self, args: AgentsWaitParams, ctx: ToolContext) -> ToolResult:
        """As OpenClaw's: the ids trimmed, blank ones dropped (none left throws)."""
        ids = list(dict.fromkeys(i.strip() for i in args.ids if i.strip()))
        if not ids:
            return thrown_result(self.name, "agents_wait requires at least one non-empty run id.")
        return await self._answer(
            self.host.agents_wait(ctx, msgspec.structs.replace(args, ids=ids))
        )


class SessionsYieldTool(_SessionTool):
    name = "sessions_yield"
    description = (
        "End this turn for pending child completion events; this is not a final-result "
        "submission. Return completed work normally. An unfinished subagent waiting for an "
        'incoming continuation must set waitFor:"message". Collector runs require agents_wait '
        "instead. acknowledgment can send a waiting reply for an otherwise-silent interactive "
        "parent."
    )
    params = SessionsYieldParams

    async def run(self, args: SessionsYieldParams, ctx: ToolContext) -> ToolResult:
        """As OpenClaw's: when the host accepts the claim (`yielded`), the run ends its
        turn after this result (`ctx.end_turn`), `message` (default `Turn yielded.`) kept
        as private context for the session's next turn."""
        if ctx.end_turn is None:
            return _result({"status": "error", "error": "Yield not supported in this context"})
        payload = self.host.yield_turn(ctx, args)
        if payload.get("status") == "yielded":
            message = (args.message or "").strip() or "Turn yielded."
            ctx.end_turn(message, (args.acknowledgment or "").strip() or None)
        return _result(payload)


def session_tools(host: SessionsHost) -> list[Tool]:
    """The session tools over `host`, in OpenClaw's catalog order."""
    return [
        SessionsListTool(host),
        SessionsHistoryTool(host),
        SessionsSendTool(host),
        SessionsSpawnTool(host),
        AgentsWaitTool(host),
        SessionsYieldTool(host),
        SubagentsTool(host),
        SessionStatusTool(host),
        AgentsListTool(host),
    ]
