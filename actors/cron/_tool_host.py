"""The scheduler the `automations` tool reaches (`runtime.tools.AutomationsHost`).

Each call is one `cron.*` operation on the gateway's `CronScheduler`, decoded strictly into
the method's own params type (`CronAddParams`, `CronUpdateParams`, ...) and checked by the
same functions the `cron.*` methods use (`runtime.cron.job_from_add`, `apply_patch`,
`webhook_url_problem`; `check_job_runtime` for what only the generation knows). A refusal is a
`ToolError` (the model reads its message, as from the session tools' host). Results are the
methods' payloads. `list` is a plain page of the jobs (enabled unless `includeDisabled`,
optionally one agent's, soonest first).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import msgspec

from runtime.cron import (
    CronGetParams,
    CronJob,
    CronJobError,
    CronRemoveParams,
    CronRunParams,
    CronUpdateParams,
    JobIdError,
    apply_patch,
    job_from_add,
    job_view,
    webhook_url_problem,
)
from runtime.model import GenerationError
from runtime.protocol import (
    CronAddParams,
    CronAddParamsDeliveryWebhook,
    CronAddParamsPayloadAgentTurn,
    opt,
)
from runtime.tools import ToolContext, ToolError

from ._scheduler import CronFull, CronNotFound, CronScheduler
from ._scheduler import open_cron as open_scheduler
from ._store import RunQuery

__all__ = ["CronToolHost", "check_job_runtime", "open_cron"]

_T = TypeVar("_T")


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
        handler = getattr(self, "_" + method.removeprefix("cron."), None)
        if not method.startswith("cron.") or handler is None:
            raise ToolError(f"unknown automations operation: {method}")
        try:
            result: dict[str, Any] = await handler(method, params)
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

    async def _status(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.cron.status()

    async def _list(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        default_agent = self.cron.supervisor.generation.default_agent
        jobs = list(self.cron.jobs.values())
        if not params.get("includeDisabled"):
            jobs = [j for j in jobs if j.enabled]
        agent = params.get("agentId")
        if agent:
            jobs = [j for j in jobs if (j.agentId or default_agent) == str(agent).lower()]
        jobs.sort(key=lambda j: (j.state.nextRunAtMs is None, j.state.nextRunAtMs or 0, j.id))
        offset = max(int(params.get("offset") or 0), 0)
        limit = min(max(int(params.get("limit") or 50), 1), 200)
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
        }

    async def _get(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ref = _decode(method, params, CronGetParams)
        return job_view(self.cron.get(str(ref.job_id())))

    async def _runs(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ref = _decode(method, params, CronGetParams)
        job_id = str(ref.job_id())
        self.cron.get(job_id)
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

    async def _add(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        add = _decode(method, params, CronAddParams)
        job = job_from_add(add, job_id=str(uuid.uuid4()), now_ms=self.cron.clock())
        self._check(method, job)
        await self.cron.add(job)
        return job_view(job)

    async def _update(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        update = _decode(method, params, CronUpdateParams)
        job = self.cron.get(str(update.job_id()))
        new = apply_patch(job, update.patch, now_ms=self.cron.clock())
        if isinstance(new.delivery, CronAddParamsDeliveryWebhook):
            problem = webhook_url_problem(new.delivery.to)
            if problem:
                raise ToolError(f"invalid {method} params: delivery.to {problem}")
        self._check(method, new)
        await self.cron.replace(new)
        return job_view(new)

    async def _remove(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ref = _decode(method, params, CronRemoveParams)
        await self.cron.remove(str(ref.job_id()))
        return {"ok": True, "removed": True}

    async def _run(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        run = _decode(method, params, CronRunParams)
        return await self.cron.run_now(str(run.job_id()), opt(run.mode) or "force")


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
