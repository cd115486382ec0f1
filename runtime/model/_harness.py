"""Agent harnesses and runtime selection: which loop runs a model turn.

The built-in runtime is `openclaw` (this package's own attempt loop, `run_agent`); plugins
register more with `PluginApi.register_harness(HarnessSpec(id, supports, priority, run))`.

Policy comes from config, scoped to the model or its provider (`agentRuntime: {id}`), first
match wins:

1. the exact model: `agents.list[].models["p/m"]`, then `agents.defaults.models["p/m"]`, then
   the model's entry in `models.providers.<p>.models[]`;
2. the provider wildcard `agents.list[].models["p/*"]`, then `agents.defaults.models["p/*"]`;
3. the provider: `models.providers.<p>.agentRuntime`;
4. otherwise `auto`.

Ids are normalised: `pi` → `openclaw`, `codex-app-server` → `codex`, unset or `default` →
`auto`. Then:

- `openclaw` runs the built-in loop;
- any other explicit id must be a registered plugin harness that supports the route, or
  selection fails closed with `HarnessSelectionError` (never a silent fall back);
- `auto` asks each plugin harness `supports(route)` and picks the highest `priority` (ties by
  id), else `openclaw`. OpenAI routes are the exception: `auto` may pick `codex` (and only
  `codex`) for an exact official HTTPS route (`https://api.openai.com/v1` Platform Responses
  or the ChatGPT `https://chatgpt.com/backend-api` Responses route, api `openai-responses`)
  with no authored request behaviour (headers, `compat`, request params); completions
  adapters, custom endpoints and authored routes stay on `openclaw`. A provider id or a model
  id alone never selects a harness.
- Plaintext `http://` to an official OpenAI host is rejected (`check_route_transport`).

A harness runs a whole run's attempt loop with the contract of `run_agent`:
`await spec.run(inp: AgentRunInput, emit: Emit, progress: RunProgress)`, writing into
`progress` as it goes and raising `ProviderError` when the model fails.

Errors in this module:
- `HarnessSelectionError`: the policy names a harness that is not registered, or one that
  does not support the route, or a route is forbidden; the message says which and where.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import attrs

from ..loop._agent import AgentRunInput, Emit, RunProgress, run_agent
from ..protocol import ClawlaneError
from ._config_types import Config, ModelDefinition, ProviderConfig
from ._plugins import RESERVED_HARNESS_IDS, HarnessSpec, PluginSnapshot

__all__ = [
    "AUTO",
    "BUILTIN_HARNESS_ID",
    "HarnessPluginError",
    "HarnessRegistry",
    "HarnessSelection",
    "HarnessSelectionError",
    "ProviderRoute",
    "RuntimePolicy",
    "check_route_transport",
    "classify_openai_route",
    "normalize_runtime_id",
    "resolve_runtime_policy",
]

log = logging.getLogger("clawlane.harness")

BUILTIN_HARNESS_ID: Final = "openclaw"
CODEX_HARNESS_ID: Final = "codex"
AUTO: Final = "auto"
RUNTIME_ALIASES: Final = MappingProxyType({"pi": BUILTIN_HARNESS_ID, "codex-app-server": "codex"})
OPENAI_PROVIDER_IDS: Final = frozenset({"openai", "openai-codex"})
OPENAI_PLATFORM_HOST: Final = "api.openai.com"
CHATGPT_HOST: Final = "chatgpt.com"
_PLATFORM_PATHS: Final = frozenset({"/v1", "/v1/"})
_CHATGPT_PATHS: Final = frozenset(
    {"/backend-api", "/backend-api/", "/backend-api/codex", "/backend-api/codex/"}
)

OpenAIRouteKind = Literal["platform-responses", "chatgpt-responses", "other-openai", "not-openai"]
PolicySource = Literal["agent-model", "model", "provider-model", "wildcard", "provider", "default"]
SelectionReason = Literal[
    "forced_builtin",
    "forced_plugin",
    "auto_plugin",
    "auto_builtin",
    "implicit_codex",
    "openai_builtin",
]


class HarnessSelectionError(ClawlaneError):
    """No harness may run this route under this policy (fail closed)."""


class HarnessPluginError(HarnessSelectionError):
    """A plugin harness raised in `supports()`."""


@attrs.frozen
class ProviderRoute:
    """What a harness is asked about: the effective provider route of one model.

    Field names follow OpenClaw's `supports({provider, modelId})`.
    """

    provider: str
    modelId: str
    api: str
    baseUrl: str | None = None
    authoredOverride: bool = False

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.modelId}"

    @classmethod
    def of(
        cls,
        provider_id: str,
        model: ModelDefinition,
        provider: ProviderConfig,
        *,
        params: Mapping[str, Any] | None = None,
    ) -> ProviderRoute:
        authored = bool(provider.headers or model.compat or params)
        return cls(
            provider=provider_id,
            modelId=model.id,
            api=model.api or provider.api,
            baseUrl=provider.baseUrl,
            authoredOverride=authored,
        )


@attrs.frozen
class RuntimePolicy:
    """The configured runtime for one model: a normalised id and where it came from."""

    id: str
    source: PolicySource = "default"
    path: str | None = None

    @property
    def explicit(self) -> bool:
        return self.id != AUTO


def normalize_runtime_id(value: str | None) -> str:
    """`pi` → `openclaw`, `codex-app-server` → `codex`, unset/blank/`default` → `auto`."""
    text = (value or "").strip().lower()
    if not text or text in ("default", AUTO):
        return AUTO
    return RUNTIME_ALIASES.get(text, text)


def resolve_runtime_policy(
    config: Config, provider_id: str, model_id: str, *, agent_id: str | None = None
) -> RuntimePolicy:
    """The runtime policy of `provider_id/model_id` (see the module docstring for the order)."""
    ref = f"{provider_id}/{model_id}"
    wildcard = f"{provider_id}/*"
    entry_index, entry = _agent_entry(config, agent_id)
    scoped: list[tuple[PolicySource, str, Mapping[str, Any]]] = []
    if entry is not None:
        scoped.append(("agent-model", f"agents.list[{entry_index}].models", entry.models))
    scoped.append(("model", "agents.defaults.models", config.agents.defaults.models))
    for source, base, table in scoped:
        policy = table.get(ref)
        if policy is not None and policy.agentRuntime is not None and policy.agentRuntime.id:
            return _policy(policy.agentRuntime.id, source, f"{base}[{ref}].agentRuntime.id")
    pconf = config.models.providers.get(provider_id)
    if pconf is not None:
        for i, m in enumerate(pconf.models):
            if m.id == model_id and m.agentRuntime is not None and m.agentRuntime.id:
                path = f"models.providers.{provider_id}.models[{i}].agentRuntime.id"
                return _policy(m.agentRuntime.id, "provider-model", path)
    for _source, base, table in scoped:
        policy = table.get(wildcard)
        if policy is not None and policy.agentRuntime is not None and policy.agentRuntime.id:
            return _policy(
                policy.agentRuntime.id, "wildcard", f"{base}[{wildcard}].agentRuntime.id"
            )
    if pconf is not None and pconf.agentRuntime is not None and pconf.agentRuntime.id:
        path = f"models.providers.{provider_id}.agentRuntime.id"
        return _policy(pconf.agentRuntime.id, "provider", path)
    return RuntimePolicy(AUTO)


def _policy(raw: str, source: PolicySource, path: str) -> RuntimePolicy:
    normalized = normalize_runtime_id(raw)
    return RuntimePolicy(normalized, source if normalized != AUTO else "default", path)


def _agent_entry(config: Config, agent_id: str | None) -> tuple[int, Any]:
    if agent_id is None:
        return -1, None
    for i, entry in enumerate(config.agents.entries):
        if entry.id == agent_id or entry.id.strip().lower() == agent_id:
            return i, entry
    return -1, None


def classify_openai_route(route: ProviderRoute) -> OpenAIRouteKind:
    """Whether a route is OpenAI's, and if so whether it is an exact official Responses route."""
    url = urlsplit(route.baseUrl) if route.baseUrl else None
    host = (url.hostname or "").lower() if url else ""
    is_openai = route.provider in OPENAI_PROVIDER_IDS or host in (
        OPENAI_PLATFORM_HOST,
        CHATGPT_HOST,
    )
    if not is_openai:
        return "not-openai"
    if url is None or route.api != "openai-responses" or url.scheme != "https" or url.port:
        return "other-openai"
    if url.query or url.fragment or url.username or url.password:
        return "other-openai"
    if host == OPENAI_PLATFORM_HOST and url.path in _PLATFORM_PATHS:
        return "platform-responses"
    if host == CHATGPT_HOST and url.path in _CHATGPT_PATHS:
        return "chatgpt-responses"
    return "other-openai"


