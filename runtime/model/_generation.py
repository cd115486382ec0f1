"""The model runtime generation: one frozen snapshot of what runs need to pick a model.

A generation is built completely off to the side from its inputs (the `Config`, each agent's
auth profile store, the plugin harnesses) and is never mutated; publishing a new one replaces
the reference whole. A failed build raises `GenerationError` and nothing is published. A run
calls `fork_stores()` at its start and keeps what it got to its end.

For each configured agent a generation holds an `AgentGeneration`: the auth template (the
credential each provider resolves to, from `auth.profiles`, the agent's
`auth-profiles.json` and `models.providers.<id>.apiKey`), the provider transports built with
those credentials, and the projected model catalog (`available` says whether the agent has
auth for the model's provider). The generation as a whole holds the model registry, aliases,
the harness registry, its number, when it was built and a hash of its inputs.
`_auth` builds the auth templates and forks each run's `AuthStore`.

A build fails on: a bad config (`ConfigError` upstream), an unknown model reference, a
primary model whose provider has no credential for its agent, a plaintext HTTP official
OpenAI endpoint, a provider that cannot be constructed, or a plugin harness that raises while
selecting an agent's primary runtime.

`GenerationBuilder` is the one activation boundary both the gateway's publisher and the
embedded runtime build through: it reads the inputs (`read_inputs`, blocking I/O), builds
(`build`, pure but for provider construction, fine in a worker thread), and reuses provider
transports across generations when their settings are equal (`ProviderPool`), handing back
the ones no live generation uses any more for closing (`collect_retired`).

Errors in this module:
- `GenerationError`: the inputs cannot become a generation; the previous one keeps serving.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlsplit

import attrs
import msgspec

from ..llm._types import ModelProvider
from ..protocol import ClawlaneError
from ..sessions._sessions import DEFAULT_AGENT_ID, normalize_agent_id
from ._auth import AuthCredential, AuthStore, AuthTemplate, build_auth_template
from ._config import AuthProfilesFile, auth_profiles_path, config_hash, load_auth_profiles
from ._config_types import (
    LOCAL_MODEL_ID,
    LOCAL_PROVIDER_ID,
    AgentModelConfig,
    AgentModelPolicy,
    Config,
    ConfigError,
    ModelDefinition,
    ProviderConfig,
)
from ._harness import (
    HarnessPluginError,
    HarnessRegistry,
    HarnessSelection,
    HarnessSelectionError,
    ProviderRoute,
    check_route_transport,
    resolve_runtime_policy,
)
from ._plugins import PluginSnapshot

DEFAULT_LOCAL_PROVIDER: Final = ProviderConfig(
    api="local", models=[ModelDefinition(id=LOCAL_MODEL_ID, name="clawlane local echo model")]
)


class GenerationError(ClawlaneError):
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
    available: bool = True


@attrs.frozen
class ResolvedModel:
    """A model reference resolved against one generation (and one agent's credentials)."""

    provider_id: str
    model_id: str
    api: str
    definition: ModelDefinition
    params: Mapping[str, Any]
    provider: ModelProvider
    route: ProviderRoute | None = None
    harness: HarnessSelection | None = None
    agent_id: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.provider_id}/{self.model_id}"


@attrs.frozen
class AgentSpec:
    id: str
    workspace: str | None
    primary: str
    fallbacks: tuple[str, ...]


@attrs.frozen
class AgentGeneration:
    """Everything one agent's runs need from a generation."""

    spec: AgentSpec
    auth: AuthTemplate
    providers: Mapping[str, ModelProvider]
    catalog: tuple[CatalogEntry, ...]
    primary_runtime: str | None = None
    warnings: tuple[str, ...] = ()


@attrs.frozen
class RunStores:
    """What a run forks from its generation at its start (mutable copies are its own)."""

    generation: int
    models: Mapping[tuple[str, str], ModelDefinition]
    providers: Mapping[str, ModelProvider]
    auth: AuthStore | None = None
    agent_id: str | None = None
    # Keeps the generation (and so its provider transports) alive while the run holds these.
    owner: Any = attrs.field(default=None, repr=False, eq=False)


ProviderFactory = Callable[[str, ProviderConfig], ModelProvider]


