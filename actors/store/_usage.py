"""Usage aggregates, kept as runs end: what `sessions.usage` and `usage.cost` read instead of
every transcript.

Two tables in the gateway's store, on either backend (portable SQL, `?` placeholders):

- `usage_buckets`: one row per session, UTC quarter hour and model (`runtime.usage.Bucket`):
  tokens and cost by kind, calls, missing costs, messages by role, tool calls and results,
  errors, latency (count, sum, least, greatest), first and last message time; with the
  session's key and agent. A run's end adds its buckets (`usage_write`) in the same
  transaction as its transcript entries (`WriteGroup.usage`), so the aggregates hold exactly
  what the transcripts hold; a write batch merges its runs' rows first (`UsageBatch`).
- `usage_tools`: the tool calls of each session and quarter hour, by tool (a report hangs
  them on one of that quarter's buckets).

A report reads the buckets of its range (`UsageStore.buckets`: one indexed range scan) and
adds them up (`runtime.usage`). Usage stays when a session is deleted (it was spent).

Every read is a checkpoint and raises `StoreError` when the database fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import add, attrgetter
from typing import Any, Final, Protocol, TypeVar

import attrs

from runtime import telemetry
from runtime.llm import Message
from runtime.model import Config
from runtime.usage import (
    ADDED,
    FIELDS,
    TOTAL_COST,
    Bucket,
    PriceTable,
    Rollup,
    StoredBucket,
    rollup_rows,
)

from ._ops import AddUsage, SqlConnection

_T = TypeVar("_T")


class _Reader(Protocol):
    """What `UsageStore` needs of the `Store`: its readers."""

    async def read(self, fn: Callable[[SqlConnection], _T]) -> _T: ...


__all__ = ["SCHEMA", "UsageBatch", "UsageScope", "UsageStore", "bucket_rows", "usage_write"]

_FLOATS: Final = frozenset(
    {
        "total_cost",
        "input_cost",
        "output_cost",
        "cache_read_cost",
        "cache_write_cost",
        "latency_sum",
    }
)
_COLUMNS: Final = FIELDS[3:]
"""A bucket's values after its key (`ADDED`, then latency_min, latency_max, first_ts and
last_ts), in `Bucket`'s order: a `BucketRow` is `(quarter, provider, model, *_COLUMNS)`."""

SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS usage_buckets(\n"
    "    session_id TEXT NOT NULL,\n"
    "    bucket BIGINT NOT NULL,\n"
    "    provider TEXT NOT NULL,\n"
    "    model TEXT NOT NULL,\n"
    "    agent_id TEXT NOT NULL,\n"
    "    session_key TEXT NOT NULL,\n"
    + "".join(
        f"    {c} {'DOUBLE PRECISION' if c in _FLOATS else 'BIGINT'} NOT NULL DEFAULT 0,\n"
        for c in ADDED
    )
    + "    latency_min DOUBLE PRECISION,\n"
    "    latency_max DOUBLE PRECISION NOT NULL DEFAULT 0,\n"
    "    first_ts BIGINT,\n"
    "    last_ts BIGINT,\n"
    "    PRIMARY KEY(session_id, bucket, provider, model)\n"
    ")",
    "CREATE INDEX IF NOT EXISTS usage_buckets_bucket ON usage_buckets(bucket)",
    "CREATE INDEX IF NOT EXISTS usage_buckets_key ON usage_buckets(session_key, bucket)",
    """CREATE TABLE IF NOT EXISTS usage_tools(
    session_id TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    tool TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    calls BIGINT NOT NULL,
    PRIMARY KEY(session_id, bucket, tool)
)""",
    "CREATE INDEX IF NOT EXISTS usage_tools_bucket ON usage_tools(bucket)",
)
"""The tables (both backends create them when they open the store)."""


def _least(c: str) -> str:
    return (
        f"{c} = CASE WHEN usage_buckets.{c} IS NULL OR excluded.{c} < usage_buckets.{c} "
        f"THEN excluded.{c} ELSE usage_buckets.{c} END"
    )


