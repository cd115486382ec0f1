"""Why the gateway cannot start, in one line: checks before it starts, and the failures that
escape `serve_gateway` turned into a message and an exit code.

Exit codes of `clawlane gateway` (the whole CLI's table is in `_cli`'s doc):

- 2 `EXIT_CONFIG`: usage or config error (an unknown flag or log level, a `--config` file
  that does not exist or does not decode, an unsafe auth setting);
- 4 `EXIT_ENVIRONMENT`: the gateway cannot run here (the port is in use or the address is
  not available, the state dir cannot be created, read or written, the store cannot be
  opened, the cluster's Redis cannot be reached);
- 1: the gateway stopped on an unexpected error (the line says which; `--log-level debug`
  logs the traceback).

`check_state_dir` and `check_config_file` raise `StartupError` before anything starts;
`open_gateway_documents` opens the pairing store and the user preferences, one it cannot
read being a `GatewayConfigError` (the gateway refuses to start and names the file or
document);
`explain_failure` maps an exception (possibly an exception group from trio's nurseries) to a
`StartupError`, or returns None when it is not one of the known causes; `describe_failure`
always gives one (an unknown cause is `EXIT_FAILED`, its traceback logged at debug level).
"""

from __future__ import annotations

import errno
import gc
import logging
import os
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Final

from actors import ClusterUnavailable, StoreError, open_pairing, open_prefs
from runtime.devices import PairingStore, PairingStoreError
from runtime.model import Config, ConfigError
from runtime.users import UserPrefs, UserPrefsError

from .._errors import GatewayConfigError, TransportError

__all__ = [
    "EXIT_CONFIG",
    "EXIT_ENVIRONMENT",
    "EXIT_FAILED",
    "StartupError",
    "check_config_file",
    "check_state_dir",
    "describe_failure",
    "explain_failure",
    "open_gateway_documents",
    "tune_gc",
]

log = logging.getLogger("clawlane.cli")

EXIT_FAILED: Final = 1
EXIT_CONFIG: Final = 2
EXIT_ENVIRONMENT: Final = 4
STORE_FILENAME: Final = "clawlane.sqlite"


class StartupError(TransportError):
    """The gateway cannot start; `str()` is the one line to print, `exit_code` the code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_state_dir(path: Path) -> None:
    """Create the state dir if needed and prove it is a directory we can list and write (a
    probe file is created and removed), and that an existing store file can be opened for
    writing. Raises `StartupError` (`EXIT_ENVIRONMENT`) naming the directory. Blocking."""
    shown = str(path)
    if path.exists() and not path.is_dir():
        raise StartupError(f"state dir {shown} is not a directory", EXIT_ENVIRONMENT)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(
            f"cannot create the state dir {shown}: {_reason(exc)}", EXIT_ENVIRONMENT
        ) from exc
    try:
        os.listdir(path)
    except OSError as exc:
        raise StartupError(
            f"cannot read the state dir {shown}: {_reason(exc)}", EXIT_ENVIRONMENT
        ) from exc
    try:
        fd, probe = tempfile.mkstemp(prefix=".clawlane-write-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise StartupError(
            f"the state dir {shown} is not writable: {_reason(exc)}", EXIT_ENVIRONMENT
        ) from exc
    store = path / STORE_FILENAME
    if store.exists():
        try:
            with store.open("r+b"):
                pass
        except OSError as exc:
            raise StartupError(
                f"cannot open the store {store} for writing: {_reason(exc)}", EXIT_ENVIRONMENT
            ) from exc


def check_config_file(path: Path, *, explicit: bool) -> None:
    """A `--config` given explicitly must exist (the default path may be missing: the
    defaults apply). Raises `StartupError` (`EXIT_CONFIG`)."""
    if explicit and not path.exists():
        raise StartupError(f"config file {path} does not exist", EXIT_CONFIG)
    if path.exists() and path.is_dir():
        raise StartupError(f"config file {path} is a directory", EXIT_CONFIG)


@asynccontextmanager
async def open_gateway_documents(
    config: Config, state_dir: Path
) -> AsyncIterator[tuple[PairingStore, UserPrefs]]:
    """`actors.open_pairing` and `actors.open_prefs` (the state dir's files, or the
    cluster's PostgreSQL documents), one it cannot open raised as `GatewayConfigError`
    (errors from the body pass)."""
    async with AsyncExitStack() as stack:
        try:
            pairing = await stack.enter_async_context(open_pairing(config, state_dir))
            prefs = await stack.enter_async_context(open_prefs(config, state_dir))
        except (PairingStoreError, UserPrefsError) as exc:
            raise GatewayConfigError(str(exc)) from exc
        yield pairing, prefs


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            yield from _leaves(sub)
    else:
        yield exc


_LISTEN_ERRNOS: Final = {
    errno.EADDRINUSE: "address already in use (is another gateway running? try --port)",
    errno.EADDRNOTAVAIL: "address not available on this machine (check --host / gateway.bind)",
    errno.EACCES: "permission denied (ports below 1024 need privileges)",
}


def explain_failure(exc: BaseException, *, host: str, port: int) -> StartupError | None:
    """The one-line cause of a failed start, or None when it is not a known one."""

    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, GatewayConfigError | ConfigError):
            return StartupError(str(leaf), EXIT_CONFIG)
    for leaf in leaves:
        if isinstance(leaf, OSError) and leaf.errno in _LISTEN_ERRNOS and not leaf.filename:
            return StartupError(
                f"cannot listen on {host}:{port}: {_LISTEN_ERRNOS[leaf.errno]}", EXIT_ENVIRONMENT
            )
        if isinstance(leaf, OSError) and leaf.filename:
            return StartupError(f"cannot use {leaf.filename}: {_reason(leaf)}", EXIT_ENVIRONMENT)
        if isinstance(leaf, ClusterUnavailable):
            return StartupError(str(leaf), EXIT_ENVIRONMENT)
        if isinstance(leaf, sqlite3.Error | StoreError):
            return StartupError(f"cannot open the store: {leaf}", EXIT_ENVIRONMENT)
        if isinstance(leaf, OSError) and leaf.errno is not None:
            return StartupError(f"cannot start: {_reason(leaf)}", EXIT_ENVIRONMENT)
    return None


def describe_failure(exc: BaseException, *, host: str, port: int) -> StartupError:
    """`explain_failure`, else `the gateway stopped: <the first error>` (`EXIT_FAILED`;
    `--log-level debug` logs the traceback)."""
    explained = explain_failure(exc, host=host, port=port)
    if explained is not None:
        return explained
    log.debug("the gateway stopped", exc_info=exc)
    leaf = next(_leaves(exc), exc)
    return StartupError(
        f"the gateway stopped: {type(leaf).__name__}: {leaf} "
        "(--log-level debug logs the traceback)",
        EXIT_FAILED,
    )


GC_THRESHOLDS: Final = (100_000, 20, 100)
"""The gateway process's garbage collector thresholds (CPython's: 700, 10, 10). The young
generation's count is allocations minus frees of tracked objects: what a run keeps for a
while (its record for `agent.wait`, its replay buffer, the cached final, the session's
context) grows it by ~80 per run. With the defaults a young collection, walking all of
that, ran every ~10 runs; at 1,000 busy sessions that was ~15 % of the CPU, and still ~5 %
at 20,000. At 100,000 one runs every ~1,000 runs and takes ~12 ms (well inside the latency
budget). Almost everything is freed by reference count; the collector is only for cycles,
and a larger young generation finds them as well."""


def tune_gc() -> None:
    """For a long-running gateway process: move what startup built (modules, the config,
    the first generation) out of the collector's sight and collect less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
