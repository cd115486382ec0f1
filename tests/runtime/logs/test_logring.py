"""The log ring behind `logs.tail`: bounded in bytes and in lines, cursors, the log file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from runtime.logs import _logring as logring
from runtime.logs._logring import MAX_LINE_BYTES, LogRing, format_record, read_file_tail


def record(
    message: str, level: int = logging.INFO, name: str = "clawlane.gateway"
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


def test_a_line_has_openclaws_file_log_shape() -> None:
    line = json.loads(format_record(record("hello", logging.WARNING), "host"))
    assert line["message"] == line["0"] == "hello"
    assert line["_meta"]["logLevelName"] == "WARN" and line["subsystem"] == "gateway"
    assert line["time"].endswith("+00:00") and line["_meta"]["date"].endswith("Z")


def test_the_ring_holds_at_most_its_count_and_its_bytes() -> None:
    ring = LogRing(max_lines=3, max_bytes=10_000)
    for i in range(10):
        ring.emit(record(f"line {i}"))
    tail = ring.read_tail(cursor=None)
    assert [json.loads(x)["message"] for x in tail.lines] == ["line 7", "line 8", "line 9"]
    small = LogRing(max_lines=1000, max_bytes=2_000)
    for i in range(100):
        small.emit(record("x" * 200 + str(i)))
    stats = small.statistics()
    assert stats["bytes"] <= 2_000 and stats["dropped"] > 0 and stats["lines"] < 100


def test_a_huge_message_is_cut() -> None:
    line = format_record(record("y" * (MAX_LINE_BYTES * 4)), "h")
    assert len(line.encode()) <= MAX_LINE_BYTES + 1024


def test_a_cursor_follows_new_lines_and_a_lost_cursor_resets() -> None:
    ring = LogRing(max_lines=5)
    ring.emit(record("a"))
    first = ring.read_tail(cursor=None)
    ring.emit(record("b"))
    ring.emit(record("c"))
    after = ring.read_tail(cursor=first.cursor)
    assert [json.loads(x)["message"] for x in after.lines] == ["b", "c"] and not after.reset
    assert ring.read_tail(cursor=after.cursor).lines == []
    limited = ring.read_tail(cursor=first.cursor, limit=1)
    assert len(limited.lines) == 1 and limited.truncated
    assert [json.loads(x)["message"] for x in ring.read_tail(cursor=limited.cursor).lines] == ["c"]
    for i in range(10):
        ring.emit(record(f"n{i}"))
    lost = ring.read_tail(cursor=first.cursor)
    assert lost.reset and len(lost.lines) == 5
    assert ring.read_tail(cursor=10**9).reset


def test_the_log_file_is_written_rotated_and_tailed(tmp_path: Path) -> None:
    path = tmp_path / "gw.log"
    ring = LogRing(file=path, max_file_bytes=600)
    for i in range(20):
        ring.emit(record(f"file line {i}"))
    assert (tmp_path / "gw.log.1").exists()
    tail = ring.read_tail(cursor=None, limit=1)
    assert [json.loads(x)["message"] for x in tail.lines] == ["file line 19"]
    assert tail.file == str(path) and tail.truncated
    ring.emit(record("newest"))
    after = ring.read_tail(cursor=tail.cursor)
    assert [json.loads(x)["message"] for x in after.lines] == ["newest"]


def test_a_partial_last_line_waits_for_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "f.log"
    path.write_text('{"message":"whole"}\n{"message":"half')
    tail = read_file_tail(path, cursor=0, limit=10, max_bytes=10_000)
    assert tail.lines == ['{"message":"whole"}'] and tail.cursor == len('{"message":"whole"}\n')
    missing = read_file_tail(tmp_path / "none.log", cursor=None, limit=10, max_bytes=100)
    assert missing.lines == [] and missing.size == 0


def test_two_writers_share_one_file_and_one_rotates_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers of `--workers` append to one file, each on its own descriptor: no line
    is split, one of them rotates the file, and the other follows onto the new one."""
    monkeypatch.setattr(logring, "FILE_CHECK_S", 0.0)  # check before every line
    path = tmp_path / "gw.log"
    rings = [LogRing(file=path, max_file_bytes=2_000), LogRing(file=path, max_file_bytes=2_000)]
    for i in range(120):
        rings[i % 2].emit(record(f"w{i % 2} line {i}"))
    current = [json.loads(x)["message"] for x in path.read_text().splitlines()]
    archive = [json.loads(x)["message"] for x in (tmp_path / "gw.log.1").read_text().splitlines()]
    assert current[-2:] == ["w0 line 118", "w1 line 119"]  # both write to the new file
    assert path.stat().st_size < 2_000 + 400  # rotated at the bound (plus one line)
    kept = archive + current  # the lines of the last two files, in order, none split
    assert kept == [f"w{i % 2} line {i}" for i in range(120 - len(kept), 120)]
