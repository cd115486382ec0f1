"""OpenClaw's exec policy keys load (global, agents.defaults and an agent's own), values
OpenClaw does not have and mode mixed with security/ask are refused naming the key, and the
agent's keys override the global ones key by key (`runtime.tools.requested_policy`)."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.model._config import ConfigError, parse_config
from runtime.tools import requested_policy


def test_the_exec_policy_keys_load_and_the_agents_override_the_global_ones() -> None:
    config = parse_config(
        {
            "tools": {
                "exec": {"mode": "ask", "askFallback": "allowlist", "strictInlineEval": True}
            },
            "agents": {
                "defaults": {"tools": {"exec": {"security": "full", "ask": "always"}}},
                "list": [{"id": "ops", "tools": {"exec": {"mode": "deny"}}}],
            },
        }
    )
    ops = config.agents.entries[0].tools
    assert ops is not None
    policy = requested_policy(config.tools.exec, ops.exec)
    assert (policy.security, policy.ask, policy.ask_fallback) == ("deny", "off", "allowlist")
    assert policy.strict_inline_eval is True
    defaults = config.agents.defaults.tools
    assert defaults is not None
    policy = requested_policy(config.tools.exec, defaults.exec)
    assert (policy.security, policy.ask) == ("full", "always")


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ({"tools": {"exec": {"mode": "yolo"}}}, "tools.exec.mode"),
        ({"tools": {"exec": {"askFallback": "ask"}}}, "tools.exec.askFallback"),
        ({"tools": {"exec": {"mode": "full", "security": "full"}}}, "tools.exec.mode"),
        (
            {"agents": {"list": [{"id": "a", "tools": {"exec": {"mode": "ask", "ask": "off"}}}]}},
            "agents.list[0].tools.exec.mode",
        ),
    ],
)
def test_bad_exec_policy_keys_are_refused_naming_the_key(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert path in str(caught.value)
