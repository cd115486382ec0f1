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
  runs where the text is. So does a cron job's system event (a `systemEvent` job into the
  main session, fired on the node running cron: `deliver_event`): it is sent to the node
  that owns the session (a `{"beat": "deliver"}` notice), which queues it and wakes the
  heartbeat there (`actors.Heartbeats.deliver_routed`) and answers how it went (`{"beat":
  "delivered"}`: at once, or with `wakeMode: "now"` once the heartbeat ended, as the cron
  firing waits for it); nobody owning the session, this node takes it and delivers it here.
  The cron node waits for the answer at most `ANSWER_S` (`ANSWER_WAIT_S` for a wake waited
  for: then the wake counts as handed off); the owner gone meanwhile (what it queued went
  with it), the event goes to the session's next owner, this node when nobody else takes
  the session, at most `DELIVER_TRIES` owners in all (then the firing fails naming the
  last). A firing cancelled while it waits has its event taken back there (`{"beat":
  "discard"}`).
- **The same everywhere.** A `heartbeat` event emitted on any node goes to every node's
  connections and is the last one there too (`last-heartbeat` answers the same on each, the
  newest by `ts`); `set-heartbeats` turns them on or off on every node, and is stored in the
  cluster's PostgreSQL (`_heartbeat_setting`), so a node that starts later, or again,
  follows it (`start` reads it before the node serves); a node starting when no other
  lives starts the cluster afresh, heartbeats on, as OpenClaw's gateway starts again.

Notices are as reliable as the router's (Redis streams, bounded): a wake lost with its node
does not run (a tick is never run twice; its next one comes), and a node that joins later
does not learn the last event (it answers its own); a lost `set-heartbeats` notice arrives
through the stored setting within `_heartbeat_setting.FOLLOW_S`.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, cast

import attrs
import trio

from actors import Cluster, ClusterError, Heartbeats, Supervisor
from runtime.heartbeat import EventDelivery, WakeIntent, WakeResult, resolve_heartbeat
from runtime.model import GenerationError
from runtime.sessions import SessionKeyError

from ._heartbeat_setting import HeartbeatSetting
from ._leases import SessionLeases

__all__ = ["BEAT_METHODS", "ClusterHeartbeats", "beat_session"]

log = logging.getLogger("clawlane.cluster")

BEAT_METHODS: Final = frozenset({"wake", "system-event"})
"""Methods served by the owner of the session they queue a system event for."""
_INTENTS: Final = frozenset({"manual", "immediate", "event", "scheduled"})
_STATUSES: Final = frozenset({"ran", "skipped", "failed"})
ANSWER_S: Final = 10.0
"""How long a cron node waits for the owner's answer to an event it does not wait on."""
ANSWER_WAIT_S: Final = 150.0
"""How long it waits for the answer when the firing waits for the heartbeat (the owner's
`wake_and_wait` hands off after 120 s)."""
DELIVER_TRIES: Final = 3
"""How many owners a cron event is sent to, each gone before it answered, before the
firing fails."""
CHECK_S: Final = 0.5
"""How often a wait for an answer checks that the owner still lives."""


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


@attrs.define
class _Answer:
    """The owner's answer to a cron event sent to it, once it comes."""

    value: EventDelivery | None = None
    done: trio.Event = attrs.field(factory=trio.Event)


def _delivery_of(note: dict[str, Any]) -> EventDelivery:
    """The `{"beat": "delivered"}` notice's delivery. Raises `ValueError` when unreadable."""
    session_id, wake = note.get("sessionId"), note.get("wake")
    if not isinstance(session_id, str | None) or not isinstance(wake, dict | None):
        raise ValueError("unreadable cron event answer")
    if wake is None:
        return EventDelivery(session_id)
    status, reason = wake.get("status"), wake.get("reason")
    if status not in _STATUSES or not isinstance(reason, str | None):
        raise ValueError("unreadable cron event answer")
    result = WakeResult(status, reason, handed_off=wake.get("handedOff") is True)
    return EventDelivery(session_id, result)


