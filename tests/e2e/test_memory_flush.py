"""The memory flush before compaction on a real gateway (loopback, the `local` model, a small
context window so the session compacts): the silent flush turn writes what the conversation
asked to remember into `memory/YYYY-MM-DD.md` before the summary replaces the history; the
run shows it as OpenClaw does (`run_status` `memory_flushing` then `preparing_context`), not
as a reply nor in the transcript; it runs at most once per compaction cycle; a new session
finds the saved fact with `memory_search`; the ledger lives in the session row as OpenClaw's
`memoryFlush`, so a restart does not flush again in the same cycle; `memoryFlush.enabled:
false` turns it off; a `memoryFlush.model` that cannot run is logged (as a failure the ledger
counts, retried at most 3 times in a cycle) and changes nothing else."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.llm._types import UserMessage
from runtime.sessions._sessions import CompactionEntry, MemoryFlushRecord, MessageEntry
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()  # noqa: SIM905
FACT = "The launch code word is PELICAN"


def long_message(i: int) -> str:
    return f"turn {i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60))


def _config(**flush: Any) -> Any:
    return local_config(
        models__providers__local={
            "api": "local",
            "models": [{"id": "echo", "contextWindow": 12000}],  # budget 6000, keeps 3000
        },
        # flush from 5,500 tokens, compact past 6,000 (tools and prompt: about 2,800)
        agents__defaults__compaction={"memoryFlush": {"softThresholdTokens": 500, **flush}},
    )


async def _ask(client: Any, key: str, run_id: str, message: str) -> dict[str, Any]:
    final: dict[str, Any] = await client.request(
        "agent",
        {"message": message, "idempotencyKey": run_id, "sessionKey": key},
        expect_final=True,
    )
    assert final["status"] == "ok", final
    return final["result"]  # type: ignore[no-any-return]


def _marks(events: Events, run_id: str) -> list[str]:
    """The run's flush and compaction events, in order."""
    out = []
    for payload in run_events(events, run_id):
        stream, data = payload["stream"], payload["data"]
        if stream == "run_status":
            out.append(data["phase"])
        elif stream == "compaction" and data["phase"] == "end" and data["completed"]:
            out.append("compacted")
    return out


async def _converse(
    tmp_path: Path, config: Any, events_sink: Any, until_compactions: int
) -> tuple[list[str], list[Any], list[dict[str, Any]]]:
    key = "agent:main:long"
    run_ids: list[str] = []
    results: list[dict[str, Any]] = []
    async with running_gateway(tmp_path, config) as gw:
        store = gw.supervisor.store
        with trio.fail_after(90):
            async with open_client(gw, caps=["tool-events"], on_event=events_sink) as client:
                for i in range(60):
                    message = long_message(i)
                    if i == 0:
                        message = f"[[remember:{FACT}]] {message}"
                    run_ids.append(f"long-{i}")
                    results.append(await _ask(client, key, f"long-{i}", message))
                    row = await store.get_session(key)
                    assert row is not None
                    if row.compactionCount >= until_compactions:
                        break
                query = json.dumps({"query": "launch code word"})
                await _ask(client, "agent:main:later", "later", f"[[tool:memory_search {query}]]")
        await store.flush()
        row = await store.get_session(key)
        assert row is not None and row.compactionCount >= until_compactions, "never compacted"
        entries = list(await store.load_entries(row.sessionId))
    return run_ids, entries, results


