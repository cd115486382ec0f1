"""Usage reports in OpenClaw's shapes, added up from stored buckets (`_rollup`).

- `totals_view`: OpenClaw's `CostUsageTotals` (tokens and cost by kind, `totalCost`,
  `missingCostEntries` and `missingCostByModel`).
- `session_summary`: one session's usage in a range (`sessions.usage`' `usage`): totals,
  first and last activity, the days, each day's tokens, cost, messages, latency and
  models, the UTC quarter hours, message and tool counts, model usage, latency.
- `Aggregates`: what `sessions.usage` adds over its sessions (`totals`, `aggregates`: by
  model, provider, agent, creator, day; messages, tools, latency).
- `cost_summary`: `usage.cost`: each day of the range (zero-filled up to 366 days) and
  the totals.

Latency: a bucket keeps the count, sum, least and greatest; `p95Ms` is the greatest of the
bucket where 95 % of the replies are reached, walking the buckets by their greatest (an
upper bound, where OpenClaw keeps centroids).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs

from ._dates import DateRange
from ._rollup import Bucket, total

__all__ = [
    "UNKNOWN_CREATOR",
    "Aggregates",
    "StoredBucket",
    "add_bucket",
    "cost_summary",
    "empty_totals",
    "latency_view",
    "session_summary",
    "totals_view",
]

UNKNOWN_CREATOR: Final = '["unknown"]'
MAX_ZERO_FILL_DAYS: Final = 366


@attrs.frozen
class StoredBucket:
    """A bucket as the store keeps it: whose it is, and its tools' calls."""

    session_id: str
    agent_id: str
    session_key: str
    bucket: Bucket
    tools: dict[str, int] = attrs.field(factory=dict)


def empty_totals() -> dict[str, Any]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "totalCost": 0.0,
        "inputCost": 0.0,
        "outputCost": 0.0,
        "cacheReadCost": 0.0,
        "cacheWriteCost": 0.0,
        "missingCostEntries": 0,
    }


def add_bucket(totals: dict[str, Any], b: Bucket) -> None:
    """Add bucket `b`'s tokens and cost into `totals` (a `totals_view` dict)."""
    totals["input"] += b.input
    totals["output"] += b.output
    totals["cacheRead"] += b.cache_read
    totals["cacheWrite"] += b.cache_write
    totals["totalTokens"] += b.total_tokens
    totals["totalCost"] += b.total_cost
    totals["inputCost"] += b.input_cost
    totals["outputCost"] += b.output_cost
    totals["cacheReadCost"] += b.cache_read_cost
    totals["cacheWriteCost"] += b.cache_write_cost
    if b.missing_cost:
        totals["missingCostEntries"] += b.missing_cost
        by_model = totals.setdefault("missingCostByModel", {})
        ref = f"{b.provider or 'unknown'}/{b.model or 'unknown'}"
        by_model[ref] = by_model.get(ref, 0) + b.missing_cost


def add_totals(target: dict[str, Any], source: dict[str, Any]) -> None:
    for name, value in source.items():
        if name == "missingCostByModel":
            by_model = target.setdefault(name, {})
            for ref, count in value.items():
                by_model[ref] = by_model.get(ref, 0) + count
        elif name in target:
            target[name] += value


def totals_view(buckets: Iterable[Bucket]) -> dict[str, Any]:
    totals = empty_totals()
    for b in buckets:
        add_bucket(totals, b)
    return totals


def _counts(b: Bucket) -> dict[str, int]:
    return {
        "total": b.messages,
        "user": b.user_messages,
        "assistant": b.assistant_messages,
        "toolCalls": b.tool_calls,
        "toolResults": b.tool_results,
        "errors": b.errors,
    }


