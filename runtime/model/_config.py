"""The config file: JSON5 (`_config_text`) decoded strictly into typed Structs with
OpenClaw's key names.

Unknown keys and wrong types are errors that name the key path (`ConfigError`). String
values may reference environment variables as `${VAR}` (for secrets); a missing variable is
an error naming the key path too.

Also here, because they are about the file rather than what is built from it:

- per-agent auth profile stores (`<state-dir>/agents/<agentId>/auth-profiles.json`, OpenClaw's
  `{version, profiles{id: {type: api_key|token|oauth, provider, ...}}, order, lastGood}`),
  decoded by `parse_auth_profiles` / `load_auth_profiles`;
- `ConfigSnapshot` (`read_config_snapshot`): the file as `config.get` shows it: raw text,
  parsed JSON, the decoded config, its content hash (the `baseHash` of optimistic writes),
  and the issues when it does not decode;
- the write side of `config.patch`/`config.set`: `apply_merge_patch` (RFC 7396, arrays of
  `{id}` objects merged by id, destructive array replacement only under `replacePaths`),
  `redact_config`/`restore_redacted` (OpenClaw's `__OPENCLAW_REDACTED__` round trip), and
  `write_config_text` (atomic replace).

Errors in this module:
- `ConfigError`: the file cannot be read or decoded; `path` names the offending key.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import attrs
import msgspec

from ..llm._retry import resolve_idle_timeout
from ._config_text import ConfigSyntaxError, decode_config_text
from ._settings import BlockStreamingChunk, BlockStreamingCoalesce, CompactionSettings

DEFAULT_PORT: Final = 18789
DEFAULT_TIMEOUT_SECONDS: Final = 172_800
DEFAULT_MAX_CONCURRENT: Final = 8
LOCAL_PROVIDER_ID: Final = "local"
LOCAL_MODEL_ID: Final = "echo"

Api = Literal["openai-completions", "openai-responses", "anthropic-messages", "local"]
NonNegInt = Annotated[int, msgspec.Meta(ge=0)]


class _Strict(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    pass


class GatewayAuthRateLimitConfig(_Strict, frozen=True):
    """`gateway.auth.rateLimit`: failed auth attempts per client address (OpenClaw's keys)."""

    maxAttempts: Annotated[int, msgspec.Meta(ge=1)] = 10
    windowMs: NonNegInt = 60_000
    lockoutMs: NonNegInt = 300_000
    exemptLoopback: bool = True


class GatewayAuthConfig(_Strict, frozen=True):
    mode: Literal["none", "token"] | None = None
    token: str | None = None
    rateLimit: GatewayAuthRateLimitConfig = GatewayAuthRateLimitConfig()


class GatewayControlUiConfig(_Strict, frozen=True):
    """`gateway.controlUi`: which browser origins may connect (besides the gateway's own)."""

    allowedOrigins: list[str] = []
    dangerouslyAllowHostHeaderOriginFallback: bool = False


class ChatCompletionsEndpointConfig(_Strict, frozen=True):
    """`gateway.http.endpoints.chatCompletions`: the OpenAI-compatible `/v1/*` routes."""

    enabled: bool = False


class GatewayHttpEndpointsConfig(_Strict, frozen=True):
    chatCompletions: ChatCompletionsEndpointConfig = ChatCompletionsEndpointConfig()


class GatewayHttpConfig(_Strict, frozen=True):
    """`gateway.http`: plain HTTP on the gateway's port (OpenClaw's keys)."""

    endpoints: GatewayHttpEndpointsConfig = GatewayHttpEndpointsConfig()


class GatewayConfig(_Strict, frozen=True):
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = DEFAULT_PORT
    bind: str = "127.0.0.1"
    auth: GatewayAuthConfig = GatewayAuthConfig()
    controlUi: GatewayControlUiConfig = GatewayControlUiConfig()
    http: GatewayHttpConfig = GatewayHttpConfig()
    interruptedRuns: Literal["fail", "rerun"] = "fail"
    """clawlane: what a restart does with runs accepted and not finished before it
    (`actors._recovery`): report them failed, or run them again (once)."""


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
    # How the provider authenticates (OpenClaw's `auth`); "none" (clawlane) marks a provider
    # that needs no credential. Loopback base URLs never need one.
    auth: Literal["api-key", "token", "oauth", "none"] | None = None
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
    compaction: CompactionSettings | None = None
    """`{enabled, reserveTokens, reserveTokensFloor, keepRecentTokens}`."""
    blockStreamingDefault: Literal["on", "off"] | None = None
    blockStreamingBreak: Literal["text_end", "message_end"] | None = None
    blockStreamingChunk: BlockStreamingChunk | None = None
    blockStreamingCoalesce: BlockStreamingCoalesce | None = None
    bootstrapMaxChars: Annotated[int, msgspec.Meta(gt=0)] | None = None
    bootstrapTotalMaxChars: Annotated[int, msgspec.Meta(gt=0)] | None = None
    resources: list[str] = []
    """Resource package roots (skills, prompts, themes, extensions) besides the workspace."""


def run_timeout_seconds(defaults: AgentDefaults) -> float | None:
    """The run timeout in seconds (None: no timeout)."""
    value = DEFAULT_TIMEOUT_SECONDS if defaults.timeoutSeconds is None else defaults.timeoutSeconds
    return float(value) or None


def llm_idle_timeout_seconds(
    defaults: AgentDefaults, *, cron: bool = False, provider_timeout_seconds: float | None = None
) -> float | None:
    """The LLM idle window: `llm.idleTimeoutSeconds` (0 disables); unset → the configured
    `timeoutSeconds`, else 60 s; cron runs with neither configured have no watchdog. A
    provider's `timeoutSeconds` extends the window (`llm._retry.resolve_idle_timeout`)."""
    return resolve_idle_timeout(
        defaults.llm.idleTimeoutSeconds,
        provider_timeout_seconds,
        run_timeout_seconds=defaults.timeoutSeconds,
        cron=cron,
    )


class AuthProfileConfig(_Strict, frozen=True):
    """`auth.profiles.<id>`: OpenClaw keeps only metadata here (`provider`, `mode`, `email`);
    clawlane also accepts the secret itself (`key` / `token`, usually `${VAR}`)."""

    provider: Annotated[str, msgspec.Meta(min_length=1)]
    mode: Literal["api_key", "token", "oauth"] = "api_key"
    email: str | None = None
    key: str | None = None
    token: str | None = None


class AuthConfig(_Strict, frozen=True):
    profiles: dict[str, AuthProfileConfig] = {}
    order: dict[str, list[str]] = {}


class AgentEntry(_Strict, frozen=True):
    id: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    default: bool = False
    workspace: str | None = None
    model: str | AgentModelConfig | None = None
    models: dict[str, AgentModelPolicy] = {}
    auth: AuthConfig | None = None
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


class LoggingConfig(_Strict, frozen=True):
    """OpenClaw's `logging` keys that clawlane honours: the file `logs.tail` reads (one JSON
    object a line) and its level; `maxFileBytes` rotates it."""

    level: Literal["trace", "debug", "info", "warn", "error", "fatal", "silent"] | None = None
    file: str | None = None
    maxFileBytes: Annotated[int, msgspec.Meta(gt=0)] | None = None


class CronSsrfPolicy(_Strict, frozen=True):
    """`cron.webhookSsrfPolicy`: webhooks to loopback/private/link-local addresses are
    refused unless the host is listed here (or private networks are allowed outright)."""

    allowedHostnames: list[str] = []
    dangerouslyAllowPrivateNetwork: bool = False


class CronConfig(_Strict, frozen=True):
    """`cron.*` (OpenClaw's keys; `webhookSecret`, `webhookMaxAttempts` and
    `webhookTimeoutSeconds` are clawlane's)."""

    enabled: bool = True
    maxConcurrentRuns: Annotated[int, msgspec.Meta(ge=1, le=64)] = 1
    skipMissedJobs: bool = False
    webhookToken: str | None = None
    webhookSecret: str | None = None
    webhookMaxAttempts: Annotated[int, msgspec.Meta(ge=1, le=10)] = 4
    webhookTimeoutSeconds: Annotated[float, msgspec.Meta(gt=0, le=300)] = 10.0
    webhookSsrfPolicy: CronSsrfPolicy = CronSsrfPolicy()


class Config(_Strict, frozen=True):
    json_schema: str | None = msgspec.field(default=None, name="$schema")
    """A JSON Schema reference for editors (`clawlane config schema`); ignored, as in
    OpenClaw (the only root key outside the schema)."""
    gateway: GatewayConfig = GatewayConfig()
    auth: AuthConfig = AuthConfig()
    models: ModelsConfig = ModelsConfig()
    agents: AgentsConfig = AgentsConfig()
    messages: MessagesConfig = MessagesConfig()
    tools: ToolsConfig = ToolsConfig()
    plugins: PluginsConfig = PluginsConfig()
    logging: LoggingConfig = LoggingConfig()
    cron: CronConfig = CronConfig()


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
        from ._config_check import first_issue  # issue 14: "did you mean" for typos

        issue = first_issue(raw, env={})
        if issue is not None:
            raise ConfigError(issue.message, path=issue.path) from exc
        text = str(exc)
        m = _PATH_IN_MSG.search(text)
        path = _dotted(m.group(1)) if m else ""
        message = text[: m.start()] if m else text
        if "[...]" in path:
            path = _name_dict_keys(raw, path, message, Config)
        raise ConfigError(message, path=path) from exc
    _check(config)
    return config


_SEGMENT: Final = re.compile(r"\.?([^.\[]+)|\[(\d+|\.\.\.)\]")


def _name_dict_keys(raw: dict[str, Any], path: str, message: str, type_: type[Any]) -> str:
    """msgspec writes a dict value's key as `[...]`; find the key whose value fails with the
    same message (errors only, so trying each entry is fine)."""
    segments = [(m.group(1), m.group(2)) for m in _SEGMENT.finditer(path)]
    named: list[str] = []
    for i, (key, index) in enumerate(segments):
        if index != "...":
            named.append(key if key is not None else f"[{index}]")
            continue
        container = _walk(raw, segments[:i])
        found = None
        if isinstance(container, dict):
            for k in container:
                trial = _with_only(raw, segments[:i], k)
                try:
                    msgspec.convert(trial, type_)
                except msgspec.ValidationError as exc:
                    if str(exc).startswith(message):
                        found = k
                        break
        if found is None:
            return path
        named.append(f"[{found}]" if "." in found or "/" in found else found)
        segments[i] = (found, None)
    out = ""
    for part in named:
        out += part if part.startswith("[") or not out else f".{part}"
    return out


def _walk(raw: Any, segments: list[tuple[str | None, str | None]]) -> Any:
    node = raw
    for key, index in segments:
        if key is not None:
            node = node.get(key) if isinstance(node, dict) else None
        elif index is not None and index.isdigit():
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
    return node


def _with_only(raw: Any, segments: list[tuple[str | None, str | None]], keep: str) -> Any:
    if not segments:
        return {keep: raw[keep]} if isinstance(raw, dict) else raw
    (key, index), rest = segments[0], segments[1:]
    if key is not None and isinstance(raw, dict):
        return {**raw, key: _with_only(raw.get(key), rest, keep)}
    if index is not None and index.isdigit() and isinstance(raw, list):
        i = int(index)
        return [*raw[:i], _with_only(raw[i], rest, keep), *raw[i + 1 :]]
    return raw


def _check(config: Config) -> None:
    for pid, provider in config.models.providers.items():
        if provider.api != "local" and not provider.baseUrl:
            raise ConfigError("baseUrl is required", path=f"models.providers.{pid}.baseUrl")
    seen: set[str] = set()
    for i, agent in enumerate(config.agents.entries):
        if agent.id in seen:
            raise ConfigError(f"duplicate agent id {agent.id!r}", path=f"agents.list[{i}].id")
        seen.add(agent.id)
        for ref in agent.models:
            _check_model_key(ref, f"agents.list[{i}].models")
    for ref in config.agents.defaults.models:
        _check_model_key(ref, "agents.defaults.models")


def _check_model_key(ref: str, path: str) -> None:
    provider, sep, model = ref.partition("/")
    if not sep or not provider or not model:
        raise ConfigError(
            f'model keys are "provider/model" or "provider/*", got {ref!r}', path=path
        )


def load_config(path: Path, *, env: dict[str, str] | None = None) -> Config:
    """Read and decode the config file. A missing file is the default config."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        raw = decode_config_text(data)
    except (ConfigSyntaxError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid JSON5: {exc}") from exc
    return parse_config(raw, env=env)


_config_encoder: Final = msgspec.json.Encoder(order="sorted")


def config_to_builtins(config: Config) -> dict[str, Any]:
    result = msgspec.to_builtins(config)
    assert isinstance(result, dict)
    return result


def config_hash(config: Config) -> str:
    """A stable content hash of the effective config (sorted keys)."""
    return hashlib.sha256(_config_encoder.encode(config)).hexdigest()


# --- auth profile stores (auth-profiles.json) ------------------------------------------------

AUTH_PROFILES_FILENAME: Final = "auth-profiles.json"


class ApiKeyCredential(msgspec.Struct, frozen=True, tag="api_key", tag_field="type"):
    provider: Annotated[str, msgspec.Meta(min_length=1)]
    key: str | None = None
    email: str | None = None


class TokenCredential(msgspec.Struct, frozen=True, tag="token", tag_field="type"):
    provider: Annotated[str, msgspec.Meta(min_length=1)]
    token: str
    expires: int | None = None
    email: str | None = None


class OAuthCredential(msgspec.Struct, frozen=True, tag="oauth", tag_field="type"):
    """OAuth credentials (refreshing them is not clawlane's business: the access token is used
    as a bearer token until `expires`)."""

    provider: Annotated[str, msgspec.Meta(min_length=1)]
    access: str
    refresh: str | None = None
    expires: int | None = None
    email: str | None = None


AuthCredential = ApiKeyCredential | TokenCredential | OAuthCredential


class AuthProfilesFile(msgspec.Struct, frozen=True):
    """One agent's `auth-profiles.json` (OpenClaw's store; unknown keys such as `usageStats`
    details are tolerated: other tools write this file too)."""

    version: int = 1
    profiles: dict[str, AuthCredential] = {}
    order: dict[str, list[str]] = {}
    lastGood: dict[str, str] = {}


def auth_profiles_path(state_dir: Path, agent_id: str) -> Path:
    """`<state-dir>/agents/<agentId>/auth-profiles.json`."""
    return state_dir / "agents" / agent_id / AUTH_PROFILES_FILENAME


def parse_auth_profiles(data: bytes, *, source: str) -> AuthProfilesFile:
    """Decode an auth profile store. `ConfigError.path` is `<source>:<key path>`."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc}", path=source) from exc
    try:
        return msgspec.convert(raw, AuthProfilesFile)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _PATH_IN_MSG.search(text)
        key = _dotted(m.group(1)) if m else ""
        message = text[: m.start()] if m else text
        if "[...]" in key and isinstance(raw, dict):
            key = _name_dict_keys(raw, key, message, AuthProfilesFile)
        raise ConfigError(message, path=f"{source}:{key}" if key else source) from exc


