"""The RPC table: validate params, check the scope, turn the call into actor messages.

Each handler gets a `Call` (the connection, the request id, its cancel scope) and its
decoded params, and returns the result payload or raises `GatewayError`. A handler may send
an early `res` (the `agent` ack) with `call.respond` and return the final one later.
Uncaught handler exceptions become `UNAVAILABLE` with the error text (as OpenClaw does).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import msgspec
import psutil
import trio

from runtime._frames import (
    INVALID_REQUEST,
    UNAVAILABLE,
    GatewayError,
    RequestFrame,
    invalid_request,
    missing_scope,
    opt,
)
from runtime._frames import decode_params as decode_params
from runtime._generation import GenerationError
from runtime._sessions import session_kind
from runtime._wire import (
    METHOD_SCOPES,
    AgentWaitParams,
    ModelsListParams,
    SessionsListParams,
)
from runtime._wire_ext import AgentParams

from . import _methods_config, _methods_cron, _methods_devices, _methods_sessions
from ._methods_agent import agent

if TYPE_CHECKING:
    from ._connection import ClientConnection
    from ._gateway import Gateway

log = logging.getLogger("clawlane.methods")

_T = TypeVar("_T")


def now_ms() -> int:
    return int(time.time() * 1000)


@attrs.define(eq=False)
class Call:
    gateway: Gateway
    conn: ClientConnection
    frame: RequestFrame
    scope: trio.CancelScope

    @property
    def id(self) -> str:
        return self.frame.id

    def respond(self, payload: Any) -> None:
        self.conn.respond(self.frame.id, payload)


Handler = Callable[[Call, Any], Awaitable[Any]]


@attrs.frozen
class _Method:
    name: str
    handler: Handler
    params: type[Any] | None
    scope: str


class Methods:
    """The method table of one gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._table: dict[str, _Method] = {}
        self.add("agent", agent, AgentParams, scope="operator.write")
        self.add("agent.wait", agent_wait, AgentWaitParams)
        self.add("health", health, None)
        self.add("status", status, None)
        self.add("sessions.list", sessions_list, SessionsListParams)
        self.add("models.list", models_list, ModelsListParams)
        _methods_config.register(self)  # config.get/set/patch/apply (issue 3)
        _methods_sessions.register(self)  # chat.* and sessions.* (issue 6)
        _methods_devices.register(self)  # device.pair.* and device.token.* (issue 12)
        _methods_cron.register(self)  # cron.* (issue 15)

    def add(
        self, name: str, handler: Handler, params: type[Any] | None, *, scope: str | None = None
    ) -> None:
        required = scope or METHOD_SCOPES.get(name, "operator.admin")
        self._table[name] = _Method(name, handler, params, required)

    def names(self) -> list[str]:
        return sorted(self._table)

    async def call(
        self, conn: ClientConnection, frame: RequestFrame, scope: trio.CancelScope
    ) -> None:
        """Run one request to its response(s). Never raises but Cancelled."""
        method = self._table.get(frame.method)
        try:
            if method is None:
                raise GatewayError(INVALID_REQUEST, f"unknown method: {frame.method}")
            if frame.method == "health":
                pass  # any connection may ask (as OpenClaw's gateway allows)
            elif conn.role != "operator":
                raise GatewayError(INVALID_REQUEST, f"unauthorized role: {conn.role}")
            elif method.scope.startswith("operator.") and not conn.has_scope(method.scope):
                raise missing_scope(method.scope, [method.scope])
            if method.params is not None:
                params = decode_params(frame.method, frame.params, method.params)
            else:
                if frame.params is not None and not isinstance(frame.params, dict):
                    raise invalid_request(f"invalid {frame.method} params: expected an object")
                params = frame.params or {}
            result = await method.handler(Call(self.gateway, conn, frame, scope), params)
            if result is not None:
                conn.respond(frame.id, result)
        except GatewayError as exc:
            conn.respond_error(frame.id, exc)
        except Exception as exc:
            log.exception("method %s failed", frame.method)
            conn.respond_error(frame.id, GatewayError(UNAVAILABLE, f"{type(exc).__name__}: {exc}"))


async def agent_wait(call: Call, params: AgentWaitParams) -> dict[str, Any]:
    timeout_ms = opt(params.timeoutMs)
    timeout_s = (30_000 if timeout_ms is None else timeout_ms) / 1000
    record = await call.gateway.registry.wait(params.runId, timeout_s)
    if record is None:
        return {"runId": params.runId, "status": "timeout"}
    result: dict[str, Any] = {"runId": record.run_id, "status": record.wait_status()}
    if record.started_at is not None:
        result["startedAt"] = record.started_at
    if record.ended_at is not None:
        result["endedAt"] = record.ended_at
    if record.status == "error" and record.error:
        result["error"] = record.error
    return result


# --- read methods ---------------------------------------------------------------------------


