"""The heartbeat methods, on the supervisor's `actors.Heartbeats` (OpenClaw's `system` and
`wake` handlers, their params, answers and errors):

- `last-heartbeat` (scope `operator.read`): the last `heartbeat` event, null before the
  first.
- `set-heartbeats` (`{enabled}`, scope `operator.admin`): turns heartbeats on or off (off:
  every heartbeat is skipped with `reason: "disabled"`); `{ok: true, enabled}`. Without a
  boolean `enabled`: `INVALID_REQUEST` "invalid set-heartbeats params: enabled (boolean)
  required". In a cluster it is stored for every node first: the store away, `UNAVAILABLE`
  and nothing changes.
- `wake` (`WakeParams`: `mode` `now` | `next-heartbeat`, `text`, `sessionKey?`, `agentId?`;
  scope `operator.write`): queues `text` as a system event for the session (default: the
  agent's heartbeat session, the default agent's without `agentId`); `mode: "now"` or a
  `sessionKey` runs a heartbeat at once (without either key: every agent that runs
  heartbeats), `next-heartbeat` leaves the event for the session's next turn. `{ok: true}`;
  a subagent's session is `INVALID_REQUEST`.
- `system-event` (`{text, sessionKey?, wake?, ...}`, OpenClaw's presence fields accepted;
  scope `operator.admin`): queues `text` for the session's next turn (default: the default
  agent's main session); `wake: true` runs a heartbeat in that session now. `{ok: true}`;
  an empty `text` is `INVALID_REQUEST` "text required"; `wake` on an unknown session too.

The `heartbeat` event goes to every connection (`actors.heartbeat`). In a cluster the router
sends `wake` and `system-event` to the node owning the session they queue for (it reads the
text at that session's next turn), and the events and `set-heartbeats` reach every node, so
`last-heartbeat` answers the same on each (`transports.cluster._heartbeats`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
import trio

from actors import HeartbeatControl
from runtime.heartbeat import heartbeat_agents
from runtime.protocol import UNAVAILABLE, GatewayError, invalid_request

from ._context import Call, MethodTable
from ._submit import agent_spec, key_of

__all__ = ["SystemEventParams", "WakeParams", "register"]


class WakeParams(msgspec.Struct, frozen=True):
    """`WakeParams` (the schema allows extra keys)."""

    mode: Literal["now", "next-heartbeat"]
    text: str = msgspec.field()
    sessionKey: str | None = None
    agentId: str | None = None


class SystemEventParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """OpenClaw's `system-event` params (closed)."""

    text: str
    idempotencyKey: str | None = None
    sessionKey: str | None = None
    wake: bool | None = None
    deviceId: str | None = None
    instanceId: str | None = None
    host: str | None = None
    ip: str | None = None
    mode: str | None = None
    version: str | None = None
    platform: str | None = None
    deviceFamily: str | None = None
    modelIdentifier: str | None = None
    lastInputSeconds: float | None = None
    reason: str | None = None
    roles: list[str] | None = None
    scopes: list[str] | None = None
    tags: list[str] | None = None


def register(methods: MethodTable) -> None:
    methods.advertise("heartbeat")
    methods.add("last-heartbeat", last_heartbeat, None, scope="operator.read")
    methods.add("set-heartbeats", set_heartbeats, None, scope="operator.admin")
    methods.add("wake", wake, WakeParams, scope="operator.write")
    methods.add("system-event", system_event, SystemEventParams, scope="operator.admin")


def _beats(call: Call) -> HeartbeatControl:
    beats = call.gateway.actors.supervisor.heartbeats
    if beats is None:
        raise GatewayError(UNAVAILABLE, "heartbeats are not running")
    return beats


async def last_heartbeat(call: Call, params: Any) -> None:
    """The last `heartbeat` event or null (answered here: a handler's None means it
    answered itself)."""
    await trio.lowlevel.checkpoint()
    beats = call.gateway.actors.supervisor.heartbeats
    call.conn.respond(call.frame.id, None if beats is None else beats.last_event)


async def set_heartbeats(call: Call, params: Any) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    enabled = params.get("enabled") if isinstance(params, dict) else None
    if not isinstance(enabled, bool):
        raise invalid_request("invalid set-heartbeats params: enabled (boolean) required")
    await _beats(call).set_enabled(enabled)
    return {"ok": True, "enabled": enabled}


def _owner(key: str) -> str | None:
    return key.split(":")[1] if key.startswith("agent:") else None


async def wake(call: Call, params: WakeParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    beats = _beats(call)
    text = params.text.strip()
    if not text:
        return {"ok": False}
    sup = call.gateway.actors.supervisor
    agent_id = (params.agentId or "").strip() or None
    raw_key = (params.sessionKey or "").strip() or None
    key = key_of(call, raw_key, agent_id) if raw_key else None
    if key is not None and ":subagent:" in key:
        raise invalid_request("wake sessionKey cannot target a subagent session")
    owner = _owner(key) if key is not None else None
    if agent_id and owner and agent_id.lower() != owner:
        raise invalid_request(
            "wake agentId contradicts the agent that owns sessionKey; pass a single canonical "
            "wake target"
        )
    spec = agent_spec(call, agent_id or owner)
    beats.enqueue(key or beats.session_for(spec.id), text)
    if key is not None:
        beats.wake_now(spec.id, "wake", key)
    elif params.mode == "now":
        gen = sup.generation
        targets = [spec.id] if agent_id else heartbeat_agents(gen.config, sorted(gen.agents))
        for target in targets or [spec.id]:
            beats.wake_now(target, "wake")
    return {"ok": True}


async def system_event(call: Call, params: SystemEventParams) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    text = params.text.strip()
    if not text:
        raise invalid_request("text required")
    beats = _beats(call)
    sup = call.gateway.actors.supervisor
    raw_key = (params.sessionKey or "").strip() or None
    if raw_key is not None:
        key = key_of(call, raw_key)
        spec = agent_spec(call, None, key)
    else:
        spec = agent_spec(call, None)
        key = beats.session_for(spec.id)
    if params.wake and text.startswith("Node:"):
        raise invalid_request("wake is not supported for node presence events")
    if params.wake and raw_key is not None:
        actor = sup.peek_session(key)
        known = actor is not None or await sup.store.get_session(key) is not None
        if not known:
            raise invalid_request(f'Unknown or archived session "{raw_key}"')
    beats.enqueue(key, text)
    if params.wake:
        beats.wake_now(spec.id, "wake", key)
    return {"ok": True}
