"""What the `automations` tool (alias `cron`) answers, over any scheduler that keeps jobs.

`CronToolHost` is the tool's host (`runtime.tools.AutomationsHost`) for both the gateway
(`actors.cron`, over its durable `CronScheduler`) and the embedded runtime
(`_embedded_cron`, jobs in memory): each keeps its jobs behind a `JobScheduler`, and this
module owns the rest, so the two answer alike. Each call is one `cron.*` operation, decoded
strictly into the method's own params type (`CronAddParams`, `CronUpdateParams`, ...) and
checked by the same functions the `cron.*` methods use (`runtime.cron.job_from_add`,
`apply_patch`, `webhook_url_problem`, `select_jobs`; `check_job_runtime` for what only the
generation knows). A refusal is a `ToolError` (the model reads its message). Results are the
methods' payloads.

As OpenClaw's gateway scopes an agent's tool calls (its caller scope), a run sees and
changes only its own agent's jobs: `list` shows them (with `cron.list`'s filters and sorts,
`scope: "caller"`), `get` / `update` / `remove` / `run` / `runs` of another agent's job is
`cron job not found`, `add` of a job for another agent or naming another agent's session is
refused (`job agentId outside caller scope`), and `update` cannot change `agentId`. `wake`
of a session of another agent, or of a subagent's, is refused; the scheduler queues the
event (`JobScheduler.wake`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, Final, Protocol, TypeVar

import msgspec
import trio

from ..cron import (
    CronGetParams,
    CronJob,
    CronRemoveParams,
    CronRunParams,
    CronUpdateParams,
    apply_patch,
    effective_agent,
    job_from_add,
    job_view,
    select_jobs,
    webhook_url_problem,
)
from ..model import GenerationError, ModelRuntimeGeneration
from ..protocol import (
    CronAddParams,
    CronAddParamsDeliveryWebhook,
    CronAddParamsPayloadAgentTurn,
    CronListParams,
    opt,
)
from ..sessions import parse_session_key
from ..tools import ToolContext, ToolError

__all__ = ["RUNS_PAGE", "SCOPE_HINT", "CronToolHost", "JobScheduler", "check_job_runtime"]

_T = TypeVar("_T")

SCOPE_HINT: Final = (
    "Restricted automation inventory: this agent's jobs. For Gateway-wide management, use "
    "the cron.* methods or the Control UI's Automations page."
)
RUNS_PAGE: Final = 50
"""`runs` answers a job's newest entries, this many."""


class JobScheduler(Protocol):
    """Where a host keeps its jobs, as `CronToolHost` reaches them. The async methods are
    checkpoints. `add` and `replace` raise `ValueError` for a job the scheduler refuses
    (`runtime.cron.CronJobError`, or the jobs would not fit); the message is the model's."""

    @property
    def generation(self) -> ModelRuntimeGeneration:
        """The published generation (agents, models, the default agent)."""
        ...

    def now_ms(self) -> int:
        """The scheduler's clock, epoch milliseconds."""
        ...

    def all_jobs(self) -> Iterable[CronJob]: ...

    def find(self, job_id: str) -> CronJob | None: ...

    async def add(self, job: CronJob) -> object:
        """Keep the new `job` and schedule it."""
        ...

    async def replace(self, job: CronJob) -> object:
        """Keep `job` (from `apply_patch`) in place of the job of its id."""
        ...

    async def remove(self, job_id: str) -> None: ...

    async def run_now(self, job_id: str, mode: str) -> dict[str, Any]:
        """`cron.run`'s answer: `force` starts it now, `due` only if it is due."""
        ...

    async def runs(self, job_id: str, limit: int) -> tuple[list[dict[str, Any]], int]:
        """The job's newest `limit` run entries, newest first, and how many it has."""
        ...

    def status(self) -> dict[str, Any]:
        """`cron.status`'s answer."""
        ...

    async def wake(self, session_key: str, agent_id: str, text: str, mode: str) -> None:
        """Queue `text` as a system event for the session's next turn (`mode` `now`: run
        that turn at once). Raises `ToolError` when the host cannot."""
        ...


def check_job_runtime(generation: ModelRuntimeGeneration, job: CronJob) -> str | None:
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


class _NotFound(LookupError):
    pass


