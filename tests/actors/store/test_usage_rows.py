"""A run's usage rows as the run's end makes them (`usage_write`, from `rollup_rows`) are
those the backfill makes from `Bucket`s (`bucket_rows` of `rollup_messages`), value for
value and type for type (an int stays an int, a float a float), and a write batch merges
them as the upsert adds."""

from __future__ import annotations

import random

from actors.store import usage_write
from actors.store._usage import UsageBatch, bucket_rows
from runtime.llm import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from runtime.llm._types import ToolCallContent, UsageCost
from runtime.model import parse_config
from runtime.usage import PriceTable, rollup_messages

CONFIG = parse_config(
    {
        "models": {
            "providers": {
                "local": {
                    "api": "local",
                    "models": [{"id": "echo", "cost": {"input": 1, "output": 2}}, {"id": "free"}],
                }
            }
        }
    }
)
T0 = 1_767_225_600_000


class _Session:
    agent_id = "main"
    key = "agent:main:u"


def transcript(rng: random.Random) -> list[Message]:
    out: list[Message] = []
    t = T0 + rng.randrange(0, 3 * 900_000)
    for _ in range(rng.randrange(0, 8)):
        t += rng.choice([0, 1, 60_000, 899_999, 13 * 3_600_000, -2_000])
        r = rng.random()
        if r < 0.3:
            out.append(UserMessage(content="hi", timestamp=t))
        elif r < 0.75:
            provider, model = rng.choice(
                [("local", "echo"), ("local", "free"), ("", ""), ("x", "y")]
            )
            content: list[TextContent | ToolCallContent] = [TextContent("ok")]
            content += [
                ToolCallContent(id="t", name=rng.choice(["exec", "read"]), arguments={})
            ] * (rng.choice([0, 1, 2]))
            cost = UsageCost(input=0.25, total=rng.choice([0.0, 1.5])) if r < 0.4 else UsageCost()
            usage = Usage(input=rng.randrange(3000), output=rng.randrange(500), cost=cost)
            stop = rng.choice(["stop", "error", "aborted", "toolUse"])
            out.append(
                AssistantMessage(
                    content=content,  # type: ignore[arg-type]
                    timestamp=t,
                    provider=provider,
                    model=model,
                    usage=usage,
                    stopReason=stop,  # type: ignore[arg-type]
                )
            )
        else:
            result = ToolResultMessage("t", "exec", [TextContent("x")], rng.random() < 0.3, t)
            out.append(result)
    return out


def typed(rows: object) -> list[tuple[tuple[type, object], ...]]:
    return [tuple((type(v), v) for v in row) for row in rows]  # type: ignore[attr-defined]


def test_a_runs_rows_are_the_backfills_rows() -> None:
    rng = random.Random(7)
    prices = PriceTable.of(CONFIG)
    batch, merged = UsageBatch(), UsageBatch()
    for _ in range(500):
        messages = transcript(rng)
        written = usage_write(_Session(), "sid", messages, CONFIG)
        expected = bucket_rows("sid", "main", "agent:main:u", rollup_messages(messages, prices))
        if expected is None:
            assert written is None
            continue
        assert written is not None
        assert typed(written.buckets) == typed(expected.buckets)
        assert typed(written.tools) == typed(expected.tools)
        batch.add(written)
        merged.add(expected)
    assert typed(batch.buckets.values()) == typed(merged.buckets.values())
    assert typed(batch.tools.values()) == typed(merged.tools.values())
