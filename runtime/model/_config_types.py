"""The config file's types: frozen Structs with OpenClaw's key names (unknown keys are errors),
their defaults, and the two ways a problem names its key path (`ConfigError`, raised;
`ConfigIssue`, reported). `_config_check` decodes and checks documents against them;
`_config` reads, snapshots and writes the file.

Errors in this module:
- `ConfigError`: the config is unusable; `path` names the offending key.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import attrs
import msgspec

from ..llm._retry import resolve_idle_timeout
from ..protocol import ClawlaneError
from ..telemetry import DiagnosticsConfig
from ._config_heartbeat import HeartbeatConfig
from ._config_memory import MemoryConfig
from ._settings import BlockStreamingChunk, BlockStreamingCoalesce, CompactionSettings

DEFAULT_PORT: Final = 18789
DEFAULT_TIMEOUT_SECONDS: Final = 172_800
DEFAULT_MAX_CONCURRENT: Final = 8
DEFAULT_IDLE_CONTEXTS_MAX_BYTES: Final = 128 * 1024 * 1024
DEFAULT_IDLE_SESSION_SECONDS: Final = 600
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
    idleContextsMaxBytes: Annotated[int, msgspec.Meta(ge=0, le=2**50)] = (
        DEFAULT_IDLE_CONTEXTS_MAX_BYTES
    )
    """clawlane: what idle sessions keep of their contexts in memory, together (estimated
    bytes; `actors._supervisor.IdleContexts`). Past it the least recently used let theirs go
    and load it from the store at their next run (one still writing its last turn goes at
    the next session to go idle); 0 keeps none. Each generation sets it again."""
    idleSessionSeconds: Annotated[int, msgspec.Meta(ge=1, le=31_536_000)] = (
        DEFAULT_IDLE_SESSION_SECONDS
    )
    """clawlane: how long a session stays loaded after its last activity
    (`actors.Supervisor.reap_idle`, checked every 30 s). Then its actor and context are let
    go (its next request loads it from the store) and, in a cluster, its lease, so the
    session may move to another node. Each generation sets it again."""


class AgentRuntimeRef(_Strict, frozen=True):
    id: str | None = None


class PricingTier(_Strict, frozen=True):
    """One tier of `cost.tieredPricing`: the rates (USD per million tokens) of a request
    whose prompt (input + cacheRead + cacheWrite) is in `range`, `[start, end)` or
    `[start]` (open-ended)."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    range: Annotated[list[float | None], msgspec.Meta(min_length=1, max_length=2)]


class ModelCost(_Strict, frozen=True):
    """A model's price (`models.providers.<id>.models[].cost`), USD per million tokens, as
    OpenClaw's: a field set (zero included) prices the model; none set and no tiers, and
    its usage counts as missing cost (`runtime.usage`)."""

    input: float | None = None
    output: float | None = None
    cacheRead: float | None = None
    cacheWrite: float | None = None
    tieredPricing: list[PricingTier] | None = None


class ModelDefinition(_Strict, frozen=True):
    id: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    api: Api | None = None
    reasoning: bool = False
    input: list[Literal["text", "image"]] = msgspec.field(default_factory=lambda: ["text"])
    cost: ModelCost | None = None
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


ToolProfile = Literal["minimal", "coding", "messaging", "full"]


class ToolProviderPolicyConfig(_Strict, frozen=True):
    """`tools.byProvider.<provider or provider/model>` (also an agent's): OpenClaw's keys."""

    profile: ToolProfile | None = None
    allow: list[str] | None = None
    alsoAllow: list[str] | None = None
    deny: list[str] | None = None


class ToolsConfig(_Strict, frozen=True):
    """`tools` (global, `agents.defaults.tools`, an agent's): OpenClaw's policy keys. Each
    list names OpenClaw tools, aliases, `group:` names, `*`/globs, `group:plugins` or
    `bundle-mcp` (`runtime.tools._policy`); `allow` and `alsoAllow` exclude each other."""

    profile: ToolProfile | None = None
    allow: list[str] | None = None
    alsoAllow: list[str] | None = None
    deny: list[str] | None = None
    byProvider: dict[str, ToolProviderPolicyConfig] = {}
    exec: ToolsExecConfig | None = None
    """An agent's `tools.exec`: its exec policy keys override the global ones, key by key."""


PositiveInt = Annotated[int, msgspec.Meta(gt=0)]