def _greatest(c: str) -> str:
    return (
        f"{c} = CASE WHEN usage_buckets.{c} IS NULL OR excluded.{c} > usage_buckets.{c} "
        f"THEN excluded.{c} ELSE usage_buckets.{c} END"
    )


_UPSERT_BUCKET: Final = (
    "INSERT INTO usage_buckets(session_id, bucket, provider, model, agent_id, session_key, "
    + ", ".join(_COLUMNS)
    + ") VALUES ("
    + ", ".join("?" * (6 + len(_COLUMNS)))
    + ") ON CONFLICT(session_id, bucket, provider, model) DO UPDATE SET "
    + "agent_id = excluded.agent_id, session_key = excluded.session_key, "
    + ", ".join(f"{c} = usage_buckets.{c} + excluded.{c}" for c in ADDED)
    + ", "
    + ", ".join(
        [_least("latency_min"), _greatest("latency_max"), _least("first_ts"), _greatest("last_ts")]
    )
)
_UPSERT_TOOL: Final = """INSERT INTO usage_tools(session_id, bucket, tool, agent_id, session_key,
calls) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_id, bucket, tool) DO UPDATE SET calls = usage_tools.calls + excluded.calls"""
_SELECT: Final = (
    "SELECT session_id, agent_id, session_key, bucket, provider, model, "
    + ", ".join(_COLUMNS)
    + " FROM usage_buckets"
)


_values: Final[Callable[[Bucket], tuple[object, ...]]] = attrgetter(*_COLUMNS)
"""A bucket's `_COLUMNS`, in order."""


class _Session(Protocol):
    agent_id: str

    @property
    def key(self) -> str: ...


def usage_write(
    session: _Session, session_id: str, messages: Sequence[Message], config: Config
) -> AddUsage | None:
    """The rows that add a run's `messages` (priced by `config`) to the aggregates of
    `session` (its agent and key), for `WriteGroup.usage` (None: nothing to add). The
    run's buckets are rows (`rollup_rows`), not `Bucket`s: this runs at every run's end."""
    rows, tools = rollup_rows(messages, PriceTable.for_config(config))
    if not rows and not tools:
        return None
    agent_id, session_key = session.agent_id, session.key
    if telemetry.STATE.on:  # OpenClaw's openclaw.cost.usd, per provider and model
        for r in rows.values():
            if r[TOTAL_COST]:
                where = {"openclaw.provider": r[1], "openclaw.model": r[2]}
                telemetry.record("cost.usd", r[TOTAL_COST], {**where, "openclaw.agent": agent_id})
    who = (agent_id, session_key)
    buckets = list(rows.values())
    for r in buckets:  # made for this run alone: laid out as `usage_buckets`' columns in place
        r[3:3] = who
        r.insert(0, session_id)
    return AddUsage(
        buckets,
        [(session_id, q, name, agent_id, session_key, n) for (q, name), n in tools.items()],
    )


def bucket_rows(
    session_id: str, agent_id: str, session_key: str, rollup: Rollup
) -> AddUsage | None:
    """`rollup`'s buckets and tool calls as rows of the session (None: nothing to add)."""
    if not rollup.buckets and not rollup.tools:
        return None
    return AddUsage(
        tuple(
            (session_id, b.bucket, b.provider, b.model, agent_id, session_key, *_values(b))
            for b in rollup.buckets.values()
        ),
        tuple(
            (session_id, q, name, agent_id, session_key, n) for (q, name), n in rollup.tools.items()
        ),
    )


