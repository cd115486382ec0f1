"""A child's end, on a real gateway, reaches its parent's model as the text OpenClaw 2026.9.6's
model reads for the same end (driven by the `local` model's `[[tool:...]]` directives; the
`local` model's reply quotes its prompt).

For the child's run as the gateway recorded it (its session id, times, usage, reply),
OpenClaw's own code under Node 24 (`tests/runtime/agent/_announce_cases.py`) renders the
announce: the prompt the parent's model got (`llm_input`) is that text, and the announce
run's id is OpenClaw's idempotency key: for a parent that is no subagent, for a
`completionTarget: "parent"` child (OpenClaw's private instruction, no stats line), and for
a parent that is itself a subagent (its orchestration instruction)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from actors import RunRecord
from runtime.agent import announce_key, announce_task
from runtime.agent._announce import EVENT_HEAD
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import run_events
from tests.e2e.test_session_tools import Watch, details, prompt_spy, spawn, tool_results
from tests.runtime.agent._announce_cases import openclaw_announces
from tests.runtime.tools._openclaw_node import require_node

MAIN = "agent:main:main"


def openclaw_side(record: RunRecord, child_key: str, label: str, task: str, **more: Any) -> Any:
    """The case OpenClaw's announce flow has for the child's ended run `record`."""
    final = record.final or {}
    usage = ((final.get("meta") or {}).get("agentMeta") or {}).get("usage") or {}
    reported = any(usage.get(k) for k in ("input", "output", "cacheRead", "cacheWrite"))
    reply = "\n\n".join(p["text"] for p in final.get("payloads") or [] if p.get("text"))
    return {
        "childSessionKey": child_key,
        "childRunId": record.run_id,
        "childSessionId": record.session_id,
        "label": label,
        "task": task,
        "outcome": {"status": "ok"},
        "reply": reply,
        "requesterIsSubagent": False,
        "expectsCompletionMessage": True,
        "completionTarget": None,
        "startedAt": record.started_at,
        "endedAt": record.ended_at,
        "entry": (
            {"inputTokens": usage["input"], "outputTokens": usage["output"]} if reported else {}
        ),
        **more,
    }


def said(watch: Watch, run_id: str) -> str:
    return "".join(
        p["data"].get("delta", "") for p in run_events(watch.events, run_id, "assistant")
    )


@pytest.mark.parametrize("kind", ["main", "private"])
async def test_the_parents_model_reads_openclaws_announce_of_the_childs_end(
    tmp_path: Path, kind: str
) -> None:
    require_node()
    watch = Watch()
    prompts, spy = prompt_spy()

    task = "[[reply:kid-done]] check the docs"
    more = {"completionTarget": "parent"} if kind == "private" else {}
    with trio.fail_after(60):
        async with running_gateway(tmp_path) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                message = spawn(task, label="kid", **more)
                await client.request(
                    "agent", {"message": message, "idempotencyKey": "p1"}, expect_final=True
                )
                receipt = details(tool_results(watch.events, "p1")[0])
                [_, announce] = await watch.ended(MAIN, 2)
                record = gw.supervisor.registry.get(receipt["runId"])
                assert record is not None
    child_key = receipt["childSessionKey"]
    case = openclaw_side(record, child_key, "kid", task, **more)
    [openclaw] = await openclaw_announces(tmp_path, [{"openclaw": case}])
    assert announce["runId"] == openclaw["idempotencyKey"] == announce_key(child_key, record.run_id)
    assert prompts[announce["runId"]] == openclaw["message"]  # what the model read
    reply = said(watch, announce["runId"])
    assert EVENT_HEAD in reply and "kid-done" in reply  # its reply quotes it
    assert ("Stats: runtime" in reply) is (kind == "main")


async def test_a_subagent_parent_reads_openclaws_orchestration_announce(tmp_path: Path) -> None:
    require_node()
    config = local_config(agents__defaults__subagents={"maxSpawnDepth": 2})
    watch = Watch()
    prompts, spy = prompt_spy()

    deep = "[[delay:500]] [[reply:deep-result]]"
    with trio.fail_after(60):
        async with running_gateway(tmp_path, config) as gw:
            gw.supervisor.hooks.register("llm_input", spy, plugin_id="spy")
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                # the grandchild ends after its parent's run: an announce run of its own there
                boss = spawn(spawn(deep, label="deep") + " [[reply:spawned]]", label="boss")
                await client.request(
                    "agent", {"message": boss, "idempotencyKey": "p1"}, expect_final=True
                )
                parent = details(tool_results(watch.events, "p1")[0])["childSessionKey"]
                [_, announce] = await watch.ended(parent, 2)
                grand_run = announce_task(announce["runId"])
                assert grand_run is not None
                record = gw.supervisor.registry.get(grand_run)
                assert record is not None
    grandchild = record.session_key
    case = openclaw_side(record, grandchild, "deep", deep, requesterIsSubagent=True)
    [openclaw] = await openclaw_announces(tmp_path, [{"openclaw": case}])
    assert announce["runId"] == openclaw["idempotencyKey"]
    assert prompts[announce["runId"]] == openclaw["message"]
    assert "Convert this completion into a concise internal orchestration update" in (
        said(watch, announce["runId"])
    )