def load_auth_profiles(path: Path) -> tuple[AuthProfilesFile, str] | None:
    """Read an auth profile store and its content hash; None when the file does not exist.
    Blocking I/O (call it from a worker thread on a trio task)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    return parse_auth_profiles(data, source=str(path)), hashlib.sha256(data).hexdigest()


# --- the file as config.get shows it ----------------------------------------------------------

MISSING_FILE_HASH: Final = hashlib.sha256(b"clawlane:config-file-missing").hexdigest()


def hash_config_raw(raw: str | None) -> str:
    """The content hash of the config file text (the `baseHash` of optimistic writes); a
    missing file has its own token, so missing-then-empty is a change."""
    if raw is None:
        return MISSING_FILE_HASH
    return hashlib.sha256(raw.encode()).hexdigest()


@attrs.frozen
class ConfigIssue:
    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@attrs.frozen
class ConfigSnapshot:
    """The config file at one moment: its text, what it decodes to, and its hash.

    `config` is None when the file does not decode (`issues` says why); a missing file is
    valid and decodes to the defaults (`exists` False, `raw` None).
    """

    path: Path | None
    exists: bool
    raw: str | None
    parsed: Any
    resolved: Any
    config: Config | None
    hash: str
    issues: tuple[ConfigIssue, ...] = ()

    @property
    def valid(self) -> bool:
        return self.config is not None

    def require(self) -> Config:
        """The decoded config, or the first issue as a `ConfigError`."""
        if self.config is None:
            issue = self.issues[0] if self.issues else ConfigIssue("", "invalid config")
            raise ConfigError(issue.message, path=issue.path)
        return self.config


def snapshot_from_text(
    raw: str | None, *, path: Path | None = None, env: dict[str, str] | None = None
) -> ConfigSnapshot:
    """Decode config text (None: no file) into a snapshot. Never raises `ConfigError`."""
    digest = hash_config_raw(raw)
    if raw is None:
        return ConfigSnapshot(path, False, None, {}, {}, Config(), digest)
    try:
        parsed = decode_config_text(raw)
    except ConfigSyntaxError as exc:
        issue = ConfigIssue("", f"not valid JSON5: {exc}")
        return ConfigSnapshot(path, True, raw, None, None, None, digest, (issue,))
    resolved: Any = None
    try:
        if isinstance(parsed, dict):
            resolved = _substitute(parsed, "", dict(os.environ) if env is None else env)
        config = parse_config(parsed, env=env)
    except ConfigError as exc:
        message = str(exc).split(": ", 1)[1] if exc.path and ": " in str(exc) else str(exc)
        if not exc.path and message.startswith("config error: "):
            message = message[len("config error: ") :]
        issue = ConfigIssue(exc.path, message)
        return ConfigSnapshot(path, True, raw, parsed, resolved, None, digest, (issue,))
    return ConfigSnapshot(path, True, raw, parsed, resolved, config, digest)


def read_config_snapshot(path: Path, *, env: dict[str, str] | None = None) -> ConfigSnapshot:
    """Read the config file into a snapshot. Blocking I/O. Raises `ConfigError` only when the
    file exists but cannot be read; a bad file is a snapshot with `issues`."""
    try:
        raw: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ConfigError(f"cannot read {path}: {reason}") from exc
    return snapshot_from_text(raw, path=path, env=env)


def config_text(value: Any) -> str:
    """JSON text for the config file: two-space indent, newline at the end."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n"


