"""`heartbeat_respond`: how a heartbeat run reports its outcome (OpenClaw's tool, its
parameters and result), offered only in heartbeat runs.

Arguments: `outcome` (`no_change`, `progress`, `done`, `blocked`, `needs_attention`),
`notify` (bool), `summary` (non-empty), optional `notificationText`, `reason`, `priority`
(`low`, `normal`, `high`), `nextCheck`, `scratch`. Accepted once per run (a second call is a
tool error, as OpenClaw's); the result the model reads is `{"status": "accepted", ...}` as
JSON. The accepted response waits in the host's `HeartbeatResponses` under the run's id,
where the heartbeat runner takes it when the run ends: it decides the heartbeat's outcome
before the reply text does (`runtime.heartbeat.classify_reply`). `scratch` is accepted and
reported (`scratchPending`, `scratchBytes`) but kept nowhere: clawlane's heartbeat scratch is
the workspace's `HEARTBEAT.md`, which the agent edits with its file tools.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

import msgspec

from runtime.tools import ToolContext, ToolError, ToolResult, text_result

__all__ = ["HeartbeatRespondParams", "HeartbeatRespondTool", "HeartbeatResponses"]

MAX_PENDING: Final = 1024
Outcome = Literal["no_change", "progress", "done", "blocked", "needs_attention"]


class HeartbeatRespondParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    outcome: Outcome
    notify: bool
    summary: str
    notificationText: str | None = None
    reason: str | None = None
    priority: Literal["low", "normal", "high"] | None = None
    nextCheck: str | None = None
    scratch: str | None = msgspec.field(default=None)


class HeartbeatResponses:
    """Accepted responses by run id, until the runner takes them (bounded: the oldest is
    forgotten past `MAX_PENDING`)."""

    def __init__(self) -> None:
        self._by_run: dict[str, dict[str, Any]] = {}

    def accept(self, run_id: str, response: dict[str, Any]) -> bool:
        """Keep `response` for `run_id`; False when the run already has one."""
        if run_id in self._by_run:
            return False
        while len(self._by_run) >= MAX_PENDING:
            del self._by_run[next(iter(self._by_run))]
        self._by_run[run_id] = response
        return True

    def take(self, run_id: str) -> dict[str, Any] | None:
        return self._by_run.pop(run_id, None)


class HeartbeatRespondTool:
    """`heartbeat_respond` (see the module docstring)."""

    name = "heartbeat_respond"
    description = (
        "Accept heartbeat result for post-turn handling. `notify=false` no visible send. "
        "`notify=true` needs concise notificationText. Scratch is monitor prose only."
    )
    params = HeartbeatRespondParams
    mutating = False

    def __init__(self, responses: HeartbeatResponses) -> None:
        self._responses = responses

    async def run(self, args: HeartbeatRespondParams, ctx: ToolContext) -> ToolResult:
        """Record the response (not a checkpoint inside)."""
        summary = args.summary.strip()
        if not summary:
            raise ToolError(
                "Invalid heartbeat response. Provide outcome, notify, and non-empty summary."
            )
        response: dict[str, Any] = {"outcome": args.outcome, "notify": args.notify}
        response["summary"] = summary
        for name in ("notificationText", "reason", "priority", "nextCheck"):
            value = getattr(args, name)
            if isinstance(value, str) and value.strip():
                response[name] = value.strip()
        if not self._responses.accept(ctx.run_id, response):
            raise ToolError("heartbeat_respond already accepted for this turn")
        shown = {"status": "accepted", **response}
        if args.scratch is not None:
            shown |= {"scratchPending": True, "scratchBytes": len(args.scratch.encode())}
        return text_result(json.dumps(shown, indent=2), details={"status": "accepted", **response})
