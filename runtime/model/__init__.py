"""runtime.model"""

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
from ._config_check import parse_config as parse_config
from ._config_text import ConfigSyntaxError as ConfigSyntaxError
from ._config_text import backup_path as backup_path
from ._config_text import decode_config_text as decode_config_text
from ._config_text import has_comments as has_comments
from ._config_text import keep_previous as keep_previous
from ._config_types import Config as Config
from ._config_types import ConfigError as ConfigError
from ._config_types import ConfigIssue as ConfigIssue
from ._config_types import CronConfig as CronConfig
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
    "ConfigIssue",
    "ConfigSnapshot",
    "ConfigSyntaxError",
    "CronConfig",
    "GenerationBuilder",
    "GenerationError",
    "GenerationInputs",
    "ModelRuntimeGeneration",
    "PluginRegistry",
    "StorageConfig",
    "apply_merge_patch",
    "backup_path",
    "close_all_providers",
    "config_issues",
    "config_schema",
    "config_text",
    "config_to_builtins",
    "decode_config_text",
    "has_comments",
    "keep_previous",
    "load_config",
    "load_plugins",
    "parse_config",
    "read_config_snapshot",
    "redact_config",
    "restore_redacted",
    "run_timeout_seconds",
    "snapshot_from_text",
    "write_config_text",
]
