"""A run's messages as usage buckets: what the store adds up as runs end.

A bucket is one session's activity in one UTC quarter hour with one model (`provider`,
`model`; both empty for the user's lines): tokens and cost by kind, calls, messages by role,
tool calls and results, errors, latency (count, sum, min, max) and the first and last
message time. Every time zone's day and every range's edge falls on a quarter hour, so
any day-range report is a sum of whole buckets.

Counted as OpenClaw counts a transcript: a user line is a user message; an assistant message
is one, its tool calls add to `toolCalls` (and its tools' counts), a stop reason `error` or
`aborted` is an error; a tool result adds to `toolResults` (and to errors when it failed).
An assistant message's usage is one call (its tokens; its cost, or a missing cost); its
latency is the time since the run's last user line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, Final

import attrs

from ..llm import AssistantMessage, Message, ToolResultMessage, UserMessage
from ..llm._types import ToolCallContent
from ._pricing import PriceTable, call_cost, token_total

__all__ = [
    "FIELDS",
    "MAX_LATENCY_MS",
    "QUARTER_MS",
    "TOTAL_COST",
    "Bucket",
    "BucketRow",
    "Rollup",
    "merge",
    "quarter_of",
    "rollup_messages",
    "rollup_rows",
    "total",
]

QUARTER_MS: Final = 15 * 60_000
MAX_LATENCY_MS: Final = 12 * 3600_000
"""A latency longer than this (a reply hours after its question) is not a latency."""
_ERROR_STOPS: Final = frozenset({"error", "aborted", "timeout"})

ADDED: Final = (
    "calls",
    "input",
    "output",
    "cache_read",
    "cache_write",
    "total_tokens",
    "total_cost",
    "input_cost",
    "output_cost",
    "cache_read_cost",
    "cache_write_cost",
    "missing_cost",
    "messages",
    "user_messages",
    "assistant_messages",
    "tool_calls",
    "tool_results",
    "errors",
    "latency_count",
    "latency_sum",
)
"""The fields two buckets add up."""


def quarter_of(ts_ms: int) -> int:
    """The start of the UTC quarter hour holding `ts_ms`."""
    return ts_ms - ts_ms % QUARTER_MS


@attrs.define(slots=True)
class Bucket:
    """One quarter hour of one session with one model (see the module docstring)."""

    bucket: int
    provider: str = ""
    model: str = ""
    calls: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    total_cost: float = 0.0
    input_cost: float = 0.0
    output_cost: float = 0.0
    cache_read_cost: float = 0.0
    cache_write_cost: float = 0.0
    missing_cost: int = 0
    messages: int = 0
    user_messages: int = 0
    assistant_messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    errors: int = 0
    latency_count: int = 0
    latency_sum: float = 0.0
    latency_min: float | None = None
    latency_max: float = 0.0
    first_ts: int | None = None
    last_ts: int | None = None

    def seen(self, ts: int) -> None:
        self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)


@attrs.define
class Rollup:
    """A run's buckets by `(quarter, provider, model)`, and its tools' calls by
    `(quarter, tool)`."""

    buckets: dict[tuple[int, str, str], Bucket] = attrs.field(factory=dict)
    tools: dict[tuple[int, str], int] = attrs.field(factory=dict)

    def __bool__(self) -> bool:
        return bool(self.buckets)


BucketRow = list[Any]
"""A bucket as a list of `Bucket`'s values in its fields' order (`Bucket(*row)` is the
bucket): what a run's end adds up, without an object a bucket."""
FIELDS: Final = tuple(attrs.fields_dict(Bucket))
"""`Bucket`'s fields in order: a `BucketRow`'s."""
_AT: Final = {name: i for i, name in enumerate(FIELDS)}
_EMPTY: Final = [getattr(Bucket(0), name) for name in FIELDS[3:]]
_CALLS: Final = _AT["calls"]
_INPUT: Final = _AT["input"]
_OUTPUT: Final = _AT["output"]
_CACHE_READ: Final = _AT["cache_read"]
_CACHE_WRITE: Final = _AT["cache_write"]
_TOTAL_TOKENS: Final = _AT["total_tokens"]
TOTAL_COST: Final = _AT["total_cost"]
_INPUT_COST: Final = _AT["input_cost"]
_OUTPUT_COST: Final = _AT["output_cost"]
_CACHE_READ_COST: Final = _AT["cache_read_cost"]
_CACHE_WRITE_COST: Final = _AT["cache_write_cost"]
_MISSING_COST: Final = _AT["missing_cost"]
_MESSAGES: Final = _AT["messages"]
_USER_MESSAGES: Final = _AT["user_messages"]
_ASSISTANT_MESSAGES: Final = _AT["assistant_messages"]
_TOOL_CALLS: Final = _AT["tool_calls"]
_TOOL_RESULTS: Final = _AT["tool_results"]
_ERRORS: Final = _AT["errors"]
_LATENCY_COUNT: Final = _AT["latency_count"]
_LATENCY_SUM: Final = _AT["latency_sum"]
_LATENCY_MIN: Final = _AT["latency_min"]
_LATENCY_MAX: Final = _AT["latency_max"]
_FIRST_TS: Final = _AT["first_ts"]
_LAST_TS: Final = _AT["last_ts"]


