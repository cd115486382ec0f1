"""ls against a real workspace: OpenClaw's listing (binary filename order, JSON-quoted names,
`/` on directories, dotfiles and links, pages with an `after` cursor), refused outside."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from runtime.llm._types import TextContent
from runtime.tools import LsTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._thrown import thrown


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def ls(ctx: ToolContext, **args: object) -> ToolResult:
    with trio.fail_after(5):
        return await invoke_tool(LsTool(), dict(args), ctx)


async def test_a_listing_in_binary_order_with_dirs_marked(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "b.txt").write_text("b")
    (workspace / "B.txt").write_text("B")
    (workspace / ".hidden").write_text("h")
    (workspace / "dir").mkdir()
    (workspace / "dir" / "inner").write_text("i")
    (workspace / "link").symlink_to(workspace / "dir")
    (workspace / 'we"ird é').write_text("w")
    result = await ls(ctx)
    assert not result.is_error
    names = [".hidden", "B.txt", "b.txt", "dir/", "link", 'we"ird é']
    text = "\n".join(json.dumps(n, ensure_ascii=False) for n in names)
    assert _text(result) == text and result.details == {"content": text}
    inner = await ls(ctx, path="dir")
    assert _text(inner) == '"inner"'


async def test_pages_continue_after_the_cursor(ctx: ToolContext, workspace: Path) -> None:
    for name in ("a", "b", "c", "d", "e"):
        (workspace / name).write_text(name)
    first = await ls(ctx, limit=2)
    assert _text(first) == (
        '"a"\n"b"\n\n[More entries. Continue with the same path and after="b".]'
    )
    assert first.details is not None and first.details["nextAfter"] == "b"
    second = await ls(ctx, limit=2, after="b")
    assert second.details is not None and second.details["nextAfter"] == "d"
    last = await ls(ctx, limit=2, after="d")
    assert _text(last) == '"e"' and last.details == {"content": '"e"'}


async def test_empty_missing_and_refused(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "empty").mkdir()
    (workspace / "file.txt").write_text("x")
    empty = await ls(ctx, path="empty")
    assert _text(empty) == "(empty directory)" and not empty.is_error
    # OpenClaw's answers (its peer, `tools.fs.workspaceOnly`): a file is no directory either.
    assert thrown(await ls(ctx, path="nope"), "ls") == "directory not found"
    assert thrown(await ls(ctx, path="file.txt"), "ls") == "directory not found"
    through = await ls(ctx, path="file.txt/x")
    assert thrown(through, "ls") == f"Path component is not a directory: {workspace}/file.txt"
    escape = thrown(await ls(ctx, path=".."), "ls")
    assert escape.startswith(f"Path escapes sandbox root ({workspace}): ... Use a relative path")
    absolute = thrown(await ls(ctx, path="/etc"), "ls")
    assert absolute.startswith(f"Path escapes sandbox root ({workspace}): /etc. ")
    # A limit below 1 is 1, a fractional one whole, as OpenClaw's normalizePositiveLimit has it.
    one = await ls(ctx, limit=0)
    assert not one.is_error and _text(one).startswith('"empty/"\n\n[More entries.')
    assert _text(await ls(ctx, limit=1.9)) == _text(one)
