"""OpenClaw's CLI and terminal UI against a real gateway: the frames they send (recorded
from openclaw@2026.9.6), answered in OpenClaw's shapes and validated against the schemas."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import frame_checker, local_config, running_gateway
from tests.e2e._openclaw import CLI_CONNECT, TUI_CONNECT, OpenClawClient, openclaw_client


def config(**kw: Any) -> Any:
    return local_config(
        gateway__auth={"mode": "none"},
        messages__queue__debounceMs=0,
        models__providers={"local": {"api": "local", "models": [{"id": "echo"}, {"id": "echo-2"}]}},
        **kw,
    )


def key() -> str:
    return str(uuid.uuid4())


async def send_and_finish(client: OpenClawClient, session: str, message: str) -> dict[str, Any]:
    run_id = key()
    ack = await client.call(
        "chat.send",
        {"sessionKey": session, "message": message, "deliver": False, "idempotencyKey": run_id},
    )
    assert ack == {"runId": run_id, "status": "started"}
    final = await client.chat_final(run_id)
    assert final["state"] == "final", final
    return final


async def test_hello_ok_lists_openclaw_capabilities_and_validates(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, CLI_CONNECT) as c:
            caps = c.hello["features"]["capabilities"]
            assert "published-model-catalog" in caps  # `openclaw models list` needs it
            assert {"agents.list", "sessions.describe", "chat.startup", "logs.tail"} <= set(
                c.hello["features"]["methods"]
            )


async def test_openclaw_agent_without_agent_or_session_key_runs_on_the_default_agent(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw:
            # `openclaw agent --message M`: agents.list on a read connection, then `agent`.
            async with openclaw_client(gw, CLI_CONNECT) as c:
                agents = await c.call("agents.list", {})
            assert agents["defaultId"] == "main" and agents["mainKey"] == "main"
            assert [a["id"] for a in agents["agents"]] == ["main"]
            assert agents["agents"][0]["model"] == {"primary": "local/echo"}
            assert agents["agents"][0]["workspace"]
            async with openclaw_client(gw, CLI_CONNECT, scopes=["operator.write"]) as c:
                run_id = key()
                params = {
                    "message": "hello there",
                    "agentId": agents["defaultId"],
                    "deliver": False,
                    "timeout": 600,
                    "idempotencyKey": run_id,
                }
                final = await c.call("agent", params, expect_final=True)
            assert final["status"] == "ok" and final["runId"] == run_id
            assert final["result"]["payloads"][0]["text"] == "You said: hello there"


async def test_the_terminal_uis_startup_calls_answer_in_their_schemas(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            assert await c.call("sessions.subscribe", {}) == {"subscribed": True}
            assert (await c.call("agents.list", {}))["defaultId"] == "main"
            assert await c.call("question.list", {}) == {"questions": []}
            assert await c.call("plugin.approval.list", {}) == []
            assert await c.call("taskSuggestions.list", {}) == {"suggestions": []}
            history = await c.call("chat.history", {"sessionKey": "agent:main:main", "limit": 200})
            assert history["messages"] == [] and history["sessionInfo"]["model"] == "echo"
            commands = await c.call(
                "commands.list", {"agentId": "main", "scope": "text", "includeArgs": False}
            )
            names = {c["name"] for c in commands["commands"]}
            assert {"help", "status", "new", "reset", "stop", "model", "think", "queue"} <= names
            assert all("args" not in c for c in commands["commands"])


async def test_sessions_describe_after_a_turn_feeds_the_footer(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            await send_and_finish(c, "agent:main:main", "hello")
            described = (await c.call("sessions.describe", {"key": "agent:main:main"}))["session"]
            # The footer: `echo | tokens <used>/128k`.
            assert described["key"] == "agent:main:main"
            assert described["model"] == "echo" and described["modelProvider"] == "local"
            assert described["contextTokens"] == 128_000
            assert described["totalTokens"] > 0 and described["status"] == "done"
            listed = await c.call("sessions.list", {"agentId": "main", "limit": 1})
            assert listed["sessions"][0]["model"] == "echo"
            assert listed["defaults"]["modelProvider"] == "local"


async def test_the_terminal_uis_new_creates_a_fresh_session(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            created = await c.call(
                "sessions.create",
                {
                    "key": "tui-5b1e7e80-1853-4aa7-a9f9-c063aaaa0001",
                    "agentId": "main",
                    "parentSessionKey": "agent:main:main",
                    "succeedsParent": True,
                    "emitCommandHooks": True,
                },
            )
            assert (
                created["ok"]
                and created["key"] == "agent:main:tui-5b1e7e80-1853-4aa7-a9f9-c063aaaa0001"
            )
            assert created["entry"]["sessionId"] == created["sessionId"]
            await send_and_finish(c, created["key"], "in the new session")
            listed = await c.call("sessions.list", {})
            assert created["key"] in {s["key"] for s in listed["sessions"]}
            bad = await c.call("sessions.create", {"key": "x", "model": "nope/none"}, ok=False)
            assert bad["code"] == "INVALID_REQUEST" and "sessions.create" in bad["message"]


async def test_a_follow_up_while_a_reply_streams_is_one_line_each_and_steered_text_is_a_new_paragraph(
    tmp_path: Path,
) -> None:
    with trio.fail_after(40):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            first, second = key(), key()
            session = "agent:main:main"
            await c.call(
                "chat.send",
                {
                    "sessionKey": session,
                    "message": "[[delay:40]] one two three four five six seven eight",
                    "deliver": False,
                    "idempotencyKey": first,
                },
            )
            await c.until(
                lambda e, p: e == "chat" and p["runId"] == first and p["state"] == "delta"
            )
            ack = await c.call(
                "chat.send",
                {
                    "sessionKey": session,
                    "message": "and a follow-up",
                    "deliver": False,
                    "idempotencyKey": second,
                },
            )
            assert ack["runId"] == second
            final = await c.chat_final(first)
            text = final["message"]["content"][0]["text"]
            # Both answers, joined with a blank line (as OpenClaw joins a steered turn's text).
            assert "eight\n\nYou said: and a follow-up" in text, text
            await c.chat_final(second)
            history = await c.call("chat.history", {"sessionKey": session, "limit": 200})
            users = [m for m in history["messages"] if m["role"] == "user"]
            assert [m["content"] for m in users] == [
                "[[delay:40]] one two three four five six seven eight",
                "and a follow-up",
            ]
            assert [m["idempotencyKey"] for m in users] == [f"{first}:user", f"{second}:user"]
            assert [m["__openclaw"]["idempotencyKey"] for m in users] == [
                f"{first}:user",
                f"{second}:user",
            ]
            assert users[1]["__openclaw"]["steerTargetRunId"] == first
            replies = [m for m in history["messages"] if m["role"] == "assistant"]
            assert {m["__openclaw"]["runId"] for m in replies} == {first}


# --- slash commands through chat.send --------------------------------------------------------


async def command(c: OpenClawClient, text: str, session: str = "agent:main:cmd") -> str:
    final = await send_and_finish(c, session, text)
    message = final["message"]
    assert message["model"] == "gateway-injected" and message["provider"] == "openclaw"
    return str(message["content"][0]["text"])


async def row(c: OpenClawClient, session: str = "agent:main:cmd") -> dict[str, Any]:
    described: dict[str, Any] = (await c.call("sessions.describe", {"key": session}))["session"]
    return described


async def test_slash_commands_answer_without_the_model_and_change_the_session(
    tmp_path: Path,
) -> None:
    with trio.fail_after(40):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            status = await command(c, "/status")
            for part in (
                "Model: local/echo",
                "Session: agent:main:cmd",
                "Queue: steer",
                "Context:",
            ):
                assert part in status, status
            assert "/new" in await command(c, "/help")
            assert "/queue" in await command(c, "/commands")
            assert "not supported" in await command(c, "/think high")
            assert (await row(c))["thinkingLevel"] == "off"
            assert "set to off" in await command(c, "/think off")
            assert "enabled" in await command(c, "/verbose on")
            assert (await row(c))["verboseLevel"] == "on"
            assert "disabled" in await command(c, "/v")  # toggles, by its alias
            assert "set to full" in await command(c, "/verbose everything")  # a synonym
            assert "Usage" in await command(c, "/verbose loudly")
            assert "disabled" in await command(c, "/verbose no")
            assert "followup" in await command(c, "/queue followup debounce:2s cap:5")
            described = await row(c)
            assert described["queueMode"] == "followup" and described["queueDebounceMs"] == 2000
            assert described["queueCap"] == 5 and described["effectiveQueueMode"] == "followup"
            assert "Unknown queue option" in await command(c, "/queue sideways")
            assert "local/echo-2" in await command(c, "/model local/echo-2")
            assert (await row(c))["model"] == "echo-2"
            assert "Unknown model" in await command(c, "/model nope/none")
            assert "default" in await command(c, "/model local/echo")
            assert (await row(c))["model"] == "echo"
            assert "local/echo-2" in await command(c, "/models")
            assert "stream" in await command(c, "/reasoning live")  # as OpenClaw reads it
            assert (await row(c))["reasoningLevel"] == "stream"
            assert "Usage" in await command(c, "/reasoning maybe")
            assert "demo" in await command(c, "/name demo")
            assert (await row(c))["label"] == "demo"
            assert "compact" in (await command(c, "/compact")).lower()
            history = await c.call("chat.history", {"sessionKey": "agent:main:cmd", "limit": 200})
            lines = [m for m in history["messages"] if m["role"] == "user"]
            assert lines[0]["content"] == "/status" and lines[0]["idempotencyKey"].endswith(":user")


async def test_new_and_reset_start_the_session_afresh_and_run_as_agent_does(
    tmp_path: Path,
) -> None:
    with trio.fail_after(40):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            session = "agent:main:fresh"
            await send_and_finish(c, session, "before")
            before = (await row(c, session))["sessionId"]
            final = await send_and_finish(c, session, "/new tell me more")
            assert final["message"]["content"][0]["text"] == "You said: tell me more"
            after = (await row(c, session))["sessionId"]
            assert after != before
            history = await c.call("chat.history", {"sessionKey": session})
            assert [m["content"] for m in history["messages"] if m["role"] == "user"] == [
                "tell me more"
            ]
            await send_and_finish(c, session, "/reset")  # greets (a run of the model)
            assert (await row(c, session))["sessionId"] != after


async def test_stop_aborts_and_an_unknown_slash_word_goes_to_the_model(tmp_path: Path) -> None:
    with trio.fail_after(40):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            final = await send_and_finish(c, "agent:main:x", "/foo bar")
            assert final["message"]["content"][0]["text"] == "You said: /foo bar"
            run_id = key()
            await c.call(
                "chat.send",
                {"sessionKey": "agent:main:x", "message": "[[stall]]", "idempotencyKey": run_id},
            )
            await c.until(lambda e, p: e == "agent" and p["runId"] == run_id)
            stopped = await c.call(
                "chat.send",
                {"sessionKey": "agent:main:x", "message": "/stop", "idempotencyKey": key()},
            )
            assert stopped["aborted"] is True and stopped["runIds"] == [run_id]
            assert (await c.chat_final(run_id))["state"] == "aborted"


async def test_a_repeated_command_key_runs_it_once(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            params = {
                "sessionKey": "agent:main:k",
                "message": "/name once",
                "idempotencyKey": "same",
            }
            assert (await c.call("chat.send", params))["status"] == "started"
            assert (await c.call("chat.send", params))["status"] == "ok"
            history = await c.call("chat.history", {"sessionKey": "agent:main:k"})
            assert len(history["messages"]) == 2


# --- status, health, logs ----------------------------------------------------------------------


async def test_status_and_health_have_openclaws_shapes_and_clawlanes_block(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            await send_and_finish(c, "agent:main:main", "hello")
            health = await c.call("health", None)  # validated as the snapshot's health shape
            assert health["ok"] is True and health["defaultAgentId"] == "main"
            (agent,) = health["agents"]
            assert agent["agentId"] == "main" and agent["isDefault"] is True
            assert agent["sessions"]["count"] == 1
            assert agent["heartbeat"]["every"] == "30m"  # the sole agent: OpenClaw's default
            assert agent["sessions"]["recent"][0]["key"] == "agent:main:main"
            assert health["sessions"]["count"] == 1 and "eventLoop" in health
            assert health["clawlane"]["generation"] == 1
            # the snapshot's health itself stays closed
            frame_checker().validate("Snapshot", {**c.hello["snapshot"]})
            status = await c.call(
                "status", {"includeChannelSummary": False, "includeCliProjection": True}
            )
            assert status["runtimeVersion"]
            (by_agent,) = status["sessions"]["byAgent"]
            assert by_agent["agentId"] == "main" and by_agent["count"] == 1
            assert status["sessions"]["defaults"]["model"] == "local/echo"
            assert status["heartbeat"]["agents"][0]["agentId"] == "main"
            assert status["cliProjection"]["agents"]["defaultId"] == "main"
            assert isinstance(status["pid"], int) and status["processMemory"]["rssBytes"] > 0
            ours = status["clawlane"]
            assert (
                ours["lanes"]["main"]["capacity"] == 8 and ours["process"]["pid"] == status["pid"]
            )
            assert ours["generation"]["number"] == 1


async def test_logs_tail_follows_the_ring_with_a_cursor(tmp_path: Path) -> None:
    import logging

    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, CLI_CONNECT) as c:
            first = await c.call("logs.tail", {"limit": 5, "maxBytes": 250_000})
            logging.getLogger("clawlane.test").warning("a line for logs.tail %s", "one")
            after = await c.call("logs.tail", {"cursor": first["cursor"], "maxBytes": 250_000})
            assert any("a line for logs.tail one" in line for line in after["lines"])
            assert after["cursor"] > first["cursor"] and not after["reset"]
            again = await c.call("logs.tail", {"cursor": after["cursor"]})
            assert again["lines"] == []
            bad = await c.call("logs.tail", {"limit": 0}, ok=False)
            assert bad["code"] == "INVALID_REQUEST" and "limit" in bad["message"]


async def test_logs_tail_reads_the_configured_log_file(tmp_path: Path) -> None:
    import json
    import logging

    log_file = tmp_path / "logs" / "gateway.log"
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config(logging={"file": str(log_file)})) as gw:
            async with openclaw_client(gw, CLI_CONNECT) as c:
                logging.getLogger("clawlane.test").warning("to the file")
                tail = await c.call("logs.tail", {"limit": 50})
            assert tail["file"] == str(log_file)
            record = json.loads(tail["lines"][-1])
            assert record["message"] == "to the file" and record["_meta"]["logLevelName"] == "WARN"
            assert record["subsystem"] == "test"


@pytest.mark.parametrize("scopes", [["operator.read"]])
async def test_a_reader_cannot_send_a_slash_command(tmp_path: Path, scopes: list[str]) -> None:
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            openclaw_client(gw, CLI_CONNECT, scopes=scopes) as c,
        ):
            denied = await c.call(
                "chat.send",
                {"sessionKey": "main", "message": "/name x", "idempotencyKey": key()},
                ok=False,
            )
            assert denied["code"] == "FORBIDDEN"


async def test_chat_history_keeps_to_the_clients_max_bytes(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            for i in range(3):
                await send_and_finish(c, "agent:main:big", f"{i} " + "x" * 900)
            full = await c.call("chat.history", {"sessionKey": "agent:main:big"})
            small = await c.call("chat.history", {"sessionKey": "agent:main:big", "maxBytes": 2048})
            assert len(full["messages"]) == 6 and not full["hasMore"]
            assert 0 < len(small["messages"]) < 6 and small["hasMore"]
            assert small["messages"][-1] == full["messages"][-1]  # the newest ones
            bad = await c.call("chat.history", {"sessionKey": "main", "maxBytes": 10}, ok=False)
            assert bad["code"] == "INVALID_REQUEST" and "maxBytes" in bad["message"]


async def test_sessions_changed_carries_the_session_as_describe_shows_it(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, TUI_CONNECT) as c:
            await c.call("sessions.subscribe", {})
            await c.call("sessions.messages.subscribe", {"key": "agent:main:main"})
            await send_and_finish(c, "agent:main:main", "hello")
            sent = await c.until(lambda e, p: e == "sessions.changed" and p.get("reason") == "send")
            assert sent["agentId"] == "main" and sent["session"]["key"] == "agent:main:main"
            assert sent["session"]["model"] == "echo"
            row = await c.until(lambda e, p: e == "session.message")
            assert row["agentId"] == "main" and row["message"]["idempotencyKey"].endswith(":user")


def _skill(folder: Path, name: str, front: str = "") -> None:
    folder.mkdir(parents=True)
    text = f"---\nname: {name}\ndescription: The {name} skill.\n{front}---\nBody.\n"
    (folder / "SKILL.md").write_text(text)


async def test_skills_status_lists_what_a_run_would_see_and_what_each_skill_misses(
    tmp_path: Path,
) -> None:
    """`openclaw skills list/info/check`: the workspace's skills, then a resource root's
    (first name wins); one whose executable is not on PATH is not eligible and says so."""
    workspace, extra = tmp_path / "ws", tmp_path / "extra"
    _skill(workspace / "skills" / "weather", "weather")
    needs = 'metadata: {"openclaw": {"requires": {"bins": ["no-such-binary-x9"]}}}\n'
    _skill(workspace / "skills" / "gh", "github", needs)
    _skill(extra / "skills" / "notes", "notes")
    _skill(extra / "skills" / "weather2", "weather")  # the workspace's wins
    cfg = config(
        agents__defaults__workspace=str(workspace), agents__defaults__resources=[str(extra)]
    )
    with trio.fail_after(30):
        async with running_gateway(tmp_path, cfg) as gw, openclaw_client(gw, CLI_CONNECT) as c:
            report = await c.call("skills.status", {"agentId": "main"})
            by_session = await c.call("skills.status", {"sessionKey": "agent:main:x"})
            with pytest.raises(Exception, match="INVALID_REQUEST"):
                await c.call("skills.status", {"agentId": "nobody"})
    assert report == by_session
    assert report["agentId"] == "main" and report["workspaceDir"] == str(workspace)
    skills = {s["name"]: s for s in report["skills"]}
    assert sorted(skills) == ["github", "notes", "weather"]
    assert skills["weather"]["filePath"] == str(workspace / "skills" / "weather" / "SKILL.md")
    assert skills["weather"]["source"] == "openclaw-workspace"
    assert skills["notes"]["source"] == "openclaw-extra"
    assert skills["weather"]["eligible"] and skills["weather"]["modelVisible"]
    gh = skills["github"]
    assert not gh["eligible"] and not gh["modelVisible"]
    assert gh["requirements"]["bins"] == gh["missing"]["bins"] == ["no-such-binary-x9"]


async def test_the_inventories_of_what_clawlane_does_not_have_answer_empty(
    tmp_path: Path,
) -> None:
    """`openclaw channels status`, `nodes status`, `hooks list` and the usage panel: none here, in
    OpenClaw's shapes (the result schemas check them), rather than an unknown method."""
    with trio.fail_after(30):
        async with running_gateway(tmp_path, config()) as gw, openclaw_client(gw, CLI_CONNECT) as c:
            channels = await c.call("channels.status", {"probe": False, "timeoutMs": 10_000})
            nodes = await c.call("node.list", {})
            usage = await c.call("usage.status", {})
            hooks = await c.call("hooks.status", {"agentId": "main"})
            with pytest.raises(Exception, match="INVALID_REQUEST"):
                await c.call("node.list", {"x": 1})
    assert channels["channelOrder"] == [] and channels["channels"] == {}
    assert nodes["nodes"] == [] and nodes["ts"] > 0
    assert usage["providers"] == []
    assert hooks["hooks"] == [] and hooks["workspaceDir"]


