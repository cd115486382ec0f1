"""The `agent` method: accept a run (ack at once), then answer again with its result.

Two paths with one behaviour:

- `start_agent`, the common case, runs in the connection's reader without a task of its
  own: it validates, takes the request's place in its session's submission order
  (`actors.runs._order`), reserves the idempotency key, and hands the run's journal row
  (`actors.store._journal`; with the session row when that is not durable yet or the request
  changes its label) to the store with a commit callback. Once that has committed and
  every earlier request of the session has been placed, the callback accepts the run:
  registers it, sends the ack, queues it. A completion callback on the run record sends
  the final `res`. No task waits for either, and no cancel scope is entered: at thousands
  of runs a second those are a large share of a run's cost.
- `agent`, the general handler (a task per request, as every other method), takes what the
  fast path leaves to it: a repeated idempotency key (it may have to wait for the first
  request), a session whose row is not loaded yet, a store queue that is full. It keeps
  the place in the order the reader took for it.

Either way: `runId` is the `idempotencyKey` and a repeat never starts a second run; the
run is in the journal as accepted, and the session's row (its id and label) is durable,
before the ack; runs of a session reach its lane in the order their requests were
received; a `cancel` frame for the request aborts the run (a cancelled request gets no
further `res`), the connection going away does not; a store failure is `UNAVAILABLE`;
nothing that fails between a request and its run leaves a run registered that never ends.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Final

import attrs
import trio

from actors import (
    Admission,
    CachedResponse,
    RecoveredRun,
    RunRecord,
    RunRequest,
    SessionActor,
    StoreError,
    Ticket,
)
from runtime.loop import now_ms
from runtime.model import AgentSpec, GenerationError, run_timeout_seconds
from runtime.protocol import (
    UNAVAILABLE,
    AgentParams,  # the generated one plus `webhook` (issue 15)
    GatewayError,
    RequestFrame,
    decode_params,
    invalid_request,
    missing_scope,
    opt,
)
from runtime.sessions import SessionKeyError

from ._agent_webhook import attach_webhook
from ._context import Call, Client, Host, store_unavailable

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


def restore_idempotency(gw: Host, runs: list[RecoveredRun]) -> None:
    """At startup: the idempotency cache as it was (`agent:<key>`: the final answer, or the
    ack of a run queued again; `chat:<key>`: the `started` answer), each entry as old as
    its run's end, so that it lives out its TTL and a retried key never runs again."""
    now = time.monotonic()
    for run in runs:
        rec = run.record
        if run.kind == "agent":
            cached = (
                _final_response(rec) if rec.ended else CachedResponse(ok=True, payload=_ack(rec))
            )
        else:
            cached = CachedResponse(ok=True, payload={"runId": rec.run_id, "status": "started"})
        cached.stored = now - run.age_s
        gw.actors.registry.dedupe.put(f"{run.kind}:{rec.run_id}", cached)


def _send_cached(conn: Client, req_id: str, cached: CachedResponse) -> None:
    if cached.ok:
        conn.respond(req_id, cached.payload)
    else:
        assert isinstance(cached.error, GatewayError)
        conn.respond_error(req_id, cached.error, payload=cached.payload)


def _send_final(gw: Host, conn: Client, req_id: str, record: RunRecord) -> None:
    """The final `res` (cached under the key, unless a terminal answer is there already)."""
    dedupe_key = f"agent:{record.run_id}"
    cached = gw.actors.registry.dedupe.get(dedupe_key)
    if cached is None or not cached.terminal:
        cached = _final_response(record)
        gw.actors.registry.dedupe.put(dedupe_key, cached)
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


def _authorize(conn: Client, params: AgentParams) -> None:
    if (opt(params.provider) or opt(params.model)) and not conn.has_scope("operator.admin"):
        raise invalid_request("provider/model overrides are not authorized for this caller.")


def _plan(gw: Host, conn: Client, params: AgentParams) -> _Plan:
    """Check the request against the current generation. Raises `GatewayError`."""
    sup = gw.actors.supervisor
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
    t = now_ms()
    label = opt(params.label)
    actor.change_row(updatedAt=t, **({"label": label} if label else {}))
    return t


def _check_not_in_flight(gw: Host, run_id: str) -> None:
    existing = gw.actors.registry.get(run_id)
    if existing is not None and not existing.ended:
        raise invalid_request(f"run {run_id} is already in flight")


def _timeout_s(gw: Host, params: AgentParams) -> float | None:
    timeout = opt(params.timeout)
    if timeout is None:
        return run_timeout_seconds(gw.actors.supervisor.generation.config.agents.defaults) or None
    return float(timeout) or None  # a 64-bit integer at most (`check_params_values`)


