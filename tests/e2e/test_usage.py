"""Usage and cost over a real socket, on SQLite and on PostgreSQL: runs of the `local` model
with a priced config (and one unpriced model) end, and `sessions.usage`, `usage.cost`,
`sessions.usage.timeseries` and `sessions.usage.logs` answer in OpenClaw's shapes with figures
equal to a hand computation from the stored transcript's usage; the ranges, time zones and
bad inputs are OpenClaw's; `/usage` in `chat.send` sets the footer and answers the cost."""

from __future__ import annotations

import datetime as dt
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.llm import AssistantMessage
from runtime.model import parse_config
from runtime.sessions import MessageEntry
from runtime.usage import format_token_count, format_usd
from tests.actors._databases import pg_url
from tests.conftest import client_auth, frame_checker, gateway_url, running_gateway
from tests.e2e._openclaw import TUI_CONNECT, OpenClawClient, openclaw_client
from transports import GatewayClient, GatewayRequestError, open_gateway_client
from transports.server._gateway import Gateway

__all__ = ["pg_url"]  # the fixture, used by name

# USD per million tokens: echo is priced, other is not (its usage is a missing cost).
PRICE = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
CONFIG: dict[str, Any] = {
    "models": {
        "providers": {
            "local": {
                "api": "local",
                "models": [{"id": "echo", "cost": PRICE}, {"id": "other"}],
            }
        }
    },
    "agents": {"defaults": {"model": {"primary": "local/echo"}}},
}

TOTAL_KEYS = {
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "totalTokens",
    "totalCost",
    "inputCost",
    "outputCost",
    "cacheReadCost",
    "cacheWriteCost",
    "missingCostEntries",
}


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    return {
        "storage": {"backend": "postgres", "postgres": {"url": request.getfixturevalue("pg_url")}}
    }


@asynccontextmanager
async def usage_gateway(
    tmp_path: Path, storage: dict[str, Any]
) -> AsyncIterator[tuple[Gateway, GatewayClient]]:
    config = parse_config({**CONFIG, **storage})
    async with (
        running_gateway(tmp_path, config) as gw,
        open_gateway_client(
            gateway_url(gw),
            client_id="test",
            mode="test",
            on_frame=frame_checker().check,
            **client_auth(gw),
        ) as c,
    ):
        yield gw, c


async def run(c: GatewayClient, key: str, message: str, model: str | None = None) -> None:
    if model is not None:
        await c.request("sessions.patch", {"key": key, "model": model})
    await c.request(
        "agent",
        {"message": message, "sessionKey": key, "idempotencyKey": f"{key}-{message}"},
        expect_final=True,
    )


async def calls_of(gw: Gateway, key: str) -> list[AssistantMessage]:
    row = await gw.supervisor.store.get_session(key)
    assert row is not None
    entries = await gw.supervisor.store.load_entries(row.sessionId)
    return [
        e.message
        for e in entries
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
    ]


def by_hand(calls: list[AssistantMessage]) -> dict[str, Any]:
    """The totals a hand computation gives: echo's calls at PRICE, other's missing."""
    t: dict[str, Any] = dict.fromkeys(TOTAL_KEYS, 0)
    for m in calls:
        u = m.usage
        t["input"] += u.input
        t["output"] += u.output
        t["cacheRead"] += u.cacheRead
        t["cacheWrite"] += u.cacheWrite
        t["totalTokens"] += u.totalTokens or (u.input + u.output + u.cacheRead + u.cacheWrite)
        if m.model == "echo":
            costs = {
                "inputCost": u.input * 3.0 / 1e6,
                "outputCost": u.output * 15.0 / 1e6,
                "cacheReadCost": u.cacheRead * 0.3 / 1e6,
                "cacheWriteCost": u.cacheWrite * 3.75 / 1e6,
            }
            for k, v in costs.items():
                t[k] += v
            t["totalCost"] += sum(costs.values())
        else:
            t["missingCostEntries"] += 1
    return t


def assert_totals(found: dict[str, Any], expected: dict[str, Any]) -> None:
    assert set(found) >= TOTAL_KEYS
    for k in TOTAL_KEYS:
        assert found[k] == pytest.approx(expected[k], abs=1e-12), k


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


