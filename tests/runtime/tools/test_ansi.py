"""OpenClaw's output sanitizer (`runtime.tools._ansi`): escape sequences stripped across chunks
as its streaming parser strips them, controls escaped and format characters removed, memory
bounded however long an unterminated sequence runs; checked against OpenClaw's own functions
when its package is installed, and applied to real processes' output through `exec` and
`process`, pipes and terminals alike: there only, as OpenClaw applies it (`read` returns a
file's escapes as OpenClaw's `read` does, and `process list` a command's as written)."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import tracemalloc
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.llm._types import TextContent
from runtime.tools._ansi import AnsiStripper, OutputSanitizer, escape_controls
from runtime.tools._exec import ExecTool
from runtime.tools._fs import ReadTool
from runtime.tools._process import ProcessLimits, open_process_registry
from runtime.tools._process_tool import ProcessTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool

NODE = Path.home() / ".cache/node24/bin/node"
PACKAGE = Path.home() / ".cache/openclaw-peer/node_modules/openclaw"

MIXED = (
    "a\x1b[31mred\x1b[0m b\x1b]0;title\x07c\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ "
    "d\x9b1;2He\x9d0;t\x9cf\x1b(Bg\x1b7h\x1b[?25li"
)
"""CSI, OSC ended by BEL and by ESC \\, 8-bit CSI and OSC with 8-bit ST, a charset
designation, a two-character escape (ESC 7 takes the `h` after it, as the compat grammar
reads it), a private mode: what OpenClaw leaves of it is `ared bclink defgi`."""


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _stream(chunks: list[str]) -> str:
    stripper = AnsiStripper()
    return "".join(escape_controls(stripper.write(chunk)) for chunk in chunks)


# --- the grammar -------------------------------------------------------------------------------


def test_every_kind_of_sequence_is_stripped_whole_or_split_at_any_character() -> None:
    want = "ared bclink defgi"
    assert _stream([MIXED]) == want
    assert _stream(list(MIXED)) == want
    for cut in range(len(MIXED) + 1):
        assert _stream([MIXED[:cut], MIXED[cut:]]) == want, cut
    for a in range(len(MIXED) + 1):
        for b in range(a, len(MIXED) + 1):
            assert _stream([MIXED[:a], MIXED[a:b], MIXED[b:]]) == want, (a, b)


def test_an_osc_ends_at_bel_at_esc_backslash_and_at_the_8_bit_st() -> None:
    assert _stream(["x\x1b]0;title\x07y"]) == "xy"
    assert _stream(["x\x1b]0;title\x1b\\y"]) == "xy"
    assert _stream(["x\x9d0;title\x9cy"]) == "xy"
    assert _stream(["x\x1b]0;ti", "tle\x1b", "\\y"]) == "xy"
    # Unterminated, it swallows what follows, chunk after chunk, until its terminator.
    assert _stream(["x\x1b]0;title", " still the title\n", "more\x07y"]) == "xy"


def test_c1_controls_the_8_bit_introducers_are_stripped_the_others_escaped() -> None:
    assert _stream(["a\x9b1mb\x9d0;t\x07c"]) == "abc"
    # DCS, SOS, PM, APC and NEL are not sequences to OpenClaw: escaped as controls.
    assert _stream(["\x90dcs\x9c \x98 \x9e \x9f \x85"]) == "\\x90dcs\\x9c \\x98 \\x9e \\x9f \\x85"
    # Their 7-bit forms: ESC P and ESC X are two-character escapes, ESC ^ and ESC _ lose the ESC.
    assert _stream(["\x1bPq#0;2\x1b\\ \x1bXsos\x1b\\ \x1b^pm \x1b_apc"]) == "q#0;2\\ sos\\ ^pm _apc"


def test_format_characters_and_surrogates_are_removed() -> None:
    text = "soft\xadhy\u200bphen\ufeff\u202eevil\U000e0041\u2066x\ud800"
    assert escape_controls(text) == "softhyphenevilx"
    assert escape_controls("e\u0301 \U0001f600 \u00e9") == "e\u0301 \U0001f600 \u00e9"


def test_controls_but_tab_lf_and_cr_are_written_as_hex_escapes() -> None:
    assert escape_controls("\x00\x07\x08\t\n\r\x0b\x1a\x1b\x7f\x9f") == (
        "\\x00\\x07\\x08\t\n\r\\x0b\\x1a\\x1b\\x7f\\x9f"
    )


def test_a_control_inside_a_csi_is_kept_and_can_or_sub_cancels_it() -> None:
    assert _stream(["\x1b[1;2\nm x"]) == "\n x"
    assert _stream(["\x1b[1\x18m"]) == "m"
    assert _stream(["\x1b[1\x1am"]) == "m"
    assert _stream(["\x1b[1\x1b[2mz"]) == "z"


def test_the_compat_grammar_takes_at_most_four_digits_a_parameter() -> None:
    assert _stream(["\x1b[12345m \x1b12345m"]) == " m"
    assert _stream(["\x1b1234;5678Hz"]) == "z"


def test_cursor_queries_and_modes_are_reported_with_their_parameters() -> None:
    seen: list[str] = []
    stripper = AnsiStripper(seen.append)
    text = stripper.write("\x1b[6n\x1b[?6n\x1b[?1") + stripper.write("h\x1b[31m\x9b?1l")
    assert text == "" and seen == ["6n", "?6n", "?1h", "31m", "?1l"]
    long = "\x1b[" + "1;" * 40 + "m"  # parameters past 64 characters: stripped, not reported
    assert stripper.write(f"a{long}b") == "ab" and seen[-1] == "?1l"


def test_a_huge_unterminated_sequence_keeps_memory_constant() -> None:
    seen: list[str] = []
    stripper = AnsiStripper(seen.append)
    osc_chunk = "p" * 65536
    csi_chunk = "1;" * 32768
    tracemalloc.start()
    try:
        assert stripper.write("text\x1b]0;") == "text"
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(200):  # 13 MB of one OSC payload
            assert stripper.write(osc_chunk) == ""
        assert stripper.write("\x07after\x1b[") == "after"
        for _ in range(200):  # and of one CSI's parameters
            assert stripper.write(csi_chunk) == ""
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 32_768
    assert stripper.write("mend") == "end" and seen == []


def test_a_csi_open_at_the_streams_end_is_dropped() -> None:
    assert _stream(["a\x1b[3"]) == "a"


def test_bytes_are_decoded_across_chunks_and_a_broken_character_is_replaced() -> None:
    sanitizer = OutputSanitizer()
    data = "é\x1b[1m😀\x1b[0m".encode()
    assert "".join(sanitizer.feed(data[i : i + 1]) for i in range(len(data))) == "é😀"
    assert sanitizer.feed(b"\xff ok") == "\ufffd ok"
    assert sanitizer.feed(b"\xf0\x9f") == ""
    assert sanitizer.feed(b"", final=True) == "\ufffd"
    assert OutputSanitizer().feed("\u009b31mx".encode()) == "x"  # U+009B is the 8-bit CSI
    assert OutputSanitizer().feed(b"\x9b31mx") == "\ufffd31mx"  # a lone byte 0x9B is not


_ALPHABET = "\x1b\x1b\x9b\x9d\x9c\x07[]()#;?:0123456789mHn6PX^_\\~=<>cZ @\x18\x1a\x00\t\n\r\x7f\x85\xad\u200bé\U0001f600ab"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_how_a_stream_is_cut_never_changes_what_is_left(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    seen_whole: list[str] = []
    seen_cut: list[str] = []
    whole = escape_controls(AnsiStripper(seen_whole.append).write(text))
    stripper = AnsiStripper(seen_cut.append)
    assert "".join(escape_controls(stripper.write(c)) for c in chunks) == whole
    assert seen_cut == seen_whole
    assert re.search("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\xad\u200b]", whole) is None


def _openclaw_sanitizer() -> tuple[Path, str]:
    """OpenClaw's shell-utils module and the name it exports its streaming sanitizer as."""
    if not NODE.exists() or not (PACKAGE / "dist").is_dir():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    for module in sorted((PACKAGE / "dist").glob("shell-utils-*.mjs")):
        streaming = re.search(r"createStreamingBinaryOutputSanitizer as (\w+)", module.read_text())
        if streaming:
            return module, streaming.group(1)
    pytest.skip("no shell-utils module exporting OpenClaw's streaming sanitizer")


