"""Usage aggregates, kept as runs end: what `sessions.usage` and `usage.cost` read instead of
every transcript.

Two tables in the gateway's store, on either backend (portable SQL, `?` placeholders):

- `usage_buckets`: one row per session, UTC quarter hour and model (`runtime.usage.Bucket`):
  tokens and cost by kind, calls, missing costs, messages by role, tool calls and results,
  errors, latency (count, sum, least, greatest), first and last message time; with the
  session's key and agent. A run's end adds its buckets (`usage_write`) in the same
  transaction as its transcript entries (`WriteGroup.calls`), so the aggregates hold exactly
  what the transcripts hold.
- `usage_tools`: the tool calls of each session and quarter hour, by tool (a report hangs
  them on one of that quarter's buckets).

A report reads the buckets of its range (`UsageStore.buckets`: one indexed range scan) and
adds them up (`runtime.usage`). Usage stays when a session is deleted (it was spent).

Every read is a checkpoint and raises `StoreError` when the database fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

from runtime.llm import Message
from runtime.model import Config
from runtime.usage import ADDED, Bucket, PriceTable, StoredBucket, rollup_messages

from ._ops import SqlConnection

_T = TypeVar("_T")


class _Reader(Protocol):
    """What `UsageStore` needs of the `Store`: its readers."""

    async def read(self, fn: Callable[[SqlConnection], _T]) -> _T: ...


__all__ = ["SCHEMA", "UsageStore", "usage_write"]

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
_COLUMNS: Final = (*ADDED, "latency_min", "latency_max", "first_ts", "last_ts")

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


def _values(b: Bucket) -> list[object]:
    return [getattr(b, c) for c in _COLUMNS]


class _Session(Protocol):
    agent_id: str

    @property
    def key(self) -> str: ...


def usage_write(
    session: _Session, session_id: str, messages: Sequence[Message], config: Config
) -> tuple[Callable[[SqlConnection], object]]:
    """The statements that add a run's `messages` (priced by `config`) to the aggregates of
    `session` (its agent and key), for `WriteGroup.calls`: run in the writer's transaction."""
    rollup = rollup_messages(messages, PriceTable.for_config(config))
    agent_id, session_key = session.agent_id, session.key
    bucket_rows = [
        (session_id, b.bucket, b.provider, b.model, agent_id, session_key, *_values(b))
        for b in rollup.buckets.values()
    ]
    tool_rows = [
        (session_id, q, name, agent_id, session_key, n) for (q, name), n in rollup.tools.items()
    ]

    def write(conn: SqlConnection) -> None:
        for row in bucket_rows:
            conn.execute(_UPSERT_BUCKET, row)
        for tool_row in tool_rows:
            conn.execute(_UPSERT_TOOL, tool_row)

    return (write,)


def _bucket(row: Any) -> StoredBucket:
    session_id, agent_id, key, quarter, provider, model, *values = row
    b = Bucket(int(quarter), str(provider), str(model))
    for name, value in zip(_COLUMNS, values, strict=True):
        if value is not None:
            setattr(b, name, float(value) if name in _FLOATS or "latency" in name else int(value))
    return StoredBucket(str(session_id), str(agent_id), str(key), b)


class UsageStore:
    """The usage aggregates in the gateway's `Store` (its readers)."""

    def __init__(self, store: _Reader) -> None:
        self._store = store

    async def buckets(
        self,
        *,
        start_ms: int,
        end_ms: int,
        agent_id: str | None = None,
        session_key: str | None = None,
        with_tools: bool = True,
    ) -> list[StoredBucket]:
        """The buckets from `start_ms` to `end_ms` (of one agent, one session), each with
        its tools' calls (`with_tools`)."""
        clauses = ["bucket >= ?", "bucket <= ?"]
        args: list[object] = [start_ms - start_ms % 900_000, end_ms]
        if agent_id is not None:
            clauses.append("agent_id = ?")
            args.append(agent_id)
        if session_key is not None:
            clauses.append("session_key = ?")
            args.append(session_key)
        where = " WHERE " + " AND ".join(clauses)

        def read(conn: SqlConnection) -> tuple[list[Any], list[Any]]:
            rows = conn.execute(_SELECT + where, tuple(args)).fetchall()
            tools: list[Any] = []
            if with_tools and rows:
                tools = conn.execute(
                    "SELECT session_id, bucket, tool, calls FROM usage_tools" + where, tuple(args)
                ).fetchall()
            return rows, tools

        rows, tools = await self._store.read(read)
        found = [_bucket(r) for r in rows]
        if tools:
            owner = {(sb.session_id, sb.bucket.bucket): sb for sb in found}
            for session_id, quarter, tool, calls in tools:
                sb = owner.get((str(session_id), int(quarter)))
                if sb is not None:
                    sb.tools[str(tool)] = sb.tools.get(str(tool), 0) + int(calls)
        return found
