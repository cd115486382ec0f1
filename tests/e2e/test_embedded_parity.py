"""The embedded runtime runs the same turn as the gateway: the same scripted
conversation (a tool call, a plugin hook, compactions) through a real gateway on a loopback
port and through `open_embedded_runtime` gives the same agent event sequence and the same
transcript; and an embedded app that keeps its transcripts in a store (a SQLite file)
reopens a session where it left it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from actors import open_store
from runtime import open_embedded_runtime, parse_config
from runtime.model._config import Config
from runtime.model._plugins import load_plugins
from runtime.sessions._sessions import CompactionEntry, MessageEntry, TranscriptEntry
from tests.conftest import open_client, running_gateway

PLUGIN = """
from runtime.plugin_sdk import PluginApi

SEEN = []


def _before_prompt_build(event, ctx):
    return {"prependContext": "[hooked]"}


def _after_tool_call(event, ctx):
    SEEN.append(event.toolName)


def register(api: PluginApi) -> None:
    api.on("before_prompt_build", _before_prompt_build)
    api.on("after_tool_call", _after_tool_call)
"""

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa")


def _long(i: int) -> str:
    return f"turn {i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60))


SCRIPT = [
    'hi [[tool:write {"path":"notes.txt","content":"hello"}]]',
    *(_long(i) for i in range(7)),
]
"""A tool call, then long turns in a small context window: compactions after runs 5 and 6."""


def _config(plugin: Path) -> Config:
    return parse_config(
        {
            "agents": {"defaults": {"maxConcurrent": 8}},
            "models": {
                "providers": {
                    "local": {"api": "local", "models": [{"id": "echo", "contextWindow": 3000}]}
                }
            },
            "plugins": {"load": [str(plugin)]},
        }
    )


def _shape(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An agent event without what differs from run to run (times, ids)."""
    drop = {"startedAt", "endedAt", "ts", "toolCallId", "durationMs"}
    data = {k: v for k, v in event["data"].items() if k not in drop}
    return event["stream"], data


def _transcript(entries: list[TranscriptEntry]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    position = {e.id: i for i, e in enumerate(entries)}
    for entry in entries:
        if isinstance(entry, MessageEntry):
            m = entry.message
            content = getattr(m, "content", None)
            text = (
                content
                if isinstance(content, str)
                else [getattr(c, "text", getattr(c, "name", None)) for c in content or ()]
            )
            role = type(m).__struct_config__.tag
            out.append(("message", role, str(text), entry.idempotencyKey is not None))
        elif isinstance(entry, CompactionEntry):
            out.append(("compaction", position[entry.firstKeptEntryId], entry.summary))
    return out


async def _through_gateway(tmp_path: Path, plugin: Path) -> tuple[list[Any], list[Any]]:
    events: list[dict[str, Any]] = []

    def on_event(event: str, payload: Any, seq: int | None) -> None:
        if event == "agent":
            events.append(payload)

    async with running_gateway(tmp_path / "gw", _config(plugin)) as gw:
        async with open_client(gw, on_event=on_event, caps=["tool-events"]) as client:
            for i, message in enumerate(SCRIPT):
                final = await client.request(
                    "agent",
                    {"message": message, "idempotencyKey": f"run-{i}", "sessionKey": "parity"},
                    expect_final=True,
                )
                assert final["status"] == "ok"
        store = gw.supervisor.store
        await store.flush()
        row = await store.get_session("agent:main:parity")
        assert row is not None
        entries = await store.load_entries(row.sessionId)
    return [_shape(e) for e in events], _transcript(entries)


async def _through_embedded(tmp_path: Path, plugin: Path) -> tuple[list[Any], list[Any]]:
    events: list[dict[str, Any]] = []
    async with open_store(tmp_path / "embedded.db") as store:
        async with open_embedded_runtime(
            _config(plugin), store=store, state_dir=tmp_path / "embedded"
        ) as rt:
            [loaded] = await load_plugins([plugin], rt.services.hooks, rt.services.plugins)
            assert loaded.ok, loaded.error
            for i, message in enumerate(SCRIPT):
                result = await rt.run_turn(
                    message, session_key="parity", run_id=f"run-{i}", on_event=events.append
                )
                assert result.status == "ok", result.error
        row = await store.get_session("agent:main:parity")
        assert row is not None
        entries = await store.load_entries(row.sessionId)
    return [_shape(e) for e in events], _transcript(entries)


async def test_a_scripted_turn_gives_the_same_events_and_transcript_in_both_hosts(
    tmp_path: Path,
) -> None:
    plugin = tmp_path / "parity_plugin.py"
    plugin.write_text(PLUGIN)
    with trio.fail_after(60):
        gw_events, gw_transcript = await _through_gateway(tmp_path, plugin)
        em_events, em_transcript = await _through_embedded(tmp_path, plugin)
    streams = {stream for stream, _ in gw_events}
    assert {"lifecycle", "assistant", "tool", "compaction"} <= streams
    phases = [d.get("phase") for s, d in gw_events if s == "lifecycle"]
    assert phases == ["start", "end"] * len(SCRIPT)
    assert em_events == gw_events
    assert any("[hooked]" in row[2] for row in gw_transcript if row[:2] == ("message", "user"))
    assert any(row[0] == "compaction" for row in gw_transcript)
    assert em_transcript == gw_transcript


async def test_an_embedded_session_reopens_from_its_store(tmp_path: Path) -> None:
    config = parse_config({})
    with trio.fail_after(30):
        async with (
            open_store(tmp_path / "s.db") as store,
            open_embedded_runtime(config, store=store, state_dir=tmp_path) as rt,
        ):
            first = await rt.run_turn("remember the owl", session_key="notes")
        async with open_store(tmp_path / "s.db") as store:
            async with open_embedded_runtime(config, store=store, state_dir=tmp_path) as rt:
                assert rt.transcript("notes") == []  # loaded on first use
                second = await rt.run_turn("and now?", session_key="notes")
                history = rt.transcript("notes")
            row = await store.get_session("agent:main:notes")
    assert first.session_id == second.session_id
    texts = [str(getattr(m, "content", "")) for m in history]
    roles = [type(m).__struct_config__.tag for m in history]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert "remember the owl" in texts[0] and "and now?" in texts[2]
    assert row is not None and row.lastRunId == second.run_id and row.status == "done"