def write_config_text(path: Path, text: str) -> None:
    """Replace the file atomically (temp file in the same directory, fsync, rename), mode 0600.
    Blocking I/O."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# --- merge patch (config.patch) --------------------------------------------------------------

_BLOCKED_KEYS: Final = frozenset({"__proto__", "constructor", "prototype"})


def _id_objects(items: list[Any]) -> bool:
    return all(isinstance(i, dict) and isinstance(i.get("id"), str) and i["id"] for i in items)


def apply_merge_patch(base: Any, patch: Any, *, replace_paths: Iterable[str] = ()) -> Any:
    """RFC 7396 merge patch, as OpenClaw's `config.patch` applies it.

    Objects merge recursively and `null` deletes a key. Arrays of objects with string `id`s
    merge entry by entry (by id; new ids are appended). Any other array replaces the old one,
    but replacing a non-empty array by one that drops entries is destructive: its path
    (`agents.list`, `agents.list[].models`, ...) must be in `replace_paths`, otherwise
    `ConfigError` names it. A path in `replace_paths` always replaces wholesale.
    """
    return _merge(base, patch, "", frozenset(replace_paths))


def _merge(base: Any, patch: Any, path: str, replace: frozenset[str]) -> Any:
    if not isinstance(patch, dict):
        return patch
    result: dict[str, Any] = dict(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if key in _BLOCKED_KEYS:
            continue
        child = f"{path}.{key}" if path else key
        if value is None:
            result.pop(key, None)
            continue
        old = result.get(key)
        if isinstance(value, list) and isinstance(old, list) and child not in replace:
            if _id_objects(old) and _id_objects(value):
                merged = list(old)
                index = {item["id"]: i for i, item in enumerate(merged)}
                for item in value:
                    at = index.get(item["id"])
                    if at is None:
                        index[item["id"]] = len(merged)
                        merged.append(item)
                    else:
                        merged[at] = _merge(merged[at], item, f"{child}[]", replace)
                result[key] = merged
                continue
            if any(item not in value for item in old):
                raise ConfigError(
                    "replacing this array drops entries; list the path in replacePaths to "
                    "replace it",
                    path=child,
                )
            result[key] = value
            continue
        if isinstance(value, dict):
            result[key] = _merge(old if isinstance(old, dict) else {}, value, child, replace)
            continue
        result[key] = value
    return result


# --- redaction (config.get) ------------------------------------------------------------------

REDACTED_SENTINEL: Final = "__OPENCLAW_REDACTED__"
_SENSITIVE_KEY: Final = re.compile(
    r"(?:api[-_]?key|token|secret|password|passwd|credential|authorization|cookie|"
    r"private[-_]?key)$|^key$",
    re.IGNORECASE,
)
_PLACEHOLDER: Final = re.compile(r"^\$\{[^}]*\}$")


def is_sensitive_key(key: str) -> bool:
    """Whether a config key holds a secret (`apiKey`, `token`, `key`, `password`, ...)."""
    return bool(_SENSITIVE_KEY.search(key))


def redact_config(value: Any) -> Any:
    """A copy with every secret string replaced by `REDACTED_SENTINEL` (`${VAR}` references
    are kept: they are not secrets)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(v, str) and is_sensitive_key(str(k)) and not _PLACEHOLDER.match(v):
                out[k] = REDACTED_SENTINEL
            else:
                out[k] = redact_config(v)
        return out
    if isinstance(value, list):
        return [redact_config(v) for v in value]
    return value


def restore_redacted(value: Any, original: Any, path: str = "") -> Any:
    """Put the original secrets back where a client sent `REDACTED_SENTINEL` (a config read
    with `config.get` and written back). `ConfigError` when there is no original."""
    if value == REDACTED_SENTINEL:
        if isinstance(original, str):
            return original
        raise ConfigError("redacted value has no original to restore; send the secret", path=path)
    if isinstance(value, dict):
        orig = original if isinstance(original, dict) else {}
        return {
            k: restore_redacted(v, orig.get(k), f"{path}.{k}" if path else str(k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        olist = original if isinstance(original, list) else []
        out = []
        for i, v in enumerate(value):
            o = olist[i] if i < len(olist) else None
            if isinstance(v, dict) and isinstance(v.get("id"), str):
                o = next((x for x in olist if isinstance(x, dict) and x.get("id") == v["id"]), o)
            out.append(restore_redacted(v, o, f"{path}[{i}]"))
        return out
    return value
