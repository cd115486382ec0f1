"""Background commands in the embedded runtime: `exec` yields a job that `process` sees in the
next turn, and leaving the runtime (or aborting the turn that started it) kills its whole tree.

Process liveness is read from the OS in a bounded loop: waiting for the kernel, not for another
task.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio

from runtime.agent._embedded import open_embedded_runtime
from runtime.model._config import parse_config
from tests._procs import assert_all_gone, running, tool_directive

ESCAPING = "setsid sleep 300 & echo $!; sleep 300"


async def test_a_background_job_is_seen_next_turn_and_dies_with_the_runtime(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:
            started = await rt.run_turn(
                tool_directive("exec", command=ESCAPING, background=True), session_key="work"
            )
            found = re.search(r"session ([0-9a-z-]+), pid (\d+)", started.text)
            assert found is not None, started.text
            sid, keeper = found.group(1), int(found.group(2))
            poll = tool_directive("process", action="poll", sessionId=sid, timeout=5000)
            polled = await rt.run_turn(poll, session_key="work")
            printed = re.search(r"process: (\d+)", polled.text)
            assert printed is not None, polled.text
            grandchild = int(printed.group(1))
            listed = await rt.run_turn(tool_directive("process", action="list"), session_key="work")
            assert f"{sid} running" in listed.text
            elsewhere = await rt.run_turn(
                tool_directive("process", action="list"), session_key="other"
            )
            assert "No running or recent sessions." in elsewhere.text
            assert running(keeper) and running(grandchild)
        await assert_all_gone([keeper, grandchild])


async def test_a_cancelled_turn_kills_the_jobs_it_started(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with open_embedded_runtime(parse_config({}), state_dir=tmp_path) as rt:
            processes = rt.services.processes
            assert processes is not None
            message = tool_directive("exec", command=ESCAPING, background=True) + "[[stall]]"
            backgrounded = trio.Event()

            def on_event(payload: Any) -> None:
                data = payload.get("data", {})
                if payload.get("stream") == "tool" and data.get("phase") == "result":
                    backgrounded.set()

            with trio.move_on_after(30) as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        lambda: rt.run_turn(
                            message, session_key="work", run_id="victim", on_event=on_event
                        )
                    )
                    await backgrounded.wait()
                    [job] = processes.list("agent:main:work")
                    while not job.output.text():
                        await job.changed.wait()
                    pids = [job.pid or 0, int(job.output.text().split()[0])]
                    nursery.cancel_scope.cancel()
            assert not scope.cancelled_caught
            await job.done.wait()
            assert job.exit_reason == "aborted"
            await assert_all_gone(pids)