def test_the_same_as_openclaws_own_sanitizer_on_random_chunked_text(tmp_path: Path) -> None:
    module, streaming = _openclaw_sanitizer()
    rng = random.Random(32)
    cases: list[dict[str, Any]] = []
    for _ in range(4000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 40)))
        points = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 4))))
        chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
        cases.append({"chunks": chunks})
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps(cases))
    script = tmp_path / "oc.mjs"
    script.write_text(
        'import { readFileSync } from "node:fs";\n'
        f"import {{ {streaming} as stream }} from {json.dumps(str(module))};\n"
        f"const cases = JSON.parse(readFileSync({json.dumps(str(cases_file))}, 'utf8'));\n"
        "const out = cases.map((c) => {\n"
        "  const csi = []; const s = stream((q) => csi.push(q));\n"
        "  return { text: c.chunks.map((x) => s(x)).join(''), csi };\n"
        "});\n"
        "process.stdout.write(JSON.stringify(out));\n"
    )
    ran = subprocess.run(
        [str(NODE), str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    theirs = json.loads(ran.stdout)
    for case, want in zip(cases, theirs, strict=True):
        csi: list[str] = []
        stripper = AnsiStripper(csi.append)
        text = "".join(escape_controls(stripper.write(c)) for c in case["chunks"])
        assert {"text": text, "csi": csi} == want, case


# --- real processes ----------------------------------------------------------------------------


async def test_exec_returns_colored_output_as_openclaw_does(ctx: ToolContext) -> None:
    updates: list[ToolResult] = []
    ctx = attrs.evolve(ctx, on_update=updates.append)
    command = r"printf '\033[31mred\033[0m\a\n'; printf '\033[1mbold\033]0;t\007\033[0m\n' >&2"
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), {"command": command}, ctx)
    assert not result.is_error
    assert sorted(_text(result).splitlines()) == ["bold", "red\\x07"]
    streamed = "".join(_text(u) for u in updates)
    assert "\x1b" not in streamed and "\x07" not in streamed and "red\\x07" in streamed


