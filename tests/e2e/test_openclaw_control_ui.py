"""OpenClaw's web Control UI against a real gateway: the calls it makes when it opens a
chat, sends a message and reloads (recorded from openclaw@2026.9.6), answered in their
schemas' shapes (validated by the shared frame checker) with clawlane's real data."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.users import PREFS_RELATIVE_PATH
from tests.conftest import local_config, running_gateway
from tests.e2e._openclaw import (
    CONTROL_UI_CONNECT,
    TUI_CONNECT,
    UI_ORIGIN,
    OpenClawClient,
    openclaw_client,
)
from transports.server._startup import explain_failure

MAIN = "agent:main:main"

#: The Control UI's calls on opening a chat, in its order, with its params (cron.* aside).
STARTUP: list[tuple[str, Any]] = [
    ("sessions.subscribe", {}),
    (
        "sessions.list",
        {
            "includeGlobal": True,
            "includeUnknown": True,
            "configuredAgentsOnly": True,
            "limit": 200,
            "includeDerivedTitles": True,
            "includeLastMessage": True,
            "ownerFirst": True,
            "agentId": "main",
        },
    ),
    ("config.get", {}),
    ("update.status", {}),
    ("plugins.controlUi.list", {}),
    ("agents.list", {}),
    ("exec.approval.list", {}),
    ("plugin.approval.list", {}),
    ("openclaw.approval.list", {}),
    ("sessions.observer.visibility", {"visible": True}),
    ("question.list", {}),
    ("agent.identity.get", {"agentId": "main"}),
    ("models.authStatus", {"agentId": "main"}),
    (
        "users.prefs.get",
        {"keys": ["ui.theme", "ui.themeMode", "ui.accent", "ui.fontUi", "ui.fontChat"]},
    ),
    ("controlUi.sessionPullRequests.subscribe", {"sessionKeys": []}),
    ("sessions.groups.list", {}),
    ("sessions.groups.defaults", {}),
    ("board.get", {"sessionKey": MAIN, "agentId": "main"}),
    ("projects.list", {}),
    ("chat.startup", {"sessionKey": MAIN, "limit": 80, "maxBytes": 262144}),
    ("sessions.viewers.set", {"sessionKeys": [MAIN]}),
    ("sessions.github.options", {"sessionKey": MAIN, "agentId": "main"}),
    ("talk.catalog", {}),
    ("session.members.listEvidence", {"sessionKey": MAIN, "agentId": "main"}),
    ("sessions.messages.subscribe", {"key": MAIN}),
    ("mentions.list", {}),
    ("progressCard.get", {"sessionKey": MAIN}),
    (
        "sessions.catalog.list",
        {
            "agentId": "main",
            "limitPerHost": 40,
            "progressId": str(uuid.uuid4()),
            "allowPartialResults": True,
        },
    ),
    ("taskSuggestions.list", {"agentId": "main"}),
    ("system.info", {}),
    ("sessions.branches.list", {"sessionKey": MAIN}),
    ("session.discussion.info", {"sessionKey": MAIN, "agentId": "main"}),
    ("sessions.companion.state", {"sessionKey": MAIN, "agentId": "main"}),
    (
        "tasks.list",
        {"sessionKey": MAIN, "agentId": "main", "status": ["queued", "running"], "limit": 200},
    ),
    ("sessions.describe", {"key": MAIN}),
    ("models.list", {"view": "configured", "sessionKey": MAIN, "agentId": "main"}),
    ("chat.metadata", {"agentId": "main", "sessionKey": MAIN}),
]


def config() -> Any:
    return local_config(
        gateway__auth={"mode": "none"},
        gateway__controlUi={"allowedOrigins": [UI_ORIGIN]},
        messages__queue__debounceMs=0,
        models__providers={"local": {"api": "local", "models": [{"id": "echo", "name": "Echo"}]}},
    )


async def open_chat(c: OpenClawClient) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for method, params in STARTUP:
        answers[method] = await c.call(method, params)
    return answers


async def test_every_startup_call_of_the_control_ui_answers_in_its_shape(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            openclaw_client(gw, CONTROL_UI_CONNECT) as c,
        ):
            answers = await open_chat(c)
            assert answers["agents.list"]["defaultId"] == "main"
            assert answers["agent.identity.get"]["agentId"] == "main"
            assert answers["exec.approval.list"] == [] and answers["question.list"] == {
                "questions": []
            }
            startup = answers["chat.startup"]
            assert startup["sessionKey"] == MAIN and startup["messages"] == []
            assert startup["sessionInfo"]["key"] == MAIN and startup["pendingInputs"]["total"] == 0
            # The model picker: the generation's models, in chat.metadata and models.list.
            assert [m["id"] for m in answers["chat.metadata"]["models"]] == ["echo"]
            assert [m["name"] for m in answers["models.list"]["models"]] == ["Echo"]
            assert answers["models.list"]["models"][0]["tags"] == ["default"]
            assert answers["models.authStatus"]["providers"][0]["provider"] == "local"
            info = answers["system.info"]
            assert info["pid"] > 0 and info["cpuCount"] >= 1 and info["port"] > 0
            assert answers["sessions.viewers.set"] == {"sessionKeys": [MAIN]}


async def test_a_sent_message_is_matched_on_reload_by_its_idempotency_key(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw:
            run_id = str(uuid.uuid4())
            async with openclaw_client(gw, CONTROL_UI_CONNECT) as c:
                await open_chat(c)
                sessions_id = (await c.call("sessions.describe", {"key": MAIN}))["session"][
                    "sessionId"
                ]
                ack = await c.call(
                    "chat.send",
                    {
                        "sessionKey": MAIN,
                        "sessionId": sessions_id,
                        "message": "hello from the browser",
                        "deliver": False,
                        "idempotencyKey": run_id,
                    },
                )
                assert ack == {"runId": run_id, "status": "started"}
                final = await c.chat_final(run_id)
                assert final["message"]["content"][0]["text"] == "You said: hello from the browser"
                # The UI watches the session: both rows arrive as session.message.
                rows = await c.until(
                    lambda e, p: e == "session.message" and p["message"]["role"] == "assistant"
                )
                assert rows["message"]["__openclaw"]["runId"] == run_id
            # The reload: a new connection, chat.startup again.
            async with openclaw_client(gw, CONTROL_UI_CONNECT) as c:
                startup = await c.call(
                    "chat.startup", {"sessionKey": MAIN, "limit": 80, "maxBytes": 262144}
                )
                user, reply = startup["messages"]
                assert user["content"] == "hello from the browser"
                assert (
                    user["idempotencyKey"]
                    == user["__openclaw"]["idempotencyKey"]
                    == f"{run_id}:user"
                )
                assert reply["__openclaw"]["runId"] == run_id
                assert startup["sessionInfo"]["hasActiveRun"] is False
                branches = await c.call("sessions.branches.list", {"sessionKey": MAIN})
                (branch,) = branches["branches"]
                assert (
                    branch["messageCount"] == 2
                    and branch["leafEntryId"] == reply["__openclaw"]["id"]
                )


async def test_the_control_ui_sees_presence_and_its_preferences_round_trip(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            openclaw_client(gw, TUI_CONNECT) as tui,
            openclaw_client(gw, CONTROL_UI_CONNECT) as ui,
        ):
            assert ui.hello["snapshot"]["presence"][0]["mode"] == "gateway"
            me = CONTROL_UI_CONNECT["client"]["instanceId"]
            await ui.until(
                lambda e, p: (
                    e == "presence" and any(x.get("instanceId") == me for x in p["presence"])
                )
            )
            joined = await tui.until(
                lambda e, p: (
                    e == "presence" and any(x.get("mode") == "webchat" for x in p["presence"])
                )
            )
            assert joined["presence"][0]["reason"] == "self"
            assert await ui.call("users.prefs.set", {"entries": {"ui.theme": "dark"}}) == {
                "status": "ok"
            }
            got = await ui.call("users.prefs.get", {"keys": ["ui.theme", "ui.accent"]})
            assert got == {"status": "ok", "entries": {"ui.theme": "dark"}}
            stale = await ui.call(
                "users.prefs.set",
                {"entries": {"ui.theme": "light"}, "expectedEntries": {"ui.theme": "blue"}},
            )
            assert stale == {"status": "conflict"}
            bad = await ui.call("users.prefs.get", {"keys": ["x" * 300]}, ok=False)
            assert bad["code"] == "INVALID_REQUEST"


async def test_viewers_set_moves_the_session_message_stream(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            openclaw_client(gw, CONTROL_UI_CONNECT) as ui,
        ):
            await ui.call("sessions.viewers.set", {"sessionKeys": ["agent:main:a"]})
            await ui.call("sessions.viewers.set", {"sessionKeys": ["agent:main:b"]})
            async with openclaw_client(gw, TUI_CONNECT) as tui:
                for session in ("agent:main:a", "agent:main:b"):
                    run_id = str(uuid.uuid4())
                    await tui.call(
                        "chat.send",
                        {"sessionKey": session, "message": "hi", "idempotencyKey": run_id},
                    )
                    await tui.chat_final(run_id)
            await ui.until(
                lambda e, p: e == "session.message" and p["sessionKey"] == "agent:main:b"
            )
            assert not [
                p
                for e, p in ui.events
                if e == "session.message" and p["sessionKey"] == "agent:main:a"
            ]
            too_many = await ui.call(
                "sessions.viewers.set", {"sessionKeys": [f"k{i}" for i in range(65)]}, ok=False
            )
            assert too_many["code"] == "INVALID_REQUEST"


async def test_preferences_survive_a_restart_and_an_unreadable_file_is_named(
    tmp_path: Path,
) -> None:
    """`users.prefs.set` is acknowledged once the state dir's file holds it: the next
    gateway on that state dir reads it back (they used to live in memory only)."""
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            openclaw_client(gw, CONTROL_UI_CONNECT) as ui,
        ):
            entries = {"ui.theme": "dark", "ui.accent": "#336699"}
            assert await ui.call("users.prefs.set", {"entries": entries}) == {"status": "ok"}
            assert await ui.call("users.prefs.set", {"entries": {"ui.accent": None}}) == {
                "status": "ok"
            }
        async with (
            running_gateway(tmp_path, config()) as gw,
            openclaw_client(gw, CONTROL_UI_CONNECT) as ui,
        ):
            got = await ui.call("users.prefs.get", {})
            assert got == {"status": "ok", "entries": {"ui.theme": "dark"}}
    prefs = tmp_path / "state" / PREFS_RELATIVE_PATH
    prefs.write_text("{not json")
    with pytest.raises(BaseException) as refused:
        async with running_gateway(tmp_path, config()):
            pass
    explained = explain_failure(refused.value, host="127.0.0.1", port=0)
    assert explained is not None and str(prefs) in str(explained)


async def test_the_debug_and_skills_pages_calls_answer(tmp_path: Path) -> None:
    """The Debug page waits for all of `status`, `health` and `last-heartbeat` (a request
    left unanswered kept it "Refreshing..."), and lists `diagnostics.lanes`: the global
    lanes, a run holding main's slot while it streams. The Skills page's ClawHub search and
    skill library have nothing here."""
    cfg = local_config(
        gateway__auth={"mode": "none"},
        gateway__controlUi={"allowedOrigins": [UI_ORIGIN]},
        agents__defaults__maxConcurrent=3,
        models__providers={"local": {"api": "local", "models": [{"id": "echo"}]}},
    )
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, cfg) as gw,
            openclaw_client(gw, CONTROL_UI_CONNECT) as c,
        ):
            assert await c.call("last-heartbeat", {}) is None
            idle = await c.call("diagnostics.lanes", {})
            run_id = str(uuid.uuid4())
            params = {
                "sessionKey": MAIN,
                "message": "[[deltas:20]] [[delay:200]] hi",
                "idempotencyKey": run_id,
            }
            await c.call("chat.send", params)
            await c.until(
                lambda e, p: e == "chat" and p.get("runId") == run_id and p.get("state") == "delta"
            )
            busy = await c.call("diagnostics.lanes", {})
            assert await c.call("skills.search", {"query": "weather", "limit": 20}) == {
                "results": []
            }
            library = await c.call("skills.library.list", {})
            await c.call("chat.abort", {"sessionKey": MAIN, "runId": run_id})
    lanes = {lane["lane"]: lane for lane in idle["lanes"]}
    assert set(lanes) == {"main", "subagent", "cron", "nested"}
    assert lanes["main"]["maxConcurrent"] == 3 and lanes["main"]["activeCount"] == 0
    main = next(lane for lane in busy["lanes"] if lane["lane"] == "main")
    assert main["activeCount"] == 1 and main["queuedCount"] == 0
    assert library["entries"] == []


PLUGIN = """
from runtime.plugin_sdk import PluginApi


