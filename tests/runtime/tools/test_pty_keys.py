"""`process send-keys` as OpenClaw 2026.9.6 types keys: its key table and xterm's modifiers, the
cursor key mode (DECCKM) each job's output sets, and its refusal of cursor keys while that mode
is unknown. The encoder against OpenClaw's own (under Node 24, when installed), then real
programs on real terminals reading the bytes they are sent.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools._exec import ExecTool
from runtime.tools._process import Job, ProcessRegistry, open_process_registry
from runtime.tools._process_tool import ProcessTool
from runtime.tools._pty_keys import KEYS, cursor_mode_sensitive, encode_keys
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool

NODE = Path.home() / ".cache/node24/bin/node"
PACKAGE = Path.home() / ".cache/openclaw-peer/node_modules/openclaw"


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _keys(*keys: str, mode: Any = "normal") -> bytes:
    data, warnings = encode_keys(keys=keys, mode=mode)
    assert warnings == []
    return data


# --- the encoder ------------------------------------------------------------------------------


def test_cursor_keys_are_ss3_in_application_mode_and_csi_otherwise() -> None:
    cursor = ("up", "down", "right", "left", "home", "end")
    assert _keys(*cursor) == b"\x1b[A\x1b[B\x1b[C\x1b[D\x1b[1~\x1b[4~"
    assert _keys(*cursor, mode="application") == b"\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF"
    # Only the cursor keys change; modified ones keep xterm's CSI form in either mode.
    assert _keys("pageup", "delete", "C-up", mode="application") == b"\x1b[5~\x1b[3~\x1b[1;5A"


def test_modifiers_are_xterms() -> None:
    assert _keys("S-up", "M-up", "C-up", "C-M-S-up") == b"\x1b[1;2A\x1b[1;3A\x1b[1;5A\x1b[1;8A"
    assert _keys("C-home", "s-End", "m-pgdn", "C-del") == b"\x1b[1;5~\x1b[4;2~\x1b[6;3~\x1b[3;5~"
    assert _keys("S-tab", "btab", "M-enter", "C-enter") == b"\x1b[Z\x1b[Z\x1b\r\r"
    assert _keys("C-a", "C-M-x", "S-a", "M-A", "C-?", "C-1") == b"\x01\x1b\x18A\x1bA\x7f1"
    assert _keys("^c", "^[", "^?", "^@", " Enter ") == b"\x03\x1b\x7f\x00\r"


def test_named_keys_are_openclaws_table() -> None:
    assert KEYS["f1"] == "\x1bOP" and KEYS["f5"] == "\x1b[15~" and KEYS["f12"] == "\x1b[24~"
    assert KEYS["kp5"] == "\x1bOu" and KEYS["kpenter"] == "\x1bOM" and KEYS["kp/"] == "\x1bOo"
    assert _keys("BSpace", "ESC", "space", "IC", "npage") == b"\x7f\x1b \x1b[2~\x1b[6~"


def test_unknown_tokens_are_typed_as_written_with_a_warning_for_modifiers() -> None:
    data, warnings = encode_keys(
        literal="ab", hex_bytes=["0x1B", "zz", "100", " f "], keys=["hello", "C-nope", "", "x"]
    )
    assert data == b"ab\x1b\x0fhellonopex"
    assert warnings == [
        "Invalid hex byte: zz",
        "Invalid hex byte: 100",
        'Unknown key "nope" for modifiers; sending literal.',
    ]


def test_only_unmodified_cursor_keys_depend_on_the_mode() -> None:
    assert cursor_mode_sensitive(["x", " HOME "])
    assert not cursor_mode_sensitive(["C-up", "pageup", "^a", "", "uppercase"])


def _openclaw_encoder(tmp_path: Path) -> Path:
    """OpenClaw's key encoder (its `pty-keys` region, not exported) as a module of its own."""
    if not NODE.exists() or not (PACKAGE / "dist").is_dir():
        pytest.skip(f"Node 24 ({NODE}) or the openclaw package ({PACKAGE}) is not installed")
    for path in sorted((PACKAGE / "dist").glob("bash-tools-*.mjs")):
        source = path.read_text()
        region = re.search(r"//#region src/agents/pty-keys\.ts\n(.*?)//#endregion", source, re.S)
        lower = re.search(
            r'(\w+) as normalizeLowercaseStringOrEmpty\b[^}]*\} from "(\./[^"]+)"', source
        )
        if region and lower:
            module = tmp_path / "pty-keys.mjs"
            module.write_text(
                f"import {{ {lower.group(1)} as normalizeLowercaseStringOrEmpty }} from "
                f"{json.dumps(str(path.parent / lower.group(2)))};\n{region.group(1)}\n"
                "export { encodeKeySequence, hasCursorModeSensitiveKeys };\n"
            )
            return module
    pytest.skip("no bash-tools module with OpenClaw's pty-keys region")


