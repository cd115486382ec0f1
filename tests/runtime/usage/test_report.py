"""The reports added up from a fixed transcript equal a hand computation: buckets by quarter
hour and model, a session's summary, the aggregates, `usage.cost`'s days, the time series
and the logs."""

from __future__ import annotations

import datetime as dt

import pytest

from runtime.llm import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from runtime.llm._types import ToolCallContent
from runtime.model import parse_config
from runtime.usage import (
    Aggregates,
    Bucket,
    PriceTable,
    StoredBucket,
    cost_summary,
    fleet_aggregates,
    resolve_calendar,
    resolve_range,
    rollup_messages,
    session_logs,
    session_summary,
    session_timeseries,
)
from runtime.usage._rollup import merge

PRICES = PriceTable.of(
    parse_config(
        {
            "models": {
                "providers": {
                    "anthropic": {
                        "api": "anthropic-messages",
                        "baseUrl": "http://127.0.0.1:1",
                        "apiKey": "k",
                        "models": [
                            {
                                "id": "sonnet",
                                "cost": {
                                    "input": 3,
                                    "output": 15,
                                    "cacheRead": 0.3,
                                    "cacheWrite": 3.75,
                                },
                            },
                            {"id": "free"},
                        ],
                    }
                }
            }
        }
    )
)
T0 = int(dt.datetime(2026, 3, 1, 23, 50, tzinfo=dt.UTC).timestamp() * 1000)  # 23:50 UTC


def reply(ts: int, model: str, usage: Usage, *, tool: str | None = None) -> AssistantMessage:
    content: list[TextContent | ToolCallContent] = [TextContent("ok")]
    if tool is not None:
        content.append(ToolCallContent(id="c1", name=tool, arguments={}))
    return AssistantMessage(
        content=content,  # type: ignore[arg-type]
        timestamp=ts,
        api="anthropic-messages",
        provider="anthropic",
        model=model,
        usage=usage,
        stopReason="toolUse" if tool else "stop",
    )


TRANSCRIPT: list[Message] = [
    UserMessage(content="read the file", timestamp=T0),
    reply(T0 + 2_000, "sonnet", Usage(input=1000, output=100, cacheRead=4000), tool="read"),
    ToolResultMessage(
        toolCallId="c1",
        toolName="read",
        content=[TextContent("x")],
        isError=True,
        timestamp=T0 + 3_000,
    ),
    reply(T0 + 6_000, "sonnet", Usage(input=2000, output=300, cacheWrite=1000)),
    # 20 minutes later: past midnight UTC, the next day and the next quarter hour
    UserMessage(content="again", timestamp=T0 + 20 * 60_000),
    reply(T0 + 20 * 60_000 + 1_000, "free", Usage(input=500, output=50)),
]
# By hand: call 1 = 1000*3 + 100*15 + 4000*0.3 = 5700 µ$; call 2 = 2000*3 + 300*15 + 1000*3.75
# = 14250 µ$; call 3 has no price (missing).
COST_1, COST_2 = 0.0057, 0.01425


def stored() -> list[StoredBucket]:
    rollup = rollup_messages(TRANSCRIPT, PRICES)
    tools: dict[int, dict[str, int]] = {}
    for (quarter, name), n in rollup.tools.items():
        tools.setdefault(quarter, {})[name] = n
    out = []
    for b in rollup.buckets.values():
        out.append(StoredBucket("s1", "main", "agent:main:s1", b, tools.pop(b.bucket, {})))
    return out