def default_provider_factory(provider_id: str, config: ProviderConfig) -> ModelProvider:
    """Build a provider transport for one `models.providers.<id>` entry."""
    if config.api == "local":
        from ..llm._local import LocalProvider

        options = config.options or {}
        delay = options.get("deltaDelayMs", 0.0)
        fail = options.get("failKind")
        return LocalProvider(
            provider_id,
            delta_delay_ms=float(delay) if isinstance(delay, int | float) else 0.0,
            fail_kind=fail if isinstance(fail, str) else None,
        )
    from ..llm._registry import create_provider

    return create_provider(
        provider_id,
        config.api,
        base_url=config.baseUrl,
        api_key=config.apiKey,
        headers=config.headers,
        timeout_seconds=config.timeoutSeconds,
    )


@attrs.frozen(eq=False, weakref_slot=True)
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
    agent_generations: Mapping[str, AgentGeneration] = attrs.field(
        factory=lambda: MappingProxyType({})
    )
    harnesses: HarnessRegistry = attrs.field(factory=HarnessRegistry)
    plugin_version: int = 0
    warnings: tuple[str, ...] = ()
    _resolved: dict[tuple[str, str | None], ResolvedModel] = attrs.field(
        factory=dict, init=False, repr=False
    )
    """`resolve` results: the generation is immutable, so a model resolves alike each time."""

    def _agent_generation(self, agent_id: str | None) -> AgentGeneration | None:
        return self.agent_generations.get(self.agent(agent_id).id)

    def fork_stores(self, agent_id: str | None = None) -> RunStores:
        """Stores for one run of `agent_id` (default agent when None): the model registry and
        the auth store are the run's own copies; provider transports are shared."""
        ag = self._agent_generation(agent_id)
        return RunStores(
            generation=self.number,
            models=dict(self.models),
            providers=ag.providers if ag is not None else self.providers,
            auth=ag.auth.fork() if ag is not None else None,
            agent_id=ag.spec.id if ag is not None else None,
            owner=self,
        )

    def agent(self, agent_id: str | None) -> AgentSpec:
        key = normalize_agent_id(agent_id) if agent_id else self.default_agent
        spec = self.agents.get(key)
        if spec is None:
            raise GenerationError(f"unknown agent id: {agent_id}")
        return spec

    def catalog_for(self, agent_id: str | None = None) -> tuple[CatalogEntry, ...]:
        """The model catalog projected for one agent (the default agent's is `catalog`)."""
        ag = self._agent_generation(agent_id)
        return ag.catalog if ag is not None else self.catalog

    def resolve(self, ref: str, *, agent_id: str | None = None) -> ResolvedModel:
        """Resolve `provider/model` (or an alias) for an agent (default agent when None) to a
        provider transport, its model definition, its route and the selected harness.

        Raises `GenerationError`: unknown model, no credential for the provider, or no
        harness may run it (an explicit runtime id that is not registered fails closed).
        """
        key = (ref, agent_id)
        known = self._resolved.get(key)
        if known is not None:
            return known
        resolved = self._resolve(ref, agent_id)
        if len(self._resolved) < 1024:
            self._resolved[key] = resolved
        return resolved

    def _resolve(self, ref: str, agent_id: str | None) -> ResolvedModel:
        ref = self.aliases.get(ref, ref)
        provider_id, sep, model_id = ref.partition("/")
        if not sep or not model_id:
            raise GenerationError(f"model reference must be provider/model: {ref!r}")
        definition = self.models.get((provider_id, model_id))
        if definition is None:
            raise GenerationError(f"unknown model: {ref}")
        ag = self._agent_generation(agent_id)
        aid = ag.spec.id if ag is not None else None
        providers = ag.providers if ag is not None else self.providers
        provider = providers.get(provider_id)
        if provider is None:
            raise GenerationError(
                f"no credential for provider {provider_id!r} (agent {aid or self.default_agent}): "
                f"add an auth profile (auth.profiles or auth-profiles.json) or "
                f"models.providers.{provider_id}.apiKey"
            )
        policy = _model_policy(self.config, ref, aid)
        params = MappingProxyType(dict(policy.params) if policy else {})
        pconf = self.config.models.providers.get(provider_id) or DEFAULT_LOCAL_PROVIDER
        route = ProviderRoute.of(provider_id, definition, pconf, params=params)
        try:
            harness = self.harnesses.select(
                resolve_runtime_policy(self.config, provider_id, model_id, agent_id=aid), route
            )
        except HarnessSelectionError as exc:
            raise GenerationError(str(exc)) from exc
        return ResolvedModel(
            provider_id=provider_id,
            model_id=model_id,
            api=definition.api or pconf.api,
            definition=definition,
            params=params,
            provider=provider,
            route=route,
            harness=harness,
            agent_id=aid,
        )

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (status, events)."""
        return {
            "number": self.number,
            "builtAt": self.built_at_ms,
            "inputsHash": self.inputs_hash,
            "defaultAgent": self.default_agent,
            "agents": sorted(self.agents),
            "models": len(self.catalog),
            "pluginVersion": self.plugin_version,
            "harnesses": list(self.harnesses.ids()),
            "warnings": list(self.warnings),
        }


def _model_policy(config: Config, ref: str, agent_id: str | None) -> AgentModelPolicy | None:
    if agent_id is not None:
        for entry in config.agents.entries:
            if normalize_agent_id(entry.id) == agent_id and ref in entry.models:
                return entry.models[ref]
    return config.agents.defaults.models.get(ref)


def _model_config(value: str | AgentModelConfig | None) -> AgentModelConfig | None:
    if value is None:
        return None
    if isinstance(value, str):
        return AgentModelConfig(primary=value)
    return value


# --- inputs ----------------------------------------------------------------------------------


@attrs.frozen
class GenerationInputs:
    """Everything a generation is built from, read at one moment."""

    config: Config
    auth_files: Mapping[str, AuthProfilesFile] = attrs.field(factory=dict)
    auth_hashes: Mapping[str, str] = attrs.field(factory=dict)
    plugins: PluginSnapshot | None = None

    def digest(self) -> str:
        """The inputs hash: config, auth stores and plugin harnesses."""
        h = hashlib.sha256(config_hash(self.config).encode())
        for agent_id in sorted(self.auth_hashes):
            h.update(f"\0auth:{agent_id}:{self.auth_hashes[agent_id]}".encode())
        version = self.plugins.version if self.plugins is not None else 0
        ids = ",".join(sorted(s.id for s in self.plugins.harnesses)) if self.plugins else ""
        h.update(f"\0plugins:{version}:{ids}".encode())
        return h.hexdigest()


def configured_agent_ids(config: Config) -> list[str]:
    """The agents a config defines (`agents.list[].id`, else the default agent)."""
    ids = [normalize_agent_id(e.id) for e in config.agents.entries]
    return ids or [DEFAULT_AGENT_ID]


def read_auth_files(
    state_dir: Path | None, agent_ids: Iterable[str]
) -> tuple[dict[str, AuthProfilesFile], dict[str, str]]:
    """Each agent's auth profile store and its content hash. Blocking I/O; `ConfigError`
    names the file and key of a bad store."""
    files: dict[str, AuthProfilesFile] = {}
    hashes: dict[str, str] = {}
    if state_dir is None:
        return files, hashes
    for agent_id in agent_ids:
        loaded = load_auth_profiles(auth_profiles_path(state_dir, agent_id))
        if loaded is not None:
            files[agent_id], hashes[agent_id] = loaded
    return files, hashes


# --- providers ---------------------------------------------------------------------------------


class ProviderPool:
    """Provider transports shared by generations whose settings for a provider are equal, so
    a reload that does not touch a provider keeps its pooled connections.

    `get` may run in a worker thread; all calls are serialised by an internal lock.
    """

    def __init__(self, factory: ProviderFactory = default_provider_factory) -> None:
        self.factory = factory
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, bytes], ModelProvider] = {}
        self._generations: weakref.WeakSet[ModelRuntimeGeneration] = weakref.WeakSet()

    def get(self, provider_id: str, config: ProviderConfig) -> ModelProvider:
        key = (provider_id, msgspec.msgpack.encode(config))
        with self._lock:
            provider = self._cache.get(key)
            if provider is None:
                provider = self.factory(provider_id, config)
                self._cache[key] = provider
            return provider

    def track(self, generation: ModelRuntimeGeneration) -> None:
        with self._lock:
            self._generations.add(generation)

    def collect_retired(self, keep: Iterable[ModelRuntimeGeneration] = ()) -> list[ModelProvider]:
        """Forget and return the transports no live generation (nor `keep`) uses; the caller
        closes them. Never call it while a build is in progress (a fresh transport of that
        build is in no generation yet)."""
        with self._lock:
            live: set[int] = set()
            for gen in [*self._generations, *keep]:
                for ag in gen.agent_generations.values():
                    live.update(id(p) for p in ag.providers.values())
                live.update(id(p) for p in gen.providers.values())
            retired = [(k, p) for k, p in self._cache.items() if id(p) not in live]
            for k, _p in retired:
                del self._cache[k]
            return [p for _k, p in retired]

    def __len__(self) -> int:
        return len(self._cache)


# --- building ----------------------------------------------------------------------------------


def _is_loopback_url(base_url: str | None) -> bool:
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def _needs_credential(pconf: ProviderConfig) -> bool:
    return not (pconf.api == "local" or pconf.auth == "none" or _is_loopback_url(pconf.baseUrl))


def _with_credential(pconf: ProviderConfig, cred: AuthCredential | None) -> ProviderConfig:
    if cred is None:
        return msgspec.structs.replace(pconf, apiKey=None)
    if cred.kind == "token" and pconf.api == "anthropic-messages":
        headers = {"authorization": f"Bearer {cred.secret}", **(pconf.headers or {})}
        return msgspec.structs.replace(pconf, apiKey=None, headers=headers)
    return msgspec.structs.replace(pconf, apiKey=cred.secret)


def build_generation(
    config: Config,
    number: int,
    *,
    provider_factory: ProviderFactory = default_provider_factory,
    auth_files: Mapping[str, AuthProfilesFile] | None = None,
    plugins: PluginSnapshot | None = None,
    pool: ProviderPool | None = None,
    inputs_hash: str | None = None,
    now_ms: int | None = None,
) -> ModelRuntimeGeneration:
    """Build a generation completely. Raises `GenerationError`; publishes nothing."""
    t_ms = int(time.time() * 1000) if now_ms is None else now_ms
    auth_files = auth_files or {}
    if pool is None:
        pool = ProviderPool(provider_factory)
    build = _Build.of(config)
    agents, spec_paths, default_agent = _agent_specs(build, _default_model(build))
    try:
        harnesses = HarnessRegistry.from_snapshot(plugins)
    except ValueError as exc:
        raise GenerationError(f"plugins: {exc}") from exc
    agent_gens: dict[str, AgentGeneration] = {}
    for aid, spec in agents.items():
        auth = build_auth_template(config, aid, auth_files.get(aid), now_ms=t_ms)
        providers = _agent_providers(build, auth, pool)
        agent_gens[aid] = _agent_generation(
            build, spec, spec_paths[aid], auth, providers, harnesses
        )
    default_gen = agent_gens[default_agent]
    generation = ModelRuntimeGeneration(
        number=number,
        built_at_ms=t_ms,
        inputs_hash=inputs_hash or config_hash(config),
        config=config,
        agents=MappingProxyType(agents),
        default_agent=default_agent,
        catalog=default_gen.catalog,
        models=MappingProxyType(build.models),
        aliases=MappingProxyType(build.aliases),
        providers=default_gen.providers,
        agent_generations=MappingProxyType(agent_gens),
        harnesses=harnesses,
        plugin_version=plugins.version if plugins is not None else 0,
        warnings=tuple(w for ag in agent_gens.values() for w in ag.warnings),
    )
    pool.track(generation)
    return generation


@attrs.frozen
class _Build:
    """What each step of one `build_generation` reads: the providers (the local one when none
    is configured), their models, the catalog and the model aliases."""

    config: Config
    providers: dict[str, ProviderConfig]
    models: dict[tuple[str, str], ModelDefinition]
    catalog: tuple[CatalogEntry, ...]
    aliases: dict[str, str]

    @classmethod
    def of(cls, config: Config) -> _Build:
        """Raises `GenerationError` for a provider's plaintext official endpoint."""
        providers = dict(config.models.providers)
        if not providers:
            providers[LOCAL_PROVIDER_ID] = DEFAULT_LOCAL_PROVIDER
        for pid, pconf in providers.items():
            try:
                check_route_transport(pconf.baseUrl, path=f"models.providers.{pid}.baseUrl")
            except HarnessSelectionError as exc:
                raise GenerationError(str(exc)) from exc
        models: dict[tuple[str, str], ModelDefinition] = {}
        catalog: list[CatalogEntry] = []
        for pid, pconf in sorted(providers.items()):
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
        return cls(config, providers, models, tuple(catalog), aliases)

    def check_ref(self, ref: str, path: str) -> tuple[str, str]:
        """(provider, model) of a model reference or alias; `GenerationError` when unknown."""
        target = self.aliases.get(ref, ref)
        pid, _, mid = target.partition("/")
        if (pid, mid) not in self.models:
            raise GenerationError(f"{path}: unknown model {ref!r}")
        return pid, mid