class SsrfPolicyConfig(_Strict, frozen=True):
    """`tools.web.fetch.ssrfPolicy` (OpenClaw's keys): which non-public targets `web_fetch`
    may reach. `allowedHostnames` names exact hosts exempt from the private-network checks;
    `blockedHostnames` (exact, or `*.example.com`) refuses hosts before anything else."""

    dangerouslyAllowPrivateNetwork: bool = False
    allowRfc2544BenchmarkRange: bool = False
    allowIpv6UniqueLocalRange: bool = False
    allowedHostnames: list[str] = []
    blockedHostnames: list[str] = []


class WebFetchConfig(_Strict, frozen=True):
    """`tools.web.fetch` (OpenClaw's keys; unset means OpenClaw's default: maxChars and
    maxCharsCap 20,000, maxResponseBytes 750,000 clamped to 32,000–10,000,000, timeoutSeconds
    30, cacheTtlMinutes 15, maxRedirects 3). `provider` (a fallback fetch provider) and
    `useTrustedEnvProxy` are accepted but clawlane has neither: it always fetches directly,
    resolving and checking every address itself."""

    enabled: bool = True
    provider: str | None = None
    maxChars: PositiveInt | None = None
    maxCharsCap: PositiveInt | None = None
    maxResponseBytes: PositiveInt | None = None
    timeoutSeconds: PositiveInt | None = None
    cacheTtlMinutes: Annotated[float, msgspec.Meta(ge=0)] | None = None
    maxRedirects: NonNegInt | None = None
    userAgent: str | None = None
    headers: dict[str, str] = {}
    readability: bool = True
    useTrustedEnvProxy: bool = False
    ssrfPolicy: SsrfPolicyConfig = SsrfPolicyConfig()


class WebSearchConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """`tools.web.search` (OpenClaw's keys; like OpenClaw's, other keys are let through).
    clawlane has no search provider: `web_search` is offered unless `enabled` is false, and
    a call says what is missing."""

    enabled: bool = True
    provider: str | None = None
    maxResults: PositiveInt | None = None
    timeoutSeconds: PositiveInt | None = None
    cacheTtlMinutes: Annotated[float, msgspec.Meta(ge=0)] | None = None


class ToolsWebConfig(_Strict, frozen=True):
    """`tools.web`: the web tools (global only, as in OpenClaw)."""

    search: WebSearchConfig = WebSearchConfig()
    fetch: WebFetchConfig = WebFetchConfig()


class ToolSearchConfig(_Strict, frozen=True):
    """`tools.toolSearch` as an object (OpenClaw's keys, read by
    `runtime.tools.tool_search_settings`): `enabled` (unset: on when any other key is set),
    `mode` (`tools`; `directory`; `code`, which clawlane runs as `tools`, as OpenClaw does
    where it cannot start its code bridge), `searchDefaultLimit`, `maxSearchLimit`;
    `codeTimeoutMs` is accepted."""

    enabled: bool | None = None
    mode: Literal["code", "tools", "directory"] | None = None
    codeTimeoutMs: PositiveInt | None = None
    searchDefaultLimit: PositiveInt | None = None
    maxSearchLimit: PositiveInt | None = None


class ToolsExecConfig(_Strict, frozen=True):
    """`tools.exec` (OpenClaw's keys). clawlane acts on `timeoutSeconds` (default 1800, 0:
    none), `backgroundMs` (10,000, clamped to 10-120,000), `cleanupMs` (1,800,000, clamped
    to 1 min-3 h), `notifyOnExit` and `notifyOnExitEmptySuccess`, and the exec policy
    (`runtime.tools._exec_policy`): `mode` or the older `security` + `ask` (not both),
    `askFallback`, `strictInlineEval`, `safeBins`, `safeBinTrustedDirs`, `autoAllowSkills`
    (accepted; clawlane has no skill bins), `grantExpiryDays` (the default lifetime of a
    standing grant a cron run's allow-always mints; unset: until revoked). It accepts the
    others (hosts, nodes, the reviewer, `applyPatch`) and runs every command on the gateway
    host."""

    timeoutSeconds: NonNegInt | None = None
    backgroundMs: PositiveInt | None = None
    cleanupMs: PositiveInt | None = None
    notifyOnExit: bool = True
    notifyOnExitEmptySuccess: bool = False
    host: Literal["auto", "sandbox", "gateway", "node"] | None = None
    mode: Literal["deny", "allowlist", "ask", "auto", "full"] | None = None
    security: Literal["deny", "allowlist", "full"] | None = None
    ask: Literal["off", "on-miss", "always"] | None = None
    askFallback: Literal["deny", "allowlist", "full"] | None = None
    autoAllowSkills: bool | None = None
    node: str | None = None
    pathPrepend: list[str] | None = None
    safeBins: list[str] | None = None
    safeBinTrustedDirs: list[str] | None = None
    safeBinProfiles: dict[str, Any] | None = None
    approvalRunningNoticeMs: NonNegInt | None = None
    strictInlineEval: bool | None = None
    grantExpiryDays: Annotated[int, msgspec.Meta(ge=1, le=3650)] | None = None
    commandHighlighting: bool | None = None
    reviewer: dict[str, Any] | None = None
    applyPatch: dict[str, Any] | None = None


