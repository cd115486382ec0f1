"""The SQLite writer indexes a batch's messages itself (`sqlite_index`) by the rule of
the trigger on entries it replaced, kept here as it was (`OLD_TRIGGER`): for real entries
written through the store, hand-written bodies of every odd shape and generated ones, the
rows of `search_entries` (or the failed write) are the trigger's; a store that still has the
trigger loses it and indexes each message once."""

from __future__ import annotations

import functools
import sqlite3
from typing import Any, Final

import msgspec
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import TranscriptSearch, open_store
from actors.store import _search
from runtime.llm import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from runtime.llm._types import ImageContent, ThinkingContent, ToolCallContent
from runtime.sessions import TranscriptBuilder, TranscriptEntry, new_session_row

T0 = 1_767_225_600_000
TEXT_MAX: Final = _search.TEXT_MAX

OLD_TRIGGER: Final = f"""CREATE TRIGGER entries_search_indexed AFTER INSERT ON entries
WHEN substr(new.body, 1, 17) = CAST('{{"type":"message"' AS BLOB)
    AND (instr(new.body, CAST('"message":{{"role":"user"' AS BLOB)) > 0
        OR instr(new.body, CAST('"message":{{"role":"assistant"' AS BLOB)) > 0)
BEGIN
    INSERT INTO search_entries(session_id, entry_id, role, ts, text)
    SELECT new.session_id, new.entry_id, m.role, m.ts, substr(trim(m.text), 1, {TEXT_MAX})
    FROM (SELECT
        json_extract(new.body, '$.message.role') AS role,
        CAST(COALESCE(json_extract(new.body, '$.message.timestamp'), 0) AS INTEGER) AS ts,
        CASE json_type(new.body, '$.message.content')
            WHEN 'text' THEN json_extract(new.body, '$.message.content')
            WHEN 'array' THEN (
                SELECT group_concat(json_extract(c.value, '$.text'), char(10))
                FROM json_each(new.body, '$.message.content') AS c
                WHERE json_extract(c.value, '$.type') = 'text'
                    AND trim(COALESCE(json_extract(c.value, '$.text'), '')) != ''
            )
        END AS text) AS m
    WHERE m.role IN ('user', 'assistant') AND trim(COALESCE(m.text, '')) != '';
END"""
"""The trigger of `actors/store/_search.py` up to 70fe82b (`entries_search_indexed`)."""

_TABLES: Final = (
    """CREATE TABLE entries(
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, entry_id TEXT NOT NULL, body BLOB NOT NULL,
    PRIMARY KEY(session_id, seq)) WITHOUT ROWID""",
    """CREATE TABLE search_entries(id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
    entry_id TEXT NOT NULL, role TEXT NOT NULL, ts INTEGER NOT NULL, text TEXT NOT NULL)""",
    OLD_TRIGGER,
)

Row = tuple[str, int, str, bytes]
Outcome = list[tuple[Any, ...]] | str


def by_trigger(rows: list[Row]) -> Outcome:
    """The `search_entries` rows the old trigger makes of `rows` inserted into `entries`
    (or "error" when the insert fails)."""
    return _indexed(rows, trigger=True)


def by_writer(rows: list[Row]) -> Outcome:
    """The rows the writer makes of them (`sqlite_index`, its multi-row inserts)."""
    return _indexed(rows, trigger=False)


def _indexed(rows: list[Row], *, trigger: bool) -> Outcome:
    conn = sqlite3.connect(":memory:")
    try:
        for statement in _TABLES if trigger else _TABLES[:2]:
            conn.execute(statement)
        try:
            conn.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)", rows)
            if not trigger:
                _search.sqlite_index(conn, rows, functools.partial(_insert, conn))
        except sqlite3.OperationalError:
            return "error"
        return search_rows(conn)
    finally:
        conn.close()


def search_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """`search_entries` in order, each text with its type (bytes SQLite's JSON left as they
    were shown as replacement characters)."""
    conn.text_factory = bytes
    try:
        found = conn.execute(
            "SELECT session_id, entry_id, role, ts, text, typeof(text) FROM search_entries "
            "ORDER BY id"
        ).fetchall()
    finally:
        conn.text_factory = str
    return [tuple(_text(v) for v in row) for row in found]


def _text(value: object) -> object:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _insert(conn: sqlite3.Connection, rows: list[_search.SearchRow]) -> None:
    one = "(?, ?, ?, ?, ?)"
    conn.execute(
        _search.SQLITE_INSERT_HEAD + ", ".join([one] * len(rows)), [v for r in rows for v in r]
    )


