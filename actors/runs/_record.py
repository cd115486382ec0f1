"""`RunRecord`: one run as the gateway keeps it, from accepted to a while after its end.

The run's lifecycle state is `runtime.agent.RunState` (decided by `runtime.agent._run`);
the record adds what the gateway needs around it: when it was accepted, the event its
waiters wait on, the cancel scope that stops it, the callbacks that answer without a task.
The registry (`actors.runs._registry`) keeps records; the session actor mutates them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs
import trio

from runtime.agent import AbortReason, RunState

__all__ = ["RunRecord"]


@attrs.define(eq=False, kw_only=True)
class RunRecord(RunState):
    """One run, from accepted to ended: the run's lifecycle state (`runtime.RunState`) and
    what the gateway keeps around it. Mutated only by its session actor (and `abort`)."""

    accepted_at: int
    done: trio.Event = attrs.field(factory=trio.Event)
    cancel_scope: trio.CancelScope | None = None
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

    @property
    def ended(self) -> bool:
        return self.done.is_set()

    def abort(self, reason: AbortReason) -> bool:
        """Ask the run to stop. Returns False if it already ended. Not a checkpoint."""
        if self.done.is_set():
            return False
        if self.abort_reason is None:
            self.abort_reason = reason
        self.aborted = True
        if self.cancel_scope is not None:
            self.cancel_scope.cancel()
        return True

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
