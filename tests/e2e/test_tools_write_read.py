"""`write` and `read` over a real gateway, driven by the `local` model's `[[tool:...]]`
directives: the tool events a client receives carry OpenClaw 2026.9.6's result texts and
details, as OpenClaw's own tools gave them for the same files and calls (recorded by
tests/runtime/tools/_file_tool_cases.py's `openclaw_answers`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests._thrown import thrown
from tests.conftest import open_client, running_gateway
from tests.e2e._events import recorder_events, run_events, terminal_events


def _directive(name: str, args: dict[str, Any]) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("write", {"path": "notes/todo.md", "content": "one\ntwo\n"}),
    ("write", {"path": "notes/todo.md", "content": "one\ntwo\n"}),
    ("write", {"path": "notes/todo.md", "content": "one\n2\n"}),
    ("write", {"path": "empty.txt", "content": ""}),
    ("read", {"path": "notes/todo.md", "limit": 1}),
    ("read", {"path": "notes"}),
    ("read", {"path": "notes/todo.txt"}),
    ("read", {"path": "empty.txt"}),
    ("read", {"path": "memory/2026-01-02.md"}),
]

_TRUNCATION = {
    "truncated": True,
    "truncatedBy": "lines",
    "totalLines": 2,
    "totalBytes": 3,
    "outputLines": 1,
    "outputBytes": 3,
    "lastLinePartial": False,
    "firstLineExceedsLimit": False,
    "maxLines": 1,
    "maxBytes": 51_200,  # the run's model's window, 128,000 tokens: OpenClaw's adaptive page
}

OPENCLAW: list[tuple[str, dict[str, Any] | None]] = [
    (
        "Successfully wrote 8 bytes to notes/todo.md",
        {
            "changed": True,
            "created": True,
            "diff": "+1 one\n+2 two",
            "patch": "--- notes/todo.md\n+++ notes/todo.md\n@@ -0,0 +1,2 @@\n+one\n+two\n",
            "firstChangedLine": 1,
        },
    ),
    (
        "No changes made to notes/todo.md. The file already has identical content.",
        {"changed": False},
    ),
    (
        "Successfully wrote 6 bytes to notes/todo.md",
        {
            "changed": True,
            "created": False,
            "diff": " 1 one\n-2 two\n+2 2",
            "patch": "--- notes/todo.md\n+++ notes/todo.md\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n",
            "firstChangedLine": 2,
        },
    ),
    (
        "Successfully wrote 0 bytes to empty.txt",
        {"changed": True, "created": True, "diff": "", "patch": "--- empty.txt\n+++ empty.txt\n"},
    ),
    (
        "one\n\n[1 more line in file. Use offset=2 to continue.]",
        {
            "kind": "truncated",
            "content": "one",
            "truncation": _TRUNCATION,
            "continuation": {"kind": "line", "offset": 2, "limit": 1},
        },
    ),
    (
        "Read requires a file path, but notes is a directory. List the directory, then read "
        "a specific file.",
        None,
    ),
    ("File not found: {workspace}/notes/todo.txt. Did you mean: todo.md?", None),
    ("File is empty (0 bytes).", {"kind": "text", "content": "File is empty (0 bytes)."}),
    (
        "Optional file not found: memory/2026-01-02.md.",
        {
            "kind": "not_found",
            "status": "not_found",
            "path": "memory/2026-01-02.md",
            "optional": True,
        },
    ),
]


async def test_write_and_read_answer_as_openclaws_tools(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        message = " ".join(_directive(name, args) for name, args in CALLS)
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                final = await client.request(
                    "agent", {"message": message, "idempotencyKey": "wr"}, expect_final=True
                )
        written = (workspace / "notes" / "todo.md").read_text()
    assert written == "one\n2\n"
    seen = [p["data"] for p in run_events(events, "wr", "tool") if p["data"]["phase"] != "update"]
    assert [(d["phase"], d["name"]) for d in seen] == [
        (phase, name) for name, _ in CALLS for phase in ("start", "result")
    ]
    results = [d for d in seen if d["phase"] == "result"]
    for (name, args), result, (text, details) in zip(CALLS, results, OPENCLAW, strict=True):
        expected = text.format(workspace=workspace)
        if details is None:  # a failure, in OpenClaw's thrown-tool shape
            assert thrown(result["result"], name) == expected, (name, args)
            continue
        assert result["result"]["content"] == [{"type": "text", "text": expected}], (name, args)
        assert result["isError"] == (details is None), (name, args)
        if details is not None:
            assert result["result"]["details"] == details, (name, args)
    [end] = terminal_events(events, "wr")
    assert end["data"]["phase"] == "end" and final["status"] == "ok"
