"""The SSE decoder (`runtime.llm._sse`): the WHATWG rules, chunking independence, limits.

Pure and synchronous (no I/O, nothing to time out), so these tests carry no `fail_after`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.llm._sse import SSEDecodeError, SSEDecoder, SSEEvent


def decode(*chunks: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    decoder.close()
    return events


def test_data_lines_dispatch_on_a_blank_line() -> None:
    assert decode(b'data: {"a":1}\n\n') == [SSEEvent("message", b'{"a":1}')]


def test_event_names_and_reset_after_dispatch() -> None:
    events = decode(b"event: ping\ndata: {}\n\ndata: x\n\n")
    assert [(e.event, e.data) for e in events] == [("ping", b"{}"), ("message", b"x")]


def test_multiple_data_lines_join_with_lf() -> None:
    assert decode(b"data: a\ndata:b\ndata\n\n")[0].data == b"a\nb\n"


def test_only_one_leading_space_is_stripped() -> None:
    assert decode(b"data:  two\n\n")[0].data == b" two"


def test_comments_and_unknown_fields_are_ignored() -> None:
    assert decode(b": keep-alive\nfoo: bar\ndata: x\n\n") == [SSEEvent("message", b"x")]


def test_an_event_without_data_is_not_dispatched() -> None:
    assert decode(b"event: nothing\n\n: comment\n\n") == []


def test_an_empty_data_field_still_dispatches() -> None:
    assert decode(b"data:\n\n") == [SSEEvent("message", b"")]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_works(newline: bytes) -> None:
    stream = b"event: e" + newline + b"data: 1" + newline + newline
    assert decode(stream) == [SSEEvent("e", b"1")]


def test_crlf_split_across_chunks_is_one_line_break() -> None:
    assert decode(b"data: 1\r", b"\n\r", b"\ndata: 2\r\n\r\n") == [
        SSEEvent("message", b"1"),
        SSEEvent("message", b"2"),
    ]


def test_id_persists_and_retry_needs_digits() -> None:
    events = decode(b"id: 7\nretry: 1500\ndata: a\n\nretry: soon\ndata: b\n\nid: x\0y\ndata: c\n\n")
    assert [(e.id, e.retry) for e in events] == [("7", 1500), ("7", None), ("7", None)]


def test_a_leading_bom_is_skipped_even_when_split() -> None:
    assert decode(b"\xef\xbb", b"\xbfdata: x\n\n") == [SSEEvent("message", b"x")]


def test_an_unterminated_event_is_dropped_at_the_end() -> None:
    assert decode(b"data: 1\n\ndata: 2\n") == [SSEEvent("message", b"1")]
    assert decode(b"data: 1\n\ndata: 2") == [SSEEvent("message", b"1")]


def test_a_line_over_the_limit_raises() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    decoder.feed(b"data: " + b"x" * 60)
    with pytest.raises(SSEDecodeError):
        decoder.feed(b"x" * 60)


def test_an_event_over_the_limit_raises() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    with pytest.raises(SSEDecodeError):
        decoder.feed(b"data: " + b"x" * 60 + b"\ndata: " + b"y" * 60 + b"\n")


_field = st.sampled_from([b"data", b"event", b"id", b"retry", b"", b":", b"data:", b"x"])
_value = st.binary(max_size=12).filter(lambda b: b"\n" not in b and b"\r" not in b)
_newline = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def _streams(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.tuples(_field, _value, _newline, st.booleans()), max_size=20))
    out = b""
    for field, value, newline, blank in lines:
        out += field + b": " + value + newline
        if blank:
            out += newline
    return out


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for p in points:
        pieces.append(data[start:p])
        start = p
    pieces.append(data[start:])
    return pieces


@settings(max_examples=300, deadline=None)
@given(_streams(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_chunking_never_changes_the_events(stream: bytes, cuts: list[int]) -> None:
    # "\r" then "\n" in separate chunks must behave like "\r\n" in one.
    assert decode(*_split(stream, cuts)) == decode(stream)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=16))
def test_arbitrary_bytes_never_raise_within_the_limit(chunks: list[bytes]) -> None:
    events = decode(*chunks)
    assert all(isinstance(e, SSEEvent) for e in events)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b),
        max_size=8,
    )
)
def test_data_round_trips(payloads: list[bytes]) -> None:
    stream = b"".join(b"data:" + p + b"\n\n" for p in payloads)
    expected = [p[1:] if p.startswith(b" ") else p for p in payloads]
    assert [e.data for e in decode(stream)] == expected