def _default_model(build: _Build) -> AgentModelConfig:
    """`agents.defaults.model`, its primary defaulting to the catalog's first model."""
    default_model = _model_config(build.config.agents.defaults.model)
    if default_model is None or default_model.primary is None:
        if not build.catalog:
            raise GenerationError("no models are configured (models.providers.*.models)")
        first = build.catalog[0]
        default_model = AgentModelConfig(
            primary=f"{first.provider}/{first.id}",
            fallbacks=default_model.fallbacks if default_model else [],
        )
    return default_model


def _agent_specs(
    build: _Build, default_model: AgentModelConfig
) -> tuple[dict[str, AgentSpec], dict[str, str], str]:
    """Each agent's spec (its model references checked), the config path of its model and
    the default agent's id; the default agent alone when `agents.list` is empty."""
    config = build.config
    agents: dict[str, AgentSpec] = {}
    spec_paths: dict[str, str] = {}
    default_agent = DEFAULT_AGENT_ID
    for i, entry in enumerate(config.agents.entries):
        mc = _model_config(entry.model) or default_model
        primary = mc.primary or default_model.primary
        assert primary is not None
        path = f"agents.list[{i}].model" if entry.model is not None else "agents.defaults.model"
        build.check_ref(primary, path)
        for fb in mc.fallbacks:
            build.check_ref(fb, f"{path}.fallbacks")
        aid = normalize_agent_id(entry.id)
        agents[aid] = AgentSpec(
            id=aid,
            workspace=entry.workspace or config.agents.defaults.workspace,
            primary=primary,
            fallbacks=tuple(mc.fallbacks),
        )
        spec_paths[aid] = path
        if entry.default or i == 0:
            default_agent = aid if (entry.default or default_agent not in agents) else default_agent
    if not agents:
        assert default_model.primary is not None
        build.check_ref(default_model.primary, "agents.defaults.model.primary")
        for fb in default_model.fallbacks:
            build.check_ref(fb, "agents.defaults.model.fallbacks")
        agents[DEFAULT_AGENT_ID] = AgentSpec(
            id=DEFAULT_AGENT_ID,
            workspace=config.agents.defaults.workspace,
            primary=default_model.primary,
            fallbacks=tuple(default_model.fallbacks),
        )
        spec_paths[DEFAULT_AGENT_ID] = "agents.defaults.model"
    return agents, spec_paths, default_agent


