"""A chat-style message submitted to a session, and the session helpers the chat, session,
client and slash-command methods share.

`submit_message` is how `chat.send`, `sessions.send`, `sessions.steer`, `sessions.create`
(with a first message) and the slash commands that start a run queue one: a repeated
idempotency key answers from the cache (`ok` or `in_flight`); otherwise the run is written
to the journal with the session's row, waits until every earlier request of the session is
placed, and is accepted on the session's lane: `actors.Admission` does all of it. The ack,
`{runId, status:"started"}`, comes only after that. `reserve_ticket` takes the request's
place in its session's order in the reader, before a handler task exists.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import msgspec

from actors import (
    Admission,
    CachedResponse,
    RunInFlight,
    RunRecord,
    RunRequest,
    SessionActor,
    Ticket,
)
from runtime.loop import now_ms
from runtime.model import AgentSpec, GenerationError, run_timeout_seconds
from runtime.protocol import UNAVAILABLE, GatewayError, RequestFrame, invalid_request
from runtime.sessions import SessionKeyError

from ._context import Call, Host
from ._views import session_view

__all__ = [
    "ORDERED_METHODS",
    "changed",
    "key_of",
    "reserve_ticket",
    "row_payload",
    "session_actor",
    "submit_message",
]

ORDERED_METHODS: Final = {
    "chat.send": "sessionKey",
    "sessions.send": "key",
    "sessions.steer": "key",
}
"""Methods that start runs (besides `agent`) and the param naming their session."""


def key_of(call: Call, raw: str, agent_id: str | None = None) -> str:
    try:
        return call.gateway.actors.supervisor.resolve_key(raw, agent_id)
    except SessionKeyError as exc:
        raise invalid_request(str(exc)) from exc


def agent_spec(call: Call, agent_id: str | None, session_key: str | None = None) -> AgentSpec:
    """The agent named, else the one `session_key` names (`agent:<id>:...`), else the
    default; an unknown one is `INVALID_REQUEST`."""
    if agent_id is None and session_key:
        key = key_of(call, session_key)
        agent_id = key.split(":")[1] if key.startswith("agent:") else None
    try:
        return call.gateway.actors.supervisor.generation.agent(agent_id)
    except GenerationError as exc:
        raise invalid_request(str(exc)) from exc


async def session_actor(call: Call, key: str) -> SessionActor:
    sup = call.gateway.actors.supervisor
    agent_id = key.split(":")[1] if key.startswith("agent:") else sup.generation.default_agent
    agent_spec(call, agent_id)
    return await sup.session(key, agent_id)


def row_payload(actor: SessionActor) -> dict[str, Any]:
    data = msgspec.to_builtins(actor.row)
    assert isinstance(data, dict)
    return data


def changed(call: Call, key: str, reason: str, actor: SessionActor | None = None) -> None:
    hub = call.gateway.actors.hub
    if not hub.has_change_subscribers:
        return  # nobody listens: build nothing
    payload: dict[str, Any] = {"sessionKey": key, "reason": reason, "ts": now_ms()}
    if actor is not None and actor.row is not None:
        payload.update(row_payload(actor))
        payload["sessionKey"] = key
        payload["agentId"] = actor.agent_id
        running = [actor.running.record.run_id] if actor.running is not None else []
        # As OpenClaw: the session as `sessions.describe` shows it (the Control UI's list).
        payload["session"] = {
            **session_view(call.gateway, actor.row, active_run_ids=running),
            "key": key,
        }
    hub.sessions_changed(payload)


def reserve_ticket(gw: Host, frame: RequestFrame) -> Ticket | None:
    """In the reader: the request's place in its session's submission order (None when
    its params do not name a session plainly: the handler then takes one, or fails).
    Not a checkpoint; never raises."""
    params = frame.params
    if not isinstance(params, dict):
        return None
    raw, agent_id = params.get(ORDERED_METHODS[frame.method]), params.get("agentId")
    if not isinstance(raw, str) or not isinstance(agent_id, str | None):
        return None
    try:
        key = gw.actors.supervisor.resolve_key(raw, agent_id)
    except SessionKeyError:
        return None
    return gw.actors.supervisor.order.reserve(key)


class _InFlight(Exception):
    """A run with this id is in flight: the answer is `in_flight`."""


async def submit_message(
    call: Call,
    *,
    key: str,
    message: str,
    run_id: str,
    timeout_ms: int | None,
    mode: str | None,
    reset: str | None = None,
) -> dict[str, Any]:
    """Queue a chat-style message on a session; the ack is `{runId, status:"started"}`,
    once the run is in the journal and every earlier request of the session is placed.
    `reset` ("new" / "reset"): the run starts the session afresh first (`/new`, `/reset`).
    A checkpoint; cancelled before its run is accepted, the run is journaled as refused."""
    admission = Admission(
        call.gateway.actors.supervisor, kind="chat", run_id=run_id, owner=call.conn
    )
    cached = admission.repeat()
    if cached is not None:
        call.release_ticket()  # a repeat starts no run: later requests need not wait
        return await _answer_repeat(call, run_id, cached)
    admission.reserve()
    submission = _Submission(call, admission, key, message, timeout_ms, mode, reset)
    try:
        actor = await submission.place()
    except _InFlight:
        admission.refuse()
        return {"runId": run_id, "status": "in_flight"}
    except BaseException as exc:
        admission.refuse(exc)
        raise
    finally:
        call.release_ticket()
    ack = {"runId": run_id, "status": "started"}
    admission.settle(ack)
    changed(call, key, "send", actor)
    return ack


async def _answer_repeat(call: Call, run_id: str, cached: CachedResponse) -> dict[str, Any]:
    """The answer to a repeated idempotency key, once the first request has its own."""
    await cached.ready.wait()
    record = call.gateway.actors.registry.get(run_id)
    if record is not None and not record.ended:
        return {"runId": run_id, "status": "in_flight"}
    if record is not None and record.ended:
        if record.status == "error":
            raise GatewayError(UNAVAILABLE, record.error or "run failed")
        return {"runId": run_id, "status": "ok"}
    if not cached.ok and isinstance(cached.error, GatewayError):
        raise cached.error
    return {"runId": run_id, "status": "ok"}


@attrs.define
class _Submission:
    """One message on its way to its session's lane."""

    call: Call
    admission: Admission
    key: str
    message: str
    timeout_ms: int | None
    mode: str | None
    reset: str | None

    async def place(self) -> SessionActor:
        """Find the session, check its queue, and admit the run. Raises `_InFlight` when
        a run with this id is in flight."""
        call = self.call
        admission = self.admission
        admission.ticket = call.ticket_for(self.key)
        actor = await session_actor(call, self.key)
        settings = actor.queue_settings(self.mode)
        if actor.would_reject(settings):
            raise invalid_request(
                f"the session's queue is full ({settings.cap} pending); message rejected"
            )
        existing = call.gateway.actors.registry.get(admission.run_id)
        if existing is not None and not existing.ended:
            raise _InFlight
        try:
            await admission.admit(actor, self._run_request(actor), self.mode)
        except GatewayError as exc:
            if isinstance(exc.__cause__, RunInFlight):
                raise _InFlight from None
            raise
        return actor

    def _run_request(self, actor: SessionActor) -> RunRequest:
        assert actor.row is not None
        t = now_ms()
        actor.change_row(updatedAt=t)
        record = RunRecord(
            run_id=self.admission.run_id,
            session_key=self.key,
            session_id=actor.row.sessionId,
            agent_id=actor.agent_id,
            accepted_at=t,
        )
        sup = self.call.gateway.actors.supervisor
        default_timeout = run_timeout_seconds(sup.generation.config.agents.defaults)
        timeout_s = self.timeout_ms / 1000 if self.timeout_ms is not None else default_timeout
        return RunRequest(
            record=record,
            message=self.message,
            timeout_s=timeout_s or None,
            owner=self.call.conn,
            debounce=True,
            reset=self.reset is not None,
            reset_reason=self.reset or "reset",
            kind="chat",
        )
