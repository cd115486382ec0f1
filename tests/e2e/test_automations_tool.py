"""OpenClaw's scheduling tool, `automations` (alias `cron`), over a real gateway's cron
scheduler, driven by the `local` model's `[[tool:...]]` directives and checked as a client
that asked for tool events sees them: a run adds a job, lists it, runs it now (its firing
is a real cron run), updates and removes it, each answered with the `cron.*` method's
result; a bad argument or an unknown job is a tool error the model sees. `tools.catalog`
lists the tool as available."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, run_events


def directive(name: str, args: dict[str, Any]) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


def tool_results(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [
        p["data"]
        for p in run_events(events, run_id, "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] != "tool_call"
    ]


def details(result: dict[str, Any]) -> dict[str, Any]:
    payload = result["result"]["details"]
    assert json.loads(result["result"]["content"][0]["text"]) == payload
    return dict(payload)


def error_text(result: dict[str, Any]) -> str:
    assert result["isError"], result
    return str(result["result"]["content"][0]["text"])


class Watch:
    def __init__(self) -> None:
        self.events: Events = []
        self.changed = trio.Event()

    def __call__(self, event: str, payload: Any, seq: int | None) -> None:
        self.events.append((event, payload, seq))
        self.changed.set()
        self.changed = trio.Event()

    def cron(self, job_id: str, action: str) -> list[dict[str, Any]]:
        return [
            p
            for (e, p, _s) in self.events
            if e == "cron" and p.get("jobId") == job_id and p.get("action") == action
        ]

    async def cron_event(self, job_id: str, action: str) -> dict[str, Any]:
        while not self.cron(job_id, action):
            await self.changed.wait()
        return self.cron(job_id, action)[0]


PLAIN = {  # OpenClaw's defaults fill the rest
    "name": "reminder",
    "schedule": {"kind": "every", "everyMs": 7_200_000},
    "payload": {"kind": "agentTurn", "message": "remind"},
}
JOB = {
    "name": "digest",
    "schedule": {"kind": "every", "everyMs": 3_600_000},
    "sessionTarget": "isolated",
    "payload": {"kind": "agentTurn", "message": "tick"},
    "delivery": {"mode": "none"},
}


async def test_a_run_adds_lists_runs_updates_and_removes_a_job(tmp_path: Path) -> None:
    watch = Watch()
    # The model calls the tool by its `cron` alias directly: all schemas offered directly.
    async with running_gateway(tmp_path, local_config(tools__toolSearch=False)) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:

                async def run(key: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
                    msg = " ".join(directive(name, args) for name, args in calls)
                    await client.request(
                        "agent", {"message": msg, "idempotencyKey": key}, expect_final=True
                    )
                    return tool_results(watch.events, key)

                added, plain, listed = await run(
                    "add",
                    ("automations", {"action": "add", "job": JOB}),
                    ("automations", {"action": "add", "job": PLAIN}),
                    ("cron", {"action": "list"}),  # OpenClaw's alias
                )
                await client.request("cron.remove", {"id": details(plain)["id"]})
                job = details(added)
                job_id = job["id"]
                [ran] = await run(
                    "run", ("automations", {"action": "run", "jobId": job_id, "runMode": "force"})
                )
                finished = await watch.cron_event(job_id, "finished")
                gotten = await client.request("cron.get", {"id": job_id})
                updated, history, removed, gone, bad, missing = await run(
                    "edit",
                    (
                        "automations",
                        {
                            "action": "update",
                            "jobId": job_id,
                            "job": {"name": "weekly", "enabled": False},
                        },
                    ),
                    ("automations", {"action": "runs", "jobId": job_id}),
                    ("automations", {"action": "remove", "jobId": job_id}),
                    ("automations", {"action": "get", "jobId": job_id}),
                    (
                        "automations",
                        {"action": "add", "job": {"name": "x", "schedule": {"kind": "every"}}},
                    ),
                    ("automations", {"action": "remove"}),
                )
                after = await client.request("cron.list", {"includeDisabled": True})
                catalog = await client.request("tools.catalog", {})
    assert added["name"] == "automations" and not added["isError"]
    assert job["name"] == "digest" and job["agentId"] == "main"  # the calling agent's
    assert job["schedule"]["everyMs"] == 3_600_000 and job["enabled"] is True
    default = details(plain)
    assert default["sessionTarget"] == "current" and default["wakeMode"] == "now"
    assert default["sessionKey"] == "agent:main:main" and default["agentId"] == "main"
    page = details(listed)
    assert [j["id"] for j in page["jobs"]] == [job_id, default["id"]] and page["total"] == 2
    assert page["hasMore"] is False and page["jobs"][0]["effectiveAgentId"] == "main"
    receipt = details(ran)
    assert receipt["ok"] is True and receipt["enqueued"] is True
    assert receipt["runId"].startswith(f"manual:{job_id}:")
    assert finished["jobId"] == job_id
    assert gotten["state"]["lastRunStatus"] == "ok"
    change = details(updated)
    assert change["id"] == job_id and change["name"] == "weekly" and change["enabled"] is False
    runs = details(history)
    assert runs["total"] == 1 and runs["entries"][0]["status"] == "ok"
    assert details(removed) == {"ok": True, "removed": True}
    assert "cron job not found: " + job_id in error_text(gone)
    assert error_text(bad).startswith("automations failed: invalid cron.add params: ")
    assert "everyMs" in error_text(bad)
    assert "jobId required" in error_text(missing)
    assert after["jobs"] == []  # removed, and the bad add stored nothing
    entries = {t["id"]: t for g in catalog["groups"] for t in g["tools"]}
    assert "unavailable" not in entries["automations"].get("tags", [])


async def test_an_unknown_action_is_a_tool_error(tmp_path: Path) -> None:
    watch = Watch()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                msg = directive("automations", {"action": "frobnicate"})
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "bad"}, expect_final=True
                )
    [result] = tool_results(watch.events, "bad")
    assert error_text(result) == (
        'Validation failed for tool "automations":\n'
        "  - action: must be equal to one of the allowed values\n\n"
        'Received arguments:\n{\n  "action": "frobnicate"\n}'
    )


async def test_the_policy_names_it_by_group_and_alias(tmp_path: Path) -> None:
    """`group:automation` offers it (tools.effective lists it); a deny naming the `cron`
    alias takes it away: a call is refused as a tool the run does not have."""
    watch = Watch()
    allowed = local_config(tools__profile="minimal", tools__alsoAllow=["group:automation"])
    async with running_gateway(tmp_path / "allowed", allowed) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                msg = directive("automations", {"action": "status"})
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "on"}, expect_final=True
                )
                effective = await client.request("tools.effective", {"sessionKey": "main"})
    [status] = tool_results(watch.events, "on")
    assert not status["isError"] and details(status)["enabled"] is True
    assert details(status)["jobs"] == 0
    offered = {t["id"] for g in effective["groups"] for t in g["tools"]}
    assert "automations" in offered and "exec" not in offered
    async with running_gateway(tmp_path / "denied", local_config(tools__deny=["cron"])) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "off"}, expect_final=True
                )
    [refused] = tool_results(watch.events, "off")
    assert "not available" in error_text(refused)


def job(name: str, message: str = "tick", **more: Any) -> dict[str, Any]:
    """A `cron.add` job (the tool fills `wakeMode`; the method wants it)."""
    payload = {"kind": "agentTurn", "message": message}
    return {**JOB, "name": name, "wakeMode": "now", "payload": payload, **more}


async def test_a_run_reaches_only_its_agents_jobs_and_lists_them_as_cron_list_does(
    tmp_path: Path,
) -> None:
    """OpenClaw's caller scope: another agent's job is unknown to the tool (get, remove),
    a job for another agent is refused, `agentId` cannot move a job; `list` pages with
    OpenClaw's `limit` / `offset` (and ignores `cron.list`'s filters: OpenClaw's tool has
    none, and takes any argument). `next_check` outside a paced run and `wake` for another agent's session are
    refused as OpenClaw refuses them."""
    config = local_config(agents__list=[{"id": "main", "default": True}, {"id": "ops"}])
    watch = Watch()
    async with running_gateway(tmp_path, config) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                ops = await client.request("cron.add", job("ops-alpha", agentId="ops"))
                ids = {
                    name: (await client.request("cron.add", job(name)))["id"]
                    for name in ("alpha", "beta", "gamma")
                }
                calls: list[dict[str, Any]] = [
                    {"action": "list", "limit": 2, "offset": 1},
                    {"action": "list", "query": "a"},
                    {"action": "get", "jobId": ops["id"]},
                    {"action": "remove", "jobId": ops["id"]},
                    {"action": "add", "job": job("mine-for-ops", agentId="ops")},
                    {"action": "update", "jobId": ids["beta"], "job": {"agentId": "ops"}},
                    {"action": "next_check", "in": "15m"},
                    {"action": "wake", "text": "psst", "sessionKey": "agent:ops:main"},
                    {"action": "wake", "text": " "},
                ]
                msg = " ".join(directive("automations", c) for c in calls)
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "scope"}, expect_final=True
                )
                everything = await client.request(
                    "cron.list", {"query": "ALPHA", "sortBy": "name", "sortDir": "asc"}
                )
    results = tool_results(watch.events, "scope")
    listed, filtered, got, removed, added, moved, checked, woke, empty = results
    page = details(listed)
    assert len(page["jobs"]) == 2 and {j["id"] for j in page["jobs"]} < set(ids.values())
    assert page["total"] == 3 and page["scope"] == "caller"  # no ops-alpha
    assert page["offset"] == 1 and page["limit"] == 2 and page["hasMore"] is False
    assert details(filtered)["total"] == 3  # `query` ignored
    assert f"cron job not found: {ops['id']}" in error_text(got)
    assert f"cron job not found: {ops['id']}" in error_text(removed)
    assert "invalid cron.add params: job agentId outside caller scope" in error_text(added)
    assert "agentId cannot be changed by caller scope" in error_text(moved)
    assert "cron next_check is only available to the currently running job" in error_text(checked)
    assert "sessionKey outside caller scope" in error_text(woke)
    assert "text required" in error_text(empty)
    # The operator's cron.list sees every agent's jobs, filtered and sorted the same way.
    assert [j["name"] for j in everything["jobs"]] == ["alpha", "ops-alpha"]


async def test_an_isolated_jobs_run_reaches_only_its_own_job(tmp_path: Path) -> None:
    """OpenClaw's self scope: inside a cron job's isolated run the tool sees its own job
    (status says only whether the scheduler is on), may not reach another job, and
    `next_check` is refused for want of pacing (clawlane makes no paced jobs)."""
    watch = Watch()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                other = await client.request("cron.add", job("other"))
                calls = [
                    {"action": "status"},
                    {"action": "list"},
                    {"action": "next_check", "in": "15m"},
                    {"action": "remove", "jobId": other["id"]},
                    {"action": "add", "job": job("spawned")},
                ]
                message = " ".join(directive("automations", c) for c in calls)
                own = await client.request("cron.add", job("self", message))
                await client.request("cron.run", {"id": own["id"], "mode": "force"})
                await watch.cron_event(own["id"], "finished")
                names = [j["name"] for j in (await client.request("cron.list", {}))["jobs"]]
    prefix = f"agent:main:cron:{own['id']}:run:"
    [reply] = [
        p["data"]["text"]
        for (e, p, _s) in watch.events
        if e == "agent"
        and p["stream"] == "assistant"
        and p.get("sessionKey", "").startswith(prefix)
        and p["data"]["text"].startswith("Tool results: ")
    ][-1:]
    status, listed, checked, removed, added = reply.removeprefix("Tool results: ").split("; ")
    assert status.replace(" ", "").replace("\n", "") == 'automations:{"enabled":true}'
    assert f'"id": "{own["id"]}"' in listed and other["id"] not in listed
    assert checked.endswith("failed: cron next_check requires pacing on the current job")
    assert removed.endswith("failed: Automations tool is restricted to the current automation.")
    assert added == removed
    assert sorted(names) == ["other", "self"]  # nothing removed, nothing added


async def test_wake_queues_a_system_event_for_the_sessions_next_turn(tmp_path: Path) -> None:
    """`wake` (mode next-heartbeat, the default): the text waits as a system event, and the
    session's next turn reads it before its message."""
    watch = Watch()
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                msg = directive("automations", {"action": "wake", "text": "ping-event"})
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "w1"}, expect_final=True
                )
                await client.request(
                    "agent", {"message": "hello", "idempotencyKey": "w2"}, expect_final=True
                )
                history = await client.request("chat.history", {"sessionKey": "main"})
    [woke] = tool_results(watch.events, "w1")
    assert not woke["isError"] and details(woke) == {"ok": True}
    users = [m["content"] for m in history["messages"] if m["role"] == "user"]
    text = users[-1] if isinstance(users[-1], str) else json.dumps(users[-1])
    assert "System: [" in text and "ping-event" in text and text.endswith("hello")


