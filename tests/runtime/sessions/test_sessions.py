from __future__ import annotations

import itertools
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.llm._types import (
    AssistantMessage,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from runtime.sessions._sessions import (
    COMPACTION_SUMMARY_PREFIX,
    CompactionEntry,
    CustomEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    SessionKeyError,
    SessionRow,
    ThinkingLevelChangeEntry,
    TranscriptBuilder,
    TranscriptEntry,
    TranscriptFormatError,
    build_context,
    decode_entries,
    decode_entry,
    decode_session_row,
    decode_session_rows,
    encode_entry,
    encode_session_row,
    export_jsonl,
    import_jsonl,
    iso_timestamp,
    new_entry_id,
    new_session_header,
    new_session_row,
    normalize_agent_id,
    parse_iso_timestamp,
    parse_session_key,
    resolve_session_key,
    session_kind,
)

_AGENT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_T0 = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z


def _clock() -> Any:
    now = iter(range(_T0, _T0 + 10_000_000, 1000))
    return lambda: next(now)


def user(text: str, ts: int = 1) -> UserMessage:
    return UserMessage(content=text, timestamp=ts)


def assistant(text: str, ts: int = 2) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], timestamp=ts)


# --- keys --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("main", "main"),
        ("Ops-Bot", "ops-bot"),
        ("  research_2 ", "research_2"),
        ("my agent!", "my-agent"),
        ("--x--", "x"),
        ("__x", "x"),
        ("", "main"),
        (None, "main"),
        ("!!!", "main"),
        ("a" * 80, "a" * 64),
    ],
)
def test_normalize_agent_id_table(raw: str | None, expected: str) -> None:
    assert normalize_agent_id(raw) == expected


@given(st.text(max_size=100))
def test_normalize_agent_id_always_yields_a_valid_id(raw: str) -> None:
    assert _AGENT_ID.fullmatch(normalize_agent_id(raw))


@pytest.mark.parametrize(
    ("raw", "agent_id", "expected"),
    [
        (None, None, "agent:main:main"),
        ("", None, "agent:main:main"),
        ("   ", "ops", "agent:ops:main"),
        ("foo", None, "agent:main:foo"),
        ("Foo", "Ops", "agent:ops:foo"),
        ("discord:group:123", None, "agent:main:discord:group:123"),
        ("agent:main:main", None, "agent:main:main"),
        ("AGENT:Ops:Direct:Bob", None, "agent:ops:direct:bob"),
        ("agent:ops:main", "ops", "agent:ops:main"),
        ("agent:ops:main", None, "agent:ops:main"),
        ("global", "ops", "global"),
        ("unknown", None, "unknown"),
        ("cron:nightly", "ops", "cron:nightly"),
        ("hook:2f1c", None, "hook:2f1c"),
    ],
)
def test_resolve_session_key_table(raw: str | None, agent_id: str | None, expected: str) -> None:
    assert resolve_session_key(raw, agent_id=agent_id) == expected


def test_resolve_session_key_uses_the_default_agent_when_none_is_given() -> None:
    assert resolve_session_key(None, agent_id=None, default_agent="Ops") == "agent:ops:main"
    assert resolve_session_key("foo", agent_id="x", default_agent="ops") == "agent:x:foo"


@pytest.mark.parametrize(
    "raw",
    ["agent:", "agent:main", "agent:main:", "agent::main", "agent:main::x", "agent:-bad:x", "a::b"],
)
def test_malformed_keys_are_rejected(raw: str) -> None:
    with pytest.raises(SessionKeyError, match="malformed session key"):
        resolve_session_key(raw, agent_id=None)


def test_a_key_of_another_agent_is_rejected_naming_both() -> None:
    with pytest.raises(SessionKeyError) as info:
        resolve_session_key("agent:ops:main", agent_id="research")
    assert "'ops'" in str(info.value)
    assert "'research'" in str(info.value)


