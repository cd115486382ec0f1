"""OpenClaw's scheduling tool, `automations` (alias `cron`), over the host's scheduler.

The jobs live above the runtime (the gateway's cron scheduler owns them), so the tool is a
shell over an `AutomationsHost` (`automations_tools(host)`), as the session tools are over
theirs. As OpenClaw's tool does, each action is one `cron.*` operation with that method's
params and result: `status` (`cron.status`), `list` (`cron.list`: `includeDisabled`, `limit`,
`offset`, `agentId`), `get`, `add` (`job`: a `cron.add` job, with OpenClaw's defaults: the
calling agent, `wakeMode: "now"`, `sessionTarget` `main` for a `systemEvent` else `current`,
this session), `update` (`job`: the `cron.update` patch), `remove`, `run` (`runMode`:
`due`, OpenClaw's default, or `force`) and `runs`. The host validates the params as the
method does; whatever it refuses (an unknown job, a bad schedule, a missing `jobId`) is an
error result the model sees, with the method's message. The result is the method's payload
as indented JSON text, and as `details` (OpenClaw's `jsonResult`).

Not here: OpenClaw's `wake` and `next_check` (heartbeat wakes), and its flattened-argument
recovery (job fields given beside `action` instead of inside `job`).
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

import msgspec

from ._errors import ToolError
from ._tool import Tool, ToolContext, ToolResult, text_result

__all__ = ["AutomationsHost", "AutomationsParams", "automations_tools"]

Action = Literal["status", "list", "get", "add", "update", "remove", "run", "runs"]


class AutomationsParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`automations`' arguments (OpenClaw's names)."""

    action: Action
    job: dict[str, Any] | None = None
    jobId: str | None = None
    id: str | None = None
    includeDisabled: bool | None = None
    limit: int | None = None
    offset: int | None = None
    runMode: Literal["due", "force"] | None = None
    agentId: str | None = None


class AutomationsHost(Protocol):
    """The scheduler the tool reaches: `call` runs the `cron.*` operation `method` with its
    params for the calling agent (`ctx.agent_id`) and answers its result; it raises
    `ToolError` (the message for the model) for whatever the method refuses."""

    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of `method` (`cron.add`, `cron.list`, ...) with `params`."""
        ...


class AutomationsTool:
    name = "automations"
    description = (
        "Schedule reminders and automations on the gateway scheduler. Actions: status, list "
        "(includeDisabled, limit, offset, agentId), get (jobId), add (job: {name, schedule: "
        '{kind: "at", at} | {kind: "every", everyMs} | {kind: "cron", expr, tz}, payload: '
        '{kind: "agentTurn", message} | {kind: "systemEvent", text}, sessionTarget, '
        "delivery}), update (jobId, job: fields to change), remove (jobId), run (jobId, "
        'runMode: "due" or "force" to run now), runs (jobId: its run history).'
    )
    params = AutomationsParams
    mutating = True

    def __init__(self, host: AutomationsHost) -> None:
        self.host = host

    async def run(self, args: AutomationsParams, ctx: ToolContext) -> ToolResult:
        method, params = _request(args, ctx)
        payload = await self.host.call(ctx, method, params)
        return text_result(json.dumps(payload, indent=2), details=payload)


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


def _request(args: AutomationsParams, ctx: ToolContext) -> tuple[str, dict[str, Any]]:
    """The `cron.*` method and params for `args` (OpenClaw's mapping of its actions)."""
    action = args.action
    if action == "status":
        return "cron.status", {}
    if action == "list":
        params: dict[str, Any] = {
            k: v
            for k, v in (
                ("includeDisabled", args.includeDisabled),
                ("limit", args.limit),
                ("offset", args.offset),
                ("agentId", args.agentId),
            )
            if v is not None
        }
        return "cron.list", params
    if action == "add":
        return "cron.add", _create_defaults(_job(args), ctx)
    if action == "update":
        return "cron.update", {"id": _job_id(args), "patch": _job(args)}
    if action == "run":
        return "cron.run", {"id": _job_id(args), "mode": args.runMode or "due"}
    return f"cron.{action}", {"id": _job_id(args)}  # get, remove, runs


def automations_tools(host: AutomationsHost) -> list[Tool]:
    """The scheduling tool over `host`."""
    return [AutomationsTool(host)]
