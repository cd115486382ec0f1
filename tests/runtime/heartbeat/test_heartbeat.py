"""runtime.heartbeat: the config blocks, the settings resolved per agent, active hours,
OpenClaw's `HEARTBEAT_OK` rules, the effectively-empty scratch, the prompt, the verdict on a
reply, the event payload, and the system-event queue. Pure."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from runtime.heartbeat import (
    HEARTBEAT_PROMPT,
    SystemEventQueue,
    build_prompt,
    classify_reply,
    drop_heartbeat_turns,
    heartbeat_agents,
    heartbeat_event,
    heartbeat_summary,
    hidden_in_history,
    holds_heartbeat_turns,
    in_active_hours,
    is_effectively_empty,
    is_heartbeat_prompt,
    resolve_heartbeat,
    strip_heartbeat_token,
)
from runtime.heartbeat._events import MAX_EVENTS_PER_SESSION
from runtime.llm import (
    AssistantMessage,
    TextContent,
    ToolCallContent,
    ToolResultMessage,
    UserMessage,
)
from runtime.model import parse_duration_ms
from runtime.model._config import ConfigError, parse_config
from runtime.model._generation import build_generation


def _gen(raw: dict[str, Any]) -> Any:
    return build_generation(parse_config(raw), 1)


def _utc_ms(hour: int, minute: int = 0) -> int:
    return int(dt.datetime(2026, 12, 7, hour, minute, tzinfo=dt.UTC).timestamp() * 1000)


# --- config -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"),
    [("30m", 1_800_000), ("1h", 3_600_000), ("90s", 90_000), ("500ms", 500), ("2", 120_000)],
)
def test_durations_default_to_minutes(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


def test_every_key_of_openclaws_heartbeat_block_loads_and_bad_values_name_their_path() -> None:
    block = {
        "every": "1h",
        "activeHours": {"start": "09:00", "end": "24:00", "timezone": "Europe/Vienna"},
        "model": "local/echo",
        "session": "main",
        "target": "none",
        "directPolicy": "block",
        "to": "123",
        "accountId": "ops",
        "prompt": "Check.",
        "timeoutSeconds": 45,
        "lightContext": True,
        "isolatedSession": False,
        "ackMaxChars": 20,
        "includeReasoning": False,
        "includeSystemPromptSection": False,
        "skipWhenBusy": True,
        "suppressToolErrorWarnings": False,
    }
    config = parse_config(
        {
            "agents": {
                "defaults": {"heartbeat": block, "userTimezone": "UTC"},
                "list": [{"id": "ops", "heartbeat": {"every": "2h"}}],
            }
        }
    )
    assert config.agents.defaults.heartbeat is not None
    with pytest.raises(ConfigError, match=r"agents\.defaults\.heartbeat.*every"):
        parse_config({"agents": {"defaults": {"heartbeat": {"every": "soon"}}}})
    with pytest.raises(ConfigError, match="start cannot be 24:00"):
        parse_config({"agents": {"defaults": {"heartbeat": {"activeHours": {"start": "24:00"}}}}})
    with pytest.raises(ConfigError, match="unknown key"):
        parse_config({"agents": {"defaults": {"heartbeat": {"evry": "1h"}}}})


# --- settings ---------------------------------------------------------------------------------


def test_defaults_are_openclaws() -> None:
    settings = resolve_heartbeat(_gen({}), "main")
    assert settings.every_ms == 30 * 60_000
    assert settings.session_key == "agent:main:main"
    assert settings.prompt is None and settings.ack_max_chars == 300
    assert settings.timeout_s == 600  # the cadence capped at 600 s
    assert settings.target == "owner"


def test_a_per_agent_block_merges_over_the_defaults_and_limits_who_runs() -> None:
    gen = _gen(
        {
            "agents": {
                "defaults": {"heartbeat": {"every": "10m", "prompt": "P"}, "timeoutSeconds": 99},
                "list": [
                    {"id": "main", "default": True},
                    {"id": "ops", "heartbeat": {"every": "1h", "session": "ops-room"}},
                ],
            }
        }
    )
    assert heartbeat_agents(gen.config, sorted(gen.agents)) == ["ops"]
    ops = resolve_heartbeat(gen, "ops")
    assert (ops.every_ms, ops.prompt, ops.session_key) == (3_600_000, "P", "agent:ops:ops-room")
    assert ops.timeout_s == 99  # agents.defaults.timeoutSeconds
    assert heartbeat_agents(_gen({}).config, ["main"]) == ["main"]  # no block: the sole agent


def test_active_hours() -> None:
    settings = resolve_heartbeat(
        _gen(
            {
                "agents": {
                    "defaults": {
                        "heartbeat": {
                            "activeHours": {"start": "09:00", "end": "17:00", "timezone": "UTC"}
                        }
                    }
                }
            }
        ),
        "main",
    )
    assert in_active_hours(settings, _utc_ms(9))
    assert not in_active_hours(settings, _utc_ms(17))
    assert not in_active_hours(settings, _utc_ms(8, 59))
    hours = {"start": "09:00", "end": "17:00", "timezone": "x" * 5000}  # too long a file name
    unknown = resolve_heartbeat(
        _gen({"agents": {"defaults": {"heartbeat": {"activeHours": hours}}}}), "main"
    )
    in_active_hours(unknown, _utc_ms(9))  # the host's zone then, not an OSError
    overnight = resolve_heartbeat(
        _gen(
            {
                "agents": {
                    "defaults": {
                        "heartbeat": {
                            "activeHours": {"start": "22:00", "end": "06:00", "timezone": "UTC"}
                        }
                    }
                }
            }
        ),
        "main",
    )
    assert in_active_hours(overnight, _utc_ms(23)) and in_active_hours(overnight, _utc_ms(5))
    assert not in_active_hours(overnight, _utc_ms(12))
    never = resolve_heartbeat(
        _gen(
            {
                "agents": {
                    "defaults": {"heartbeat": {"activeHours": {"start": "08:00", "end": "08:00"}}}
                }
            }
        ),
        "main",
    )
    assert not in_active_hours(never, _utc_ms(8))
    vienna = resolve_heartbeat(
        _gen(
            {
                "agents": {
                    "defaults": {
                        "userTimezone": "Europe/Vienna",
                        "heartbeat": {"activeHours": {"start": "09:00", "end": "24:00"}},
                    }
                }
            }
        ),
        "main",
    )
    assert in_active_hours(vienna, _utc_ms(8))  # 09:00 in Vienna
    assert not in_active_hours(vienna, _utc_ms(7, 30))


# --- HEARTBEAT_OK -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "skip", "rest"),
    [
        ("HEARTBEAT_OK", True, ""),
        ("HEARTBEAT_OK.", True, ""),
        ("**HEARTBEAT_OK**", True, ""),
        ("<b>HEARTBEAT_OK</b>", True, ""),
        ("All clear. HEARTBEAT_OK", True, ""),
        ("HEARTBEAT_OK " + "x" * 301, False, "x" * 301),
        ("Before HEARTBEAT_OK after", False, "Before HEARTBEAT_OK after"),
        ("Disk is full", False, "Disk is full"),
    ],
)
def test_the_token_at_either_edge_is_an_acknowledgment_within_300_chars(
    text: str, skip: bool, rest: str
) -> None:
    stripped = strip_heartbeat_token(text, heartbeat=True)
    assert (stripped.should_skip, stripped.text) == (skip, rest)


def test_outside_a_heartbeat_the_token_is_stripped_and_the_rest_kept() -> None:
    assert strip_heartbeat_token("Done. HEARTBEAT_OK", heartbeat=False).text == "Done."
    assert strip_heartbeat_token("HEARTBEAT_OK", heartbeat=False).should_skip


def test_the_verdict_on_a_reply() -> None:
    assert classify_reply("", ack_max_chars=300).status == "ok-empty"
    assert classify_reply("NO_REPLY", ack_max_chars=300).status == "ok-token"
    assert classify_reply("HEARTBEAT_OK fine", ack_max_chars=300).status == "ok-token"
    alert = classify_reply("HEARTBEAT_OK fine", ack_max_chars=2)
    assert (alert.status, alert.text, alert.preview) == ("sent", "fine", "fine")
    assert classify_reply("x" * 500, ack_max_chars=300).preview == "x" * 200
    quiet = {"outcome": "no_change", "notify": False, "summary": "nothing new"}
    assert classify_reply("ignored", ack_max_chars=300, response=quiet).status == "ok-token"
    loud = {"outcome": "blocked", "notify": True, "summary": "s", "notificationText": "Help"}
    assert classify_reply("", ack_max_chars=300, response=loud).text == "Help"


def test_the_event_payload() -> None:
    assert heartbeat_event(ts=1, status="ok-token", reason="interval", silent=True) == {
        "ts": 1,
        "status": "ok-token",
        "reason": "interval",
        "silent": True,
        "indicatorType": "ok",
    }
    assert heartbeat_event(ts=2, status="skipped", reason="quiet-hours") == {
        "ts": 2,
        "status": "skipped",
        "reason": "quiet-hours",
    }


# --- scratch and prompt -----------------------------------------------------------------------


def test_effectively_empty_scratch() -> None:
    assert is_effectively_empty("")
    assert is_effectively_empty("# Heartbeat\n\n## Tasks\n- [ ]\n* \n```md\n```\n")
    assert is_effectively_empty("<!-- a\nmultiline comment -->\n# Title\n")
    assert not is_effectively_empty("# Tasks\n- check the inbox\n")
    assert not is_effectively_empty("<!-- c --> do this")
    assert not is_effectively_empty(None)  # no file: the model decides


def test_the_prompt_appends_the_scratch() -> None:
    assert build_prompt(None, None, response_tool=False) == HEARTBEAT_PROMPT
    assert HEARTBEAT_PROMPT.endswith("If nothing needs attention, reply NO_REPLY.")
    assert build_prompt("Mine.", "- a\n", response_tool=False) == (
        "Mine.\n\nHeartbeat monitor scratch:\n- a"
    )
    with_tool = build_prompt(None, None, response_tool=True)
    assert "Use heartbeat_respond to report the wake outcome." in with_tool


# --- system events ----------------------------------------------------------------------------


def test_system_events_are_bounded_deduplicated_and_taken_once() -> None:
    queue = SystemEventQueue()
    queue.enqueue("k", "one", ts=0)
    queue.enqueue("k", "one", ts=1)  # a repeat of the last: not queued twice
    queue.enqueue("k", "two\nlines", ts=2)
    queue.enqueue("k", "heartbeat poll happened", ts=3)  # dropped when formatted
    message = queue.prepend("k", "hello")
    lines = message.split("\n")
    assert lines[0].startswith("System: [") and lines[0].endswith("] one")
    assert lines[1].endswith("] two") and lines[2] == "System: lines"
    assert lines[3:] == ["", "hello"]
    assert queue.prepend("k", "again") == "again"
    for i in range(MAX_EVENTS_PER_SESSION + 5):
        queue.enqueue("k", f"e{i}")
    assert len(queue.peek("k")) == MAX_EVENTS_PER_SESSION
    assert queue.peek("k")[0].text == "e5"


# --- the chat's history -----------------------------------------------------------------------


def test_history_hides_heartbeat_prompts_and_acknowledgments() -> None:
    def user(text: str) -> UserMessage:
        return UserMessage(content=text, timestamp=0)

    def said(text: str) -> AssistantMessage:
        return AssistantMessage(content=[TextContent(text)], timestamp=0)

    messages = [
        user(f"System: [2026-12-07 10:00:00 UTC] ping\n\n{HEARTBEAT_PROMPT}\n\nHeartbeat monitor"),
        said("HEARTBEAT_OK"),
        user("[OpenClaw heartbeat poll]"),
        said("NO_REPLY"),
        user("a question"),
        said("an answer HEARTBEAT_OK, with more than the budget " + "x" * 300),
        user("Custom prompt"),  # OpenClaw's display hides only its own prompt
        said("Disk full"),
    ]
    assert hidden_in_history(messages) == {0, 1, 2, 3}
    assert is_heartbeat_prompt(HEARTBEAT_PROMPT)
    assert not is_heartbeat_prompt(f"Before. {HEARTBEAT_PROMPT}")


def test_who_runs_heartbeats_as_openclaw_enrolls_them() -> None:
    two = [{"id": "main"}, {"id": "ops"}]
    assert heartbeat_agents(parse_config({"agents": {"list": two}}), ["main", "ops"]) == []
    marked = [{"id": "main", "default": True}, {"id": "ops"}]
    assert heartbeat_agents(parse_config({"agents": {"list": marked}}), ["main", "ops"]) == ["main"]
    named = {"agents": {"defaults": {"heartbeat": {"agentId": "ops"}}, "list": two}}
    assert heartbeat_agents(parse_config(named), ["main", "ops"]) == ["ops"]
    everyone = {"agents": {"defaults": {"heartbeat": {"every": "1h"}}, "list": two}}
    assert heartbeat_agents(parse_config(everyone), ["main", "ops"]) == ["main", "ops"]
    with pytest.raises(ConfigError, match=r"agents\.list\[0\]\.heartbeat\.agentId"):
        parse_config({"agents": {"list": [{"id": "a", "heartbeat": {"agentId": "a"}}]}})


def test_the_summary_health_and_status_show() -> None:
    gen = _gen({"agents": {"defaults": {"heartbeat": {"every": "45m", "model": "local/echo"}}}})
    assert heartbeat_summary(gen, "main") == {
        "enabled": True,
        "every": "45m",
        "everyMs": 2_700_000,
        "prompt": HEARTBEAT_PROMPT,
        "target": "owner",
        "ackMaxChars": 300,
        "model": "local/echo",
    }
    off = _gen({"agents": {"defaults": {"heartbeat": {"every": "0m"}}}})
    assert heartbeat_summary(off, "main")["every"] == "disabled"
    assert heartbeat_summary(off, "main")["everyMs"] is None


def test_the_models_context_leaves_out_heartbeat_turns_that_were_noise() -> None:
    def user(text: str) -> UserMessage:
        return UserMessage(content=text, timestamp=0)

    def said(text: str) -> AssistantMessage:
        return AssistantMessage(content=[TextContent(text)], timestamp=0)

    def calls(name: str, **args: Any) -> AssistantMessage:
        return AssistantMessage(content=[ToolCallContent("c1", name, args)], timestamp=0)

    def result(error: bool = False) -> ToolResultMessage:
        return ToolResultMessage("c1", "t", [TextContent("r")], error, 0)

    quiet = [user(HEARTBEAT_PROMPT), calls("read", path="x"), result(), said("HEARTBEAT_OK")]
    silent = [user(HEARTBEAT_PROMPT), calls("heartbeat_respond", notify=False), result()]
    alert = [user(HEARTBEAT_PROMPT), said("Disk full")]
    raised = [user(HEARTBEAT_PROMPT), calls("heartbeat_respond", notify=True), result()]
    chat = [user("hi"), said("HEARTBEAT_OK")]  # not a heartbeat's turn: kept
    messages = [*quiet, *silent, *alert, *raised, *chat]
    assert drop_heartbeat_turns(messages) == [*alert, *raised, *chat]
    # what lets a session's run skip that walk: a context with no heartbeat prompt
    assert holds_heartbeat_turns(messages) and holds_heartbeat_turns(quiet)
    assert not holds_heartbeat_turns(chat) and not holds_heartbeat_turns([])