def test_parse_session_key() -> None:
    parsed = parse_session_key("agent:Ops:discord:group:1")
    assert parsed is not None
    assert (parsed.agent_id, parsed.rest) == ("ops", "discord:group:1")
    for key in ["global", "cron:x", "agent:main", "agent::x", "foo:bar:baz"]:
        assert parse_session_key(key) is None


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("agent:main:main", "direct"),
        ("agent:main:direct:bob", "direct"),
        ("agent:main:discord:group:123", "group"),
        ("agent:main:slack:channel:c1:thread:9", "group"),
        ("agent:main:matrix:room:r1", "group"),
        ("agent:main:group:7", "group"),
        ("agent:group:main", "direct"),
        ("global", "global"),
        ("unknown", "unknown"),
        ("cron:nightly", "direct"),
    ],
)
def test_session_kind(key: str, kind: str) -> None:
    assert session_kind(key) == kind


# --- rows --------------------------------------------------------------------------------


def test_new_session_row_takes_the_agent_from_the_key() -> None:
    row = new_session_row("agent:ops:main", now_ms=5)
    assert (row.agentId, row.createdAt, row.updatedAt) == ("ops", 5, 5)
    assert row.sessionId != new_session_row("agent:ops:main", now_ms=5).sessionId


def test_session_row_omits_defaults_and_rejects_unknown_fields() -> None:
    row = SessionRow(key="agent:main:main", sessionId="s", agentId="main", createdAt=1, updatedAt=2)
    assert msgspec.json.decode(encode_session_row(row)) == {
        "key": "agent:main:main",
        "sessionId": "s",
        "agentId": "main",
        "createdAt": 1,
        "updatedAt": 2,
    }
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        decode_session_row(encode_session_row(row)[:-1] + b',"surprise":1}')


_opt_text = st.none() | st.text(max_size=20)
_opt_int = st.none() | st.integers(0, 2**53)
_ms = st.integers(0, 2**53)
_rows = st.builds(
    SessionRow,
    key=st.text(min_size=1, max_size=40),
    sessionId=st.uuids().map(str),
    agentId=st.from_regex(_AGENT_ID, fullmatch=True),
    createdAt=_ms,
    updatedAt=_ms,
    label=_opt_text,
    displayName=_opt_text,
    channel=_opt_text,
    model=_opt_text,
    modelProvider=_opt_text,
    thinkingLevel=_opt_text,
    verboseLevel=_opt_text,
    reasoningLevel=_opt_text,
    queueMode=_opt_text,
    queueDebounceMs=_opt_int,
    queueCap=_opt_int,
    queueDrop=_opt_text,
    providerOverride=_opt_text,
    modelOverride=_opt_text,
    sendPolicy=_opt_text,
    inputTokens=_ms,
    outputTokens=_ms,
    totalTokens=_ms,
    contextTokens=_opt_int,
    compactionCount=_ms,
    status=st.sampled_from([None, "running", "done", "failed", "aborted"]),
    startedAt=_opt_int,
    endedAt=_opt_int,
    abortedLastRun=st.booleans(),
    lastRunId=_opt_text,
)


@given(_rows)
def test_session_row_encode_decode_is_identity(row: SessionRow) -> None:
    assert decode_session_row(encode_session_row(row)) == row


@given(st.lists(_rows, max_size=5))
def test_session_rows_decode_in_one_pass(rows: list[SessionRow]) -> None:
    assert decode_session_rows([encode_session_row(r) for r in rows]) == rows


@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_decode_error(data: bytes) -> None:
    try:
        decode_session_row(data)
    except msgspec.DecodeError:
        pass
    try:
        decode_entry(data)
    except msgspec.DecodeError:
        pass


# --- entries -----------------------------------------------------------------------------


def test_new_entry_id_is_8_hex_and_avoids_existing_ids() -> None:
    assert re.fullmatch(r"[0-9a-f]{8}", new_entry_id(set()))

    class FirstTriesCollide:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def __contains__(self, item: object) -> bool:
            self.asked.append(str(item))
            return len(self.asked) <= 3

    taken = FirstTriesCollide()
    entry_id = new_entry_id(taken)
    assert len(taken.asked) == 4
    assert entry_id == taken.asked[-1]


def test_new_entry_id_falls_back_to_a_whole_uuid_when_everything_collides() -> None:
    class Everything:
        def __contains__(self, item: object) -> bool:
            return True

    assert re.fullmatch(r"[0-9a-f]{32}", new_entry_id(Everything()))