def latency_view(buckets: Sequence[Bucket]) -> dict[str, Any] | None:
    timed = [b for b in buckets if b.latency_count]
    count = sum(b.latency_count for b in timed)
    if not count:
        return None
    target, seen, p95 = -(-count * 95 // 100), 0, 0.0
    for b in sorted(timed, key=lambda b: b.latency_max):
        seen += b.latency_count
        p95 = b.latency_max
        if seen >= target:
            break
    return {
        "count": count,
        "avgMs": sum(b.latency_sum for b in timed) / count,
        "p95Ms": p95,
        "minMs": min(b.latency_min or 0.0 for b in timed),
        "maxMs": max(b.latency_max for b in timed),
    }


def _model_usage(buckets: Iterable[Bucket]) -> list[dict[str, Any]]:
    models: dict[tuple[str, str], dict[str, Any]] = {}
    for b in buckets:
        if not b.calls:
            continue
        entry = models.get((b.provider, b.model))
        if entry is None:
            entry = models[(b.provider, b.model)] = {
                "provider": b.provider or None,
                "model": b.model or None,
                "count": 0,
                "totals": empty_totals(),
            }
        entry["count"] += b.calls
        add_bucket(entry["totals"], b)
    return sorted(
        models.values(),
        key=lambda m: (-m["totals"]["totalCost"], -m["totals"]["totalTokens"]),
    )


def _tool_usage(tools: dict[str, int]) -> dict[str, Any] | None:
    if not tools:
        return None
    entries = sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "totalCalls": sum(tools.values()),
        "uniqueTools": len(tools),
        "tools": [{"name": name, "count": count} for name, count in entries],
    }


def _quarter(ms: int) -> tuple[str, int]:
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return moment.date().isoformat(), (moment.hour * 60 + moment.minute) // 15


def _by_day(
    rows: Sequence[StoredBucket], day: Callable[[int], str]
) -> dict[str, list[StoredBucket]]:
    days: dict[str, list[StoredBucket]] = {}
    for row in rows:
        days.setdefault(day(row.bucket.bucket), []).append(row)
    return dict(sorted(days.items()))


def _whole(buckets: Sequence[Bucket]) -> Bucket:
    return total(buckets)


def session_summary(
    session_id: str, rows: Sequence[StoredBucket], day: Callable[[int], str]
) -> dict[str, Any]:
    """One session's usage over `rows` (its buckets in the range), days by `day`."""
    buckets = [r.bucket for r in rows]
    whole = _whole(buckets)
    tools: dict[str, int] = {}
    for r in rows:
        for name, count in r.tools.items():
            tools[name] = tools.get(name, 0) + count
    daily_breakdown, daily_counts, daily_latency, daily_models = [], [], [], []
    for date, day_rows in _by_day(rows, day).items():
        day_buckets = [r.bucket for r in day_rows]
        totals = totals_view(day_buckets)
        daily_breakdown.append(
            {"date": date, "tokens": totals["totalTokens"], "cost": totals["totalCost"], **totals}
        )
        daily_counts.append({"date": date, **_counts(_whole(day_buckets))})
        latency = latency_view(day_buckets)
        if latency is not None:
            daily_latency.append({"date": date, **latency})
        for m in _model_usage(day_buckets):
            t = m["totals"]
            daily_models.append(
                {
                    "date": date,
                    "provider": m["provider"],
                    "model": m["model"],
                    "tokens": t["totalTokens"],
                    "cost": t["totalCost"],
                    "count": m["count"],
                }
            )
    by_quarter: dict[int, list[Bucket]] = {}
    for b in buckets:
        by_quarter.setdefault(b.bucket, []).append(b)
    quarters = {_quarter(q): total(bs, q) for q, bs in by_quarter.items()}
    summary: dict[str, Any] = {
        "sessionId": session_id,
        "firstActivity": whole.first_ts,
        "lastActivity": whole.last_ts,
        "activityDates": [d["date"] for d in daily_counts],
        "dailyBreakdown": daily_breakdown,
        "dailyMessageCounts": daily_counts,
        "messageCounts": _counts(whole),
        **totals_view(buckets),
    }
    if whole.first_ts is not None and whole.last_ts is not None:
        summary["durationMs"] = max(0, whole.last_ts - whole.first_ts)
    if quarters:
        ordered = sorted(quarters.items())
        summary["utcQuarterHourMessageCounts"] = [
            {"date": d, "quarterIndex": q, **_counts(b)} for (d, q), b in ordered
        ]
        summary["utcQuarterHourTokenUsage"] = [
            {
                "date": d,
                "quarterIndex": q,
                "input": b.input,
                "output": b.output,
                "cacheRead": b.cache_read,
                "cacheWrite": b.cache_write,
                "totalTokens": b.total_tokens,
                "totalCost": b.total_cost,
            }
            for (d, q), b in ordered
        ]
    optional = {
        "dailyLatency": daily_latency or None,
        "dailyModelUsage": sorted(daily_models, key=lambda m: (m["date"], -m["cost"])) or None,
        "toolUsage": _tool_usage(tools),
        "modelUsage": _model_usage(buckets) or None,
        "latency": latency_view(buckets),
    }
    summary.update({k: v for k, v in optional.items() if v is not None})
    return summary


