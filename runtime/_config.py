"""The config file: JSON decoded strictly into typed Structs with OpenClaw's key names.

Unknown keys and wrong types are errors that name the key path (`ConfigError`). String
values may reference environment variables as `${VAR}` (for secrets); a missing variable is
an error naming the key path too.

Errors in this module:
- `ConfigError`: the file cannot be read or decoded; `path` names the offending key.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import msgspec

DEFAULT_PORT: Final = 18789
DEFAULT_TIMEOUT_SECONDS: Final = 172_800
DEFAULT_MAX_CONCURRENT: Final = 8
LOCAL_PROVIDER_ID: Final = "local"
LOCAL_MODEL_ID: Final = "echo"

Api = Literal["openai-completions", "openai-responses", "anthropic-messages", "local"]
NonNegInt = Annotated[int, msgspec.Meta(ge=0)]


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


class GatewayAuthConfig(_Strict, frozen=True):
    mode: Literal["none", "token"] | None = None
    token: str | None = None


class GatewayConfig(_Strict, frozen=True):
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = DEFAULT_PORT
    bind: str = "127.0.0.1"
    auth: GatewayAuthConfig = GatewayAuthConfig()


class AgentRuntimeRef(_Strict, frozen=True):
    id: str | None = None


class ModelCost(_Strict, frozen=True):
    input: float = 0.0
    output: float = 0.0
    cacheRead: float = 0.0
    cacheWrite: float = 0.0


class ModelDefinition(_Strict, frozen=True):
    id: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    api: Api | None = None
    reasoning: bool = False
    input: list[Literal["text", "image"]] = msgspec.field(default_factory=lambda: ["text"])
    cost: ModelCost = ModelCost()
    contextWindow: Annotated[int, msgspec.Meta(gt=0)] = 128_000
    maxTokens: Annotated[int, msgspec.Meta(gt=0)] = 8_192
    agentRuntime: AgentRuntimeRef | None = None
    compat: dict[str, Any] | None = None


class ProviderConfig(_Strict, frozen=True):
    api: Api = "openai-completions"
    baseUrl: str | None = None
    apiKey: str | None = None
    headers: dict[str, str] | None = None
    models: list[ModelDefinition] = []
    timeoutSeconds: Annotated[float, msgspec.Meta(gt=0)] | None = None
    agentRuntime: AgentRuntimeRef | None = None
    options: dict[str, Any] | None = None


class ModelsConfig(_Strict, frozen=True):
    mode: Literal["merge", "replace"] = "merge"
    providers: dict[str, ProviderConfig] = {}


class AgentModelConfig(_Strict, frozen=True):
    primary: str | None = None
    fallbacks: list[str] = []


class AgentModelPolicy(_Strict, frozen=True):
    alias: str | None = None
    params: dict[str, Any] = {}
    agentRuntime: AgentRuntimeRef | None = None


class LlmConfig(_Strict, frozen=True):
    idleTimeoutSeconds: NonNegInt | None = None


class ToolsConfig(_Strict, frozen=True):
    profile: str | None = None
    allow: list[str] | None = None
    deny: list[str] = []


class AgentDefaults(_Strict, frozen=True):
    model: str | AgentModelConfig | None = None
    models: dict[str, AgentModelPolicy] = {}
    timeoutSeconds: NonNegInt | None = None
    """Run timeout; unset means 172,800 s (48 h), 0 means none."""
    maxConcurrent: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_MAX_CONCURRENT
    llm: LlmConfig = LlmConfig()
    workspace: str | None = None
    tools: ToolsConfig | None = None


def run_timeout_seconds(defaults: AgentDefaults) -> float | None:
    """The run timeout in seconds (None: no timeout)."""
    value = DEFAULT_TIMEOUT_SECONDS if defaults.timeoutSeconds is None else defaults.timeoutSeconds
    return float(value) or None


def llm_idle_timeout_seconds(defaults: AgentDefaults, *, cron: bool = False) -> float | None:
    """The LLM idle window: `llm.idleTimeoutSeconds` (0 disables); unset → the configured
    `timeoutSeconds`, else 60 s; cron runs with neither configured have no watchdog."""
    if defaults.llm.idleTimeoutSeconds is not None:
        return float(defaults.llm.idleTimeoutSeconds) or None
    if defaults.timeoutSeconds is not None:
        return float(defaults.timeoutSeconds) or None
    return None if cron else 60.0


class AgentEntry(_Strict, frozen=True):
    id: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    default: bool = False
    workspace: str | None = None
    model: str | AgentModelConfig | None = None
    tools: ToolsConfig | None = None


class AgentsConfig(_Strict, frozen=True):
    defaults: AgentDefaults = AgentDefaults()
    entries: list[AgentEntry] = msgspec.field(default_factory=list, name="list")


class QueueConfig(_Strict, frozen=True):
    mode: Literal["steer", "followup", "collect", "interrupt"] | None = None
    debounceMs: NonNegInt = 500
    cap: Annotated[int, msgspec.Meta(ge=1)] = 20
    drop: Literal["summarize", "old", "new"] = "summarize"
    byChannel: dict[str, Literal["steer", "followup", "collect", "interrupt"]] = {}


class MessagesConfig(_Strict, frozen=True):
    queue: QueueConfig = QueueConfig()


class PluginsConfig(_Strict, frozen=True):
    load: list[str] = []


class Config(_Strict, frozen=True):
    gateway: GatewayConfig = GatewayConfig()
    models: ModelsConfig = ModelsConfig()
    agents: AgentsConfig = AgentsConfig()
    messages: MessagesConfig = MessagesConfig()
    tools: ToolsConfig = ToolsConfig()
    plugins: PluginsConfig = PluginsConfig()


class ConfigError(Exception):
    """The config is unusable. `path` is the dotted key path at fault ("" for the file)."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(
            f"config error at {path}: {message}" if path else f"config error: {message}"
        )
        self.path = path


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PATH_IN_MSG = re.compile(r" - at `\$(.*)`$")


