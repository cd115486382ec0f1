"""exec against real processes: streaming, exit codes, environment, caps, and no orphans.

Process liveness is polled from the OS (`os.kill(pid, 0)` and /proc) in a bounded loop: that is
waiting for the kernel, not for another task. A zombie counts as gone: it runs nothing, and
whether it is reaped promptly depends on this machine's init.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools._exec import EXEC_MAX_OUTPUT_BYTES, RETENTION_CAP_NOTE, ExecTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._procs import assert_all_gone

# Starts two background sleeps, records every pid (the shell's last), then waits for them.
_SPAWN_AND_WAIT = (
    "sleep 100 & echo $! >> pids; sleep 100 & echo $! >> pids; echo $$ >> pids; echo ready; wait"
)


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _update_text(partial: Any) -> str:
    assert isinstance(partial, ToolResult)
    return _text(partial)


def _pids(workspace: Path) -> list[int]:
    pids = [int(line) for line in (workspace / "pids").read_text().split()]
    assert len(pids) == 3
    return pids


async def test_exit_code_and_output(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        ok = await invoke_tool(ExecTool(), {"command": "echo out; echo err >&2"}, ctx)
        failed = await invoke_tool(ExecTool(), {"command": "echo nope; exit 3"}, ctx)
    assert not ok.is_error
    assert _text(ok) in ("out\nerr\n", "err\nout\n")
    assert ok.details is not None and ok.details["exitCode"] == 0
    # As OpenClaw's: another exit code is a completed command that says its code.
    assert not failed.is_error
    assert _text(failed) == "nope\n\n(Command exited with code 3)"
    assert failed.details is not None
    assert failed.details["exitCode"] == 3
    assert failed.details["status"] == "completed"


async def test_argv_list_runs_without_a_shell(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), {"command": ["printf", "%s|", "a b", "$HOME"]}, ctx)
    assert _text(result) == "a b|$HOME|"


async def test_runs_in_the_workspace_with_an_allowlisted_environment(
    ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAWLANE_TEST_SECRET", "leaked")
    monkeypatch.setenv("LANG", "C.UTF-8")
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), {"command": "pwd; env", "env": {"FOO": "bar"}}, ctx)
    lines = _text(result).splitlines()
    assert lines[0] == str(workspace)
    names = {line.split("=", 1)[0] for line in lines[1:] if "=" in line}
    assert "CLAWLANE_TEST_SECRET" not in names
    assert "FOO=bar" in lines
    assert "LANG=C.UTF-8" in lines
    assert "OPENCLAW_SHELL=exec" in lines  # as OpenClaw's, for shell profiles
    # sh may add PWD, SHLVL and _ itself; the job's marker; nothing else from the gateway.
    assert names <= {
        "CLAWLANE_JOB",
        "OPENCLAW_SHELL",
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TERM",
        "TZ",
        "FOO",
        "PWD",
        "SHLVL",
        "_",
        "OLDPWD",
    }


async def test_output_streams_to_on_update_while_the_command_runs(
    ctx: ToolContext, workspace: Path
) -> None:
    os.mkfifo(workspace / "gate")
    first = trio.Event()
    updates: list[tuple[str, str]] = []

    def on_update(partial: Any) -> None:
        updates.append((partial.details["stream"], _update_text(partial)))
        if "first" in _update_text(partial):
            first.set()

    streaming_ctx = attrs.evolve(ctx, on_update=on_update)
    results: list[ToolResult] = []

    async def run() -> None:
        command = "echo first; cat gate; echo second >&2"
        results.append(await invoke_tool(ExecTool(), {"command": command}, streaming_ctx))

    def open_gate() -> None:
        with open(workspace / "gate", "w") as gate:  # blocks until `cat` opens it
            gate.write("go\n")

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await first.wait()
            # The command is blocked on the gate: the update came while it ran.
            assert results == []
            assert updates == [("stdout", "first\n")]
            await trio.to_thread.run_sync(open_gate, abandon_on_cancel=True)
    [result] = results
    # stdout and stderr are two pipes: their relative order is the scheduler's.
    assert _text(result) in ("first\ngo\nsecond\n", "first\nsecond\ngo\n")
    assert ("stdout", "go\n") in updates
    assert ("stderr", "second\n") in updates


async def test_timeout_kills_the_whole_process_group(ctx: ToolContext, workspace: Path) -> None:
    with trio.fail_after(15):
        result = await invoke_tool(ExecTool(), {"command": _SPAWN_AND_WAIT, "timeout": 1}, ctx)
        assert result.is_error
        assert _text(result).startswith("ready\n")
        assert "Command timed out after 1 seconds." in _text(result)
        assert result.details is not None
        assert result.details["timedOut"] is True
        assert result.details["status"] == "failed"
        assert result.details["exitSignal"] == "SIGKILL"
        await assert_all_gone(_pids(workspace))


async def test_cancellation_kills_the_whole_process_group(
    ctx: ToolContext, workspace: Path
) -> None:
    ready = trio.Event()

    def on_update(partial: Any) -> None:
        if "ready" in _update_text(partial):
            ready.set()

    cancel_ctx = attrs.evolve(ctx, on_update=on_update)
    with trio.fail_after(15):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    invoke_tool, ExecTool(), {"command": _SPAWN_AND_WAIT}, cancel_ctx
                )
                await ready.wait()
                scope.cancel()
        assert scope.cancelled_caught
        await assert_all_gone(_pids(workspace))


async def test_background_children_do_not_outlive_a_finished_command(
    ctx: ToolContext, workspace: Path
) -> None:
    with trio.fail_after(10):
        # The background sleep holds the output pipes; the call must still return promptly.
        result = await invoke_tool(
            ExecTool(), {"command": "sleep 100 & echo $! > pids; echo done"}, ctx
        )
        assert not result.is_error
        assert _text(result) == "done\n"
        [pid] = [int(p) for p in (workspace / "pids").read_text().split()]
        await assert_all_gone([pid])


async def test_output_keeps_the_tail_with_a_marker(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        small = await invoke_tool(
            ExecTool(max_output_bytes=1000),
            {"command": "head -c 5000 /dev/zero | tr '\\0' a; echo; echo END"},
            ctx,
        )
        default = await invoke_tool(
            ExecTool(), {"command": "head -c 300000 /dev/zero | tr '\\0' b; echo END"}, ctx
        )
    text = _text(small)
    assert text.startswith(RETENTION_CAP_NOTE)
    assert text.endswith("a\nEND\n")
    assert len(text) == len(RETENTION_CAP_NOTE) + 1000
    assert small.details is not None and small.details["truncatedBytes"] == 4005
    text = _text(default)
    assert text.startswith(RETENTION_CAP_NOTE)
    assert text.endswith("bbbEND\n")
    assert len(text.encode()) == len(RETENTION_CAP_NOTE.encode()) + EXEC_MAX_OUTPUT_BYTES


async def test_a_missing_program_is_an_error_result(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), {"command": ["/nonexistent/program"]}, ctx)
    assert result.is_error
    assert _text(result).startswith("exec could not start the command: No such file or directory")
    assert _text(result).endswith("Command not found")


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"command": "true", "timeout": 0}, "timeout: must be > 0"),
        ({"command": "true", "timeout": "five"}, "timeout: must be number"),
        ({"command": {"argv": ["true"]}}, "command: must match a schema in anyOf"),
        ({"command": "true", "env": {"BAD-NAME": "x"}}, "env: property names BAD-NAME are invalid"),
        ({"command": "true", "env": {"X": [1]}}, "env.X: must be string"),
    ],
)
async def test_invalid_exec_arguments_name_the_field(
    ctx: ToolContext, arguments: dict[str, Any], where: str
) -> None:
    with trio.fail_after(10):
        result = await invoke_tool(ExecTool(), arguments, ctx)
    assert result.is_error
    assert _text(result).startswith('Validation failed for tool "exec":\n')
    assert f"\n  - {where}\n" in _text(result)


async def test_empty_argv_and_nul_bytes_are_refused(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        empty = await invoke_tool(ExecTool(), {"command": []}, ctx)
        nul = await invoke_tool(ExecTool(), {"command": "echo a\0b"}, ctx)
    assert _text(empty) == "exec: command is empty"
    assert _text(nul) == "exec: command and env must not contain NUL bytes"


# --- OpenClaw's parameters, and trees that leave their process group --------------------------

# A grandchild in a session of its own (setsid), which a process-group kill cannot reach.
_ESCAPE = "setsid sleep 100 & echo $! > pids; echo ready; sleep 100"


async def test_a_grandchild_that_left_the_group_dies_when_the_call_is_cancelled(
    ctx: ToolContext, workspace: Path
) -> None:
    ready = trio.Event()

    def on_update(partial: Any) -> None:
        if "ready" in _update_text(partial):
            ready.set()

    with trio.fail_after(15):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                tool_ctx = attrs.evolve(ctx, on_update=on_update)
                nursery.start_soon(invoke_tool, ExecTool(), {"command": _ESCAPE}, tool_ctx)
                await ready.wait()
                scope.cancel()
        [pid] = [int(p) for p in (workspace / "pids").read_text().split()]
        await assert_all_gone([pid])


async def test_a_grandchild_that_left_the_group_dies_when_the_command_ends(
    ctx: ToolContext, workspace: Path
) -> None:
    with trio.fail_after(10):
        command = "setsid sleep 100 & echo $! > pids; echo done"
        result = await invoke_tool(ExecTool(), {"command": command}, ctx)
        assert _text(result) == "done\n"
        [pid] = [int(p) for p in (workspace / "pids").read_text().split()]
        await assert_all_gone([pid])


async def test_workdir_is_relative_to_the_workspace(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    with trio.fail_after(10):
        here = await invoke_tool(ExecTool(), {"command": "pwd", "workdir": "sub"}, ctx)
        missing = await invoke_tool(ExecTool(), {"command": "pwd", "workdir": "nope"}, ctx)
        blank = await invoke_tool(ExecTool(), {"command": "pwd", "workdir": "  "}, ctx)
    assert _text(here) == f"{workspace / 'sub'}\n"
    # OpenClaw's answer (its peer gateway, workdir "/nonexistent"): the command is not run.
    said = (
        'workdir "{}" is unavailable or not a directory: command was not executed. workdir is '
        'treated as a literal path; shell expansions such as "~" are not applied. Use an '
        "existing directory, omit an explicit workdir to use the default cwd, or update the "
        "configured default cwd."
    )
    for result, asked in ((missing, "nope"), (blank, "  ")):
        assert (result.is_error, _text(result)) == (True, said.format(asked))
        assert result.details == {
            "status": "failed",
            "exitCode": None,
            "exitSignal": None,
            "failureKind": "runtime-error",
            "durationMs": 0,
            "aggregated": "",
            "timedOut": False,
            "cwd": asked,
        }
    assert not (workspace / "nope").exists()


async def test_path_and_loader_overrides_are_refused(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        result = await invoke_tool(
            ExecTool(), {"command": "true", "env": {"PATH": "/tmp", "LD_PRELOAD": "x"}}, ctx
        )
    assert result.is_error
    assert _text(result) == "exec: env may not override LD_PRELOAD, PATH on the gateway host"


async def test_timeout_seconds_zero_disables_the_timeout_and_a_signal_is_a_failure(
    ctx: ToolContext,
) -> None:
    with trio.fail_after(10):
        result = await invoke_tool(
            ExecTool(default_timeout=0.01), {"command": "kill -TERM $$", "timeoutSeconds": 0}, ctx
        )
    assert result.is_error
    assert _text(result) == "Command aborted by signal SIGTERM"
    assert result.details is not None and result.details["failureKind"] == "signal"


async def test_without_a_registry_background_is_ignored(ctx: ToolContext) -> None:
    with trio.fail_after(10):
        result = await invoke_tool(
            ExecTool(), {"command": "sleep 0.2; echo late", "background": True}, ctx
        )
    assert _text(result) == "late\n"