class CronToolHost:
    """`automations` over `jobs` (see the module docstring)."""

    def __init__(self, jobs: JobScheduler) -> None:
        self.jobs = jobs

    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        name = "_wake" if method == "wake" else "_" + method.removeprefix("cron.")
        handler = getattr(self, name, None)
        if not (method.startswith("cron.") or method == "wake") or handler is None:
            raise ToolError(f"unknown automations operation: {method}")
        caller = ctx.agent_id.lower()
        try:
            result: dict[str, Any] = await handler(method, params, caller)
        except _NotFound as exc:
            raise ToolError(
                f"cron job not found: {exc.args[0] if exc.args else ''}. List automations and "
                "retry with a current job id."
            ) from None
        except ValueError as exc:  # CronJobError, JobIdError, a full scheduler
            raise ToolError(f"invalid {method} params: {exc}") from None
        return result

    def _check(self, method: str, job: CronJob) -> None:
        problem = check_job_runtime(self.jobs.generation, job)
        if problem:
            raise ToolError(f"invalid {method} params: {problem}")

    def _owns(self, caller: str, job: CronJob) -> bool:
        """OpenClaw's caller scope: the job is the calling agent's (its effective agent, and
        the sessions it names are that agent's)."""
        default_agent = self.jobs.generation.default_agent
        return effective_agent(job, default_agent) == caller and _refs_match(job, caller)

    def _job(self, caller: str, job_id: str) -> CronJob:
        """The caller's job `job_id`; another agent's job is as unknown as a missing one."""
        job = self.jobs.find(job_id)
        if job is None or not self._owns(caller, job):
            raise _NotFound(job_id)
        return job

    async def _status(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        return self.jobs.status()

    async def _list(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        query = _decode(method, params, CronListParams)
        default_agent = self.jobs.generation.default_agent
        jobs = [
            j
            for j in select_jobs(self.jobs.all_jobs(), query, default_agent)
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
        await trio.lowlevel.checkpoint()
        ref = _decode(method, params, CronGetParams)
        return job_view(self._job(caller, str(ref.job_id())))

    async def _runs(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        ref = _decode(method, params, CronGetParams)
        job_id = self._job(caller, str(ref.job_id())).id
        entries, total = await self.jobs.runs(job_id, RUNS_PAGE)
        has_more = len(entries) < total
        return {
            "entries": entries,
            "total": total,
            "offset": 0,
            "limit": RUNS_PAGE,
            "hasMore": has_more,
            "nextOffset": len(entries) if has_more else None,
        }

    async def _add(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        add = _decode(method, params, CronAddParams)
        job = job_from_add(add, job_id=str(uuid.uuid4()), now_ms=self.jobs.now_ms())
        if not self._owns(caller, job):
            raise ToolError(f"invalid {method} params: job agentId outside caller scope")
        self._check(method, job)
        await self.jobs.add(job)
        return job_view(job)

    async def _update(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        update = _decode(method, params, CronUpdateParams)
        job = self._job(caller, str(update.job_id()))
        if update.patch.agentId is not msgspec.UNSET:
            raise ToolError(f"invalid {method} params: agentId cannot be changed by caller scope")
        new = apply_patch(job, update.patch, now_ms=self.jobs.now_ms())
        if not self._owns(caller, new):
            raise ToolError(f"invalid {method} params: session outside caller scope")
        if isinstance(new.delivery, CronAddParamsDeliveryWebhook):
            problem = webhook_url_problem(new.delivery.to)
            if problem:
                raise ToolError(f"invalid {method} params: delivery.to {problem}")
        self._check(method, new)
        await self.jobs.replace(new)
        return job_view(new)

    async def _remove(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        ref = _decode(method, params, CronRemoveParams)
        await self.jobs.remove(self._job(caller, str(ref.job_id())).id)
        return {"ok": True, "removed": True}

    async def _run(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        run = _decode(method, params, CronRunParams)
        job_id = self._job(caller, str(run.job_id())).id
        return await self.jobs.run_now(job_id, opt(run.mode) or "force")

    async def _wake(self, method: str, params: dict[str, Any], caller: str) -> dict[str, Any]:
        """OpenClaw's `wake` for the caller's own sessions: the text is queued as a system
        event for the session's next turn (`next-heartbeat`), which `now` runs at once."""
        key = str(params.get("sessionKey") or "")
        agent = str(params.get("agentId") or caller).lower()
        parsed = parse_session_key(key) if key else None
        if agent != caller or (parsed is not None and parsed.agent_id != caller):
            raise ToolError("invalid wake params: sessionKey outside caller scope")
        if ":subagent:" in key:
            raise ToolError("invalid wake params: wake sessionKey cannot target a subagent session")
        await self.jobs.wake(key, agent, str(params["text"]), str(params.get("mode") or ""))
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
