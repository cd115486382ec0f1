"""OpenClaw's scheduling tool, `automations` (alias `cron`), over the host's scheduler.

The jobs live above the runtime (the gateway's cron scheduler owns them), so the tool is a
shell over an `AutomationsHost` (`automations_tools(host)`), as the session tools are over
theirs. As OpenClaw's tool does, each action is one gateway operation with that method's
params and result: `status` (`cron.status`), `list` (`cron.list`: `includeDisabled`, `limit`,
`offset`, `agentId`, and `cron.list`'s `query`, `enabled`, `scheduleKind`, `lastRunStatus`,
`sortBy`, `sortDir`), `get`, `add` (`job`: a `cron.add` job, with OpenClaw's defaults: the
calling agent, `wakeMode: "now"`, `sessionTarget` `main` for a `systemEvent` else `current`,
this session), `update` (`job`: the `cron.update` patch), `remove`, `run` (`runMode`:
`due`, OpenClaw's default, or `force`), `runs`, and `wake` (`wake`: a `text` system event
for this session, or `sessionKey` / `agentId`, `mode` `next-heartbeat` by default or
`now`). `next_check` (`in`: a duration) sets a paced job's next check from inside its run;
clawlane has no paced jobs (`pacing` is refused when a job is made), so it is OpenClaw's
error. The host validates the params as the method does, and scopes them to the caller as
OpenClaw's gateway scopes an agent's tool (its agent's jobs only: `actors.cron`); whatever
it refuses (an unknown job, a bad schedule, a missing `jobId`) is an error result the model
sees, with the method's message. The result is the method's payload as indented JSON text,
and as `details` (OpenClaw's `jsonResult`).

A run of an isolated cron job (its session `agent:<agent>:cron:<jobId>:run:<id>`) is
restricted as OpenClaw restricts it: `status` (only whether the scheduler is on), `list`
(only its job), `get` / `remove` / `runs` of its own job and `next_check`; anything else is
refused.

Not here: OpenClaw's flattened-argument recovery (job fields given beside `action`
instead of inside `job`) and `contextMessages`.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Final, Literal, Protocol

import msgspec

from ._errors import ToolError
from ._tool import Tool, ToolContext, ToolResult, text_result

__all__ = ["AutomationsHost", "AutomationsParams", "automations_tools", "cron_job_of"]

Action = Literal[
    "status", "list", "get", "add", "update", "remove", "run", "runs", "next_check", "wake"
]
SELF_SCOPE_ERROR: Final = "Automations tool is restricted to the current automation."
NEXT_CHECK_OUTSIDE: Final = "cron next_check is only available to the currently running job"
NEXT_CHECK_BAD: Final = "cron next_check in must be a positive duration"
NEXT_CHECK_UNPACED: Final = "cron next_check requires pacing on the current job"
_DURATION: Final = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$")
_UNIT_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_CRON_RUN: Final = re.compile(r"^agent:[^:]+:cron:([^:]+):run:[^:]+$")
_LIST_OPTIONS: Final = (
    "includeDisabled",
    "limit",
    "offset",
    "agentId",
    "query",
    "enabled",
    "scheduleKind",
    "lastRunStatus",
    "sortBy",
    "sortDir",
)


class AutomationsParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`automations`' arguments (OpenClaw's names)."""

    action: Action
    job: dict[str, Any] | None = None
    jobId: str | None = None
    id: str | None = None
    includeDisabled: bool | None = None
    limit: int | None = None
    offset: int | None = None
    query: Annotated[str, msgspec.Meta(description='Text filter for action="list"')] | None = None
    enabled: Literal["all", "enabled", "disabled"] | None = None
    scheduleKind: Literal["all", "at", "every", "cron"] | None = None
    lastRunStatus: Literal["all", "ok", "error", "skipped", "unknown"] | None = None
    sortBy: Literal["nextRunAtMs", "updatedAtMs", "name"] | None = None
    sortDir: Literal["asc", "desc"] | None = None
    runMode: Literal["due", "force"] | None = None
    agentId: str | None = None
    in_: (
        Annotated[
            str, msgspec.Meta(description='Relative duration for action="next_check" ("15m")')
        ]
        | None
    ) = msgspec.field(default=None, name="in")
    text: Annotated[str, msgspec.Meta(description='systemEvent text for action="wake"')] | None = (
        None
    )
    mode: (
        Annotated[
            Literal["now", "next-heartbeat"],
            msgspec.Meta(description='Wake mode for action="wake" (default next-heartbeat)'),
        ]
        | None
    ) = None
    sessionKey: Annotated[str, msgspec.Meta(description='Wake target for action="wake"')] | None = (
        None
    )