async def test_usage_reports_equal_a_hand_computation(
    tmp_path: Path, storage: dict[str, Any]
) -> None:
    with trio.fail_after(30):
        async with usage_gateway(tmp_path, storage) as (gw, c):
            await run(c, "agent:main:a", "hello there")
            await run(c, "agent:main:a", "and again, a longer question this time")
            await run(c, "agent:main:b", "on the other model", model="local/other")
            calls = await calls_of(gw, "agent:main:a") + await calls_of(gw, "agent:main:b")
            assert calls and all(m.usage.input > 0 for m in calls)
            expected = by_hand(calls)
            assert expected["missingCostEntries"] == 1 and expected["totalCost"] > 0

            usage = await c.request("sessions.usage", {})
            assert usage["startDate"] <= today() == usage["endDate"]
            assert_totals(usage["totals"], expected)
            assert usage["totals"]["missingCostByModel"] == {"local/other": 1}
            assert {s["key"] for s in usage["sessions"]} == {"agent:main:a", "agent:main:b"}
            a = next(s for s in usage["sessions"] if s["key"] == "agent:main:a")
            assert a["agentId"] == "main" and a["scope"] == "instance"
            assert a["usage"]["messageCounts"] == {
                "total": 4,
                "user": 2,
                "assistant": 2,
                "toolCalls": 0,
                "toolResults": 0,
                "errors": 0,
            }
            assert_totals(a["usage"], by_hand(await calls_of(gw, "agent:main:a")))
            assert [d["date"] for d in a["usage"]["dailyBreakdown"]] == [today()]
            assert a["usage"]["latency"]["count"] == 2
            assert a["usage"]["modelUsage"][0]["provider"] == "local"
            assert a["usage"]["modelUsage"][0]["count"] == 2
            agg = usage["aggregates"]
            assert agg["sessionCount"] == 2
            assert agg["messages"]["total"] == 6
            assert {m["model"] for m in agg["byModel"]} == {"echo", "other"}
            assert [p["provider"] for p in agg["byProvider"]] == ["local"]
            assert [x["agentId"] for x in agg["byAgent"]] == ["main"]
            assert_totals(agg["byAgent"][0]["totals"], expected)
            assert [d["date"] for d in agg["daily"]] == [today()]

            cost = await c.request("usage.cost", {})
            assert cost["days"] == 30 and len(cost["daily"]) == 30
            assert cost["daily"][-1]["date"] == today()
            assert_totals(cost["totals"], expected)
            assert_totals(cost["daily"][-1], expected)

            series = await c.request("sessions.usage.timeseries", {"key": "agent:main:a"})
            assert len(series["points"]) == 2
            assert series["points"][-1]["cumulativeCost"] == pytest.approx(
                by_hand(await calls_of(gw, "agent:main:a"))["totalCost"]
            )
            logs = await c.request("sessions.usage.logs", {"key": "agent:main:a", "limit": 3})
            assert [entry["role"] for entry in logs["logs"]] == ["assistant", "user", "assistant"]
            assert logs["logs"][-1]["tokens"] > 0 and logs["logs"][-1]["cost"] > 0


