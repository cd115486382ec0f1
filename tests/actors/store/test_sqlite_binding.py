"""The SQLite writer binds bytes and None without the sqlite3 module's adaptation look-up
(`actors.store._sqlite`: adapters that hand them back as they are), and stores what it
stored before, byte for byte: a run's writes (row, transcript entries and their search
rows, journal rows, usage and audit rows, many of them NULL or BLOB) give the same
database with and without those adapters."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actors.store import JournalRow, _audit, _sqlite, usage_write
from actors.store._ops import AddAudit, Append, Group, PutRow, PutRun, Write
from runtime.llm import AssistantMessage, TextContent, Usage, UserMessage
from runtime.llm._types import UsageCost
from runtime.model import parse_config
from runtime.sessions import SessionRow, TranscriptBuilder, encode_entry, encode_session_row

T0 = 1_767_225_600_000
CONFIG = parse_config(
    {
        "models": {
            "providers": {
                "local": {"api": "local", "models": [{"id": "echo", "cost": {"input": 1}}]}
            }
        }
    }
)
ADAPTED: list[tuple[type[Any], type[Any]]] = [
    (bytes, sqlite3.PrepareProtocol),
    (type(None), sqlite3.PrepareProtocol),
]


class _Session:
    agent_id = "main"
    key = "agent:main:u"


END = ("agent.run.finished", "succeeded")


def audit(t: int, i: int, seq: int, action: str, status: str) -> tuple[object, ...]:
    """An audit row of run `r<i>` (`_audit.COLUMNS` without the event id): no error, tool
    call or tool (NULLs)."""
    run = f"r{i}"
    event = (f"{t}:{run}:{seq}:{action}", seq, t, "agent_run", action, status, None)
    return (*event, "agent", "main", "main", _Session.key, "s1", run, None, None)


def run_writes(n: int) -> list[Write]:
    """What `n` runs of a session hand the writer: its row, two entries a run, the run's
    journal rows (accepted: no end; ended), its usage and its two audit rows."""
    builder = TranscriptBuilder(clock=lambda: T0)
    writes: list[Write] = []
    for i in range(n):
        t = T0 + i * 1000
        user = UserMessage(content=f"question {i}", timestamp=t)
        reply = AssistantMessage(
            content=[TextContent(f"answer {i}")],
            timestamp=t + 5,
            provider="local",
            model="echo",
            usage=Usage(input=10, output=3, cost=UsageCost(input=0.5, total=0.5)),
            stopReason="stop",
        )
        entries = [builder.add_message(user), builder.add_message(reply)]
        row = SessionRow(
            key=_Session.key, sessionId="s1", createdAt=T0, updatedAt=t, agentId="main"
        )
        body = b'{"kind":"chat","sessionKey":"agent:main:u"}'
        usage = usage_write(_Session(), "s1", [user, reply], CONFIG)
        assert usage is not None
        writes += [
            PutRun(
                JournalRow(f"r{i}", "chat", _Session.key, "s1", "main", "accepted", t, None, body)
            ),
            Group(
                (
                    Append("s1", tuple((e.id, encode_entry(e)) for e in entries)),
                    PutRow(row.key, "main", "s1", t, encode_session_row(row)),
                    usage,
                    PutRun(
                        JournalRow(
                            f"r{i}", "chat", _Session.key, "s1", "main", "ok", t, t + 9, body
                        )
                    ),
                )
            ),
            AddAudit(
                [audit(t, i, 1, "agent.run.started", "started"), audit(t + 9, i, 4, *END)], t + 9
            ),
        ]
    return writes


def stored(path: Path) -> list[str]:
    """The database as SQL text: every table's rows (blobs in hex, NULLs as NULL)."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def write(path: Path, writes: list[Write]) -> None:
    conn = _sqlite.open_writer(path)
    try:
        next_seq: dict[str, int] = {}
        for i in range(0, len(writes), 7):  # several batches
            _sqlite.write_batch(conn, writes[i : i + 7], next_seq, None, _audit.AuditBounds())
    finally:
        conn.close()


def test_bytes_and_none_are_handed_back_by_an_adapter() -> None:
    for value in (b'{"type":"message"}', None):
        adapter = sqlite3.adapters[(type(value), sqlite3.PrepareProtocol)]
        assert adapter(value) is value


def test_the_stored_data_is_the_same_without_the_adapters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(range(10**6))
    monkeypatch.setattr(_audit, "_event_ids", lambda n: [f"e{next(ids)}" for _ in range(n)])
    writes = run_writes(9)
    write(tmp_path / "adapted.db", writes)
    ids = iter(range(10**6))
    for key in ADAPTED:
        monkeypatch.delitem(sqlite3.adapters, key)
    write(tmp_path / "plain.db", writes)
    adapted, plain = stored(tmp_path / "adapted.db"), stored(tmp_path / "plain.db")
    assert adapted == plain
    assert any('INSERT INTO "entries"' in line and "X'7B" in line for line in adapted)
    assert any('INSERT INTO "audit_events"' in line and "NULL" in line for line in adapted)
    assert any('INSERT INTO "usage_buckets"' in line for line in adapted)
    assert any('INSERT INTO "search_entries"' in line for line in adapted)