async def test_the_output_bounds_count_what_is_left_after_sanitizing(ctx: ToolContext) -> None:
    # 20,000 lines of 12 bytes each, 2 of them kept: 240,000 bytes read, 40,000 kept.
    command = r"i=0; while [ $i -lt 20000 ]; do printf '\033[31mA\033[0m\n'; i=$((i+1)); done"
    with trio.fail_after(30):
        result = await invoke_tool(ExecTool(max_output_bytes=50_000), {"command": command}, ctx)
    assert result.details is not None and result.details["truncatedBytes"] == 0, _text(result)
    assert _text(result) == "A\n" * 20000


async def test_process_poll_and_log_return_sanitized_output(ctx: ToolContext) -> None:
    limits = ProcessLimits()
    with trio.fail_after(10):
        async with open_process_registry(limits=limits) as registry:
            started = await invoke_tool(
                ExecTool(processes=registry),
                {"command": r"printf '\033[32mok\033[0m\001\n'; read x", "background": True},
                ctx,
            )
            assert started.details is not None
            session = started.details["sessionId"]
            job = registry.get(ctx.session_key, session)
            assert job is not None
            while b"ok" not in job.output.buf:
                await job.changed.wait()
            tool = ProcessTool(registry)
            polled = await invoke_tool(tool, {"action": "poll", "sessionId": session}, ctx)
            assert _text(polled).startswith("ok\\x01\n")
            logged = await invoke_tool(tool, {"action": "log", "sessionId": session}, ctx)
            assert _text(logged).startswith("ok\\x01")
            await invoke_tool(tool, {"action": "kill", "sessionId": session}, ctx)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash's read -d")
