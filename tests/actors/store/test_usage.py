"""The usage aggregates on both backends: a group's `calls` add a run's buckets in the
group's own transaction (refused with it when its fence is), two runs in one quarter hour
add up, and a range read returns the buckets with their tools."""

from __future__ import annotations

import pytest
import trio

from actors import FencedOut, UsageScope, UsageStore, open_store
from actors.store import Fence, WriteGroup, usage_write
from runtime.llm import AssistantMessage, TextContent, Usage, UserMessage
from runtime.llm._types import ToolCallContent
from runtime.model import parse_config
from runtime.sessions import new_session_row
from tests.actors._databases import Db, db, pg_url

__all__ = ["db", "pg_url"]  # the fixtures, used by name

CONFIG = parse_config(
    {
        "models": {
            "providers": {
                "local": {
                    "api": "local",
                    "models": [{"id": "echo", "cost": {"input": 1, "output": 2}}],
                }
            }
        }
    }
)
T0 = 1_767_225_600_000  # 2026-01-01T00:00Z, a quarter hour's start


class _Session:
    agent_id = "main"
    key = "agent:main:u"


def turn(ts: int, tokens: int, *, tool: bool = False) -> list[UserMessage | AssistantMessage]:
    content: list[TextContent | ToolCallContent] = [TextContent("ok")]
    if tool:
        content.append(ToolCallContent(id="t", name="exec", arguments={}))
    return [
        UserMessage(content="hi", timestamp=ts),
        AssistantMessage(
            content=content,  # type: ignore[arg-type]
            timestamp=ts + 1_000,
            provider="local",
            model="echo",
            usage=Usage(input=tokens, output=tokens),
        ),
    ]


async def test_runs_add_up_in_their_transaction_and_read_back_by_range(db: Db) -> None:
    with trio.fail_after(20):
        async with open_store(backend=db.backend()) as store:
            row = new_session_row("agent:main:u", now_ms=T0, session_id="sid-u")
            for ts, tokens, tool in ((T0, 1000, True), (T0 + 60_000, 3000, False)):
                await store.commit_durable(
                    WriteGroup(
                        row=row,
                        usage=usage_write(_Session(), "sid-u", turn(ts, tokens, tool=tool), CONFIG),
                    )
                )
            await store.commit_durable(
                WriteGroup(usage=usage_write(_Session(), "sid-u", turn(T0 + 3_600_000, 10), CONFIG))
            )
            usage = UsageStore(store)
            found = await usage.buckets(UsageScope(T0, T0 + 899_999))
            by_model = {sb.bucket.model: sb for sb in found}
            assert set(by_model) == {"", "echo"}
            echo = by_model["echo"].bucket
            assert (echo.calls, echo.input, echo.output) == (2, 4000, 4000)
            assert echo.total_cost == 4000 * 1 / 1e6 + 4000 * 2 / 1e6
            assert (echo.latency_count, echo.latency_min, echo.latency_max) == (2, 1000.0, 1000.0)
            assert (echo.first_ts, echo.last_ts) == (T0 + 1_000, T0 + 61_000)
            assert by_model[""].bucket.user_messages == 2
            tools = {name: n for sb in found for name, n in sb.tools.items()}
            assert tools == {"exec": 1}
            everything = UsageScope(T0, T0 + 7_200_000)
            assert len(await usage.buckets(everything)) == 4
            assert await usage.buckets(UsageScope(T0, T0 + 7_200_000, agent_id="ops")) == []
            one = await usage.buckets(UsageScope(0, T0 * 2, session_key="agent:main:u"))
            assert sum(sb.bucket.calls for sb in one) == 3
            assert await usage.buckets(UsageScope(0, T0 * 2, session_ids=["other"])) == []
            # the database's sums: by quarter hour and model, by session and model, by tool
            quarters = await usage.by_slot(everything)
            assert sorted((q.bucket - T0, q.model, q.calls) for q in quarters) == [
                (0, "", 0),
                (0, "echo", 2),
                (3_600_000, "", 0),
                (3_600_000, "echo", 1),
            ]
            hours = sorted(
                (h.bucket - T0, h.model, h.calls)
                for h in await usage.by_slot(everything, 7_200_000)
            )
            assert hours == [(0, "", 0), (0, "echo", 3)]
            sessions = await usage.by_session(everything)
            echo_all = next(sb.bucket for sb in sessions if sb.bucket.model == "echo")
            assert (echo_all.calls, echo_all.input, echo_all.latency_max) == (3, 4010, 1000.0)
            assert (echo_all.first_ts, echo_all.last_ts) == (T0 + 1_000, T0 + 3_601_000)
            assert isinstance(echo_all.input, int) and isinstance(echo_all.total_cost, float)
            assert await usage.tools(everything) == {"exec": 1}
            active = await usage.activity(everything, 3_600_000)
            assert sorted(active) == [("sid-u", T0), ("sid-u", T0 + 3_600_000)]


async def test_a_refused_group_adds_no_usage(db: Db) -> None:
    with trio.fail_after(20):
        async with open_store(backend=db.backend()) as store:
            await store.advance_fence(Fence("agent:main:u", 5))
            stale = WriteGroup(
                usage=usage_write(_Session(), "sid-u", turn(T0, 100), CONFIG),
                row=new_session_row("agent:main:u", now_ms=T0, session_id="sid-u"),
                fence=Fence("agent:main:u", 4),
            )
            with pytest.raises(FencedOut):
                await store.commit_durable(stale)
            assert await UsageStore(store).buckets(UsageScope(0, T0 * 2)) == []


async def test_a_batch_merges_its_runs_usage_and_leaves_out_a_refused_group(db: Db) -> None:
    """Groups committed together are merged per bucket and tool before the upsert
    (`UsageBatch`): the sums, least and greatest are those of the runs one by one, and a
    group refused by its fence in the middle of the batch adds nothing."""
    with trio.fail_after(20):
        async with open_store(backend=db.backend()) as store:
            await store.advance_fence(Fence("agent:main:u", 5))
            ok_fence = Fence("agent:main:u", 5)
            turns = [(T0 + 2_000, 100, True), (T0, 300, True), (T0 + 60_000, 50, False)]
            for i, (ts, tokens, tool) in enumerate(turns):
                store.commit_nowait(
                    WriteGroup(
                        usage=usage_write(_Session(), "sid-u", turn(ts, tokens, tool=tool), CONFIG),
                        fence=ok_fence,
                    )
                )
                if i == 0:  # a stale group between them: refused whole, its usage too
                    stale = WriteGroup(
                        usage=usage_write(_Session(), "sid-u", turn(T0, 7_000), CONFIG),
                        row=new_session_row("agent:main:u", now_ms=T0, session_id="sid-u"),
                        fence=Fence("agent:main:u", 4),
                    )
                    store.commit_nowait(stale)
            await store.flush()
            found = await UsageStore(store).buckets(UsageScope(T0, T0 + 899_999))
            echo = next(sb for sb in found if sb.bucket.model == "echo")
            b = echo.bucket
            assert (b.calls, b.input, b.output) == (3, 450, 450)
            assert (b.first_ts, b.last_ts) == (T0 + 1_000, T0 + 61_000)
            assert (b.latency_count, b.latency_min, b.latency_max) == (3, 1000.0, 1000.0)
            assert echo.tools == {"exec": 2}
