"""The embedded runtime: runtime/ as a library. Same events as the gateway, generations
published at its activation boundary, a run keeps the generation it started with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from runtime.agent._embedded import open_embedded_runtime
from runtime.llm._types import ModelDelta, ModelProvider, ModelRequest, TextDelta
from runtime.model._config import ProviderConfig, parse_config
from runtime.model._generation import GenerationError, default_provider_factory
from tests.conftest import frame_checker


class Gated:
    """A provider double tagged with its config (`options.tag`): streams `tag` three times,
    the second delta only after `gate` is set."""

    api = "local"

    def __init__(self, pid: str, tag: str, gate: trio.Event) -> None:
        self.id = pid
        self.tag = tag
        self.gate = gate

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[ModelDelta]:
        for i in range(3):
            if i == 1:
                await self.gate.wait()
            await trio.lowlevel.checkpoint()
            yield TextDelta(f"[{self.tag}]")

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


def tagged(tag: str, **extra: Any) -> Any:
    return parse_config(
        {
            "models": {
                "providers": {
                    "local": {"api": "local", "models": [{"id": "echo"}], "options": {"tag": tag}}
                }
            },
            **extra,
        }
    )


def gated_factory(gate: trio.Event) -> Any:
    def factory(pid: str, pconf: ProviderConfig) -> ModelProvider:
        tag = (pconf.options or {}).get("tag")
        if isinstance(tag, str):
            return Gated(pid, tag, gate)
        return default_provider_factory(pid, pconf)

    return factory


async def test_a_turn_streams_the_gateways_agent_events(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    with trio.fail_after(10):
        async with open_embedded_runtime(
            workspace_root=tmp_path, config=parse_config({})
        ) as runtime:
            result = await runtime.run_turn(
                "hello embedded [[deltas:3]]", session_key="e1", on_event=events.append
            )
    assert result.status == "ok" and result.text == "You said: hello embedded"
    assert result.session_key == "agent:main:e1" and result.agent_id == "main"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)) and result.events == len(
        events
    )
    assert [e["stream"] for e in events] == [
        "lifecycle",
        "assistant",
        "assistant",
        "assistant",
        "lifecycle",
    ]
    assert events[0]["data"]["phase"] == "start" and events[-1]["data"] == {
        "phase": "end",
        "startedAt": events[0]["data"]["startedAt"],
        "endedAt": events[-1]["data"]["endedAt"],
        "aborted": False,
    }
    assert {e["runId"] for e in events} == {result.run_id}
    checker = frame_checker()
    for e in events:
        checker.check({"type": "event", "event": "agent", "payload": e})
    payload = result.to_payload()
    assert payload["payloads"] == [{"text": "You said: hello embedded"}]
    assert payload["meta"]["generation"] == 1 and payload["meta"]["runtime"] == "openclaw"
    assert payload["meta"]["agentMeta"]["usage"]["output"] == 3


async def test_a_run_keeps_its_generation_while_a_newer_one_is_published(tmp_path: Path) -> None:
    gate = trio.Event()
    with trio.fail_after(10):
        async with open_embedded_runtime(
            workspace_root=tmp_path, config=tagged("g1"), provider_factory=gated_factory(gate)
        ) as runtime:
            first_delta = trio.Event()
            events: list[dict[str, Any]] = []

            def on_event(e: dict[str, Any]) -> None:
                events.append(e)
                if e["stream"] == "assistant":
                    first_delta.set()

            results: list[Any] = []
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    results.append(await runtime.run_turn("x", session_key="a", on_event=on_event))

                nursery.start_soon(run)
                await first_delta.wait()
                published = runtime.publish(tagged("g2"))
                assert published.number == 2 and runtime.generation is published
                gate.set()
            [old] = results
            new = await runtime.run_turn("y", session_key="b")
    assert old.meta["generation"] == 1 and old.text == "[g1][g1][g1]"
    assert new.meta["generation"] == 2 and new.text == "[g2][g2][g2]"


async def test_a_failed_publish_keeps_the_current_generation_serving(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with open_embedded_runtime(
            workspace_root=tmp_path, config=parse_config({})
        ) as runtime:
            bad = parse_config({"agents": {"defaults": {"model": "local/missing"}}})
            with pytest.raises(GenerationError, match="unknown model 'local/missing'"):
                runtime.publish(bad)
            assert runtime.generation.number == 1
            result = await runtime.run_turn("still here")
    assert result.status == "ok" and result.meta["generation"] == 1


async def test_an_unregistered_runtime_fails_the_turn_closed(tmp_path: Path) -> None:
    config = parse_config(
        {"agents": {"defaults": {"models": {"local/echo": {"agentRuntime": {"id": "codex"}}}}}}
    )
    events: list[dict[str, Any]] = []
    with trio.fail_after(10):
        async with open_embedded_runtime(workspace_root=tmp_path, config=config) as runtime:
            result = await runtime.run_turn("hi", on_event=events.append)
    assert result.status == "error" and result.error is not None
    assert 'agent runtime "codex"' in result.error and "not registered" in result.error
    assert [e["data"]["phase"] for e in events] == ["start", "error"]
    assert result.payloads[-1]["isError"] is True


async def test_a_turn_that_runs_out_of_time_ends_aborted(tmp_path: Path) -> None:
    # A real clock: the turn prepares its prompt in worker threads, and a virtual clock
    # would jump to the run's deadline while one runs.
    events: list[dict[str, Any]] = []
    async with open_embedded_runtime(workspace_root=tmp_path, config=parse_config({})) as runtime:
        with trio.fail_after(30):
            result = await runtime.run_turn(
                "[[stall:1]] slow words here", timeout_s=1.5, on_event=events.append
            )
    assert result.status == "aborted" and result.meta["aborted"] is True
    assert events[-1]["data"]["phase"] == "end" and events[-1]["data"]["aborted"] is True
    assert result.text == "You "  # one delta, then the stall


async def test_turns_of_one_session_run_one_at_a_time_in_order(tmp_path: Path) -> None:
    lifecycle: list[tuple[str, str]] = []

    def on_event(e: dict[str, Any]) -> None:
        if e["stream"] == "lifecycle":
            lifecycle.append((e["runId"], e["data"]["phase"]))

    async def turn(i: int) -> None:
        await runtime.run_turn(
            f"m{i} [[deltas:2]]", session_key="same", run_id=f"r{i}", on_event=on_event
        )

    with trio.fail_after(10):
        async with open_embedded_runtime(
            workspace_root=tmp_path, config=parse_config({})
        ) as runtime:
            async with trio.open_nursery() as nursery:
                for i in range(3):
                    nursery.start_soon(turn, i)
                    await trio.testing.wait_all_tasks_blocked()
            transcript = runtime.transcript("same")
    assert lifecycle == [(f"r{i}", phase) for i in range(3) for phase in ("start", "end")]
    assert [m.content for m in transcript[::2]] == [f"m{i} [[deltas:2]]" for i in range(3)]


async def test_the_session_key_names_the_agent(tmp_path: Path) -> None:
    config = parse_config({"agents": {"list": [{"id": "main"}, {"id": "ops"}]}})
    with trio.fail_after(10):
        async with open_embedded_runtime(workspace_root=tmp_path, config=config) as runtime:
            result = await runtime.run_turn("hi", session_key="agent:ops:desk")
    assert result.agent_id == "ops" and result.meta["agentMeta"]["agentId"] == "ops"


async def test_a_call_a_plugin_wants_approved_is_refused_with_no_approver(tmp_path: Path) -> None:
    """The embedded runtime has no gateway and so no operator to ask: a `requireApproval`
    call never runs, and the model sees why."""
    resolutions: list[str] = []
    with trio.fail_after(10):
        async with open_embedded_runtime(
            workspace_root=tmp_path, config=parse_config({})
        ) as runtime:
            assert runtime.services.approvals is None

            def guard(event: Any) -> Any:
                approval = {"title": "Write", "description": "a file", "timeoutMs": 600_000}
                return {"requireApproval": {**approval, "onResolution": resolutions.append}}

            runtime.services.hooks.register("before_tool_call", guard, plugin_id="guard")
            result = await runtime.run_turn(
                '[[tool:write {"path": "marker.txt", "content": "ran"}]]', session_key="ap"
            )
    assert result.status == "ok" and "no approver is available" in result.text
    assert not (tmp_path / "main" / "marker.txt").exists()
    assert resolutions == ["cancelled"]
