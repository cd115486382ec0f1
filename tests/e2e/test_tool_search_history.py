"""A call made through Tool Search's `tool_call` is kept as OpenClaw 2026.9.6 keeps it: a
display-only row of the transcript (OpenClaw's nested tool activity), between the assistant
turn that called `tool_call` and the `tool_call`'s result, that `chat.history`,
`session.message` and `sessions_history` show with the target's call and result as its
content, and that the model never reads. Over a real gateway on loopback, driven by the
`local` model (which calls a deferred tool through `tool_call`), and in the embedded runtime.

The peer gateway's row for the same kind of call (`tool_call` of `sessions_spawn`), as its
`chat.history` answered: `{role: "custom", customType: "openclaw.nested-tool.v1", display:
true, excludeFromContext: true, content: [{type: "toolCall", id, runId, name, arguments,
parentToolCallId, timestamp}, {runId, scopeId, afterEntryId, startOrder, parentToolCallId,
toolCallId, toolName, isError, startedAt, timestamp, content, type: "toolResult", role:
"toolResult"}], timestamp, idempotencyKey: "<scopeId>:<toolCallId>", __openclaw: {..., seq},
runId}`, with no `details`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from runtime import open_embedded_runtime, parse_config
from runtime.llm import Message
from tests.conftest import open_client, running_gateway
from tests.e2e._events import recorder_events, run_events

NESTED = "openclaw.nested-tool.v1"
CALL = "[[tool:agents_list {}]] [[reply:listed]]"


def check_row(row: dict[str, Any], parent: dict[str, Any], nested: dict[str, Any]) -> None:
    """`row` is the display row of the call `nested` (its `tool` result event) that the
    `tool_call` `parent` (its `start` event) made."""
    assert row["role"] == "custom" and row["customType"] == NESTED
    assert row["display"] is True and row["excludeFromContext"] is True
    assert "details" not in row
    call, result = row["content"]
    assert call == {
        "type": "toolCall",
        "id": nested["toolCallId"],
        "runId": row["runId"],
        "name": "agents_list",
        "arguments": {},
        "parentToolCallId": parent["toolCallId"],
        "timestamp": row["timestamp"],
    }
    assert result["type"] == "toolResult" and result["role"] == "toolResult"
    assert result["toolName"] == "agents_list" and result["toolCallId"] == nested["toolCallId"]
    assert result["parentToolCallId"] == parent["toolCallId"] and result["runId"] == row["runId"]
    assert result["isError"] is False and result["startOrder"] == 0
    assert result["startedAt"] == row["timestamp"] <= result["timestamp"]
    assert result["content"] == nested["result"]["content"]


async def test_a_call_through_tool_call_is_a_display_row_the_model_never_reads(
    tmp_path: Path,
) -> None:
    events, on_event = recorder_events()
    seen: dict[str, list[Message]] = {}

    def spy(event: Any) -> None:
        seen[event.runId] = list(event.historyMessages)

    with trio.fail_after(30):
        async with running_gateway(tmp_path) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
                await client.request(
                    "agent", {"message": CALL, "idempotencyKey": "t1"}, expect_final=True
                )
                history = await client.request("chat.history", {"sessionKey": "agent:main:main"})
                await client.request(
                    "agent", {"message": "and now?", "idempotencyKey": "t2"}, expect_final=True
                )
                peek = '[[tool:sessions_history {"sessionKey": "agent:main:main"}]]'
                await client.request(
                    "agent",
                    {"message": peek, "sessionKey": "agent:main:peek", "idempotencyKey": "p"},
                    expect_final=True,
                )
    tools = [p["data"] for p in run_events(events, "t1", "tool")]
    parent = next(d for d in tools if d["name"] == "tool_call" and d["phase"] == "start")
    nested = next(d for d in tools if d["name"] == "agents_list" and d["phase"] == "result")
    rows = history["messages"]
    kinds = [r.get("customType") or r.get("toolName") or r["role"] for r in rows]
    assert kinds == ["user", "assistant", NESTED, "tool_call", "assistant"]
    row = rows[2]
    check_row(row, parent, nested)
    assert row["runId"] == "t1" and row["__openclaw"]["runId"] == "t1"
    scope = row["content"][1]["scopeId"]
    assert row["idempotencyKey"] == f"{scope}:{nested['toolCallId']}"
    assert [r["__openclaw"]["seq"] for r in rows] == [1, 2, 3, 4, 5]
    assert row["content"][1]["afterEntryId"] == rows[1]["__openclaw"]["id"]
    assert history["totalMessages"] == 5
    # watchers get the same row as it is written
    told = [
        p["message"]
        for (e, p, _s) in events
        if e == "session.message" and p["message"].get("role") == "custom"
    ]
    assert told == [{k: v for k, v in row.items()}]
    # the next turn's context: the conversation without the row
    roles = [type(m).__struct_config__.tag for m in seen["t2"]]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    # another session's sessions_history shows it (a custom row, not a tool result)
    peeked = next(
        p["data"]
        for p in run_events(events, "p", "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] == "sessions_history"
    )
    shown = peeked["result"]["details"]["messages"]
    [again] = [m for m in shown if m.get("customType") == NESTED]
    check_row(again, parent, nested)


async def test_the_embedded_runtime_keeps_the_row_for_display_only_too(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    peeked: list[dict[str, Any]] = []
    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:
            await rt.run_turn(CALL, session_key="main", on_event=seen.append)
            context = rt.transcript("main")
            peek = '[[tool:sessions_history {"sessionKey": "agent:main:main"}]]'
            await rt.run_turn(peek, session_key="peek", on_event=peeked.append)
    tools = [p["data"] for p in seen if p["stream"] == "tool"]
    parent = next(d for d in tools if d["name"] == "tool_call" and d["phase"] == "start")
    nested = next(d for d in tools if d["name"] == "agents_list" and d["phase"] == "result")
    assert [type(m).__struct_config__.tag for m in context] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    shown = next(
        p["data"]["result"]["details"]["messages"]
        for p in peeked
        if p["stream"] == "tool"
        and p["data"]["phase"] == "result"
        and p["data"]["name"] == "sessions_history"
    )
    kinds = [m.get("customType") or m["role"] for m in shown]
    assert kinds == ["user", "assistant", NESTED, "assistant"]  # tool results left out
    check_row(shown[2], parent, nested)
