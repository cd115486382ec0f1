"""Replies, prompts and compaction, end to end over real sockets with the `local` model: silent
replies in every position, messaging-tool dedupe, the tool-error fallback reply, the workspace's
bootstrap files and skills in the prompt, reasoning per session level, and a long conversation
that compacts, survives a context overflow and keeps answering."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.llm._types import UserMessage
from runtime.sessions._sessions import CompactionEntry, MessageEntry, build_context
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()  # noqa: SIM905


def chat_events(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [p for (e, p, _s) in events if e == "chat" and p["runId"] == run_id]


def replay_chat(events: Events, run_id: str) -> str:
    text = ""
    for p in chat_events(events, run_id):
        if p["state"] == "delta":
            text = p["deltaText"] if p.get("replace") else text + p["deltaText"]
    return text


def replay_assistant(events: Events, run_id: str) -> str:
    text = ""
    for p in run_events(events, run_id, "assistant"):
        data = p["data"]
        text = data["delta"] if data.get("replace") else text + data["delta"]
    return text


def chat_final(events: Events, run_id: str) -> dict[str, Any]:
    finals = [p for p in chat_events(events, run_id) if p["state"] == "final"]
    assert len(finals) == 1
    return finals[0]


async def ask(client: Any, message: str, run_id: str, **params: Any) -> dict[str, Any]:
    final = await client.request(
        "agent", {"message": message, "idempotencyKey": run_id, **params}, expect_final=True
    )
    assert final["status"] == "ok"
    return final["result"]  # type: ignore[no-any-return]


# --- NO_REPLY ----------------------------------------------------------------------------

SILENT = [
    ("whole", "[[reply:NO_REPLY]]"),
    ("whole-char-by-char", "[[reply:NO_REPLY]] [[chars:1]]"),
    ("lowercase-padded", "[[reply:  no_reply  ]] [[chars:2]]"),
    ("json-envelope", '[[reply:{"action": "NO_REPLY"}]] [[chars:3]]'),
]
SHOWN = [
    ("leading-across-deltas", "[[reply:NO_REPLY Hello there]] [[chars:3]]", "Hello there"),
    ("trailing", "[[reply:Done. NO_REPLY]] [[chars:4]]", "Done. NO_REPLY"),
    ("fragment-only", "[[reply:NO]]", "NO"),
    ("lookalike", "[[reply:NO_REPLY_COUNT is 3]] [[chars:2]]", "NO_REPLY_COUNT is 3"),
]


async def test_no_reply_in_every_position_through_real_runs(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, on_event=on_event) as client:
                for name, message in SILENT:
                    result = await ask(client, message, f"s-{name}", sessionKey=name)
                    assert result["payloads"] == [], name
                for name, message, _shown in SHOWN:
                    result = await ask(client, message, f"v-{name}", sessionKey=name)
                    assert result["payloads"] == [{"text": _shown}], name
    for name, _message in SILENT:
        run = f"s-{name}"
        assert [p for p in chat_events(events, run) if p["state"] == "delta"] == [], name
        assert "message" not in chat_final(events, run), name
        assert run_events(events, run, "assistant"), "the agent stream still has the raw text"
    for name, _message, shown in SHOWN:
        run = f"v-{name}"
        deltas = [p["deltaText"] for p in chat_events(events, run) if p["state"] == "delta"]
        if name != "fragment-only":
            assert replay_chat(events, run) == shown, name
        assert chat_final(events, run)["message"]["content"][0]["text"] == shown, name
        if name == "leading-across-deltas":
            assert not any("N" in d or "_" in d for d in deltas), deltas
        if name == "fragment-only":
            assert deltas == []  # held while it could become the token; the final shows it


# --- messaging tool dedupe and the tool-error fallback -----------------------------------


async def test_a_reply_repeating_the_message_tool_is_not_sent_twice(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    text = "The report is ready for review"
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw, on_event=on_event) as client:
                result = await ask(
                    client,
                    f'[[tool:message {{"text": "{text}"}}]] [[reply:{text}!]]',
                    "dedupe",
                )
    assert result["payloads"] == []
    sent = [
        p
        for (e, p, _s) in events
        if e == "chat" and p["runId"].startswith("message-dedupe") and p["state"] == "final"
    ]
    assert [p["message"]["content"][0]["text"] for p in sent] == [text]


async def test_a_failed_tool_gets_a_fallback_reply_unless_the_user_heard_already(
    tmp_path: Path,
) -> None:
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw) as client:
                alone = await ask(
                    client, '[[tool:read {"path": "nothing-here.txt"}]] [[reply:NO_REPLY]]', "f1"
                )
                told = await ask(
                    client,
                    '[[tool:message {"text": "Checking that file for you now"}]]'
                    ' [[tool:read {"path": "nothing-here.txt"}]] [[reply:NO_REPLY]]',
                    "f2",
                    sessionKey="told",
                )
                answered = await ask(
                    client,
                    '[[tool:read {"path": "nothing-here.txt"}]]',
                    "f3",
                    sessionKey="answered",
                )
                mutating = await ask(
                    client,
                    '[[tool:write {"path": "../outside.txt", "content": "x"}]]',
                    "f4",
                    sessionKey="mutating",
                )
    assert alone["payloads"] == [{"text": "⚠️ read failed", "isError": True}]
    assert told["payloads"] == []
    assert len(answered["payloads"]) == 1
    assert answered["payloads"][0]["text"].startswith("Tool results: read failed")
    assert mutating["payloads"][0]["text"].startswith("Tool results: write failed")
    assert mutating["payloads"][-1] == {"text": "⚠️ write failed", "isError": True}


# --- prompt: workspace files and skills; reasoning ---------------------------------------


async def test_workspace_bootstrap_files_and_skills_reach_the_system_prompt(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "state" / "workspaces" / "main"
    (ws / "skills" / "forecast").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Answer like a pirate.\n")
    (ws / "skills" / "forecast" / "SKILL.md").write_text(
        "---\nname: forecast\ndescription: Weather for a city\n---\nCall the API.\n"
    )
    seen: list[str] = []
    async with running_gateway(tmp_path) as gw:
        gw.supervisor.hooks.register("llm_input", lambda e: seen.append(e.systemPrompt or ""))
        with trio.fail_after(20):
            async with open_client(gw) as client:
                await ask(client, "hi", "ws1", extraSystemPrompt="Per-run rule.")
                (ws / "AGENTS.md").write_text("Answer like a poet.\n")
                await ask(client, "hi again", "ws2")
    first, second = seen
    assert "## AGENTS.md\n\nAnswer like a pirate." in first
    assert "<name>forecast</name>" in first and first.endswith("Per-run rule.")
    assert "Answer like a poet." in second and "Per-run rule." not in second


async def test_reasoning_streams_only_when_the_session_asks_for_it(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(20):
            async with open_client(gw, on_event=on_event, scopes=["operator.admin"]) as client:
                message = "hello [[think:first I consider it]]"
                await ask(client, message, "t-off", sessionKey="think")
                await client.request("sessions.patch", {"key": "think", "reasoningLevel": "stream"})
                await ask(client, message, "t-stream", sessionKey="think")
    assert run_events(events, "t-off", "thinking") == []
    streamed = run_events(events, "t-stream", "thinking")
    assert streamed and streamed[-1]["data"]["text"] == "first I consider it"


# --- a long conversation -----------------------------------------------------------------


def long_message(i: int) -> str:
    return f"turn {i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60))


async def test_a_long_conversation_compacts_survives_an_overflow_and_keeps_answering(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="clawlane.turn")
    config = local_config(
        models__providers__local={
            "api": "local",
            "models": [{"id": "echo", "contextWindow": 6000}],  # budget 3000, keeps 1500
        },
        # no tool schemas: in a window this small they alone would fill the budget
        tools__deny=["*"],
    )
    events, on_event = recorder_events()
    key = "agent:main:long"
    sent: list[str] = []
    async with running_gateway(tmp_path, config) as gw:
        store = gw.supervisor.store
        with trio.fail_after(60):
            async with open_client(gw, on_event=on_event) as client:
                row = None
                for i in range(40):
                    result = await ask(client, long_message(i), f"long-{i}", sessionKey=key)
                    sent.append(long_message(i))
                    assert result["payloads"] == [{"text": f"You said: {long_message(i)}"}]
                    row = await store.get_session(key)
                    assert row is not None and row.contextTokens is not None
                    assert row.contextTokens <= 3000
                    if row.compactionCount >= 1 and row.contextTokens >= 2600:
                        break
                assert row is not None and row.compactionCount >= 1, "never compacted"
                assert row.contextTokens is not None
                limit = row.contextTokens + 5
                overflowing = f"{long_message(100)} [[overflow:{limit}:2]]"
                result = await ask(client, overflowing, "overflow", sessionKey=key)
                sent.append(overflowing)
                answer = f"You said: {long_message(100)}"
                assert result["payloads"] == [{"text": answer}]
                for i in range(101, 104):
                    result = await ask(client, long_message(i), f"after-{i}", sessionKey=key)
                    sent.append(long_message(i))
                    assert result["payloads"] == [{"text": f"You said: {long_message(i)}"}]
        await store.flush()
        final_row = await store.get_session(key)
        assert final_row is not None
        entries = await store.load_entries(final_row.sessionId)

    # the overflow: compaction with a retry, the partial output taken back, nothing repeated
    compaction = [p["data"] for p in run_events(events, "overflow", "compaction")]
    assert compaction == [
        {"phase": "start"},
        {"phase": "end", "willRetry": True, "completed": True},
    ]
    deltas = [p["data"] for p in run_events(events, "overflow", "assistant")]
    assert [bool(d.get("replace")) for d in deltas[:3]] == [False, False, True]
    assert replay_assistant(events, "overflow") == answer
    assert "".join(d["delta"] for d in deltas[2:]) == answer
    assert replay_chat(events, "overflow") == answer
    assert chat_final(events, "overflow")["message"]["content"][0]["text"] == answer
    seqs = [p["seq"] for p in run_events(events, "overflow")]
    assert seqs == list(range(1, len(seqs) + 1))

    # earlier threshold compactions ran after their run, without a retry
    threshold = [
        p["data"]
        for (e, p, _s) in events
        if e == "agent" and p["stream"] == "compaction" and p["runId"].startswith("long-")
    ]
    assert {"phase": "end", "willRetry": False, "completed": True} in threshold

    # the store: everything kept, compactions added, the context rebuilt from them
    compactions = [e for e in entries if isinstance(e, CompactionEntry)]
    assert len(compactions) == final_row.compactionCount >= 2
    users = [
        e.message.content
        for e in entries
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
    ]
    assert users == sent
    position = {e.id: i for i, e in enumerate(entries)}
    assert all(position[c.firstKeptEntryId] < position[c.id] for c in compactions)
    assert any(c.details and c.details["reason"] == "overflow-retry" for c in compactions)
    context = build_context(entries)
    assert "Summary (local model): the user said:" in str(context[0].content)
    assert context[-1].content[0].text == f"You said: {long_message(103)}"  # type: ignore[union-attr]
    # the in-memory context always matched the store (so compactions could keep history)
    assert "does not match" not in caplog.text


async def test_eligible_skills_reach_the_prompt_and_the_run_environment(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("SKILL_DEMO_TOKEN", "s3cret-token")
    skill = tmp_path / "state" / "workspaces" / "main" / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: demo\ndescription: A demo skill\nrequirements:\n  env:\n    - SKILL_DEMO_TOKEN\n---\nUse it.\n"
    )
    seen: dict[str, Any] = {}
    async with running_gateway(tmp_path) as gw:
        gw.supervisor.hooks.register(
            "llm_input", lambda e: seen.setdefault("system", e.systemPrompt)
        )
        async with open_client(gw) as client:
            with trio.fail_after(20):
                final = await client.request(
                    "agent",
                    {
                        "message": '[[tool:exec {"command": "echo $SKILL_DEMO_TOKEN $CLAWLANE_SKILLS"}]]',
                        "idempotencyKey": "sk",
                    },
                    expect_final=True,
                )
    assert "s3cret-token demo" in final["result"]["payloads"][0]["text"]
    assert "demo" in seen["system"] and "A demo skill" in seen["system"]


async def test_resource_package_extensions_load_as_plugins(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "ext").mkdir(parents=True)
    (package / "package.json").write_text(
        '{"name": "pkg", "openclaw": {"extensions": ["ext/*.py"]}}'
    )
    (package / "ext" / "pong_plugin.py").write_text(
        "def register(api):\n"
        "    api.on('before_agent_reply', lambda e: {'handled': True, 'reply': {'text': 'pong'}} if e.cleanedBody == 'ping' else None)\n"
    )
    (package / "ext" / "broken_plugin.py").write_text("raise RuntimeError('broken on purpose')\n")
    config = local_config(agents__defaults__resources=[str(package)])
    async with running_gateway(tmp_path, config) as gw, open_client(gw) as client:
        with trio.fail_after(15):
            final = await client.request(
                "agent", {"message": "ping", "idempotencyKey": "ext"}, expect_final=True
            )
    assert final["result"]["payloads"] == [{"text": "pong"}]
