"""`edit` as OpenClaw 2026.9.6 has it: `{path, edits: [{oldText, newText}]}` (and the older
top-level pair), every edit matched against the original text (exactly, else fuzzily), unique
and not overlapping, a no-op answered "No changes made", details `{changed, diff, patch,
firstChangedLine}`; checked on a real workspace and against OpenClaw's own edit tool, line diff
and grapheme segmenter under Node when its package is installed."""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools import tool_spec
from runtime.tools._edit import EditTool, prepare_edit_arguments
from runtime.tools._graphemes import grapheme_spans
from runtime.tools._line_diff import display_diff, format_patch, structured_patch
from runtime.tools._line_endings import normalize_to_lf
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._thrown import thrown
from tests.runtime.tools._openclaw_node import (
    PACKAGE,
    imports,
    openclaw_exports,
    require_node,
    run_node,
)


def _text(result: ToolResult) -> str:
    """The result's text; a failure's message (checking OpenClaw's thrown-tool shape)."""
    if result.is_error and result.details is not None:
        return thrown(result, "edit")
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def _edit(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    with trio.fail_after(5):
        return await invoke_tool(EditTool(), args, ctx)


def _edits(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"oldText": old, "newText": new} for old, new in pairs]


# --- arguments ---------------------------------------------------------------------------------


def test_the_schema_offered_is_openclaws() -> None:
    spec = tool_spec(EditTool())
    assert spec.parameters["required"] == ["path", "edits"]
    item = spec.parameters["properties"]["edits"]["items"]
    assert item["required"] == ["oldText", "newText"]
    assert set(item["properties"]) == {"oldText", "newText"}


def test_arguments_are_prepared_as_openclaw_prepares_them() -> None:
    # The older top-level pair joins edits (once); other keys are dropped.
    assert prepare_edit_arguments({"path": "f", "oldText": "a", "newText": "b", "extra": 1}) == {
        "path": "f",
        "edits": _edits(("a", "b")),
    }
    assert prepare_edit_arguments(
        {"path": "f", "edits": _edits(("a", "b")), "oldText": "a", "newText": "b"}
    ) == {"path": "f", "edits": _edits(("a", "b"))}
    assert prepare_edit_arguments(
        {
            "path": "f",
            "edits": [{"oldText": "x", "newText": "y", "note": 1}],
            "oldText": "a",
            "newText": "b",
        }
    ) == {"path": "f", "edits": _edits(("x", "y"), ("a", "b"))}
    # edits as a JSON string, with a raw newline and a stray backslash repaired.
    assert prepare_edit_arguments(
        {"path": "f", "edits": '[{"oldText": "a\nb", "newText": "c\\d"}]'}
    ) == {"path": "f", "edits": _edits(("a\nb", "c\\d"))}
    assert prepare_edit_arguments({"path": "f", "edits": "not json"}) == {
        "path": "f",
        "edits": "not json",
    }


async def test_several_edits_are_matched_against_the_original(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "code.py").write_text("a = 1\nb = 2\nc = 3\n")
    result = await _edit(
        ctx, {"path": "code.py", "edits": _edits(("c = 3", "c = 30"), ("a = 1\n", "a = 10\nz\n"))}
    )
    assert not result.is_error, _text(result)
    assert _text(result) == "Successfully replaced 2 block(s) in code.py."
    assert (workspace / "code.py").read_text() == "a = 10\nz\nb = 2\nc = 30\n"
    assert result.details == {
        "changed": True,
        "diff": "-1 a = 1\n+1 a = 10\n+2 z\n 3 b = 2\n-3 c = 3\n+4 c = 30",
        "patch": "--- code.py\n+++ code.py\n@@ -1,3 +1,4 @@\n-a = 1\n+a = 10\n+z\n b = 2\n"
        "-c = 3\n+c = 30\n",
        "firstChangedLine": 1,
    }