async def test_the_job_is_read_along_openclaws_typed_job_schema(tmp_path: Path) -> None:
    """`job` is OpenClaw's typed object, so a model's arguments are coerced along it as
    OpenClaw coerces them: a numeric string for `schedule.everyMs` is the number, `"false"`
    for `enabled` is false, and a `null` for a nullable field (`payload.model` in an update)
    stays null and clears it. An argument OpenClaw's tool uses to reach another gateway
    (`gatewayUrl`) is refused: this tool acts on the gateway it runs in."""
    watch = Watch()
    flat = {**JOB, "schedule": {"kind": "every", "everyMs": "3600000"}, "enabled": "false"}
    flat["payload"] = {"kind": "agentTurn", "message": "tick", "model": "local/echo"}
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                msg = directive("automations", {"action": "add", "job": flat})
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "typed"}, expect_final=True
                )
                [added] = tool_results(watch.events, "typed")
                job_id = details(added)["id"]
                calls = [
                    {
                        "action": "update",
                        "jobId": job_id,
                        "job": {"payload": {"kind": "agentTurn", "model": None}},
                    },
                    {"action": "list", "gatewayUrl": "ws://127.0.0.1:1"},
                ]
                msg = " ".join(directive("automations", c) for c in calls)
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "patch"}, expect_final=True
                )
                stored = await client.request("cron.get", {"id": job_id})
    job = details(added)
    assert job["schedule"]["everyMs"] == 3_600_000 and job["enabled"] is False
    assert job["payload"]["model"] == "local/echo"
    patched, elsewhere = tool_results(watch.events, "patch")
    assert "model" not in details(patched)["payload"] and "model" not in stored["payload"]
    assert "unknown field `gatewayUrl`" in error_text(elsewhere)


