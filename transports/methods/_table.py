"""The RPC table: validate params, check the scope, turn the call into actor messages.

Each handler gets a `Call` (the connection, the request id, its cancel scope) and its
decoded params, and returns the result payload or raises `GatewayError`. A handler may send
an early `res` (the `agent` ack) with `call.respond` and return the final one later.
Uncaught handler exceptions become `UNAVAILABLE` with the error text (as OpenClaw does).
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any, TypeVar

import attrs
import trio

from actors import StoreError, Ticket
from runtime import telemetry
from runtime.model import GenerationError
from runtime.protocol import (
    INVALID_REQUEST,
    METHOD_SCOPES,
    AgentParams,
    AgentWaitParams,
    GatewayError,
    ModelsListParams,
    RequestFrame,
    SessionsListParams,
    check_params_values,
    internal_error,
    invalid_request,
    missing_scope,
    opt,
)
from runtime.protocol import decode_params as decode_params

from . import (
    _agent_files,
    _agents,
    _approvals,
    _audit,
    _branches,
    _cards,
    _clients,
    _config,
    _config_form,
    _controlui,
    _cron,
    _dashboard,
    _devices,
    _diagnostics,
    _exec_approvals,
    _gateway_tool,
    _heartbeat,
    _memory,
    _previews,
    _questions,
    _session_bulk,
    _session_diff,
    _session_files,
    _session_groups,
    _session_placement,
    _session_search,
    _sessions,
    _tools_invoke,
    _usage,
)
from ._agent import agent, start_agent
from ._context import Call, Client, Handler, Host, store_unavailable
from ._routing import Forwarder, Route
from ._status import health_view, status_view
from ._submit import ORDERED_METHODS, reserve_ticket
from ._traced import rpc_failed, traced_route, traced_serve
from ._views import catalog_view, defaults_view, session_view

log = logging.getLogger("clawlane.methods")

_T = TypeVar("_T")


def now_ms() -> int:
    return int(time.time() * 1000)


@attrs.frozen
class _Method:
    name: str
    handler: Handler
    params: type[Any] | None
    scope: str


class Methods:
    """The method table of one gateway."""

    def __init__(self, gateway: Host) -> None:
        self.gateway = gateway
        self._table: dict[str, _Method] = {}
        self._events: list[str] = []
        _gateway_tool.attach(gateway)  # what a run's `gateway` tool reads
        self.router: Forwarder | None = None
        """The cluster's router, set by a gateway that is a node of one (`_routing`)."""
        self.advertise("agent", "chat")  # a run's events, and `chat` derived from them
        self.add("agent", agent, AgentParams, scope="operator.write")
        self.add("agent.wait", agent_wait, AgentWaitParams)
        self.add("health", health, None)
        self.add("status", status, None)
        self.add("sessions.list", sessions_list, SessionsListParams)
        self.add("models.list", models_list, ModelsListParams)
        _config.register(self)  # config.get/set/patch/apply
        _sessions.register(self)  # chat.* and sessions.*
        _devices.register(self)  # device.pair.* and device.token.*
        _dashboard.register(self)  # clawlane.dashboard/generations/series
        _clients.register(self)  # what OpenClaw's CLI and terminal UI call
        _controlui.register(self)  # what OpenClaw's Control UI calls
        _cron.register(self)  # cron.*
        _heartbeat.register(self)  # last-heartbeat, set-heartbeats, wake, system-event
        _memory.register(self)  # memory.search, doctor.memory.*
        _approvals.register(self)  # plugin.approval.*
        _usage.register(self)  # sessions.usage*, usage.cost
        _agents.register(self)  # agents.create/update/delete
        _agent_files.register(self)  # agents.files.* and agents.workspace.*
        _config_form.register(self)  # config.schema, config.schema.lookup, config.openFile
        _diagnostics.register(self)  # diagnostics.stability, gateway.identity.get
        _audit.register(self)  # audit.list, audit.activity.list
        _branches.register(self)  # sessions.branches.*, sessions.rewind, sessions.fork
        _previews.register(self)  # sessions.preview
        _exec_approvals.register(self, gateway)  # exec.approval*, approval.*, exec policy
        _questions.register(self)  # question.*
        _cards.register(self)  # progressCard.get/put
        _tools_invoke.register(self)  # tools.invoke
        _session_search.register(self)  # sessions.search
        _session_bulk.register(self)  # sessions.patchMany, sessions.cleanup
        _session_groups.register(self)  # sessions.groups.*
        _session_placement.register(self)  # sessions.move
        _session_files.register(self)  # sessions.files.list/get
        _session_diff.register(self)  # sessions.diff

    def add(
        self, name: str, handler: Handler, params: type[Any] | None, *, scope: str | None = None
    ) -> None:
        required = scope or METHOD_SCOPES.get(name, "operator.admin")
        self._table[name] = _Method(name, handler, params, required)

    def names(self) -> list[str]:
        return sorted(self._table)

    def advertise(self, *events: str) -> None:
        """Name events this gateway sends (`hello-ok.features.events`), in order, once."""
        for event in events:
            if event not in self._events:
                self._events.append(event)

    def events(self) -> list[str]:
        """The events advertised (`advertise`)."""
        return list(self._events)

    def params_type(self, name: str) -> type[Any] | None:
        """The type method `name`'s params decode to (None: any object). KeyError when
        there is no such method."""
        return self._table[name].params

    def _admit(self, conn: Client, frame: RequestFrame) -> tuple[_Method, Any]:
        """The method and its decoded params, once the caller may call it. Raises
        `GatewayError` (unknown method, role, scope, `INVALID_REQUEST` naming the field)."""
        method = self._table.get(frame.method)
        if method is None:
            raise GatewayError(INVALID_REQUEST, f"unknown method: {frame.method}")
        if frame.method != "health":  # any connection may ask that (as OpenClaw's gateway)
            if conn.role != "operator":
                raise GatewayError(INVALID_REQUEST, f"unauthorized role: {conn.role}")
            if method.scope.startswith("operator.") and not conn.has_scope(method.scope):
                raise missing_scope(method.scope, [method.scope])
        if method.params is not None:
            return method, decode_params(frame.method, frame.params, method.params)
        if frame.params is not None and not isinstance(frame.params, dict):
            raise invalid_request(f"invalid {frame.method} params: expected an object")
        check_params_values(frame.method, frame.params)
        return method, frame.params or {}

    def admissible(self, conn: Client, frame: RequestFrame) -> bool:
        """Whether `call` would get past the role, scope and params checks: the cluster's
        router acts on a request (a lease, a claim, a session row) only then. Not a
        checkpoint."""
        try:
            self._admit(conn, frame)
        except GatewayError:
            return False
        return True

    def route(self, conn: Client, frame: RequestFrame, *, fast: bool = True) -> Route | None:
        """In the reader, as the request is received (see `_routing`): where it goes and its
        place in its session's order; None when it is answered (or on its way) already:
        `agent` on its task-free path, when `fast`. Never raises; not a checkpoint. With
        telemetry on, the request's span starts here (`_traced`)."""
        if telemetry.STATE.on:
            return traced_route(self._route, conn, frame, fast)
        return self._route(conn, frame, fast)

    def _route(self, conn: Client, frame: RequestFrame, fast: bool) -> Route | None:
        router = self.router
        if router is not None and self.admissible(conn, frame):
            target = router.target(frame)  # a bad request is answered here, routed nowhere
            if target is not None:
                return Route(router.reserve(target, frame.method), target)
        if frame.method == "agent" and fast:
            try:
                handled, ticket = start_agent(self.gateway, conn, frame)
            except Exception as exc:  # a bug: the request fails, the connection lives on
                log.exception("method agent failed")
                conn.respond_error(frame.id, internal_error(exc))
                return None
            return None if handled else Route(ticket)
        if frame.method in ORDERED_METHODS:
            return Route(reserve_ticket(self.gateway, frame))
        return Route()

    async def serve(
        self, conn: Client, frame: RequestFrame, scope: trio.CancelScope, route: Route
    ) -> None:
        """Run the request on its `route` to its response(s): forwarded by the router, or
        here (`call`). Never raises but Cancelled; the caller releases the route."""
        if route.span is not None:
            span, route.span = route.span, None
            serve = functools.partial(self.serve, conn, frame, scope, route)
            await traced_serve(serve, span, route.received, frame.method)
            return
        if route.target is not None and self.router is not None:
            await self.router.handle(conn, frame, scope, route.ticket, route.target)
        else:
            await self.call(conn, frame, scope, route.ticket)

    async def call(
        self,
        conn: Client,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None = None,
    ) -> None:
        """Run one request to its response(s). Never raises but Cancelled. `ticket` (the
        request's place in its session's order) is released when the handler returns."""
        call = Call(self.gateway, conn, frame, scope, ticket, router=self.router)
        try:
            method, params = self._admit(conn, frame)
            result = await method.handler(call, params)
            if result is not None:
                conn.respond(frame.id, result)
        except GatewayError as exc:
            _refuse(conn, frame, exc)
        except StoreError as exc:  # the database is away: an outage, not a bug
            log.warning("method %s: %s", frame.method, exc)
            _refuse(conn, frame, store_unavailable(exc))
        except Exception as exc:
            log.exception("method %s failed", frame.method)
            _refuse(conn, frame, internal_error(exc))
        finally:
            call.release_ticket()