def test_builder_chains_entries_through_parent_ids() -> None:
    b = TranscriptBuilder(clock=_clock())
    entries: list[TranscriptEntry] = [
        b.add_message(user("hi")),
        b.add_model_change("openai", "gpt-5"),
        b.add_thinking_level_change("high"),
        b.add_custom("ext", {"k": [1]}),
        b.add_message(assistant("hello")),
        b.add_session_info("chat"),
    ]
    entries.append(b.add_label(entries[0].id, "start"))
    assert entries[0].parentId is None
    for prev, entry in itertools.pairwise(entries):
        assert entry.parentId == prev.id
    assert len({e.id for e in entries}) == len(entries)
    assert b.leaf_id == entries[-1].id
    assert entries[0].timestamp == "2026-01-01T00:00:00.000Z"
    assert entries[1].timestamp == "2026-01-01T00:00:01.000Z"


def test_builder_continues_a_transcript_and_branches() -> None:
    b = TranscriptBuilder(clock=_clock())
    first = b.add_message(user("a"))
    second = b.add_message(assistant("b"))
    resumed = TranscriptBuilder.from_entries([first, second])
    assert resumed.add_message(user("c")).parentId == second.id
    resumed.branch(first.id)
    assert resumed.add_message(user("d")).parentId == first.id
    with pytest.raises(KeyError):
        resumed.branch("nope")


def test_entries_encode_in_pi_field_order() -> None:
    entry = TranscriptBuilder(clock=_clock()).add_message(user("hi"))
    assert encode_entry(entry) == (
        b'{"type":"message","id":"' + entry.id.encode() + b'","parentId":null,'
        b'"timestamp":"2026-01-01T00:00:00.000Z",'
        b'"message":{"role":"user","content":"hi","timestamp":1}}'
    )
    assert decode_entries([encode_entry(entry)]) == [entry]


def test_iso_timestamps_round_trip() -> None:
    assert iso_timestamp(_T0 + 7) == "2026-01-01T00:00:00.007Z"
    assert parse_iso_timestamp(iso_timestamp(_T0 + 7)) == _T0 + 7
    assert parse_iso_timestamp("2026-01-01T00:00:00") == _T0
    assert parse_iso_timestamp("yesterday") is None


# --- context -----------------------------------------------------------------------------


def test_build_context_without_compaction_is_every_message_on_the_path() -> None:
    b = TranscriptBuilder(clock=_clock())
    call = AssistantMessage(
        content=[ToolCallContent(id="c1", name="read", arguments={"path": "a"})], timestamp=3
    )
    result = ToolResultMessage(
        toolCallId="c1",
        toolName="read",
        content=[TextContent(text="x")],
        isError=False,
        timestamp=4,
    )
    entries: list[TranscriptEntry] = [
        b.add_message(user("hi")),
        b.add_model_change("openai", "gpt-5"),
        b.add_message(call),
        b.add_custom("ext", None),
        b.add_message(result),
        b.add_message(assistant("done")),
    ]
    assert build_context(entries) == [user("hi"), call, result, assistant("done")]
    assert build_context([]) == []


def test_build_context_follows_the_branch_of_the_last_entry() -> None:
    b = TranscriptBuilder(clock=_clock())
    root = b.add_message(user("q"))
    abandoned = b.add_message(assistant("first try"))
    b.branch(root.id)
    retry = b.add_message(assistant("second try"))
    assert build_context([root, abandoned, retry]) == [user("q"), assistant("second try")]


def test_build_context_with_compaction_is_summary_then_kept_then_later_entries() -> None:
    b = TranscriptBuilder(clock=_clock())
    entries: list[TranscriptEntry] = [
        b.add_message(user("old 1")),
        b.add_message(assistant("old 2")),
    ]
    kept = b.add_message(user("kept 1"))
    entries += [kept, b.add_message(assistant("kept 2"))]
    first = b.add_compaction(
        "talked about old things", first_kept_entry_id=kept.id, tokens_before=99
    )
    entries += [first, b.add_message(user("mid"))]
    second = b.add_compaction(
        "everything so far", first_kept_entry_id=entries[-1].id, tokens_before=50
    )
    entries += [second, b.add_message(user("new"))]

    context = build_context(entries)

    # the latest compaction on the path wins
    summary = context[0]
    assert isinstance(summary, UserMessage)
    assert isinstance(summary.content, list)
    text = summary.content[0]
    assert isinstance(text, TextContent)
    assert text.text.startswith(COMPACTION_SUMMARY_PREFIX)
    assert text.text == f"{COMPACTION_SUMMARY_PREFIX}<summary>\neverything so far\n</summary>"
    assert summary.timestamp == parse_iso_timestamp(second.timestamp)
    assert context[1:] == [user("mid"), user("new")]

    # with only the first compaction
    context = build_context(entries[:6])
    assert context[1:] == [user("kept 1"), assistant("kept 2"), user("mid")]