_KEY: Final = 4
"""A bucket row's key columns (session, quarter, provider, model), then agent and key."""
_AT: Final = {c: _KEY + 2 + i for i, c in enumerate(_COLUMNS)}
_ADDED: Final = slice(_AT[ADDED[0]], _AT[ADDED[-1]] + 1)
"""Where a bucket row's `ADDED` columns are (one after another, as in `_COLUMNS`)."""
_LATENCY_MIN: Final = _AT["latency_min"]
_LATENCY_MAX: Final = _AT["latency_max"]
_FIRST_TS: Final = _AT["first_ts"]
_LAST_TS: Final = _AT["last_ts"]


def _merged(old: list[Any], new: Sequence[Any]) -> None:
    """`new` (a bucket row of the same key) added into `old`, as `_UPSERT_BUCKET` adds."""
    old[_KEY : _KEY + 2] = new[_KEY : _KEY + 2]  # the session's agent and key: the latest
    old[_ADDED] = map(add, old[_ADDED], new[_ADDED])
    for i, pick in ((_LATENCY_MIN, min), (_FIRST_TS, min), (_LATENCY_MAX, max), (_LAST_TS, max)):
        if new[i] is not None:
            old[i] = new[i] if old[i] is None else pick(old[i], new[i])


class UsageBatch:
    """The usage rows of one write batch, merged by key: the backends' gatherers add each
    committed group's `AddUsage` and upsert what they hold when they flush (one statement
    per bucket and tool the batch touched, whatever the number of runs)."""

    __slots__ = ("buckets", "tools")

    def __init__(self) -> None:
        self.buckets: dict[tuple[Any, ...], list[Any]] = {}
        self.tools: dict[tuple[Any, ...], list[Any]] = {}

    def add(self, op: AddUsage) -> None:
        for row in op.buckets:
            key = (row[0], row[1], row[2], row[3])  # row[:_KEY], a tuple of a list too
            held = self.buckets.get(key)
            if held is None:
                self.buckets[key] = list(row)
            else:
                _merged(held, row)
        for tool in op.tools:
            tool_key = (tool[0], tool[1], tool[2])
            held = self.tools.get(tool_key)
            if held is None:
                self.tools[tool_key] = list(tool)
            else:
                held[3:5] = tool[3:5]
                held[5] += tool[5]

    def flush(self, executemany: Callable[[str, list[list[Any]]], object]) -> None:
        """Upsert what is held (`executemany(sql, rows)` with `?` placeholders), then hold
        nothing."""
        if self.buckets:
            executemany(_UPSERT_BUCKET, list(self.buckets.values()))
            self.buckets.clear()
        if self.tools:
            executemany(_UPSERT_TOOL, list(self.tools.values()))
            self.tools.clear()


def _summed(c: str) -> str:
    if c in ("latency_min", "first_ts"):
        return f"MIN({c})"
    if c in ("latency_max", "last_ts"):
        return f"MAX({c})"
    return f"SUM({c})" if c in _FLOATS else f"CAST(SUM({c}) AS BIGINT)"


_SUMS: Final = ", ".join(_summed(c) for c in _COLUMNS)


def _bucket(quarter: Any, provider: Any, model: Any, values: Sequence[Any]) -> Bucket:
    """A bucket from a row's columns (`_COLUMNS` order: the dataclass's own)."""
    b = Bucket(int(quarter), str(provider), str(model), *values)
    if b.latency_min is not None:
        b.latency_min = float(b.latency_min)
    b.latency_max = float(b.latency_max or 0)
    return b


@attrs.frozen
class UsageScope:
    """Which buckets a read takes: `start_ms`..`end_ms`, of one agent, one session (key),
    some sessions (ids)."""

    start_ms: int
    end_ms: int
    agent_id: str | None = None
    session_key: str | None = None
    session_ids: Sequence[str] | None = None

    def where(self) -> tuple[str, tuple[object, ...]]:
        clauses = ["bucket >= ?", "bucket <= ?"]
        args: list[object] = [self.start_ms - self.start_ms % 900_000, self.end_ms]
        if self.agent_id is not None:
            clauses.append("agent_id = ?")
            args.append(self.agent_id)
        if self.session_key is not None:
            clauses.append("session_key = ?")
            args.append(self.session_key)
        if self.session_ids is not None:
            ids = list(self.session_ids) or [""]
            clauses.append("session_id IN (" + ", ".join("?" * len(ids)) + ")")
            args.extend(ids)
        return " WHERE " + " AND ".join(clauses), tuple(args)


