"""read and write against a real workspace, with OpenClaw 2026.9.6's texts and details, and
every file tool refusing paths outside it (`edit` itself: test_edit.py; OpenClaw's answers for
many random calls: test_file_tools_openclaw.py)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.llm._types import ImageContent, TextContent
from runtime.tools._edit import EditTool
from runtime.tools._fs import ReadTool, WriteTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._thrown import thrown
from tests.runtime.tools._file_tool_cases import png as _png


def _text(result: ToolResult) -> str:
    assert all(isinstance(b, TextContent) for b in result.content)
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    return out


async def test_write_creates_parents_and_read_returns_the_text(
    ctx: ToolContext, workspace: Path
) -> None:
    with trio.fail_after(5):
        wrote = await invoke_tool(
            WriteTool(), {"path": "a/b/c.txt", "content": "héllo\nworld\n"}, ctx
        )
        read = await invoke_tool(ReadTool(), {"path": "a/b/c.txt"}, ctx)
    assert not wrote.is_error
    assert _text(wrote) == "Successfully wrote 13 bytes to a/b/c.txt"
    assert wrote.details == {
        "changed": True,
        "created": True,
        "diff": "+1 héllo\n+2 world",
        "patch": "--- a/b/c.txt\n+++ a/b/c.txt\n@@ -0,0 +1,2 @@\n+héllo\n+world\n",
        "firstChangedLine": 1,
    }
    assert (workspace / "a" / "b" / "c.txt").read_text() == "héllo\nworld\n"
    assert not read.is_error
    assert _text(read) == "héllo\nworld\n"
    assert read.details == {"kind": "text", "content": "héllo\nworld\n"}


async def test_write_reports_a_change_or_no_change_as_openclaw(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("one\ntwo\n")
    with trio.fail_after(5):
        same = await invoke_tool(WriteTool(), {"path": "./f.txt", "content": "one\ntwo\n"}, ctx)
        changed = await invoke_tool(WriteTool(), {"path": "f.txt", "content": "one\n2\n"}, ctx)
    assert (same.is_error, _text(same), same.details) == (
        False,
        "No changes made to ./f.txt. The file already has identical content.",
        {"changed": False},
    )
    assert _text(changed) == "Successfully wrote 6 bytes to f.txt"
    assert changed.details == {
        "changed": True,
        "created": False,
        "diff": " 1 one\n-2 two\n+2 2",
        "patch": "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n",
        "firstChangedLine": 2,
    }


async def test_write_overwrites_and_accepts_an_absolute_path_inside(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("old content that is longer")
    with trio.fail_after(5):
        result = await invoke_tool(
            WriteTool(), {"path": str(workspace / "f.txt"), "content": "new"}, ctx
        )
    assert not result.is_error
    assert (workspace / "f.txt").read_text() == "new"


async def test_read_pages_with_offset_and_limit(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    with trio.fail_after(5):
        page = await invoke_tool(ReadTool(), {"path": "lines.txt", "offset": 3, "limit": 2}, ctx)
        tail = await invoke_tool(ReadTool(), {"path": "lines.txt", "offset": 9}, ctx)
        beyond = await invoke_tool(ReadTool(), {"path": "lines.txt", "offset": 11}, ctx)
    assert _text(page) == "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]"
    assert page.details is not None
    assert page.details["continuation"] == {"kind": "line", "offset": 5, "limit": 2}
    assert page.details["content"] == "line 3\nline 4"
    assert _text(tail) == "line 9\nline 10\n"
    assert not beyond.is_error
    assert (
        _text(beyond)
        == "Offset 11 is beyond end of file (10 lines total). Retry with offset <= 10."
    )


async def test_read_caps_bytes_per_call(ctx: ToolContext, workspace: Path) -> None:
    line = "x" * 99 + "\n"
    (workspace / "big.txt").write_text(line * 1000)
    with trio.fail_after(5):
        result = await invoke_tool(ReadTool(), {"path": "big.txt"}, ctx)
    body, _, trailer = _text(result).partition("\n\n")
    assert body == line * 325 + line.rstrip()
    assert trailer == "[Read output capped at 32KB for this call. Use offset=327 to continue.]"
    assert result.details is not None
    assert result.details["continuation"] == {"kind": "line", "offset": 327}


async def test_read_returns_an_image_as_image_content(ctx: ToolContext, workspace: Path) -> None:
    png = _png(1, 1)
    (workspace / "pic.png").write_bytes(png)
    (workspace / "sig.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(32, 127)))
    with trio.fail_after(5):
        result = await invoke_tool(ReadTool(), {"path": "pic.png"}, ctx)
        not_png = await invoke_tool(ReadTool(), {"path": "sig.png"}, ctx)
    assert not result.is_error
    assert result.content == [
        TextContent(text="Read image file [image/png]"),
        ImageContent(data=base64.b64encode(png).decode(), mimeType="image/png"),
    ]
    assert result.details == {
        "kind": "image",
        "content": "Read image file [image/png]",
        "mimeType": "image/png",
    }
    # A PNG signature without a PNG's header is text to OpenClaw.
    assert _text(not_png).startswith("\ufffdPNG\n\x1a\n !")


async def test_read_takes_openclaws_cursor_optional_and_a_fractional_limit(
    ctx: ToolContext, workspace: Path
) -> None:
    """`cursor` starts within the start line (UTF-16 units, as OpenClaw counts them), so a line
    longer than one call's budget can be read to its end; `optional` answers a missing path
    with OpenClaw's not_found result; unknown fields are ignored, as OpenClaw ignores them."""
    long = "\U0001f600" + "y" * (50 * 1024 + 10)
    (workspace / "long.txt").write_text(f"first\n{long}\nlast\n")

    async def read(**args: Any) -> ToolResult:
        with trio.fail_after(5):
            return await invoke_tool(ReadTool(), {"path": "long.txt", **args}, ctx)

    head = await read(offset=2, limit=1.7, note="ignored")
    body, _, notice = _text(head).partition("\n\n")
    assert body.startswith("\U0001f600y") and len(body.encode()) <= 32 * 1024
    resume = len(body.encode("utf-16-le")) // 2
    assert notice == (
        f"[Read output capped at 32KB for this call. Use offset=2, cursor={resume}, limit=1 "
        "to continue.]"
    )
    rest = await read(offset=2, limit=1, cursor=resume)
    assert body + _text(rest) == long + "\n\n[1 more line in file. Use offset=3 to continue.]"
    assert _text(await read(offset=2, cursor=2)).startswith("yyy")
    split = await read(offset=2, cursor=1)
    assert thrown(split, "read") == (
        "Cursor 1 splits a UTF-16 surrogate pair; retry with cursor=0 or cursor=2."
    )
    past = await read(offset=3, cursor=4)
    assert _text(past) == "Cursor 4 is at or beyond the end of line 3 (4 characters)."
    with trio.fail_after(5):
        missing = await invoke_tool(ReadTool(), {"path": "nope/x.md", "optional": True}, ctx)
    assert (missing.is_error, _text(missing), missing.details) == (
        False,
        "Optional file not found: nope/x.md.",
        {"kind": "not_found", "status": "not_found", "path": "nope/x.md", "optional": True},
    )


