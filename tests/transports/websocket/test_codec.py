"""The RFC 6455 frame codec both WebSocket ends share (`transports.websocket._codec`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transports.websocket._codec import (
    CLOSE,
    PING,
    Control,
    FrameError,
    FrameParser,
    MessageTooBig,
    client_frame,
    close_frame,
    close_payload,
    text_frame_header,
)


def _server_frame(payload: bytes) -> bytes:
    return text_frame_header(len(payload)) + payload


@given(st.lists(st.text(max_size=300), max_size=5), st.integers(min_value=1, max_value=64))
def test_client_frames_parse_back_to_their_messages_in_any_chunking(
    texts: list[str], chunk: int
) -> None:
    wire = b"".join(client_frame(t.encode()) for t in texts)
    parser = FrameParser(masked=True, text=True, max_message_bytes=1 << 20)
    got: list[str | bytes | Control] = []
    for i in range(0, len(wire), chunk):
        parser.feed(wire[i : i + chunk])
        while (message := parser.next_message()) is not None:
            got.append(message)
    assert got == texts
    assert parser.held == 0


@given(st.lists(st.binary(max_size=70_000), max_size=3))
def test_server_frames_parse_back_to_their_payloads(payloads: list[bytes]) -> None:
    parser = FrameParser(masked=False, text=False)
    parser.feed(b"".join(_server_frame(p) for p in payloads))
    got = []
    while (message := parser.next_message()) is not None:
        got.append(message)
    assert got == payloads


def _fragment(payload: bytes, opcode: int, fin: bool) -> bytes:
    assert len(payload) < 126
    return bytes(((0x80 if fin else 0) | opcode, len(payload))) + payload


_PIECES = st.one_of(
    st.binary(max_size=70_000).map(lambda p: ("whole", p)),
    st.binary(max_size=100).map(lambda p: ("fragmented", p)),
    st.binary(max_size=100).map(lambda p: ("ping", p)),
)


@given(st.lists(_PIECES, max_size=6), st.integers(min_value=1, max_value=70_000))
def test_the_fast_path_and_the_parser_together_give_every_message_in_order(
    pieces: list[tuple[str, bytes]], chunk: int
) -> None:
    wire = b""
    want: list[object] = []
    for kind, p in pieces:
        if kind == "whole":
            wire += _server_frame(p)
            want.append(p)
        elif kind == "fragmented":
            wire += _fragment(p[:3], 0x1, False) + _fragment(p[3:], 0x0, True)
            want.append(p)
        else:
            wire += _fragment(p, PING, True)
            want.append(("ping", p))
    parser = FrameParser(masked=False, text=False)
    got: list[object] = []

    def on_message(view: memoryview) -> None:
        got.append(bytes(view))

    for i in range(0, len(wire), chunk):
        parser.feed(wire[i : i + chunk])
        while True:
            parser.take_whole(on_message)
            message = parser.next_message()
            if message is None:
                break
            got.append(("ping", message.payload) if isinstance(message, Control) else message)
    assert got == want
    assert parser.held == 0


def test_the_fast_path_leaves_what_is_not_its_own_to_the_parser() -> None:
    """A masked frame (a client's, where a server's is expected) and a frame over the
    limit are left where they are: `next_message` then refuses them as it does."""
    got: list[bytes] = []
    parser = FrameParser(
        masked=False, text=False, received=_server_frame(b"a") + client_frame(b"x")
    )
    parser.take_whole(lambda view: got.append(bytes(view)))
    assert got == [b"a"]
    with pytest.raises(FrameError, match="must not be masked"):
        parser.next_message()
    parser = FrameParser(
        masked=False, text=False, max_message_bytes=4, received=_server_frame(b"hello")
    )
    parser.take_whole(lambda view: got.append(bytes(view)))
    assert got == [b"a"]
    with pytest.raises(MessageTooBig):
        parser.next_message()
    text = FrameParser(masked=False, text=True, received=_server_frame(b"t"))
    text.take_whole(lambda view: got.append(bytes(view)))  # str out: not the fast path's
    assert got == [b"a"] and text.next_message() == "t"


@given(st.binary(max_size=200), st.booleans())
def test_arbitrary_bytes_only_raise_the_documented_errors(data: bytes, masked: bool) -> None:
    parser = FrameParser(masked=masked, text=True, max_message_bytes=100)
    parser.feed(data)
    try:
        while parser.next_message() is not None:
            pass
    except (FrameError, MessageTooBig):
        pass


def test_a_message_over_the_limit_is_refused_before_its_payload_arrives() -> None:
    parser = FrameParser(masked=True, text=True, max_message_bytes=10)
    parser.feed(client_frame(b"x" * 11)[:6])  # the header and the mask only
    with pytest.raises(MessageTooBig):
        parser.next_message()


def test_masking_is_checked_for_each_direction() -> None:
    with pytest.raises(FrameError) as caught:
        FrameParser(masked=True, text=True, received=_server_frame(b"hi")).next_message()
    assert caught.value.code == 1002
    with pytest.raises(FrameError):
        FrameParser(masked=False, text=False, received=client_frame(b"hi")).next_message()


def test_pings_and_closes_come_back_and_pongs_are_dropped() -> None:
    parser = FrameParser(masked=True, text=True)
    parser.feed(client_frame(b"", 0xA) + client_frame(b"p", PING) + client_frame(b"", CLOSE))
    ping = parser.next_message()
    assert isinstance(ping, Control) and ping.opcode == PING and ping.payload == b"p"
    close = parser.next_message()
    assert isinstance(close, Control) and close.opcode == CLOSE


def test_bad_utf8_text_is_1007_and_close_payloads_are_checked() -> None:
    parser = FrameParser(masked=True, text=True, received=client_frame(b"\xff"))
    with pytest.raises(FrameError) as caught:
        parser.next_message()
    assert caught.value.code == 1007
    assert close_payload(close_frame(1000, "bye")[2:]) == (1000, "bye")
    with pytest.raises(FrameError):
        close_payload(b"\x03")
    with pytest.raises(FrameError):
        close_payload((1005).to_bytes(2, "big"))
