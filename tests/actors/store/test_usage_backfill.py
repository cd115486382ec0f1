"""The usage of turns stored before the aggregates were kept is added once, on either
backend: older messages of a session that has newer aggregated ones are added without
counting the newer again, a second pass adds nothing, a session created since the
aggregates began is not read, and a session another pass did is skipped."""

from __future__ import annotations

import time

import trio

from actors import UsageScope, UsageStore, open_store
from actors.store import WriteGroup, backfill_usage, usage_write
from runtime.sessions import TranscriptBuilder, new_session_row
from tests.actors._databases import Db, db, pg_url
from tests.actors.store.test_usage import CONFIG, T0, _Session, turn

__all__ = ["db", "pg_url"]  # the fixtures, used by name


async def test_older_turns_are_added_once(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            # A session of before the aggregates: two turns in its transcript, no usage.
            old_row = new_session_row("agent:main:u", now_ms=T0, session_id="sid-u")
            builder = TranscriptBuilder()
            old = [e for ts in (T0, T0 + 60_000) for e in map(builder.add_message, turn(ts, 100))]
            await store.commit_durable(WriteGroup(row=old_row, session_id="sid-u", entries=old))
            # ... then a turn since, stored with its usage as runs are now.
            new_turn = turn(T0 + 3_600_000, 5)
            await store.commit_durable(
                WriteGroup(
                    session_id="sid-u",
                    entries=[builder.add_message(m) for m in new_turn],
                    usage=usage_write(_Session(), "sid-u", new_turn, CONFIG),
                )
            )
            # A session created after the aggregates began: never read, only marked.
            fresh = new_session_row("agent:main:f", now_ms=int(time.time() * 1000) + 60_000)
            await store.commit_durable(WriteGroup(row=fresh))

            assert await backfill_usage(store, lambda: CONFIG) == 1
            usage = UsageStore(store)
            everything = UsageScope(0, T0 * 2)
            echo = [sb.bucket for sb in await usage.by_session(everything) if sb.bucket.model]
            assert [(b.calls, b.input, b.output) for b in echo] == [(3, 205, 205)]
            assert echo[0].first_ts == T0 + 1_000 and echo[0].last_ts == T0 + 3_601_000
            marked = await trio.to_thread.run_sync(
                db.query, "SELECT session_id FROM usage_backfill ORDER BY session_id"
            )
            assert [m[0] for m in marked] == ["", fresh.sessionId, "sid-u"]
            # again: nothing to do, nothing counted twice
            assert await backfill_usage(store, lambda: CONFIG) == 0
            again = [sb.bucket for sb in await usage.by_session(everything) if sb.bucket.model]
            assert [(b.calls, b.input) for b in again] == [(3, 205)]


async def test_a_session_another_pass_did_is_skipped(db: Db) -> None:
    """Two passes racing (two nodes of a cluster): the second finds the mark under the
    row's lock and adds nothing."""
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            row = new_session_row("agent:main:u", now_ms=T0, session_id="sid-u")
            builder = TranscriptBuilder()
            entries = [builder.add_message(m) for m in turn(T0, 100)]
            await store.commit_durable(WriteGroup(row=row, session_id="sid-u", entries=entries))
            async with trio.open_nursery() as nursery:
                for _ in range(2):
                    nursery.start_soon(backfill_usage, store, lambda: CONFIG)
            found = await UsageStore(store).by_session(UsageScope(0, T0 * 2))
            assert [(sb.bucket.calls, sb.bucket.input) for sb in found if sb.bucket.model] == [
                (1, 100)
            ]
