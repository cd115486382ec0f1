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

import attrs
import msgspec
import trio

from actors import UsageScope, UsageStore
from runtime.model import GenerationError
from runtime.protocol import SessionsUsageParams, invalid_request, opt
from runtime.sessions import MessageEntry, SessionRow
from runtime.usage import (
    UNKNOWN_CREATOR,
    Bucket,
    DateRange,
    DateRangeError,
    PriceTable,
    StoredBucket,
    cost_summary,
    fleet_aggregates,
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
    gen = call.gateway.actors.supervisor.generation
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
    store = UsageStore(call.gateway.actors.supervisor.store)
    recent = max(span.start_ms, span.end_ms - 400 * 86_400_000)
    step = span.calendar.slot_ms(recent, span.end_ms)
    slots = await store.by_slot(UsageScope(span.start_ms, span.end_ms, agent_id), step)
    return cost_summary(slots, span, call.gateway.process.now_ms())


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


@attrs.frozen
class _Listed:
    """A row of the report: one session instance, or with `groupBy: "family"` every
    instance of a key (`ids`, the current one `current`)."""

    unit: str
    key: str
    agent_id: str
    row: SessionRow | None
    ids: tuple[str, ...]
    current: str
    updated: int


def _entry(listed: _Listed, usage: dict[str, Any], family: bool) -> dict[str, Any]:
    row = listed.row
    entry: dict[str, Any] = {"key": listed.key}
    if row is not None and (row.label or row.displayName):
        entry["label"] = row.label or row.displayName
    entry.update(sessionId=listed.current, scope="family" if family else "instance")
    if family:
        entry.update(
            sessionFamilyKey=listed.key,
            currentSessionId=listed.current,
            includedSessionIds=list(listed.ids),
            historicalInstanceCount=len(listed.ids),
        )
    entry.update(
        updatedAt=listed.updated,
        agentId=listed.agent_id,
        creatorKey=UNKNOWN_CREATOR,
        usage=usage,
        hasContextWeight=False,
    )
    if row is not None:
        for name in ("modelProvider", "model", "modelOverride", "providerOverride"):
            value = getattr(row, name, None)
            if value is not None:
                entry[name] = value
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
    family = opt(params.groupBy) == "family" or opt(params.includeHistorical) is True
    sup = call.gateway.actors.supervisor
    store = UsageStore(sup.store)
    scope = UsageScope(span.start_ms, span.end_ms, agent_id, key)
    sums = await _sums(call, store, scope, span, agent_id)
    per_session = sums.per_session
    creator = opt(params.creatorKey)
    if creator is not None and creator != UNKNOWN_CREATOR:
        per_session = []
        sums = _Sums()
    unit = {sb.session_id: sb.session_key if family else sb.session_id for sb in per_session}
    per_unit = [attrs.evolve(sb, session_id=unit[sb.session_id]) for sb in per_session]
    listed = _listed(per_session, unit, sums.rows, opt(params.limit) or 50)
    day = span.calendar.formatter()
    entries = await _entries(store, scope, listed, day, family)
    if opt(params.includeContextWeight):
        for e in entries:
            e["contextWeight"] = None
    activity: dict[str, set[str]] = {}
    for session_id, slot in sums.activity:
        activity.setdefault(unit.get(session_id, session_id), set()).add(day(slot))
    quarters, tools = sums.slots, sums.tools
    totals, aggregates = fleet_aggregates(quarters, per_unit, tools, activity, day)
    return {
        "updatedAt": call.gateway.process.now_ms(),
        "startDate": span.start_date,
        "endDate": span.end_date,
        "sessions": entries,
        "totals": totals,
        "aggregates": aggregates,
        "creatorOptions": [{"key": UNKNOWN_CREATOR}],
    }


@attrs.define
class _Sums:
    """What a report reads from the store at once (`_sums`)."""

    per_session: list[StoredBucket] = attrs.field(factory=list)
    slots: list[Bucket] = attrs.field(factory=list)
    tools: dict[str, int] = attrs.field(factory=dict)
    activity: list[tuple[str, int]] = attrs.field(factory=list)
    rows: dict[str, SessionRow] = attrs.field(factory=dict)


async def _sums(
    call: Call, store: UsageStore, scope: UsageScope, span: DateRange, agent_id: str | None
) -> _Sums:
    """The store's sums for a report, read concurrently (each on a reader of its own):
    by session and model, by slot and model, by tool, each session's active slots, and
    the session rows. A checkpoint."""
    sums = _Sums()
    step = span.calendar.slot_ms(max(span.start_ms, span.end_ms - 400 * 86_400_000), span.end_ms)

    async def by_session() -> None:
        sums.per_session = await store.by_session(scope)

    async def by_slot() -> None:
        sums.slots = await store.by_slot(scope, step)

    async def tools() -> None:
        sums.tools = await store.tools(scope)

    async def activity() -> None:
        sums.activity = await store.activity(scope, step)

    async def rows() -> None:
        listed = await call.gateway.actors.supervisor.store.list_sessions(
            limit=None, agent_id=agent_id
        )
        sums.rows = {r.key: r for r in listed}

    async with trio.open_nursery() as nursery:
        for read in (by_session, by_slot, tools, activity, rows):
            nursery.start_soon(read)
    return sums


def _listed(
    per_session: list[StoredBucket], unit: dict[str, str], rows: dict[str, SessionRow], limit: int
) -> list[_Listed]:
    """The rows a report lists, newest first, at most `limit`. A key's session row is its
    current instance's (a reset made a new one): an older instance listed alone has none."""
    ids: dict[str, dict[str, None]] = {}
    last: dict[str, int] = {}
    owner: dict[str, StoredBucket] = {}
    for sb in per_session:
        u = unit[sb.session_id]
        ids.setdefault(u, {})[sb.session_id] = None
        last[sb.session_id] = max(last.get(sb.session_id, 0), sb.bucket.last_ts or 0)
        owner.setdefault(u, sb)
    found: list[_Listed] = []
    for u, instances in ids.items():
        sb = owner[u]
        row = rows.get(sb.session_key)
        if row is not None and row.sessionId not in instances:
            row = None
        current = row.sessionId if row is not None else max(instances, key=lambda i: last[i])
        updated = row.updatedAt if row is not None else last[current]
        found.append(
            _Listed(u, sb.session_key, sb.agent_id, row, tuple(instances), current, updated)
        )
    found.sort(key=lambda listed: -listed.updated)
    return found[:limit]


async def _entries(
    store: UsageStore,
    scope: UsageScope,
    listed: list[_Listed],
    day: Any,
    family: bool,
) -> list[dict[str, Any]]:
    if not listed:
        return []
    ids = [i for item in listed for i in item.ids]
    found = await store.buckets(attrs.evolve(scope, session_ids=ids))
    by_session: dict[str, list[StoredBucket]] = {}
    for sb in found:
        by_session.setdefault(sb.session_id, []).append(sb)
    entries = []
    for item in listed:
        buckets = [sb for i in item.ids for sb in by_session.get(i, [])]
        entries.append(_entry(item, session_summary(item.current, buckets, day), family))
    return entries


async def _transcript(call: Call, params: SessionUsageParams, what: str) -> tuple[str, list[Any]]:
    if not params.key.strip():
        raise invalid_request(f"key is required for {what}")
    key = key_of(call, params.key, params.agentId)
    store = call.gateway.actors.supervisor.store
    row = await store.get_session(key)
    if row is None:
        raise invalid_request(f"Invalid session key: {params.key}")
    entries = await store.load_entries(row.sessionId)
    return row.sessionId, [e.message for e in entries if isinstance(e, MessageEntry)]


async def usage_timeseries(call: Call, params: SessionUsageParams) -> dict[str, Any]:
    session_id, messages = await _transcript(call, params, "timeseries")
    if not messages:
        raise invalid_request(f"No transcript found for session: {params.key}")
    prices = PriceTable.for_config(call.gateway.actors.supervisor.generation.config)
    return session_timeseries(session_id, messages, prices, max_points=200)


async def usage_logs(call: Call, params: SessionUsageParams) -> dict[str, Any]:
    _, messages = await _transcript(call, params, "logs")
    prices = PriceTable.for_config(call.gateway.actors.supervisor.generation.config)
    limit = min(params.limit or 200, 1000)
    return {"logs": session_logs(messages, prices, limit=limit)}


async def usage_cost_text(call: Call, agent_id: str, key: str, session_id: str) -> str:
    """`/usage cost`: this session's cost and tokens, today's and the last 30 days' cost
    (of the session's agent, days in the gateway's time), as OpenClaw words it."""
    store = UsageStore(call.gateway.actors.supervisor.store)
    now = call.gateway.process.now_ms()
    own = await store.by_session(UsageScope(0, now, session_key=key))
    session = totals_view(sb.bucket for sb in own if sb.session_id == session_id)
    span = resolve_range(resolve_calendar("gateway", None, None), range_name="30d", now_ms=now)
    recent = await store.by_slot(UsageScope(now - 29 * 86_400_000, now, agent_id))
    summary = cost_summary(recent, span, now)
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