async def test_the_older_form_and_a_json_string_of_edits_are_accepted(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("one\ntwo\n")
    legacy = await _edit(ctx, {"path": "f.txt", "oldText": "one", "newText": "1"})
    string = await _edit(ctx, {"path": "f.txt", "edits": json.dumps(_edits(("two", "2")))})
    assert [_text(legacy), _text(string)] == [
        "Successfully replaced 1 block(s) in f.txt.",
        "Successfully replaced 1 block(s) in f.txt.",
    ]
    assert (workspace / "f.txt").read_text() == "1\n2\n"


async def test_a_no_op_changes_nothing_but_must_find_its_target(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("same\nsame\nother\n")
    unchanged = await _edit(ctx, {"path": "f.txt", "edits": _edits(("other", "other"))})
    assert not unchanged.is_error
    assert _text(unchanged) == (
        "No changes made to f.txt. The replacement text is identical to the original."
    )
    assert unchanged.details == {"changed": False}
    ambiguous = await _edit(ctx, {"path": "f.txt", "edits": _edits(("same", "same"))})
    assert ambiguous.is_error
    assert _text(ambiguous).startswith("Found 2 occurrences of the text in f.txt.")
    # A no-op beside a real edit it overlaps is refused, numbered in the combined call.
    overlap = await _edit(
        ctx, {"path": "f.txt", "edits": _edits(("other", "other"), ("e\nother", "E"))}
    )
    assert _text(overlap) == (
        "edits[1] and edits[0] overlap in f.txt. Merge them into one edit or target disjoint "
        "regions."
    )
    assert (workspace / "f.txt").read_text() == "same\nsame\nother\n"


async def test_fuzzy_matching_finds_typographic_and_trailing_space_variants(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("say \u201chi\u201d \u2014 it\u2019s ok   \nnext\u00a0line\n")
    result = await _edit(
        ctx,
        {
            "path": "f.txt",
            "edits": _edits(('say "hi" - it\'s ok\nnext', "said"), ("line", "LINE")),
        },
    )
    assert not result.is_error, _text(result)
    # The fuzzy match replaced the original characters (trailing spaces included) only.
    assert (workspace / "f.txt").read_text() == "said\u00a0LINE\n"


async def test_a_fuzzy_match_inside_what_one_character_became_is_refused(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "f.txt").write_text("con\ufb01g\n")  # the "fi" ligature: NFKC makes it two
    inside = await _edit(ctx, {"path": "f.txt", "edits": _edits(("conf", "x"))})
    assert _text(inside) == (
        "The fuzzy match in f.txt crosses an ambiguous Unicode-normalization or "
        "trimmed-whitespace boundary. Copy the exact source text or use a span whose normalized "
        "boundaries map cleanly."
    )
    whole = await _edit(ctx, {"path": "f.txt", "edits": _edits(("config", "settings"))})
    assert not whole.is_error
    assert (workspace / "f.txt").read_text() == "settings\n"


async def test_errors_are_openclaws(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "f.txt").write_text("def run(self):\n    return 1\n")
    (workspace / "dir").mkdir()
    missing = await _edit(ctx, {"path": "f.txt", "edits": _edits(("  return 2", "x"))})
    assert _text(missing) == "\n".join(
        [
            "Could not find the exact text in f.txt. The old text must match exactly including "
            "all whitespace and newlines.",
            "Closest matching lines:",
            "  near line 2 (88% match):",
            '    expected: "  return 2"',
            '    found:    "    return 1"',
            "                 ^^^^^^^^^^^",
            "    hint: indentation differs (expected 2 spaces, found 4 spaces)",
            "Current file contents:",
            "def run(self):",
            "    return 1",
            "",
        ]
    )
    second = await _edit(ctx, {"path": "f.txt", "edits": _edits(("def", "fn"), ("nope", "x"))})
    assert _text(second).startswith("Could not find edits[1] in f.txt.")
    assert "Current file contents" not in _text(second)
    cases: dict[str, dict[str, Any]] = {
        "Missing required parameter: edits (received: path, edits=<array>). Supply correct "
        "parameters before retrying.": {"path": "f.txt", "edits": []},
        "Missing required parameters: path, edits (received: path=<empty-string>, "
        "edits=<array>). Supply correct parameters before retrying.": {
            "path": " ",
            "edits": _edits((" ", "x")),
        },
        "Could not edit file: nope.txt. Error code: ENOENT.": {
            "path": "nope.txt",
            "edits": _edits(("a", "b")),
        },
        "EISDIR: illegal operation on a directory, read": {
            "path": "dir",
            "edits": _edits(("a", "b")),
        },
    }
    for message, args in cases.items():
        result = await _edit(ctx, args)
        assert (result.is_error, _text(result)) == (True, message)
    (workspace / "bin").write_bytes(b"\xff\xfe\x00abc")
    binary = await _edit(ctx, {"path": "bin", "edits": _edits(("abc", "x"))})
    assert _text(binary) == (
        f"File {await trio.Path(workspace).resolve() / 'bin'} is not valid UTF-8 and cannot be "
        "edited safely."
    )
    bad = await _edit(ctx, {"path": "f.txt", "edits": [{"oldText": "a"}]})
    assert bad.is_error and "newText" in _text(bad)
    assert (workspace / "f.txt").read_text() == "def run(self):\n    return 1\n"


# --- against OpenClaw's own code ---------------------------------------------------------------

_WORDS = (
    "a", "b", "ab", "x = 1;", "return", "\u00e9", "e\u0301", "\ufb01le", "\u2019s",
    "\u201cq\u201d", "\u2014", "\u00a0", "\uff21", "\u2460", "\U0001f600", "\U0001f44d\U0001f3fd",
    "{", "}", "\t", "  ", "\uac00", "\u0915\u094d\u0937", "\\", '"',
)  # fmt: skip
_ENDINGS = ("\n", "\n", "\n", "\r\n", "\r")


def _random_text(rng: random.Random, lines: int, *, last_ending: bool) -> str:
    out = []
    for n in range(lines):
        out.append("".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.2:
            out.append(rng.choice((" ", "  ", "\t", "\u00a0")))
        if n < lines - 1 or last_ending:
            out.append(rng.choice(_ENDINGS))
    return "".join(out)


def _variant(rng: random.Random, text: str) -> str:
    """`text` as a model might misquote it: normalized, ASCII quotes, no trailing spaces."""
    kind = rng.randrange(5)
    if kind == 0:
        return unicodedata.normalize("NFKC", text)
    if kind == 1:
        return text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    if kind == 2:
        return "\n".join(line.rstrip(" \t\u00a0") for line in text.split("\n"))
    if kind == 3:
        return text.replace("\u2014", "-").replace("\u00a0", " ")
    return unicodedata.normalize("NFD", text)


def _random_edit(rng: random.Random, view: str) -> dict[str, str]:
    old = ""
    while not old.strip() and (not old or rng.random() < 0.9):  # now and then a blank one
        start = rng.randrange(len(view))
        old = view[start : rng.randint(start + 1, min(len(view), start + 40))]
    roll = rng.random()
    if roll < 0.25:
        old = _variant(rng, old)
    elif roll < 0.35:
        old = _random_text(rng, rng.randint(1, 2), last_ending=False)  # most likely absent
    elif roll < 0.4:
        old = old.replace("\n", "\r\n")
    new = old if rng.random() < 0.1 else _random_text(rng, rng.randint(1, 3), last_ending=False)
    return {"oldText": old, "newText": new}


def _random_case(rng: random.Random, path: str, view: str) -> dict[str, Any]:
    edits = [_random_edit(rng, view) for _ in range(rng.choice((1, 1, 1, 2, 2, 3)))]
    form = rng.random()
    if form < 0.1 and len(edits) == 1:
        return {"path": path, **edits[0]}
    if form < 0.2:
        return {"path": path, "edits": json.dumps(edits, ensure_ascii=rng.random() < 0.5)}
    return {"path": path, "edits": edits}


async def test_edit_answers_and_writes_what_openclaws_edit_does(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    """Random files (mixed endings, a BOM, ligatures, combining marks, typographic quotes,
    emoji, trailing spaces) and random calls of one to three edits, exact, fuzzy, absent,
    overlapping, no-op, in every argument form: the same result (error or not, text, details)
    and the same bytes on disk as OpenClaw's own edit tool (createHostWorkspaceEditTool, its
    prepareArguments first) gives."""
    found = openclaw_exports(("agent-tools.read-*.mjs", "createHostWorkspaceEditTool"))
    rng = random.Random(2026)
    theirs_dir = tmp_path / "theirs"
    theirs_dir.mkdir()
    cases: list[dict[str, Any]] = []
    views: list[str] = []
    for n in range(500):
        text = _random_text(rng, rng.randint(1, 8), last_ending=rng.random() < 0.7)
        data = (b"\xef\xbb\xbf" if rng.random() < 0.15 else b"") + text.encode()
        path = f"f{n}.txt"
        for where in (workspace, theirs_dir):
            (where / path).write_bytes(data)
        view = data.decode().removeprefix("\ufeff").replace("\r\n", "\n")
        cases.append(_random_case(rng, path, view))
        views.append(view)
    theirs = await run_node(
        tmp_path / "edit.mjs",
        imports(found)
        + f"const tool = createHostWorkspaceEditTool({json.dumps(str(theirs_dir))}, {{}});\n"
        "const out = [];\n"
        f"for (const args of {json.dumps(cases)}) {{\n"
        "  try {\n"
        '    const result = await tool.execute("call-1", tool.prepareArguments(args));\n'
        "    const text = result.content.map((b) => b.text).join('');\n"
        "    out.push([false, text, result.details ?? null]);\n"
        "  } catch (error) {  // what OpenClaw's tool adapter answers for a throw\n"
        '    const payload = { status: "error", tool: "edit", error: error.message };\n'
        "    out.push([true, JSON.stringify(payload, null, 2), payload]);\n"
        "  }\n"
        "}\n"
        "process.stdout.write(JSON.stringify(out));\n",
    )
    outcomes: dict[str, int] = {}
    for case, view, their in zip(cases, views, theirs, strict=True):
        result = await _edit(ctx, case)
        mine = [result.is_error, "".join(getattr(b, "text", "") for b in result.content)]
        mine.append(result.details)
        assert mine == their, case
        path = case["path"]
        assert (workspace / path).read_bytes() == (theirs_dir / path).read_bytes(), case
        kind = _text(result).split(" ")[0]
        if kind == "Successfully" and any(
            normalize_to_lf(e["oldText"]) not in view for e in prepare_edit_arguments(case)["edits"]
        ):
            kind = "fuzzy"
        outcomes[kind] = outcomes.get(kind, 0) + 1
    # Every outcome is reached: exact and fuzzy changes, no-ops, each kind of refusal.
    expected = {"Successfully", "fuzzy", "No", "Could", "Found", "The", "edits[0]", "Missing"}
    assert expected <= set(outcomes), outcomes


async def test_line_diffs_are_jsdiffs(tmp_path: Path) -> None:
    """structuredPatch / the patch text / OpenClaw's numbered diff view of random pairs of
    texts (shared lines, moved lines, CRLF, missing final newlines) are jsdiff's and
    OpenClaw's generateDiffString's."""
    require_node()
    jsdiff = PACKAGE.parent / "diff" / "libesm" / "index.js"  # the jsdiff OpenClaw imports
    if not jsdiff.exists():
        pytest.skip(f"jsdiff is not installed beside the openclaw package ({jsdiff})")
    rng = random.Random(7)
    pool = ["alpha", "beta", "gamma", "", "  x", "alpha", "}"]
    pairs = []
    for _ in range(400):
        old = "".join(
            rng.choice(pool) + rng.choice(("\n", "\n", "\r\n")) for _ in range(rng.randint(0, 14))
        )
        new = "".join(rng.choice(pool) + "\n" for _ in range(rng.randint(0, 14)))
        if rng.random() < 0.3:
            old = old.rstrip("\n")
        if rng.random() < 0.3:
            new = new.rstrip("\n")
        pairs.append([old, new])
    theirs = await run_node(
        tmp_path / "diff.mjs",
        f"import {{ structuredPatch, createPatch, FILE_HEADERS_ONLY }} from {json.dumps(str(jsdiff))};\n"
        "const out = [];\n"
        f"for (const [o, n] of {json.dumps(pairs)}) {{\n"
        "  const hunks = structuredPatch('', '', o, n, undefined, undefined, { context: 4 }).hunks;\n"
        "  out.push([hunks.map((h) => [h.oldStart, h.oldLines, h.newStart, h.newLines, h.lines]),\n"
        "    createPatch('dir/f \"q\".txt', o, n, undefined, undefined, { context: 4, headerOptions: FILE_HEADERS_ONLY })]);\n"
        "}\n"
        "process.stdout.write(JSON.stringify(out));\n",
    )
    for (old, new), (their_hunks, their_patch) in zip(pairs, theirs, strict=True):
        hunks = structured_patch(old, new)
        assert hunks is not None
        assert [
            [h.old_start, h.old_lines, h.new_start, h.new_lines, list(h.lines)] for h in hunks
        ] == their_hunks
        assert format_patch('dir/f "q".txt', hunks) == their_patch
    # The numbered view, from the edit tool's own results (generateDiffString), is checked by
    # test_edit_answers_and_writes_what_openclaws_edit_does; one fixed case here:
    assert display_diff("a\nb\nc\n", "a\nB\nc\n") == (" 1 a\n-2 b\n+2 B\n 3 c", 2)


async def test_grapheme_clusters_are_intl_segmenters(tmp_path: Path) -> None:
    """Random strings of combining marks, emoji with modifiers and ZWJ, flags, Hangul jamo,
    Indic conjuncts, controls and format characters cut where Node's Intl.Segmenter cuts."""
    require_node()
    alphabet = [
        "a", "e", "\u0301", "\u0308", "\u200d", "\u200c", "\U0001f44d", "\U0001f3fd",
        "\U0001f468", "\U0001f469", "\u2764", "\ufe0f", "\U0001f1eb", "\U0001f1f7", "\u0915",
        "\u094d", "\u0937", "\u093f", "\u0995", "\u09cd", "\u09a4", "\uac00", "\u1100",
        "\u1161", "\u11a8", "\uac01", "\n", "\r", "\t", "\u00ad", "\ufeff", "\u0600", "\u0e01",
        "\u0e33", "\ufb01", "\u3000", "\u0bc6", "\u0bbe", "\u0ba4", "\U000e0067",
    ]  # fmt: skip
    rng = random.Random(29)
    cases = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    theirs = await run_node(
        tmp_path / "segment.mjs",
        "const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });\n"
        f"const out = {json.dumps(cases)}.map((text) =>\n"
        "  [...segmenter.segment(text)].map((s) => [...s.segment].length));\n"
        "process.stdout.write(JSON.stringify(out));\n",
    )
    for text, lengths in zip(cases, theirs, strict=True):
        assert [end - start for start, end in grapheme_spans(text)] == lengths, repr(text)


@pytest.mark.parametrize("text", ["", "a", "a\r\nb", "\U0001f44d\U0001f3fd!"])
def test_grapheme_spans_cover_the_text(text: str) -> None:
    spans = grapheme_spans(text)
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(s < e for s, e in spans)
