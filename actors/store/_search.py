"""Full-text search over the transcripts (`sessions.search`), kept current by the writer.

The user and assistant messages of every transcript are indexed as their entries are
written, in the writer's transaction (so the index holds exactly what the transcripts
hold), at the one place each backend inserts entries: imports, forks and runs are indexed
alike. What is indexed of a message: its text parts (OpenClaw's rule: a string content,
else the `text` parts joined by newlines), at most `TEXT_MAX` characters.

- SQLite: the writer adds a batch's rows to `search_entries` itself (`sqlite_index`,
  from `actors.store._sqlite`'s flush of the batch's entries: each body decoded once by
  msgspec; SQL parsing the JSON per row cost a gateway about 7 % of its instructions a
  run); a trigger on deletes takes them out again. An FTS5 table over `search_entries`
  (external content, OpenClaw's tokenizer: `unicode61 remove_diacritics 2`, kept by
  triggers on `search_entries`); ranked by BM25 (the score is `-bm25`, higher is better),
  snippets by FTS5's `snippet` (48 tokens). `SQLITE_SCHEMA` creates it (and indexes a
  store's existing transcripts once, `meta.search_indexed`).
- PostgreSQL: a `tsvector` column (the `simple` configuration: no stemming, no stop
  words) with a GIN index; ranked by `ts_rank`, snippets by `ts_headline`. `PG_SCHEMA` is
  its migration (with the same first indexing); statement-level triggers on `entries` take
  a batch's entries in one pass, and take them out again.

A query is OpenClaw's: every whitespace-separated token must occur (`"a" AND "b"`).
Bounded: the newest `CANDIDATES_MAX` matching messages are ranked (beyond them the answer
says `truncated`), at most `LIMIT_MAX` hits, snippets of at most `SNIPPET_MAX` characters.
A hit names the session whose current transcript holds it (a reset session's earlier
transcript is not searched); messages a rewind left on a side branch are still found.

Every read is a checkpoint and raises `StoreError` when the database fails.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

import attrs
import msgspec

from ._ops import SqlConnection

__all__ = [
    "CANDIDATES_MAX",
    "LIMIT_MAX",
    "PG_SCHEMA",
    "SNIPPET_MAX",
    "SQLITE_INSERT_HEAD",
    "SQLITE_SCHEMA",
    "SearchHit",
    "SearchPage",
    "SearchRow",
    "TranscriptSearch",
    "sqlite_index",
]

_T = TypeVar("_T")

TEXT_MAX: Final = 65_536
"""Characters of a message's text that are indexed."""
CANDIDATES_MAX: Final = 10_000
LIMIT_MAX: Final = 200
SNIPPET_MAX: Final = 500
_SNIPPET_TOKENS: Final = 48
_MESSAGE_PREFIX: Final = '{"type":"message"'
_USER: Final = '"message":{"role":"user"'
_ASSISTANT: Final = '"message":{"role":"assistant"'
"""How an encoded `MessageEntry` begins (msgspec writes the tag first) and how its message
does: other entries and tool results are passed over without parsing their JSON (a quote
inside a JSON string is escaped, so these only match the structure)."""
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _sqlite_doc(body: str) -> str:
    """The columns `role`, `ts` and `text` SQLite reads of the message entry `body` (the
    text neither trimmed nor cut yet): the first indexing's rule, and the writer's for a
    body `sqlite_index` leaves to SQLite."""
    return f"""json_extract({body}, '$.message.role') AS role,
    CAST(COALESCE(json_extract({body}, '$.message.timestamp'), 0) AS INTEGER) AS ts,
    CASE json_type({body}, '$.message.content')
        WHEN 'text' THEN json_extract({body}, '$.message.content')
        WHEN 'array' THEN (
            SELECT group_concat(json_extract(c.value, '$.text'), char(10))
            FROM json_each({body}, '$.message.content') AS c
            WHERE json_extract(c.value, '$.type') = 'text'
                AND trim(COALESCE(json_extract(c.value, '$.text'), '')) != ''
        )
    END AS text"""


SQLITE_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS search_entries(
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    role TEXT NOT NULL,
    ts INTEGER NOT NULL,
    text TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS search_entries_session ON search_entries(session_id, entry_id)",
    "CREATE INDEX IF NOT EXISTS sessions_session_id ON sessions(session_id)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(
    text, content='search_entries', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
)""",
    """CREATE TRIGGER IF NOT EXISTS search_entries_added AFTER INSERT ON search_entries BEGIN
    INSERT INTO search_fts(rowid, text) VALUES (new.id, new.text);
