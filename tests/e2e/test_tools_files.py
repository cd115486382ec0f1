"""OpenClaw's file tools over a real gateway, driven by the `local` model's `[[tool:...]]`
directives: `ls`, `apply_patch` and the aliases a model may call them by (`bash` for `exec`,
`apply-patch` for `apply_patch`), checked as a client that asked for tool events sees them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events, terminal_events


def tool_events(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [p["data"] for p in run_events(events, run_id, "tool")]


def directive(name: str, args: dict[str, Any]) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


PATCH = "\n".join(
    [
        "*** Begin Patch",
        "*** Add File: src/new.txt",
        "+fresh",
        "*** Update File: src/app.txt",
        "@@ [main]",
        "-value = 1",
        "+value = 2",
        "*** End Patch",
    ]
)


async def test_ls_apply_patch_and_the_aliases_run_as_openclaws(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        (workspace / "src").mkdir(parents=True)
        (workspace / "src" / "app.txt").write_text("[other]\nvalue = 1\n[main]\nvalue = 1\n")
        msg = " ".join(
            [
                directive("apply-patch", {"input": PATCH}),
                directive("ls", {"path": "src"}),
                directive("bash", {"command": "cat src/new.txt"}),
                directive("apply_patch", {"input": PATCH.replace("value = 1", "nope")}),
            ]
        )
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                final = await client.request(
                    "agent", {"message": msg, "idempotencyKey": "files"}, expect_final=True
                )
        app = (workspace / "src" / "app.txt").read_text()
        new = (workspace / "src" / "new.txt").read_text()
    assert app == "[other]\nvalue = 1\n[main]\nvalue = 2\n" and new == "fresh\n"
    seen = [d for d in tool_events(events, "files") if d["phase"] != "update"]
    assert [(d["phase"], d["name"]) for d in seen] == [
        ("start", "apply-patch"),
        ("result", "apply-patch"),
        ("start", "ls"),
        ("result", "ls"),
        ("start", "bash"),
        ("result", "bash"),
        ("start", "apply_patch"),
        ("result", "apply_patch"),
    ]
    results = [d for d in seen if d["phase"] == "result"]
    assert [d["isError"] for d in results] == [False, False, False, True]
    assert json.dumps(results[0]["result"]).count("Success. Updated the following files") == 1
    assert '\\"app.txt\\"\\n\\"new.txt\\"' in json.dumps(results[1]["result"])
    assert "fresh" in json.dumps(results[2]["result"])
    assert "Cannot create src/new.txt: the file already exists" in json.dumps(results[3]["result"])
    [end] = terminal_events(events, "files")
    assert end["data"]["phase"] == "end"
    text = final["result"]["payloads"][0]["text"]
    assert "A src/new.txt" in text and "M src/app.txt" in text


async def test_an_alias_is_refused_when_the_policy_denies_its_tool(tmp_path: Path) -> None:
    config = local_config(tools__deny=["apply_patch", "exec"])
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(20):
            async with open_client(gw) as client:
                msg = " ".join(
                    [
                        directive("apply-patch", {"input": "*** Begin Patch\n*** End Patch"}),
                        directive("bash", {"command": "touch pwned"}),
                    ]
                )
                final = await client.request(
                    "agent", {"message": msg, "idempotencyKey": "deny"}, expect_final=True
                )
    text = final["result"]["payloads"][0]["text"]
    assert text.count("not available") == 2
    assert not (tmp_path / "state" / "workspaces" / "main" / "pwned").exists()


async def test_edit_takes_openclaws_edits_array_and_reports_its_diff(tmp_path: Path) -> None:
    """`edit` with OpenClaw 2026.9.6's `edits` (two blocks in one call, matched against the
    original), the older top-level `oldText`/`newText`, and a no-op: the tool events a client
    receives carry OpenClaw's result text and details (as OpenClaw's own edit tool gives them
    for the same file and call)."""
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / "app.py").write_text("import os\n\ndef main():\n    return 1\n")
        edits = [
            {"oldText": "    return 1", "newText": "    return 2"},
            {"oldText": "import os\n", "newText": "import os\nimport sys\n"},
        ]
        msg = " ".join(
            [
                directive("edit", {"path": "app.py", "edits": edits}),
                directive("edit", {"path": "app.py", "oldText": "main", "newText": "run"}),
                directive(
                    "edit", {"path": "app.py", "edits": [{"oldText": "sys", "newText": "sys"}]}
                ),
            ]
        )
        with trio.fail_after(20):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                final = await client.request(
                    "agent", {"message": msg, "idempotencyKey": "edits"}, expect_final=True
                )
        app = (workspace / "app.py").read_text()
    assert app == "import os\nimport sys\n\ndef run():\n    return 2\n"
    seen = [d for d in tool_events(events, "edits") if d["phase"] != "update"]
    assert [(d["phase"], d["name"]) for d in seen] == [("start", "edit"), ("result", "edit")] * 3
    assert seen[0]["args"] == {"path": "app.py", "edits": edits}
    first, second, third = (d for d in seen if d["phase"] == "result")
    assert [d["isError"] for d in (first, second, third)] == [False, False, False]
    assert first["result"]["content"] == [
        {"type": "text", "text": "Successfully replaced 2 block(s) in app.py."}
    ]
    assert first["result"]["details"] == {
        "changed": True,
        "diff": " 1 import os\n+2 import sys\n 3 \n 4 def main():\n-4     return 1\n+5     return 2",
        "patch": "--- app.py\n+++ app.py\n@@ -1,4 +1,5 @@\n import os\n+import sys\n \n"
        " def main():\n-    return 1\n+    return 2\n",
        "firstChangedLine": 2,
    }
    assert second["result"]["details"]["firstChangedLine"] == 4
    assert third["result"]["content"][0]["text"] == (
        "No changes made to app.py. The replacement text is identical to the original."
    )
    assert third["result"]["details"] == {"changed": False}
    [end] = terminal_events(events, "edits")
    assert end["data"]["phase"] == "end" and final["status"] == "ok"
