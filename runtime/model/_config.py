"""The config file: JSON5 (`_config_text`) read and decoded strictly (`load_config`,
`parse_config` from `_config_check`) into the typed Structs of `_config_types`, with
OpenClaw's key names. This module is where importers get the config's types and
`parse_config` from (it re-exports the ones they use).

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
from typing import Annotated, Any, Final
from urllib.parse import urlsplit

import attrs
import msgspec

from ._config_check import parse_config as parse_config
from ._config_check import substitute_env, validation_error_at
from ._config_text import ConfigSyntaxError, decode_config_text
from ._config_types import Config as Config
from ._config_types import ConfigError as ConfigError
from ._config_types import ConfigIssue as ConfigIssue
from ._config_types import ProviderConfig as ProviderConfig
from ._config_types import ToolsConfig as ToolsConfig
from ._config_types import ToolSearchConfig as ToolSearchConfig
from ._config_types import llm_idle_timeout_seconds as llm_idle_timeout_seconds


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
        key, message = validation_error_at(raw, exc, AuthProfilesFile)
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
            resolved = substitute_env(parsed, "", dict(os.environ) if env is None else env)
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


def _has_password(value: str) -> bool:
    """A URL that carries a password (`postgresql://user:secret@host/db`)."""
    if "://" not in value or "@" not in value:
        return False
    try:
        return urlsplit(value).password is not None
    except ValueError:
        return False


def redact_config(value: Any) -> Any:
    """A copy with every secret string replaced by `REDACTED_SENTINEL`: the values of secret
    keys, and URLs that carry a password (`storage.postgres.url`, `cluster.redis.url`);
    `${VAR}` references are kept: they are not secrets."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if (
                isinstance(v, str)
                and (is_sensitive_key(str(k)) or _has_password(v))
                and not _PLACEHOLDER.match(v)
            ):
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
