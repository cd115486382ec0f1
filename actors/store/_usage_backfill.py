"""The usage of transcripts written before the usage aggregates were kept: added once.

A store that held sessions before `usage_buckets` existed (an upgrade from a clawlane without
them) would show those sessions' past turns in no usage report. `backfill_usage` adds them,
session by session, in the background after startup:

- Which sessions: those not marked in `usage_backfill` (its own table, made by its first
  pass, as the cron store makes its tables) and created before the first pass on this
  store (the table's row with the empty session id holds when). A session created later has
  nothing to add; it is marked without its transcript being read.
- What is added: the session's messages older than its oldest aggregated message (the least
  `first_ts` of its buckets; all of them when it has none): those the aggregates never saw.
  Priced with the config's price table as runs are.
- Once: the rows and the session's mark commit in one transaction, after the session's row
  is locked (`UPDATE ... SET updated_at = updated_at`: a row lock on PostgreSQL, where every
  node of a cluster runs the backfill) and its mark looked for again. A crash between
  sessions redoes none; a session backfilled by another node is skipped.

A transcript that cannot be read is logged and marked done (its usage stays missing, as it
was); a store error ends the pass, which the next start takes up again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

import msgspec

from runtime.llm import Message
from runtime.model import Config
from runtime.sessions import conversation, decode_session_rows
from runtime.usage import PriceTable, rollup_messages

from ._ops import SqlConnection
from ._usage import UsageBatch, bucket_rows

if TYPE_CHECKING:
    from ._store import Store

__all__ = ["backfill_usage"]

log = logging.getLogger("clawlane.store")

_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS usage_backfill(
    session_id TEXT PRIMARY KEY,
    done_ms BIGINT NOT NULL
)""",
)
"""Sessions whose older turns are in the aggregates (`done_ms`: when), and, under the empty
session id, when this store began to keep the aggregates."""
_SINCE: Final = "SELECT done_ms FROM usage_backfill WHERE session_id = ''"
_MARK_START: Final = "INSERT INTO usage_backfill(session_id, done_ms) VALUES ('', ?)"
_NOT_MARKED: Final = (
    "SELECT s.key, s.row FROM sessions s WHERE NOT EXISTS "
    "(SELECT 1 FROM usage_backfill b WHERE b.session_id = s.session_id) ORDER BY s.key"
)
_MARK: Final = (
    "INSERT INTO usage_backfill(session_id, done_ms) VALUES (?, ?) ON CONFLICT DO NOTHING"
)
_IS_MARKED: Final = "SELECT 1 FROM usage_backfill WHERE session_id = ?"
_LOCK_ROW: Final = "UPDATE sessions SET updated_at = updated_at WHERE key = ?"
_OLDEST: Final = "SELECT MIN(first_ts) FROM usage_buckets WHERE session_id = ?"
_MARK_BATCH: Final = 500


def _create(conn: SqlConnection) -> None:
    """The table, and when the first pass began, unless known."""
    for statement in _SCHEMA:
        conn.execute(statement)
    if conn.execute(_SINCE).fetchone() is None:
        conn.execute(_MARK_START, (int(time.time() * 1000),))


async def backfill_usage(store: Store, config: Callable[[], Config]) -> int:
    """Add the older turns of every session not yet backfilled to the usage aggregates (see
    the module); returns how many sessions had something added. A checkpoint; a store
    failure raises `StoreError` (what was committed stays)."""
    await store.write(_create, what="create the usage backfill table")
    since, todo = await store.read(_pending)
    if not todo:
        return 0
    later: list[str] = []
    added = 0
    for key, row in zip(todo, decode_session_rows([blob for _, blob in todo]), strict=True):
        if since is not None and row.createdAt >= since:
            later.append(row.sessionId)
            continue
        try:
            entries = await store.load_entries(row.sessionId)
        except msgspec.DecodeError as exc:
            log.warning("usage backfill: session %s: unreadable transcript (%s)", key[0], exc)
            later.append(row.sessionId)
            continue
        messages = conversation(entries)
        prices = PriceTable.for_config(config())
        add = _adder(key[0], row.sessionId, row.agentId, messages, prices)
        if await store.write(add, what="backfill usage"):
            added += 1
    for i in range(0, len(later), _MARK_BATCH):
        await store.write(_marker(later[i : i + _MARK_BATCH]), what="backfill usage")
    if added:
        log.info("usage backfill: %d session(s) of older turns added to the usage reports", added)
    return added


def _pending(conn: SqlConnection) -> tuple[int | None, list[tuple[str, bytes]]]:
    found = conn.execute(_SINCE).fetchone()
    rows = conn.execute(_NOT_MARKED).fetchall()
    return (int(found[0]) if found else None), [(str(k), bytes(b)) for k, b in rows]


def _marker(session_ids: Sequence[str]) -> Callable[[SqlConnection], None]:
    now = int(time.time() * 1000)

    def mark(conn: SqlConnection) -> None:
        for sid in session_ids:
            conn.execute(_MARK, (sid, now))

    return mark


def _adder(
    key: str, session_id: str, agent_id: str, messages: Sequence[Message], prices: PriceTable
) -> Callable[[SqlConnection], bool]:
    """The transaction that adds `messages` older than what the aggregates hold of the
    session, and marks it; True when it added something."""

    def add(conn: SqlConnection) -> bool:
        conn.execute(_LOCK_ROW, (key,))
        if conn.execute(_IS_MARKED, (session_id,)).fetchone() is not None:
            return False  # another node did it meanwhile
        oldest = conn.execute(_OLDEST, (session_id,)).fetchone()
        cut = oldest[0] if oldest and oldest[0] is not None else None
        older = [m for m in messages if cut is None or m.timestamp < cut]
        rollup = rollup_messages(older, prices)
        batch = UsageBatch()
        usage = bucket_rows(session_id, agent_id, key, rollup)
        if usage is not None:
            batch.add(usage)
            batch.flush(lambda sql, rows: [conn.execute(sql, tuple(r)) for r in rows])
        conn.execute(_MARK, (session_id, int(time.time() * 1000)))
        return usage is not None

    return add
