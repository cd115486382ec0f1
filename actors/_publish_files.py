"""What the Publisher (`_publisher`) reads from files: a config write's JSON5 object
(`decode_object`), a watched file's fingerprint (`stat_fingerprint`: mtime, size, inode) and
modification time (`mtime_ms`), and the refusal of a config file older than the cluster's
config document (`older_file_refusal`)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from runtime.model import ConfigError, ConfigSyntaxError, decode_config_text

__all__ = ["Fingerprint", "decode_object", "mtime_ms", "older_file_refusal", "stat_fingerprint"]

Fingerprint = tuple[int, int, int] | None


def decode_object(raw: str, not_object: str) -> dict[str, Any]:
    """JSON5 text that must be an object; `ConfigError` otherwise. Blocking (JSON5 is
    parsed in pure Python): run it in a worker thread."""
    try:
        value = decode_config_text(raw)
    except ConfigSyntaxError as exc:
        raise ConfigError(f"not valid JSON5: {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError(not_object)
    return value


def stat_fingerprint(path: Path) -> Fingerprint:
    """None: no such file; (-1, -1, -1): it cannot be looked at."""
    # A stat of a local file takes microseconds; polling it from the trio thread is fine.
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return (-1, -1, -1)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def mtime_ms(path: Path | None) -> int | None:
    """The file's modification time (epoch ms); None without a file."""
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime_ns // 1_000_000
    except OSError:
        return None


def older_file_refusal(
    path: Path | None, version: int, written_ms: int, origin: str
) -> ConfigError:
    """Why the config file watch does not publish a file modified before the cluster's
    config document (version `version`, written at `written_ms` by `origin`) was written."""
    written = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(written_ms / 1000))
    return ConfigError(
        f"{path} is older than the cluster's config (version {version}, written {written} by "
        f"{origin}): not published; save the file again, or start this node with --seed-config"
    )
