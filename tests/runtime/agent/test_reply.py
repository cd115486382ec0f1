"""Reply shaping: the silent token, chat delta throttling, messaging dedupe, final payloads."""

from __future__ import annotations

import itertools
import re

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.agent._reply import (
    CHAT_DELTA_INTERVAL_MS,
    SILENT_TOKEN,
    ChatDeltaThrottle,
    DeltaEmit,
    ReplyPayload,
    SilentStreamFilter,
    ToolErrorInfo,
    build_final_payloads,
    dedupe_against_sent,
    format_reasoning,
    is_messaging_duplicate,
    is_silent_reply,
    normalize_for_dedupe,
    strip_leading_silent_token,
)

# --- is_silent_reply ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "NO_REPLY",
        "  NO_REPLY  ",
        "\n\tNO_REPLY\n",
        "no_reply",
        "No_Reply",
        "NO_REPLY NO_REPLY",
        "NO_REPLY\n\nno_reply",
        '{"action":"NO_REPLY"}',
        '  { "action" : "NO_REPLY" }\n',
        '{"action": " NO_REPLY "}',
    ],
)
def test_whole_text_token_or_envelope_is_silent(text: str) -> None:
    assert is_silent_reply(text)
    assert strip_leading_silent_token(text) == ""


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   ",
        "NO",
        "NO_REPL",
        "NO_REPLY.",
        "NO_REPLY_TOKEN",
        "Done. NO_REPLY",
        "Sure thing!\n\nNO_REPLY",
        "NO_REPLY then text",
        "NO_REPLYhello",
        '{"action":"NO_REPLY","reason":"x"}',
        '{"action":"REPLY"}',
        '{"action":"NO_REPLY"',
        "NO‐REPLY",  # a Unicode hyphen, not the token
    ],
)
def test_other_texts_are_not_silent(text: str | None) -> None:
    assert not is_silent_reply(text)


def test_trailing_token_after_text_is_left_as_is() -> None:
    assert strip_leading_silent_token("Done. NO_REPLY") == "Done. NO_REPLY"


@pytest.mark.parametrize(
    ("text", "visible"),
    [
        ("NO_REPLY\n\nHello there", "Hello there"),
        ("  no_reply Hello", "Hello"),
        ("NO_REPLY NO_REPLY Hi", "Hi"),
        ("NO_REPLYHello", "Hello"),  # glued to the answer: the token still goes
        ("NO_REPLY_TOKEN is a constant", "NO_REPLY_TOKEN is a constant"),
        ("NO_REPLY: because", "NO_REPLY: because"),
        ("  Plain text", "  Plain text"),
    ],
)
def test_leading_token_is_stripped_from_real_text(text: str, visible: str) -> None:
    assert strip_leading_silent_token(text) == visible


def test_custom_token() -> None:
    assert is_silent_reply("heartbeat_ok", token="HEARTBEAT_OK")
    assert not is_silent_reply("NO_REPLY", token="HEARTBEAT_OK")


# --- SilentStreamFilter ------------------------------------------------------------------


def _feed_all(deltas: list[str]) -> tuple[list[str | None], str]:
    f = SilentStreamFilter()
    shown: list[str | None] = []
    cumulative = ""
    for delta in deltas:
        cumulative += delta
        shown.append(f.feed(cumulative))
    return shown, f.finish()


def test_lead_fragments_split_across_deltas_never_show() -> None:
    shown, final = _feed_all(["N", "O", "_", "RE", "PL", "Y"])
    assert shown == [None] * 6
    assert final == ""


def test_lowercase_fragments_are_held_too() -> None:
    shown, final = _feed_all(["no", "_re", "ply", "  \n"])
    assert shown == [None] * 4
    assert final == ""


def test_leading_token_is_stripped_once_real_text_follows() -> None:
    shown, final = _feed_all(["NO", "_REP", "LY\n\n", "Hel", "lo"])
    assert shown == [None, None, None, "Hel", "Hello"]
    assert final == "Hello"


def test_text_is_released_as_soon_as_it_cannot_be_the_token() -> None:
    shown, final = _feed_all(["N", "o", ",", " thanks"])
    assert shown == [None, None, "No,", "No, thanks"]
    assert final == "No, thanks"


def test_a_held_fragment_that_ends_the_stream_is_shown_at_finish() -> None:
    shown, final = _feed_all(["NO"])
    assert shown == [None]
    assert final == "NO"


def test_trailing_token_after_text_streams_unchanged() -> None:
    shown, final = _feed_all(["Done.", " NO_", "REPLY"])
    assert shown == ["Done.", "Done. NO_", "Done. NO_REPLY"]
    assert final == "Done. NO_REPLY"


