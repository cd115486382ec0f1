"""The transcripts' full-text index on both backends: entries appended through the store are
found as soon as they are committed (user and assistant text only, each message once, in
the batch's multi-row inserts too), a deleted transcript leaves the index, and a store
from before the index has its transcripts indexed once as it opens."""

from __future__ import annotations

import trio

from actors import TranscriptSearch, open_store
from actors.store import _pg, _search
from runtime.llm import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from runtime.llm._types import ToolCallContent
from runtime.sessions import MessageEntry, TranscriptBuilder, new_session_row
from tests.actors._databases import Db, db, pg_url

_SEARCH_VERSION = _pg._MIGRATIONS.index(_search.PG_SCHEMA) + 1

__all__ = ["db", "pg_url"]  # the fixtures, used by name

T0 = 1_767_225_600_000


def transcript(words: str) -> list[MessageEntry]:
    builder = TranscriptBuilder()
    user = builder.add_message(UserMessage(content=f"tell me about {words}", timestamp=T0))
    reply = builder.add_message(
        AssistantMessage(
            content=[
                TextContent(f"here is {words}"),
                ToolCallContent(id="t", name="read", arguments={"path": "zebra"}),
            ],
            timestamp=T0 + 1,
        )
    )
    result = builder.add_message(
        ToolResultMessage(
            toolCallId="t",
            toolName="read",
            content=[TextContent("zebra")],
            isError=False,
            timestamp=T0 + 2,
        )
    )
    return [user, reply, result]


async def test_appended_entries_are_found_and_deleted_ones_are_not(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            for name, words in (("a", "apples and pears"), ("b", "pears only")):
                row = new_session_row(f"agent:main:{name}", now_ms=T0, session_id=f"sid-{name}")
                await store.put_session(row)
                store.append_entries_nowait(row.sessionId, transcript(words))
            await store.flush()
            search = TranscriptSearch(store)
            page = await search.search("pears", limit=10, agent_id="main")
            assert sorted((h.session_key, h.role) for h in page.hits) == [
                ("agent:main:a", "assistant"),
                ("agent:main:a", "user"),
                ("agent:main:b", "assistant"),
                ("agent:main:b", "user"),
            ]
            assert not page.truncated
            # Tool calls' arguments and tool results are not indexed.
            assert (await search.search("zebra", limit=10, agent_id="main")).hits == []
            assert (await search.search("pears", limit=10, agent_id="other")).hits == []
            page = await search.search("apples", limit=10, session_keys=["agent:main:b"])
            assert page.hits == []
            await store.delete_session("agent:main:a")
            page = await search.search("pears", limit=10, agent_id="main")
            assert {h.session_key for h in page.hits} == {"agent:main:b"}
            rows = await trio.to_thread.run_sync(
                db.query, "SELECT COUNT(*) FROM search_entries WHERE session_id = 'sid-a'"
            )
            assert rows == [(0,)]


async def test_a_store_from_before_the_index_is_indexed_as_it_opens(db: Db) -> None:
    with trio.fail_after(30):
        async with open_store(backend=db.backend()) as store:
            row = new_session_row("agent:main:old", now_ms=T0, session_id="sid-old")
            await store.put_session(row)
            await store.append_entries(row.sessionId, transcript("ancient history"))
            await store.flush()
        # As it was before the index: no search tables, the migration not applied.
        if db.kind == "sqlite":
            undo = [
                "DROP TABLE search_fts",
                "DROP TABLE search_entries",
                "DELETE FROM meta WHERE key = 'search_indexed'",
            ]
        else:
            undo = [
                "DROP TABLE search_entries",
                "DROP FUNCTION clawlane_search_added, clawlane_search_removed CASCADE",
                "DROP FUNCTION clawlane_search_doc",
                "DROP INDEX sessions_session_id",
                # the search's migration and those after it (made again: IF NOT EXISTS)
                f"DELETE FROM schema_version WHERE version >= {_SEARCH_VERSION}",
            ]
        for statement in undo:
            await trio.to_thread.run_sync(db.query, statement)
        async with open_store(backend=db.backend()) as store:
            page = await TranscriptSearch(store).search("ancient", limit=10, agent_id="main")
            assert [(h.session_key, h.role) for h in page.hits] == [
                ("agent:main:old", "assistant"),
                ("agent:main:old", "user"),
            ]
        async with open_store(backend=db.backend()) as store:  # indexed once, not twice
            page = await TranscriptSearch(store).search("ancient", limit=10, agent_id="main")
            assert len(page.hits) == 2


async def test_a_sqlite_store_indexed_by_the_first_trigger_drops_it(tmp_path) -> None:
    path = tmp_path / "s.db"
    with trio.fail_after(30):
        async with open_store(path):
            pass
        old = "CREATE TRIGGER entries_search_added AFTER INSERT ON entries BEGIN SELECT 1; END"
        db = Db("sqlite", path=path)
        await trio.to_thread.run_sync(db.query, old)
        async with open_store(path) as store:
            row = new_session_row("agent:main:n", now_ms=T0, session_id="sid-n")
            await store.put_session(row)
            await store.append_entries(row.sessionId, transcript("fresh words"))
            page = await TranscriptSearch(store).search("fresh", limit=10, agent_id="main")
            assert len(page.hits) == 2
        triggers = await trio.to_thread.run_sync(
            db.query, "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
        )
        assert ("entries_search_added",) not in triggers
        assert ("entries_search_indexed",) not in triggers  # (the writer indexes: test_search_rows)
