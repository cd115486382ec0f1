"""`RunRecord`: one run as the gateway keeps it, from accepted to a while after its end.

The run's lifecycle state, the event its waiters wait on and the cancel scope that stops it
are `runtime.agent.TrackedRun` (decided by `runtime.agent._run`, as the embedded runtime's
runs); the record adds what the gateway needs around it: when it was accepted, when it
ended on trio's clock, the callbacks that answer without a task.
The registry (`actors.runs._registry`) keeps records; the session actor mutates them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs

from runtime.agent import TrackedRun

__all__ = ["RunRecord"]


@attrs.define(eq=False, kw_only=True)
class RunRecord(TrackedRun):
    """One run, from accepted to ended: the run's lifecycle state, waiters' event and
    cancel scope (`runtime.agent.TrackedRun`) and what the gateway keeps around it. Mutated
    only by its session actor (and `abort`)."""

    accepted_at: int
    finished_mono: float | None = None
    on_done: list[Callable[[RunRecord], None]] | None = None
    """Called (synchronously, in order) when the run ends, after `done` is set: for callers
    that answer without a task waiting on `done`. A callback that raises is logged."""
    heartbeat: bool = False
    """A heartbeat run (`actors.heartbeat`): its chat output is shown as OpenClaw shows a
    heartbeat's (`ChatStream`)."""
    restored: bool = False
    """Loaded from the run journal at startup (it ran, or was interrupted, before a
    restart): it has no event stream of this process (`actors._recovery`)."""

    def wait_status(self) -> Literal["ok", "error", "timeout"]:
        """`agent.wait`'s view: an aborted run reports `timeout`."""
        if self.status == "ok":
            return "ok"
        if self.status == "aborted":
            return "timeout"
        return "error"

    def wait_answer(self) -> dict[str, Any]:
        """What `agent.wait` answers for the run once it has ended (on any node)."""
        result: dict[str, Any] = {"runId": self.run_id, "status": self.wait_status()}
        if self.started_at is not None:
            result["startedAt"] = self.started_at
        if self.ended_at is not None:
            result["endedAt"] = self.ended_at
        if self.status == "error" and self.error:
            result["error"] = self.error
        return result
