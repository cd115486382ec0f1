"""`sessions_spawn`'s options in the embedded runtime (`runtime.agent._embedded_sessions`):
`completionTarget: "parent"` tells the result in a turn of its own with OpenClaw's private
instruction (never steered into the parent's turn going on); `cwd`, `lightContext` and
`attachments`, which its turns cannot carry out, are refused rather than ignored. Driven by
the `local` model's `[[tool:...]]` directives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from runtime.llm._types import AssistantMessage
from tests.runtime.agent.test_embedded_host_tools import Events, _runtime, text_of, tool


async def test_a_private_completion_is_a_turn_of_its_own_with_the_private_instruction(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            ends: list[dict[str, Any]] = []
            announced = trio.Event()

            def background(payload: dict[str, Any]) -> None:
                if payload["stream"] == "lifecycle" and payload["data"]["phase"] == "end":
                    ends.append(payload)
                    if payload["runId"].endswith(":announce"):
                        announced.set()

            rt.on_event = background
            events = Events()
            spawn = tool("sessions_spawn", task="[[reply:private done]]", completionTarget="parent")
            # the child ends while the turn sleeps: an ordinary one would be steered into it
            turn = spawn + tool("exec", command="sleep 1")
            await rt.run_turn(turn, session_key="main", on_event=events)
            await announced.wait()
            transcript = rt.transcript("main")
    [(failed, receipt)] = events.results("sessions_spawn")
    assert not failed and receipt["completionTarget"] == "parent"
    assert "private requester turn" in receipt["note"]
    [announce] = [e for e in ends if e["runId"] == f"{receipt['runId']}:announce"]
    assert announce["sessionKey"] == "agent:main:main"
    assert "mergedInto" not in announce["data"]
    # the announce's prompt is not kept; the reply, which quotes it, is
    [reply] = [m for m in transcript if isinstance(m, AssistantMessage)][-1:]
    assert "Process this result privately." in text_of(reply.content)
    assert "private done" in text_of(reply.content)


async def test_options_the_embedded_runtime_cannot_carry_out_are_refused(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            events = Events()
            turn = "".join(
                [
                    tool("sessions_spawn", task="x", cwd="sub"),
                    tool("sessions_spawn", task="x", lightContext=True),
                    tool("sessions_spawn", task="x", lightContext=False),
                ]
            )
            await rt.run_turn(turn, session_key="main", on_event=events)
    cwd, light, plain = events.results("sessions_spawn")
    assert cwd == (
        True,
        {"status": "error", "error": "sessions_spawn cwd: not supported by the embedded runtime"},
    )
    assert light[0] and "lightContext: not supported" in light[1]["error"]
    assert not plain[0] and plain[1]["status"] == "accepted"
