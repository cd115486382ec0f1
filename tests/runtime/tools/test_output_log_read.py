"""`OutputLog`'s two-step read (`peek`, then `mark_read` once the poll's result is kept, as
OpenClaw 2026.9.6 marks a poll's output read on its tool-result acknowledgement): positions
are stream offsets, so output appended and buffer trims between the two never lose unread
bytes, and a drop is forgotten only when the peek saw it."""

from __future__ import annotations

from runtime.tools._output_log import OutputLog


def test_a_peek_marks_nothing_read_and_its_mark_only_what_it_returned() -> None:
    log = OutputLog(cap=100, pending_cap=50)
    log.append(b"first ")
    assert log.peek() == ("first ", False, 6)
    assert log.peek() == ("first ", False, 6)  # not read until marked
    log.append(b"second")  # appended between the peek and its mark
    log.mark_read(6)
    assert log.peek() == ("second", False, 12)
    log.mark_read(6)  # a stale mark again: nothing more
    assert bytes(log.pending) == b"second"
    log.mark_read(12)
    assert log.peek() == ("", False, 12)


def test_a_trim_between_peek_and_mark_keeps_the_unread_bytes() -> None:
    log = OutputLog(cap=100, pending_cap=8)
    log.append(b"abcdef")
    text, dropped, upto = log.peek()
    assert (text, dropped, upto) == ("abcdef", False, 6)
    log.append(b"ghij")  # pending trimmed to "cdefghij": 2 peeked bytes dropped meanwhile
    assert log.peek() == ("cdefghij", True, 10)
    log.mark_read(upto)  # drops "cdef" (offsets 2..6), keeps "ghij"
    # The trim dropped only bytes the peek had returned: nothing unread was lost.
    assert log.drain() == ("ghij", False)
    assert log.peek() == ("", False, 10)


def test_a_trim_past_the_peeked_offset_deletes_nothing_unread() -> None:
    log = OutputLog(cap=100, pending_cap=4)
    log.append(b"ab")
    upto = log.peek()[2]
    log.append(b"cdefgh")  # pending trimmed to "efgh": the peeked bytes and "cd" gone
    assert bytes(log.pending) == b"efgh"
    log.mark_read(upto)
    assert bytes(log.pending) == b"efgh" and log.pending_dropped  # "cd" was never seen
    assert log.peek() == ("efgh", True, 8)


def test_a_drop_the_peek_saw_is_forgotten_by_its_mark_a_later_unread_one_is_not() -> None:
    log = OutputLog(cap=100, pending_cap=4)
    log.append(b"abcdef")  # dropped "ab" before the peek
    text, dropped, upto = log.peek()
    assert (text, dropped, upto) == ("cdef", True, 6)
    log.mark_read(upto)
    assert log.peek() == ("", False, 6)
    log.append(b"ghijk")  # a new drop ("g")
    assert log.peek() == ("hijk", True, 11)
    log.append(b"lmnop")  # trims "hijkl" after that peek: "l" unread and lost
    log.mark_read(11)
    assert bytes(log.pending) == b"mnop" and log.pending_dropped
    assert log.drain() == ("mnop", True)


def test_drain_is_peek_and_mark() -> None:
    log = OutputLog(cap=10, pending_cap=4)
    log.append(b"0123456789abc")
    assert log.drain() == ("9abc", True)
    assert log.drain() == ("", False)
    log.append(b"xy")
    assert log.drain() == ("xy", False)
