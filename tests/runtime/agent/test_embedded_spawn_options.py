"""`sessions_spawn`'s options in the embedded runtime (`runtime.agent._embedded_sessions`),
as on the gateway (tests/e2e/test_subagent_spawn_options.py): `completionTarget: "parent"`
tells the result in a turn of its own with OpenClaw's private instruction (never steered
into the parent's turn going on); `lightContext` leaves the workspace's bootstrap files out
of the child's system prompt; `cwd` is the child's tools' directory (outside the workspace:
refused); `attachments` are staged for the child and removed once its end is told. Driven by
the `local` model's `[[tool:...]]` directives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from runtime.agent import announce_key
from runtime.agent._embedded import EmbeddedRuntime
from runtime.llm._types import AssistantMessage
from tests.e2e.test_session_tools import spawn
from tests.runtime.agent.test_embedded_host_tools import Events, _runtime, text_of, tool


class Ends:
    """The runtime's background events: the runs that ended, and an event per run id."""

    def __init__(self, rt: EmbeddedRuntime) -> None:
        self.ends: dict[str, dict[str, Any]] = {}
        self.changed = trio.Event()
        rt.on_event = self

    def __call__(self, payload: dict[str, Any]) -> None:
        if payload["stream"] == "lifecycle" and payload["data"]["phase"] in ("end", "error"):
            self.ends[payload["runId"]] = payload
            self.changed.set()
            self.changed = trio.Event()

    async def wait(self, *run_ids: str) -> None:
        while not all(r in self.ends for r in run_ids):
            await self.changed.wait()


async def test_a_private_completion_is_a_turn_of_its_own_with_the_private_instruction(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            ends = Ends(rt)
            events = Events()
            # the child ends while the turn sleeps: an ordinary one would be steered into it
            turn = spawn("[[reply:private done]]", completionTarget="parent", label="quiet")
            turn += tool("exec", command="sleep 1")
            await rt.run_turn(turn, session_key="main", on_event=events)
            [(failed, receipt)] = events.results("sessions_spawn")
            await ends.wait(announce_key(receipt["childSessionKey"], receipt["runId"]))
            transcript = rt.transcript("main")
    assert not failed and receipt["completionTarget"] == "parent"
    assert "private requester turn" in receipt["note"]
    announce = ends.ends[announce_key(receipt["childSessionKey"], receipt["runId"])]
    assert announce["sessionKey"] == "agent:main:main"
    assert "mergedInto" not in announce["data"]
    # the announce's prompt is not kept; the reply, which quotes it, is
    [reply] = [m for m in transcript if isinstance(m, AssistantMessage)][-1:]
    assert "Process this result privately." in text_of(reply.content)
    assert "private done" in text_of(reply.content)


async def test_light_context_and_cwd_shape_the_childs_run(tmp_path: Path) -> None:
    prompts: dict[str, str] = {}
    with trio.fail_after(30):
        async with _runtime(tmp_path) as rt:
            workspace = await rt.services.workspace_for("main", None)
            (workspace / "AGENTS.md").write_text("# Rules\nBOOTSTRAP-MARKER-9\n")
            (workspace / "sub").mkdir()
            rt.services.hooks.register(
                "llm_input", lambda e: prompts.__setitem__(e.runId, e.systemPrompt or "")
            )
            parent_done = trio.Event()

            async def hold(event: Any, ctx: Any) -> None:
                # a child that ended before the parent's last spawn would be steered into
                # its turn, whose next step then reads that, not the turn's directives
                if ":subagent:" in (ctx.sessionKey or ""):
                    await parent_done.wait()

            rt.services.hooks.register("before_model_resolve", hold, plugin_id="hold")
            ends = Ends(rt)
            events = Events()
            write = '[[tool:write {"path": "out.txt", "content": "written"}]]'
            turn = "".join(
                [
                    tool("sessions_spawn", task="light", lightContext=True),
                    spawn(write, cwd="sub", label="writer"),
                    tool("sessions_spawn", task="x", cwd="/etc"),
                ]
            )
            await rt.run_turn(turn, session_key="main", on_event=events)
            parent_done.set()
            (_, light), (_, moved), (refused, outside) = events.results("sessions_spawn")
            await ends.wait(light["runId"], moved["runId"])
    assert "BOOTSTRAP-MARKER-9" in prompts[moved["runId"]]
    assert "BOOTSTRAP-MARKER-9" not in prompts[light["runId"]]
    assert (workspace / "sub" / "out.txt").read_text() == "written"
    assert not (workspace / "out.txt").exists()
    assert refused and outside["status"] == "forbidden"
    assert outside["error"].startswith("cwd Path escapes sandbox root (")


async def test_attachments_are_staged_for_the_child_and_removed_once_told(
    tmp_path: Path,
) -> None:
    attachments = {"enabled": True}
    with trio.fail_after(30):
        async with _runtime(tmp_path, tools={"sessions_spawn": {"attachments": attachments}}) as rt:
            workspace = await rt.services.workspace_for("main", None)
            ends = Ends(rt)
            events = Events()
            cat = '[[tool:exec {"command": "cat .openclaw/attachments/*/notes.txt"}]]'
            files = [{"name": "notes.txt", "content": "hello notes"}]
            turn = spawn(cat, attachments=files)
            await rt.run_turn(turn, session_key="main", on_event=events)
            [(failed, receipt)] = events.results("sessions_spawn")
            await ends.wait(announce_key(receipt["childSessionKey"], receipt["runId"]))
            child = rt.transcript(receipt["childSessionKey"])
    assert not failed and receipt["attachments"]["count"] == 1
    last = [m for m in child if isinstance(m, AssistantMessage)][-1]
    assert "hello notes" in text_of(last.content)  # the child read it
    assert not (workspace / receipt["attachments"]["relDir"]).exists()
