"""`agents_list`'s `agentRuntime` is OpenClaw 2026.9.6's (resolveModelAgentRuntimeMetadata, as
its peer gateway answered): `{id: auto, source: implicit}` where no runtime is configured for
the agent's model, else the configured one, `model` when a model entry names it."""

from __future__ import annotations

from runtime.agent import agents_view
from runtime.model._generation import build_generation
from tests.conftest import local_config


def _runtime(**overrides: object) -> dict[str, str]:
    gen = build_generation(local_config(**overrides), 1)
    [main] = agents_view(gen, "main")["agents"]
    runtime: dict[str, str] = main["agentRuntime"]
    return runtime


def test_agents_list_names_the_runtime_as_openclaw_does() -> None:
    assert _runtime() == {"id": "auto", "source": "implicit"}
    exact = {"local/echo": {"agentRuntime": {"id": "pi"}}}
    assert _runtime(agents__defaults__models=exact) == {"id": "openclaw", "source": "model"}
    wildcard = {"local/*": {"agentRuntime": {"id": "default"}}}
    assert _runtime(agents__defaults__models=wildcard) == {"id": "auto", "source": "implicit"}