# --- JSONL -------------------------------------------------------------------------------


def _transcript() -> list[TranscriptEntry]:
    b = TranscriptBuilder(clock=_clock())
    entries: list[TranscriptEntry] = [b.add_message(user("hi")), b.add_message(assistant("yo"))]
    entries.append(b.add_compaction("s", first_kept_entry_id=entries[1].id, tokens_before=3))
    entries += [
        b.add_model_change("anthropic", "claude"),
        b.add_thinking_level_change("low"),
        b.add_custom("x", {"a": 1}),
        b.add_label(entries[0].id, None),
        b.add_session_info("named"),
    ]
    return entries


def test_jsonl_round_trip() -> None:
    header = new_session_header("sid-1", cwd="/work", now_ms=_T0)
    entries = _transcript()
    data = export_jsonl(header, entries)
    lines = data.splitlines()
    assert msgspec.json.decode(lines[0]) == {
        "type": "session",
        "version": 3,
        "id": "sid-1",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/work",
    }
    assert len(lines) == 1 + len(entries)
    assert import_jsonl(data) == (header, entries)
    assert import_jsonl(data.replace(b"\n", b"\r\n") + b"\n\n") == (header, entries)


@given(st.lists(st.text(max_size=30), max_size=8))
def test_jsonl_round_trip_of_arbitrary_text(texts: list[str]) -> None:
    b = TranscriptBuilder(clock=_clock())
    entries: list[TranscriptEntry] = [b.add_message(user(t)) for t in texts]
    header = new_session_header("s", cwd="/", now_ms=0, parent_session="p")
    assert import_jsonl(export_jsonl(header, entries)) == (header, entries)


def _bad(data: bytes) -> TranscriptFormatError:
    with pytest.raises(TranscriptFormatError) as info:
        import_jsonl(data)
    return info.value


def test_bad_jsonl_names_the_line() -> None:
    header = new_session_header("sid", cwd="/", now_ms=0)
    lines = export_jsonl(header, _transcript()).splitlines()

    broken = [*lines[:3], b'{"type":"message","id":', *lines[3:]]
    error = _bad(b"\n".join(broken))
    assert error.line == 4
    assert str(error).startswith("line 4: ")

    unknown = [*lines[:2], b'{"type":"wat","id":"a","parentId":null,"timestamp":"t"}']
    assert _bad(b"\n".join(unknown)).line == 3

    extra = lines[1][:-1] + b',"surprise":true}'
    assert _bad(b"\n".join([lines[0], extra])).line == 2

    assert _bad(b"\n".join([lines[0], lines[2]])).reason.startswith("parentId")
    assert _bad(b"\n".join([lines[0], lines[1], lines[1]])).reason.startswith("duplicate")


def test_bad_header_is_line_one() -> None:
    assert _bad(b"").line == 1
    assert "missing session header" in str(_bad(b"\n\n"))
    lines = export_jsonl(new_session_header("s", cwd="/", now_ms=0), _transcript()).splitlines()
    assert _bad(b"\n".join(lines[1:])).line == 1
    old = lines[0].replace(b'"version":3', b'"version":2')
    assert "unsupported transcript version 2" in str(_bad(old))


@given(st.binary(max_size=300))
def test_import_of_arbitrary_bytes_only_raises_transcript_format_error(data: bytes) -> None:
    try:
        import_jsonl(data)
    except TranscriptFormatError as exc:
        assert exc.line >= 1


def test_entry_types_are_tagged_like_pi() -> None:
    tags = {
        MessageEntry: "message",
        CompactionEntry: "compaction",
        ModelChangeEntry: "model_change",
        ThinkingLevelChangeEntry: "thinking_level_change",
        CustomEntry: "custom",
        LabelEntry: "label",
        SessionInfoEntry: "session_info",
    }
    for cls, tag in tags.items():
        info = msgspec.inspect.type_info(cls)
        assert isinstance(info, msgspec.inspect.StructType)
        assert (info.tag_field, info.tag) == ("type", tag)