def _refuse(conn: Client, frame: RequestFrame, error: GatewayError) -> None:
    if telemetry.STATE.on:
        rpc_failed(error)  # its span says so
    conn.respond_error(frame.id, error)


async def agent_wait(call: Call, params: AgentWaitParams) -> dict[str, Any]:
    timeout_ms = opt(params.timeoutMs)
    timeout_s = (30_000 if timeout_ms is None else timeout_ms) / 1000
    record = await call.gateway.actors.registry.wait(params.runId, timeout_s)
    if record is None:
        return {"runId": params.runId, "status": "timeout"}
    return record.wait_answer()


# --- read methods ---------------------------------------------------------------------------


async def health(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return await health_view(call.gateway)


async def status(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return await status_view(call.gateway, cli_projection=bool(params.get("includeCliProjection")))


def _row_view(gw: Host, row: Any, active: list[str], cache: dict[str, Any]) -> dict[str, Any]:
    return session_view(gw, row, active_run_ids=active, cache=cache)


async def sessions_list(call: Call, params: SessionsListParams) -> dict[str, Any]:
    gw = call.gateway
    sup = gw.actors.supervisor
    active_minutes = opt(params.activeMinutes)
    # Longer ago than the epoch is every session (and a time the store can hold).
    after = max(now_ms() - active_minutes * 60_000, 0) if active_minutes else None
    rows = await sup.store.list_sessions(
        limit=None, agent_id=opt(params.agentId), updated_after_ms=after
    )
    label, search = opt(params.label), opt(params.search)
    if label:
        rows = [r for r in rows if r.label == label]
    if search:
        needle = search.lower()
        rows = [r for r in rows if needle in r.key.lower() or needle in (r.label or "").lower()]
    group = opt(params.group)
    if group is not None:  # a session group (its rows' category); "" the ungrouped
        rows = [r for r in rows if (r.category or "") == group]
    if not opt(params.includeGlobal):
        rows = [r for r in rows if r.key != "global"]
    if not opt(params.includeUnknown):
        rows = [r for r in rows if r.key != "unknown"]
    total = len(rows)
    offset = opt(params.offset) or 0
    limit = opt(params.limit)
    rows = rows[offset : offset + limit if limit else None]
    active: dict[str, list[str]] = {}
    for rec in gw.actors.registry.active():
        active.setdefault(rec.session_key, []).append(rec.run_id)
    cache: dict[str, Any] = {}
    return {
        "ts": now_ms(),
        "path": str(sup.store.path),
        "count": total,
        "totalCount": total,
        "hasMore": offset + len(rows) < total,
        "defaults": defaults_view(sup.generation, opt(params.agentId)),
        "sessions": [_row_view(gw, r, active.get(r.key, []), cache) for r in rows],
    }


async def models_list(call: Call, params: ModelsListParams) -> dict[str, Any]:
    gen = call.gateway.actors.supervisor.generation
    agent_id = opt(params.agentId)
    session_key = opt(params.sessionKey)
    if agent_id is None and session_key and session_key.startswith("agent:"):
        agent_id = session_key.split(":")[1]  # the session's agent's catalog
    if agent_id is not None:
        try:
            gen.agent(agent_id)
        except GenerationError as exc:
            raise invalid_request(str(exc)) from exc
    models = catalog_view(gen, agent_id)
    await trio.lowlevel.checkpoint()
    return {"models": models}