END""",
    """CREATE TRIGGER IF NOT EXISTS search_entries_removed AFTER DELETE ON search_entries BEGIN
    INSERT INTO search_fts(search_fts, rowid, text) VALUES ('delete', old.id, old.text);
END""",
    # The first two versions indexed from triggers on entries (SQL parsing the JSON of
    # every message); the writer indexes a batch itself now (`sqlite_index`).
    "DROP TRIGGER IF EXISTS entries_search_added",
    "DROP TRIGGER IF EXISTS entries_search_indexed",
    """CREATE TRIGGER IF NOT EXISTS entries_search_removed AFTER DELETE ON entries BEGIN
    DELETE FROM search_entries WHERE session_id = old.session_id AND entry_id = old.entry_id;
END""",
    # A store from before the index: its transcripts are indexed once, as it opens.
    f"""INSERT INTO search_entries(session_id, entry_id, role, ts, text)
SELECT session_id, entry_id, role, ts, substr(trim(text), 1, {TEXT_MAX}) FROM (SELECT
    e.session_id, e.entry_id,
    {_sqlite_doc("e.body")}
    FROM (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'search_indexed')) AS once
    CROSS JOIN entries AS e  -- (in this order: nothing is read once indexed)
    WHERE substr(e.body, 1, {len(_MESSAGE_PREFIX)}) = CAST('{_MESSAGE_PREFIX}' AS BLOB)
        AND json_valid(e.body)
    ORDER BY e.session_id, e.seq
)
WHERE role IN ('user', 'assistant') AND trim(COALESCE(text, '')) != ''""",
    "INSERT OR IGNORE INTO meta(key, value) VALUES ('search_indexed', '1')",
)
"""The SQLite side (each statement whole: trigger bodies hold semicolons)."""

SearchRow = tuple[str, str, str, int, str]
"""A row of `search_entries`: `session_id, entry_id, role, ts, text`."""
SQLITE_INSERT_HEAD: Final = (
    "INSERT INTO search_entries(session_id, entry_id, role, ts, text) VALUES "
)
"""The head of the writer's multi-row inserts of `SearchRow`s."""
_SQLITE_INSERT_ONE: Final = f"""INSERT INTO search_entries(session_id, entry_id, role, ts, text)
SELECT :session_id, :entry_id, role, ts, substr(trim(text), 1, {TEXT_MAX})
FROM (SELECT {_sqlite_doc(":body")})
WHERE role IN ('user', 'assistant') AND trim(COALESCE(text, '')) != ''"""
"""The row of one body, read by SQLite (the rule of the trigger this replaced)."""

_PREFIX_BYTES: Final = _MESSAGE_PREFIX.encode()
_USER_BYTES: Final = _USER.encode()
_ASSISTANT_BYTES: Final = _ASSISTANT.encode()
_NUL_ESCAPE: Final = b"\\u0000"
"""A JSON NUL escape: SQLite's JSON functions end a string there, so such a body is left
to SQLite."""


class _Part(msgspec.Struct, frozen=True, gc=False):
    type: str | None = None
    text: str | None = None


class _Message(msgspec.Struct, frozen=True, gc=False):
    role: str | None = None
    timestamp: int | None = None
    content: str | list[_Part] | None = None


class _Body(msgspec.Struct, frozen=True, gc=False):
    """What the index reads of a message entry's body: unknown fields ignored (any entry
    and message decodes), the entry's type read from its first bytes (`_MESSAGE_PREFIX`),
    as the trigger did; untracked by the garbage collector (nothing in it can hold a cycle)."""

    message: _Message | None = None


_decode_body: Final = msgspec.json.Decoder(_Body).decode


