"""The exec auto-reviewer of an agent's runs (`tools.exec.mode: "auto"`): the model it asks
and how long it waits, from `tools.exec.reviewer` (`model`: a `provider/model` string or
`{primary}`, else the agent's primary model; `timeoutMs`, default 30,000, at least 1,000).
What the reviewer does: `runtime.tools._exec_review`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..llm._types import ModelProvider
from ..model._generation import ModelRuntimeGeneration
from ..tools import DenialStreaks, ModelReviewer

__all__ = ["exec_reviewer"]


def _model_ref(raw: Mapping[str, Any]) -> str | None:
    model = raw.get("model")
    if isinstance(model, Mapping):
        model = model.get("primary")
    return model.strip() if isinstance(model, str) and model.strip() else None


def exec_reviewer(
    generation: ModelRuntimeGeneration, agent_id: str, streaks: DenialStreaks
) -> ModelReviewer:
    """The reviewer `agent_id`'s `exec` asks under `mode: auto` (its model is resolved at
    each review: an unknown one makes that review an `ask`)."""
    raw = generation.config.tools.exec.reviewer or {}
    ref = _model_ref(raw)
    timeout = raw.get("timeoutMs")

    def resolve() -> tuple[ModelProvider, str, Mapping[str, Any]]:
        chosen = ref or generation.agent(agent_id).primary
        resolved = generation.resolve(chosen, agent_id=agent_id)
        return resolved.provider, resolved.model_id, resolved.params

    timeout_ms = int(timeout) if isinstance(timeout, int | float) and timeout > 0 else 30_000
    return ModelReviewer(resolve, timeout_ms=timeout_ms, streaks=streaks)