class UsageStore:
    """The usage aggregates in the gateway's `Store` (its readers). Every read is one or
    two statements; the sums are the database's (`GROUP BY`)."""

    def __init__(self, store: _Reader) -> None:
        self._store = store

    async def buckets(self, scope: UsageScope, *, with_tools: bool = True) -> list[StoredBucket]:
        """The buckets in `scope`, each with its tools' calls (`with_tools`): for the
        sessions a report shows in full."""
        where, args = scope.where()

        def read(conn: SqlConnection) -> tuple[list[Any], list[Any]]:
            rows = conn.execute(_SELECT + where, args).fetchall()
            tools: list[Any] = []
            if with_tools and rows:
                sql = "SELECT session_id, bucket, tool, calls FROM usage_tools" + where
                tools = conn.execute(sql, args).fetchall()
            return rows, tools

        rows, tools = await self._store.read(read)
        found = [
            StoredBucket(str(sid), str(agent), str(key), _bucket(q, p, m, values))
            for sid, agent, key, q, p, m, *values in rows
        ]
        if tools:
            owner = {(sb.session_id, sb.bucket.bucket): sb for sb in found}
            for session_id, quarter, tool, calls in tools:
                sb = owner.get((str(session_id), int(quarter)))
                if sb is not None:
                    sb.tools[str(tool)] = sb.tools.get(str(tool), 0) + int(calls)
        return found

    async def by_slot(self, scope: UsageScope, step_ms: int = 900_000) -> list[Bucket]:
        """The scope's buckets added up across sessions by `step_ms` slot (from the epoch:
        a quarter hour, an hour, a UTC day) and model; `bucket` is the slot's start."""
        where, args = scope.where()
        step = int(step_ms)
        sql = (
            f"SELECT bucket / {step}, provider, model, {_SUMS} FROM usage_buckets{where} "
            f"GROUP BY bucket / {step}, provider, model"
        )
        rows = await self._store.read(lambda c: c.execute(sql, args).fetchall())
        return [_bucket(int(q) * step, p, m, values) for q, p, m, *values in rows]

    async def by_session(self, scope: UsageScope) -> list[StoredBucket]:
        """The scope's buckets added up by session and model (`bucket` 0)."""
        where, args = scope.where()
        sql = (
            f"SELECT session_id, agent_id, session_key, provider, model, {_SUMS} "
            f"FROM usage_buckets{where} GROUP BY session_id, agent_id, session_key, provider, model"
        )
        rows = await self._store.read(lambda c: c.execute(sql, args).fetchall())
        return [
            StoredBucket(str(sid), str(agent), str(key), _bucket(0, p, m, values))
            for sid, agent, key, p, m, *values in rows
        ]

    async def tools(self, scope: UsageScope) -> dict[str, int]:
        """The scope's tool calls by tool."""
        where, args = scope.where()
        sql = f"SELECT tool, CAST(SUM(calls) AS BIGINT) FROM usage_tools{where} GROUP BY tool"
        rows = await self._store.read(lambda c: c.execute(sql, args).fetchall())
        return {str(tool): int(n) for tool, n in rows}

    async def activity(self, scope: UsageScope, step_ms: int) -> list[tuple[str, int]]:
        """Each session's active `step_ms` slots (the slot's start) in the scope."""
        where, args = scope.where()
        step = int(step_ms)
        sql = f"SELECT DISTINCT session_id, bucket / {step} FROM usage_buckets{where}"
        rows = await self._store.read(lambda c: c.execute(sql, args).fetchall())
        return [(str(sid), int(slot) * step) for sid, slot in rows]
