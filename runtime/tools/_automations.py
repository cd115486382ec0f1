"""OpenClaw's scheduling tool, `automations` (alias `cron`), over the host's scheduler.

The jobs live above the runtime (the gateway's cron scheduler owns them), so the tool is a
shell over an `AutomationsHost` (`automations_tools(host, sessions)`), as the session tools
are over theirs. Its arguments are OpenClaw 2026.9.6's, in its order, with its bounds and
descriptions; `job` is its typed job object (`_automations_job.JOB_SCHEMA`: what the model is
told a job may hold; the `cron.add` / `cron.update` methods check it). As OpenClaw's tool
does, each action is one gateway operation with that method's params and result: `status`
(`cron.status`), `list` (`cron.list`: `includeDisabled`, `limit` 1-200, `offset`, `agentId`),
`get`, `add` (`job`: a `cron.add` job, with OpenClaw's defaults: the calling agent,
`wakeMode: "now"`, `sessionTarget` `main` for a `systemEvent` else `current`, this session),
`update` (`job`: the `cron.update` patch), `remove`, `run` (`runMode`: `due`, OpenClaw's
default, or `force`), `runs`, and `wake` (`wake`: a `text` system event for this session, or
`sessionKey` / `agentId`, `mode` `next-heartbeat` by default or `now`). `next_check` (`in`: a
duration) sets a paced job's next check from inside its run; clawlane has no paced jobs
(`pacing` is refused when a job is made), so it is OpenClaw's error. The host validates the
params as the method does, and scopes them to the caller as OpenClaw's gateway scopes an
agent's tool (its agent's jobs only: `actors.cron`); whatever it refuses (an unknown job, a
bad schedule, a missing `jobId`) is an error result the model sees, with the method's
message. The result is the method's payload as indented JSON text, and as `details`
(OpenClaw's `jsonResult`).

`contextMessages` (0-10) on `add` is OpenClaw's: a `systemEvent` reminder's text gets the
calling session's newest messages as `Recent context:` lines (read through the session tools'
host, `SessionsHost.history`, as OpenClaw reads `chat.history`, then this run's messages so
far, `ToolContext.run_messages`, which the transcript keeps only when the run ends and
OpenClaw's as they come; nothing is added when the history cannot be read). `timeoutMs` (60
s when omitted, OpenClaw's default) bounds how long the call waits: a read (`status`, `list`, `get`, `runs`, the history) is given up at the bound with
OpenClaw's `gateway request timeout for <method>`; a write (`add`, `update`, `remove`, `run`,
`wake`) is not cut short, since cancelling it could leave it half done (a job stored but not
scheduled), and answers its result. OpenClaw's `gatewayUrl` / `gatewayToken` (which gateway
its tool calls, with which token) are not taken: this tool runs inside the gateway it acts
on, so an argument naming another would be an unknown field, refused.

A run of an isolated cron job (its session `agent:<agent>:cron:<jobId>:run:<id>`) is
restricted as OpenClaw restricts it: `status` (only whether the scheduler is on), `list`
(only its job), `get` / `remove` / `runs` of its own job and `next_check`; anything else is
refused.

As OpenClaw's tool does, it takes any other argument (ignored; but `gatewayUrl` /
`gatewayToken`, still refused), and repairs the job a model
gives (`_automations_flat`): job fields written flat beside `action` instead of inside `job`,
and shorthands (`every`, `cron`, `atMs`, a padded `"schedule "` key...), are put in the
nested shape `cron.add` / `cron.update` take, by OpenClaw's rules, with its errors. The
description is OpenClaw's, less what clawlane's scheduler does not run (condition triggers,
script payloads, stream schedules, paced loops, failure alerts) or has not (channels, an
owner-wide management scope, detached `current` runs).

Not here: the compact list summaries OpenClaw's `list` asks for.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Final, Literal, Protocol

import msgspec
import trio

from ._automations_flat import job_for, prepare
from ._automations_job import JOB_SCHEMA, context_lines, infer_name, with_context
from ._errors import ToolError
from ._sessions_history import sanitize_history
from ._sessions_tools import SessionsHistoryParams, SessionsHost
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
_LIST_OPTIONS: Final = ("includeDisabled", "limit", "offset", "agentId")
DEFAULT_TIMEOUT_MS: Final = 60_000
"""How long a call waits when `timeoutMs` is not given (OpenClaw's cron tool's default)."""
_READS: Final = frozenset({"cron.status", "cron.list", "cron.get", "cron.runs"})


class AutomationsParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`automations`' arguments: OpenClaw 2026.9.6's, in its order (but `gatewayUrl` and
    `gatewayToken`: the tool runs in the gateway it would name, so they stay unknown fields,
    refused). Other arguments are taken and ignored (`prepare_arguments` drops them), as
    OpenClaw's schema takes them (`additionalProperties: true`)."""

    action: Action
    timeoutMs: Annotated[int, msgspec.Meta(ge=1)] | None = None
    includeDisabled: bool | None = None
    limit: (
        Annotated[
            int, msgspec.Meta(ge=1, le=200, description='Maximum jobs returned by action="list"')
        ]
        | None
    ) = None
    offset: (
        Annotated[
            int,
            msgspec.Meta(
                ge=0,
                description='Job offset for action="list"; use nextOffset to load the next page',
            ),
        ]
        | None
    ) = None
    job: Annotated[dict[str, Any], msgspec.Meta(extra_json_schema=JOB_SCHEMA)] | None = None
    jobId: str | None = None
    id: str | None = None
    in_: (
        Annotated[
            str,
            msgspec.Meta(
                description='Relative duration for action="next_check" (for example, "15m")'
            ),
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
    runMode: (
        Annotated[
            Literal["due", "force"],
            msgspec.Meta(
                description='Run mode for action="run": omitted defaults to "due"; use "force" '
                "to trigger now."
            ),
        ]
        | None
    ) = None
    contextMessages: Annotated[int, msgspec.Meta(ge=0, le=10)] | None = None
    agentId: (
        Annotated[
            str,
            msgspec.Meta(
                description='List filter for `action: "list"`; wake target override for '
                '`action: "wake"` (defaults to the calling agent when omitted on wake)'
            ),
        ]
        | None
    ) = None
    sessionKey: (
        Annotated[
            str,
            msgspec.Meta(
                description='Wake target override for `action: "wake"`: route the event to '
                "another session owned by the calling agent. Defaults to the resolved "
                "calling-session key when omitted."
            ),
        ]
        | None
    ) = None


DESCRIPTION: Final = """\
Gateway scheduler: reminders, delayed self-wakeups, loops, recurring work. Never exec \
sleep/poll as timer.

ACTIONS: status | list [includeDisabled,limit?,offset?] (use nextOffset for the next page) | \
get jobId (full schedule, payload, and delivery details) | add job | update jobId job \
(partial: only supplied fields change; null clears) | remove jobId | run jobId (runMode \
"force"=now) | runs jobId = history | next_check in:"30m" (own paced run only) | wake text \
mode?:"now"|"next-heartbeat"(default) nudges a caller-owned lane (sessionKey/agentId to \
pick another).

SCOPE: you see only caller-visible jobs; totals/counts and hasMore describe that scoped view, \
not global inventory. An empty list or failed list/get/update/remove (including not-found) \
does not establish global absence, whatever the source of a known job id (including your own \
history). Never recreate or replace a known automation to satisfy an update/remove or \
reconciliation request solely because of these results. Report that you cannot establish \
global absence; do not bypass caller scope. Genuinely new, requested automations can still \
be created.

ADD: job requires schedule+payload.

SCHEDULE:
- {kind:"at",at:"ISO-8601"} one-shot; no tz=UTC; auto-deletes after successful completion: \
delivery confirmed, not requested, intentionally silent, or explicitly bestEffort. \
Failed/unknown required delivery retains it disabled.
- {kind:"every",everyMs}.
- {kind:"cron",expr,tz?:"IANA"}: expr is wall time in tz; never pre-convert to UTC; no \
tz=gateway host local. 18:00 Shanghai => {expr:"0 18 * * *",tz:"Asia/Shanghai"}.

TARGET+PAYLOAD:
- "current" (agentTurn default) = this conversation: the run is a turn of this session. \
Self-wakeup/"continue later"/loop = at|every + agentTurn + current.
- "isolated" = fresh detached session; standalone background work.
- "main" = heartbeat lane; payload {kind:"systemEvent",text} (systemEvent default target).
- "session:<key>" = named session.
- {kind:"agentTurn",message}; timeoutSeconds 0=none.

UNAVAILABLE HERE: condition triggers, script payloads, stream schedules and paced loops \
(pacing). Omit trigger and pacing; use plain time-based schedules. If the user asks for a \
conditional watcher, say it is unsupported — never model-poll instead, and never silently \
create an unconditional job in its place.

DELIVERY: where run output goes. Omitted=announce. webhook posts finished-run event (successful empty summary is intentional silence, no POST) \
to URL in `to`.

Job wakeMode (main jobs): "now"(default)|"next-heartbeat". Restricted automation-run \
sessions: self status/list/get/runs/remove + own next_check only. jobId canonical \
(id=compat). contextMessages 0-10 embeds recent chat lines into reminder text."""
"""OpenClaw's `buildCronToolDescription`, less what clawlane does not run or has not (see
the module docstring)."""


_TAKEN: Final = frozenset(
    (
        *(f.encode_name for f in msgspec.structs.fields(AutomationsParams)),
        "gatewayUrl",
        "gatewayToken",
    )
)
"""The arguments `prepare_arguments` keeps: those of `AutomationsParams`, and the two it
refuses."""


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
    description = DESCRIPTION
    params = AutomationsParams
    mutating = True
    open_arguments = True

    @staticmethod
    def prepare_arguments(arguments: Any) -> Any:
        """OpenClaw's recovery of a job written flat beside `action` (`_automations_flat`),
        then the arguments `AutomationsParams` does not name dropped (but `gatewayUrl` and
        `gatewayToken`, refused)."""
        prepared = prepare(arguments)
        if not isinstance(prepared, dict) or _TAKEN.issuperset(prepared):
            return prepared
        return {k: v for k, v in prepared.items() if k in _TAKEN}

    def __init__(self, host: AutomationsHost, sessions: SessionsHost | None = None) -> None:
        self.host = host
        self.sessions = sessions

    async def run(self, args: AutomationsParams, ctx: ToolContext) -> ToolResult:
        """A checkpoint. A refusal raises `ToolError`."""
        own = cron_job_of(ctx.session_key)
        if own is not None:
            _check_self_scope(args, own)
        if args.action == "next_check":
            _next_check(args, own)
        method, params = _request(args, ctx)
        deadline = trio.current_time() + (args.timeoutMs or DEFAULT_TIMEOUT_MS) / 1000
        if method == "cron.add" and args.contextMessages:
            await self._add_context(params, args.contextMessages, ctx, deadline)
        if method in _READS:
            with trio.move_on_at(deadline):
                payload = await self.host.call(ctx, method, params)
                return self._result(args.action, payload, own)
            raise ToolError(f"gateway request timeout for {method}")
        return self._result(args.action, await self.host.call(ctx, method, params), own)

    def _result(self, action: str, payload: dict[str, Any], own: str | None) -> ToolResult:
        if own is not None:
            payload = _self_view(action, payload, own)
        return text_result(json.dumps(payload, indent=2), details=payload)

    async def _add_context(
        self, job: dict[str, Any], count: int, ctx: ToolContext, deadline: float
    ) -> None:
        """OpenClaw's `contextMessages`: a `systemEvent` reminder's text gets the session's
        recent chat lines (`_automations_job.context_lines`): of its transcript, then of this
        run so far (`ToolContext.run_messages`: the transcript keeps them when the run ends,
        OpenClaw's as they come). Nothing is added when the history cannot be read (no
        sessions host, an error, past the deadline)."""
        payload = job.get("payload")
        if not isinstance(payload, dict) or payload.get("kind") != "systemEvent":
            return
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip() or self.sessions is None:
            return
        query = SessionsHistoryParams(sessionKey=ctx.session_key, limit=count, includeTools=True)
        history: dict[str, Any] = {}
        with trio.move_on_at(deadline):
            try:
                history = await self.sessions.history(ctx, query)
            except Exception:  # OpenClaw's: a failed read adds no context
                history = {}
        messages = history.get("messages")
        kept = messages if isinstance(messages, list) else []
        lines = context_lines([*kept, *_run_lines(ctx, count)][-count:], count)
        if lines:
            job["payload"] = {**payload, "text": with_context(text, lines)}


def _run_lines(ctx: ToolContext, count: int) -> list[Any]:
    """The newest `count` of the run's messages, as the session's history gives them: the
    user's and the assistant's sanitized as `sessions_history` sanitizes them (the tool
    results, which give no line, as they are)."""
    if ctx.run_messages is None or count <= 0:
        return []
    newest: list[Any] = msgspec.to_builtins(ctx.run_messages()[-count:])
    chat = [m for m in newest if m.get("role") in ("user", "assistant")]
    shown = iter(sanitize_history(chat).messages)
    return [next(shown, None) if m.get("role") in ("user", "assistant") else m for m in newest]


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


def _create_defaults(job: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """OpenClaw's defaults for a job the model creates: the calling agent, `wakeMode`
    `now`, a name from its payload or schedule (`infer_name`) when it has none, and the
    target `main` for a `systemEvent`, else `current` (this session)."""
    job.setdefault("agentId", ctx.agent_id)
    job.setdefault("wakeMode", "now")
    name = job.get("name")
    if not (isinstance(name, str) and name.strip()) and all(
        isinstance(job.get(k), dict) for k in ("schedule", "payload")
    ):
        job["name"] = infer_name(job)
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
        return "cron.add", _create_defaults(job_for("add", args.job), ctx)
    if action == "update":
        job_id = _job_id(args)
        return "cron.update", {"id": job_id, "patch": job_for("update", args.job)}
    if action == "run":
        return "cron.run", {"id": _job_id(args), "mode": args.runMode or "due"}
    if action == "wake":
        return "wake", _wake(args, ctx)
    return f"cron.{action}", {"id": _job_id(args)}  # get, remove, runs


def automations_tools(host: AutomationsHost, sessions: SessionsHost | None = None) -> list[Tool]:
    """The scheduling tool over `host`; `sessions` reads the history `contextMessages` adds
    to a reminder (without it, none is added)."""
    return [AutomationsTool(host, sessions)]