class ToolsSessionsConfig(_Strict, frozen=True):
    """`tools.sessions`: which sessions the session tools reach (`visibility`: `self`, `tree`:
    this session and those it spawned, all of its agent's from the agent's main session,
    `agent`, `all`, the default)."""

    visibility: Literal["self", "tree", "agent", "all"] = "all"


class AgentToAgentConfig(_Strict, frozen=True):
    """`tools.agentToAgent`: whether the session tools may cross agents (`enabled`, default
    true) and between which (`allow`: ids or `*` patterns both agents must match; empty:
    any)."""

    enabled: bool = True
    allow: list[str] | None = None


class SubagentToolPolicy(_Strict, frozen=True):
    """`tools.subagents.tools`: the tools subagent sessions are offered beyond OpenClaw's
    fixed denials (`allow`, or `alsoAllow` on top of everything else, and `deny`)."""

    allow: list[str] | None = None
    alsoAllow: list[str] | None = None
    deny: list[str] | None = None


class ToolsSubagentsConfig(_Strict, frozen=True):
    """`tools.subagents` (OpenClaw's keys)."""

    tools: SubagentToolPolicy = SubagentToolPolicy()


class SpawnAttachmentsConfig(_Strict, frozen=True):
    """`tools.sessions_spawn.attachments` (OpenClaw's keys): `sessions_spawn`'s inline
    attachments are staged for the child only when `enabled`, within the limits (unset:
    OpenClaw's 5 MiB in all, 50 files, 1 MiB a file); `retainOnSessionKeep` keeps them once
    the child's end is told when its session is kept (`runtime.agent._spawn_options`)."""

    enabled: bool = False
    maxTotalBytes: PositiveInt | None = None
    maxFiles: PositiveInt | None = None
    maxFileBytes: PositiveInt | None = None
    retainOnSessionKeep: bool | None = None


class ToolsSessionsSpawnConfig(_Strict, frozen=True):
    """`tools.sessions_spawn`."""

    attachments: SpawnAttachmentsConfig = SpawnAttachmentsConfig()


class GlobalToolsConfig(ToolsConfig, frozen=True):
    """The root `tools`: the policy keys every scope has, and the global tool settings.
    `toolSearch`: OpenClaw's Tool Search, on when unset (most tool schemas deferred behind
    `tool_search` / `tool_describe` / `tool_call`); `false` offers every schema directly
    (`runtime.tools._search`). Global only, as OpenClaw's. `updatePlan`:
    `false` removes `progress_card` (once `update_plan`) from every run, as OpenClaw's."""

    web: ToolsWebConfig = ToolsWebConfig()
    exec: ToolsExecConfig = ToolsExecConfig()
    toolSearch: bool | ToolSearchConfig | None = None
    updatePlan: bool | None = None
    sessions: ToolsSessionsConfig = ToolsSessionsConfig()
    agentToAgent: AgentToAgentConfig = AgentToAgentConfig()
    subagents: ToolsSubagentsConfig = ToolsSubagentsConfig()
    sessions_spawn: ToolsSessionsSpawnConfig = ToolsSessionsSpawnConfig()