class Weather:
    name = "weather"
    description = "The weather in a city."


def register(api: PluginApi) -> None:
    api.on("before_prompt_build", lambda event, ctx: None)
    api.register_tool(Weather())
"""


async def test_the_plugins_and_systems_pages_list_what_this_gateway_has(tmp_path: Path) -> None:
    """`plugins.list`: the plugins the config loaded (none can be installed from the UI);
    `environments.list`: this gateway's host; approvals and channel pairing: none."""
    plugin = tmp_path / "ui_plugin.py"
    plugin.write_text(PLUGIN)
    cfg = local_config(
        gateway__auth={"mode": "none"},
        gateway__controlUi={"allowedOrigins": [UI_ORIGIN]},
        plugins__load=[str(plugin)],
    )
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path / "gw", cfg) as gw,
            openclaw_client(gw, CONTROL_UI_CONNECT) as c,
        ):
            plugins = await c.call("plugins.list", {})
            environments = await c.call("environments.list", {})
            history = await c.call("approval.history", {"limit": 50})
            pairing = await c.call("channels.pairing.list", {})
            grants = await c.call("exec.approval.grants.list", {"limit": 100})
            catalog = await c.call("plugins.catalog.browse", {"intent": "featured"})
            search = await c.call("webSearch.status", {"agentId": "main"})
            tools = await c.call("tools.catalog", {"agentId": "main", "includePlugins": True})
            core_only = await c.call("tools.catalog", {"includePlugins": False})
            unknown = await c.call("webSearch.status", {"agentId": "nobody"}, ok=False)
    [one] = plugins["plugins"]
    assert one["id"] == "ui_plugin" and one["state"] == "enabled" and one["origin"] == "config"
    assert plugins["mutationAllowed"] is False
    [host] = environments["environments"]
    assert host["id"] == "gateway" and host["status"] == "available" and host["sessionHost"]
    assert history == {"items": []} and pairing["requests"] == [] and pairing["accounts"] == []
    assert grants == {"grants": []} and catalog == {"items": []}
    assert search["enabled"] is False and search["providers"] == [] and search["agentId"] == "main"
    assert unknown["code"] == "INVALID_REQUEST"
    groups = {g["id"]: g for g in tools["groups"]}
    fs = ["ls", "read", "write", "edit", "apply_patch"]
    assert [t["id"] for t in groups["fs"]["tools"]] == fs
    assert not any("tags" in t for t in groups["fs"]["tools"])
    exec_tool = groups["runtime"]["tools"][0]
    assert exec_tool["id"] == "exec" and exec_tool["defaultProfiles"] == ["coding", "full"]
    assert "tags" not in exec_tool
    [message] = groups["messaging"]["tools"]
    assert message["defaultProfiles"] == ["messaging", "full"]
    web = {t["id"]: t for t in groups["web"]["tools"]}
    assert "tags" not in web["web_fetch"] and "tags" not in web["web_search"]
    assert not any("tags" in t for t in groups["memory"]["tools"])
    assert web["x_search"]["tags"] == ["unavailable"]
    ours_now = {t["id"]: t for t in groups["sessions"]["tools"]}
    assert "tags" not in ours_now["sessions_send"] and "tags" not in ours_now["sessions_spawn"]
    assert "tags" not in ours_now["subagents"] and "tags" not in ours_now["agents_wait"]
    assert ours_now["sessions_search"]["tags"] == ["unavailable"]
    assert "not available in clawlane" in web["x_search"]["description"]
    [weather] = groups["plugin:ui_plugin"]["tools"]
    assert weather["source"] == "plugin" and weather["defaultProfiles"] == ["full"]
    sections = ["fs", "runtime", "web", "memory", "sessions", "ui", "messaging", "automation"]
    assert [g["id"] for g in core_only["groups"]] == [*sections, "nodes", "agents", "media"]
    assert sum(len(g["tools"]) for g in core_only["groups"]) == 61
    assert [p["id"] for p in tools["profiles"]] == ["minimal", "coding", "messaging", "full"]


