"""`sessions_yield` as OpenClaw 2026.9.6 hands a turn over, on both hosts, driven by the `local`
model's `[[tool:...]]` directives (what the peer gateway did for the same calls is quoted):

- the yield's private context (its `message` and OpenClaw's context line) is a hidden custom
  message of the transcript: the model reads it on the session's next turn, in memory and
  after a restart from the store (SQLite and PostgreSQL), while `chat.history`,
  `sessions_history` and the `sessions_yield` result show none of it (the peer's history: the
  result `{"status": "yielded"}` and no context row).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import open_store
from runtime import open_embedded_runtime, parse_config
from runtime.llm import Message, ToolResultMessage, UserMessage
from runtime.model._config import Config
from tests.actors._databases import pg_url
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_session_tools import Watch, directive, spawn

__all__ = ["pg_url"]  # the fixture, used by name

MAIN = "agent:main:main"
CONTEXT_LINE = (
    "[Context: The previous turn ended intentionally via sessions_yield while waiting for a "
    "follow-up event.]"
)
HIDDEN = f"waiting for kid\n\n{CONTEXT_LINE}"
YIELDING = " ".join(
    [
        spawn("[[reply:child-done]]", label="kid"),
        directive("sessions_yield", {"message": "waiting for kid"}),
    ]
)


@pytest.fixture(params=["sqlite", "postgres"])
def store_config(request: pytest.FixtureRequest) -> Config:
    """The gateway's config, its store on each backend in turn."""
    if request.param == "sqlite":
        return local_config()
    url = request.getfixturevalue("pg_url")
    return local_config(storage={"backend": "postgres", "postgres": {"url": url}})


def text_of(message: Any) -> str:
    """A message's text (a model message or a history row), its blocks joined."""
    content = message.content if not isinstance(message, dict) else message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content or ():
        block = block if isinstance(block, dict) else {"text": getattr(block, "text", "")}
        parts.append(str(block.get("text", "")))
    return "".join(parts)


def yield_exchange(history: list[Message]) -> tuple[ToolResultMessage, Message]:
    """The `sessions_yield` result in a model's context and the message after it."""
    i = next(
        i
        for i, m in enumerate(history)
        if isinstance(m, ToolResultMessage) and m.toolName == "sessions_yield"
    )
    result = history[i]
    assert isinstance(result, ToolResultMessage)
    return result, history[i + 1]


def assert_hidden_context_follows_the_yield(history: list[Message]) -> None:
    result, after = yield_exchange(history)
    assert json.loads(text_of(result)) == {"status": "yielded"}
    assert isinstance(after, UserMessage) and text_of(after) == HIDDEN


async def test_the_yield_context_is_hidden_from_histories_and_read_on_the_next_turn(
    tmp_path: Path, store_config: Config
) -> None:
    watch = Watch()
    seen: dict[str, list[Message]] = {}

    def spy(event: Any) -> None:
        seen[event.runId] = list(event.historyMessages)

    with trio.fail_after(60):
        async with running_gateway(tmp_path, store_config) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent", {"message": YIELDING, "idempotencyKey": "y1"}, expect_final=True
                )
                [_, continuation] = await watch.ended(MAIN, 2)  # and the child's announce
                history = await client.request("chat.history", {"sessionKey": MAIN})
                peek = directive("sessions_history", {"sessionKey": MAIN, "includeTools": True})
                await client.request(
                    "agent",
                    {"message": peek, "sessionKey": "agent:main:peek", "idempotencyKey": "p1"},
                    expect_final=True,
                )
        # a restart: the next turn's context comes from the store
        async with running_gateway(tmp_path, store_config) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw) as client:
                await client.request(
                    "agent", {"message": "and now?", "idempotencyKey": "y2"}, expect_final=True
                )
    assert_hidden_context_follows_the_yield(seen[continuation["runId"]])
    assert_hidden_context_follows_the_yield(seen["y2"])
    rows = history["messages"]
    assert not any(CONTEXT_LINE in text_of(r) for r in rows)
    [result] = [r for r in rows if r.get("toolName") == "sessions_yield"]
    assert json.loads(text_of(result)) == {"status": "yielded"}
    [peeked] = [
        d
        for d in (p["data"] for p in watch.events_of("tool") if p["runId"] == "p1")
        if d["phase"] == "result" and d["name"] == "sessions_history"
    ]
    shown = peeked["result"]["details"]["messages"]
    assert any(m.get("toolName") == "sessions_yield" for m in shown)
    assert not any(CONTEXT_LINE in text_of(m) for m in shown)


async def test_the_embedded_runtime_keeps_the_yield_context_hidden_too(tmp_path: Path) -> None:
    config = parse_config({})
    ended: list[dict[str, Any]] = []
    announced = trio.Event()

    def background(payload: dict[str, Any]) -> None:
        if payload["stream"] == "lifecycle" and payload["data"]["phase"] == "end":
            ended.append(payload)
            if payload["runId"].endswith(":announce"):
                announced.set()

    peeked: list[dict[str, Any]] = []
    with trio.fail_after(30):
        async with (
            open_store(tmp_path / "s.db") as store,
            open_embedded_runtime(config, store=store, state_dir=tmp_path) as rt,
        ):
            rt.on_event = background
            await rt.run_turn(YIELDING, session_key="main")
            await announced.wait()
            in_memory = rt.transcript("main")
            peek = directive("sessions_history", {"sessionKey": MAIN, "includeTools": True})
            await rt.run_turn(peek, session_key="peek", on_event=peeked.append)
        async with (
            open_store(tmp_path / "s.db") as store,
            open_embedded_runtime(config, store=store, state_dir=tmp_path) as rt,
        ):
            await rt.run_turn("and now?", session_key="main")
            reloaded = rt.transcript("main")
    assert_hidden_context_follows_the_yield(in_memory)
    assert_hidden_context_follows_the_yield(reloaded)
    [shown] = [
        p["data"]["result"]["details"]["messages"]
        for p in peeked
        if p["stream"] == "tool"
        and p["data"]["phase"] == "result"
        and p["data"]["name"] == "sessions_history"
    ]
    assert any(m.get("toolName") == "sessions_yield" for m in shown)
    assert not any(CONTEXT_LINE in text_of(m) for m in shown)
