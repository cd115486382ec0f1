"""Which sessions the session tools may reach from a calling session, as OpenClaw decides.

`tools.sessions.visibility`: `self` (the calling session only), `tree` (it and the sessions
it spawned, recursively; from an agent's main session every session of that agent),
`agent` (every session of the caller's agent), `all` (the default: every session, across
agents as `tools.agentToAgent` allows: `enabled` false refuses other agents' sessions,
`allow` names the agents, ids or `*` patterns, that both sides must match). A session the
caller spawned (directly or not) stays reachable across agents under `tree` and `all`.

`denial` answers None (allowed) or OpenClaw's message for the refusal; the action names the
tool's use (`list`, `history`, `send`, `status`). Pure functions: the caller provides each
session's parent (`parent_of`, from the rows' `spawnedBy`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any, Final

from ..sessions._sessions import parse_session_key

__all__ = ["agent_of", "denial"]

_MAX_DEPTH: Final = 16


def agent_of(key: str, fallback: str) -> str:
    """The agent a session key names (`fallback` for keys without one: `global`, ...)."""
    parsed = parse_session_key(key)
    return parsed.agent_id if parsed is not None else fallback


def _prefix(action: str) -> str:
    return "Session list" if action == "list" else f"Session {action}"


def _descends(target: str, caller: str, parent_of: Callable[[str], str | None]) -> bool:
    key: str | None = target
    for _ in range(_MAX_DEPTH):
        key = parent_of(key) if key is not None else None
        if key is None:
            return False
        if key == caller:
            return True
    return False


def _matches(agent: str, allow: list[str]) -> bool:
    for entry in allow:
        entry = entry.strip()
        if not entry:
            continue
        if "*" in entry or "?" in entry:
            if fnmatch.fnmatch(agent.lower(), entry.lower()):
                return True
        elif entry == agent:
            return True
    return False


def _a2a(action: str, caller_agent: str, target_agent: str, a2a: Any) -> str | None:
    noun = {"send": "messaging", "list": "listing"}.get(action, action)
    if not a2a.enabled:
        if action == "send":
            return (
                "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true "
                "to allow cross-agent sends."
            )
        if action == "list":
            return (
                "Agent-to-agent listing is disabled. Set tools.agentToAgent.enabled=true to "
                "allow cross-agent visibility."
            )
        return (
            f"Agent-to-agent {action} is disabled. Set tools.agentToAgent.enabled=true to "
            "allow cross-agent access."
        )
    allow = a2a.allow or []
    if allow and not (_matches(caller_agent, allow) and _matches(target_agent, allow)):
        return f"Agent-to-agent {noun} denied by tools.agentToAgent.allow."
    return None


def denial(
    tools: Any,
    action: str,
    caller: str,
    caller_agent: str,
    target: str,
    target_agent: str,
    parent_of: Callable[[str], str | None],
) -> str | None:
    """Why `caller` (of `caller_agent`) may not reach `target` for `action` under the
    config's `tools` (`sessions.visibility`, `agentToAgent`), or None when it may."""
    if target == caller:
        return None
    mode = tools.sessions.visibility
    if mode == "self":
        return (
            f"{_prefix(action)} visibility is restricted to the current session "
            "(tools.sessions.visibility=self)."
        )
    if mode in ("tree", "all") and _descends(target, caller, parent_of):
        return None  # the caller's own children, whatever their agent
    same_agent = target_agent == caller_agent
    if mode == "tree":
        if same_agent and caller == f"agent:{caller_agent}:main":
            return None
        return (
            f"{_prefix(action)} visibility is restricted to the current session tree "
            "(tools.sessions.visibility=tree)."
        )
    if same_agent:
        return None
    if mode == "agent":
        return (
            f"{_prefix(action)} visibility is restricted. Set tools.sessions.visibility=all to "
            "allow cross-agent access; use tools.agentToAgent to restrict permitted agent pairs."
        )
    return _a2a(action, caller_agent, target_agent, tools.agentToAgent)