async def test_the_agents_tools_panel_shows_what_a_run_in_the_session_is_offered(
    tmp_path: Path,
) -> None:
    """`tools.effective`: the tools the agent's policy lets through, built-ins then the
    plugins' (validated as `ToolsEffectiveResult`); a session must exist."""
    plugin = tmp_path / "ui_plugin.py"
    plugin.write_text(PLUGIN)
    coder = {"id": "coder", "tools": {"profile": "coding", "deny": ["exec"]}}
    cfg = local_config(
        gateway__auth={"mode": "none"},
        gateway__controlUi={"allowedOrigins": [UI_ORIGIN]},
        plugins__load=[str(plugin)],
        agents__list=[{"id": "main", "default": True}, coder],
    )
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path / "gw", cfg) as gw,
            openclaw_client(gw, CONTROL_UI_CONNECT) as c,
        ):
            for key in (MAIN, "agent:coder:work"):
                params = {"sessionKey": key, "message": "hi", "idempotencyKey": f"t-{key}"}
                await c.call("chat.send", params)
                await c.call("agent.wait", {"runId": f"t-{key}", "timeoutMs": 10_000})
            full = await c.call("tools.effective", {"sessionKey": MAIN})
            coding = await c.call("tools.effective", {"sessionKey": "agent:coder:work"})
            unknown = await c.call("tools.effective", {"sessionKey": "agent:main:nope"}, ok=False)
            other = {"sessionKey": MAIN, "agentId": "coder"}
            mismatch = await c.call("tools.effective", other, ok=False)
    assert full["agentId"] == "main" and full["profile"] == "full"
    core, connected = full["groups"]
    assert core["id"] == "core" and core["label"] == "Built-in tools"
    ours = ["ls", "read", "write", "edit", "apply_patch", "exec", "process", "message"]
    web_memory = ["web_search", "web_fetch", "memory_search", "memory_get"]
    sessions = ["sessions_list", "sessions_history", "sessions_send", "sessions_spawn"]
    sessions += ["agents_wait", "sessions_yield", "subagents", "session_status", "agents_list"]
    operator = ["progress_card", "ask_user", "gateway"]
    offered = [*ours, *web_memory[:2], *operator, *web_memory[2:], *sessions, "automations"]
    assert [t["id"] for t in core["tools"]] == offered
    [notice] = full["notices"]
    assert notice["severity"] == "info" and "sessions_search" in notice["message"]
    assert "sessions_spawn" not in notice["message"]
    assert core["tools"][1]["label"] == "Read" and core["tools"][1]["rawDescription"]
    [weather] = connected["tools"]
    assert connected["label"] == "Connected tools" and weather["pluginId"] == "ui_plugin"
    assert weather["description"] == "The weather in a city." and weather["source"] == "plugin"
    assert coding["agentId"] == "coder" and coding["profile"] == "coding"
    [only] = coding["groups"]
    # OpenClaw's coding profile: files, runtime, web and memory, not `message`; exec denied.
    coding_tools = ["ls", "read", "write", "edit", "apply_patch", "process", *web_memory[:2]]
    coding_tools += [*operator, *web_memory[2:]]
    coding_tools += [*sessions[:8], "automations"]  # the session tools but agents_list
    assert [t["id"] for t in only["tools"]] == coding_tools
    assert unknown["code"] == "INVALID_REQUEST" and "unknown session key" in unknown["message"]
    assert mismatch["code"] == "INVALID_REQUEST" and "does not match" in mismatch["message"]