def real_entries() -> list[TranscriptEntry]:
    """A transcript of every kind of entry and content the gateway writes."""
    b = TranscriptBuilder()
    long_text = "  " + "é" * (TEXT_MAX - 3) + "xyz😀 tail  "
    parts: list[TextContent | ImageContent] = [
        TextContent("  "),
        TextContent(" first\n"),
        TextContent(""),
        TextContent("\n"),
        ImageContent(data="AAAA", mimeType="image/png"),
        TextContent("\tsecond  "),
    ]
    return [
        b.add_model_change("local", "m"),
        b.add_message(UserMessage(content="  hello  Ünïcödé 😀 café  ", timestamp=T0)),
        b.add_message(UserMessage(content=parts, timestamp=T0 + 1)),
        b.add_message(UserMessage(content="   ", timestamp=T0 + 2)),
        b.add_message(UserMessage(content="\n", timestamp=T0 + 3)),
        b.add_message(
            AssistantMessage(
                content=[
                    ThinkingContent("thinking words"),
                    TextContent("the answer"),
                    ToolCallContent(id="t", name="read", arguments={"text": "args"}),
                    TextContent("after the call"),
                ],
                timestamp=T0 + 4,
            )
        ),
        b.add_message(
            AssistantMessage(content=[ThinkingContent("only thinking")], timestamp=T0 + 5)
        ),
        b.add_message(
            ToolResultMessage(
                toolCallId="t",
                toolName="read",
                content=[TextContent("tool output")],
                isError=False,
                timestamp=T0 + 6,
            )
        ),
        b.add_message(UserMessage(content=long_text, timestamp=T0 + 7)),
        b.add_message(UserMessage(content=[TextContent("x" * (TEXT_MAX + 5))], timestamp=0)),
        b.add_custom_message("note", "custom words", display=True),
        b.add_compaction("a summary", first_kept_entry_id="e", tokens_before=10),
        b.add_custom("kind", {"message": {"role": "user", "content": "not a message"}}),
        b.add_session_info("name"),
    ]


async def test_the_writer_indexes_real_entries_as_the_trigger_did(tmp_path) -> None:
    path = tmp_path / "s.db"
    with trio.fail_after(30):
        async with open_store(path) as store:
            row = new_session_row("agent:main:a", now_ms=T0, session_id="sid-a")
            await store.put_session(row)
            await store.append_entries(row.sessionId, real_entries())
            await store.flush()
    conn = sqlite3.connect(path)
    try:
        entries = conn.execute("SELECT * FROM entries ORDER BY session_id, seq").fetchall()
        written = search_rows(conn)
        triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
    finally:
        conn.close()
    assert ("entries_search_indexed",) not in triggers
    expected = by_trigger(entries)
    assert written == expected
    assert [(role, ts) for _, _, role, ts, _, _ in written] == [
        ("user", T0),
        ("user", T0 + 1),
        ("user", T0 + 3),  # a newline is text: SQLite's trim takes spaces only
        ("assistant", T0 + 4),
        ("user", T0 + 7),
        ("user", 0),
    ]
    texts = [text for *_, text, _ in written]
    assert texts[:4] == [
        "hello  Ünïcödé 😀 café",
        "first\n\n\n\n\tsecond",
        "\n",
        "the answer\nafter the call",
    ]
    assert texts[4] == ("é" * (TEXT_MAX - 3) + "xyz😀 tail")[:TEXT_MAX]
    assert texts[5] == "x" * TEXT_MAX


def message(role: str, rest: str, *, prefix: str = '{"type":"message"') -> bytes:
    return f'{prefix},"id":"e","message":{{"role":"{role}"{rest}}}}}'.encode()


