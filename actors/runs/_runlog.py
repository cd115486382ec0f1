"""The two log lines of every run (logger `clawlane.runs`): started and ended.

    run started runId=r1 session=agent:main:main agent=main model=local/echo generation=1 queuedMs=0
    run ended runId=r1 session=agent:main:main agent=main model=local/echo status=ok durationMs=5
        inputTokens=711 outputTokens=3 totalTokens=714

At DEBUG, as OpenClaw's gateway logs its runs (`embedded run agent start` / `end`): at the
default `info` a gateway doing thousands of runs a second writes nothing per run that went
well. A run that ends in an error logs at WARNING with its `error`; an aborted one at INFO,
saying why (`abortReason`). They are on the hot path: each function returns after one
`isEnabledFor` check when the level is off, and the fields are gathered only when it is on
(the text itself is rendered by the handler).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from runtime.logs import LogEvent

if TYPE_CHECKING:
    from ._record import RunRecord

__all__ = ["log_run_ended", "log_run_started", "run_log"]

run_log: Final = logging.getLogger("clawlane.runs")
_DEBUG: Final = logging.DEBUG
_LEVELS: Final = {"error": logging.WARNING, "aborted": logging.INFO}
"""The level of a `run ended` line by the run's status (any other: DEBUG)."""


def log_run_started(record: RunRecord, model: str | None) -> None:
    """The run got its lane and starts its first model turn. Not a checkpoint."""
    if not run_log.isEnabledFor(_DEBUG):
        return
    queued = (
        record.started_at - record.accepted_at
        if record.started_at is not None and record.accepted_at
        else None
    )
    run_log.debug(
        LogEvent(
            "run started",
            {
                "runId": record.run_id,
                "session": record.session_key,
                "agent": record.agent_id,
                "model": model,
                "generation": record.generation,
                "queuedMs": queued,
            },
        )
    )


def log_run_ended(record: RunRecord) -> None:
    """The run has its terminal state (`record.status`). Not a checkpoint."""
    level = _LEVELS.get(record.status, _DEBUG)
    if not run_log.isEnabledFor(level):
        return
    meta: dict[str, Any] = (record.final or {}).get("meta") or {}
    agent_meta: dict[str, Any] = meta.get("agentMeta") or {}
    usage: dict[str, Any] = agent_meta.get("usage") or {}
    provider, model = agent_meta.get("provider"), agent_meta.get("model")
    started = record.started_at
    ended = record.ended_at
    run_log.log(
        level,
        LogEvent(
            "run ended",
            {
                "runId": record.run_id,
                "session": record.session_key,
                "agent": record.agent_id,
                "model": f"{provider}/{model}" if provider and model else None,
                "status": record.status,
                "durationMs": ended - started
                if started is not None and ended is not None
                else None,
                "inputTokens": usage.get("input"),
                "outputTokens": usage.get("output"),
                "totalTokens": usage.get("total"),
                "abortReason": record.abort_reason if record.status == "aborted" else None,
                "error": record.error if record.status == "error" else None,
            },
        ),
    )
