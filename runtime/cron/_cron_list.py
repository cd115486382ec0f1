"""Which jobs `cron.list` shows, and in what order (OpenClaw's filters and sorts).

`select_jobs` applies `cron.list`'s params to a scheduler's jobs: `enabled` (`all`,
`enabled` the default, `disabled`; `includeDisabled: true` means `all`), `scheduleKind`,
`lastRunStatus` (a job never run is `unknown`), `trigger` (clawlane has no condition
triggers: `conditional` matches nothing), `agentId` (a job without one is the default
agent's), `query` (a case-insensitive substring of the name, description or id), then
`sortBy` (`nextRunAtMs` the default, jobs without a next run last; `updatedAtMs`; `name`)
and `sortDir` (`asc` the default, `desc`). The `cron.list` method and the `automations`
tool's `list` both use it. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from runtime.protocol import CronListParams, opt

from ._cron_jobs import CronJob

__all__ = ["effective_agent", "select_jobs"]


def _sort_key(sort_by: str) -> Callable[[CronJob], Any]:
    if sort_by == "name":
        return lambda j: (j.name.lower(), j.id)
    if sort_by == "updatedAtMs":
        return lambda j: (j.updatedAtMs, j.id)
    return lambda j: (j.state.nextRunAtMs is None, j.state.nextRunAtMs or 0, j.id)


def effective_agent(job: CronJob, default_agent: str) -> str:
    """The agent a job runs as: its own, else the default agent."""
    return (job.agentId or default_agent).lower()


def select_jobs(
    jobs: Iterable[CronJob], params: CronListParams, default_agent: str
) -> list[CronJob]:
    """The jobs `params` selects, in the order it asks for (see the module docstring)."""
    chosen = list(jobs)
    enabled = opt(params.enabled) or ("all" if opt(params.includeDisabled) else "enabled")
    if enabled == "enabled":
        chosen = [j for j in chosen if j.enabled]
    elif enabled == "disabled":
        chosen = [j for j in chosen if not j.enabled]
    kind = opt(params.scheduleKind)
    if kind and kind != "all":
        chosen = [j for j in chosen if j.schedule.__struct_config__.tag == kind]
    status = opt(params.lastRunStatus)
    if status and status != "all":
        chosen = [j for j in chosen if (j.state.lastRunStatus or "unknown") == status]
    if opt(params.trigger) == "conditional":
        chosen = []  # clawlane has no condition triggers
    agent = opt(params.agentId)
    if agent:
        chosen = [j for j in chosen if effective_agent(j, default_agent) == agent.lower()]
    query = (opt(params.query) or "").strip().lower()
    if query:
        chosen = [j for j in chosen if query in f"{j.name} {j.description or ''} {j.id}".lower()]
    chosen.sort(key=_sort_key(opt(params.sortBy) or "nextRunAtMs"))
    if opt(params.sortDir) == "desc":
        chosen.reverse()
    return chosen
