"""`exec` with `pty: true` against real processes: the command runs on a pseudo-terminal (a
terminal to `isatty` and `stty`, OpenClaw's size and TERM, one output stream with CRLF), the
`process` tool's keys reach it, and its tree, `setsid` children included, dies on every kind of
kill as a piped job's does.

Liveness is read from the OS (`os.kill(pid, 0)` and /proc) in a bounded loop: waiting for the
kernel, not for another task.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools._exec import RETENTION_CAP_NOTE, ExecTool
from runtime.tools._process import Job, ProcessLimits, ProcessRegistry, open_process_registry
from runtime.tools._process_tool import ProcessTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._procs import assert_all_gone, running


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
async def registry() -> AsyncIterator[ProcessRegistry]:
    async with open_process_registry() as reg:
        yield reg


async def _background(
    registry: ProcessRegistry, ctx: ToolContext, command: str | list[str], **extra: Any
) -> Job:
    result = await invoke_tool(
        ExecTool(processes=registry),
        {"command": command, "background": True, "pty": True, **extra},
        ctx,
    )
    assert result.details is not None and result.details["status"] == "running", _text(result)
    assert not _text(result).startswith("Warning")
    job = registry.get(ctx.session_key, str(result.details["sessionId"]))
    assert job is not None and job.tty is not None
    return job


async def _process(registry: ProcessRegistry, ctx: ToolContext, **args: Any) -> ToolResult:
    return await invoke_tool(ProcessTool(registry), args, ctx)


async def _until_output(job: Job, needle: bytes) -> None:
    """Until the job's output holds `needle` (each chunk wakes `changed`)."""
    while needle not in job.output.buf:
        assert job.running, job.output.text()
        await job.changed.wait()


async def test_the_command_runs_on_a_terminal_of_openclaws_size(ctx: ToolContext) -> None:
    command = "[ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo tty; stty size; echo $TERM; echo e >&2"
    updates: list[ToolResult] = []
    ctx = attrs.evolve(ctx, on_update=updates.append)
    with trio.fail_after(10):
        result = await invoke_tool(
            ExecTool(), {"command": command, "pty": True, "env": {"TERM": "dumb"}}, ctx
        )
    # One stream, stdout and stderr as the terminal shows them, with its CRLF line ends.
    assert _text(result) == "tty\r\n30 120\r\nxterm-256color\r\ne\r\n"
    assert not result.is_error and result.details is not None
    assert result.details["status"] == "completed" and result.details["exitCode"] == 0
    assert {u.details["stream"] for u in updates if u.details} == {"stdout"}
    assert "".join(_text(u) for u in updates) == _text(result)


async def test_a_terminal_keeps_the_commands_own_term(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        result = await invoke_tool(
            ExecTool(), {"command": "echo $TERM", "pty": True, "env": {"TERM": "screen"}}, ctx
        )
    assert _text(result) == "screen\r\n"


async def test_without_a_pty_the_command_runs_on_pipes_and_says_so(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_pty() -> None:
        raise OSError("out of pseudo-terminals")

    monkeypatch.setattr("runtime.tools._process.open_terminal", no_pty)
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), {"command": "[ -t 1 ] || echo hi", "pty": True}, ctx)
    warning = "Warning: PTY is not available; ran without PTY for `[ -t 1 ] || echo hi`.\n\n"
    assert _text(result) == warning + "hi\n"
    assert not result.is_error


