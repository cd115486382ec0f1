"""Tool policy: profiles, groups, allow/deny (deny wins), per-agent overrides, bad names."""

from __future__ import annotations

import pytest

from runtime.tools._builtins import builtin_tools
from runtime.tools._errors import ToolPolicyError
from runtime.tools._policy import TOOL_GROUPS, ToolPolicy, expand_tool_names

ALL = ("read", "write", "edit", "exec", "message", "browser")


def _permitted(policy: ToolPolicy) -> set[str]:
    return {name for name in ALL if policy.permits(name)}


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (ToolPolicy(profile="minimal"), {"read", "message"}),
        (ToolPolicy(profile="coding"), {"read", "write", "edit", "exec", "message"}),
        (ToolPolicy(profile="messaging"), {"message"}),
        (ToolPolicy(profile="full"), set(ALL)),
        (ToolPolicy(), set(ALL)),
        (ToolPolicy(profile="coding", allow=("group:fs",)), {"read", "write", "edit"}),
        (ToolPolicy(allow=("group:fs", "browser")), {"read", "write", "edit", "browser"}),
        (ToolPolicy(profile="minimal", allow=("read", "write")), {"read"}),
        (
            ToolPolicy(profile="coding", deny=("group:runtime",)),
            {"read", "write", "edit", "message"},
        ),
        (ToolPolicy(allow=("exec", "read"), deny=("exec",)), {"read"}),
        (ToolPolicy(allow=("group:runtime",), deny=("group:runtime",)), set()),
        (ToolPolicy(deny=("*",)), set()),
        (ToolPolicy(allow=("*",), deny=("write",)), set(ALL) - {"write"}),
        (ToolPolicy(allow=("b*",)), {"browser"}),
        (ToolPolicy(profile="FULL", deny=("Bash",)), set(ALL) - {"exec"}),
        (ToolPolicy(allow=()), set()),
        (ToolPolicy(allow="message"), {"message"}),
    ],
    ids=[
        "minimal",
        "coding",
        "messaging",
        "full",
        "no-profile",
        "allow-narrows-profile",
        "allow-without-profile",
        "profile-is-a-ceiling",
        "deny-a-group",
        "deny-beats-allow",
        "deny-beats-allow-groups",
        "deny-star",
        "allow-star-minus-deny",
        "glob",
        "case-and-alias",
        "empty-allow",
        "lone-string",
    ],
)
def test_policy_table(policy: ToolPolicy, expected: set[str]) -> None:
    assert _permitted(policy) == expected


def test_groups_expand_to_their_members() -> None:
    assert dict(TOOL_GROUPS) == {
        "group:fs": ("read", "write", "edit"),
        "group:runtime": ("exec",),
        "group:messaging": ("message",),
    }
    assert expand_tool_names(["group:fs", "Exec"]) == {"read", "write", "edit", "exec"}


def test_unknown_groups_are_an_error_naming_them() -> None:
    with pytest.raises(ToolPolicyError) as info:
        ToolPolicy(allow=("group:fs", "group:nope"), deny=("group:zzz", "read"))
    assert str(info.value) == (
        "unknown tool group(s): group:nope, group:zzz "
        "(known: group:fs, group:messaging, group:runtime)"
    )
    with pytest.raises(ToolPolicyError, match="group:x"):
        ToolPolicy.merge(ToolPolicy(profile="coding"), ToolPolicy(deny=("group:x",)))
    with pytest.raises(ToolPolicyError, match=r"group:a, group:b"):
        expand_tool_names(["group:a", "group:b"])


def test_unknown_profile_is_an_error() -> None:
    with pytest.raises(ToolPolicyError, match="unknown tool profile: 'root'"):
        ToolPolicy(profile="root")


def test_per_agent_override_replaces_what_it_sets() -> None:
    base = ToolPolicy(profile="coding", allow=("group:fs", "exec"), deny=("exec",))
    assert ToolPolicy.merge(base, None) is base
    # Nothing set: the defaults stand.
    assert ToolPolicy.merge(base, ToolPolicy()) == base
    # Profile replaced; allow and deny kept.
    merged = ToolPolicy.merge(base, ToolPolicy(profile="minimal"))
    assert merged == ToolPolicy(profile="minimal", allow=("group:fs", "exec"), deny=("exec",))
    assert _permitted(merged) == {"read"}
    # Allow replaced.
    merged = ToolPolicy.merge(base, ToolPolicy(allow=("group:messaging",)))
    assert _permitted(merged) == {"message"}
    # Deny replaced: exec comes back, write goes.
    merged = ToolPolicy.merge(base, ToolPolicy(deny=("write",)))
    assert _permitted(merged) == {"read", "edit", "exec"}


def test_filter_keeps_permitted_tools_in_order() -> None:
    tools = builtin_tools()
    kept = ToolPolicy(profile="coding", deny=("edit",)).filter(tools)
    assert [t.name for t in kept] == ["read", "write", "exec", "message"]
    assert all(k is t for k, t in zip(kept, [tools[0], tools[1], tools[3], tools[4]], strict=True))