@attrs.define
class Aggregates:
    """What `sessions.usage` adds up over its sessions (OpenClaw's aggregate accumulator);
    `add` each session's summary, then `finish`."""

    totals: dict[str, Any] = attrs.field(factory=empty_totals)
    _messages: dict[str, int] = attrs.field(
        factory=lambda: dict.fromkeys(
            ("total", "user", "assistant", "toolCalls", "toolResults", "errors"), 0
        )
    )
    _tools: dict[str, int] = attrs.field(factory=dict)
    _models: dict[tuple[Any, Any], dict[str, Any]] = attrs.field(factory=dict)
    _providers: dict[Any, dict[str, Any]] = attrs.field(factory=dict)
    _agents: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    _days: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    _cost_days: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    _model_days: dict[tuple[str, Any, Any], dict[str, Any]] = attrs.field(factory=dict)
    _latency: list[dict[str, Any]] = attrs.field(factory=list)
    _daily_latency: dict[str, list[dict[str, Any]]] = attrs.field(factory=dict)
    _activity: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    _sessions: int = 0
    _longest: int = 0

    def add(self, agent_id: str, usage: dict[str, Any]) -> None:
        add_totals(self.totals, _just_totals(usage))
        self._longest = max(self._longest, usage.get("durationMs") or 0)
        counts = usage.get("messageCounts") or {}
        counted = usage.get("firstActivity") is not None or counts.get("total", 0) > 0
        if counted:
            self._sessions += 1
            dates = sorted(set(usage.get("activityDates") or ()))
            activity = self._activity.setdefault(
                json.dumps(dates), {"dates": dates, "sessionCount": 0}
            )
            activity["sessionCount"] += 1
        for name in self._messages:
            self._messages[name] += counts.get(name, 0)
        for tool in (usage.get("toolUsage") or {}).get("tools", ()):
            self._tools[tool["name"]] = self._tools.get(tool["name"], 0) + tool["count"]
        for m in usage.get("modelUsage") or ():
            _merge_model(self._models, (m["provider"], m["model"]), m, m["model"])
            _merge_model(self._providers, m["provider"], m, None)
        agent = self._agents.setdefault(agent_id, empty_totals())
        add_totals(agent, _just_totals(usage))
        if usage.get("latency"):
            self._latency.append(usage["latency"])
        for d in usage.get("dailyLatency") or ():
            self._daily_latency.setdefault(d["date"], []).append(d)
        for d in usage.get("dailyBreakdown") or ():
            day = self._day(d["date"])
            day["tokens"] += d["tokens"]
            day["cost"] += d["cost"]
            add_totals(self._cost_days.setdefault(d["date"], empty_totals()), _just_totals(d))
        for d in usage.get("dailyMessageCounts") or ():
            day = self._day(d["date"])
            day["messages"] += d["total"]
            day["toolCalls"] += d["toolCalls"]
            day["errors"] += d["errors"]
        for d in usage.get("dailyModelUsage") or ():
            key = (d["date"], d["provider"], d["model"])
            found = self._model_days.setdefault(key, {**d, "tokens": 0, "cost": 0.0, "count": 0})
            found["tokens"] += d["tokens"]
            found["cost"] += d["cost"]
            found["count"] += d["count"]

    def _day(self, date: str) -> dict[str, Any]:
        return self._days.setdefault(
            date,
            {"date": date, "tokens": 0, "cost": 0.0, "messages": 0, "toolCalls": 0, "errors": 0},
        )

    def finish(self) -> dict[str, Any]:
        tools = sorted(self._tools.items(), key=lambda kv: -kv[1])
        by_cost = lambda m: (-m["totals"]["totalCost"], -m["totals"]["totalTokens"])  # noqa: E731
        result: dict[str, Any] = {"sessionCount": self._sessions}
        if self._longest > 0:
            result["longestSessionDurationMs"] = self._longest
        result.update(
            {
                "messages": self._messages,
                "tools": {
                    "totalCalls": sum(self._tools.values()),
                    "uniqueTools": len(self._tools),
                    "tools": [{"name": n, "count": c} for n, c in tools],
                },
                "byModel": sorted(self._models.values(), key=by_cost),
                "byProvider": sorted(self._providers.values(), key=by_cost),
                "byAgent": sorted(
                    [{"agentId": a, "totals": t} for a, t in self._agents.items()],
                    key=_agent_cost,
                ),
                "byChannel": [],
                "byCreator": [self._creator()] if self._sessions or self._agents else [],
                "costDaily": [{"date": d, **t} for d, t in sorted(self._cost_days.items())],
                "dailyLatency": [
                    {"date": d, **_merge_latency(v)} for d, v in sorted(self._daily_latency.items())
                ],
                "modelDaily": sorted(
                    self._model_days.values(), key=lambda m: (m["date"], -m["cost"])
                ),
                "daily": [v for _, v in sorted(self._days.items())],
            }
        )
        if self._latency:
            result["latency"] = _merge_latency(self._latency)
        return result

    def _creator(self) -> dict[str, Any]:
        """Every session is the unknown creator's: clawlane records no creator yet."""
        return {
            "key": UNKNOWN_CREATOR,
            "totals": self.totals,
            "sessionCount": self._sessions,
            "daily": [{"date": d, **t} for d, t in sorted(self._cost_days.items())],
            "sessionActivity": sorted(self._activity.values(), key=lambda a: ",".join(a["dates"])),
        }


