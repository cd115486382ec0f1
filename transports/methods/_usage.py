"""The Usage page's methods and `openclaw gateway usage-cost`, in OpenClaw's shapes:
`sessions.usage` (each session's usage in a range, their totals and aggregates by model,
provider, agent and day), `usage.cost` (the range's days and totals),
`sessions.usage.timeseries` and `sessions.usage.logs` (one session, from its transcript).

The range reports read the usage aggregates the store keeps as runs end
(`actors.store.UsageStore`), never the transcripts; the calendar and range rules, the pricing
and the shapes are `runtime.usage`'s. A bad date, zone or offset, an unknown agent or session,
`agentScope: "all"` with `agentId` (or `key`) are `INVALID_REQUEST` with OpenClaw's message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from actors import UsageStore
from runtime.model import GenerationError
from runtime.protocol import SessionsUsageParams, invalid_request, opt
from runtime.sessions import MessageEntry, SessionRow
from runtime.usage import (
    UNKNOWN_CREATOR,
    Aggregates,
    DateRange,
    DateRangeError,
    PriceTable,
    StoredBucket,
    cost_summary,
    format_token_count,
    format_usd,
    resolve_calendar,
    resolve_range,
    session_logs,
    session_summary,
    session_timeseries,
    totals_view,
)

from ._context import Call, MethodTable
from ._submit import key_of

__all__ = ["register", "usage_cost_text"]

_NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
_Date = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]


class UsageCostParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`usage.cost` (no published definition: the fields OpenClaw's handler reads)."""

    startDate: _Date | None = None
    endDate: _Date | None = None
    days: Annotated[int, msgspec.Meta(ge=0)] | _NonEmpty | None = None
    range: Literal["7d", "30d", "90d", "1y", "all"] | None = None
    mode: Literal["utc", "gateway", "specific"] | None = None
    utcOffset: str | None = None
    timeZone: str | None = None
    agentId: _NonEmpty | None = None
    agentScope: Literal["all"] | None = None


class SessionUsageParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`sessions.usage.timeseries` and `sessions.usage.logs`: one session."""

    key: _NonEmpty
    agentId: _NonEmpty | None = None
    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None


def register(methods: MethodTable) -> None:
    methods.add("sessions.usage", sessions_usage, SessionsUsageParams)
    methods.add("usage.cost", usage_cost, UsageCostParams)
    methods.add("sessions.usage.timeseries", usage_timeseries, SessionUsageParams)
    methods.add("sessions.usage.logs", usage_logs, SessionUsageParams)


def _range(
    mode: str | None,
    time_zone: str | None,
    utc_offset: str | None,
    start: str | None,
    end: str | None,
    range_name: str | None,
    days: int | str | None = None,
) -> DateRange:
    try:
        calendar = resolve_calendar(mode, time_zone, utc_offset)
        return resolve_range(
            calendar, start_date=start, end_date=end, range_name=range_name, days=days
        )
    except DateRangeError as exc:
        raise invalid_request(str(exc)) from exc


def _agent(call: Call, agent_id: str | None) -> str:
    gen = call.gateway.supervisor.generation
    try:
        return gen.agent(agent_id).id
    except GenerationError as exc:
        raise invalid_request(str(exc)) from exc


async def usage_cost(call: Call, params: UsageCostParams) -> dict[str, Any]:
    span = _range(
        params.mode,
        params.timeZone,
        params.utcOffset,
        params.startDate,
        params.endDate,
        params.range,
        params.days,
    )
    if params.agentScope == "all" and params.agentId:
        raise invalid_request("agentScope=all cannot be combined with agentId")
    agent_id = None if params.agentScope == "all" else _agent(call, params.agentId)
    store = UsageStore(call.gateway.supervisor.store)
    found = await store.buckets(
        start_ms=span.start_ms, end_ms=span.end_ms, agent_id=agent_id, with_tools=False
    )
    return cost_summary((sb.bucket for sb in found), span, call.gateway.now_ms())


def _usage_scope(call: Call, params: SessionsUsageParams) -> tuple[str | None, str | None]:
    """The agent (None: all) and the one session key (None: every session) asked for."""
    key, agent_id = opt(params.key), opt(params.agentId)
    if opt(params.agentScope) == "all":
        if key or agent_id:
            raise invalid_request("agentScope=all cannot be combined with key or agentId")
        return None, None
    if key is not None:
        key = key_of(call, key, agent_id)
        owner = key.split(":")[1] if key.startswith("agent:") else None
        if agent_id is not None and owner is not None and owner != agent_id:
            raise invalid_request(f"Invalid session reference: {params.key}")
        return _agent(call, owner or agent_id), key
    return _agent(call, agent_id), None


def _session_entry(
    key: str, session_id: str, agent_id: str, row: SessionRow | None, usage: dict[str, Any]
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "key": key,
        "label": (row.label or row.displayName) if row is not None else None,
        "sessionId": session_id,
        "scope": "instance",
        "updatedAt": row.updatedAt if row is not None else usage.get("lastActivity") or 0,
        "agentId": agent_id,
        "creatorKey": UNKNOWN_CREATOR,
        "usage": usage,
        "hasContextWeight": False,
    }
    if row is not None:
        for name in ("modelProvider", "model", "modelOverride", "providerOverride"):
            value = getattr(row, name, None)
            if value is not None:
                entry[name] = value
    if entry["label"] is None:
        del entry["label"]
    return entry


async def sessions_usage(call: Call, params: SessionsUsageParams) -> dict[str, Any]:
    span = _range(
        opt(params.mode),
        opt(params.timeZone),
        opt(params.utcOffset),
        opt(params.startDate),
        opt(params.endDate),
        opt(params.range),
    )
    agent_id, key = _usage_scope(call, params)
    sup = call.gateway.supervisor
    found = await UsageStore(sup.store).buckets(
        start_ms=span.start_ms, end_ms=span.end_ms, agent_id=agent_id, session_key=key
    )
    creator = opt(params.creatorKey)
    if creator is not None and creator != UNKNOWN_CREATOR:
        found = []
    by_session: dict[str, list[StoredBucket]] = {}
    for sb in found:
        by_session.setdefault(sb.session_id, []).append(sb)
    rows = {r.key: r for r in await sup.store.list_sessions(limit=None, agent_id=agent_id)}
    day = span.calendar.formatter()
    entries: list[dict[str, Any]] = []
    aggregates = Aggregates()
    for session_id, session_buckets in by_session.items():
        first = session_buckets[0]
        summary = session_summary(session_id, session_buckets, day)
        row = rows.get(first.session_key)
        if row is not None and row.sessionId != session_id:
            row = None  # an earlier instance of the key (before a reset)
        aggregates.add(first.agent_id, summary)
        entries.append(_session_entry(first.session_key, session_id, first.agent_id, row, summary))
    entries.sort(key=lambda e: -int(e["updatedAt"] or 0))
    limit = opt(params.limit) or 50
    shown = entries[:limit]
    if opt(params.includeContextWeight):
        for e in shown:
            e["contextWeight"] = None
    return {
        "updatedAt": call.gateway.now_ms(),
        "startDate": span.start_date,
        "endDate": span.end_date,
        "sessions": shown,
        "totals": aggregates.totals,
        "aggregates": aggregates.finish(),
        "creatorOptions": [{"key": UNKNOWN_CREATOR}],
    }


async def _transcript(call: Call, params: SessionUsageParams, what: str) -> tuple[str, list[Any]]:
    if not params.key.strip():
        raise invalid_request(f"key is required for {what}")
    key = key_of(call, params.key, params.agentId)
    store = call.gateway.supervisor.store
    row = await store.get_session(key)
    if row is None:
        raise invalid_request(f"Invalid session key: {params.key}")
    entries = await store.load_entries(row.sessionId)
    return row.sessionId, [e.message for e in entries if isinstance(e, MessageEntry)]


async def usage_timeseries(call: Call, params: SessionUsageParams) -> dict[str, Any]:
    session_id, messages = await _transcript(call, params, "timeseries")
    if not messages:
        raise invalid_request(f"No transcript found for session: {params.key}")
    prices = PriceTable.for_config(call.gateway.supervisor.generation.config)
    return session_timeseries(session_id, messages, prices, max_points=200)


async def usage_logs(call: Call, params: SessionUsageParams) -> dict[str, Any]:
    _, messages = await _transcript(call, params, "logs")
    prices = PriceTable.for_config(call.gateway.supervisor.generation.config)
    limit = min(params.limit or 200, 1000)
    return {"logs": session_logs(messages, prices, limit=limit)}


async def usage_cost_text(call: Call, agent_id: str, key: str, session_id: str) -> str:
    """`/usage cost`: this session's cost and tokens, today's and the last 30 days' cost
    (of the session's agent, days in the gateway's time), as OpenClaw words it."""
    store = UsageStore(call.gateway.supervisor.store)
    now = call.gateway.now_ms()
    own = await store.buckets(start_ms=0, end_ms=now, session_key=key, with_tools=False)
    session = totals_view(sb.bucket for sb in own if sb.session_id == session_id)
    span = resolve_range(resolve_calendar("gateway", None, None), range_name="30d", now_ms=now)
    recent = await store.buckets(
        start_ms=now - 29 * 86_400_000, end_ms=now, agent_id=agent_id, with_tools=False
    )
    summary = cost_summary((sb.bucket for sb in recent), span, now)
    today = span.calendar.day(now)
    day = next((d for d in summary["daily"] if d["date"] == today), None)

    def partial(totals: dict[str, Any] | None) -> str:
        return " (partial)" if totals and totals["missingCostEntries"] > 0 else ""

    cost = format_usd(session["totalCost"])
    tokens = session["totalTokens"]
    line = f"Session {cost}{partial(session)}"
    if tokens:
        line += f" · {format_token_count(tokens)} tokens"
    return "\n".join(
        [
            "💸 Usage cost",
            line,
            f"Today {format_usd(day['totalCost'] if day else 0.0)}{partial(day)}",
            f"Last 30d {format_usd(summary['totals']['totalCost'])}{partial(summary['totals'])}",
        ]
    )