def _agent_providers(
    build: _Build, auth: AuthTemplate, pool: ProviderPool
) -> dict[str, ModelProvider]:
    """The transports of the providers an agent has a credential for (or that need none)."""
    agent_providers: dict[str, ModelProvider] = {}
    for pid, pconf in sorted(build.providers.items()):
        cred = auth.credential(pid)
        if cred is None and _needs_credential(pconf):
            continue
        try:
            agent_providers[pid] = pool.get(pid, _with_credential(pconf, cred))
        except (ValueError, ImportError) as exc:
            raise GenerationError(f"models.providers.{pid}: {exc}") from exc
    return agent_providers


def _agent_generation(
    build: _Build,
    spec: AgentSpec,
    path: str,
    auth: AuthTemplate,
    agent_providers: dict[str, ModelProvider],
    harnesses: HarnessRegistry,
) -> AgentGeneration:
    """One agent's part: its primary model must have auth; a fallback without auth and a
    primary model no harness may run are warnings (the run fails closed on them)."""
    aid = spec.id
    primary_pid, primary_mid = build.check_ref(spec.primary, path)
    if primary_pid not in agent_providers:
        raise GenerationError(
            f"{path}: primary model {spec.primary!r} of agent {aid!r} has no auth "
            f"for provider {primary_pid!r} (auth.profiles, "
            f"agents/{aid}/auth-profiles.json or models.providers.{primary_pid}.apiKey)"
        )
    agent_warnings: list[str] = []
    for fb in spec.fallbacks:
        fb_pid, _ = build.check_ref(fb, f"{path}.fallbacks")
        if fb_pid not in agent_providers:
            agent_warnings.append(f"agent {aid}: fallback {fb!r} has no auth for {fb_pid!r}")
    runtime_id: str | None = None
    pconf = build.providers[primary_pid]
    definition = build.models[(primary_pid, primary_mid)]
    policy = _model_policy(build.config, f"{primary_pid}/{primary_mid}", aid)
    route = ProviderRoute.of(
        primary_pid, definition, pconf, params=policy.params if policy else None
    )
    try:
        runtime_id = harnesses.select(
            resolve_runtime_policy(build.config, primary_pid, primary_mid, agent_id=aid), route
        ).id
    except HarnessPluginError as exc:
        raise GenerationError(str(exc)) from exc
    except HarnessSelectionError as exc:
        # Fails closed when a run resolves the model; the build itself is fine.
        agent_warnings.append(str(exc))
    return AgentGeneration(
        spec=spec,
        auth=auth,
        providers=MappingProxyType(agent_providers),
        catalog=tuple(
            attrs.evolve(e, available=e.provider in agent_providers) for e in build.catalog
        ),
        primary_runtime=runtime_id,
        warnings=tuple(agent_warnings),
    )


