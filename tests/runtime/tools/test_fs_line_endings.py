"""Line endings in `read` and `edit` as OpenClaw 2026.9.6 has them: `read` shows CRLF as LF (a
lone CR kept, a BOM dropped), so `edit` matches on LF and writes every line back with the ending
it had; checked against OpenClaw's own `read` and `edit` tools under Node when its package is
installed."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools._edit import EditTool
from runtime.tools._fs import ReadTool
from runtime.tools._line_endings import (
    Replacement,
    normalize_to_lf,
    read_view_line,
    restore_line_endings,
)
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests.runtime.tools._openclaw_node import openclaw_exports, run_node

MIXED = b"one\r\ntwo\rthree\nfour\r\n\r\nlast"
"""CRLF, a lone CR inside a line, LF, an empty CRLF line and a last line without an ending."""


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def _read(ctx: ToolContext, path: str, **more: int) -> ToolResult:
    with trio.fail_after(5):
        return await invoke_tool(ReadTool(), {"path": path, **more}, ctx)


async def _edit(ctx: ToolContext, path: str, old: str, new: str) -> ToolResult:
    with trio.fail_after(5):
        edits = [{"oldText": old, "newText": new}]
        return await invoke_tool(EditTool(), {"path": path, "edits": edits}, ctx)


# --- read --------------------------------------------------------------------------------------


async def test_read_shows_crlf_as_lf_and_keeps_a_lone_cr(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "mixed.txt").write_bytes(MIXED)
    (workspace / "bom.txt").write_bytes(b"\xef\xbb\xbfbom\r\nx\r\r\n")
    assert _text(await _read(ctx, "mixed.txt")) == "one\ntwo\rthree\nfour\n\nlast"
    assert _text(await _read(ctx, "bom.txt")) == "bom\nx\r\n"  # CR CR LF: a lone CR, then CRLF
    # Lines are counted at LF only: line 2 is two<CR>three.
    page = _text(await _read(ctx, "mixed.txt", offset=2, limit=1))
    assert page == "two\rthree\n\n[3 more lines in file. Use offset=3 to continue.]"


def test_one_line_of_the_read_view() -> None:
    assert read_view_line(b"\xef\xbb\xbfa\r\n", first=True) == b"a\n"
    assert read_view_line(b"\xef\xbb\xbfa\r\n", first=False) == b"\xef\xbb\xbfa\n"
    assert read_view_line(b"a\rb\r\r\n", first=False) == b"a\rb\r\n"
    assert read_view_line(b"last\r", first=False) == b"last\r"


# --- edit --------------------------------------------------------------------------------------


async def test_edit_takes_text_copied_from_read_in_a_file_of_mixed_endings(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "mixed.txt").write_bytes(MIXED)
    shown = _text(await _read(ctx, "mixed.txt"))
    old = shown[: shown.index("four") + 4]  # one / two<CR>three / four, as read showed them
    result = await _edit(ctx, "mixed.txt", old, "ONE\nTWO\rTHREE\nFOUR")
    assert not result.is_error, _text(result)
    # Every line keeps the ending it had; the rest of the file is untouched.
    assert (workspace / "mixed.txt").read_bytes() == b"ONE\r\nTWO\rTHREE\nFOUR\r\n\r\nlast"
    assert result.details is not None and result.details["firstChangedLine"] == 1


async def test_edit_gives_added_lines_the_endings_of_those_they_replace(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "win.txt").write_bytes(b"\xef\xbb\xbfa\r\nb\r\nc\r\n")
    added = await _edit(ctx, "win.txt", "b\n", "b\nb2\nb3\n")
    assert not added.is_error, _text(added)
    assert (workspace / "win.txt").read_bytes() == b"\xef\xbb\xbfa\r\nb\r\nb2\r\nb3\r\nc\r\n"
    # oldText written with CRLF matches as well; a lone CR in it matches a line break too.
    joined = await _edit(ctx, "win.txt", "b\r\nb2\rb3", "b-all")
    assert not joined.is_error, _text(joined)
    assert (workspace / "win.txt").read_bytes() == b"\xef\xbb\xbfa\r\nb-all\r\nc\r\n"


async def test_an_edit_of_line_endings_only_changes_nothing(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "win.txt").write_bytes(b"a\r\nb\r\n")
    result = await _edit(ctx, "win.txt", "a\r\nb", "a\nb")
    assert not result.is_error
    assert (
        _text(result) == "No changes made to win.txt. The replacement produced identical content."
    )
    assert result.details == {"changed": False}
    assert (workspace / "win.txt").read_bytes() == b"a\r\nb\r\n"


def test_restoring_endings_of_several_replacements_on_shared_lines() -> None:
    original = "a\r\nb\rc\nd"
    base = normalize_to_lf(original)
    replacements = [Replacement(0, 1, "A"), Replacement(2, 3, "B\nx\ny\nC"), Replacement(6, 1, "D")]
    # b<CR>c (one line break) replaced by four lines: their breaks take the ending of the
    # replaced line break's line, b's CR, and c's LF stays after C.
    assert restore_line_endings(original, base, replacements) == "A\r\nB\rx\ry\rC\nD"
    with pytest.raises(ValueError, match="different line count"):
        restore_line_endings(original, "a\nb", replacements)


# --- against OpenClaw's own tools --------------------------------------------------------------


_WORDS = ("a", "b", "ab", "é", "x=1;", "\U0001f600", "{", "}")
_ENDINGS = ("\n", "\r\n", "\r")


def _random_lines(rng: random.Random, lines: int, *, last_ending: bool) -> str:
    out = []
    for n in range(lines):
        out.append("".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3))))
        if n < lines - 1 or last_ending:
            out.append(rng.choice(_ENDINGS))
    return "".join(out)


def _random_file(rng: random.Random) -> bytes:
    text = _random_lines(rng, rng.randint(1, 7), last_ending=rng.random() < 0.6)
    if rng.random() < 0.2:
        text = text.replace("\r\n", "\r\r\n", 1)
    return (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + text.encode()


async def test_read_gives_what_openclaws_read_gives(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    found = openclaw_exports(
        ("tools-*.mjs", "createReadTool"), ("agent-tools.read-*.mjs", "createOpenClawReadTool")
    )
    (base, base_name), (wrapper, wrapper_name) = found.values()
    rng = random.Random(32)
    files = {"mixed.txt": MIXED, **{f"r{i}.txt": _random_file(rng) for i in range(150)}}
    for name, data in files.items():
        (workspace / name).write_bytes(data)
    theirs = await run_node(
        tmp_path / "read.mjs",
        f"import {{ {base_name} as createReadTool }} from {json.dumps(str(base))};\n"
        f"import {{ {wrapper_name} as wrap }} from {json.dumps(str(wrapper))};\n"
        f"const tool = wrap(createReadTool({json.dumps(str(workspace))}), {{}});\n"
        "const out = {};\n"
        f"for (const path of {json.dumps(list(files))}) {{\n"
        '  const result = await tool.execute("call-1", { path });\n'
        "  out[path] = result.content.filter((b) => b.type === 'text').map((b) => b.text).join('');\n"
        "}\n"
        "process.stdout.write(JSON.stringify(out));\n",
    )
    ours = {name: _text(await _read(ctx, name)) for name in files}
    assert ours == theirs


async def test_edit_writes_what_openclaws_edit_writes(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    """Random files of mixed endings (CRLF, CR, LF, CR CR LF, a BOM), edited with text copied
    from what `read` shows (sometimes written back with CRLF) and replaced by lines of any
    ending: the same bytes written, the same calls refused (oldText not unique), the same
    calls answered with no change (a change of line endings only), as the edit tool OpenClaw's
    agent runs (createHostWorkspaceEditTool: a blank oldText is refused)."""
    ((module, name),) = openclaw_exports(
        ("agent-tools.read-*.mjs", "createHostWorkspaceEditTool")
    ).values()
    rng = random.Random(9)
    theirs_dir = tmp_path / "theirs"
    theirs_dir.mkdir()
    cases: list[dict[str, str]] = []
    while len(cases) < 600:
        data = _random_file(rng)
        view = data.decode().removeprefix("\ufeff").replace("\r\n", "\n")
        start = rng.randrange(len(view))
        old = view[start : rng.randint(start + 1, len(view))]
        if rng.random() < 0.3:
            old = old.replace("\n", "\r\n")
        new = _random_lines(rng, rng.randint(1, 4), last_ending=rng.random() < 0.5)
        path = f"e{len(cases)}.txt"
        (workspace / path).write_bytes(data)
        (theirs_dir / path).write_bytes(data)
        cases.append({"path": path, "old": old, "new": new})
    refused = await run_node(
        tmp_path / "edit.mjs",
        f"import {{ {name} as createEditTool }} from {json.dumps(str(module))};\n"
        f"const tool = createEditTool({json.dumps(str(theirs_dir))}, {{}});\n"
        "const out = [];\n"
        f"for (const c of {json.dumps(cases)}) {{\n"
        "  try {\n"
        '    await tool.execute("call-1", { path: c.path, edits: [{ oldText: c.old, newText: c.new }] });\n'
        "    out.push(false);\n"
        "  } catch { out.push(true); }\n"
        "}\n"
        "process.stdout.write(JSON.stringify(out));\n",
    )
    assert any(refused) and not all(refused)
    for case, their_refusal in zip(cases, refused, strict=True):
        result = await _edit(ctx, case["path"], case["old"], case["new"])
        mine, theirs = (
            (workspace / case["path"]).read_bytes(),
            (theirs_dir / case["path"]).read_bytes(),
        )
        assert (result.is_error, mine) == (their_refusal, theirs), (case, _text(result))