async def health(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    gw = call.gateway
    sup = gw.supervisor.statistics()
    await trio.lowlevel.checkpoint()
    return {
        "ok": True,
        "ts": now_ms(),
        "durationMs": int((time.perf_counter() - started) * 1000),
        "uptimeMs": int((time.time() - gw.started) * 1000),
        "version": _version(),
        "generation": sup.generation,
        "sessions": {"active": sup.sessions, "busy": sup.busy_sessions},
        "runs": {"active": gw.registry.statistics().active_runs},
    }


def _version() -> str:
    from ._gateway import VERSION

    return VERSION


async def status(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    gw = call.gateway
    sup = gw.supervisor
    gen = sup.generation
    s = sup.statistics()
    hub = gw.hub.statistics()
    reg = gw.registry.statistics()
    store = sup.store.statistics()
    await trio.lowlevel.checkpoint()
    return {
        "ts": now_ms(),
        "version": _version(),
        "uptimeMs": int((time.time() - gw.started) * 1000),
        "authMode": gw.auth.mode,
        "generation": {
            "number": gen.number,
            "builtAt": gen.built_at_ms,
            "inputsHash": gen.inputs_hash,
            "defaultAgent": gen.default_agent,
            "models": len(gen.catalog),
        },
        "sessions": {"loaded": s.sessions, "busy": s.busy_sessions, "queuedRuns": s.queued_runs},
        "runs": {"active": reg.active_runs, "known": reg.known_runs, "waiters": reg.waiters},
        "lanes": {
            name: {
                "capacity": ls.capacity,
                "inUse": ls.in_use,
                "waiting": ls.waiting,
                "acquired": ls.acquired,
                "waitTotalMs": round(ls.wait_total_ms, 3),
                "waitMaxMs": round(ls.wait_max_ms, 3),
            }
            for name, ls in ((n, lane.statistics()) for n, lane in sup.lanes.items())
        },
        "connections": hub.connections,
        "events": {"emitted": hub.events_emitted, "delivered": hub.frames_delivered},
        "store": {"pending": store.pending, "commits": store.commits},
        "crashes": s.crashes,
        # For `clawlane loadtest` (RSS/CPU by pid when it runs on the same machine).
        "process": {"pid": os.getpid(), "rssBytes": psutil.Process().memory_info().rss},
        "publisher": gw.publisher.status_view() if gw.publisher is not None else None,
    }


def _row_view(row: Any, active: list[str]) -> dict[str, Any]:
    data = msgspec.to_builtins(row)
    assert isinstance(data, dict)
    data["kind"] = session_kind(row.key)
    data["hasActiveRun"] = bool(active)
    if active:
        data["activeRunIds"] = active
    return data


async def sessions_list(call: Call, params: SessionsListParams) -> dict[str, Any]:
    gw = call.gateway
    sup = gw.supervisor
    active_minutes = opt(params.activeMinutes)
    after = now_ms() - active_minutes * 60_000 if active_minutes else None
    rows = await sup.store.list_sessions(
        limit=None, agent_id=opt(params.agentId), updated_after_ms=after
    )
    label, search = opt(params.label), opt(params.search)
    if label:
        rows = [r for r in rows if r.label == label]
    if search:
        needle = search.lower()
        rows = [r for r in rows if needle in r.key.lower() or needle in (r.label or "").lower()]
    if not opt(params.includeGlobal):
        rows = [r for r in rows if r.key != "global"]
    if not opt(params.includeUnknown):
        rows = [r for r in rows if r.key != "unknown"]
    total = len(rows)
    offset = opt(params.offset) or 0
    limit = opt(params.limit)
    rows = rows[offset : offset + limit if limit else None]
    active: dict[str, list[str]] = {}
    for rec in gw.registry.active():
        active.setdefault(rec.session_key, []).append(rec.run_id)
    gen = sup.generation
    spec = gen.agent(None)
    provider, _, model = spec.primary.partition("/")
    return {
        "ts": now_ms(),
        "path": str(gw.state_dir / "clawlane.sqlite"),
        "count": total,
        "defaults": {"modelProvider": provider, "model": model, "agentId": gen.default_agent},
        "sessions": [_row_view(r, active.get(r.key, [])) for r in rows],
    }


async def models_list(call: Call, params: ModelsListParams) -> dict[str, Any]:
    gen = call.gateway.supervisor.generation
    agent_id = opt(params.agentId)
    if agent_id is not None:
        try:
            gen.agent(agent_id)
        except GenerationError as exc:
            raise invalid_request(str(exc)) from exc
    aliases = {v: k for k, v in gen.aliases.items()}
    models = []
    for entry in gen.catalog_for(agent_id):
        item: dict[str, Any] = {
            "id": entry.id,
            "name": entry.name,
            "provider": entry.provider,
            "contextWindow": entry.contextWindow,
            "reasoning": entry.reasoning,
            "available": entry.available,
        }
        if not entry.available:
            item["unavailableReason"] = "missing-auth"
        alias = aliases.get(f"{entry.provider}/{entry.id}")
        if alias:
            item["alias"] = alias
        models.append(item)
    await trio.lowlevel.checkpoint()
    return {"models": models}