class SubagentsConfig(_Strict, frozen=True):
    """`agents.defaults.subagents` (OpenClaw's keys): how `sessions_spawn` may spawn.
    `maxSpawnDepth` (1-5, default 5): the deepest a subagent may be (a session at that depth
    spawns no more); `maxChildrenPerAgent` (1-20, default 5): active children per session;
    `maxConcurrent` (default 8): the `subagent` lane's slots; `runTimeoutSeconds` (0: none):
    a child run's timeout unless the call sets one; `allowAgents`: the other agents a child
    may run as (`["*"]`: any; default: the same agent only); `model`: the children's model.
    `announceTimeoutMs` and `archiveAfterMinutes` are accepted."""

    allowAgents: list[str] | None = None
    model: str | AgentModelConfig | None = None
    maxConcurrent: Annotated[int, msgspec.Meta(ge=1)] = 8
    maxSpawnDepth: Annotated[int, msgspec.Meta(ge=1, le=5)] = 5
    maxChildrenPerAgent: Annotated[int, msgspec.Meta(ge=1, le=20)] = 5
    runTimeoutSeconds: NonNegInt = 0
    announceTimeoutMs: NonNegInt | None = None
    archiveAfterMinutes: NonNegInt | None = None


class AgentDefaults(_Strict, frozen=True):
    systemAgent: dict[str, Any] | None = None
    """OpenClaw 2026.9.6's `{agentId}` of the agent its own chat assistant runs as: accepted
    (clawlane has no such assistant)."""
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
    subagents: SubagentsConfig = SubagentsConfig()
    heartbeat: HeartbeatConfig | None = None
    """Heartbeat runs (`runtime.model._config_heartbeat`, acted on by `runtime.heartbeat`)."""
    userTimezone: str | None = None
    """The user's IANA time zone (heartbeat `activeHours` default; host zone when unset)."""
    imageMaxDimensionPx: Annotated[int, msgspec.Meta(gt=0)] | None = None
    """The longest side, in pixels, an image in a tool result keeps before it is shrunk
    (OpenClaw's key; unset: 1200, `runtime.tools._images`)."""


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


class AgentIdentityConfig(_Strict, frozen=True):
    """How an agent presents itself (OpenClaw's `identity`; `agents.create`/`update` set it
    and mirror it into the workspace's `IDENTITY.md`)."""

    name: str | None = None
    theme: str | None = None
    emoji: str | None = None
    avatar: str | None = None


class AgentEntry(_Strict, frozen=True):
    id: Annotated[str, msgspec.Meta(min_length=1)]
    name: str | None = None
    identity: AgentIdentityConfig | None = None
    default: bool = False
    workspace: str | None = None
    agentDir: str | None = None
    """OpenClaw's per-agent state folder (its auth profiles, its session store): accepted;
    clawlane keeps an agent's state in the gateway's store and state dir."""
    model: str | AgentModelConfig | None = None
    models: dict[str, AgentModelPolicy] = {}
    auth: AuthConfig | None = None
    tools: ToolsConfig | None = None
    heartbeat: HeartbeatConfig | None = None
    """Merged over `agents.defaults.heartbeat`; when any agent has one, only those run."""


class AgentsConfig(_Strict, frozen=True):
    defaults: AgentDefaults = AgentDefaults()
    entries: list[AgentEntry] = msgspec.field(default_factory=list, name="list")
    """`agents.list`, and OpenClaw 2026.9.6's `agents.entries` (a map by id, what its CLI
    writes when it migrates a config): `parse_config` folds the map into this list."""
    ownership: str | None = None
    """OpenClaw 2026.9.6's `agents.ownership` (`explicit`): accepted, nothing to act on."""


class QueueConfig(_Strict, frozen=True):
    mode: Literal["steer", "followup", "collect", "interrupt"] | None = None
    debounceMs: NonNegInt = 500
    cap: Annotated[int, msgspec.Meta(ge=1)] = 20
    drop: Literal["summarize", "old", "new"] = "summarize"
    byChannel: dict[str, Literal["steer", "followup", "collect", "interrupt"]] = {}


ResponseUsage = Literal["off", "tokens", "full", "on"]


class MessagesConfig(_Strict, frozen=True):
    queue: QueueConfig = QueueConfig()
    responseUsage: ResponseUsage | dict[str, ResponseUsage] | None = None
    """The usage footer of sessions that chose none (`/usage`): one mode, or one a channel
    with a `default` (OpenClaw's key; `on` is `tokens`)."""


class PluginsConfig(_Strict, frozen=True):
    load: list[str] = []


class LoggingAuditConfig(_Strict, frozen=True):
    """`logging.audit` (OpenClaw's audit ledger): `enabled` records runs and tool calls in
    the audit log (`audit.list`; on by default); `executionIdentity` and `messages` load as
    OpenClaw's (clawlane keeps no execution identities and has no channels' messages)."""

    enabled: bool = True
    executionIdentity: bool = False
    messages: Literal["off", "direct", "all"] = "off"