async def test_a_terminal_answers_a_cursor_query_split_across_writes(ctx: ToolContext) -> None:
    # Two writes, most often two reads: the query is found across them.
    command = [
        "bash",
        "-c",
        "printf '\\033['; sleep 0.2; printf '6n'; IFS= read -rs -d R pos; echo \"at:${pos#*[}\"",
    ]
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), {"command": command, "pty": True}, ctx)
    assert _text(result).endswith("at:1;1\r\n") and "\x1b" not in _text(result)


# --- where the sanitizer applies ---------------------------------------------------------------

_ESCAPES_IN_A_FILE = "red \x1b[31mX\x1b[0m \x1b]0;title\x07bell\x07 \u200bzw\x01\x9b\nline2\n"


async def test_read_returns_a_files_escapes_and_controls_as_they_are(
    ctx: ToolContext, workspace: Path
) -> None:
    """OpenClaw 2026.9.6 runs its sanitizer over exec/process output only; `read` (like every
    other tool) returns what the file holds. Its `sanitizeToolResult` redacts secrets and
    shortens the copy events carry; its terminal UI strips escapes for display only."""
    (workspace / "ansi.txt").write_text(_ESCAPES_IN_A_FILE)
    result = await invoke_tool(ReadTool(), {"path": "ansi.txt"}, ctx)
    assert _text(result) == _ESCAPES_IN_A_FILE and not result.is_error


def _openclaw_read_tool() -> tuple[Path, str, Path, str]:
    """OpenClaw's base `read` tool module and the module of the wrapper its agents use, with
    the names they export them as."""
    if not NODE.exists() or not (PACKAGE / "dist").is_dir():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    found: dict[str, tuple[Path, str]] = {}
    for pattern, export in (
        ("tools-*.mjs", "createReadTool"),
        ("agent-tools.read-*.mjs", "createOpenClawReadTool"),
    ):
        for module in sorted((PACKAGE / "dist").glob(pattern)):
            name = re.search(rf"\b{export} as (\w+)", module.read_text())
            if name:
                found[export] = (module, name.group(1))
    if len(found) < 2:
        pytest.skip("no modules exporting OpenClaw's read tool")
    return (*found["createReadTool"], *found["createOpenClawReadTool"])