_TOTAL_KEYS: Final = frozenset(empty_totals()) | {"missingCostByModel"}


def _just_totals(source: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in source.items() if k in _TOTAL_KEYS}


def _agent_cost(entry: dict[str, Any]) -> float:
    return -float(entry["totals"]["totalCost"])


def _merge_model(
    into: dict[Any, dict[str, Any]], key: Any, m: dict[str, Any], model: str | None
) -> None:
    entry = into.get(key)
    if entry is None:
        entry = into[key] = {"provider": m["provider"], "count": 0, "totals": empty_totals()}
        if model is not None:
            entry["model"] = model
    entry["count"] += m["count"]
    add_totals(entry["totals"], m["totals"])


def _merge_latency(stats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    count = sum(s["count"] for s in stats)
    return {
        "count": count,
        "avgMs": sum(s["avgMs"] * s["count"] for s in stats) / count if count else 0,
        "minMs": min(s["minMs"] for s in stats),
        "maxMs": max(s["maxMs"] for s in stats),
        "p95Ms": max(s["p95Ms"] for s in stats),
    }


def cost_summary(buckets: Iterable[Bucket], span: DateRange, now_ms: int) -> dict[str, Any]:
    """`usage.cost`: the range's days (each day of a range up to 366 days, else only days
    with usage) with their totals, and the range's totals."""
    day = span.calendar.formatter()
    daily: dict[str, dict[str, Any]] = {}
    totals = empty_totals()
    for b in buckets:
        add_bucket(daily.setdefault(day(b.bucket), empty_totals()), b)
        add_bucket(totals, b)
    first = dt.date.fromisoformat(span.start_date)
    last = dt.date.fromisoformat(span.end_date)
    count = (last - first).days + 1
    if count <= MAX_ZERO_FILL_DAYS:
        for i in range(count):
            daily.setdefault((first + dt.timedelta(days=i)).isoformat(), empty_totals())
    return {
        "updatedAt": now_ms,
        "days": count,
        "daily": [{"date": d, **t} for d, t in sorted(daily.items())],
        "totals": totals,
    }
