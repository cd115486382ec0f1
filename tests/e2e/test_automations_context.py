"""`contextMessages` reads the current turn as OpenClaw's does: OpenClaw keeps a turn's
messages in its transcript as they come, so a reminder made mid-turn carries this turn's user
message (and the assistant's turn so far), counted among the newest N messages; clawlane
keeps them when the turn ends, and adds the run's messages so far (`ToolContext.
run_messages`). Over a real gateway and over the embedded runtime, driven by the `local`
model's `[[tool:...]]` directives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from runtime.agent._embedded import open_embedded_runtime
from runtime.model._config import parse_config
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e.test_automations_tool import Watch, details, directive, tool_results

REMINDER = {
    "name": "milk",
    "schedule": {"kind": "at", "at": "2099-01-01T09:00:00Z"},
    "payload": {"kind": "systemEvent", "text": "Buy milk"},
}
CALLS = [  # the newest N messages at each call: ..., this turn's user message, its calls
    {"action": "add", "job": REMINDER, "contextMessages": 4},
    {"action": "add", "job": REMINDER, "contextMessages": 2},
    {"action": "add", "job": REMINDER, "contextMessages": 1},
]


def _line(role: str, text: str) -> str:
    flat = " ".join(text.split())
    return f"- {role}: " + (flat if len(flat) <= 220 else flat[:217].rstrip() + "...")


def _expected(turn: str) -> list[str]:
    """The reminders' texts, as OpenClaw's `chat.history` would give their lines: the first
    call's newest four messages are the last turn's two, this turn's user message and the
    call's own assistant message (no text); the second's two are the first call's result
    and its own call, the third's one its own call: no text, nothing added."""
    earlier = [_line("User", "hello there"), _line("Assistant", "You said: hello there")]
    now = _line("User", turn)
    return [
        "Buy milk\n\nRecent context:\n" + "\n".join([*earlier, now]),
        "Buy milk",
        "Buy milk",
    ]


def _turn() -> str:
    return " ".join(directive("automations", c) for c in CALLS)


async def test_the_gateway_adds_this_turns_message_to_a_reminder(tmp_path: Path) -> None:
    watch = Watch()
    turn = _turn()
    async with running_gateway(tmp_path, local_config(tools__toolSearch=False)) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                for key, message in (("talk", "hello there"), ("remind", turn)):
                    await client.request(
                        "agent", {"message": message, "idempotencyKey": key}, expect_final=True
                    )
                stored = {j["id"]: j for j in (await client.request("cron.list", {}))["jobs"]}
    made = [details(r) for r in tool_results(watch.events, "remind")]
    assert [job["payload"]["text"] for job in made] == _expected(turn)
    assert [stored[job["id"]]["payload"]["text"] for job in made] == _expected(turn)


async def test_the_embedded_runtime_adds_this_turns_message_to_a_reminder(
    tmp_path: Path,
) -> None:
    turn = _turn()
    made: list[dict[str, Any]] = []

    def on_event(payload: dict[str, Any]) -> None:
        data = payload["data"]
        result = payload["stream"] == "tool" and data.get("phase") == "result"
        if result and data["name"] == "automations":  # not Tool Search's result of the call
            made.append(data["result"]["details"])

    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:
            await rt.run_turn("hello there", session_key="main")
            await rt.run_turn(turn, session_key="main", on_event=on_event)
    assert [job["payload"]["text"] for job in made] == _expected(turn)
