"""`automations` repairs the job a model writes flat beside `action` (or in shorthand) as
OpenClaw 2026.9.6's cron tool does: the same job, or the same error, for 1,500 recorded
arguments (tests/data/openclaw-cron-flat-args-2026.9.6.json, how: `_automations_flat_cases`)
and for more drawn afresh and asked of OpenClaw's own functions under Node 24; and through
the tool, what reaches the scheduler."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from runtime.llm import TextContent
from runtime.tools import ToolContext, invoke_tool, tool_spec
from runtime.tools._automations import AutomationsTool
from runtime.tools._automations_flat import job_for
from runtime.tools._automations_job import infer_name
from runtime.tools._errors import ToolError
from tests.runtime.tools._automations_flat_cases import (
    NAMED_JOBS,
    RECORD,
    openclaw_jobs,
    openclaw_names,
    random_arguments,
)
from tests.runtime.tools._openclaw_node import require_node


def _answer(arguments: dict[str, Any]) -> dict[str, Any]:
    """What clawlane's tool makes of `arguments`: `{job}` or `{error}` (through JSON, as an
    answer recorded under Node is)."""
    prepared = AutomationsTool.prepare_arguments(json.loads(json.dumps(arguments)))
    try:
        return {"job": job_for(arguments["action"], prepared.get("job"))}
    except ToolError as exc:
        return {"error": str(exc)}


def _expected(answer: dict[str, Any]) -> dict[str, Any]:
    """OpenClaw's answer; a patch only the gateway's normalization empties is sent here (and
    refused by `cron.update`)."""
    if "byNormalization" in answer:
        return {"job": answer["byNormalization"]}
    return {k: v for k, v in answer.items() if k != "arguments"}


def _ordered(value: Any) -> Any:
    """`value` with every object's keys in order, to compare that order too."""
    if isinstance(value, dict):
        return [(k, _ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def test_the_recorded_arguments_give_openclaws_jobs_and_errors() -> None:
    cases = json.loads(RECORD.read_text())["cases"]
    assert len(cases) == 1500
    wrong = [
        (c["arguments"], _expected(c), got)
        for c in cases
        if _ordered(got := _answer(c["arguments"])) != _ordered(_expected(c))
    ]
    assert wrong == []
    errors = {c.get("error") for c in cases}
    assert {"job required", "cron pacing must be an object"} <= errors
    assert sum("job" in c for c in cases) > 900  # most are repaired into a job


@pytest.mark.parametrize("seed", [21, 22])
async def test_more_random_arguments_match_openclaw_under_node(tmp_path: Any, seed: int) -> None:
    require_node()
    cases = random_arguments(seed, 400)
    answers = await openclaw_jobs(tmp_path, cases)
    assert [_ordered(_answer(c)) for c in cases] == [_ordered(_expected(a)) for a in answers]


async def test_a_job_without_a_name_is_named_as_openclaw_names_it(tmp_path: Any) -> None:
    require_node()
    assert [infer_name(job) for job in NAMED_JOBS] == await openclaw_names(tmp_path, NAMED_JOBS)


def test_flat_fields_become_the_nested_job() -> None:
    flat = {
        "action": "add",
        "name": "standup",
        "every": 60000,
        "message": "Check the build",
        "sessionTarget": "isolated",
    }
    assert _answer(flat) == {
        "job": {
            "name": "standup",
            "sessionTarget": "isolated",
            "schedule": {"everyMs": 60000, "kind": "every"},
            "payload": {"message": "Check the build", "kind": "agentTurn"},
        }
    }
    shorthand = {"action": "add", "job": {"cron": "0 9 * * *", "tz": "UTC", "text": "Stand up"}}
    assert _answer(shorthand)["job"] == {
        "schedule": {"expr": "0 9 * * *", "kind": "cron", "tz": "UTC"},
        "payload": {"text": "Stand up", "kind": "systemEvent"},
    }
    at = {"action": "add", "atMs": 4102444800000, "text": "New year"}
    assert _answer(at)["job"]["schedule"] == {"at": "2100-01-01T00:00:00.000Z", "kind": "at"}


def test_openclaws_errors_for_what_it_does_not_take() -> None:
    assert _answer({"action": "add", "name": "no schedule"}) == {"error": "job required"}
    assert _answer({"action": "update", "jobId": "j"}) == {"error": "job required"}
    on_exit = _answer({"action": "add", "command": ["make"], "message": "m"})
    assert "on-exit schedules cannot be created" in on_exit["error"]
    blank = _answer({"action": "add", "every": 1000, "text": "t", "delivery": {"to": " "}})
    assert blank == {"error": "delivery.to must be a non-empty string"}


class Host:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, ctx: ToolContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        self.calls.append((method, params))
        return {"ok": True}


async def test_the_tool_sends_the_repaired_job_and_ignores_other_arguments(
    ctx: ToolContext,
) -> None:
    host = Host()
    tool = AutomationsTool(host)
    flat = {"action": "add", "at": "2099-01-01T09:00:00Z", "text": "Stand up", "note": "x"}
    added = await invoke_tool(tool, flat, ctx)
    patch = {"action": "update", "jobId": "j1", "name": "renamed", "enabled": False, "y": 1}
    updated = await invoke_tool(tool, patch, ctx)
    elsewhere = await invoke_tool(tool, {"action": "list", "gatewayUrl": "ws://x"}, ctx)
    assert not added.is_error and not updated.is_error
    assert host.calls == [
        (
            "cron.add",
            {
                "schedule": {"at": "2099-01-01T09:00:00Z", "kind": "at"},
                "payload": {"text": "Stand up", "kind": "systemEvent"},
                "agentId": "main",
                "wakeMode": "now",
                "name": "Stand up",
                "sessionTarget": "main",
            },
        ),
        ("cron.update", {"id": "j1", "patch": {"name": "renamed", "enabled": False}}),
    ]
    [text] = elsewhere.content
    assert elsewhere.is_error and isinstance(text, TextContent)
    assert "unknown field `gatewayUrl`" in text.text
    assert tool_spec(tool).parameters["additionalProperties"] is True