async def test_a_line_another_client_sent_reaches_the_terminal_ui(tmp_path: Path) -> None:
    """OpenClaw 2026.9 sends `session.message` to the session-list subscribers too: the
    terminal UI, which only calls `sessions.subscribe`, shows the line `openclaw agent`
    sent to its session. A connection that also watches the session gets each once."""
    with trio.fail_after(30):
        async with (
            running_gateway(tmp_path, config()) as gw,
            openclaw_client(gw, TUI_CONNECT) as tui,
            openclaw_client(gw, TUI_CONNECT) as both,
        ):
            await tui.call("sessions.subscribe", {})
            await both.call("sessions.subscribe", {})
            await both.call("sessions.messages.subscribe", {"key": "agent:main:main"})
            async with openclaw_client(gw, CLI_CONNECT, scopes=["operator.write"]) as cli:
                params = {"sessionKey": "main", "message": "from the cli", "idempotencyKey": key()}
                await cli.call("agent", params, expect_final=True)

            def messages(c: OpenClawClient) -> list[dict[str, Any]]:
                return [p["message"] for e, p in c.events if e == "session.message"]

            await tui.until(
                lambda e, p: e == "session.message" and p["message"]["role"] == "assistant"
            )
            await both.until(
                lambda e, p: e == "session.message" and p["message"]["role"] == "assistant"
            )
    user = messages(tui)[0]
    assert user["role"] == "user" and user["__openclaw"]["id"]
    assert "from the cli" in json.dumps(user["content"])
    assert [m["role"] for m in messages(tui)] == ["user", "assistant"]
    assert [m["role"] for m in messages(both)] == ["user", "assistant"]  # once each