def sqlite_index(
    conn: sqlite3.Connection,
    entries: Sequence[tuple[str, int, str, bytes]],
    insert: Callable[[list[SearchRow]], object],
) -> None:
    """Index `entries` (`session_id, seq, entry_id, body`, as the writer has just inserted
    them into `entries`): the `search_entries` rows of their user and assistant messages
    with text go to `insert` (as many at a time as can be), in the entries' order. A
    message's row: its text (a string content, else the `text` parts not blank joined by
    newlines; spaces trimmed, as SQLite's `trim`; at most `TEXT_MAX` characters) and its
    timestamp (an integer, 0 when there is none).

    The rule of the trigger on `entries` that did this before, in Python, on each body
    decoded once by msgspec; a body that does not decode that way (a float timestamp, a
    content of another shape, a JSON NUL escape, text that is not valid JSON) is indexed
    in its place by that trigger's own SQL on `conn`, so its row is the trigger's (and JSON
    SQLite cannot read fails the write, as it did). Blocking."""
    rows: list[SearchRow] = []
    for session_id, _seq, entry_id, body in entries:
        # (`find`, not `in`: bytes' `in` tries the needle as an int first, at a cost)
        if not body.startswith(_PREFIX_BYTES) or (
            body.find(_ASSISTANT_BYTES) < 0 and body.find(_USER_BYTES) < 0
        ):
            continue
        try:
            doc = _read(body)
        except msgspec.DecodeError:
            if rows:
                insert(rows)
                rows = []
            found = {"session_id": session_id, "entry_id": entry_id, "body": body}
            conn.execute(_SQLITE_INSERT_ONE, found)
            continue
        if doc is not None:
            rows.append((session_id, entry_id, doc[0], doc[1], doc[2]))
    if rows:
        insert(rows)


def _read(body: bytes) -> tuple[str, int, str] | None:
    """A message entry's role, timestamp and text (None: not indexed). Raises
    `msgspec.DecodeError` for a body left to SQLite."""
    if body.find(_NUL_ESCAPE) >= 0:
        raise msgspec.DecodeError("a NUL escape (SQLite's JSON ends the string there)")
    message = _decode_body(body).message
    if message is None or message.role not in ("user", "assistant"):
        return None
    content = message.content
    if isinstance(content, str):
        text = content
    elif content:
        text = "\n".join(
            [p.text for p in content if p.type == "text" and p.text and p.text.strip(" ")]
        )
    else:
        return None
    text = text.strip(" ")[:TEXT_MAX]
    if not text:
        return None
    ts = message.timestamp or 0
    if not _INT64_MIN <= ts <= _INT64_MAX:  # (as SQLite's CAST of a larger number)
        ts = _INT64_MIN if ts < 0 else _INT64_MAX
    return message.role, ts, text


_PG_DOC: Final = f"""CREATE FUNCTION clawlane_search_doc(
    body bytea, OUT role text, OUT ts bigint, OUT doc text
) LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    m jsonb;
BEGIN
    m := convert_from(body, 'UTF8')::jsonb -> 'message';
    role := m ->> 'role';
    IF role IS NULL OR role NOT IN ('user', 'assistant') THEN
        role := NULL;
        RETURN;
    END IF;
    ts := COALESCE((m ->> 'timestamp')::numeric::bigint, 0);
    IF jsonb_typeof(m -> 'content') = 'string' THEN
        doc := m ->> 'content';
    ELSIF jsonb_typeof(m -> 'content') = 'array' THEN
        SELECT string_agg(c ->> 'text', E'\\n' ORDER BY n) INTO doc
        FROM jsonb_array_elements(m -> 'content') WITH ORDINALITY AS t(c, n)
        WHERE c ->> 'type' = 'text' AND btrim(COALESCE(c ->> 'text', '')) <> '';
    END IF;
    doc := left(btrim(doc), {TEXT_MAX});
EXCEPTION WHEN others THEN  -- JSON PostgreSQL cannot hold (a \\u0000): not indexed
    role := NULL;
    doc := NULL;
END
$fn$"""
_PG_SELECT_DOCS: Final = f"""SELECT e.session_id, e.entry_id, d.role, d.ts, d.doc
FROM SOURCE AS e CROSS JOIN LATERAL clawlane_search_doc(e.body) AS d
WHERE substring(e.body FROM 1 FOR {len(_MESSAGE_PREFIX)}) = convert_to('{_MESSAGE_PREFIX}', 'UTF8')
    AND d.role IS NOT NULL AND COALESCE(d.doc, '') <> ''"""

PG_SCHEMA: Final = (
    """CREATE TABLE search_entries(
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    role TEXT NOT NULL,
    ts BIGINT NOT NULL,
    text TEXT NOT NULL,
    doc tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
)""",
    "CREATE INDEX search_entries_doc ON search_entries USING GIN(doc)",
    "CREATE INDEX search_entries_session ON search_entries(session_id, entry_id)",
    "CREATE INDEX sessions_session_id ON sessions(session_id)",
    _PG_DOC,
    f"""CREATE FUNCTION clawlane_search_added() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO search_entries(session_id, entry_id, role, ts, text)
    {_PG_SELECT_DOCS.replace("SOURCE", "added")};
    RETURN NULL;
END
$fn$""",
    """CREATE FUNCTION clawlane_search_removed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM search_entries AS s USING removed AS r
    WHERE s.session_id = r.session_id AND s.entry_id = r.entry_id;
    RETURN NULL;
END
$fn$""",
    """CREATE TRIGGER entries_search_added AFTER INSERT ON entries
REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION clawlane_search_added()""",
    """CREATE TRIGGER entries_search_removed AFTER DELETE ON entries
REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION clawlane_search_removed()""",
    # the transcripts stored before this migration
    "INSERT INTO search_entries(session_id, entry_id, role, ts, text) "
    + _PG_SELECT_DOCS.replace("SOURCE", "entries")
    + " ORDER BY e.session_id, e.seq",
)
"""The PostgreSQL migration (`actors.store._pg._MIGRATIONS`)."""


