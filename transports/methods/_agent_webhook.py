"""The `agent` method's optional `webhook`: POST the run's result when it ends.

One hook in `_agent` (both of its paths, once the run is accepted) hands the run to the
gateway's `actors.RunWebhooks` (every node has its own; cron runs on one node of a
cluster), which waits for the run's end and delivers with the cron webhook machinery (`actors.runs._webhook`: HMAC signature, bounded retries with backoff, SSRF policy).
Each attempt is logged (`clawlane.webhook`); the run itself is unaffected by the outcome.
"""

from __future__ import annotations

import logging
from typing import Any

from actors import RunRecord
from runtime.protocol import AgentParams

from ._context import Host

__all__ = ["attach_webhook", "run_result"]

log = logging.getLogger("clawlane.webhook")


def run_result(record: RunRecord) -> dict[str, Any]:
    """The webhook body: what the `agent` method's final `res` says, plus where and when."""
    body: dict[str, Any] = {
        "runId": record.run_id,
        "status": "ok" if record.status == "ok" else "error",
        "summary": "completed" if record.status == "ok" else (record.error or "agent run failed"),
        "result": record.final or {"payloads": [], "meta": {}},
        "sessionKey": record.session_key,
        "sessionId": record.session_id,
        "agentId": record.agent_id,
        "acceptedAt": record.accepted_at,
    }
    if record.started_at is not None:
        body["startedAt"] = record.started_at
    if record.ended_at is not None:
        body["endedAt"] = record.ended_at
    if record.aborted:
        body["aborted"] = True
        body["stopReason"] = record.abort_reason
    return body


def attach_webhook(gw: Host, params: AgentParams, record: RunRecord) -> None:
    """If the request names a `webhook`, deliver the run's result there when it ends.
    Never raises; not a checkpoint."""
    url = params.webhook if isinstance(params.webhook, str) else None
    if url is None:
        return
    if gw.actors.webhooks is None:
        log.warning("run %s: webhook %s not delivered: the gateway is stopping", record.run_id, url)
        return
    gw.actors.webhooks.watch(record, url, lambda: run_result(record))
