"""The `cron.*` methods (OpenClaw's automations surface) over `actors.cron._scheduler.CronScheduler`.

Scopes as the schema's `methods` map names them: `cron.list`, `cron.get`, `cron.status`,
`cron.runs` need `operator.read`; `cron.add`, `cron.update`, `cron.remove`, `cron.run` need
`operator.admin`. Params decode strictly (2026.9.6 shapes: unknown fields and wrong types are
`INVALID_REQUEST` naming the field). An unknown job is `INVALID_REQUEST` with
`details: {code: "CRON_JOB_NOT_FOUND", jobId}` (OpenClaw's; its CLI prints "Automation not
found"). Results are OpenClaw's: `cron.add`/`get`/`update` a `CronJob` (+ `deliveryPreview` on
add), `cron.list` a page `{jobs, total, offset, limit, hasMore, nextOffset, snapshotRevision,
deliveryPreviews}`, `cron.runs` `{entries, total, offset, limit, hasMore, nextOffset}`,
`cron.run` `{ok, enqueued, runId, processInstanceId}` (or `{ok, ran: false, reason}`),
`cron.remove` `{ok, removed}`.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

import msgspec
import trio

from actors import CronFull, CronNotFound, CronScheduler, RunQuery
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
    select_jobs,
    webhook_url_problem,
)
from runtime.model import GenerationError
from runtime.protocol import (
    UNAVAILABLE,
    CronAddParams,
    CronAddParamsDeliveryWebhook,
    CronAddParamsPayloadAgentTurn,
    CronListParams,
    CronRunsParams,
    CronStatusParams,
    GatewayError,
    invalid_request,
    opt,
)

from ._context import Call, MethodTable

__all__ = ["register"]


def register(methods: MethodTable) -> None:
    methods.advertise("cron")
    methods.add("cron.status", cron_status, CronStatusParams)
    methods.add("cron.list", cron_list, CronListParams)
    methods.add("cron.get", cron_get, CronGetParams)
    methods.add("cron.runs", cron_runs, CronRunsParams)
    methods.add("cron.add", cron_add, CronAddParams)
    methods.add("cron.update", cron_update, CronUpdateParams)
    methods.add("cron.remove", cron_remove, CronRemoveParams)
    methods.add("cron.run", cron_run, CronRunParams)


def _cron(call: Call) -> CronScheduler:
    cron = call.gateway.actors.cron
    if cron is None:
        raise GatewayError(UNAVAILABLE, "the cron scheduler is not running")
    return cron


def not_found(job_id: str) -> GatewayError:
    return invalid_request(
        f"cron job not found: {job_id}. List automations and retry with a current job id.",
        code="CRON_JOB_NOT_FOUND",
        jobId=job_id,
    )


def _job_id(method: str, params: Any) -> str:
    try:
        return str(params.job_id())
    except JobIdError as exc:
        raise invalid_request(f"invalid {method} params: {exc}") from exc


def _job(call: Call, job_id: str) -> CronJob:
    try:
        return _cron(call).get(job_id)
    except CronNotFound:
        raise not_found(job_id) from None


def _preview(job: CronJob) -> dict[str, str]:
    """`CronDeliveryPreview`: where a finished run goes."""
    delivery = job.delivery
    mode = delivery.__struct_config__.tag if delivery is not None else None
    if isinstance(delivery, CronAddParamsDeliveryWebhook):
        return {"label": f"webhook:{delivery.to}", "detail": "webhook"}
    if mode == "announce":
        return {"label": "announce -> session", "detail": "the reply stays in the run's session"}
    return {"label": "not requested", "detail": "not requested"}


def _check_runtime(call: Call, job: CronJob) -> None:
    """What only the current generation can tell: the agent and the model exist."""
    gen = call.gateway.actors.supervisor.generation
    try:
        spec = gen.agent(job.agentId)
    except GenerationError as exc:
        raise invalid_request(f"invalid cron params: agentId: {exc}") from exc
    payload = job.payload
    model = payload.model if isinstance(payload, CronAddParamsPayloadAgentTurn) else None
    if isinstance(model, str) and model.strip():
        try:
            gen.resolve(model.strip(), agent_id=spec.id)
        except GenerationError as exc:
            raise invalid_request(f"invalid cron params: payload.model: {exc}") from exc
    if job.sessionTarget == "main" and spec.id != gen.default_agent:
        raise invalid_request(
            'invalid cron params: sessionTarget "main" is only valid for the default agent'
        )


# --- read -------------------------------------------------------------------------------------


async def cron_status(call: Call, params: CronStatusParams) -> dict[str, Any]:
    cron = _cron(call)
    await _checkpoint()
    return cron.status()


async def _checkpoint() -> None:
    await trio.lowlevel.checkpoint()


async def cron_list(call: Call, params: CronListParams) -> dict[str, Any]:
    cron = _cron(call)
    await _checkpoint()
    default_agent = call.gateway.actors.supervisor.generation.default_agent
    jobs = select_jobs(cron.jobs.values(), params, default_agent)
    total = len(jobs)
    offset = opt(params.offset) or 0
    limit = opt(params.limit) or 50
    page = jobs[offset : offset + limit]
    revision = hashlib.sha256(
        msgspec.json.encode(sorted((j.id, j.updatedAtMs) for j in jobs))
    ).digest()
    has_more = offset + len(page) < total
    views = []
    for job in page:
        view = job_view(job)
        view["effectiveAgentId"] = job.agentId or default_agent
        views.append(view)
    out: dict[str, Any] = {
        "jobs": views,
        "snapshotRevision": "sha256:" + base64.urlsafe_b64encode(revision).decode().rstrip("="),
        "total": total,
        "offset": offset,
        "limit": limit,
        "hasMore": has_more,
        "nextOffset": offset + len(page) if has_more else None,
    }
    if not opt(params.compact) and opt(params.includeDeliveryPreviews) is not False:
        out["deliveryPreviews"] = {job.id: _preview(job) for job in page}
    return out


async def cron_get(call: Call, params: CronGetParams) -> dict[str, Any]:
    job = _job(call, _job_id("cron.get", params))
    await _checkpoint()
    return job_view(job)


def _statuses(single: str | None, many: Sequence[str] | None) -> tuple[str, ...]:
    if many:
        return tuple(many)
    if single and single != "all":
        return (single,)
    return ()


async def cron_runs(call: Call, params: CronRunsParams) -> dict[str, Any]:
    cron = _cron(call)
    ids = [v for v in (opt(params.id), opt(params.jobId)) if v]
    if len(ids) == 2 and ids[0] != ids[1]:
        raise invalid_request("invalid cron.runs params: id and jobId name different jobs")
    job_id = ids[0] if ids else None
    if opt(params.scope) == "job" and job_id is None:
        raise invalid_request('invalid cron.runs params: scope "job" requires id or jobId')
    limit = opt(params.limit) or 50
    offset = opt(params.offset) or 0
    delivery_single = opt(params.deliveryStatus)
    query = RunQuery(
        job_id=job_id,
        run_id=opt(params.runId),
        statuses=_statuses(opt(params.status), opt(params.statuses)),
        delivery_statuses=_statuses(delivery_single, opt(params.deliveryStatuses)),
        query=(opt(params.query) or "").strip() or None,
        descending=opt(params.sortDir) != "asc",
        limit=limit,
        offset=offset,
    )
    entries, total = await cron.runs(query)
    has_more = offset + len(entries) < total
    return {
        "entries": entries,
        "total": total,
        "offset": offset,
        "limit": limit,
        "hasMore": has_more,
        "nextOffset": offset + len(entries) if has_more else None,
    }


# --- write ------------------------------------------------------------------------------------


async def cron_add(call: Call, params: CronAddParams) -> dict[str, Any]:
    cron = _cron(call)
    try:
        job = job_from_add(params, job_id=str(uuid.uuid4()), now_ms=cron.clock())
    except CronJobError as exc:
        raise invalid_request(f"invalid cron.add params: {exc}") from exc
    _check_runtime(call, job)
    try:
        await cron.add(job)
    except CronFull as exc:
        raise invalid_request(f"invalid cron.add params: {exc}") from exc
    view = job_view(job)
    view["deliveryPreview"] = _preview(job)
    return view


async def cron_update(call: Call, params: CronUpdateParams) -> dict[str, Any]:
    cron = _cron(call)
    job_id = _job_id("cron.update", params)
    job = _job(call, job_id)
    expected = opt(params.expectedConfigRevision)
    if expected is not None and expected != job_view(job)["configRevision"]:
        raise invalid_request(
            "cron job changed since it was read (expectedConfigRevision does not match)",
            code="CRON_CONFIG_REVISION_MISMATCH",
            jobId=job_id,
        )
    try:
        new = apply_patch(job, params.patch, now_ms=cron.clock())
    except CronJobError as exc:
        raise invalid_request(f"invalid cron.update params: {exc}") from exc
    if isinstance(new.delivery, CronAddParamsDeliveryWebhook):
        problem = webhook_url_problem(new.delivery.to)
        if problem:
            raise invalid_request(f"invalid cron.update params: delivery.to {problem}")
    _check_runtime(call, new)
    try:
        await cron.replace(new)
    except CronNotFound:
        raise not_found(job_id) from None
    except CronFull as exc:
        raise invalid_request(f"invalid cron.update params: {exc}") from exc
    return job_view(new)


async def cron_remove(call: Call, params: CronRemoveParams) -> dict[str, Any]:
    cron = _cron(call)
    job_id = _job_id("cron.remove", params)
    try:
        await cron.remove(job_id)
    except CronNotFound:
        raise not_found(job_id) from None
    return {"ok": True, "removed": True}


async def cron_run(call: Call, params: CronRunParams) -> dict[str, Any]:
    cron = _cron(call)
    job_id = _job_id("cron.run", params)
    try:
        return await cron.run_now(job_id, opt(params.mode) or "force")
    except CronNotFound:
        raise not_found(job_id) from None
