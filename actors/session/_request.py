"""`RunRequest`: a run on its way through a session's lane, and the queue modes it asks for.

Below both the lane (`actors.session._lane`, which orders requests) and the session actor
(`actors.session._actor`, which runs them): a request knows its record, its message and how it
wants to be queued, and can say what its run journal end row is (`end_row`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs

from runtime import telemetry
from runtime.loop import SteerInbox, now_ms

from ..runs import RunRecord, Subscriber
from ..store import JournalRow, RunIdentity, RunOutcome, SpawnLink, ended_row

__all__ = ["QueueMode", "RunRequest"]

QueueMode = Literal["steer", "followup", "collect", "interrupt"]


@attrs.define(eq=False)
class RunRequest:
    """A run waiting in a session's lane."""

    record: RunRecord
    message: str
    timeout_s: float | None = None
    model_ref: str | None = None
    extra_system_prompt: str | None = None
    owner: Subscriber | None = None
    reset: bool = False
    reset_reason: str = "reset"
    queue_mode: QueueMode = "followup"
    origin: str = "webchat"
    lane: str = "main"
    prompt: str | None = None
    followers: list[RunRequest] = attrs.field(factory=list)
    inbox: SteerInbox | None = None
    queued_while_busy: bool = False
    debounce: bool = False
    """Chat messages queued while busy wait out `debounceMs`; `agent` runs do not."""
    light_context: bool = False
    """The turn's system prompt leaves out the workspace's bootstrap files (a heartbeat with
    `lightContext`: OpenClaw's `bootstrapContextMode: "lightweight"`)."""
    kind: str = "agent"
    """`agent` or `chat`: the idempotency cache its key lives in (`actors.store._journal`)."""
    journaled: bool = False
    """Its acceptance is in the run journal: its end is written there too."""
    spawn: SpawnLink | None = None
    """A subagent's run: the session that spawned it (journaled with the run, so that a
    restart can still announce its result there)."""
    wanted: Callable[[], bool] | None = None
    """Whether it is still to run, asked when it reaches the lane and when a run it was
    steered into ends without taking it (None: always): one no longer wanted ends unrun
    (`dropped`), as a subagent's announce its parent's `sessions_yield` claimed meanwhile
    (the yield's batch tells it)."""
    trace: Any = attrs.field(factory=telemetry.capture)
    """The trace context it was made in (its RPC's span) while telemetry is on: its run's
    span continues it (`actors.session._traced`). None when off."""

    def identity(self) -> RunIdentity:
        """The run as its journal rows name it."""
        rec = self.record
        return RunIdentity(
            rec.run_id, self.kind, rec.session_key, rec.session_id, rec.agent_id, rec.accepted_at
        )

    def end_row(self) -> JournalRow | None:
        """The journal row of its ended run (None when the run was not journaled). Not a
        checkpoint."""
        if not self.journaled:
            return None
        rec = self.record
        status = rec.status if rec.status in ("ok", "error", "aborted") else "error"
        return ended_row(
            self.identity(),
            ended_at=rec.ended_at or now_ms(),
            outcome=RunOutcome(
                status=status,
                error=rec.error,
                abortReason=rec.abort_reason,
                startedAt=rec.started_at,
                final=rec.final if self.kind == "agent" else None,
                spawn=self.spawn,
            ),
        )