def test_json_envelope_streamed_in_pieces_never_shows() -> None:
    shown, final = _feed_all(['{"act', 'ion": "NO', "_REPL", 'Y"', "}"])
    assert shown == [None] * 5
    assert final == ""


def test_json_that_is_not_the_envelope_is_released() -> None:
    shown, final = _feed_all(['{"act', 'ion": "NOPE"}'])
    assert shown == [None, '{"action": "NOPE"}']
    assert final == '{"action": "NOPE"}'


def test_whitespace_only_is_held() -> None:
    shown, final = _feed_all(["  ", "\n"])
    assert shown == [None, None]
    assert final == ""


def test_a_rewrite_is_classified_again() -> None:
    f = SilentStreamFilter()
    assert f.feed("Hello") == "Hello"
    assert f.feed("NO_REPLY") is None
    assert f.feed("NO_REPLY\nHi") == "Hi"
    assert f.feed("NO_REPLY\nHi there") == "Hi there"
    assert f.feed("Bye") == "Bye"
    assert f.finish() == "Bye"


def test_finish_accepts_the_final_text() -> None:
    f = SilentStreamFilter()
    assert f.feed("NO_RE") is None
    assert f.finish("NO_REPLY ok") == "ok"


_TOKEN_CASES = st.lists(st.booleans(), min_size=len(SILENT_TOKEN), max_size=len(SILENT_TOKEN)).map(
    lambda flags: "".join(c.lower() if f else c for c, f in zip(SILENT_TOKEN, flags, strict=True))
)
_WS = st.text(alphabet=" \t\n", max_size=3)
_SILENT_TEXTS = st.one_of(
    st.builds(
        lambda lead, tokens, tail: lead + " ".join(tokens) + tail,
        _WS,
        st.lists(_TOKEN_CASES, min_size=1, max_size=3),
        _WS,
    ),
    st.builds(
        lambda a, b, c, d, tok: f'{a}{{{b}"action"{c}:{d}"{tok}"}}{a}',
        _WS,
        _WS,
        _WS,
        _WS,
        _TOKEN_CASES,
    ),
)
_PIECES = st.sampled_from(
    ["N", "NO", "NO_", "NO_RE", "no_reply", SILENT_TOKEN, " ", "\n", "{", '"action"', "hi", "."]
)
_TEXTS = st.one_of(
    _SILENT_TEXTS,
    st.lists(_PIECES, max_size=6).map("".join),
    st.builds(lambda s, t: s + t, _SILENT_TEXTS, st.text(max_size=12)),
    st.text(max_size=20),
)
_LEADING_TOKENS_RE = re.compile(rf"\s*(?:{SILENT_TOKEN}\s*)+", re.IGNORECASE)


@st.composite
def _split(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(_TEXTS)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=8)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@given(_split())
def test_streaming_never_leaks_the_token_and_converges(case: tuple[str, list[str]]) -> None:
    text, deltas = case
    shown, final = _feed_all(deltas)
    visible = [s for s in shown if s is not None]
    if is_silent_reply(text) or not text.strip():
        assert visible == []
        assert final == ""
        return
    assert final == strip_leading_silent_token(text)
    # What is shown only grows, and ends up as the final text.
    for earlier, later in itertools.pairwise([*visible, final]):
        assert later.startswith(earlier)
    # The final text is the whole text, less at most a leading run of tokens.
    assert text.endswith(final)
    removed = text[: len(text) - len(final)]
    assert removed == "" or _LEADING_TOKENS_RE.fullmatch(removed)
    if text.lstrip()[: len(SILENT_TOKEN)].upper() != SILENT_TOKEN:
        assert final == text


# --- ChatDeltaThrottle -------------------------------------------------------------------


def test_first_offer_emits_at_once() -> None:
    throttle = ChatDeltaThrottle()
    assert throttle.offer("He", 1000) == DeltaEmit(text="He", delta_text="He")


def test_offers_inside_the_interval_wait_and_merge() -> None:
    throttle = ChatDeltaThrottle()
    throttle.offer("He", 0)
    assert throttle.offer("Hel", 50) is None
    assert throttle.offer("Hell", 149) is None
    assert throttle.has_pending()
    assert throttle.due_ms() == CHAT_DELTA_INTERVAL_MS
    assert throttle.offer("Hello", 150) == DeltaEmit(text="Hello", delta_text="llo")
    assert not throttle.has_pending()
    assert throttle.due_ms() is None


def test_flush_emits_pending_regardless_of_the_interval() -> None:
    throttle = ChatDeltaThrottle()
    throttle.offer("Hello", 0)
    assert throttle.offer("Hello world", 10) is None
    assert throttle.flush(20) == DeltaEmit(text="Hello world", delta_text=" world")
    assert throttle.flush(30) is None
    # The flush counts as an emission for the interval.
    assert throttle.offer("Hello world!", 100) is None
    assert throttle.offer("Hello world!!", 170) == DeltaEmit("Hello world!!", "!!")