async def test_context_messages_add_the_sessions_recent_lines_to_a_reminder(
    tmp_path: Path,
) -> None:
    """OpenClaw's `contextMessages`: a `systemEvent` reminder made with `contextMessages: N`
    carries the session's N newest messages (the user's and the assistant's text, whitespace
    collapsed, each cut to 220 characters with `...`) as `Recent context:` lines after its
    text; an `agentTurn` job's message is left as it is. The newest messages are this turn's
    too, as OpenClaw keeps them as they come (tests/e2e/test_automations_context.py): its
    user message, and each call's own assistant message, which has no text."""
    watch = Watch()
    reminder = {
        "name": "milk",
        "schedule": {"kind": "at", "at": "2099-01-01T09:00:00Z"},
        "payload": {"kind": "systemEvent", "text": "Buy milk"},
    }
    said = "[[reply:Noted:   milk,\n eggs.]] Remember the milk " + "please " * 40
    async with running_gateway(tmp_path) as gw:
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=watch) as client:
                await client.request(
                    "agent", {"message": said, "idempotencyKey": "talk"}, expect_final=True
                )
                calls = [
                    {"action": "add", "job": reminder, "contextMessages": 4},
                    {"action": "add", "job": reminder, "contextMessages": 1},
                    {"action": "add", "job": JOB, "contextMessages": 3},
                ]
                msg = " ".join(directive("automations", c) for c in calls)
                await client.request(
                    "agent", {"message": msg, "idempotencyKey": "remind"}, expect_final=True
                )
                stored = (await client.request("cron.list", {}))["jobs"]
    both, last, plain = (details(r) for r in tool_results(watch.events, "remind"))
    user = "- User: " + " ".join(said.split())[: 220 - 3].rstrip() + "..."
    assistant = "- Assistant: Noted: milk, eggs."
    now = "- User: " + " ".join(msg.split())[: 220 - 3].rstrip() + "..."
    assert both["payload"]["text"] == f"Buy milk\n\nRecent context:\n{user}\n{assistant}\n{now}"
    assert last["payload"]["text"] == "Buy milk"  # the newest message is its own call
    assert plain["payload"] == JOB["payload"]
    kept = {j["id"]: j["payload"] for j in stored}
    assert kept[both["id"]] == both["payload"] and kept[last["id"]] == last["payload"]
