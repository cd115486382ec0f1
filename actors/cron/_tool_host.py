"""The scheduler the `automations` tool reaches on the gateway.

What the tool answers (params decoded and checked as the `cron.*` methods check them, the
caller's scope, the results' shapes) is `runtime.agent.CronToolHost`, which the embedded
runtime's scheduler shares; here is only `GatewayJobs`, its `JobScheduler` over the gateway's
`CronScheduler`: the jobs, their runs from the `CronStore`, and `wake` through the gateway's
heartbeats (`supervisor.heartbeats`: `enqueue`, `wake_now`; without them it is refused).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import trio

from runtime.agent import CronToolHost
from runtime.cron import CronJob
from runtime.model import ModelRuntimeGeneration
from runtime.tools import ToolError

from ._scheduler import CronScheduler
from ._scheduler import open_cron as open_scheduler
from ._store import RunQuery

__all__ = ["GatewayJobs", "open_cron"]


class GatewayJobs:
    """`runtime.agent.JobScheduler` over `cron` (see the module docstring)."""

    def __init__(self, cron: CronScheduler) -> None:
        self.cron = cron

    @property
    def generation(self) -> ModelRuntimeGeneration:
        generation: ModelRuntimeGeneration = self.cron.supervisor.generation
        return generation

    def now_ms(self) -> int:
        return self.cron.clock()

    def all_jobs(self) -> Iterable[CronJob]:
        return self.cron.jobs.values()

    def find(self, job_id: str) -> CronJob | None:
        return self.cron.jobs.get(job_id)

    async def add(self, job: CronJob) -> object:
        return await self.cron.add(job)

    async def replace(self, job: CronJob) -> object:
        return await self.cron.replace(job)

    async def remove(self, job_id: str) -> None:
        await self.cron.remove(job_id)

    async def run_now(self, job_id: str, mode: str) -> dict[str, Any]:
        return await self.cron.run_now(job_id, mode)

    async def runs(self, job_id: str, limit: int) -> tuple[list[dict[str, Any]], int]:
        return await self.cron.runs(RunQuery(job_id=job_id, limit=limit, offset=0))

    def status(self) -> dict[str, Any]:
        return self.cron.status()

    async def wake(self, session_key: str, agent_id: str, text: str, mode: str) -> None:
        await trio.lowlevel.checkpoint()
        beats = getattr(self.cron.supervisor, "heartbeats", None)
        if beats is None:
            raise ToolError("wake is not available: this gateway runs no heartbeats")
        beats.enqueue(session_key, text)
        if mode == "now":
            beats.wake_now(agent_id, "wake", session_key)


@asynccontextmanager
async def open_cron(supervisor: Any, store: Any, **kwargs: Any) -> AsyncIterator[CronScheduler]:
    """`_scheduler.open_cron`, with the `automations` tool offered to `supervisor`'s runs
    (its `services.automations`) while the scheduler runs."""
    async with open_scheduler(supervisor, store, **kwargs) as cron:
        services = getattr(supervisor, "services", None)
        if services is not None:
            services.automations = CronToolHost(GatewayJobs(cron))
        try:
            yield cron
        finally:
            if services is not None:
                services.automations = None
