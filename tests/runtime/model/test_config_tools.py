"""The config's tool policy keys as OpenClaw writes them: every group and profile OpenClaw
2026.9.6 defines loads, in every scope, and means what it means there; a name clawlane does
not know is a config error naming its key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from runtime.agent import TurnServices
from runtime.model._config import ConfigError, parse_config
from runtime.model._config_check import config_issues
from runtime.model._generation import ModelRuntimeGeneration, build_generation

OPENCLAW = json.loads(
    (Path(__file__).parents[2] / "data" / "openclaw-tool-catalog-2026.9.6.json").read_text()
)


def issues(raw: Any) -> list[tuple[str, str]]:
    return [(i.path, i.message) for i in config_issues(raw, env={})]


def generation(raw: dict[str, Any]) -> ModelRuntimeGeneration:
    return build_generation(parse_config(raw), 1)


@pytest.mark.parametrize("group", sorted(OPENCLAW["groups"]))
def test_every_openclaw_group_loads_in_every_scope_and_permits_its_members(group: str) -> None:
    raw = {
        "tools": {"allow": [group], "byProvider": {"local": {"deny": [group]}}},
        "agents": {
            "defaults": {"tools": {"alsoAllow": [group]}},
            "list": [{"id": "main", "tools": {"profile": "minimal", "alsoAllow": [group]}}],
        },
    }
    assert issues(raw) == []
    policy = TurnServices.tool_policy(generation(raw), "main", "openai/gpt")
    members = OPENCLAW["groups"][group]
    assert [t for t in members if policy.permits(t)] == members
    denied = TurnServices.tool_policy(generation(raw), "main", "local/echo")
    assert not any(denied.permits(t) for t in members)


@pytest.mark.parametrize("profile", sorted(OPENCLAW["profiles"]))
def test_every_openclaw_profile_loads_and_offers_openclaws_contents(profile: str) -> None:
    raw = {"agents": {"list": [{"id": "main", "tools": {"profile": profile}}]}}
    assert issues({"tools": {"profile": profile}}) == [] and issues(raw) == []
    policy = TurnServices.tool_policy(generation(raw), "main")
    allow = OPENCLAW["profiles"][profile]
    core = [t for s in OPENCLAW["sections"] for t in (x["id"] for x in s["tools"])]
    expected = core if allow == ["*"] else [t for t in core if t in allow]
    assert policy.permitted_core_tools() == expected
    assert policy.profile == profile


@pytest.mark.parametrize(
    ("raw", "path", "name"),
    [
        ({"tools": {"allow": ["read", "group:bogus"]}}, "tools.allow[1]", "group:bogus"),
        ({"tools": {"deny": ["shell"]}}, "tools.deny[0]", "shell"),
        ({"tools": {"alsoAllow": ["webfetch"]}}, "tools.alsoAllow[0]", "webfetch"),
        (
            {"tools": {"byProvider": {"openai/gpt-4.1": {"allow": ["nope"]}}}},
            "tools.byProvider[openai/gpt-4.1].allow[0]",
            "nope",
        ),
        (
            {"agents": {"defaults": {"tools": {"deny": ["group:files"]}}}},
            "agents.defaults.tools.deny[0]",
            "group:files",
        ),
        (
            {"agents": {"list": [{"id": "a"}, {"id": "b", "tools": {"allow": ["ls", "lss"]}}]}},
            "agents.list[1].tools.allow[1]",
            "lss",
        ),
    ],
)
def test_an_unknown_tool_or_group_is_a_config_error_naming_its_key(
    raw: dict[str, Any], path: str, name: str
) -> None:
    [(where, message)] = issues(raw)
    assert where == path and f"unknown tool or group {name!r}" in message
    with pytest.raises(ConfigError, match=re.escape(f"config error at {path}: unknown tool")):
        parse_config(raw)


def test_what_openclaw_accepts_beyond_its_tools_loads() -> None:
    entries = ["*", "web_*", "group:plugins", "bundle-mcp", "bash", "apply-patch", "cron"]
    assert issues({"tools": {"allow": entries}}) == []
    assert issues({"tools": {"profile": "coding", "alsoAllow": ["process", "browser"]}}) == []


def test_a_loaded_plugins_id_may_be_named(tmp_path: Path) -> None:
    plugin = tmp_path / "weather_plugin.py"
    raw = {"plugins": {"load": [str(plugin)]}, "tools": {"allow": ["weather_plugin", "read"]}}
    assert issues(raw) == []


def test_a_bad_profile_and_allow_with_also_allow_are_refused() -> None:
    [(path, message)] = issues({"tools": {"profile": "root"}})
    assert path == "tools.profile" and "root" in message
    [(path, message)] = issues({"tools": {"allow": ["read"], "alsoAllow": ["exec"]}})
    assert path == "tools.alsoAllow" and "cannot both be set" in message


@pytest.mark.parametrize(
    "setting",
    [
        False,
        True,
        {"enabled": False, "mode": "tools"},
        {"mode": "directory"},
        {"enabled": True},
        {"mode": "code", "codeTimeoutMs": 5000, "searchDefaultLimit": 4, "maxSearchLimit": 9},
    ],
)
def test_every_tool_search_setting_openclaw_has_loads(setting: object) -> None:
    assert issues({"tools": {"toolSearch": setting}}) == []


def test_a_tool_search_mode_openclaw_does_not_have_is_refused_with_its_path() -> None:
    [(path, _message)] = issues({"tools": {"toolSearch": {"mode": "everything"}}})
    assert path == "tools.toolSearch.mode"
