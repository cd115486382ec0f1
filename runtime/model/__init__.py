"""The config and what is built from it: the model runtime generation.

- `_config`, `_config_text`, `_config_check`, `_config_types`, `_settings`: the config file,
  typed once. JSON5 as OpenClaw writes `openclaw.json`, decoded strictly (an unknown key or a
  wrong type is a `ConfigError` naming the key path, with "did you mean"; every problem at
  once for `clawlane config validate`), `${VAR}` in string values, numbers finite, a root
  `"$schema"` ignored; `config_schema` is the JSON Schema `clawlane config schema` prints;
  `config_form_schema` (`ConfigForm`) and `lookup_config_schema` are the same schema as
  OpenClaw's Control UI form reads it (`config.schema`, `config.schema.lookup`).
  An API write (`config.patch`, or an apply whose redacted secrets were restored) is plain
  two-space JSON, so the old file's comments go; the old file is kept as `<file>.bak` first.
- `_auth`: one agent's credentials (`auth.profiles`, `auth.order`, the agent's
  `<state-dir>/agents/<id>/auth-profiles.json`, `apiKey`), a template per generation, forked
  per run.
- `_generation`: the generation, one frozen snapshot (per agent: auth, providers, the
  projected model catalog; the model registry, aliases, harnesses; a number, a build time,
  an input hash), built completely before it is published. It is republished at startup,
  on `config.set` / `config.patch` / `config.apply`, when the config file or an auth-profile
  file changes on disk, and when a plugin registers or unregisters something
  (`actors._publisher`). A failed build is reported and the previous generation keeps
  serving; a run keeps the generation it started under to its end. `gateway.port`, `bind`
  and `auth` need a restart.
- `_harness`: runtime selection (`agentRuntime.id` on a model entry beats the provider's):
  built-in `openclaw` (`pi` an alias), `codex-app-server` -> `codex`; unset or `default` is
  `auto` (a registered plugin harness that supports the route, else `openclaw`); an explicit
  id that is not registered fails closed.
- `_plugins`: `plugins.load` (Python modules or files importing only `runtime.plugin_sdk`);
  one that fails to load is logged and skipped. `_retire`: closing old providers' transports.

The keys not to miss besides models and auth: `agents.list[]` (several agents: `id`,
`workspace`, `model`, `tools`, `models`, `auth`), `agents.defaults.models["p/m"]` (`alias`,
`params`, `agentRuntime`), `tools` (`profile`, `allow`, `deny`), `messages.queue` (`mode`,
`debounceMs`, `cap`, `drop`, `byChannel`), and clawlane's own `gateway.interruptedRuns`
(`"fail"`, the default, or `"rerun"`: what a start does with runs the previous process
accepted and did not finish), `gateway.idleSessionSeconds` (600: how long a session stays
loaded after its last activity; then its actor, its context and, in a cluster, its lease go)
and `gateway.idleContextsMaxBytes` (128 MiB: what idle sessions keep of their contexts in
memory, together; 0 keeps none).
"""

from ._config import ConfigSnapshot as ConfigSnapshot
from ._config import apply_merge_patch as apply_merge_patch
from ._config import config_text as config_text
from ._config import config_to_builtins as config_to_builtins
from ._config import load_config as load_config
from ._config import read_config_snapshot as read_config_snapshot
from ._config import redact_config as redact_config
from ._config import restore_redacted as restore_redacted
from ._config import snapshot_from_text as snapshot_from_text
from ._config import write_config_text as write_config_text
from ._config_check import config_issues as config_issues
from ._config_check import config_schema as config_schema
from ._config_check import fold_agent_entries as fold_agent_entries
from ._config_check import parse_config as parse_config
from ._config_form import ConfigForm as ConfigForm
from ._config_form import config_form_schema as config_form_schema
from ._config_form import lookup_config_schema as lookup_config_schema
from ._config_heartbeat import HeartbeatActiveHours as HeartbeatActiveHours
from ._config_heartbeat import HeartbeatConfig as HeartbeatConfig
from ._config_heartbeat import parse_duration_ms as parse_duration_ms
from ._config_text import ConfigSyntaxError as ConfigSyntaxError
from ._config_text import backup_path as backup_path
from ._config_text import decode_config_text as decode_config_text
from ._config_text import has_comments as has_comments
from ._config_text import keep_previous as keep_previous
from ._config_types import Config as Config
from ._config_types import ConfigError as ConfigError
from ._config_types import ConfigIssue as ConfigIssue
from ._config_types import CronConfig as CronConfig
from ._config_types import ModelCost as ModelCost
from ._config_types import PricingTier as PricingTier
from ._config_types import QueueConfig as QueueConfig
from ._config_types import StorageConfig as StorageConfig
from ._config_types import run_timeout_seconds as run_timeout_seconds
from ._generation import AgentSpec as AgentSpec
from ._generation import CatalogEntry as CatalogEntry
from ._generation import GenerationBuilder as GenerationBuilder
from ._generation import GenerationError as GenerationError
from ._generation import GenerationInputs as GenerationInputs
from ._generation import ModelRuntimeGeneration as ModelRuntimeGeneration
from ._plugins import PluginRegistry as PluginRegistry
from ._plugins import load_plugins as load_plugins
from ._retire import close_all_providers as close_all_providers

__all__ = [
    "AgentSpec",
    "CatalogEntry",
    "Config",
    "ConfigError",
    "ConfigForm",
    "ConfigIssue",
    "ConfigSnapshot",
    "ConfigSyntaxError",
    "CronConfig",
    "GenerationBuilder",
    "GenerationError",
    "GenerationInputs",
    "HeartbeatActiveHours",
    "HeartbeatConfig",
    "ModelCost",
    "ModelRuntimeGeneration",
    "PluginRegistry",
    "PricingTier",
    "QueueConfig",
    "StorageConfig",
    "apply_merge_patch",
    "backup_path",
    "close_all_providers",
    "config_form_schema",
    "config_issues",
    "config_schema",
    "config_text",
    "config_to_builtins",
    "decode_config_text",
    "fold_agent_entries",
    "has_comments",
    "keep_previous",
    "load_config",
    "load_plugins",
    "lookup_config_schema",
    "parse_config",
    "parse_duration_ms",
    "read_config_snapshot",
    "redact_config",
    "restore_redacted",
    "run_timeout_seconds",
    "snapshot_from_text",
    "write_config_text",
]
