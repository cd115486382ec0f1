"""`write` and `read` answer as OpenClaw 2026.9.6's own tools: the recorded table
(`tests/data/openclaw-file-tools-2026.9.6.json`, OpenClaw's answers under Node 24 for random
calls, see `_file_tool_cases`) replayed on a real workspace: the same result text, details and
written bytes, an error where OpenClaw throws (with its message)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import trio
from attrs import evolve

from runtime.llm._types import ImageContent, TextContent
from runtime.tools._fs import ReadTool, WriteTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._thrown import thrown
from tests.runtime.tools._file_tool_cases import RECORD, content_of, digest_long, file_bytes

_RECORDED: list[dict[str, Any]] = json.loads(RECORD.read_text())["cases"]


def _answer(result: ToolResult, root: Path, tool: str) -> dict[str, Any]:
    """A clawlane result in the shape OpenClaw's answers are recorded in: a failure is its
    message (the result in OpenClaw's thrown-tool shape, `tests._thrown`)."""
    if result.is_error:
        answer: dict[str, Any] = {"error": thrown(result, tool)}
    else:
        blocks: list[dict[str, Any]] = []
        for block in result.content:
            if isinstance(block, ImageContent):
                size = len(base64.b64decode(block.data))
                blocks.append({"type": "image", "mimeType": block.mimeType, "bytes": size})
            elif isinstance(block, TextContent):
                blocks.append({"type": "text", "text": block.text})
        answer = {"content": blocks, "details": result.details}
    answer_text: str = json.dumps(answer, ensure_ascii=False).replace(str(root), "<root>")
    decoded: dict[str, Any] = json.loads(answer_text)
    return decoded


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


async def _replay(case: dict[str, Any], ctx: ToolContext, root: Path) -> dict[str, Any]:
    for name in case.get("dirs", []):
        (root / name).mkdir(parents=True, exist_ok=True)
    for name, parts in case.get("files", {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(file_bytes(parts))
    args = json.loads(json.dumps(case["args"]).replace("<root>", str(root)))
    if case["tool"] == "write":
        args["content"] = content_of(case)
    tool = WriteTool() if case["tool"] == "write" else ReadTool(case.get("contextWindow"))
    with trio.fail_after(30):
        result = await invoke_tool(tool, args, ctx)
    answer = _answer(result, root, case["tool"])
    if case["tool"] == "write":
        answer["afterSha256"] = _sha256(root / args["path"])
    digested: dict[str, Any] = digest_long(answer)
    return digested


async def _replay_all(tool: str, ctx: ToolContext, tmp_path: Path) -> None:
    """Every recorded case of `tool`, each in a fresh workspace; all mismatches reported."""
    wrong = []
    for index, case in enumerate(_RECORDED):
        if case["tool"] != tool:
            continue
        root = tmp_path / f"case-{index}"
        root.mkdir()
        answer = await _replay(case, evolve(ctx, workspace=root), root)
        if answer != case["answer"]:
            wrong.append((index, case["args"], answer, case["answer"]))
    assert not wrong, f"{len(wrong)} cases differ; the first: {wrong[0]}"


async def test_write_answers_as_openclaw(ctx: ToolContext, tmp_path: Path) -> None:
    await _replay_all("write", ctx, tmp_path)


async def test_read_answers_as_openclaw(ctx: ToolContext, tmp_path: Path) -> None:
    await _replay_all("read", ctx, tmp_path)