def test_the_rollup_splits_by_quarter_hour_and_model() -> None:
    rollup = rollup_messages(TRANSCRIPT, PRICES)
    keys = sorted((b.bucket - T0 // 900_000 * 900_000, b.model) for b in rollup.buckets.values())
    assert keys == [(0, ""), (0, "sonnet"), (900_000, ""), (900_000, "free")]
    sonnet = next(b for b in rollup.buckets.values() if b.model == "sonnet")
    assert (sonnet.calls, sonnet.input, sonnet.output, sonnet.cache_read, sonnet.cache_write) == (
        2,
        3000,
        400,
        4000,
        1000,
    )
    assert sonnet.total_cost == pytest.approx(COST_1 + COST_2)
    assert sonnet.latency_count == 2 and sonnet.latency_max == 6_000 and sonnet.latency_min == 2_000
    assert rollup.tools == {(T0 // 900_000 * 900_000, "read"): 1}


def test_a_session_summary_equals_the_hand_computation() -> None:
    day = resolve_calendar(None, None, None).formatter()
    s = session_summary("s1", stored(), day)
    assert s["totalCost"] == pytest.approx(COST_1 + COST_2)
    assert s["missingCostEntries"] == 1 and s["missingCostByModel"] == {"anthropic/free": 1}
    assert (s["input"], s["output"], s["cacheRead"], s["cacheWrite"]) == (3500, 450, 4000, 1000)
    assert s["totalTokens"] == 3500 + 450 + 4000 + 1000
    assert s["messageCounts"] == {
        "total": 5,
        "user": 2,
        "assistant": 3,
        "toolCalls": 1,
        "toolResults": 1,
        "errors": 1,
    }
    assert s["activityDates"] == ["2026-03-01", "2026-03-02"]
    assert [d["cost"] for d in s["dailyBreakdown"]] == pytest.approx([COST_1 + COST_2, 0.0])
    assert s["firstActivity"] == T0 and s["lastActivity"] == T0 + 20 * 60_000 + 1_000
    assert s["durationMs"] == 20 * 60_000 + 1_000
    assert s["toolUsage"] == {
        "totalCalls": 1,
        "uniqueTools": 1,
        "tools": [{"name": "read", "count": 1}],
    }
    assert [m["model"] for m in s["modelUsage"]] == ["sonnet", "free"]
    assert s["latency"]["count"] == 3 and s["latency"]["avgMs"] == pytest.approx(3_000)
    assert [q["quarterIndex"] for q in s["utcQuarterHourMessageCounts"]] == [95, 0]
    # In Vienna (UTC+1 in March) both exchanges are on March 2nd
    vienna = resolve_calendar("specific", "Europe/Vienna", None).formatter()
    assert session_summary("s1", stored(), vienna)["activityDates"] == ["2026-03-02"]


def test_aggregates_add_sessions_by_model_provider_agent_and_day() -> None:
    day = resolve_calendar(None, None, None).formatter()
    agg = Aggregates()
    summary = session_summary("s1", stored(), day)
    agg.add("main", summary)
    agg.add("ops", summary)
    out = agg.finish()
    assert agg.totals["totalCost"] == pytest.approx(2 * (COST_1 + COST_2))
    assert agg.totals["missingCostByModel"] == {"anthropic/free": 2}
    assert out["sessionCount"] == 2 and out["messages"]["total"] == 10
    assert [(m["model"], m["count"]) for m in out["byModel"]] == [("sonnet", 4), ("free", 2)]
    assert [(p["provider"], p["count"]) for p in out["byProvider"]] == [("anthropic", 6)]
    assert sorted(a["agentId"] for a in out["byAgent"]) == ["main", "ops"]
    assert [d["date"] for d in out["daily"]] == ["2026-03-01", "2026-03-02"]
    assert out["daily"][0]["messages"] == 6 and out["daily"][0]["toolCalls"] == 2
    assert out["tools"]["tools"] == [{"name": "read", "count": 2}]
    assert out["byCreator"][0]["sessionCount"] == 2


def test_usage_cost_fills_every_day_of_the_range() -> None:
    cal = resolve_calendar("utc", None, None)
    span = resolve_range(cal, start_date="2026-02-27", end_date="2026-03-03")
    summary = cost_summary((sb.bucket for sb in stored()), span, now_ms=1)
    assert summary["days"] == 5
    assert [d["date"] for d in summary["daily"]] == [
        "2026-02-27",
        "2026-02-28",
        "2026-03-01",
        "2026-03-02",
        "2026-03-03",
    ]
    assert summary["daily"][2]["totalCost"] == pytest.approx(COST_1 + COST_2)
    assert summary["daily"][3]["missingCostEntries"] == 1
    assert summary["totals"]["totalTokens"] == 8950


def test_timeseries_and_logs_of_a_transcript() -> None:
    series = session_timeseries("s1", TRANSCRIPT, PRICES)
    assert [p["cost"] for p in series["points"]] == pytest.approx([COST_1, COST_2, 0.0])
    assert series["points"][-1]["cumulativeCost"] == pytest.approx(COST_1 + COST_2)
    assert series["points"][-1]["cumulativeTokens"] == 8950
    two = session_timeseries("s1", TRANSCRIPT, PRICES, max_points=2)["points"]
    assert [p["totalTokens"] for p in two] == [5100 + 3300, 550]
    logs = session_logs(TRANSCRIPT, PRICES, limit=4)
    assert [e["role"] for e in logs] == ["toolResult", "assistant", "user", "assistant"]
    assert logs[0]["content"] == "[Tool: read]\n[Tool Result]\nx"
    assert logs[1]["cost"] == pytest.approx(COST_2) and "cost" not in logs[3]


def test_the_store_sums_give_the_aggregates_the_summaries_give() -> None:
    day = resolve_calendar(None, None, None).formatter()
    one, two = (
        stored(),
        [StoredBucket("s2", "ops", "agent:ops:s2", sb.bucket, sb.tools) for sb in stored()],
    )
    slow = Aggregates()
    slow.add("main", session_summary("s1", one, day))
    slow.add("ops", session_summary("s2", two, day))
    expected = slow.finish()
    quarters: dict[tuple[int, str, str], Bucket] = {}
    per_session: dict[tuple[str, str, str], StoredBucket] = {}
    tools: dict[str, int] = {}
    activity: dict[str, set[str]] = {}
    for sb in one + two:
        b = sb.bucket
        merge(
            quarters.setdefault(
                (b.bucket, b.provider, b.model), Bucket(b.bucket, b.provider, b.model)
            ),
            b,
        )
        key = (sb.session_id, b.provider, b.model)
        if key not in per_session:
            per_session[key] = StoredBucket(
                sb.session_id, sb.agent_id, sb.session_key, Bucket(0, b.provider, b.model)
            )
        merge(per_session[key].bucket, b)
        for name, n in sb.tools.items():
            tools[name] = tools.get(name, 0) + n
        activity.setdefault(sb.session_id, set()).add(day(b.bucket))
    totals, fast = fleet_aggregates(
        list(quarters.values()), list(per_session.values()), tools, activity, day
    )
    assert totals.pop("missingCostByModel") == slow.totals.pop("missingCostByModel")
    assert totals == pytest.approx(slow.totals)
    for name in (
        "sessionCount",
        "messages",
        "tools",
        "byProvider",
        "daily",
        "costDaily",
        "byChannel",
    ):
        assert fast[name] == expected[name], name
    assert [(m["model"], m["count"]) for m in fast["byModel"]] == [
        (m["model"], m["count"]) for m in expected["byModel"]
    ]
    assert sorted(a["agentId"] for a in fast["byAgent"]) == ["main", "ops"]
    assert fast["modelDaily"] == expected["modelDaily"]
    assert fast["byCreator"][0]["sessionActivity"] == expected["byCreator"][0]["sessionActivity"]
    assert fast["longestSessionDurationMs"] == expected["longestSessionDurationMs"]
    for name in ("count", "avgMs", "minMs", "maxMs"):
        assert fast["latency"][name] == expected["latency"][name]
