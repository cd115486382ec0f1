"""A cron job's system event (a `systemEvent` job into the agent's main session), queued and
told where the session lives, as OpenClaw 2026.9.6's cron does it in one process.

`deliver_here` does it on this node: the session is made or loaded here (in a cluster it is
this node's: `Heartbeats.deliver_event` sends the event to the node that owns the session
otherwise, `HeartbeatPeers.deliver_event`), its row's `updatedAt` touched, the text queued
as a system event of the session (context `cron:<jobId>`) and a heartbeat wake requested
(source `cron`, reason the context key):

- not waited for (`wakeMode: "next-heartbeat"`): an `event` wake, which waits for the
  agent's next due heartbeat; the answer comes at once, without a wake result;
- waited for (`wakeMode: "now"`): an `immediate` wake, and its end (`wake_and_wait`: ran,
  skipped, failed, or handed off to a later retry). A wake that neither ran nor was handed
  off takes the event back out of the queue (so does a cancelled wait), as OpenClaw's cron
  removes its queued event.

Raises what loading the session raises (`StoreError`, `ClusterError`, `GenerationError`);
`deliver_answering` (for another node, `Heartbeats.deliver_routed`) answers it instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from runtime.heartbeat import EventDelivery, WakeResult
from runtime.loop import now_ms

if TYPE_CHECKING:
    from .._supervisor import Supervisor

__all__ = ["deliver_answering", "deliver_here"]

log = logging.getLogger("clawlane.heartbeat")


async def deliver_here(
    sup: Supervisor, agent_id: str, session_key: str, text: str, *, context_key: str, wait: bool
) -> EventDelivery:
    """Queue `text` for `session_key` here and wake its agent's heartbeat (see the module
    docstring). A checkpoint."""
    beats = sup.heartbeats
    assert beats is not None, "deliver_here without heartbeats"
    if sup.session_gate is not None:
        await sup.session_gate(session_key)  # in a cluster: this node owns it (or takes it)
    actor = await sup.session(session_key, agent_id)
    row = await actor.save_row(updatedAt=now_ms())
    queue = sup.services.system_events
    queue.enqueue(session_key, text, context_key=context_key)
    if not wait:
        beats.request_wake(agent_id, source="cron", intent="event", reason=context_key)
        return EventDelivery(row.sessionId)
    try:
        result = await beats.wake_and_wait(
            agent_id, source="cron", intent="immediate", reason=context_key
        )
    except BaseException:
        queue.discard(session_key, context_key, text)
        raise
    if result.status != "ran" and not result.handed_off:
        queue.discard(session_key, context_key, text)
    return EventDelivery(row.sessionId, result)


async def deliver_answering(
    sup: Supervisor,
    agent_id: str,
    session_key: str,
    text: str,
    *,
    context_key: str,
    wait: bool,
    answer: Callable[[EventDelivery], None],
) -> None:
    """`deliver_here` for another node, which `answer` tells how it went (an error as a
    `failed` wake: the event was not queued). A checkpoint."""
    try:
        done = await deliver_here(
            sup, agent_id, session_key, text, context_key=context_key, wait=wait
        )
    except Exception as exc:
        log.warning("cron event for %s not delivered: %s", session_key, exc)
        done = EventDelivery(None, WakeResult("failed", str(exc) or type(exc).__name__))
    answer(done)
