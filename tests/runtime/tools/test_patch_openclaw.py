"""`apply_patch` answers as OpenClaw 2026.9.6's own: the recorded table
(`tests/data/openclaw-apply-patch-2026.9.6.json`, OpenClaw's answers under Node 24 for random
patches on random files, see `_patch_cases`) replayed on a real workspace through the tool:
the same success text and details, the same thrown message, the same files after.

One difference is kept on purpose: OpenClaw applies a patch's operations one by one, so when a
later one fails the earlier ones stay done (an added file stays, a deleted one stays gone).
clawlane plans the whole patch first and changes every file or none. So where OpenClaw threw,
the files after are compared with the files before, not with what OpenClaw left."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import trio
from attrs import evolve

from runtime.llm._types import TextContent
from runtime.tools import ApplyPatchTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._thrown import thrown
from tests.runtime.tools._patch_cases import RECORD, digest_long

_RECORDED: list[dict[str, Any]] = json.loads(RECORD.read_text())["cases"]


def _files_after(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _answer(result: ToolResult, root: Path) -> dict[str, Any]:
    """A clawlane result in the shape OpenClaw's answers are recorded in."""
    if result.is_error:
        answer: dict[str, Any] = {"error": thrown(result, "apply_patch")}
    else:
        blocks = [
            {"type": "text", "text": b.text} for b in result.content if isinstance(b, TextContent)
        ]
        answer = {"content": blocks, "details": result.details}
    answer["after"] = dict(sorted(_files_after(root).items()))
    decoded: dict[str, Any] = json.loads(json.dumps(answer).replace(str(root), "<root>"))
    return decoded


def _expected(case: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's answer, but all or nothing: a failed patch leaves the files as they were."""
    expected = dict(case["answer"])
    if "error" in expected:
        expected["after"] = {
            name: hashlib.sha256(base64.b64decode(data)).hexdigest()
            for name, data in sorted(case["files"].items())
        }
    return expected


async def _replay(case: dict[str, Any], ctx: ToolContext, root: Path) -> dict[str, Any]:
    for name in case["dirs"]:
        (root / name).mkdir(parents=True, exist_ok=True)
    for name, data in case["files"].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(base64.b64decode(data))
    text = case["patch"].replace("<root>", str(root))
    with trio.fail_after(10):
        result = await invoke_tool(ApplyPatchTool(), {"input": text}, ctx)
    digested: dict[str, Any] = digest_long(_answer(result, root))
    return digested


async def test_apply_patch_answers_as_openclaw(ctx: ToolContext, tmp_path: Path) -> None:
    wrong = []
    for index, case in enumerate(_RECORDED):
        root = tmp_path / f"case-{index}"
        root.mkdir()
        answer = await _replay(case, evolve(ctx, workspace=root), root)
        if answer != _expected(case):
            wrong.append((index, case["patch"], answer, _expected(case)))
    assert not wrong, f"{len(wrong)} cases differ; the first: {wrong[0]}"


def test_the_table_holds_partial_failures_of_openclaw() -> None:
    """The difference the replay forgives is real: OpenClaw left some failed patches half
    applied (its files after differ from before), and the table holds successes and
    failures of each kind."""
    partial = [
        case
        for case in _RECORDED
        if "error" in case["answer"] and case["answer"]["after"] != _expected(case)["after"]
    ]
    assert partial
    succeeded = [case for case in _RECORDED if "error" not in case["answer"]]
    assert len(succeeded) > 80 and len(_RECORDED) - len(succeeded) > 200