async def test_read_gives_what_openclaws_read_gives(
    ctx: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    base, base_name, wrapper, wrapper_name = _openclaw_read_tool()
    (workspace / "ansi.txt").write_text(_ESCAPES_IN_A_FILE)
    script = tmp_path / "read.mjs"
    script.write_text(
        f"import {{ {base_name} as createReadTool }} from {json.dumps(str(base))};\n"
        f"import {{ {wrapper_name} as wrap }} from {json.dumps(str(wrapper))};\n"
        f"const tool = wrap(createReadTool({json.dumps(str(workspace))}), {{}});\n"
        'const result = await tool.execute("call-1", { path: "ansi.txt" });\n'
        "const texts = result.content.filter((b) => b.type === 'text').map((b) => b.text);\n"
        "process.stdout.write(JSON.stringify(texts.join('')));\n"
    )
    with trio.fail_after(60):
        ran = await trio.run_process([str(NODE), str(script)], capture_stdout=True)
        result = await invoke_tool(ReadTool(), {"path": "ansi.txt"}, ctx)
    assert json.loads(ran.stdout) == _ESCAPES_IN_A_FILE == _text(result)


_COMMAND_WITH_ESCAPES = "echo \x1b[31mred\x1b[0m\x07; sleep 30"
"""A command holding an escape sequence and a BEL itself (not `printf`'s `\\033`)."""


async def _listed_with(ctx: ToolContext, command: str) -> ToolResult:
    """`process list` while `command` runs in the background."""
    with trio.fail_after(10):
        async with open_process_registry(limits=ProcessLimits()) as registry:
            started = await invoke_tool(
                ExecTool(processes=registry), {"command": command, "background": True}, ctx
            )
            assert started.details is not None, _text(started)
            tool = ProcessTool(registry)
            listed = await invoke_tool(tool, {"action": "list"}, ctx)
            session = started.details["sessionId"]
            await invoke_tool(tool, {"action": "kill", "sessionId": session}, ctx)
    return listed


async def test_process_list_shows_a_command_as_written(ctx: ToolContext) -> None:
    """Only output is sanitized: OpenClaw's whole-text sanitizeBinaryOutput is its terminal
    UI's, for display, and `process list` gives the model the command as it was written."""
    listed = await _listed_with(ctx, _COMMAND_WITH_ESCAPES)
    assert _text(listed).endswith(" :: echo \x1b[31mred\x1b[0m\x07;")
    assert listed.details is not None
    assert listed.details["sessions"][0]["command"] == _COMMAND_WITH_ESCAPES


def _openclaw_process_tools() -> Path:
    """OpenClaw's bash-tools module exporting `createExecTool` and `createProcessTool` by name."""
    if not NODE.exists() or not (PACKAGE / "dist").is_dir():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    for module in sorted((PACKAGE / "dist").glob("bash-tools-*.mjs")):
        source = module.read_text()
        names = re.search(r"export \{([^}]*)\}", source)
        if names and {"createExecTool", "createProcessTool"} <= {
            n.strip() for n in names.group(1).split(",")
        }:
            return module
    pytest.skip("no bash-tools module exporting OpenClaw's exec and process tools")


async def test_process_list_gives_what_openclaws_process_list_gives(
    ctx: ToolContext, tmp_path: Path
) -> None:
    module = _openclaw_process_tools()
    script = tmp_path / "list.mjs"
    await trio.Path(script).write_text(
        "import { createExecTool, createProcessTool } from "
        f"{json.dumps(str(module))};\n"
        f"const scope = {{ cwd: {json.dumps(str(ctx.workspace))}, scopeKey: 's' }};\n"
        "const exec = createExecTool({ ...scope, security: 'full', ask: 'off', host: 'gateway' });\n"
        "const proc = createProcessTool(scope);\n"
        f"const started = await exec.execute('c1', {{ command: {json.dumps(_COMMAND_WITH_ESCAPES)},"
        " background: true });\n"
        "const listed = await proc.execute('c2', { action: 'list' });\n"
        "await proc.execute('c3', { action: 'kill', sessionId: started.details.sessionId });\n"
        "process.stdout.write(JSON.stringify({ text: listed.content[0].text,"
        " command: listed.details.sessions[0].command }));\n"
        "process.exit(0);\n"
    )
    home = tmp_path / "home"  # OpenClaw keeps its state under HOME: a private one
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "OPENCLAW_STATE_DIR": str(home / "state")}
    with trio.fail_after(60):
        ran = await trio.run_process([str(NODE), str(script)], capture_stdout=True, env=env)
    theirs = json.loads(ran.stdout)
    listed = await _listed_with(ctx, _COMMAND_WITH_ESCAPES)
    assert listed.details is not None
    ours = {"text": _text(listed), "command": listed.details["sessions"][0]["command"]}
    # The id, status padding and duration differ run to run: compare what follows " :: ".
    assert ours["command"] == theirs["command"] == _COMMAND_WITH_ESCAPES
    assert ours["text"].partition(" :: ")[2] == theirs["text"].partition(" :: ")[2]