async def test_the_flush_saves_the_fact_before_compaction_once_per_cycle(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    run_ids, entries, results = await _converse(tmp_path, _config(), on_event, 2)

    # in order across the runs: a flush before each compaction, never two in one cycle
    marks = [(run_id, m) for run_id in run_ids for m in _marks(events, run_id)]
    kinds = [m for _r, m in marks]
    assert kinds.count("compacted") >= 2
    cycles: list[list[str]] = [[]]
    for kind in kinds:
        if kind == "compacted":
            cycles.append([])
        elif kind == "memory_flushing":
            cycles[-1].append(kind)
    assert all(cycle == ["memory_flushing"] for cycle in cycles[:-1]), kinds
    assert len(cycles[-1]) <= 1
    # each flush shows as OpenClaw's run status pair, inside one run
    for run_id in {r for r, m in marks if m == "memory_flushing"}:
        phases = [m for m in _marks(events, run_id) if m != "compacted"]
        assert phases == ["memory_flushing", "preparing_context"]

    # the flush turn wrote the fact to today's note, before the first compaction
    today = dt.datetime.now().astimezone().date().isoformat()
    note = tmp_path / "state" / "workspaces" / "main" / "memory" / f"{today}.md"
    assert note.read_text() == f"- {FACT}\n"

    # not a reply: every run answered its own message; no flush text in the stream
    for i, result in enumerate(results):
        assert result["payloads"] == [{"text": f"You said: {long_message(i)}"}], i
    for run_id in run_ids:
        for payload in run_events(events, run_id, "assistant"):
            assert "NO_REPLY" not in payload["data"]["delta"]
        assert not run_events(events, run_id, "tool")  # the flush's write is not streamed
    # nor in the transcript: only the session's own messages and its compactions
    users = [
        e.message.content
        for e in entries
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
    ]
    assert not any("Pre-compaction memory flush" in str(u) for u in users)
    assert len(users) == len(run_ids)
    assert len([e for e in entries if isinstance(e, CompactionEntry)]) >= 2

    # a new session finds what the flush saved
    (found,) = [
        p["data"]
        for p in run_events(events, "later", "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] != "tool_call"
    ]
    details = found["result"]["details"]
    assert details["results"][0]["path"] == f"memory/{today}.md"
    assert "PELICAN" in details["results"][0]["snippet"]


async def test_memory_flush_off_compacts_without_a_flush(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    run_ids, _entries, _results = await _converse(tmp_path, _config(enabled=False), on_event, 1)
    kinds = [m for run_id in run_ids for m in _marks(events, run_id)]
    assert "compacted" in kinds and "memory_flushing" not in kinds
    assert not (tmp_path / "state" / "workspaces" / "main" / "memory").exists()


async def test_a_flush_model_that_cannot_run_leaves_the_runs_and_compaction_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="clawlane.memory.flush")
    events, on_event = recorder_events()
    run_ids, _entries, results = await _converse(
        tmp_path, _config(model="nowhere/no-such-model"), on_event, 1
    )
    kinds = [m for run_id in run_ids for m in _marks(events, run_id)]
    assert "compacted" in kinds and "memory_flushing" not in kinds
    for i, result in enumerate(results):
        assert result["payloads"] == [{"text": f"You said: {long_message(i)}"}], i
    assert "memoryFlush.model 'nowhere/no-such-model' is not usable" in caplog.text
    assert 1 <= caplog.text.count("is not usable") <= 3  # OpenClaw's 3 tries in a cycle


async def test_the_ledger_in_the_session_row_outlives_a_restart(tmp_path: Path) -> None:
    """A flush, the gateway restarted before the session compacts: the next run, still past
    the flush threshold, does not flush again; after the compaction the next cycle does."""
    key = "agent:main:long"
    events, on_event = recorder_events()

    async def ask(gw: Any, i: int) -> None:
        async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
            await _ask(client, key, f"long-{i}", long_message(i))

    def flushed(run_id: str) -> bool:
        return "memory_flushing" in _marks(events, run_id)

    i = 0
    with trio.fail_after(90):
        async with running_gateway(tmp_path, _config()) as gw:
            store = gw.supervisor.store
            while True:  # to a run that flushed and did not compact after
                await ask(gw, i)
                i += 1
                row = await store.get_session(key)
                assert row is not None and i < 60, "never flushed"
                if flushed(f"long-{i - 1}") and "compacted" not in _marks(events, f"long-{i - 1}"):
                    break
            await store.flush()
            row = await store.get_session(key)
            assert row is not None and row.memoryFlush is not None
            assert row.memoryFlush == MemoryFlushRecord("succeeded", row.compactionCount)
            cycle = row.compactionCount
        async with running_gateway(tmp_path, _config()) as gw:
            store = gw.supervisor.store
            await ask(gw, i)  # past the threshold, in the same cycle: no flush
            assert not flushed(f"long-{i}"), _marks(events, f"long-{i}")
            i += 1
            while True:  # on to the compaction, then the next cycle's flush
                row = await store.get_session(key)
                assert row is not None and i < 80, "never flushed again"
                await ask(gw, i)
                i += 1
                if row.compactionCount > cycle and flushed(f"long-{i - 1}"):
                    break
            await store.flush()
            row = await store.get_session(key)
            assert row is not None and row.memoryFlush is not None
            flushed_in = row.memoryFlush.compactionCount
            assert flushed_in is not None and cycle < flushed_in <= row.compactionCount