def check_route_transport(base_url: str | None, *, path: str = "baseUrl") -> None:
    """Reject plaintext HTTP to an official OpenAI host (`HarnessSelectionError`)."""
    if not base_url:
        return
    url = urlsplit(base_url)
    host = (url.hostname or "").lower()
    if url.scheme == "http" and host in (OPENAI_PLATFORM_HOST, CHATGPT_HOST):
        raise HarnessSelectionError(
            f"{path}: plaintext HTTP to the official OpenAI endpoint {base_url!r} is rejected; "
            "use https://"
        )


@attrs.frozen
class HarnessSelection:
    """The harness chosen for one route, and why. `run` dispatches the whole run to it."""

    id: str
    reason: SelectionReason
    policy: RuntimePolicy
    spec: HarnessSpec | None = None

    @property
    def builtin(self) -> bool:
        return self.spec is None

    async def run(self, inp: AgentRunInput, emit: Emit, progress: RunProgress) -> RunProgress:
        """Run the attempt loop on this harness (the built-in one is `run_agent`)."""
        if self.spec is None:
            return await run_agent(inp, emit, progress)
        result = await self.spec.run(inp, emit, progress)
        return result if isinstance(result, RunProgress) else progress


@attrs.frozen
class HarnessRegistry:
    """The harnesses a generation may select: the built-in one plus plugin harnesses."""

    plugins: Mapping[str, HarnessSpec] = attrs.field(factory=lambda: MappingProxyType({}))
    version: int = 0

    @classmethod
    def of(cls, harnesses: Iterable[HarnessSpec], *, version: int = 0) -> HarnessRegistry:
        table: dict[str, HarnessSpec] = {}
        for spec in harnesses:
            if spec.id in RESERVED_HARNESS_IDS or spec.id in RUNTIME_ALIASES or spec.id == AUTO:
                raise ValueError(f"harness id {spec.id!r} is reserved")
            if spec.id in table:
                raise ValueError(f"harness id {spec.id!r} is registered twice")
            table[spec.id] = spec
        return cls(MappingProxyType(table), version)

    @classmethod
    def from_snapshot(cls, snapshot: PluginSnapshot | None) -> HarnessRegistry:
        if snapshot is None:
            return cls()
        return cls.of(snapshot.harnesses, version=snapshot.version)

    def ids(self) -> tuple[str, ...]:
        return (BUILTIN_HARNESS_ID, *sorted(self.plugins))

    def select(self, policy: RuntimePolicy, route: ProviderRoute) -> HarnessSelection:
        """Pick the harness for `route` under `policy`. Raises `HarnessSelectionError`."""
        check_route_transport(route.baseUrl, path=f"models.providers.{route.provider}.baseUrl")
        if policy.id == BUILTIN_HARNESS_ID:
            return HarnessSelection(BUILTIN_HARNESS_ID, "forced_builtin", policy)
        if policy.id != AUTO:
            spec = self.plugins.get(policy.id)
            where = f" (set by {policy.path})" if policy.path else ""
            if spec is None:
                raise HarnessSelectionError(
                    f'agent runtime "{policy.id}"{where} is not registered; registered '
                    f"runtimes: {', '.join(self.ids())}"
                )
            if not self._supports(spec, route):
                raise HarnessSelectionError(
                    f'agent runtime "{policy.id}"{where} does not support {route.ref}'
                )
            return HarnessSelection(spec.id, "forced_plugin", policy, spec)
        kind = classify_openai_route(route)
        if kind != "not-openai":
            codex = self.plugins.get(CODEX_HARNESS_ID)
            if (
                kind in ("platform-responses", "chatgpt-responses")
                and not route.authoredOverride
                and codex is not None
                and self._supports(codex, route)
            ):
                return HarnessSelection(CODEX_HARNESS_ID, "implicit_codex", policy, codex)
            return HarnessSelection(BUILTIN_HARNESS_ID, "openai_builtin", policy)
        supported = [s for s in self.plugins.values() if self._supports(s, route)]
        if supported:
            best = min(supported, key=lambda s: (-s.priority, s.id))
            return HarnessSelection(best.id, "auto_plugin", policy, best)
        return HarnessSelection(BUILTIN_HARNESS_ID, "auto_builtin", policy)

    @staticmethod
    def _supports(spec: HarnessSpec, route: ProviderRoute) -> bool:
        try:
            return bool(spec.supports(route))
        except Exception as exc:
            raise HarnessPluginError(
                f"agent harness {spec.id!r} failed in supports({route.ref}): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