async def test_ranges_time_zones_and_bad_inputs(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with usage_gateway(tmp_path, {}) as (_, c):
            await run(c, "agent:main:a", "hello there")
            far = {"startDate": "2001-01-01", "endDate": "2001-01-03"}
            empty = await c.request("usage.cost", far)
            assert [d["date"] for d in empty["daily"]] == ["2001-01-01", "2001-01-02", "2001-01-03"]
            assert empty["totals"]["totalTokens"] == 0
            assert (await c.request("sessions.usage", far))["sessions"] == []
            week = await c.request("usage.cost", {"range": "7d"})
            assert week["days"] == 7 and week["totals"]["totalTokens"] > 0
            everything = await c.request("sessions.usage", {"range": "all"})
            assert everything["startDate"] == "1970-01-01" and len(everything["sessions"]) == 1
            zoned = await c.request(
                "usage.cost", {"mode": "specific", "timeZone": "Pacific/Kiritimati", "days": 1}
            )
            kiritimati = dt.datetime.now(dt.timezone(dt.timedelta(hours=14))).date().isoformat()
            assert [d["date"] for d in zoned["daily"]] == [kiritimati]
            assert zoned["totals"]["totalTokens"] > 0
            offset = await c.request("sessions.usage", {"mode": "specific", "utcOffset": "UTC-12"})
            west = dt.datetime.now(dt.timezone(dt.timedelta(hours=-12))).date().isoformat()
            assert offset["endDate"] == west
            bad = [
                (
                    "usage.cost",
                    {"mode": "specific", "timeZone": "Mars/Olympus"},
                    "invalid timeZone",
                ),
                ("usage.cost", {"mode": "specific", "utcOffset": "UTC+15"}, "invalid utcOffset"),
                ("usage.cost", {"startDate": "2026-02-30", "endDate": "2026-03-01"}, "startDate"),
                ("usage.cost", {"startDate": "2026-01-01"}, "provided together"),
                ("usage.cost", {"startDate": "2026-02-02", "endDate": "2026-02-01"}, "after"),
                ("usage.cost", {"agentScope": "all", "agentId": "main"}, "agentScope=all"),
                ("usage.cost", {"agentId": "nobody"}, "nobody"),
                ("sessions.usage", {"agentScope": "all", "key": "agent:main:a"}, "agentScope"),
                ("sessions.usage", {"range": "2w"}, "range"),
                ("sessions.usage.logs", {"key": "agent:main:nope"}, "Invalid session key"),
                ("sessions.usage.timeseries", {}, "key"),
            ]
            for method, params, needle in bad:
                with pytest.raises(GatewayRequestError) as info:
                    await c.request(method, params)
                assert info.value.code == "INVALID_REQUEST", (method, params)
                assert needle in str(info.value), (method, params, str(info.value))


# --- /usage in chat.send ---------------------------------------------------------------------


async def say(c: OpenClawClient, text: str, session: str = "agent:main:u") -> str:
    run_id = f"r-{uuid.uuid4()}"
    await c.call(
        "chat.send",
        {"sessionKey": session, "message": text, "deliver": False, "idempotencyKey": run_id},
    )
    final = await c.chat_final(run_id)
    assert final["state"] == "final", final
    return str(final["message"]["content"][0]["text"])


async def last_call(gw: Gateway, key: str = "agent:main:u") -> AssistantMessage:
    return (await calls_of(gw, key))[-1]


def footer(m: AssistantMessage) -> str:
    return (
        f"Usage: {format_token_count(m.usage.input)} in / {format_token_count(m.usage.output)} out"
    )


NO_AUTH: dict[str, Any] = {"gateway": {"auth": {"mode": "none"}}}  # the TUI's device unpaired


async def test_usage_sets_the_footer_and_answers_the_cost(tmp_path: Path) -> None:
    with trio.fail_after(40):
        async with (
            usage_gateway(tmp_path, NO_AUTH) as (gw, _),
            openclaw_client(gw, TUI_CONNECT) as c,
        ):
            plain = await say(c, "hello")
            assert "Usage:" not in plain
            assert await say(c, "/usage tokens") == "⚙️ Usage footer: tokens."
            reply = await say(c, "what is the time")
            m = await last_call(gw)
            assert reply.endswith("\n" + footer(m)), reply
            assert await say(c, "/usage") == "⚙️ Usage footer: full."  # the next mode
            reply = await say(c, "and now the cost")
            m = await last_call(gw)
            cost = m.usage.input * 3.0 / 1e6 + m.usage.output * 15.0 / 1e6
            assert reply.endswith(f"\n{footer(m)} · est {format_usd(cost)}"), reply
            stored = (await calls_of(gw, "agent:main:u"))[-1]
            assert "Usage:" not in str(stored.content)  # the footer is not in the transcript
            assert await say(c, "/usage") == "⚙️ Usage footer: off."
            assert "Usage:" not in await say(c, "quiet again")
            assert await say(c, "/usage sometimes") == "⚙️ Usage: /usage off|tokens|full|reset|cost"
            described = await c.call("sessions.describe", {"key": "agent:main:u"})
            assert described["session"]["responseUsage"] == "off"
            await c.call("sessions.patch", {"key": "agent:main:u", "responseUsage": "on"})
            described = await c.call("sessions.describe", {"key": "agent:main:u"})
            assert described["session"]["responseUsage"] == "tokens"
            assert await say(c, "/usage reset") == "⚙️ Usage footer: reset to default."

            calls = await calls_of(gw, "agent:main:u")
            session = by_hand(calls)
            text = await say(c, "/usage cost")
            assert text.splitlines() == [
                "💸 Usage cost",
                f"Session {format_usd(session['totalCost'])} · "
                f"{format_token_count(session['totalTokens'])} tokens",
                f"Today {format_usd(session['totalCost'])}",
                f"Last 30d {format_usd(session['totalCost'])}",
            ]
            await c.call("sessions.patch", {"key": "agent:main:o", "model": "local/other"})
            await say(c, "on the unpriced model", session="agent:main:o")
            text = await say(c, "/usage cost")
            assert text.splitlines()[2].endswith("(partial)")  # today has an unpriced call


async def test_the_configured_default_footer_and_an_explicit_off(tmp_path: Path) -> None:
    storage = {**NO_AUTH, "messages": {"responseUsage": {"default": "tokens"}}}
    with trio.fail_after(40):
        async with (
            usage_gateway(tmp_path, storage) as (gw, _),
            openclaw_client(gw, TUI_CONNECT) as c,
        ):
            reply = await say(c, "hello")
            assert reply.endswith("\n" + footer(await last_call(gw))), reply
            assert await say(c, "/usage off") == "⚙️ Usage footer: off."
            assert "Usage:" not in await say(c, "and again")
            assert await say(c, "/usage") == "⚙️ Usage footer: tokens."  # from off, the next
            assert await say(c, "/usage full") == "⚙️ Usage footer: full."
            reply = await say(c, "/new")  # a fresh session keeps the choice
            assert f"\n{footer(await last_call(gw))} · est $" in reply, reply
            described = await c.call("sessions.describe", {"key": "agent:main:u"})
            assert described["session"]["responseUsage"] == "full"


async def session_id(gw: Gateway, key: str) -> str:
    row = await gw.supervisor.store.get_session(key)
    assert row is not None
    return row.sessionId


async def test_a_reset_session_is_one_family_or_two_instances(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with usage_gateway(tmp_path, {}) as (gw, c):
            await run(c, "agent:main:a", "before the reset")
            first = await session_id(gw, "agent:main:a")
            await c.request("sessions.reset", {"key": "agent:main:a"})
            await run(c, "agent:main:a", "after the reset")
            current = await session_id(gw, "agent:main:a")
            assert first != current
            instances = await c.request("sessions.usage", {})
            assert sorted(s["sessionId"] for s in instances["sessions"]) == sorted([first, current])
            assert {s["scope"] for s in instances["sessions"]} == {"instance"}
            assert instances["aggregates"]["sessionCount"] == 2
            families = await c.request("sessions.usage", {"groupBy": "family"})
            (row,) = families["sessions"]
            assert row["scope"] == "family" and row["sessionFamilyKey"] == "agent:main:a"
            assert row["sessionId"] == row["currentSessionId"] == current
            assert sorted(row["includedSessionIds"]) == sorted([first, current])
            assert row["historicalInstanceCount"] == 2
            assert row["usage"]["messageCounts"]["user"] == 2
            assert families["aggregates"]["sessionCount"] == 1
            assert families["totals"] == instances["totals"]
            legacy = await c.request("sessions.usage", {"includeHistorical": True})
            assert [s["scope"] for s in legacy["sessions"]] == ["family"]


async def test_turns_stored_before_the_aggregates_are_backfilled_at_start(
    tmp_path: Path,
) -> None:
    """A store upgraded from a clawlane that kept no usage aggregates: its transcripts are
    there, its aggregates are not. The next start adds them once (in the background), and
    the reports equal the hand computation again."""
    with trio.fail_after(30):
        async with usage_gateway(tmp_path, {}) as (gw, c):
            await run(c, "agent:main:a", "hello there")
            await run(c, "agent:main:a", "and a second question")
            expected = by_hand(await calls_of(gw, "agent:main:a"))
        db = tmp_path / "state" / "clawlane.sqlite"
        with sqlite3.connect(db) as conn:  # what the store of an older clawlane holds
            for table in ("usage_buckets", "usage_tools", "usage_backfill"):
                conn.execute(f"DELETE FROM {table}")
        async with usage_gateway(tmp_path, {}) as (gw, c):
            await gw.supervisor.usage_backfilled.wait()
            usage = await c.request("sessions.usage", {})
            assert_totals(usage["totals"], expected)
            assert usage["sessions"][0]["usage"]["messageCounts"]["total"] == 4
        async with usage_gateway(tmp_path, {}) as (gw, c):  # once: a restart adds nothing
            await gw.supervisor.usage_backfilled.wait()
            assert_totals((await c.request("usage.cost", {}))["totals"], expected)
