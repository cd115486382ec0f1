"""What the session tools may reach from a calling session: `tools.sessions.visibility`
and `tools.agentToAgent` as OpenClaw decides them, with OpenClaw's refusals."""

from __future__ import annotations

from typing import Any

from runtime.agent import denial
from tests.conftest import local_config

PARENTS = {"agent:main:subagent:a": "agent:main:other", "agent:work:subagent:b": "agent:main:main"}


def check(action: str, caller: str, target: str, **tools: Any) -> str | None:
    config = local_config(**{f"tools__{k}": v for k, v in tools.items()})
    caller_agent, target_agent = caller.split(":")[1], target.split(":")[1]
    return denial(config.tools, action, caller, caller_agent, target, target_agent, PARENTS.get)


def test_all_reaches_every_session_and_agent_to_agent_bounds_other_agents() -> None:
    assert check("send", "agent:main:main", "agent:work:main") is None
    off = {"enabled": False}
    assert check("send", "agent:main:main", "agent:work:main", agentToAgent=off) == (
        "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow "
        "cross-agent sends."
    )
    # A session it spawned stays reachable across agents.
    assert check("history", "agent:main:main", "agent:work:subagent:b", agentToAgent=off) is None
    pairs = {"allow": ["main", "home*"]}
    assert check("list", "agent:main:main", "agent:home2:x", agentToAgent=pairs) is None
    assert check("list", "agent:main:main", "agent:work:x", agentToAgent=pairs) == (
        "Agent-to-agent listing denied by tools.agentToAgent.allow."
    )


def test_agent_tree_and_self_narrow_what_is_reached() -> None:
    agent = {"visibility": "agent"}
    assert check("status", "agent:main:x", "agent:main:y", sessions=agent) is None
    refused = check("status", "agent:main:x", "agent:work:y", sessions=agent) or ""
    assert refused.startswith(
        "Session status visibility is restricted. Set tools.sessions.visibility=all"
    )
    tree = {"visibility": "tree"}
    assert check("send", "agent:main:other", "agent:main:subagent:a", sessions=tree) is None
    assert check("send", "agent:main:main", "agent:main:third", sessions=tree) is None
    assert check("send", "agent:main:other", "agent:main:third", sessions=tree) == (
        "Session send visibility is restricted to the current session tree "
        "(tools.sessions.visibility=tree)."
    )
    own = {"visibility": "self"}
    assert check("history", "agent:main:x", "agent:main:x", sessions=own) is None
    assert check("list", "agent:main:main", "agent:main:y", sessions=own) == (
        "Session list visibility is restricted to the current session "
        "(tools.sessions.visibility=self)."
    )