async def test_send_keys_and_submit_answer_a_read(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(15):
        job = await _background(registry, ctx, "echo ready; read x; echo got:$x")
        await _until_output(job, b"ready")
        keys = await _process(registry, ctx, action="send-keys", sessionId=job.id, literal="hey")
        assert _text(keys) == f"Sent 3 bytes to session {job.id}."
        submitted = await _process(registry, ctx, action="submit", sessionId=job.id)
        assert _text(submitted) == f"Submitted session {job.id} (sent CR)."
        await job.done.wait()
        polled = await _process(registry, ctx, action="poll", sessionId=job.id)
    # The terminal echoes what was typed; its CR ends the line (ICRNL), as Enter does.
    assert _text(polled) == "ready\r\nhey\r\ngot:hey\n\nProcess exited with code 0."


async def test_a_repl_gets_its_keys(registry: ProcessRegistry, ctx: ToolContext) -> None:
    with trio.fail_after(20):
        job = await _background(registry, ctx, [sys.executable, "-I", "-q", "-i"])
        await _until_output(job, b">>> ")
        await _process(
            registry, ctx, action="send-keys", sessionId=job.id, literal="6*7", keys=["Enter"]
        )
        await _until_output(job, b"42\r\n>>> ")
        text = "print('pa' + 'sted')"
        await _process(registry, ctx, action="paste", sessionId=job.id, text=text, bracketed=False)
        await _process(registry, ctx, action="submit", sessionId=job.id)
        await _until_output(job, b"pasted\r\n>>> ")
        await _process(registry, ctx, action="write", sessionId=job.id, data="", eof=True)
        await job.done.wait()
    assert (job.exit_code, job.exit_reason) == (0, "exit")


_INTERRUPTIBLE = """
import time
try:
    print("ready", flush=True)
    time.sleep(60)
except KeyboardInterrupt:
    print("interrupted")
print("then", input("more? "))
"""


async def test_ctrl_c_interrupts_the_command_not_its_keeper(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    """Ctrl-C is SIGINT to the terminal's foreground group: the command's, not the keeper's
    (which would kill the tree). Not tried at a Python REPL's prompt: CPython's readline loop
    misses a SIGINT that comes just before it waits for a key."""
    with trio.fail_after(15):
        job = await _background(registry, ctx, [sys.executable, "-I", "-c", _INTERRUPTIBLE])
        await _until_output(job, b"ready")
        await _process(registry, ctx, action="send-keys", sessionId=job.id, keys=["C-c"])
        await _until_output(job, b"interrupted\r\nmore? ")
        assert job.running
        await _process(registry, ctx, action="send-keys", sessionId=job.id, literal="yes")
        await _process(registry, ctx, action="submit", sessionId=job.id)
        await job.done.wait()
    assert (job.exit_code, job.exit_reason) == (0, "exit")
    assert job.output.text().endswith("more? yes\r\nthen yes\r\n")


async def test_write_eof_types_ctrl_d(registry: ProcessRegistry, ctx: ToolContext) -> None:
    with trio.fail_after(15):
        job = await _background(registry, ctx, "cat")
        wrote = await _process(
            registry, ctx, action="write", sessionId=job.id, data="abc\n", eof=True
        )
        assert _text(wrote) == f"Wrote 4 bytes to session {job.id} (stdin closed)."
        await job.done.wait()
    assert job.exit_code == 0
    assert job.output.text() == "abc\r\nabc\r\n"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash's read -d")
async def test_a_cursor_position_query_is_answered(ctx: ToolContext) -> None:
    command = ["bash", "-c", "printf '\\033[6n'; IFS= read -rs -d R pos; echo \"at:${pos#*[}\""]
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), {"command": command, "pty": True}, ctx)
    # The query is stripped from the output, as OpenClaw's sanitizer strips it; the reply is
    # typed at the terminal, echoed too when it beats `read -s` to it.
    assert "\x1b" not in _text(result) and _text(result).endswith("at:1;1\r\n")


Kill = Callable[[ProcessRegistry, ToolContext, Job], Awaitable[object]]


async def _kill_by_tool(registry: ProcessRegistry, ctx: ToolContext, job: Job) -> object:
    return await _process(registry, ctx, action="kill", sessionId=job.id)


async def _abort_run(registry: ProcessRegistry, ctx: ToolContext, job: Job) -> object:
    await trio.lowlevel.checkpoint()
    return registry.kill_run(ctx.run_id)


async def _delete_session(registry: ProcessRegistry, ctx: ToolContext, job: Job) -> object:
    await trio.lowlevel.checkpoint()
    return registry.kill_session(ctx.session_key)


@pytest.mark.parametrize("kill", [_kill_by_tool, _abort_run, _delete_session, None])
async def test_every_kill_takes_the_whole_tree_even_a_setsid_child(
    ctx: ToolContext, workspace: Path, kill: Kill | None
) -> None:
    command = "setsid sleep 999 & echo $! > pids; echo $$ >> pids; echo ready; read x"
    fds = _open_fds()
    with trio.fail_after(20):
        async with open_process_registry() as registry:
            job = await _background(registry, ctx, command)
            await _until_output(job, b"ready")
            pids = [int(p) for p in (workspace / "pids").read_text().split()]
            assert job.pid is not None and all(running(p) for p in [*pids, job.pid])
            if kill is not None:
                await kill(registry, ctx, job)
                await job.done.wait()
        # None: the registry's end (the gateway's shutdown) killed it.
        assert job.exit_signal == "SIGKILL"
        await assert_all_gone([*pids, job.pid])
    assert _open_fds() <= fds  # the terminal's master and slave are closed


async def test_a_terminals_output_is_bounded_and_read_to_its_end(ctx: ToolContext) -> None:
    limits = ProcessLimits(max_output_bytes=10_000, pending_bytes=1000)
    with trio.fail_after(30):
        async with open_process_registry(limits=limits) as registry:
            job = await _background(registry, ctx, "head -c 300000 /dev/zero | tr '\\0' '\\n'")
            await job.done.wait()
    # 300,000 line ends, each CRLF on the terminal: all read (up to the EIO), a tail kept.
    assert job.output.total == 600_000
    assert bytes(job.output.buf) == b"\r\n" * 5000
    assert len(job.output.pending) == 1000 and job.output.pending_dropped
    assert job.exit_code == 0


async def test_a_foreground_terminal_result_notes_the_retention_cap(ctx: ToolContext) -> None:
    command = "head -c 30000 /dev/zero | tr '\\0' z"
    with trio.fail_after(15):
        result = await invoke_tool(
            ExecTool(max_output_bytes=1000), {"command": command, "pty": True}, ctx
        )
    assert _text(result) == RETENTION_CAP_NOTE + "z" * 1000
    assert result.details is not None and result.details["truncatedBytes"] == 29_000
