"""apply_patch against a real workspace: OpenClaw's envelope (add, update with context,
delete, move), all files or none, and paths refused outside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools import ApplyPatchTool, PatchError, parse_patch
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._thrown import thrown


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def patch(ctx: ToolContext, *body: str) -> ToolResult:
    text = "\n".join(["*** Begin Patch", *body, "*** End Patch"])
    with trio.fail_after(5):
        return await invoke_tool(ApplyPatchTool(), {"input": text}, ctx)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


async def test_add_update_delete_and_move_in_one_patch(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("import os\n\ndef main():\n    return 1\n\nmain()\n")
    (workspace / "old.txt").write_text("bye\n")
    (workspace / "notes.md").write_text("# Notes\nfirst\nsecond\n")
    result = await patch(
        ctx,
        "*** Add File: docs/new.md",
        "+hello",
        "+world",
        "*** Update File: src/app.py",
        "@@ def main():",
        "-    return 1",
        "+    return 2",
        "*** Delete File: old.txt",
        "*** Update File: notes.md",
        "*** Move to: archive/notes.md",
        "@@",
        " first",
        "-second",
        "+third",
    )
    assert not result.is_error, _text(result)
    assert _text(result) == (
        "Success. Updated the following files:\n"
        "A docs/new.md\nM src/app.py\nM archive/notes.md\nD old.txt"
    )
    assert result.details == {
        "summary": {
            "added": ["docs/new.md"],
            "modified": ["src/app.py", "archive/notes.md"],
            "deleted": ["old.txt"],
        }
    }
    assert (workspace / "docs" / "new.md").read_text() == "hello\nworld\n"
    assert (workspace / "src" / "app.py").read_text() == (
        "import os\n\ndef main():\n    return 2\n\nmain()\n"
    )
    assert not (workspace / "old.txt").exists() and not (workspace / "notes.md").exists()
    assert (workspace / "archive" / "notes.md").read_text() == "# Notes\nfirst\nthird\n"
    assert all(".patch-" not in name and ".orig-" not in name for name in snapshot(workspace))


async def test_context_picks_the_right_occurrence_and_endings_are_kept(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "a.txt").write_bytes(b"[one]\nx = 1\n[two]\r\nx = 1\r\n")
    result = await patch(ctx, "*** Update File: a.txt", "@@ [two]", "-x = 1", "+x = 2")
    assert not result.is_error, _text(result)
    assert (workspace / "a.txt").read_bytes() == b"[one]\nx = 1\n[two]\r\nx = 2\r\n"
    ambiguous = await patch(ctx, "*** Update File: a.txt", "@@", "-x = 1", "+x = 3")
    assert not ambiguous.is_error  # one `x = 1` is left
    again = await patch(ctx, "*** Update File: a.txt", "@@", "-x = 9", "+x = 3")
    # OpenClaw names the file by its absolute path in a hunk's failure
    assert (
        thrown(again, "apply_patch")
        == f"Failed to find expected lines in {workspace}/a.txt:\nx = 9"
    )


async def test_a_patch_changes_every_file_or_none(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "keep.txt").write_text("one\n")
    (workspace / "other.txt").write_text("two\n")
    before = snapshot(workspace)
    result = await patch(
        ctx,
        "*** Add File: added.txt",
        "+new",
        "*** Update File: keep.txt",
        "-one",
        "+ONE",
        "*** Delete File: other.txt",
        "*** Update File: keep.txt",
        "@@",
        "-not there",
        "+x",
    )
    message = f"Failed to find expected lines in {workspace}/keep.txt:\nnot there"
    assert thrown(result, "apply_patch") == message
    assert snapshot(workspace) == before


async def test_a_failure_while_writing_puts_every_file_back(
    ctx: ToolContext, workspace: Path
) -> None:
    """The plan holds, but the disk refuses the second file (its temporary name is longer
    than a file name may be): the first one, already staged, is not left changed."""
    (workspace / "a.txt").write_text("a\n")
    (workspace / "gone.txt").write_text("gone\n")
    before = snapshot(workspace)
    long_name = "n" * 245
    result = await patch(
        ctx,
        "*** Update File: a.txt",
        "-a",
        "+A",
        "*** Delete File: gone.txt",
        f"*** Add File: {long_name}",
        "+x",
    )
    assert result.is_error and "nothing changed" in _text(result)
    assert snapshot(workspace) == before
    assert sorted(snapshot(workspace)) == ["a.txt", "gone.txt"]


@pytest.mark.parametrize(
    "path", ["../escape.txt", "/etc/passwd", "link/inside.txt", "sub/../../escape.txt"]
)
async def test_paths_outside_the_workspace_are_refused(
    ctx: ToolContext, workspace: Path, tmp_path: Path, path: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (workspace / "link").symlink_to(outside)
    (workspace / "sub").mkdir()
    (workspace / "mine.txt").write_text("mine\n")
    before = snapshot(workspace)
    result = await patch(
        ctx, "*** Update File: mine.txt", "-mine", "+ours", f"*** Add File: {path}", "+x"
    )
    link = f"{workspace}/link"  # OpenClaw's texts (its peer): the root, the path or the link
    escape = "Symlink escapes" if path.startswith("link/") else "Path escapes"
    message = f"{escape} sandbox root ({workspace}): {link if path.startswith('link/') else path}"
    assert thrown(result, "apply_patch") == message
    assert snapshot(workspace) == before
    assert list(outside.iterdir()) == [] and not (tmp_path / "escape.txt").exists()


async def test_moving_out_of_the_workspace_is_refused(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    result = await patch(ctx, "*** Update File: a.txt", "*** Move to: ../a.txt", "-a", "+b")
    assert thrown(result, "apply_patch") == f"Path escapes sandbox root ({workspace}): ../a.txt"
    assert (workspace / "a.txt").read_text() == "a\n"


async def test_bad_patches_say_what_is_wrong(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    cases = {
        "": "Provide a patch input.",
        "*** Update File: a.txt\n-a\n+b": "The first line of the patch must be '*** Begin Patch'",
        "*** Begin Patch\n*** Update File: a.txt\n-a\n+b": (
            "The last line of the patch must be '*** End Patch'"
        ),
        "*** Begin Patch\n*** Frobnicate: a.txt\n*** End Patch": "is not a valid hunk header",
        "*** Begin Patch\n*** End Patch": "No files were modified.",
        "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch": "Cannot create a.txt: the file already exists",
        "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch": "file not found",
    }
    for text, expected in cases.items():
        with trio.fail_after(5):
            result = await invoke_tool(ApplyPatchTool(), {"input": text}, ctx)
        assert result.is_error and expected in _text(result), (text, _text(result))
    assert (workspace / "a.txt").read_text() == "a\n"


def test_parse_tolerates_a_heredoc_and_names_the_bad_line() -> None:
    ops = parse_patch("<<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF")
    assert [(op.kind, op.path) for op in ops] == [("delete", "x")]
    # `bad` is line 6, but OpenClaw's parser names the line after it, as if `bad` were an @@ line
    with pytest.raises(PatchError, match=r"at line 7: Unexpected line found in update hunk: 'bad'"):
        parse_patch(
            "*** Begin Patch\n*** Update File: x\n@@\n-a\n*** Update File: y\nbad\n*** End Patch"
        )


async def test_an_update_that_changes_nothing_says_so(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    result = await patch(ctx, "*** Update File: a.txt", " a")
    assert not result.is_error and _text(result) == "No changes made to a.txt."