def _substitute(value: Any, path: str, env: dict[str, str]) -> Any:
    if isinstance(value, str):

        def repl(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in env:
                raise ConfigError(f"environment variable {name} is not set", path=path)
            return env[name]

        return _VAR.sub(repl, value)
    if isinstance(value, dict):
        return {k: _substitute(v, f"{path}.{k}" if path else k, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, f"{path}[{i}]", env) for i, v in enumerate(value)]
    return value


def _dotted(msgspec_path: str) -> str:
    # "$.gateway.port" -> "gateway.port"; "$.agents.list[0].id" -> "agents.list[0].id"
    return msgspec_path.lstrip("$").lstrip(".")


def parse_config(raw: Any, *, env: dict[str, str] | None = None) -> Config:
    """Decode a JSON-like value into a `Config`. Raises `ConfigError` naming the key path."""
    if not isinstance(raw, dict):
        raise ConfigError("the config must be a JSON object")
    raw = _substitute(raw, "", dict(os.environ) if env is None else env)
    try:
        config = msgspec.convert(raw, Config)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _PATH_IN_MSG.search(text)
        path = _dotted(m.group(1)) if m else ""
        message = text[: m.start()] if m else text
        raise ConfigError(message, path=path) from exc
    _check(config)
    return config


def _check(config: Config) -> None:
    for pid, provider in config.models.providers.items():
        if provider.api != "local" and not provider.baseUrl:
            raise ConfigError("baseUrl is required", path=f"models.providers.{pid}.baseUrl")
    seen: set[str] = set()
    for i, agent in enumerate(config.agents.entries):
        if agent.id in seen:
            raise ConfigError(f"duplicate agent id {agent.id!r}", path=f"agents.list[{i}].id")
        seen.add(agent.id)


def load_config(path: Path, *, env: dict[str, str] | None = None) -> Config:
    """Read and decode the config file. A missing file is the default config."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    return parse_config(raw, env=env)


_config_encoder: Final = msgspec.json.Encoder(order="sorted")


def config_to_builtins(config: Config) -> dict[str, Any]:
    result = msgspec.to_builtins(config)
    assert isinstance(result, dict)
    return result


def config_hash(config: Config) -> str:
    """A stable content hash of the effective config (sorted keys)."""
    import hashlib

    return hashlib.sha256(_config_encoder.encode(config)).hexdigest()
