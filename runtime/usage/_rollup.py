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
from typing import Final

import attrs

from ..llm import AssistantMessage, Message, ToolResultMessage, UserMessage
from ..llm._types import ToolCallContent
from ._pricing import PriceTable, call_cost, token_total

__all__ = [
    "MAX_LATENCY_MS",
    "QUARTER_MS",
    "Bucket",
    "Rollup",
    "merge",
    "quarter_of",
    "rollup_messages",
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

    def latency(self, ms: float) -> None:
        self.latency_count += 1
        self.latency_sum += ms
        self.latency_min = ms if self.latency_min is None else min(self.latency_min, ms)
        self.latency_max = max(self.latency_max, ms)


@attrs.define
class Rollup:
    """A run's buckets by `(quarter, provider, model)`, and its tools' calls by
    `(quarter, tool)`."""

    buckets: dict[tuple[int, str, str], Bucket] = attrs.field(factory=dict)
    tools: dict[tuple[int, str], int] = attrs.field(factory=dict)

    def bucket(self, ts: int, provider: str = "", model: str = "") -> Bucket:
        key = (quarter_of(ts), provider, model)
        found = self.buckets.get(key)
        if found is None:
            found = self.buckets[key] = Bucket(key[0], provider, model)
        found.seen(ts)
        return found

    def __bool__(self) -> bool:
        return bool(self.buckets)


def _assistant(
    rollup: Rollup, msg: AssistantMessage, prices: PriceTable, asked: int | None
) -> None:
    b = rollup.bucket(msg.timestamp, msg.provider, msg.model)
    b.messages += 1
    b.assistant_messages += 1
    names = [c.name for c in msg.content if isinstance(c, ToolCallContent)]
    b.tool_calls += len(names)
    for name in names:
        key = (b.bucket, name)
        rollup.tools[key] = rollup.tools.get(key, 0) + 1
    if msg.stopReason in _ERROR_STOPS:
        b.errors += 1
    if asked is not None:
        latency = max(0, msg.timestamp - asked)
        if latency <= MAX_LATENCY_MS:
            b.latency(latency)
    if not (msg.provider or msg.model):  # no model call (an aborted run's partial text)
        return
    usage = msg.usage
    b.calls += 1
    b.input += usage.input
    b.output += usage.output
    b.cache_read += usage.cacheRead
    b.cache_write += usage.cacheWrite
    b.total_tokens += token_total(usage)
    cost = call_cost(usage, prices.get(msg.provider, msg.model))
    if cost is None:
        b.missing_cost += 1
    else:
        b.total_cost += cost.total
        b.input_cost += cost.input
        b.output_cost += cost.output
        b.cache_read_cost += cost.cacheRead
        b.cache_write_cost += cost.cacheWrite


def rollup_messages(messages: Iterable[Message], prices: PriceTable) -> Rollup:
    """The buckets of a run's `messages` (in transcript order), priced with `prices`."""
    rollup = Rollup()
    asked: int | None = None
    for msg in messages:
        if isinstance(msg, UserMessage):
            b = rollup.bucket(msg.timestamp)
            b.messages += 1
            b.user_messages += 1
            asked = msg.timestamp
        elif isinstance(msg, AssistantMessage):
            _assistant(rollup, msg, prices, asked)
        elif isinstance(msg, ToolResultMessage):
            b = rollup.bucket(msg.timestamp)
            b.tool_results += 1
            if msg.isError:
                b.errors += 1
    return rollup


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