def _build_request(
    gw: Host,
    conn: Client,
    params: AgentParams,
    plan: _Plan,
    actor: SessionActor,
    accepted_at: int,
) -> RunRequest:
    """The run, complete, before anything is registered (whatever raises here leaves
    nothing behind). Raises `GatewayError`."""
    assert actor.row is not None
    record = RunRecord(
        run_id=params.idempotencyKey,
        session_key=plan.key,
        session_id=actor.row.sessionId,
        agent_id=plan.spec.id,
        accepted_at=accepted_at,
    )
    return RunRequest(
        lane=plan.lane,
        record=record,
        message=plan.message,
        timeout_s=_timeout_s(gw, params),
        model_ref=plan.model_ref,
        extra_system_prompt=opt(params.extraSystemPrompt),
        owner=conn,
        reset=plan.reset,
        reset_reason=plan.reset_reason,
        kind="agent",
    )


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
    sup = gw.actors.supervisor
    conn = call.conn
    _authorize(conn, params)
    run_id = params.idempotencyKey
    admission = Admission(sup, kind="agent", run_id=run_id, owner=conn)
    cached = admission.repeat()
    if cached is not None:
        call.release_ticket()  # a repeat starts no run: later requests need not wait
        await cached.ready.wait()
        if cached.payload is None and cached.error is None:
            raise GatewayError(UNAVAILABLE, "the original request did not complete; retry")
        _send_cached(conn, call.id, cached)
        record = gw.actors.registry.get(run_id)
        if cached.terminal or record is None or not cached.ok:
            return
        gw.actors.hub.add_owner(run_id, conn)
        await _await_final(call, record)
        return
    admission.reserve()
    try:
        plan = _plan(gw, conn, params)
        admission.ticket = call.ticket_for(plan.key)
        actor = sup.peek_session(plan.key)
        if actor is None or actor.row is None:
            actor = await sup.session(plan.key, plan.spec.id)
        _check_not_in_flight(gw, run_id)
        accepted_at = _touch_row(actor, params)
        request = _build_request(gw, conn, params, plan, actor, accepted_at)
        record = await admission.admit(actor, request, "followup")
        attach_webhook(gw, params, record)  # the optional `webhook` when the run ends
    except BaseException as exc:
        admission.refuse(exc)
        raise
    finally:
        call.release_ticket()
    ack = _ack(record)
    admission.settle(ack)
    call.respond(ack)
    await _await_final(call, record)


# --- the common path: no task ---------------------------------------------------------------


@attrs.define(eq=False)
class _AgentCall:
    """An `agent` request on the fast path, in its connection's `pending` table until its
    final `res` (so the in-flight cap, duplicate ids and `cancel` frames apply to it)."""

    gateway: Host
    conn: Client
    req_id: str
    params: AgentParams
    admission: Admission
    record: RunRecord | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        """A `cancel` frame: abort the run (or, before it is admitted, drop the request).
        No further `res` is sent. Not a checkpoint."""
        if self.cancelled:
            return
        self.cancelled = True
        self._forget()
        if self.record is not None:
            self.record.abort("rpc")
        else:
            self.admission.cancel()

    def _forget(self) -> None:
        if self.conn.pending.get(self.req_id) is self:
            del self.conn.pending[self.req_id]

    def admitted(self, record: RunRecord | None, error: GatewayError | None) -> None:
        """The admission's answer: the ack (`finished` sends the final `res` when the run
        ends), or the error (not after a `cancel` frame)."""
        if record is None:
            self._forget()
            if error is not None and not self.cancelled:
                self.conn.respond_error(self.req_id, error)
            return
        self.record = record
        attach_webhook(self.gateway, self.params, record)  # the optional `webhook`
        ack = _ack(record)
        self.admission.settle(ack)
        self.conn.respond(self.req_id, ack)

    def finished(self, record: RunRecord) -> None:
        """The run ended: the final `res` (not after a `cancel` frame)."""
        if self.cancelled:
            return
        self._forget()
        _send_final(self.gateway, self.conn, self.req_id, record)


def start_agent(gw: Host, conn: Client, frame: RequestFrame) -> tuple[bool, Ticket | None]:
    """Handle an `agent` request without a task when it is the common case. Returns
    `(True, None)` when it is handled (answered, or on its way); `(False, ticket)` when the
    general path must take it, with its place in its session's order when one was taken
    (the caller hands it on). Never raises; not a checkpoint. The caller has checked the
    in-flight cap and the request id."""
    sup = gw.actors.supervisor
    reg = gw.actors.registry
    try:
        if not conn.has_scope(AGENT_SCOPE):
            raise missing_scope(AGENT_SCOPE, [AGENT_SCOPE])
        params = decode_params("agent", frame.params, AgentParams)
        _authorize(conn, params)
        if reg.dedupe.get(f"agent:{params.idempotencyKey}") is not None:
            return False, None  # a repeat: it may have to wait for the first request
        plan = _plan(gw, conn, params)
    except GatewayError as exc:
        conn.respond_error(frame.id, exc)
        return True, None
    ticket = sup.order.reserve(plan.key)
    try:
        return _start_accepting(gw, conn, frame, params, plan, ticket)
    except BaseException:
        ticket.release()  # a bug (the caller answers it): later requests must not wait
        raise


def _start_accepting(
    gw: Host,
    conn: Client,
    frame: RequestFrame,
    params: AgentParams,
    plan: _Plan,
    ticket: Ticket,
) -> tuple[bool, Ticket | None]:
    """`start_agent` once the request has its place in its session's order."""
    sup = gw.actors.supervisor
    actor = sup.peek_session(plan.key)
    if actor is None or actor.row is None:
        return False, ticket
    try:
        _check_not_in_flight(gw, params.idempotencyKey)
        accepted_at = _touch_row(actor, params)
        request = _build_request(gw, conn, params, plan, actor, accepted_at)
    except GatewayError as exc:
        ticket.release()
        conn.respond_error(frame.id, exc)
        return True, None
    assert actor.row is not None
    # The session's row (its id) is durable already unless it is new; the new `updatedAt`
    # goes with the row written at the run's end.
    writes_row = not actor.row_persisted or bool(opt(params.label))
    admission = Admission(
        sup, kind="agent", run_id=params.idempotencyKey, ticket=ticket, owner=conn
    )
    pending = _AgentCall(gw, conn, frame.id, params, admission)
    try:
        admission.admit_nowait(
            actor,
            request,
            "followup",
            writes_row=writes_row,
            on_admitted=pending.admitted,
            on_end=pending.finished,
        )
    except trio.WouldBlock:
        return False, ticket
    except StoreError as exc:
        ticket.release()
        conn.respond_error(frame.id, store_unavailable(exc))
        return True, None
    conn.pending[frame.id] = pending
    return True, None
