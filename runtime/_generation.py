"""The model runtime generation: one frozen snapshot of what runs need to pick a model.

A generation is built completely off to the side from a `Config` (providers, model registry,
projected catalog, agents) and is never mutated; publishing a new one replaces the reference
whole. A failed build raises `GenerationError` and nothing is published. A run calls
`fork_stores()` at its start and keeps what it got to its end.

Errors in this module:
- `GenerationError`: the config cannot become a generation (unknown model, no provider...).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs

from ._config import (
    LOCAL_MODEL_ID,
    LOCAL_PROVIDER_ID,
    AgentModelConfig,
    Config,
    ModelDefinition,
    ProviderConfig,
    config_hash,
)
from ._sessions import DEFAULT_AGENT_ID, normalize_agent_id
from .llm._types import ModelProvider

DEFAULT_LOCAL_PROVIDER: Final = ProviderConfig(
    api="local", models=[ModelDefinition(id=LOCAL_MODEL_ID, name="clawlane local echo model")]
)


class GenerationError(Exception):
    """A generation could not be built; the previous one keeps serving."""


@attrs.frozen
class CatalogEntry:
    """One model as `models.list` shows it."""

    provider: str
    id: str
    name: str
    api: str
    contextWindow: int
    maxTokens: int
    reasoning: bool
    input: tuple[str, ...]


@attrs.frozen
class ResolvedModel:
    provider_id: str
    model_id: str
    api: str
    definition: ModelDefinition
    params: Mapping[str, Any]
    provider: ModelProvider


@attrs.frozen
class AgentSpec:
    id: str
    workspace: str | None
    primary: str
    fallbacks: tuple[str, ...]


@attrs.frozen
class RunStores:
    """What a run forks from its generation at its start (mutable copies are its own)."""

    generation: int
    models: Mapping[tuple[str, str], ModelDefinition]
    providers: Mapping[str, ModelProvider]


ProviderFactory = Callable[[str, ProviderConfig], ModelProvider]


def default_provider_factory(provider_id: str, config: ProviderConfig) -> ModelProvider:
    """Build a provider transport for one `models.providers.<id>` entry."""
    if config.api == "local":
        from .llm._local import LocalProvider

        options = config.options or {}
        delay = options.get("deltaDelayMs", 0.0)
        return LocalProvider(
            provider_id, delta_delay_ms=float(delay) if isinstance(delay, int | float) else 0.0
        )
    from .llm._registry import create_provider

    return create_provider(
        provider_id,
        config.api,
        base_url=config.baseUrl,
        api_key=config.apiKey,
        headers=config.headers,
        timeout_seconds=config.timeoutSeconds,
    )


@attrs.frozen
class ModelRuntimeGeneration:
    """A complete, immutable snapshot. Replace it whole; never mutate it."""

    number: int
    built_at_ms: int
    inputs_hash: str
    config: Config
    agents: Mapping[str, AgentSpec]
    default_agent: str
    catalog: tuple[CatalogEntry, ...]
    models: Mapping[tuple[str, str], ModelDefinition]
    aliases: Mapping[str, str]
    providers: Mapping[str, ModelProvider]

    def fork_stores(self) -> RunStores:
        return RunStores(generation=self.number, models=self.models, providers=self.providers)

    def agent(self, agent_id: str | None) -> AgentSpec:
        key = normalize_agent_id(agent_id) if agent_id else self.default_agent
        spec = self.agents.get(key)
        if spec is None:
            raise GenerationError(f"unknown agent id: {agent_id}")
        return spec

    def resolve(self, ref: str) -> ResolvedModel:
        """Resolve `provider/model` (or an alias) to a provider and its model definition."""
        ref = self.aliases.get(ref, ref)
        provider_id, sep, model_id = ref.partition("/")
        if not sep or not model_id:
            raise GenerationError(f"model reference must be provider/model: {ref!r}")
        definition = self.models.get((provider_id, model_id))
        if definition is None:
            raise GenerationError(f"unknown model: {ref}")
        policy = self.config.agents.defaults.models.get(ref)
        pconf = self.config.models.providers.get(provider_id) or DEFAULT_LOCAL_PROVIDER
        return ResolvedModel(
            provider_id=provider_id,
            model_id=model_id,
            api=definition.api or pconf.api,
            definition=definition,
            params=MappingProxyType(dict(policy.params) if policy else {}),
            provider=self.providers[provider_id],
        )


def _model_config(value: str | AgentModelConfig | None) -> AgentModelConfig | None:
    if value is None:
        return None
    if isinstance(value, str):
        return AgentModelConfig(primary=value)
    return value


def build_generation(
    config: Config,
    number: int,
    *,
    provider_factory: ProviderFactory = default_provider_factory,
) -> ModelRuntimeGeneration:
    """Build a generation completely. Raises `GenerationError`; publishes nothing."""
    providers_conf = dict(config.models.providers)
    if not providers_conf:
        providers_conf[LOCAL_PROVIDER_ID] = DEFAULT_LOCAL_PROVIDER
    models: dict[tuple[str, str], ModelDefinition] = {}
    catalog: list[CatalogEntry] = []
    for pid, pconf in sorted(providers_conf.items()):
        for m in pconf.models:
            models[(pid, m.id)] = m
            catalog.append(
                CatalogEntry(
                    provider=pid,
                    id=m.id,
                    name=m.name or m.id,
                    api=m.api or pconf.api,
                    contextWindow=m.contextWindow,
                    maxTokens=m.maxTokens,
                    reasoning=m.reasoning,
                    input=tuple(m.input),
                )
            )
    aliases = {p.alias: ref for ref, p in config.agents.defaults.models.items() if p.alias}
    default_model = _model_config(config.agents.defaults.model)
    if default_model is None or default_model.primary is None:
        if not catalog:
            raise GenerationError("no models are configured (models.providers.*.models)")
        default_model = AgentModelConfig(primary=f"{catalog[0].provider}/{catalog[0].id}")

    def check_ref(ref: str, path: str) -> None:
        target = aliases.get(ref, ref)
        pid, _, mid = target.partition("/")
        if (pid, mid) not in models:
            raise GenerationError(f"{path}: unknown model {ref!r}")

    agents: dict[str, AgentSpec] = {}
    default_agent = DEFAULT_AGENT_ID
    entries = config.agents.entries
    for i, entry in enumerate(entries):
        mc = _model_config(entry.model) or default_model
        primary = mc.primary or default_model.primary
        assert primary is not None
        check_ref(primary, f"agents.list[{i}].model")
        for fb in mc.fallbacks:
            check_ref(fb, f"agents.list[{i}].model.fallbacks")
        aid = normalize_agent_id(entry.id)
        agents[aid] = AgentSpec(
            id=aid,
            workspace=entry.workspace or config.agents.defaults.workspace,
            primary=primary,
            fallbacks=tuple(mc.fallbacks),
        )
        if entry.default or i == 0:
            default_agent = aid if (entry.default or default_agent not in agents) else default_agent
    if not agents:
        assert default_model.primary is not None
        check_ref(default_model.primary, "agents.defaults.model.primary")
        for fb in default_model.fallbacks:
            check_ref(fb, "agents.defaults.model.fallbacks")
        agents[DEFAULT_AGENT_ID] = AgentSpec(
            id=DEFAULT_AGENT_ID,
            workspace=config.agents.defaults.workspace,
            primary=default_model.primary,
            fallbacks=tuple(default_model.fallbacks),
        )
    providers: dict[str, ModelProvider] = {}
    try:
        for pid, pconf in sorted(providers_conf.items()):
            providers[pid] = provider_factory(pid, pconf)
    except (ValueError, ImportError) as exc:
        raise GenerationError(f"models.providers: {exc}") from exc
    return ModelRuntimeGeneration(
        number=number,
        built_at_ms=int(time.time() * 1000),
        inputs_hash=config_hash(config),
        config=config,
        agents=MappingProxyType(agents),
        default_agent=default_agent,
        catalog=tuple(catalog),
        models=MappingProxyType(models),
        aliases=MappingProxyType(aliases),
        providers=MappingProxyType(providers),
    )
