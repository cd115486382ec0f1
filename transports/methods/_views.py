"""OpenClaw's shapes of clawlane's things, shared by the methods its clients call.

A session row as `sessions.describe` / `sessions.list` / `chat.startup` show it (with the
resolved model, the context window and the tokens the terminal UI's footer reads), an agent
as `agents.list` shows it, a catalog model as `models.list` / `chat.metadata` show it, and
the session defaults. Pure functions of the generation and the row: no I/O.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from runtime.model import CatalogEntry, GenerationError, ModelRuntimeGeneration
from runtime.sessions import DEFAULT_MAIN_KEY, SessionRow, parse_session_key, session_kind

from ._context import Host

REASONING_LEVELS: Final = ("off", "minimal", "low", "medium", "high")
AGENT_RUNTIME: Final = {
    "id": "auto",
    "cloudPlacementSupported": False,
    "devicePlacementSupported": False,
    "source": "implicit",
}


def thinking_levels(reasoning: bool) -> list[dict[str, str]]:
    """The thinking levels a model offers (`off` only for a model without reasoning)."""
    return [
        {"id": level, "label": level} for level in (REASONING_LEVELS if reasoning else ("off",))
    ]


def _entry(gen: ModelRuntimeGeneration, ref: str) -> CatalogEntry | None:
    provider, _, model = gen.aliases.get(ref, ref).partition("/")
    return next((e for e in gen.catalog if e.provider == provider and e.id == model), None)


def model_ref(gen: ModelRuntimeGeneration, agent_id: str, row: SessionRow | None) -> str:
    """The `provider/model` a run of this session would use now."""
    if row is not None and row.modelOverride:
        ref = (
            f"{row.providerOverride}/{row.modelOverride}"
            if row.providerOverride
            else row.modelOverride
        )
    else:
        try:
            ref = gen.agent(agent_id).primary
        except GenerationError:
            ref = gen.agent(None).primary
    return gen.aliases.get(ref, ref)


def model_view(
    entry: CatalogEntry, *, default_ref: str | None, alias: str | None = None
) -> dict[str, Any]:
    """A `ModelsListResult` entry."""
    item: dict[str, Any] = {
        "id": entry.id,
        "name": entry.name,
        "provider": entry.provider,
        "contextWindow": entry.contextWindow,
        "reasoning": entry.reasoning,
        "input": list(entry.input),
        "thinkingLevels": thinking_levels(entry.reasoning),
        "thinkingDefault": "off",
        "available": entry.available,
    }
    if f"{entry.provider}/{entry.id}" == default_ref:
        item["tags"] = ["default"]
    if not entry.available:
        item["unavailableReason"] = "missing-auth"
    if alias:
        item["alias"] = alias
    return item


def catalog_view(gen: ModelRuntimeGeneration, agent_id: str | None) -> list[dict[str, Any]]:
    aliases = {v: k for k, v in gen.aliases.items()}
    default_ref = gen.agent(agent_id).primary
    default_ref = gen.aliases.get(default_ref, default_ref)
    return [
        model_view(e, default_ref=default_ref, alias=aliases.get(f"{e.provider}/{e.id}"))
        for e in gen.catalog_for(agent_id)
    ]


def defaults_view(gen: ModelRuntimeGeneration, agent_id: str | None = None) -> dict[str, Any]:
    """`sessions.list` / `chat.startup` `defaults`."""
    ref = model_ref(gen, agent_id or gen.default_agent, None)
    provider, _, model = ref.partition("/")
    entry = _entry(gen, ref)
    out: dict[str, Any] = {
        "modelProvider": provider,
        "model": model,
        "agentId": agent_id or gen.default_agent,
        "agentRuntime": dict(AGENT_RUNTIME),
        "thinkingLevels": thinking_levels(bool(entry and entry.reasoning)),
        "thinkingOptions": [t["id"] for t in thinking_levels(bool(entry and entry.reasoning))],
        "thinkingDefault": "off",
        "modelSelectionTarget": "session",
    }
    if entry is not None:
        out["contextTokens"] = entry.contextWindow
    return out


def agent_view(gen: ModelRuntimeGeneration, agent_id: str) -> dict[str, Any]:
    """An `AgentsListResult` agent."""
    spec = gen.agent(agent_id)
    entry_conf = next((a for a in gen.config.agents.entries if a.id == agent_id), None)
    reasoning = bool((e := _entry(gen, spec.primary)) and e.reasoning)
    view: dict[str, Any] = {
        "id": spec.id,
        "kind": "agent",
        "agentRuntime": dict(AGENT_RUNTIME),
        "thinkingLevels": thinking_levels(reasoning),
        "thinkingOptions": [t["id"] for t in thinking_levels(reasoning)],
        "thinkingDefault": "off",
        "model": {
            "primary": spec.primary,
            **({"fallbacks": list(spec.fallbacks)} if spec.fallbacks else {}),
        },
        "defaultPermissionMode": "full",
    }
    if entry_conf is not None and entry_conf.name:
        view["name"] = entry_conf.name
    if spec.workspace:
        view["workspace"] = spec.workspace
    return view


def agents_view(gw: Host) -> dict[str, Any]:
    """`agents.list`: the generation's agents."""
    gen = gw.actors.supervisor.generation
    agents = [agent_view(gen, agent_id) for agent_id in gen.agents]
    for agent in agents:
        agent.setdefault("workspace", str(gw.process.state_dir / "workspaces" / agent["id"]))
    return {
        "defaultId": gen.default_agent,
        "ownership": "sole",
        "selectionRequired": False,
        "mainKey": DEFAULT_MAIN_KEY,
        "scope": "per-sender",
        "agents": agents,
    }


def session_view(
    gw: Host,
    row: SessionRow,
    *,
    active_run_ids: list[str] | None = None,
    cache: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A session as `sessions.describe` / `sessions.list` show it: the row, plus the model
    a run would use now, its context window, and the context tokens of the last run.
    `cache` (one dict per listing) keeps the model lookups of rows that share a model."""
    gen = gw.actors.supervisor.generation
    data = msgspec.to_builtins(row)
    assert isinstance(data, dict)
    ref = model_ref(gen, row.agentId, row)
    provider, _, model = ref.partition("/")
    if cache is None:
        entry = _entry(gen, ref)
    elif ref in cache:
        entry = cache[ref]
    else:
        entry = cache[ref] = _entry(gen, ref)
    parsed = parse_session_key(row.key)
    active = (
        active_run_ids
        if active_run_ids is not None
        else [r.run_id for r in gw.actors.registry.active() if r.session_key == row.key]
    )
    data.update(
        kind=session_kind(row.key),
        classification="main"
        if parsed is not None and parsed.rest == DEFAULT_MAIN_KEY
        else "direct",
        isMain=parsed is not None and parsed.rest == DEFAULT_MAIN_KEY,
        modelProvider=provider,
        model=model,
        # OpenClaw's `totalTokens` is the context the last run used; `contextTokens` the window.
        totalTokens=row.contextTokens if row.contextTokens is not None else row.inputTokens,
        totalTokensFresh=row.contextTokens is not None,
        contextTokens=entry.contextWindow if entry is not None else row.contextTokens,
        thinkingLevels=thinking_levels(bool(entry and entry.reasoning)),
        thinkingDefault="off",
        effectiveQueueMode=row.queueMode or gen.config.messages.queue.mode or "steer",
        agentRuntime=dict(AGENT_RUNTIME),
        hasActiveRun=bool(active),
        activeRunIds=active,
    )
    if row.thinkingLevel is None:
        data["thinkingLevel"] = "off"
    return data
