"""The scheduler the `automations` tool reaches (`runtime.tools.AutomationsHost`).

Each call is one `cron.*` operation on the gateway's `CronScheduler`, decoded strictly into
the method's own params type (`CronAddParams`, `CronUpdateParams`, ...) and checked by the
same functions the `cron.*` methods use (`runtime.cron.job_from_add`, `apply_patch`,
`webhook_url_problem`, `select_jobs`; `check_job_runtime` for what only the generation
knows). A refusal is a `ToolError` (the model reads its message, as from the session tools'
host). Results are the methods' payloads.

As OpenClaw's gateway scopes an agent's tool calls (its caller scope), a run sees and
changes only its own agent's jobs: `list` shows them (with `cron.list`'s filters and sorts,
`scope: "caller"`), `get` / `update` / `remove` / `run` / `runs` of another agent's job is
`cron job not found`, `add` of a job for another agent or naming another agent's session is
refused (`job agentId outside caller scope`), and `update` cannot change `agentId`. `wake`
queues a system event for one of the caller's sessions through the gateway's heartbeats
(`supervisor.heartbeats`: `enqueue`, `wake_now`); without them it is refused.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

import msgspec
import trio

from runtime.cron import (
    CronGetParams,
    CronJob,
    CronJobError,
    CronRemoveParams,
    CronRunParams,
    CronUpdateParams,
    JobIdError,
    apply_patch,
    effective_agent,
    job_from_add,
    job_view,
    select_jobs,
    webhook_url_problem,
)
from runtime.model import GenerationError
from runtime.protocol import (
    CronAddParams,
    CronAddParamsDeliveryWebhook,
    CronAddParamsPayloadAgentTurn,
    CronListParams,
    opt,
)
from runtime.sessions import parse_session_key
from runtime.tools import ToolContext, ToolError

from ._scheduler import CronFull, CronNotFound, CronScheduler
from ._scheduler import open_cron as open_scheduler
from ._store import RunQuery

__all__ = ["CronToolHost", "check_job_runtime", "open_cron"]

_T = TypeVar("_T")

SCOPE_HINT: Final = (
    "Restricted automation inventory: this agent's jobs. For Gateway-wide management, use "
    "the cron.* methods or the Control UI's Automations page."
)


def check_job_runtime(generation: Any, job: CronJob) -> str | None:
    """What only the current generation can tell about `job`: its agent and model exist, and
    `sessionTarget: "main"` is the default agent's. The problem, or None."""
    try:
        spec = generation.agent(job.agentId)
    except GenerationError as exc:
        return f"agentId: {exc}"
    payload = job.payload
    model = payload.model if isinstance(payload, CronAddParamsPayloadAgentTurn) else None
    if isinstance(model, str) and model.strip():
        try:
            generation.resolve(model.strip(), agent_id=spec.id)
        except GenerationError as exc:
            return f"payload.model: {exc}"
    if job.sessionTarget == "main" and spec.id != generation.default_agent:
        return 'sessionTarget "main" is only valid for the default agent'
    return None


def _decode(method: str, params: dict[str, Any], kind: type[_T]) -> _T:
    try:
        return msgspec.convert(params, type=kind)
    except msgspec.ValidationError as exc:
        raise ToolError(f"invalid {method} params: {exc}") from None