async def test_read_tells_a_bmp_from_text_starting_with_bm(
    ctx: ToolContext, workspace: Path
) -> None:
    header = b"BM" + (70).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little")
    dib = (40).to_bytes(4, "little") + (1).to_bytes(4, "little") * 2
    dib += (1).to_bytes(2, "little") + (24).to_bytes(2, "little")
    (workspace / "pic.bmp").write_bytes(header + dib + bytes(30))
    (workspace / "cars.txt").write_text("BMW and other cars, a text file of some length\n")
    with trio.fail_after(5):
        image = await invoke_tool(ReadTool(), {"path": "pic.bmp"}, ctx)
        text = await invoke_tool(ReadTool(), {"path": "cars.txt"}, ctx)
    assert isinstance(image.content[1], ImageContent)
    assert image.content[1].mimeType == "image/png"  # converted, as OpenClaw's read does
    assert image.content[0] == TextContent(
        text="Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
    )
    assert _text(text).startswith("BMW and other cars")


_IS_A_DIRECTORY = "is a directory. List the directory, then read a specific file."


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing.txt", "File not found: {ws}/missing.txt."),
        ("dd", "File not found: {ws}/dd. Did you mean: d?"),
        ("d", f"Read requires a file path, but d {_IS_A_DIRECTORY}"),
        (".", f"Read requires a file path, but . {_IS_A_DIRECTORY}"),
    ],
)
async def test_read_errors_are_results(
    ctx: ToolContext, workspace: Path, path: str, message: str
) -> None:
    (workspace / "d").mkdir()
    with trio.fail_after(5):
        result = await invoke_tool(ReadTool(), {"path": path}, ctx)
    assert thrown(result, "read") == message.format(ws=workspace)