ODD_BODIES: Final = [
    message("user", ',"content":"plain","timestamp":1767225600000.7'),
    message("user", ',"content":"plain","timestamp":-3.9'),
    message("user", ',"content":"plain","timestamp":1.0'),
    message("user", ',"content":"no timestamp"'),
    message("user", ',"content":"null timestamp","timestamp":null'),
    message("user", ',"content":"text timestamp","timestamp":" 42x"'),
    message("user", ',"content":"true timestamp","timestamp":true'),
    message("user", ',"content":"huge","timestamp":99999999999999999999'),
    message("user", ',"content":"uint64","timestamp":18446744073709551615'),
    message("user", ',"content":"low","timestamp":-9223372036854775809'),
    message("user", ',"content":"inf","timestamp":1e999'),
    message("user", ',"content":"object timestamp","timestamp":{"a":1}'),
    message("assistant", ',"content":null'),
    message("assistant", ',"content":5'),
    message("assistant", ',"content":{"type":"text","text":"an object"}'),
    message("assistant", ',"content":[]'),
    message("assistant", ',"content":[{"type":"text","text":5},{"type":"text","text":"b"}]'),
    message("assistant", ',"content":[{"type":"text","text":null},{"type":null,"text":"c"}]'),
    message("assistant", ',"content":[{"type":"text"},{"text":"untyped"},7,[1]]'),
    message("assistant", ',"content":["a string part"]'),
    message("user", ',"content":"cut\\u0000here"'),
    message("user", ',"content":[{"type":"text\\u0000x","text":"a\\u0000b"}]'),
    message("user\\u0000x", ',"content":"role with a NUL"'),
    message("user", ',"content":"escapes \\ud83d\\ude00 \\t\\n\\"q\\" \\u00e9 "'),
    message("user", ',"content":"\\ud800 lone"'),
    message("assistant", ',"content":"  \\t  "'),
    message("toolResult", ',"content":"a result","details":{"message":{"role":"user"}}'),
    message("system", ',"content":"system"'),
    message("user", ',"content":"other type"', prefix='{"type":"messages"'),
    message("user", ',"content":"custom"', prefix='{"type":"custom_message"'),
    b'{"type":"message","message":{"content":"role last","role":"user"}}',
    b'{"type":"message","message":{"content":"x","details":{"message":{"role":"user"}}}}',
    b'{"type":"message","message":null,"x":{"message":{"role":"user"}}}',
    b'{"type":"message","message":"a string","x":"\\"message\\":{\\"role\\":\\"user\\""}',
    b'{"type":"message","message":{"role":"user","content":"truncated JSON"',
    b'{"type":"message","message":{"role":"user","content":"trailing"}} x',
]


@pytest.mark.parametrize("body", ODD_BODIES, ids=lambda b: b.decode()[:60])
def test_an_odd_body_is_indexed_as_the_trigger_did(body: bytes) -> None:
    rows: list[Row] = [("sid", 0, "e", body)]
    assert by_writer(rows) == by_trigger(rows)


def test_a_batch_of_odd_bodies_is_indexed_in_order_as_the_trigger_did() -> None:
    rows: list[Row] = [
        ("sid", i, f"e{i}", body)
        for i, body in enumerate(ODD_BODIES)
        if by_trigger([("sid", 0, "e", body)]) != "error"
    ]
    expected = by_trigger(rows)
    assert expected != "error" and len(expected) > 10
    assert by_writer(rows) == expected


_TEXT: Final = st.text(st.sampled_from([" ", "\n", "\t", "a", "é", "😀", "\x00", "\u3000", "b"]))
_PART: Final = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "thinking", "image", "toolCall", None])},
        optional={"text": st.one_of(_TEXT, st.none(), st.integers(-2, 2)), "thinking": _TEXT},
    ),
    st.integers(0, 2),
    st.none(),
)
_CONTENT: Final = st.one_of(_TEXT, st.lists(_PART, max_size=5), st.none(), st.integers(0, 2))
_TIMESTAMP: Final = st.one_of(
    st.integers(-(2**65), 2**65),
    st.floats(allow_nan=False, allow_infinity=False),
    st.none(),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(
    role=st.sampled_from(["user", "assistant", "toolResult", "custom"]),
    content=_CONTENT,
    timestamp=st.one_of(st.just("absent"), _TIMESTAMP),
)
def test_generated_messages_are_indexed_as_the_trigger_did(
    role: str, content: Any, timestamp: Any
) -> None:
    inner: dict[str, Any] = {"role": role, "content": content}
    if timestamp != "absent":
        inner["timestamp"] = timestamp
    body = msgspec.json.encode({"type": "message", "id": "e", "message": inner})
    rows: list[Row] = [("sid", 0, "e", body)]
    assert by_writer(rows) == by_trigger(rows)


async def test_a_store_with_the_trigger_drops_it_and_indexes_each_message_once(
    tmp_path,
) -> None:
    path = tmp_path / "s.db"
    with trio.fail_after(30):
        async with open_store(path):
            pass
        conn = sqlite3.connect(path)
        try:
            conn.execute(OLD_TRIGGER)  # as a store of 70fe82b has it
            conn.commit()
        finally:
            conn.close()
        async with open_store(path) as store:
            row = new_session_row("agent:main:n", now_ms=T0, session_id="sid-n")
            await store.put_session(row)
            b = TranscriptBuilder()
            said = [
                b.add_message(UserMessage(content="fresh words", timestamp=T0)),
                b.add_message(AssistantMessage(content=[TextContent("fresh")], timestamp=T0)),
            ]
            await store.append_entries(row.sessionId, said)
            page = await TranscriptSearch(store).search("fresh", limit=10, agent_id="main")
            assert sorted(h.role for h in page.hits) == ["assistant", "user"]
    conn = sqlite3.connect(path)
    try:
        triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
        (count,) = conn.execute("SELECT COUNT(*) FROM search_entries").fetchone()
    finally:
        conn.close()
    assert ("entries_search_indexed",) not in triggers
    assert count == 2
