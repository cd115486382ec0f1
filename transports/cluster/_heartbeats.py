"""Heartbeats across a cluster's nodes: a heartbeat runs on the node that owns its session,
and every node shows the same heartbeats (`ClusterHeartbeats`, the node's
`actors.Heartbeats.peers`).

- **Wakes go to the session's owner.** A wake this node's heartbeats would run for a session
  another live node owns (a cadence tick: only the node running cron fires them, each once;
  a wake-now of another agent) is sent to that node (`send_wake`, a `{"beat": "wake"}`
  notice) and runs there as a wake of its own, paced and retried there, never sent on: the
  session does not move for a heartbeat. Nobody owning it (idle, no lease), it runs here and
  takes the lease as any run does. What `actors.heartbeat` keeps here (a wake someone waits
  for, one whose session has system events queued here) is not sent.
- **Queued where the owner reads it.** `wake` and `system-event` queue their text in the
  memory of the node that serves them, for the session's next turn: the router sends them to
  the owner of that session (`BEAT_METHODS`, `beat_session`: the one the method queues for),
  taking its lease when nobody holds it (`Router.handle`), and the owner keeps the lease
  while the text waits (`_leases`), so the session's next turn, requested through any node,
  runs where the text is.
- **The same everywhere.** A `heartbeat` event emitted on any node goes to every node's
  connections and is the last one there too (`last-heartbeat` answers the same on each, the
  newest by `ts`); `set-heartbeats` turns them on or off on every node.

Notices are as reliable as the router's (Redis streams, bounded): a wake lost with its node
does not run (a tick is never run twice; its next one comes), and a node that joins later
does not learn an earlier `set-heartbeats` nor the last event (it answers its own).
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol, cast

import trio

from actors import Cluster, ClusterError, Heartbeats, Supervisor
from runtime.heartbeat import WakeIntent, resolve_heartbeat
from runtime.model import GenerationError
from runtime.sessions import SessionKeyError

from ._leases import SessionLeases

__all__ = ["BEAT_METHODS", "ClusterHeartbeats", "beat_session"]

log = logging.getLogger("clawlane.cluster")

BEAT_METHODS: Final = frozenset({"wake", "system-event"})
"""Methods served by the owner of the session they queue a system event for."""
_INTENTS: Final = frozenset({"manual", "immediate", "event", "scheduled"})


def beat_session(sup: Supervisor, method: str, params: dict[str, Any]) -> str | None:
    """The session `wake` or `system-event` with `params` queues its text for, as the
    method resolves it (`sessionKey`, else the heartbeat session of `agentId` for `wake`,
    of the default agent otherwise); None for params the method refuses (answered where the
    request came). Not a checkpoint."""
    raw, agent = params.get("sessionKey"), params.get("agentId") if method == "wake" else None
    if not isinstance(raw, str | None) or not isinstance(agent, str | None):
        return None
    raw, agent = (raw or "").strip() or None, (agent or "").strip() or None
    try:
        if raw is not None:
            return sup.resolve_key(raw, agent)
        spec = sup.generation.agent(agent)
        return resolve_heartbeat(sup.generation, spec.id).session_key
    except (SessionKeyError, GenerationError, ValueError):
        return None


class _Router(Protocol):
    node_id: str
    cluster: Cluster
    leases: SessionLeases

    @property
    def alive(self) -> set[str]: ...

    def tell_all(self, note: dict[str, Any]) -> None: ...

    def tell(self, node: str, note: dict[str, Any]) -> None: ...


class ClusterHeartbeats:
    """This node's heartbeats joined to the cluster (see the module docstring)."""

    def __init__(self, beats: Heartbeats, router: _Router) -> None:
        self.beats = beats
        self.router = router

    @classmethod
    def attach(cls, gateway: Any, router: _Router) -> ClusterHeartbeats | None:
        """Join the node's heartbeats (if it runs them) to the cluster through `router`.
        Not a checkpoint."""
        beats = gateway.actors.supervisor.heartbeats
        if not isinstance(beats, Heartbeats):
            return None
        joined = cls(beats, router)
        beats.peers = joined
        return joined

    # --- actors.heartbeat.HeartbeatPeers ---------------------------------------------------

    async def send_wake(self, wake: Any, session_key: str) -> bool:
        router = self.router
        if session_key in router.leases.held:
            await trio.lowlevel.checkpoint()
            return False  # this node owns it
        try:
            holder = await router.cluster.leases.holder(f"session:{session_key}")
        except ClusterError as exc:
            log.warning("heartbeat of %s runs here: its owner is unknown: %s", session_key, exc)
            return False
        if holder is None or holder.owner == router.node_id or holder.owner not in router.alive:
            return False
        note = {
            "beat": "wake",
            "agentId": wake.agent_id,
            "sessionKey": wake.session_key,
            "source": wake.source,
            "intent": wake.intent,
            "reason": wake.reason,
        }
        router.tell(holder.owner, note)
        return True

    def tell_event(self, event: dict[str, Any]) -> None:
        self.router.tell_all({"beat": "event", "event": event})

    def tell_enabled(self, enabled: bool) -> None:
        self.router.tell_all({"beat": "enabled", "enabled": enabled})

    # --- another node's notices ------------------------------------------------------------

    def on_note(self, note: dict[str, Any]) -> bool:
        """Take another node's heartbeat notice; False when `note` is not one. Not a
        checkpoint."""
        what = note.get("beat")
        if what == "wake":
            intent, key = note.get("intent"), note.get("sessionKey")
            if intent not in _INTENTS or not isinstance(key, str | None):
                log.warning("unreadable heartbeat wake from %s dropped", note.get("from"))
                return True
            self.beats.request_wake(
                str(note["agentId"]),
                source=str(note["source"]),
                intent=cast(WakeIntent, intent),
                reason=str(note["reason"]),
                session_key=key,
                coalesce_s=0.0,
                routed=True,
            )
        elif what == "event" and isinstance(note.get("event"), dict):
            self.beats.adopt_event(note["event"])
        elif what == "enabled" and isinstance(note.get("enabled"), bool):
            self.beats.adopt_enabled(note["enabled"])
        return what is not None
