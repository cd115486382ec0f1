"""Tool policy as OpenClaw 2026.9.6 decides it: its catalog, groups and profiles (checked
against a snapshot of its own definitions), aliases, and the layered allow/alsoAllow/deny of
the global, per-agent and per-provider scopes."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from runtime.tools import (
    CORE_TOOLS,
    PROFILES,
    SECTIONS,
    TOOL_ALIASES,
    TOOL_GROUPS,
    ToolPolicy,
    ToolPolicyError,
    ToolScope,
    expand_tool_names,
    normalize_tool_name,
    unknown_entries,
)

OPENCLAW = json.loads(
    (Path(__file__).parents[2] / "data" / "openclaw-tool-catalog-2026.9.6.json").read_text()
)
OURS = ("ls", "read", "write", "edit", "apply_patch", "exec", "message", "web_fetch", "web_search")
PLUGIN = "weather"  # a tool that is no OpenClaw core tool


def permitted(policy: ToolPolicy, names: tuple[str, ...] = (*OURS, PLUGIN)) -> set[str]:
    return {name for name in names if policy.permits(name)}


# --- the catalog -----------------------------------------------------------------------------


def test_groups_are_openclaws_every_one_with_its_members_in_order() -> None:
    assert {k: list(v) for k, v in TOOL_GROUPS.items()} == OPENCLAW["groups"]
    assert list(TOOL_GROUPS) == list(OPENCLAW["groups"])


def test_profiles_are_openclaws() -> None:
    ours = {name: (["*"] if v is None else list(v)) for name, v in PROFILES.items()}
    assert ours == OPENCLAW["profiles"]
    assert PROFILES["minimal"] == ("session_status", "gateway")


def test_sections_and_descriptions_are_openclaws() -> None:
    assert [(s["id"], s["label"]) for s in OPENCLAW["sections"]] == list(SECTIONS)
    listed = [(t["id"], t["description"]) for s in OPENCLAW["sections"] for t in s["tools"]]
    assert [(t.id, t.description) for t in CORE_TOOLS.values()] == listed


def test_aliases_resolve_for_a_model_and_in_a_policy() -> None:
    assert TOOL_ALIASES["bash"] == "exec" and TOOL_ALIASES["apply-patch"] == "apply_patch"
    assert normalize_tool_name(" BASH ") == "exec"
    assert normalize_tool_name("Apply-Patch") == "apply_patch"
    assert normalize_tool_name("cron") == "automations"
    assert permitted(ToolPolicy.of(allow=["bash", "apply-patch"])) == {"apply_patch", "exec"}
    assert not ToolPolicy.of(deny=["Bash"]).permits("exec")


def test_expand_replaces_groups_by_their_members() -> None:
    assert expand_tool_names(["group:fs", "Bash"]) == {
        "ls",
        "read",
        "write",
        "edit",
        "apply_patch",
        "exec",
    }
    assert expand_tool_names(["group:plugins", "x_*"]) == {"group:plugins", "x_*"}


# --- one scope -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (ToolPolicy(), {*OURS, PLUGIN}),
        (ToolPolicy.of("full"), {*OURS, PLUGIN}),
        (ToolPolicy.of("minimal"), set()),
        (
            ToolPolicy.of("coding"),
            {"ls", "read", "write", "edit", "apply_patch", "exec", "web_fetch", "web_search"},
        ),
        (ToolPolicy.of("messaging"), {"message"}),
        (
            ToolPolicy.of("messaging", also_allow=["group:web"]),
            {"message", "web_fetch", "web_search"},
        ),
        (
            ToolPolicy.of("coding", deny=["group:runtime"]),
            {"ls", "read", "write", "edit", "apply_patch", "web_fetch", "web_search"},
        ),
        (ToolPolicy.of(allow=["group:fs"]), {"ls", "read", "write", "edit", "apply_patch"}),
        (ToolPolicy.of(allow=["write"]), {"write", "apply_patch"}),
        (ToolPolicy.of(allow=["write"], deny=["apply_patch"]), {"write"}),
        (ToolPolicy.of(allow=["exec", "read"], deny=["exec"]), {"read"}),
        (ToolPolicy.of(deny=["*"]), set()),
        (ToolPolicy.of(allow=["*"], deny=["write"]), {*OURS, PLUGIN} - {"write"}),
        (ToolPolicy.of(allow=["web_*"]), {"web_fetch", "web_search"}),
        (ToolPolicy.of(allow=["group:plugins"]), {PLUGIN}),
        (ToolPolicy.of(also_allow=[PLUGIN]), {*OURS, PLUGIN}),
        (ToolPolicy.of("minimal", also_allow=["read"]), {"read"}),
        (ToolPolicy.of(allow=[]), {*OURS, PLUGIN}),
        (ToolPolicy.of(allow="message"), {"message"}),
        (
            ToolPolicy.of(" Coding ", deny=["EXEC"]),
            {"ls", "read", "write", "edit", "apply_patch", "web_fetch", "web_search"},
        ),
    ],
    ids=[
        "none",
        "full",
        "minimal",
        "coding",
        "messaging",
        "profile-also-allow",
        "deny-a-group",
        "allow-a-group",
        "write-permits-apply-patch",
        "deny-apply-patch-still-wins",
        "deny-beats-allow",
        "deny-star",
        "allow-star-minus-deny",
        "glob",
        "plugins-group",
        "also-allow-alone-is-everything-and-these",
        "minimal-also-allow",
        "empty-allow-is-everything",
        "lone-string",
        "case-and-space",
    ],
)
def test_one_scope(policy: ToolPolicy, expected: set[str]) -> None:
    assert permitted(policy) == expected


def test_minimal_offers_openclaws_minimal_tools() -> None:
    assert ToolPolicy.of("minimal").permitted_core_tools() == ["session_status", "gateway"]


# --- layers ----------------------------------------------------------------------------------


def test_an_agent_scope_narrows_the_global_one_but_never_widens_it() -> None:
    glob = ToolScope(allow=["group:fs", "exec"])
    agent = ToolScope(deny=["exec"])
    assert permitted(ToolPolicy.resolve(glob, agent)) == {
        "ls",
        "read",
        "write",
        "edit",
        "apply_patch",
    }
    wider = ToolScope(allow=["message", "read"])
    assert permitted(ToolPolicy.resolve(glob, wider)) == {"read"}


def test_the_agents_profile_replaces_the_global_one() -> None:
    policy = ToolPolicy.resolve(ToolScope(profile="coding"), ToolScope(profile="messaging"))
    assert policy.profile == "messaging" and permitted(policy) == {"message"}
    inherited = ToolPolicy.resolve(ToolScope(profile="messaging"), ToolScope(deny=["read"]))
    assert inherited.profile == "messaging" and permitted(inherited) == {"message"}


def test_by_provider_applies_to_runs_on_that_provider_or_model() -> None:
    glob = ToolScope(
        profile="coding",
        by_provider={
            "openai": ToolScope(deny=["exec"]),
            "OpenAI/gpt-small": ToolScope(profile="minimal", also_allow=["read"]),
        },
    )
    agent = ToolScope(by_provider={"local": ToolScope(allow=["read", "ls"])})
    coding = {"ls", "read", "write", "edit", "apply_patch", "exec", "web_fetch", "web_search"}
    assert permitted(ToolPolicy.resolve(glob, agent, model_ref="anthropic/claude")) == coding
    assert permitted(ToolPolicy.resolve(glob, agent, model_ref="openai/gpt-big")) == coding - {
        "exec"
    }
    assert permitted(ToolPolicy.resolve(glob, agent, model_ref="openai/gpt-small")) == {"read"}
    assert permitted(ToolPolicy.resolve(glob, agent, model_ref="local/echo")) == {"ls", "read"}
    assert permitted(ToolPolicy.resolve(glob, agent)) == coding


def test_steps_name_the_config_they_came_from() -> None:
    policy = ToolPolicy.resolve(
        ToolScope(profile="coding", deny=["exec"]), ToolScope(allow=["read"]), agent_id="ops"
    )
    assert [s.label for s in policy.steps] == [
        "tools.profile (coding)",
        "tools.allow",
        "agents.ops.tools.allow",
    ]


# --- bad names -------------------------------------------------------------------------------


def test_an_unknown_group_or_profile_is_an_error_naming_it() -> None:
    with pytest.raises(ToolPolicyError, match=r"unknown tool group\(s\): group:nope, group:zzz"):
        ToolScope(allow=["group:fs", "group:nope"], deny=["group:zzz", "read"])
    with pytest.raises(ToolPolicyError, match="unknown tool profile: 'root'"):
        ToolScope(profile="root")


def test_unknown_entries_are_the_names_openclaw_does_not_define() -> None:
    entries = ["read", "Bash", "group:web", "*", "web_*", "group:plugins", "bundle-mcp", "nope"]
    assert unknown_entries([*entries, "weather", "group:bogus"]) == [
        "nope",
        "weather",
        "group:bogus",
    ]
    assert unknown_entries(["weather"], also_known=["Weather"]) == []


@attrs.frozen
class Named:
    name: str


def test_filter_keeps_permitted_tools_in_order() -> None:
    tools = [Named(n) for n in ("message", "write", "Edit", "read", PLUGIN, "bash")]
    kept = ToolPolicy.of("coding", deny=["edit"]).filter(tools)  # type: ignore[type-var]
    assert kept == [tools[1], tools[3], tools[5]]