class GenerationBuilder:
    """The activation boundary: reads a generation's inputs and builds it.

    Shared by the gateway's publisher and the embedded runtime, so both publish the same
    shape. `read_inputs` does blocking I/O (auth profile stores); `build` constructs
    providers (no I/O). Both may run in a worker thread; the caller serialises builds.
    """

    def __init__(
        self,
        *,
        state_dir: Path | None = None,
        provider_factory: ProviderFactory = default_provider_factory,
    ) -> None:
        self.state_dir = state_dir
        self.pool = ProviderPool(provider_factory)

    def auth_files_for(self, config: Config) -> list[Path]:
        """The auth profile stores a config's agents read (watched for changes)."""
        if self.state_dir is None:
            return []
        return [auth_profiles_path(self.state_dir, a) for a in configured_agent_ids(config)]

    def read_inputs(
        self, config: Config, plugins: PluginSnapshot | None = None
    ) -> GenerationInputs:
        """Blocking I/O. Raises `ConfigError` for a bad auth profile store."""
        files, hashes = read_auth_files(self.state_dir, configured_agent_ids(config))
        return GenerationInputs(config, files, hashes, plugins)

    def build(self, inputs: GenerationInputs, number: int) -> ModelRuntimeGeneration:
        """Build generation `number`. Raises `GenerationError`."""
        return build_generation(
            inputs.config,
            number,
            auth_files=inputs.auth_files,
            plugins=inputs.plugins,
            pool=self.pool,
            inputs_hash=inputs.digest(),
        )

    def build_config(
        self, config: Config, number: int, plugins: PluginSnapshot | None = None
    ) -> ModelRuntimeGeneration:
        """`read_inputs` then `build`, with `ConfigError` turned into `GenerationError`."""
        try:
            inputs = self.read_inputs(config, plugins)
        except ConfigError as exc:
            raise GenerationError(str(exc)) from exc
        return self.build(inputs, number)

    def collect_retired(self, keep: Sequence[ModelRuntimeGeneration] = ()) -> list[ModelProvider]:
        return self.pool.collect_retired(keep)