def test_non_prefix_rewrite_is_a_replace() -> None:
    throttle = ChatDeltaThrottle()
    throttle.offer("Hello wrold", 0)
    assert throttle.offer("Hello world", 200) == DeltaEmit(
        text="Hello world", delta_text="Hello world", replace=True
    )


def test_unchanged_text_emits_nothing() -> None:
    throttle = ChatDeltaThrottle()
    assert throttle.offer("", 0) is None
    throttle.offer("Hi", 0)
    assert throttle.offer("Hi", 500) is None
    throttle.offer("Hi!", 600)
    assert throttle.offer("Hi!!", 610) is None
    assert throttle.offer("Hi!", 620) is None  # back to what was sent: nothing pending
    assert throttle.flush(630) is None


@given(
    st.lists(
        st.tuples(st.integers(0, 400), st.text(alphabet="ab", max_size=3), st.booleans()),
        max_size=30,
    )
)
def test_throttle_spacing_and_reconstruction(steps: list[tuple[int, str, bool]]) -> None:
    throttle = ChatDeltaThrottle()
    now = 0
    text = ""
    rebuilt = ""
    offer_times: list[int] = []
    for gap, extra, flush in steps:
        now += gap
        text += extra
        emit = throttle.flush(now) if flush else throttle.offer(text, now)
        if emit is None:
            continue
        if not flush:
            offer_times.append(now)
        rebuilt = emit.delta_text if emit.replace else rebuilt + emit.delta_text
        assert rebuilt == emit.text
        assert not emit.replace  # text only grows here
    for a, b in itertools.pairwise(offer_times):
        assert b - a >= CHAT_DELTA_INTERVAL_MS
    final = throttle.flush(now + 1)
    if final is not None:
        rebuilt += final.delta_text
    assert rebuilt == throttle.emitted_text
    assert not throttle.has_pending()


# --- messaging dedupe --------------------------------------------------------------------


def test_normalize_for_dedupe() -> None:
    assert normalize_for_dedupe("  Hello   🎉 World!\n\nBye 👋🏽 ") == "hello world! bye"
    assert normalize_for_dedupe("") == ""
    assert normalize_for_dedupe("✅ Done ❤️") == "done"


def test_dedupe_removes_contained_and_containing_texts() -> None:
    sent = ["I've booked the table for 7pm 🍽️", "Short"]
    payloads = [
        ReplyPayload(text="i've booked the   table for 7pm"),  # same text, normalised
        ReplyPayload(text="Great news: I've booked the table for 7pm. Enjoy!"),  # contains
        ReplyPayload(text="booked the table"),  # contained
        ReplyPayload(text="Short"),  # under 10 characters: never a duplicate
        ReplyPayload(text="Something else entirely"),
        ReplyPayload(mediaUrl="https://example.invalid/a.png"),
    ]
    kept = dedupe_against_sent(payloads, sent)
    assert [p.text for p in kept] == ["Short", "Something else entirely", None]
    assert dedupe_against_sent(payloads, []) == payloads


def test_is_messaging_duplicate_needs_ten_characters_on_both_sides() -> None:
    assert not is_messaging_duplicate("hello", ["hello"])
    assert not is_messaging_duplicate("hello there, friend", ["hello"])
    assert is_messaging_duplicate("hello there, friend", ["Hello there"])


# --- final payloads ----------------------------------------------------------------------


def _build(**overrides: object) -> list[ReplyPayload]:
    params: dict[str, object] = {
        "assistant_texts": [],
        "reasoning_text": None,
        "reasoning_mode": "off",
        "tool_summaries": [],
        "verbose": False,
        "model_error": None,
        "tool_errors": [],
        "messaging_sent_texts": [],
        "messaging_sent_to_origin": False,
    }
    params.update(overrides)
    return build_final_payloads(**params)  # type: ignore[arg-type]


_READ_FAILED = ToolErrorInfo("read", "📖 read: notes.md", "ENOENT: no such file", mutating=False)
_WRITE_FAILED = ToolErrorInfo("write", "✍️ write: out.txt", "EACCES: permission denied", True)


def test_payload_wire_shape_omits_defaults() -> None:
    assert msgspec.json.encode(ReplyPayload(text="hi")) == b'{"text":"hi"}'
    assert msgspec.json.encode(ReplyPayload(text="x", isError=True)) == (
        b'{"text":"x","isError":true}'
    )


def test_assistant_texts_become_payloads_and_silent_ones_drop() -> None:
    payloads = _build(
        assistant_texts=["  Hello  ", "NO_REPLY", "", "NO_REPLY\nSecond", "Bye NO_REPLY"]
    )
    assert payloads == [
        ReplyPayload(text="Hello"),
        ReplyPayload(text="Second"),
        ReplyPayload(text="Bye NO_REPLY"),
    ]