class ClusterHeartbeats:
    """This node's heartbeats joined to the cluster (see the module docstring)."""

    def __init__(self, beats: Heartbeats, router: _Router, sup: Supervisor) -> None:
        self.beats = beats
        self.router = router
        self.sup = sup
        self.setting = HeartbeatSetting.for_config(sup.generation.config, beats.adopt_enabled)
        """`set-heartbeats`, stored for the cluster."""
        self._answers: dict[str, _Answer] = {}
        """The cron events sent to their session's owner, by call id, until answered."""

    @classmethod
    def attach(cls, gateway: Any, router: _Router) -> ClusterHeartbeats | None:
        """Join the node's heartbeats (if it runs them) to the cluster through `router`.
        Not a checkpoint."""
        sup = gateway.actors.supervisor
        beats = sup.heartbeats
        if not isinstance(beats, Heartbeats):
            return None
        joined = cls(beats, router, sup)
        beats.peers = joined
        return joined

    async def start(self, nursery: trio.Nursery) -> None:
        """Take the cluster's `set-heartbeats` (before the node serves; no other node
        live: the cluster starts afresh, `HeartbeatSetting.restart`), then follow it in a
        task of `nursery`. A checkpoint."""
        router = self.router
        try:
            others = set(await router.cluster.nodes.all()) - {router.node_id}
        except ClusterError as exc:
            log.warning("set-heartbeats: the live nodes are unknown, the stored one holds: %s", exc)
            others = {"?"}
        if others:
            await self.setting.load()
        else:
            await self.setting.restart()
        nursery.start_soon(self.setting.follow)

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

    async def deliver_event(
        self,
        agent_id: str,
        session_key: str,
        text: str,
        *,
        context_key: str,
        wait: bool,
        here: Callable[[], Awaitable[EventDelivery]],
    ) -> EventDelivery:
        router = self.router
        gone = ""
        for _ in range(DELIVER_TRIES):
            with router.leases.pinned(session_key):  # taken here: kept until it is queued
                owner = await router.leases.owner(session_key)
                if owner == router.node_id:
                    return await here()
            done = await self._deliver_to(owner, agent_id, session_key, text, context_key, wait)
            if done is not None:
                return done
            gone = owner  # what it queued went with it: to the session's next owner
            log.warning("node %s gone before its answer: cron event sent again", owner)
        return EventDelivery(None, WakeResult("failed", f"node {gone} is gone"))

    async def _deliver_to(
        self, owner: str, agent_id: str, key: str, text: str, context_key: str, wait: bool
    ) -> EventDelivery | None:
        """Send the cron event to `owner` and wait for its answer (None: it died first)."""
        router = self.router
        call = uuid.uuid4().hex
        answer = self._answers[call] = _Answer()
        event = {"sessionKey": key, "contextKey": context_key, "text": text}
        note = {"beat": "deliver", "id": call, "agentId": agent_id, "wait": wait, **event}
        try:
            router.tell(owner, note)
            return await self._answer_of(answer, owner, wait)
        except BaseException:  # cancelled: the firing takes its event back
            if wait:
                router.tell(owner, {"beat": "discard", **event})
            raise
        finally:
            del self._answers[call]

    async def _answer_of(self, answer: _Answer, owner: str, wait: bool) -> EventDelivery | None:
        """The owner's answer, or what its absence means (see the module docstring; None:
        the owner is gone)."""
        deadline = trio.current_time() + (ANSWER_WAIT_S if wait else ANSWER_S)
        while answer.value is None:
            now = trio.current_time()
            if owner not in self.router.alive:
                return None
            if now >= deadline:
                log.warning("cron event sent to node %s: no answer (it may still run)", owner)
                handed = WakeResult("skipped", "no answer", handed_off=True)
                return EventDelivery(None, handed if wait else None)
            with trio.move_on_after(min(CHECK_S, deadline - now)):
                await answer.done.wait()
        return answer.value

    def _answer(self, node: str, call: str, done: EventDelivery) -> None:
        wake = done.wake
        view = None
        if wake is not None:
            view = {"status": wake.status, "reason": wake.reason, "handedOff": wake.handed_off}
        self.router.tell(
            node, {"beat": "delivered", "id": call, "sessionId": done.session_id, "wake": view}
        )

    def tell_event(self, event: dict[str, Any]) -> None:
        self.router.tell_all({"beat": "event", "event": event})

    async def share_enabled(self, enabled: bool) -> None:
        version = await self.setting.store(enabled)
        self.router.tell_all({"beat": "enabled", "enabled": enabled, "version": version})

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
        elif what in ("deliver", "delivered", "discard"):
            self._on_delivery(note)
        elif what == "event" and isinstance(note.get("event"), dict):
            self.beats.adopt_event(note["event"])
        elif what == "enabled" and isinstance(note.get("enabled"), bool):
            version = note.get("version")
            self.setting.take(note["enabled"], version if isinstance(version, int) else 0)
        return what is not None

    def _on_delivery(self, note: dict[str, Any]) -> None:
        """A cron event for a session this node owns, its answer, or its taking back."""
        what, call = note["beat"], note.get("id")
        if what == "delivered":
            answer = self._answers.get(str(call))
            if answer is not None and answer.value is None:
                answer.value = _delivery_of(note)
                answer.done.set()
            return
        key, context, text = note.get("sessionKey"), note.get("contextKey"), note.get("text")
        if not isinstance(key, str) or not isinstance(context, str) or not isinstance(text, str):
            raise ValueError("unreadable cron event")
        if what == "discard":
            self.sup.services.system_events.discard(key, context, text)
            return
        self.beats.deliver_routed(
            str(note["agentId"]),
            key,
            text,
            context_key=context,
            wait=note.get("wait") is True,
            answer=functools.partial(self._answer, str(note["from"]), str(call)),
        )