class _Reader(Protocol):
    """What `TranscriptSearch` needs of the `Store`: its readers and which backend it has."""

    @property
    def backend(self) -> Any: ...

    async def read(self, fn: Callable[[SqlConnection], _T]) -> _T: ...


@attrs.frozen
class SearchHit:
    session_key: str
    session_id: str
    message_id: str
    role: str
    timestamp: int
    snippet: str
    score: float


@attrs.frozen
class SearchPage:
    hits: list[SearchHit]
    truncated: bool
    """More hits than the limit, or more matching messages than were ranked."""


def fts_query(query: str) -> str:
    """OpenClaw's FTS5 query: each whitespace-separated token a quoted phrase, all of them
    required."""
    return " AND ".join('"' + token.replace('"', '""') + '"' for token in query.split())


def _cut(snippet: str) -> str:
    return snippet if len(snippet) <= SNIPPET_MAX else snippet[:SNIPPET_MAX] + "…"


class TranscriptSearch:
    """Searches the transcripts of the gateway's `Store` (its readers)."""

    def __init__(self, store: _Reader) -> None:
        self._store = store
        self._sqlite = type(store.backend).__name__ == "SqliteBackend"

    async def search(
        self,
        query: str,
        *,
        limit: int,
        session_keys: Sequence[str] | None = None,
        agent_id: str | None = None,
        updated_after_ms: int | None = None,
        accept: Callable[[str], bool] | None = None,
    ) -> SearchPage:
        """The best `limit` messages matching `query` (ranked, then newest first) in the
        sessions `session_keys` names, or else in `agent_id`'s sessions (all sessions when
        None), updated after `updated_after_ms` if given, whose key `accept` takes. A
        checkpoint; raises `StoreError`."""
        limit = max(1, min(limit, LIMIT_MAX))
        keys = list(dict.fromkeys(session_keys)) if session_keys is not None else None
        if keys == []:
            return SearchPage([], False)
        find = _find_sqlite if self._sqlite else _find_pg

        def read(conn: SqlConnection) -> SearchPage:
            return find(conn, query, limit, keys, agent_id, updated_after_ms, accept)

        return await self._store.read(read)


def _where(
    keys: list[str] | None, agent_id: str | None, updated_after_ms: int | None
) -> tuple[str, list[object]]:
    clauses: list[str] = []
    args: list[object] = []
    if keys is not None:
        clauses.append(f"s.key IN ({', '.join('?' * len(keys))})")
        args.extend(keys)
    elif agent_id is not None:
        clauses.append("s.agent_id = ?")
        args.append(agent_id)
    if updated_after_ms is not None:
        clauses.append("s.updated_at > ?")
        args.append(updated_after_ms)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _page(
    rows: list[Any],
    limit: int,
    accept: Callable[[str], bool] | None,
    candidates: int,
    snippets: Callable[[list[int]], dict[int, str]],
) -> SearchPage:
    kept = [r for r in rows if accept is None or accept(str(r[6]))]
    found = snippets([int(r[0]) for r in kept[:limit]]) if kept else {}
    hits = [
        SearchHit(
            session_key=str(key),
            session_id=str(sid),
            message_id=str(eid),
            role=str(role),
            timestamp=max(int(ts), 0),
            snippet=_cut(found.get(int(rid), "")),
            score=float(score),
        )
        for rid, score, sid, eid, role, ts, key in kept[:limit]
    ]
    return SearchPage(hits, len(kept) > limit or candidates >= CANDIDATES_MAX)


_SQLITE_CANDIDATES: Final = """
SELECT rowid AS id, -bm25(search_fts) AS score FROM search_fts
WHERE search_fts MATCH ?{within} ORDER BY rowid DESC LIMIT ?"""
_SQLITE_WITHIN: Final = """ AND rowid IN (
    SELECT e2.id FROM search_entries AS e2 JOIN sessions AS s2 ON s2.session_id = e2.session_id
    WHERE s2.key IN ({marks}))"""
