"""`sessions.usage`' totals and aggregates over every session of a report, from sums the
store makes (`actors.store.UsageStore`): the range's buckets added up by quarter hour and
model across sessions, by session and model, the tool calls by tool, and each session's
active days. The same shape as `Aggregates.finish` (which adds session summaries up), without
building a summary for every session: a report shows the first `limit` sessions in full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ._report import (
    UNKNOWN_CREATOR,
    StoredBucket,
    add_bucket,
    empty_totals,
    latency_view,
    totals_view,
)
from ._rollup import Bucket, total

__all__ = ["fleet_aggregates"]


def _by_cost(entry: dict[str, Any]) -> tuple[float, int]:
    return (-entry["totals"]["totalCost"], -entry["totals"]["totalTokens"])


def _models(buckets: Iterable[Bucket], *, by_provider: bool) -> list[dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for b in buckets:
        if not b.calls:
            continue
        key = b.provider if by_provider else (b.provider, b.model)
        entry = found.get(key)
        if entry is None:
            entry = found[key] = {"provider": b.provider or None, "count": 0}
            if not by_provider:
                entry["model"] = b.model or None
            entry["totals"] = empty_totals()
        entry["count"] += b.calls
        add_bucket(entry["totals"], b)
    return sorted(found.values(), key=_by_cost)


def _days(quarters: Sequence[Bucket], day: Callable[[int], str]) -> dict[str, list[Bucket]]:
    days: dict[str, list[Bucket]] = {}
    for b in quarters:
        days.setdefault(day(b.bucket), []).append(b)
    return dict(sorted(days.items()))


def _daily(
    quarters: Sequence[Bucket], day: Callable[[int], str]
) -> tuple[list[dict[str, Any]], ...]:
    """`daily`, `costDaily`, `dailyLatency` and `modelDaily` of the aggregates."""
    daily: list[dict[str, Any]] = []
    cost_daily: list[dict[str, Any]] = []
    daily_latency: list[dict[str, Any]] = []
    model_daily: list[dict[str, Any]] = []
    for date, bs in _days(quarters, day).items():
        day_totals = totals_view(bs)
        cost_daily.append({"date": date, **day_totals})
        daily.append(
            {
                "date": date,
                "tokens": day_totals["totalTokens"],
                "cost": day_totals["totalCost"],
                "messages": sum(b.messages for b in bs),
                "toolCalls": sum(b.tool_calls for b in bs),
                "errors": sum(b.errors for b in bs),
            }
        )
        latency = latency_view(bs)
        if latency is not None:
            daily_latency.append({"date": date, **latency})
        for m in sorted(_models(bs, by_provider=False), key=lambda m: -m["totals"]["totalCost"]):
            t = m["totals"]
            model_daily.append(
                {
                    "date": date,
                    "provider": m["provider"],
                    "model": m["model"],
                    "tokens": t["totalTokens"],
                    "cost": t["totalCost"],
                    "count": m["count"],
                }
            )
    return daily, cost_daily, daily_latency, model_daily


def _activity(
    sessions: Iterable[str], activity: Mapping[str, Iterable[str]]
) -> list[dict[str, Any]]:
    """How many sessions were active on each set of days."""
    activities: dict[tuple[str, ...], int] = {}
    for session_id in sessions:
        dates = tuple(sorted(set(activity.get(session_id, ()))))
        activities[dates] = activities.get(dates, 0) + 1
    return [
        {"dates": list(dates), "sessionCount": n}
        for dates, n in sorted(activities.items(), key=lambda kv: ",".join(kv[0]))
    ]


def fleet_aggregates(
    quarters: Sequence[Bucket],
    sessions: Sequence[StoredBucket],
    tools: Mapping[str, int],
    activity: Mapping[str, Iterable[str]],
    day: Callable[[int], str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(totals, aggregates) of a report: `quarters` (the range's buckets by quarter hour and
    model), `sessions` (by session and model), `tools` (calls by tool), `activity` (each
    session's days), days by `day`."""
    totals = totals_view(quarters)
    whole = total(quarters)
    agents: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[int]] = {}
    for sb in sessions:
        add_bucket(agents.setdefault(sb.agent_id, empty_totals()), sb.bucket)
        span = spans.setdefault(sb.session_id, [])
        span.extend(t for t in (sb.bucket.first_ts, sb.bucket.last_ts) if t is not None)
    longest = max((max(s) - min(s) for s in spans.values() if s), default=0)
    daily, cost_daily, daily_latency, model_daily = _daily(quarters, day)
    ordered_tools = sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))
    aggregates: dict[str, Any] = {"sessionCount": len(spans)}
    if longest > 0:
        aggregates["longestSessionDurationMs"] = longest
    aggregates.update(
        {
            "messages": {
                "total": whole.messages,
                "user": whole.user_messages,
                "assistant": whole.assistant_messages,
                "toolCalls": whole.tool_calls,
                "toolResults": whole.tool_results,
                "errors": whole.errors,
            },
            "tools": {
                "totalCalls": sum(tools.values()),
                "uniqueTools": len(tools),
                "tools": [{"name": n, "count": c} for n, c in ordered_tools],
            },
            "byModel": _models(quarters, by_provider=False),
            "byProvider": _models(quarters, by_provider=True),
            "byAgent": sorted(
                [{"agentId": a, "totals": t} for a, t in agents.items()], key=_by_cost
            ),
            "byChannel": [],
            "byCreator": [
                {
                    "key": UNKNOWN_CREATOR,
                    "totals": totals,
                    "sessionCount": len(spans),
                    "daily": cost_daily,
                    "sessionActivity": _activity(spans, activity),
                }
            ]
            if spans
            else [],
            "costDaily": cost_daily,
            "dailyLatency": daily_latency,
            "modelDaily": model_daily,
            "daily": daily,
        }
    )
    latency = latency_view(quarters)
    if latency is not None:
        aggregates["latency"] = latency
    return totals, aggregates