class LoggingConfig(_Strict, frozen=True):
    """OpenClaw's `logging` keys that clawlane honours: the file `logs.tail` reads (one JSON
    object a line) and its level; `maxFileBytes` rotates it; `audit`, the audit log."""

    level: Literal["trace", "debug", "info", "warn", "error", "fatal", "silent"] | None = None
    file: str | None = None
    maxFileBytes: Annotated[int, msgspec.Meta(gt=0)] | None = None
    audit: LoggingAuditConfig = LoggingAuditConfig()


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


class ClusterRedisConfig(_Strict, frozen=True):
    """`cluster.redis` (clawlane): the Redis that several gateway nodes coordinate through.
    `url` is `redis://[user:password@]host:port/db` (`rediss://` for TLS); a password belongs
    in `${VAR}` (the key is not redacted as a secret). Unset: one process, nothing shared."""

    url: str | None = None
    keyPrefix: Annotated[str, msgspec.Meta(min_length=1)] = "clawlane:"


class ClusterConfig(_Strict, frozen=True):
    """`cluster.*` (clawlane): leases, idempotency claims, run streams and generations shared
    between nodes (`actors.cluster._primitives`). With `redis.url` the gateway is a node: it keeps a
    heartbeat record (listed by `status` and `health`), shares config generations, and
    runs cron and the config file watch on one node at a time. `leaseTtlMs` bounds how long a dead node's jobs stay owned
    (and its record listed). `nodeId`: this node's id (default: hostname-pid-random)."""

    redis: ClusterRedisConfig = ClusterRedisConfig()
    leaseTtlMs: Annotated[int, msgspec.Meta(ge=100, le=600_000)] = 5_000
    nodeId: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None


class PostgresStorageConfig(_Strict, frozen=True):
    """`storage.postgres`: the server of `storage.backend: "postgres"`."""

    url: str | None = None
    """A libpq URL or conninfo (`postgresql://user@host:5432/db`), `${VAR}` allowed; a
    password is better left to libpq (`PGPASSWORD`, `~/.pgpass`) than written here."""


class StorageConfig(_Strict, frozen=True):
    """`storage.*` (clawlane's): where session rows, transcripts, the run journal and cron
    jobs live: `sqlite` (the state dir's `clawlane.sqlite`, the default) or `postgres`
    (`storage.postgres.url`, a server several gateway processes share). Read at start."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    postgres: PostgresStorageConfig = PostgresStorageConfig()


class Config(_Strict, frozen=True):
    json_schema: str | None = msgspec.field(default=None, name="$schema")
    """A JSON Schema reference for editors (`clawlane config schema`); ignored, as in
    OpenClaw (the only root key outside the schema)."""
    gateway: GatewayConfig = GatewayConfig()
    auth: AuthConfig = AuthConfig()
    models: ModelsConfig = ModelsConfig()
    agents: AgentsConfig = AgentsConfig()
    messages: MessagesConfig = MessagesConfig()
    tools: GlobalToolsConfig = GlobalToolsConfig()
    plugins: PluginsConfig = PluginsConfig()
    logging: LoggingConfig = LoggingConfig()
    cron: CronConfig = CronConfig()
    cluster: ClusterConfig = ClusterConfig()
    storage: StorageConfig = StorageConfig()
    memory: MemoryConfig = MemoryConfig()
    """`memory.*`: memory search (`runtime.model._config_memory`)."""
    diagnostics: DiagnosticsConfig = DiagnosticsConfig()
    """`diagnostics.*`: OpenTelemetry export (`diagnostics.otel`, `runtime.telemetry`)."""
    talk: dict[str, Any] | None = None
    """OpenClaw's voice settings (`talk`): accepted, clawlane has no voice."""
    meta: dict[str, Any] | None = None
    """What OpenClaw's CLI records of its own edits (`meta.lastTouchedVersion`,
    `meta.migrations`): kept in the file, read by no one here."""


class ConfigError(ClawlaneError):
    """The config is unusable. `path` is the dotted key path at fault ("" for the file)."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(
            f"config error at {path}: {message}" if path else f"config error: {message}"
        )
        self.path = path


@attrs.frozen
class ConfigIssue:
    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}