_RANKED: Final = """
SELECT c.id, c.score, e.session_id, e.entry_id, e.role, e.ts, s.key
FROM ({candidates}) AS c
JOIN search_entries AS e ON e.id = c.id
JOIN sessions AS s ON s.session_id = e.session_id{where}
ORDER BY c.score DESC, e.ts DESC, e.entry_id
LIMIT ?"""


def _find_sqlite(
    conn: SqlConnection,
    query: str,
    limit: int,
    keys: list[str] | None,
    agent_id: str | None,
    updated_after_ms: int | None,
    accept: Callable[[str], bool] | None,
) -> SearchPage:
    match = fts_query(query)
    within = ""
    args: list[object] = [match]
    if keys is not None:
        within = _SQLITE_WITHIN.format(marks=", ".join("?" * len(keys)))
        args.extend(keys)
    args.append(CANDIDATES_MAX)
    candidates = _SQLITE_CANDIDATES.format(within=within)
    (count,) = conn.execute(f"SELECT COUNT(*) FROM ({candidates})", args).fetchone()
    where, more = _where(keys, agent_id, updated_after_ms)
    sql = _RANKED.format(candidates=candidates, where=where)
    rows = conn.execute(sql, [*args, *more, _fetch(limit, accept)]).fetchall()

    def snippets(ids: list[int]) -> dict[int, str]:
        sql = (
            f"SELECT rowid, snippet(search_fts, 0, '', '', ' … ', {_SNIPPET_TOKENS}) "
            f"FROM search_fts WHERE search_fts MATCH ? AND rowid IN ({', '.join('?' * len(ids))})"
        )
        return {int(i): str(s) for i, s in conn.execute(sql, [match, *ids]).fetchall()}

    return _page(rows, limit, accept, int(count), snippets)


def _fetch(limit: int, accept: Callable[[str], bool] | None) -> int:
    """Rows to read to answer `limit` hits (and say whether there are more): more when some
    will be filtered out in Python."""
    return limit + 1 if accept is None else min(CANDIDATES_MAX, (limit + 1) * 8)


_PG_CANDIDATES: Final = """
SELECT id FROM search_entries WHERE doc @@ plainto_tsquery('simple', ?){within}
ORDER BY id DESC LIMIT ?"""
_PG_WITHIN: Final = (
    """ AND session_id IN (SELECT session_id FROM sessions WHERE key IN ({marks}))"""
)
_PG_RANKED: Final = """
SELECT e.id, ts_rank(e.doc, q.q) AS score, e.session_id, e.entry_id, e.role, e.ts, s.key
FROM ({candidates}) AS c
JOIN search_entries AS e ON e.id = c.id
CROSS JOIN (SELECT plainto_tsquery('simple', ?) AS q) AS q
JOIN sessions AS s ON s.session_id = e.session_id{where}
ORDER BY score DESC, e.ts DESC, e.entry_id
LIMIT ?"""
_PG_SNIPPETS: Final = f"""
SELECT id, ts_headline('simple', text, plainto_tsquery('simple', ?),
    'StartSel="", StopSel="", MaxWords={_SNIPPET_TOKENS}, MinWords=12, ShortWord=0,
    MaxFragments=1, FragmentDelimiter=" … "')
FROM search_entries WHERE id = ANY(?)"""


def _find_pg(
    conn: SqlConnection,
    query: str,
    limit: int,
    keys: list[str] | None,
    agent_id: str | None,
    updated_after_ms: int | None,
    accept: Callable[[str], bool] | None,
) -> SearchPage:
    within = ""
    args: list[object] = [query]
    if keys is not None:
        within = _PG_WITHIN.format(marks=", ".join("?" * len(keys)))
        args.extend(keys)
    args.append(CANDIDATES_MAX)
    candidates = _PG_CANDIDATES.format(within=within)
    (count,) = conn.execute(f"SELECT COUNT(*) FROM ({candidates}) AS n", args).fetchone()
    where, more = _where(keys, agent_id, updated_after_ms)
    sql = _PG_RANKED.format(candidates=candidates, where=where)
    rows = conn.execute(sql, [*args, query, *more, _fetch(limit, accept)]).fetchall()

    def snippets(ids: list[int]) -> dict[int, str]:
        found = conn.execute(_PG_SNIPPETS, [query, ids]).fetchall()
        return {int(i): " ".join(str(s).split()) for i, s in found}

    return _page(rows, limit, accept, int(count), snippets)