def test_reasoning_on_is_a_separate_thinking_payload() -> None:
    payloads = _build(
        assistant_texts=["Answer"], reasoning_text="step one\n\nstep two", reasoning_mode="on"
    )
    assert payloads == [
        ReplyPayload(text="Thinking\n\n_step one_\n\n_step two_", isReasoning=True),
        ReplyPayload(text="Answer"),
    ]
    assert format_reasoning("  ") == ""


@pytest.mark.parametrize("mode", ["off", "stream"])
def test_reasoning_off_or_streamed_is_not_a_final_payload(mode: str) -> None:
    payloads = _build(assistant_texts=["Answer"], reasoning_text="thoughts", reasoning_mode=mode)
    assert payloads == [ReplyPayload(text="Answer")]


def test_tool_summaries_only_when_verbose() -> None:
    summaries = ["🛠️ exec: ls", "📖 read: a.txt"]
    assert _build(assistant_texts=["Done"], tool_summaries=summaries) == [ReplyPayload(text="Done")]
    assert [
        p.text for p in _build(assistant_texts=["Done"], tool_summaries=summaries, verbose=True)
    ] == [
        "🛠️ exec: ls",
        "📖 read: a.txt",
        "Done",
    ]


def test_model_error_is_an_error_payload_and_its_echo_is_dropped() -> None:
    error = "The AI service is temporarily overloaded. Please try again in a moment."
    payloads = _build(assistant_texts=[error.upper(), "partial answer"], model_error=error)
    assert payloads == [ReplyPayload(text=error, isError=True), ReplyPayload(text="partial answer")]


def test_messaging_duplicates_are_removed() -> None:
    payloads = _build(
        assistant_texts=["I sent the summary to the team channel.", "Anything else?"],
        messaging_sent_texts=["I sent the summary to the team channel"],
    )
    assert payloads == [ReplyPayload(text="Anything else?")]


def test_message_tool_send_to_origin_suppresses_every_final_reply() -> None:
    payloads = _build(
        assistant_texts=["Here you go"],
        model_error="boom",
        tool_errors=[_WRITE_FAILED],
        messaging_sent_texts=["Here you go, sent directly"],
        messaging_sent_to_origin=True,
    )
    assert payloads == []


def test_tool_error_fallback_when_nothing_renderable_is_left() -> None:
    payloads = _build(assistant_texts=["NO_REPLY"], tool_errors=[_READ_FAILED])
    assert payloads == [ReplyPayload(text="⚠️ 📖 read: notes.md failed", isError=True)]


def test_tool_error_fallback_details_only_when_verbose() -> None:
    payloads = _build(tool_errors=[_READ_FAILED], verbose=True)
    assert payloads == [
        ReplyPayload(text="⚠️ 📖 read: notes.md failed: ENOENT: no such file", isError=True)
    ]


def test_non_mutating_tool_error_is_hidden_behind_a_reply() -> None:
    assert _build(assistant_texts=["Could not find notes."], tool_errors=[_READ_FAILED]) == [
        ReplyPayload(text="Could not find notes.")
    ]


def test_non_mutating_tool_error_is_hidden_after_a_message_tool_send() -> None:
    payloads = _build(
        tool_errors=[_READ_FAILED], messaging_sent_texts=["Posted the update to #ops"]
    )
    assert payloads == []


def test_recoverable_non_mutating_error_is_not_surfaced() -> None:
    failed = ToolErrorInfo("read", "📖 read", "path is required", mutating=False)
    assert _build(tool_errors=[failed]) == []


def test_mutating_tool_error_is_always_reported() -> None:
    payloads = _build(
        assistant_texts=["I saved the file for you."], tool_errors=[_READ_FAILED, _WRITE_FAILED]
    )
    assert payloads == [
        ReplyPayload(text="I saved the file for you."),
        ReplyPayload(text="⚠️ ✍️ write: out.txt failed", isError=True),
    ]


def test_mutating_tool_error_is_reported_after_a_message_tool_send_elsewhere() -> None:
    payloads = _build(
        tool_errors=[_WRITE_FAILED], messaging_sent_texts=["Posted the update to #ops"]
    )
    assert payloads == [ReplyPayload(text="⚠️ ✍️ write: out.txt failed", isError=True)]


def test_fallback_uses_the_tool_name_without_a_summary_and_is_not_repeated() -> None:
    failed = ToolErrorInfo("exec", "", "exit 1", mutating=True)
    payloads = _build(assistant_texts=["⚠️ exec failed"], tool_errors=[failed])
    assert payloads == [ReplyPayload(text="⚠️ exec failed")]