class CronToolHost:
    """`automations` over `cron` (see the module docstring)."""

    def __init__(self, cron: CronScheduler) -> None:
        self.cron = cron

    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        name = "_wake" if method == "wake" else "_" + method.removeprefix("cron.")
        handler = getattr(self, name, None)
        if not (method.startswith("cron.") or method == "wake") or handler is None:
            raise ToolError(f"unknown automations operation: {method}")
        caller = ctx.agent_id.lower()
        try:
            result: dict[str, Any] = await handler(method, params, caller)
        except CronNotFound as exc:
            raise ToolError(
                f"cron job not found: {exc.args[0] if exc.args else ''}. List automations and "
                "retry with a current job id."
            ) from None
        except (CronJobError, CronFull, JobIdError) as exc:
            raise ToolError(f"invalid {method} params: {exc}") from None
        return result

    def _check(self, method: str, job: CronJob) -> None:
        problem = check_job_runtime(self.cron.supervisor.generation, job)
        if problem:
            raise ToolError(f"invalid {method} params: {problem}")

    def _owns(self, caller: str, job: CronJob) -> bool:
        """OpenClaw's caller scope: the job is the calling agent's (its effective agent, and
        the sessions it names are that agent's)."""
        default_agent = self.cron.supervisor.generation.default_agent
        return effective_agent(job, default_agent) == caller and _refs_match(job, caller)

    def _job(self, caller: str, job_id: str) -> CronJob:
        """The caller's job `job_id`; another agent's job is as unknown as a missing one."""
        job = self.cron.get(job_id)
        if not self._owns(caller, job):
            raise CronNotFound(job_id)
        return job

    async def _status(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        return self.cron.status()

    async def _list(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        query = _decode(method, params, CronListParams)
        default_agent = self.cron.supervisor.generation.default_agent
        jobs = [
            j
            for j in select_jobs(self.cron.jobs.values(), query, default_agent)
            if self._owns(caller, j)
        ]
        offset = opt(query.offset) or 0
        limit = opt(query.limit) or 50
        page = jobs[offset : offset + limit]
        has_more = offset + len(page) < len(jobs)
        views = []
        for job in page:
            view = job_view(job)
            view["effectiveAgentId"] = job.agentId or default_agent
            views.append(view)
        return {
            "jobs": views,
            "total": len(jobs),
            "offset": offset,
            "limit": limit,
            "hasMore": has_more,
            "nextOffset": offset + len(page) if has_more else None,
            "scope": "caller",
            "scopeHint": SCOPE_HINT,
        }

    async def _get(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        ref = _decode(method, params, CronGetParams)
        return job_view(self._job(caller, str(ref.job_id())))

    async def _runs(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        ref = _decode(method, params, CronGetParams)
        job_id = self._job(caller, str(ref.job_id())).id
        entries, total = await self.cron.runs(RunQuery(job_id=job_id, limit=50, offset=0))
        has_more = len(entries) < total
        return {
            "entries": entries,
            "total": total,
            "offset": 0,
            "limit": 50,
            "hasMore": has_more,
            "nextOffset": len(entries) if has_more else None,
        }

    async def _add(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        add = _decode(method, params, CronAddParams)
        job = job_from_add(add, job_id=str(uuid.uuid4()), now_ms=self.cron.clock())
        if not self._owns(caller, job):
            raise ToolError(f"invalid {method} params: job agentId outside caller scope")
        self._check(method, job)
        await self.cron.add(job)
        return job_view(job)

    async def _update(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        update = _decode(method, params, CronUpdateParams)
        job = self._job(caller, str(update.job_id()))
        if update.patch.agentId is not msgspec.UNSET:
            raise ToolError(f"invalid {method} params: agentId cannot be changed by caller scope")
        new = apply_patch(job, update.patch, now_ms=self.cron.clock())
        if not self._owns(caller, new):
            raise ToolError(f"invalid {method} params: session outside caller scope")
        if isinstance(new.delivery, CronAddParamsDeliveryWebhook):
            problem = webhook_url_problem(new.delivery.to)
            if problem:
                raise ToolError(f"invalid {method} params: delivery.to {problem}")
        self._check(method, new)
        await self.cron.replace(new)
        return job_view(new)

    async def _remove(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        ref = _decode(method, params, CronRemoveParams)
        await self.cron.remove(self._job(caller, str(ref.job_id())).id)
        return {"ok": True, "removed": True}

    async def _run(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        run = _decode(method, params, CronRunParams)
        job_id = self._job(caller, str(run.job_id())).id
        return await self.cron.run_now(job_id, opt(run.mode) or "force")

    async def _wake(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        """OpenClaw's `wake` for the caller's own sessions: the text is queued as a system
        event for the session's next turn (`next-heartbeat`), which `now` runs at once,
        through the gateway's heartbeats (`supervisor.heartbeats`)."""
        await trio.lowlevel.checkpoint()
        key = str(params.get("sessionKey") or "")
        agent = str(params.get("agentId") or caller).lower()
        parsed = parse_session_key(key) if key else None
        if agent != caller or (parsed is not None and parsed.agent_id != caller):
            raise ToolError("invalid wake params: sessionKey outside caller scope")
        if ":subagent:" in key:
            raise ToolError("invalid wake params: wake sessionKey cannot target a subagent session")
        beats = getattr(self.cron.supervisor, "heartbeats", None)
        if beats is None:
            raise ToolError("wake is not available: this gateway runs no heartbeats")
        beats.enqueue(key, str(params["text"]))
        if params.get("mode") == "now":
            beats.wake_now(agent, "wake", key)
        return {"ok": True}


def _refs_match(job: CronJob, caller: str) -> bool:
    """The sessions `job` names (`sessionKey`, `sessionTarget: "session:<key>"`) are the
    caller's agent's (a key that names no agent is the job's own)."""
    target = job.sessionTarget.strip()
    refs = [job.sessionKey, target[8:] if target.startswith("session:") else None]
    for ref in refs:
        parsed = parse_session_key(ref) if ref else None
        if parsed is not None and parsed.agent_id != caller:
            return False
    return True


@asynccontextmanager
async def open_cron(supervisor: Any, store: Any, **kwargs: Any) -> AsyncIterator[CronScheduler]:
    """`_scheduler.open_cron`, with the `automations` tool offered to `supervisor`'s runs
    (its `services.automations`) while the scheduler runs."""
    async with open_scheduler(supervisor, store, **kwargs) as cron:
        services = getattr(supervisor, "services", None)
        if services is not None:
            services.automations = CronToolHost(cron)
        try:
            yield cron
        finally:
            if services is not None:
                services.automations = None