def _row(
    rows: dict[tuple[int, str, str], BucketRow], ts: int, provider: str, model: str
) -> BucketRow:
    """The row of `ts`'s quarter with the model, made when missing; `ts` seen in it (as
    `Bucket.seen`)."""
    key = (ts - ts % QUARTER_MS, provider, model)
    row = rows.get(key)
    if row is None:
        row = rows[key] = [key[0], provider, model, *_EMPTY]
        row[_FIRST_TS] = row[_LAST_TS] = ts
    else:
        if ts < row[_FIRST_TS]:
            row[_FIRST_TS] = ts
        if ts > row[_LAST_TS]:
            row[_LAST_TS] = ts
    return row


def _assistant(
    rows: dict[tuple[int, str, str], BucketRow],
    tools: dict[tuple[int, str], int],
    msg: AssistantMessage,
    prices: PriceTable,
    asked: int | None,
) -> None:
    row = _row(rows, msg.timestamp, msg.provider, msg.model)
    row[_MESSAGES] += 1
    row[_ASSISTANT_MESSAGES] += 1
    for c in msg.content:
        if isinstance(c, ToolCallContent):
            row[_TOOL_CALLS] += 1
            key = (row[0], c.name)
            tools[key] = tools.get(key, 0) + 1
    if msg.stopReason in _ERROR_STOPS:
        row[_ERRORS] += 1
    if asked is not None:
        latency = max(0, msg.timestamp - asked)
        if latency <= MAX_LATENCY_MS:
            row[_LATENCY_COUNT] += 1
            row[_LATENCY_SUM] += latency
            least = row[_LATENCY_MIN]
            row[_LATENCY_MIN] = latency if least is None else min(least, latency)
            row[_LATENCY_MAX] = max(row[_LATENCY_MAX], latency)
    if not (msg.provider or msg.model):  # no model call (an aborted run's partial text)
        return
    usage = msg.usage
    row[_CALLS] += 1
    row[_INPUT] += usage.input
    row[_OUTPUT] += usage.output
    row[_CACHE_READ] += usage.cacheRead
    row[_CACHE_WRITE] += usage.cacheWrite
    row[_TOTAL_TOKENS] += token_total(usage)
    cost = call_cost(usage, prices.get(msg.provider, msg.model))
    if cost is None:
        row[_MISSING_COST] += 1
    else:
        row[TOTAL_COST] += cost.total
        row[_INPUT_COST] += cost.input
        row[_OUTPUT_COST] += cost.output
        row[_CACHE_READ_COST] += cost.cacheRead
        row[_CACHE_WRITE_COST] += cost.cacheWrite


def rollup_rows(
    messages: Iterable[Message], prices: PriceTable
) -> tuple[dict[tuple[int, str, str], BucketRow], dict[tuple[int, str], int]]:
    """The buckets of a run's `messages` (in transcript order), priced with `prices`, as
    rows by `(quarter, provider, model)`, and its tools' calls by `(quarter, tool)`: what
    the store adds as the run ends (`rollup_messages` makes them buckets)."""
    rows: dict[tuple[int, str, str], BucketRow] = {}
    tools: dict[tuple[int, str], int] = {}
    asked: int | None = None
    for msg in messages:
        if isinstance(msg, UserMessage):
            row = _row(rows, msg.timestamp, "", "")
            row[_MESSAGES] += 1
            row[_USER_MESSAGES] += 1
            asked = msg.timestamp
        elif isinstance(msg, AssistantMessage):
            _assistant(rows, tools, msg, prices, asked)
        elif isinstance(msg, ToolResultMessage):
            row = _row(rows, msg.timestamp, "", "")
            row[_TOOL_RESULTS] += 1
            if msg.isError:
                row[_ERRORS] += 1
    return rows, tools


def rollup_messages(messages: Iterable[Message], prices: PriceTable) -> Rollup:
    """The buckets of a run's `messages` (in transcript order), priced with `prices`."""
    rows, tools = rollup_rows(messages, prices)
    return Rollup({key: Bucket(*row) for key, row in rows.items()}, tools)


def merge(target: Bucket, source: Bucket) -> None:
    """Add `source` into `target` (same session, quarter and model)."""
    for name in ADDED:
        setattr(target, name, getattr(target, name) + getattr(source, name))
    if source.latency_min is not None:
        target.latency_min = (
            source.latency_min
            if target.latency_min is None
            else min(target.latency_min, source.latency_min)
        )
    target.latency_max = max(target.latency_max, source.latency_max)
    for ts in (source.first_ts, source.last_ts):
        if ts is not None:
            target.seen(ts)


def total(buckets: Sequence[Bucket], bucket: int = 0) -> Bucket:
    """The sum of `buckets` (any sessions, quarters and models) as one bucket, not to be
    changed (one bucket is its own sum)."""
    if len(buckets) == 1:
        return buckets[0]
    out = Bucket(bucket)
    if not buckets:
        return out
    for name in ADDED:
        setattr(out, name, sum(map(attrgetter(name), buckets)))
    least = [b.latency_min for b in buckets if b.latency_min is not None]
    out.latency_min = min(least) if least else None
    out.latency_max = max(map(attrgetter("latency_max"), buckets))
    firsts = [b.first_ts for b in buckets if b.first_ts is not None]
    lasts = [b.last_ts for b in buckets if b.last_ts is not None]
    out.first_ts = min(firsts) if firsts else None
    out.last_ts = max(lasts) if lasts else None
    return out
