"""A model's tool arguments of the wrong JSON type are coerced as OpenClaw 2026.9.6 coerces
them, over a real gateway: a scripted OpenAI-style provider on loopback calls `read` with
`limit: "2"` (read as 2, as OpenClaw's gateway reads it: "one\\ntwo" and where to continue),
with `limit: "two"` (still an error the model sees, naming the field), and `ls` with its
whole arguments sent as a JSON string."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from tests.conftest import running_gateway
from tests.e2e.test_tool_search import agent, provider_config, tool_events, tool_message
from tests.runtime.llm._sse_server import Script, open_sse_server
from tests.runtime.llm._streams import chat_text, chat_tool_calls


async def test_a_read_limit_sent_as_a_string_is_read_as_a_number(tmp_path: Path) -> None:
    workspace = tmp_path / "state" / "workspaces" / "main"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "f.txt").write_text("one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    ls_args = json.dumps(json.dumps({"limit": "1"}))  # the whole object as a JSON string
    with trio.fail_after(30):
        async with open_sse_server() as server:
            server.push(
                Script(
                    chunks=chat_tool_calls([("c1", "read", ['{"path": "f.txt", "limit": "2"}'])])
                ),
                Script(
                    chunks=chat_tool_calls([("c2", "read", ['{"path": "f.txt", "limit": "two"}'])])
                ),
                Script(chunks=chat_tool_calls([("c3", "ls", [ls_args])])),
                Script(chunks=chat_text(["done"])),
            )
            config = provider_config(server, toolSearch=False)
            async with running_gateway(tmp_path, config) as gw:
                events, final = await agent(gw, "read f.txt", "r")
    assert final["status"] == "ok"
    bodies = [r.json() for r in server.requests]
    read = tool_message(bodies[1], "c1")
    assert read.startswith("one\ntwo\n\n[") and "offset=3" in read
    refused = tool_message(bodies[2], "c2")
    assert refused == (
        'Validation failed for tool "read":\n  - limit: must be number\n\n'
        'Received arguments:\n{\n  "path": "f.txt",\n  "limit": "two"\n}'
    )
    listed = tool_message(bodies[3], "c3")
    assert "f.txt" in listed and "invalid arguments" not in listed
    results = [d for d in tool_events(events, "r") if d["phase"] == "result"]
    assert [(d["name"], d["isError"]) for d in results] == [
        ("read", False),
        ("read", True),
        ("ls", False),
    ]
