"""A model that writes a job's fields flat beside `action` (OpenClaw's cron tool repairs
them) makes the same job over a real gateway as one that nests them in `job`, driven by the
`local` model's `[[tool:...]]` directives; a job made without a name is named as OpenClaw
names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from tests.conftest import open_client, running_gateway
from tests.e2e.test_automations_tool import Watch, details, directive, error_text, tool_results


async def test_flat_job_fields_make_and_change_a_job(tmp_path: Path) -> None:
    watch = Watch()
    calls: list[dict[str, Any]] = [
        {
            "action": "add",
            "name": "digest",
            "every": 3_600_000,
            "message": "tick",
            "sessionTarget": "isolated",
            "delivery": {"mode": "none"},
        },
        {"action": "add", "scheduleKind": "at", "at": "2099-01-01T09:00:00Z", "text": "Buy milk"},
        {"action": "add", "name": "nothing to schedule"},
    ]
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                msg = " ".join(directive("automations", c) for c in calls)
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "flat"}, expect_final=True
                )
                digest, milk, empty = tool_results(watch.events, "flat")
                job_id = details(digest)["id"]
                patch = {"action": "update", "jobId": job_id, "name": "weekly", "enabled": False}
                await client.request(
                    "agent",
                    {"message": directive("automations", patch), "idempotencyKey": "patch"},
                    expect_final=True,
                )
                [patched] = tool_results(watch.events, "patch")
                stored = {j["id"]: j for j in (await client.request("cron.list", {}))["jobs"]}
    job = details(digest)
    assert job["schedule"]["kind"] == "every" and job["schedule"]["everyMs"] == 3_600_000
    assert job["payload"] == {"kind": "agentTurn", "message": "tick"}
    assert job["sessionTarget"] == "isolated" and job["delivery"] == {"mode": "none"}
    reminder = details(milk)
    assert reminder["schedule"] == {"kind": "at", "at": "2099-01-01T09:00:00.000Z"}
    assert reminder["payload"] == {"kind": "systemEvent", "text": "Buy milk"}
    assert reminder["sessionTarget"] == "main" and reminder["name"] == "Buy milk"  # OpenClaw's
    assert error_text(empty) == "automations failed: job required"
    assert details(patched)["name"] == "weekly" and details(patched)["enabled"] is False
    assert job_id not in stored and reminder["id"] in stored  # disabled: not listed
