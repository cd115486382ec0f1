"""A run's span (with `diagnostics.otel` on): `openclaw.run`, the child of the trace its
request was made in (its RPC's span), current for the whole run so that its model calls,
tool calls, compactions and its end's store commit are its children. Its attributes: the
run id, the session id, the agent, the provider and model the run used (its final meta), its outcome, the
time it waited in the session's lane (`openclaw.run.queued_ms`) and the time it ran
(`openclaw.run.duration_ms`); the same two figures go to the `queue.wait_ms` and
`run.duration_ms` metrics, and its start to `queue.lane.dequeue` and `queue.depth` (the
runs still waiting in the lane; `queue.lane.enqueue` is counted as a run is placed). The
session actor calls here only when
`runtime.telemetry.STATE.on`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from runtime import telemetry

from ._request import RunRequest

RUN_SPAN = "openclaw.run"


async def traced_run(
    execute: Callable[[RunRequest], Awaitable[None]], req: RunRequest, actor: Any
) -> None:
    """`execute(req)` inside the run's span. `actor`: the session actor (its agent id)."""
    rec = req.record
    lane = {"openclaw.lane": req.lane}
    telemetry.record("queue.lane.dequeue", 1, lane)
    telemetry.record("queue.depth", len(actor.lane.items), lane)
    span = telemetry.start_span(
        RUN_SPAN,
        {
            "openclaw.run.id": rec.run_id,
            "openclaw.sessionId": rec.session_id,
            "openclaw.agent": actor.agent_id,
            "openclaw.lane": req.lane,
        },
        context=req.trace,
    )
    try:
        with telemetry.current(span):
            await execute(req)
    finally:
        _end(span, req, actor)


def _end(span: telemetry.Span, req: RunRequest, actor: Any) -> None:
    rec = req.record
    meta: dict[str, Any] = ((rec.final or {}).get("meta") or {}).get("agentMeta") or {}
    metric: dict[str, Any] = {"openclaw.agent": actor.agent_id}
    attributes: dict[str, Any] = {"openclaw.outcome": rec.status}
    for key in ("provider", "model"):
        if isinstance(meta.get(key), str):
            attributes[f"openclaw.{key}"] = metric[f"openclaw.{key}"] = meta[key]
    if rec.started_at is not None:
        queued = max(0, rec.started_at - rec.accepted_at)
        attributes["openclaw.run.queued_ms"] = queued
        telemetry.record("queue.wait_ms", queued, {"openclaw.lane": req.lane})
        if rec.ended_at is not None:
            ran = max(0, rec.ended_at - rec.started_at)
            attributes["openclaw.run.duration_ms"] = ran
            telemetry.record("run.duration_ms", ran, metric)
    span.set_attributes(attributes)
    if rec.status == "error":
        telemetry.fail(span, rec.error_kind or "error", rec.error or "")
    span.end()