ENV_TEXT = (
    "# comment\nDATABASE_URL=postgres://user:s3cretpassw0rd@db:5432/app\n"
    "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\nPORT=8080\n"
)


@pytest.mark.parametrize("name", [".env", "config/.env.local", "prod.env", "X.ENV"])
async def test_read_masks_the_credentials_of_a_dotenv_file(
    ctx: ToolContext, workspace: Path, name: str
) -> None:
    """OpenClaw's read runs redactSecrets over a `.env` file's page: what it answered for
    these lines (its own functions under Node 24), in the text and the details alike."""
    (workspace / name).parent.mkdir(parents=True, exist_ok=True)
    (workspace / name).write_text(ENV_TEXT)
    (workspace / "notes.txt").write_text(ENV_TEXT)
    with trio.fail_after(5):
        masked = await invoke_tool(ReadTool(), {"path": name}, ctx)
        plain = await invoke_tool(ReadTool(), {"path": "notes.txt"}, ctx)
    openclaws = (
        "# comment\nDATABASE_URL=postgres://user:***@db:5432/app\n"
        "GITHUB_TOKEN=ghp_ab…6789\nPORT=8080\n"
    )
    assert _text(masked) == openclaws
    assert masked.details is not None and masked.details["content"] == openclaws
    assert _text(plain) == ENV_TEXT  # any other file: as it is


async def test_empty_file(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "empty").write_text("")
    with trio.fail_after(5):
        result = await invoke_tool(ReadTool(), {"path": "empty"}, ctx)
    assert not result.is_error
    assert _text(result) == "File is empty (0 bytes)."
    assert result.details == {"kind": "text", "content": "File is empty (0 bytes)."}


async def test_file_tools_refuse_escapes_without_touching_outside(
    ctx: ToolContext, workspace: Path, outside: Path
) -> None:
    (workspace / "leak").symlink_to(outside / "secret.txt")
    (workspace / "out").symlink_to(outside / "planted.txt")
    with trio.fail_after(5):
        read_up = await invoke_tool(ReadTool(), {"path": "../outside/secret.txt"}, ctx)
        read_link = await invoke_tool(ReadTool(), {"path": "leak"}, ctx)
        write_abs = await invoke_tool(
            WriteTool(), {"path": str(outside / "planted.txt"), "content": "x"}, ctx
        )
        write_dangling = await invoke_tool(WriteTool(), {"path": "out", "content": "x"}, ctx)
        edit_link = await invoke_tool(
            EditTool(), {"path": "leak", "edits": [{"oldText": "top", "newText": "no"}]}, ctx
        )
    results = (read_up, read_link, write_abs, write_dangling, edit_link)
    hint = (
        ". Use a relative path under `.openclaw/tmp/` inside the workspace for scratch/temp/meta "
        "files that file tools need to read or write later."
    )
    tools = ["read", "read", "write", "write", "edit"]
    assert [thrown(r, t) for r, t in zip(results, tools, strict=True)] == [
        f"Path escapes sandbox root ({workspace}): ../outside/secret.txt{hint}",
        f"Symlink escapes sandbox root ({workspace}): {workspace}/leak",
        f"Path escapes sandbox root ({workspace}): {outside}/planted.txt{hint}",
        f"Symlink escapes sandbox root ({workspace}): {workspace}/out",
        f"Symlink escapes sandbox root ({workspace}): {workspace}/leak",
    ]
    assert not (outside / "planted.txt").exists()
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_write_refuses_a_fifo(ctx: ToolContext, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    with trio.fail_after(5):
        result = await invoke_tool(WriteTool(), {"path": "pipe", "content": "x"}, ctx)
    assert thrown(result, "write") == "'pipe' is a FIFO, not a regular file"