class AutomationsHost(Protocol):
    """The scheduler the tool reaches: `call` runs the gateway operation `method`
    (`cron.add`, `cron.list`, ..., `wake`) with its params for the calling run (its agent,
    `ctx.agent_id`, owns what it may see and change) and answers its result; it raises
    `ToolError` (the message for the model) for whatever the method refuses."""

    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of `method` with `params`."""
        ...


class AutomationsTool:
    name = "automations"
    description = (
        "Schedule reminders and automations on the gateway scheduler. Actions: status, list "
        "(includeDisabled, limit, offset, agentId, query, sortBy, sortDir), get (jobId), add "
        '(job: {name, schedule: {kind: "at", at} | {kind: "every", everyMs} | {kind: "cron", '
        'expr, tz}, payload: {kind: "agentTurn", message} | {kind: "systemEvent", text}, '
        "sessionTarget, delivery}), update (jobId, job: fields to change), remove (jobId), "
        'run (jobId, runMode: "due" or "force" to run now), runs (jobId: its run history), '
        'next_check in:"30m" (own paced run only), wake text mode?:"now"|"next-heartbeat" '
        "(default) nudges this session (sessionKey/agentId to pick another)."
    )
    params = AutomationsParams
    mutating = True

    def __init__(self, host: AutomationsHost) -> None:
        self.host = host

    async def run(self, args: AutomationsParams, ctx: ToolContext) -> ToolResult:
        own = cron_job_of(ctx.session_key)
        if own is not None:
            _check_self_scope(args, own)
        if args.action == "next_check":
            _next_check(args, own)
        method, params = _request(args, ctx)
        payload = await self.host.call(ctx, method, params)
        if own is not None:
            payload = _self_view(args.action, payload, own)
        return text_result(json.dumps(payload, indent=2), details=payload)


def cron_job_of(session_key: str) -> str | None:
    """The job whose isolated run session `session_key` is, or None."""
    match = _CRON_RUN.match(session_key.strip().lower())
    return match.group(1) if match is not None else None


def _check_self_scope(args: AutomationsParams, own: str) -> None:
    """A cron job's own run reaches only itself (OpenClaw's self-management scope)."""
    if args.action in ("status", "list"):
        return
    if args.action in ("next_check", "get", "remove", "runs"):
        job_id = (args.jobId or args.id or "").strip()
        if job_id == own or (args.action == "next_check" and not job_id):
            return
    raise ToolError(SELF_SCOPE_ERROR)


def _self_view(action: str, payload: dict[str, Any], own: str) -> dict[str, Any]:
    if action == "status":
        return {"enabled": payload.get("enabled") is True}
    if action == "list":
        jobs = [j for j in payload.get("jobs") or () if j.get("id") == own]
        return {**payload, "jobs": jobs, "total": len(jobs), "hasMore": False, "nextOffset": None}
    return payload


def _next_check(args: AutomationsParams, own: str | None) -> None:
    """OpenClaw's `next_check`: only a paced job's own run may set its next check, and
    clawlane makes no paced jobs; the refusal says which condition failed. Raises."""
    if own is None:
        raise ToolError(NEXT_CHECK_OUTSIDE)
    raw = (args.in_ or "").strip().lower()
    match = _DURATION.match(raw)
    if not raw or match is None:
        raise ToolError(NEXT_CHECK_BAD if raw else "in required")
    if float(match.group(1)) * _UNIT_MS[match.group(2) or "m"] <= 0:
        raise ToolError(NEXT_CHECK_BAD)
    raise ToolError(NEXT_CHECK_UNPACED)


def _job_id(args: AutomationsParams) -> str:
    job_id = (args.jobId or args.id or "").strip()
    if not job_id:
        raise ToolError("jobId required (id accepted for backward compatibility)")
    return job_id


def _job(args: AutomationsParams) -> dict[str, Any]:
    if not args.job:
        raise ToolError("job required")
    return dict(args.job)


def _create_defaults(job: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """OpenClaw's defaults for a job the model creates: the calling agent, `wakeMode`
    `now`, and the target `main` for a `systemEvent`, else `current` (this session)."""
    job.setdefault("agentId", ctx.agent_id)
    job.setdefault("wakeMode", "now")
    payload = job.get("payload")
    kind = payload.get("kind") if isinstance(payload, dict) else None
    job.setdefault("sessionTarget", "main" if kind == "systemEvent" else "current")
    if job["sessionTarget"] == "current":
        job.setdefault("sessionKey", ctx.session_key)
    return job


def _wake(args: AutomationsParams, ctx: ToolContext) -> dict[str, Any]:
    """OpenClaw's `wake` params: this session unless `sessionKey` names another, the
    agent of that key (or `agentId`, or the caller's)."""
    text = (args.text or "").strip()
    if not text:
        raise ToolError("text required")
    key = (args.sessionKey or "").strip() or None
    agent = (args.agentId or "").strip() or None
    if agent is None and key is not None:
        parts = key.lower().split(":")
        agent = parts[1] if len(parts) > 2 and parts[0] == "agent" else None
    elif agent is None:
        agent = ctx.agent_id
    params: dict[str, Any] = {"mode": args.mode or "next-heartbeat", "text": text}
    params["sessionKey"] = key or ctx.session_key
    if agent:
        params["agentId"] = agent
    return params


def _request(args: AutomationsParams, ctx: ToolContext) -> tuple[str, dict[str, Any]]:
    """The gateway method and params for `args` (OpenClaw's mapping of its actions)."""
    action = args.action
    if action == "status":
        return "cron.status", {}
    if action == "list":
        params: dict[str, Any] = {}
        for name in _LIST_OPTIONS:
            value = getattr(args, name)
            if value is not None:
                params[name] = value
        return "cron.list", params
    if action == "add":
        return "cron.add", _create_defaults(_job(args), ctx)
    if action == "update":
        return "cron.update", {"id": _job_id(args), "patch": _job(args)}
    if action == "run":
        return "cron.run", {"id": _job_id(args), "mode": args.runMode or "due"}
    if action == "wake":
        return "wake", _wake(args, ctx)
    return f"cron.{action}", {"id": _job_id(args)}  # get, remove, runs


def automations_tools(host: AutomationsHost) -> list[Tool]:
    """The scheduling tool over `host`."""
    return [AutomationsTool(host)]
