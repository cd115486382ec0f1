"""The `agent` method: accept a run (ack at once), then answer again with its result.

Two paths with one behaviour:

- `start_agent`, the common case, runs in the connection's reader without a task of its
  own: it validates and reserves the idempotency key. When the session's row is durable
  already (it was loaded from the store, or written since) and the request changes
  nothing of it but `updatedAt` (which goes with the row written at the run's end), it
  accepts at once: records the run, sends the ack, submits the run. Otherwise it hands
  the row to the store with a commit callback that does the same once the row is durable.
  A completion callback on the run record sends the final `res`. No task waits for
  either, and no cancel scope is entered: at thousands of runs a second those are a large
  share of a run's cost.
- `agent`, the general handler (a task per request, as every other method), takes what the
  fast path leaves to it: a repeated idempotency key (it may have to wait for the first
  request), a session whose row is not loaded yet, a store queue that is full.

Either way: `runId` is the `idempotencyKey` and a repeat never starts a second run; the
session's row (its id and label) is durable before the ack; a `cancel` frame for the request aborts the run (a
cancelled request gets no further `res`), the connection going away does not; a store
failure is `UNAVAILABLE`.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Final

import attrs
import msgspec
import trio

from actors import CachedResponse, RunRecord, RunRequest, SessionActor, StoreError
from runtime._agent import now_ms
from runtime._config import run_timeout_seconds
from runtime._frames import (
    UNAVAILABLE,
    GatewayError,
    RequestFrame,
    decode_params,
    invalid_request,
    missing_scope,
    opt,
)
from runtime._generation import AgentSpec, GenerationError
from runtime._sessions import SessionKeyError
from runtime._wire_ext import AgentParams  # the generated one plus `webhook` (issue 15)

from ._agent_webhook import attach_webhook

if TYPE_CHECKING:
    from ._connection import ClientConnection
    from ._gateway import Gateway
    from ._methods import Call

log = logging.getLogger("clawlane.methods")

AGENT_SCOPE: Final = "operator.write"
RESET_COMMAND: Final = re.compile(r"^/(new|reset)(?:\s+(.*))?$", re.IGNORECASE | re.DOTALL)
RESET_GREETING: Final = (
    "A new session was started. Greet the user briefly and ask what they would like to do."
)


# --- the answers ---------------------------------------------------------------------------


def _final_response(record: RunRecord) -> CachedResponse:
    final = record.final or {"payloads": [], "meta": {}}
    if record.status == "error":
        message = record.error or "agent run failed"
        return CachedResponse(
            ok=False,
            payload={"runId": record.run_id, "status": "error", "summary": message},
            error=GatewayError(UNAVAILABLE, message),
            terminal=True,
        )
    return CachedResponse(
        ok=True,
        payload={"runId": record.run_id, "status": "ok", "summary": "completed", "result": final},
        terminal=True,
    )


def _send_cached(conn: ClientConnection, req_id: str, cached: CachedResponse) -> None:
    if cached.ok:
        conn.respond(req_id, cached.payload)
    else:
        assert isinstance(cached.error, GatewayError)
        conn.respond_error(req_id, cached.error, payload=cached.payload)


def _send_final(gw: Gateway, conn: ClientConnection, req_id: str, record: RunRecord) -> None:
    """The final `res` (cached under the key, unless a terminal answer is there already)."""
    dedupe_key = f"agent:{record.run_id}"
    cached = gw.registry.dedupe.get(dedupe_key)
    if cached is None or not cached.terminal:
        cached = _final_response(record)
        gw.registry.dedupe.put(dedupe_key, cached)
    _send_cached(conn, req_id, cached)


# --- validation (no side effects) ----------------------------------------------------------


@attrs.frozen
class _Plan:
    """A validated `agent` request: where it runs and what it says."""

    lane: str
    spec: AgentSpec
    key: str
    message: str
    reset: bool
    reset_reason: str
    model_ref: str | None


def _authorize(conn: ClientConnection, params: AgentParams) -> None:
    if (opt(params.provider) or opt(params.model)) and not conn.has_scope("operator.admin"):
        raise invalid_request("provider/model overrides are not authorized for this caller.")


def _plan(gw: Gateway, conn: ClientConnection, params: AgentParams) -> _Plan:
    """Check the request against the current generation. Raises `GatewayError`."""
    sup = gw.supervisor
    gen = sup.generation
    lane = opt(params.lane) or "main"
    if lane not in sup.lanes:
        raise invalid_request(
            f"invalid agent params: unknown lane {lane!r} (main, cron, subagent, nested)"
        )
    agent_id = opt(params.agentId)
    try:
        spec = gen.agent(agent_id)
    except GenerationError as exc:
        raise invalid_request(str(exc)) from exc
    try:
        key = sup.resolve_key(opt(params.sessionKey), agent_id)
    except SessionKeyError as exc:
        raise invalid_request(str(exc)) from exc
    if agent_id is None and key.startswith("agent:") and key.split(":")[1] != spec.id:
        # The key names its own agent; that agent must exist.
        try:
            spec = gen.agent(key.split(":")[1])
        except GenerationError as exc:
            raise invalid_request(str(exc)) from exc
    message = params.message
    reset = False
    reset_reason = "reset"
    if message.startswith("/") or message[:1].isspace():
        m = RESET_COMMAND.match(message.strip())
        if m:
            if not conn.has_scope("operator.admin"):
                raise missing_scope("operator.admin", ["operator.admin"])
            reset = True
            reset_reason = m.group(1).lower()
            message = m.group(2) or RESET_GREETING
    model_ref: str | None = None
    provider, model = opt(params.provider), opt(params.model)
    if model:
        model_ref = model if "/" in model or not provider else f"{provider}/{model}"
        try:
            gen.resolve(model_ref)
        except GenerationError as exc:
            raise invalid_request(str(exc)) from exc
    return _Plan(lane, spec, key, message, reset, reset_reason, model_ref)


def _touch_row(actor: SessionActor, params: AgentParams) -> int:
    """Stamp the session row (and its label) for this request; returns the time."""
    assert actor.row is not None
    t = now_ms()
    row = msgspec.structs.replace(actor.row, updatedAt=t)
    if opt(params.label):
        row = msgspec.structs.replace(row, label=params.label)
    actor.row = row
    return t


def _open_run(
    gw: Gateway,
    conn: ClientConnection,
    params: AgentParams,
    plan: _Plan,
    actor: SessionActor,
    accepted_at: int,
) -> tuple[RunRecord, RunRequest]:
    """Register the run (its record, its event stream) once its row is durable. Raises
    `GatewayError` when a run with this id is still in flight."""
    sup = gw.supervisor
    assert actor.row is not None
    session_id = actor.row.sessionId
    record = RunRecord(
        run_id=params.idempotencyKey,
        session_key=plan.key,
        session_id=session_id,
        agent_id=plan.spec.id,
        accepted_at=accepted_at,
    )
    existing = sup.registry.get(record.run_id)
    if existing is not None and not existing.ended:
        raise invalid_request(f"run {record.run_id} is already in flight")
    sup.registry.add(record)
    gw.hub.open_run(
        record.run_id, plan.key, owner=conn, session_id=session_id, agent_id=plan.spec.id
    )
    timeout = opt(params.timeout)
    default_timeout = run_timeout_seconds(sup.generation.config.agents.defaults)
    timeout_s = float(timeout) if timeout is not None else (default_timeout or 0.0)
    request = RunRequest(
        lane=plan.lane,
        record=record,
        message=plan.message,
        timeout_s=timeout_s or None,
        model_ref=plan.model_ref,
        extra_system_prompt=opt(params.extraSystemPrompt),
        owner=conn,
        reset=plan.reset,
        reset_reason=plan.reset_reason,
    )
    attach_webhook(gw, params, record)  # issue 15: the optional `webhook`
    return record, request


def _ack(record: RunRecord) -> dict[str, Any]:
    return {"runId": record.run_id, "status": "accepted", "acceptedAt": record.accepted_at}


# --- the general path: a task per request ---------------------------------------------------


async def _await_final(call: Call, record: RunRecord) -> None:
    """Wait for the run's end and send the final `res`. A `cancel` frame for this request
    aborts the run; the connection going away does not."""
    try:
        await record.done.wait()
    except trio.Cancelled:
        if call.scope.cancel_called:
            record.abort("rpc")
        raise
    _send_final(call.gateway, call.conn, call.id, record)


async def agent(call: Call, params: AgentParams) -> None:
    gw = call.gateway
    sup = gw.supervisor
    reg = gw.registry
    conn = call.conn
    _authorize(conn, params)
    run_id = params.idempotencyKey
    dedupe_key = f"agent:{run_id}"
    cached = reg.dedupe.get(dedupe_key)
    if cached is not None:
        await cached.ready.wait()
        if cached.payload is None and cached.error is None:
            raise GatewayError(UNAVAILABLE, "the original request did not complete; retry")
        _send_cached(conn, call.id, cached)
        record = reg.get(run_id)
        if cached.terminal or record is None or not cached.ok:
            return
        gw.hub.add_owner(run_id, conn)
        await _await_final(call, record)
        return
    placeholder = CachedResponse.placeholder()
    reg.dedupe.put(dedupe_key, placeholder)
    try:
        plan = _plan(gw, conn, params)
        actor = sup.peek_session(plan.key)
        if actor is None or actor.row is None:
            actor = await sup.session(plan.key, plan.spec.id)
        accepted_at = _touch_row(actor, params)
        assert actor.row is not None
        await sup.store.put_session_durable(actor.row)
        actor.row_persisted = True
        record, request = _open_run(gw, conn, params, plan, actor, accepted_at)
    except BaseException as exc:
        reg.dedupe.discard(dedupe_key)
        placeholder.abandon(exc if isinstance(exc, GatewayError) else None)
        raise
    placeholder.settle(_ack(record))
    call.respond(placeholder.payload)
    _submit(actor, request)
    await _await_final(call, record)


def _submit(actor: SessionActor, request: RunRequest) -> None:
    """Queue the run on its session's lane. `agent` runs queue as follow-ups (OpenClaw:
    queue modes apply to chat messages). A queue at its cap with drop policy `new` rejects
    it: the run ends at once (dropped), and the error goes up."""
    try:
        actor.supervisor.submit(actor, request, actor.queue_settings("followup"))
    except Exception:
        actor.finish_unrun(request, "dropped")
        raise


# --- the common path: no task ---------------------------------------------------------------


@attrs.define(eq=False)
class _AgentCall:
    """An `agent` request on the fast path, in its connection's `pending` table until its
    final `res` (so the in-flight cap, duplicate ids and `cancel` frames apply to it)."""

    gateway: Gateway
    conn: ClientConnection
    req_id: str
    params: AgentParams
    plan: _Plan
    actor: SessionActor
    accepted_at: int
    placeholder: CachedResponse
    record: RunRecord | None = None
    cancelled: bool = False

    @property
    def dedupe_key(self) -> str:
        return f"agent:{self.params.idempotencyKey}"

    def cancel(self) -> None:
        """A `cancel` frame: abort the run (or, before it is accepted, drop the request).
        No further `res` is sent. Not a checkpoint."""
        if self.cancelled:
            return
        self.cancelled = True
        self._forget()
        if self.record is not None:
            self.record.abort("rpc")

    def _forget(self) -> None:
        if self.conn.pending.get(self.req_id) is self:
            del self.conn.pending[self.req_id]

    def _fail(self, error: GatewayError | None, *, cached: bool = True) -> None:
        """The request ends before its run was accepted, as the general path's would:
        the key is released, waiting duplicates see `error` (when `cached`)."""
        self.gateway.registry.dedupe.discard(self.dedupe_key)
        self.placeholder.abandon(error if cached else None)
        self._forget()
        if error is not None and not self.cancelled:
            self.conn.respond_error(self.req_id, error)

    def committed(self, failure: StoreError | None) -> None:
        """The session row is durable (or could not be written): accept the run."""
        if self.cancelled:
            self._fail(None)
            return
        if failure is not None:
            log.error("method agent failed: %s", failure)
            error = GatewayError(UNAVAILABLE, f"{type(failure).__name__}: {failure}")
            self._fail(error, cached=False)
            return
        self.actor.row_persisted = True
        gw = self.gateway
        try:
            record, request = _open_run(
                gw, self.conn, self.params, self.plan, self.actor, self.accepted_at
            )
        except GatewayError as exc:
            self._fail(exc)
            return
        except Exception as exc:  # a bug: this request fails, nothing else
            log.exception("method agent failed")
            self._fail(GatewayError(UNAVAILABLE, f"{type(exc).__name__}: {exc}"), cached=False)
            return
        self.record = record
        self.placeholder.settle(_ack(record))
        self.conn.respond(self.req_id, self.placeholder.payload)
        try:
            _submit(self.actor, request)
        except Exception as exc:
            log.exception("method agent failed")
            self._forget()
            self.conn.respond_error(
                self.req_id, GatewayError(UNAVAILABLE, f"{type(exc).__name__}: {exc}")
            )
            return
        record.on_done = [self.finished]  # the run cannot have ended yet: its task starts later

    def finished(self, record: RunRecord) -> None:
        """The run ended: the final `res` (not after a `cancel` frame)."""
        if self.cancelled:
            return
        self._forget()
        _send_final(self.gateway, self.conn, self.req_id, record)


def start_agent(gw: Gateway, conn: ClientConnection, frame: RequestFrame) -> bool:
    """Handle an `agent` request without a task when it is the common case. Returns False,
    having changed nothing, when the general path must take it. Never raises; not a
    checkpoint. The caller has checked the in-flight cap and the request id."""
    sup = gw.supervisor
    reg = gw.registry
    try:
        if not conn.has_scope(AGENT_SCOPE):
            raise missing_scope(AGENT_SCOPE, [AGENT_SCOPE])
        params = decode_params("agent", frame.params, AgentParams)
        _authorize(conn, params)
        dedupe_key = f"agent:{params.idempotencyKey}"
        if reg.dedupe.get(dedupe_key) is not None:
            return False  # a repeat: it may have to wait for the first request
        plan = _plan(gw, conn, params)
    except GatewayError as exc:
        conn.respond_error(frame.id, exc)
        return True
    actor = sup.peek_session(plan.key)
    if actor is None or actor.row is None:
        return False
    placeholder = CachedResponse.placeholder()
    accepted_at = _touch_row(actor, params)
    pending = _AgentCall(gw, conn, frame.id, params, plan, actor, accepted_at, placeholder)
    assert actor.row is not None
    if actor.row_persisted and not opt(params.label):
        # The session's row (its id) is durable already; the new `updatedAt` goes with the
        # row written at the run's end. Nothing to wait for: accept now.
        reg.dedupe.put(dedupe_key, placeholder)
        conn.pending[frame.id] = pending
        pending.committed(None)
        return True
    try:
        sup.store.put_session_nowait(actor.row, on_commit=pending.committed)
    except trio.WouldBlock:
        return False
    except StoreError as exc:
        conn.respond_error(frame.id, GatewayError(UNAVAILABLE, f"{type(exc).__name__}: {exc}"))
        return True
    reg.dedupe.put(dedupe_key, placeholder)
    conn.pending[frame.id] = pending
    return True