_BASES: list[str] = [
    *KEYS,
    *"aAzZ019?@[\\]^_`{ -~ßé😀\t",
    "UP",
    "Home",
    "Tab",
    "KP5",
    "xyz",
    "",
]


def _token(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return "^" + rng.choice("aZ?@[1ß😀")
    mods = "".join(rng.choice(["C-", "M-", "S-", "c-", "m-", "s-", "X-"]) for _ in range(3))
    token = mods[: 2 * rng.randint(0, 3)] + rng.choice(_BASES)
    return rng.choice(["", " ", "\t", "\u3000", "\ufeff"]) + token + rng.choice(["", " "])


def test_the_same_bytes_and_warnings_as_openclaws_encoder(tmp_path: Path) -> None:
    module = _openclaw_encoder(tmp_path)
    rng = random.Random(32)
    hexes = ["1b", "0x41", "0X7f", "f", "100", "zz", " 41 ", "", "0x", "g1", "０"]
    cases: list[dict[str, Any]] = [
        {
            "keys": [_token(rng) for _ in range(rng.randint(0, 4))],
            "hex": rng.sample(hexes, rng.randint(0, 2)),
            "literal": rng.choice(["", "a", "é😀"]),
            "mode": rng.choice(["normal", "application", None]),
        }
        for _ in range(3000)
    ]
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps(cases))
    script = tmp_path / "run.mjs"
    script.write_text(
        'import { readFileSync } from "node:fs";\n'
        f"import {{ encodeKeySequence, hasCursorModeSensitiveKeys }} from "
        f"{json.dumps(str(module))};\n"
        f"const cases = JSON.parse(readFileSync({json.dumps(str(cases_file))}, 'utf8'));\n"
        "const out = cases.map((c) => {\n"
        "  const { data, warnings } = encodeKeySequence(c, c.mode ?? undefined);\n"
        "  return { data: [...data], warnings, sensitive: hasCursorModeSensitiveKeys(c) };\n"
        "});\n"
        "process.stdout.write(JSON.stringify(out));\n"
    )
    ran = subprocess.run(
        [str(NODE), str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    for case, want in zip(cases, json.loads(ran.stdout), strict=True):
        data, warnings = encode_keys(
            literal=case["literal"],
            hex_bytes=case["hex"],
            keys=case["keys"],
            mode=case["mode"] or "normal",
        )
        mine = {"data": list(data), "warnings": warnings}
        mine["sensitive"] = cursor_mode_sensitive(case["keys"])
        assert mine == want, case


# --- real terminals ---------------------------------------------------------------------------

_KEY_READER = r"""
import os, sys, tty
tty.setraw(0)
say = lambda text: (os.write(1, text.encode()), None)
say("\x1b[?1hwaiting ")  # smkx: application cursor keys, as a full-screen program sets them
batch, got = 0, b""
while True:
    got += os.read(0, 64)
    while b"!" in got:
        keys, got = got.split(b"!", 1)
        batch += 1
        say(f"keys{batch}:{keys.hex()} ")
        if keys == b"n":
            say("\x1b[?1lnormal ")  # rmkx: back to normal cursor keys
        if keys == b"q":
            sys.exit(0)
"""


@pytest.fixture
async def registry() -> AsyncIterator[ProcessRegistry]:
    async with open_process_registry() as reg:
        yield reg


async def _background(
    registry: ProcessRegistry, ctx: ToolContext, command: str | list[str], *, pty: bool
) -> Job:
    args = {"command": command, "background": True, "pty": pty}
    result = await invoke_tool(ExecTool(processes=registry), args, ctx)
    assert result.details is not None and result.details["status"] == "running", _text(result)
    job = registry.get(ctx.session_key, str(result.details["sessionId"]))
    assert job is not None and (job.tty is not None) == pty
    return job


async def _send(registry: ProcessRegistry, ctx: ToolContext, job: Job, **args: Any) -> ToolResult:
    return await invoke_tool(
        ProcessTool(registry), {"action": "send-keys", "sessionId": job.id, **args}, ctx
    )


async def _until_output(job: Job, needle: bytes) -> None:
    while needle not in job.output.buf:
        assert job.running, job.output.text()
        await job.changed.wait()


async def test_a_terminal_in_application_mode_gets_ss3_cursor_keys(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(20):
        job = await _background(registry, ctx, [sys.executable, "-I", "-c", _KEY_READER], pty=True)
        await _until_output(job, b"waiting")
        keys = ["up", "down", "right", "left", "home", "end", "C-up", "pageup", "!"]
        sent = await _send(registry, ctx, job, keys=keys)
        assert _text(sent) == f"Sent 29 bytes to session {job.id}."
        await _until_output(job, b"keys1:")
        await _send(registry, ctx, job, keys=["n", "!"])
        await _until_output(job, b"normal")
        await _send(registry, ctx, job, keys=["up", "home", "end", "!"])
        await _until_output(job, b"keys3:")
        await _send(registry, ctx, job, literal="q!")
        await job.done.wait()
    application = b"\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF\x1b[1;5A\x1b[5~".hex()
    normal = b"\x1b[A\x1b[1~\x1b[4~".hex()
    assert job.output.text() == (
        f"waiting keys1:{application} keys2:6e normal keys3:{normal} keys4:71 "
    )


async def test_cursor_keys_are_refused_until_a_terminal_sets_its_mode(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(15):
        job = await _background(registry, ctx, "echo ready; head -c 11 | od -An -tx1", pty=True)
        await _until_output(job, b"ready")
        assert job.cursor_keys == "unknown"
        refused = await _send(registry, ctx, job, literal="a", keys=["x", "Up"])
        # Keys that do not depend on the mode go through; a warning rides along.
        sent = await _send(registry, ctx, job, literal="b", keys=["C-Up", "M-nope"], hex=["zz"])
        await _send(registry, ctx, job, keys=["Enter"])
        await job.done.wait()
    message = (
        f"Session {job.id} cursor key mode is not known yet. Poll or log until startup output "
        "appears, then retry send-keys."
    )
    assert refused.is_error and _text(refused) == message
    assert refused.details == {"status": "failed", "error": message}
    assert _text(sent) == (
        f"Sent 11 bytes to session {job.id}.\nWarnings:\n- Invalid hex byte: zz\n"
        '- Unknown key "nope" for modifiers; sending literal.'
    )
    assert not sent.is_error and sent.details is not None
    assert sent.details["status"] == "running"
    # What reached the command: b, Ctrl-Up, nope; nothing of the refused call.
    assert "".join(job.output.text().split()[-11:]) == b"b\x1b[1;5Anope".hex()


async def test_a_job_on_pipes_starts_in_normal_mode_and_follows_its_stdout(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    reads = "head -c 3 | od -An -tx1"
    with trio.fail_after(15):
        plain = await _background(registry, ctx, reads, pty=False)
        smkx = await _background(registry, ctx, f"printf '\\033[?1hset '; {reads}", pty=False)
        await _until_output(smkx, b"set")
        assert (plain.cursor_keys, smkx.cursor_keys) == ("normal", "application")
        for job in (plain, smkx):
            await _send(registry, ctx, job, keys=["Up"])
            await job.done.wait()
    assert plain.output.text().split() == ["1b", "5b", "41"]
    assert smkx.output.text().split() == ["set", "1b", "4f", "41"]


async def test_a_pty_job_on_pipes_still_starts_unknown(
    registry: ProcessRegistry, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_pty() -> None:
        raise OSError("out of pseudo-terminals")

    monkeypatch.setattr("runtime.tools._process.open_terminal", no_pty)
    with trio.fail_after(15):
        result = await invoke_tool(
            ExecTool(processes=registry),
            {"command": "cat", "background": True, "pty": True},
            ctx,
        )
        assert result.details is not None
        job = registry.get(ctx.session_key, str(result.details["sessionId"]))
        assert job is not None and job.tty is None
        refused = await _send(registry, ctx, job, keys=["left"])
        job.kill()
        await job.done.wait()
    assert job.cursor_keys == "unknown" and refused.is_error
