"""The process registry and the `process` tool against real processes: background jobs, their
bounds in bytes and count, log offsets, stdin, kills of whole trees, scoping, completion notices.

Liveness is read from the OS (`os.kill(pid, 0)` and /proc) in a bounded loop: waiting for the
kernel, not for another task.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools._exec import ExecTool
from runtime.tools._process import (
    Job,
    OutputLog,
    ProcessLimits,
    ProcessRegistry,
    derive_name,
    open_process_registry,
)
from runtime.tools._process_tool import ProcessTool
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._procs import assert_all_gone, running


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


@pytest.fixture
async def registry() -> AsyncIterator[ProcessRegistry]:
    async with open_process_registry() as reg:
        yield reg


async def _background(
    registry: ProcessRegistry, ctx: ToolContext, command: str, **extra: Any
) -> tuple[str, ToolResult]:
    result = await invoke_tool(
        ExecTool(processes=registry), {"command": command, "background": True, **extra}, ctx
    )
    assert result.details is not None and result.details["status"] == "running", _text(result)
    return str(result.details["sessionId"]), result


async def _process(registry: ProcessRegistry, ctx: ToolContext, **args: Any) -> ToolResult:
    return await invoke_tool(ProcessTool(registry), args, ctx)


async def _poll_until_done(registry: ProcessRegistry, ctx: ToolContext, sid: str) -> ToolResult:
    job = registry.get(ctx.session_key, sid)
    assert job is not None
    await job.done.wait()
    return await _process(registry, ctx, action="poll", sessionId=sid)


# --- the output log -------------------------------------------------------------------------


def test_the_output_log_keeps_a_bounded_tail_and_a_bounded_unread_part() -> None:
    log = OutputLog(cap=10, pending_cap=4)
    log.append(b"0123456789abc")
    assert bytes(log.buf) == b"3456789abc" and log.dropped == 3 and log.total == 13
    assert log.drain() == ("9abc", True)
    assert log.drain() == ("", False)
    log.append("é".encode() * 6)  # 12 bytes: the cut falls inside a character
    assert log.text() == "é" * 5
    assert derive_name("python3 -u ./serve.py --port 8000") == "python3 ./serve.py"


# --- exec into the background, and process ---------------------------------------------------


async def test_a_background_job_is_polled_logged_and_reports_its_exit(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(15):
        sid, started = await _background(registry, ctx, "printf 'l1\\nl2\\nl3\\nl4\\n'; exit 4")
        assert _text(started).startswith(f"Command still running (session {sid}, pid ")
        done = await _poll_until_done(registry, ctx, sid)
        assert _text(done) == "l1\nl2\nl3\nl4\n\nProcess exited with code 4."
        assert done.details is not None
        assert done.details["status"] == "completed" and done.details["exitCode"] == 4
        again = await _process(registry, ctx, action="poll", sessionId=sid)
        assert _text(again).startswith("(no new output)")
        page = await _process(registry, ctx, action="log", sessionId=sid, offset=1, limit=2)
        assert _text(page) == "l2\nl3"
        assert page.details is not None and page.details["totalLines"] == 4
        rest = await _process(registry, ctx, action="log", sessionId=sid, offset=2)
        assert _text(rest) == "l3\nl4"
        last = await _process(registry, ctx, action="log", sessionId=sid, limit=1)
        assert _text(last) == "l4"
        # OpenClaw's numbers: floored, at least 0; a field it would ignore is ignored here too.
        floored = await _process(
            registry, ctx, action="log", sessionId=sid, offset=1.7, limit=2.9, cwd="/x"
        )
        assert _text(floored) == "l2\nl3"
        negative = await _process(registry, ctx, action="log", sessionId=sid, offset=-3, limit=1)
        assert _text(negative) == "l1"
        none = await _process(registry, ctx, action="log", sessionId=sid, limit=-1)
        assert _text(none) == "(no output recorded)"
        listed = await _process(registry, ctx, action="list")
        assert _text(listed).startswith(f"{sid} completed")
        cleared = await _process(registry, ctx, action="clear", sessionId=sid)
        assert _text(cleared) == f"Cleared session {sid}."
        gone = await _process(registry, ctx, action="poll", sessionId=sid)
        assert gone.is_error and _text(gone) == f"No session found for {sid}"


async def test_yield_ms_backgrounds_a_command_that_outlives_it(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(15):
        quick = await invoke_tool(
            ExecTool(processes=registry), {"command": "echo hi", "yieldMs": 5000}, ctx
        )
        assert _text(quick) == "hi\n"
        slow = await invoke_tool(
            ExecTool(processes=registry), {"command": "echo a; sleep 100", "yieldMs": 10}, ctx
        )
        assert slow.details is not None and slow.details["status"] == "running"
        sid = slow.details["sessionId"]
        polled = await _process(registry, ctx, action="poll", sessionId=sid, timeout=5000)
        assert _text(polled).startswith("a")
        assert _text(polled).endswith("Process still running.")
        killed = await _process(registry, ctx, action="kill", sessionId=sid)
        assert _text(killed) == f"Termination requested for session {sid}."
        done = await _poll_until_done(registry, ctx, sid)
        assert _text(done).endswith("Process stopped by request (signal SIGKILL).")
        assert done.details is not None and done.details["status"] == "completed"


async def test_write_reaches_stdin_and_eof_closes_it(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(15):
        sid, _ = await _background(registry, ctx, "while read line; do echo got $line; done")
        wrote = await _process(registry, ctx, action="write", sessionId=sid, data="one\n")
        assert _text(wrote) == f"Wrote 4 bytes to session {sid}."
        first = await _process(registry, ctx, action="poll", sessionId=sid, timeout=5000)
        assert _text(first).startswith("got one")
        await _process(registry, ctx, action="write", sessionId=sid, data="two\n", eof=True)
        done = await _poll_until_done(registry, ctx, sid)
        assert _text(done) == "got two\n\nProcess exited with code 0."
        late = await _process(registry, ctx, action="write", sessionId=sid, data="x")
        assert late.is_error and _text(late) == f"No active session found for {sid}"


async def test_kill_takes_the_whole_tree_even_a_setsid_grandchild(
    registry: ProcessRegistry, ctx: ToolContext, workspace: Path
) -> None:
    with trio.fail_after(15):
        sid, _ = await _background(
            registry, ctx, "setsid sleep 100 & echo $! > pids; echo $$ >> pids; echo ready; wait"
        )
        job = registry.get(ctx.session_key, sid)
        assert job is not None
        await _ready(registry, ctx, sid)
        await _process(registry, ctx, action="remove", sessionId=sid)
        assert registry.list(ctx.session_key) == []
        await job.done.wait()
        await assert_all_gone(_pids(workspace))


async def _ready(registry: ProcessRegistry, ctx: ToolContext, sid: str) -> None:
    """Until the job printed `ready` (a poll wakes on output)."""
    seen = ""
    while "ready" not in seen:
        seen += _text(await _process(registry, ctx, action="poll", sessionId=sid, timeout=5000))


def _pids(workspace: Path) -> list[int]:
    return [int(p) for p in (workspace / "pids").read_text().split()]


async def test_jobs_are_seen_only_by_their_session(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    other = attrs.evolve(ctx, session_key="agent:main:other")
    with trio.fail_after(15):
        sid, _ = await _background(registry, ctx, "sleep 100")
        hidden = await _process(registry, other, action="poll", sessionId=sid)
        assert hidden.is_error and _text(hidden) == f"No session found for {sid}"
        listed = await _process(registry, other, action="list")
        assert _text(listed) == "No running or recent sessions."
        refused = await _process(registry, other, action="kill", sessionId=sid)
        assert refused.is_error
        assert registry.kill_session(ctx.session_key) == 1


async def test_running_jobs_are_bounded_in_count_per_agent(ctx: ToolContext) -> None:
    limits = ProcessLimits(max_running_per_agent=2)
    other_agent = attrs.evolve(ctx, agent_id="ops", session_key="agent:ops:main")
    with trio.fail_after(15):
        async with open_process_registry(limits=limits) as registry:
            for _ in range(2):
                await _background(registry, ctx, "sleep 100")
            refused = await invoke_tool(
                ExecTool(processes=registry), {"command": "true", "background": True}, ctx
            )
            assert refused.is_error
            assert "already has 2 running commands" in _text(refused)
            await _background(registry, other_agent, "sleep 100")  # another agent's budget


async def test_output_is_bounded_in_bytes_per_job_and_per_agent(ctx: ToolContext) -> None:
    limits = ProcessLimits(
        max_output_bytes=1000,
        pending_bytes=100,
        max_finished_per_agent=3,
        max_finished_bytes_per_agent=2500,
    )
    with trio.fail_after(20):
        async with open_process_registry(limits=limits) as registry:
            sids = []
            for _ in range(4):
                sid, _ = await _background(registry, ctx, "head -c 5000 /dev/zero | tr '\\0' z")
                job = registry.get(ctx.session_key, sid)
                assert job is not None
                await job.done.wait()
                assert len(job.output.buf) == 1000 and len(job.output.pending) == 100
                sids.append(sid)
            # 4 × 1000 bytes > 2500: the two oldest are forgotten.
            kept = [job.id for job in registry.list(ctx.session_key)]
            assert kept == [sids[3], sids[2]]
            assert registry.statistics()["bytes"] <= 2 * 1100
            polled = await _process(registry, ctx, action="poll", sessionId=sids[3])
            text = _text(polled)
            assert text.startswith("[earlier output was discarded at the retention cap")
            assert "[earlier output is omitted from this poll" in text
            assert "z" * 100 in text and "z" * 101 not in text


async def test_timeout_applies_after_backgrounding(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(15):
        sid, _ = await _background(registry, ctx, "sleep 100", timeoutSeconds=0.3)
        done = await _poll_until_done(registry, ctx, sid)
        assert done.is_error
        assert "Process exited with signal SIGKILL." in _text(done)
        assert done.details is not None and done.details["exitReason"] == "overall-timeout"


async def test_a_background_end_is_announced_unless_it_was_killed(ctx: ToolContext) -> None:
    notices: list[Job] = []
    with trio.fail_after(15):
        async with open_process_registry(on_exit=notices.append) as registry:
            sid, _ = await _background(registry, ctx, "echo built; exit 2")
            quiet, _ = await _background(registry, ctx, "true")
            killed, _ = await _background(registry, ctx, "sleep 100")
            await _process(registry, ctx, action="kill", sessionId=killed)
            for each in (sid, quiet, killed):
                job = registry.get(ctx.session_key, each)
                assert job is not None
                await job.done.wait()
    assert [job.id for job in notices] == [sid]  # a quiet success and a kill say nothing
    assert notices[0].exit_event() == f"Exec completed ({sid[:8]}, code 2) :: built"


async def test_only_a_poll_returning_the_end_collects_a_job(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    """OpenClaw's terminal poll (`finishedPollResult` acknowledges the job): a poll of the
    running job, `log` and `list` collect nothing; the poll that returns the end does, and
    the host hears of it (`on_collected`) to take its completion back."""
    collected: list[tuple[str, str]] = []
    registry.on_collected = lambda key, job_id: collected.append((key, job_id))
    with trio.fail_after(15):
        sid, _ = await _background(registry, ctx, "echo started; read x; echo got $x")
        job = registry.get(ctx.session_key, sid)
        assert job is not None
        polled = await _process(registry, ctx, action="poll", sessionId=sid, timeout=5000)
        assert "Process still running." in _text(polled)
        await _process(registry, ctx, action="write", sessionId=sid, data="hi\n")
        await job.done.wait()
        await _process(registry, ctx, action="log", sessionId=sid)
        await _process(registry, ctx, action="list")
        assert not job.collected and collected == []
        done = await _process(registry, ctx, action="poll", sessionId=sid)
        assert _text(done).endswith("Process exited with code 0.")
        assert collected == [(ctx.session_key, sid)]
        assert getattr(registry.get(ctx.session_key, sid), "collected", None) is True


async def test_kill_run_and_the_registry_end_kill_every_tree(
    ctx: ToolContext, workspace: Path
) -> None:
    with trio.fail_after(15):
        async with open_process_registry() as registry:
            command = "setsid sleep 100 & echo $! > {}; echo ready; wait"
            sid, _ = await _background(registry, ctx, command.format("pids"))
            later = attrs.evolve(ctx, run_id="run-2")
            other, _ = await _background(registry, later, command.format("p2"))
            await _ready(registry, ctx, sid)
            await _ready(registry, later, other)
            assert registry.kill_run("run-1") == 1
            job = registry.get(ctx.session_key, sid)
            assert job is not None
            await job.done.wait()
            await assert_all_gone(_pids(workspace))
            [survivor] = [int(p) for p in (workspace / "p2").read_text().split()]
            assert running(survivor)
        await assert_all_gone([survivor])


async def test_bad_process_arguments_are_tool_errors(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    with trio.fail_after(10):
        no_id = await _process(registry, ctx, action="poll")
        bad = await invoke_tool(ProcessTool(registry), {"action": "explode"}, ctx)
        wrong = await invoke_tool(
            ProcessTool(registry), {"action": "log", "sessionId": "x", "offset": "one"}, ctx
        )
    assert _text(no_id) == "sessionId is required for this action."
    assert no_id.details == {"status": "failed", "error": "sessionId is required for this action."}
    assert _text(bad) == (
        'Validation failed for tool "process":\n'
        "  - action: must be equal to one of the allowed values\n\n"
        'Received arguments:\n{\n  "action": "explode"\n}'
    )
    assert "\n  - offset: must be number\n" in _text(wrong)


async def test_an_ended_job_is_kept_for_its_cleanup_time(ctx: ToolContext) -> None:
    with trio.fail_after(15):
        async with open_process_registry() as registry:
            result = await invoke_tool(
                ExecTool(processes=registry, keep_s=0.0),
                {"command": "echo x", "background": True},
                ctx,
            )
            assert result.details is not None
            sid = result.details["sessionId"]
            job = registry.get(ctx.session_key, sid)
            assert job is not None
            await job.done.wait()
            await trio.sleep(0.002)  # the wall clock must pass the job's end
            assert registry.get(ctx.session_key, sid) is None
            assert registry.list(ctx.session_key) == []


async def test_a_keeper_killed_outright_still_takes_its_tree_along(
    registry: ProcessRegistry, ctx: ToolContext
) -> None:
    """Someone SIGKILLs the keeper (the OOM killer, an operator): the registry kills what
    carries the job's marker."""
    with trio.fail_after(15):
        sid, _ = await _background(registry, ctx, "setsid sleep 100 & echo $!; echo ready; wait")
        job = registry.get(ctx.session_key, sid)
        assert job is not None and job.pid is not None
        await _ready(registry, ctx, sid)
        grandchild = int(job.output.text().split()[0])
        os.kill(job.pid, signal.SIGKILL)
        await job.done.wait()
        assert job.exit_signal == "SIGKILL"
        await assert_all_gone([grandchild])
