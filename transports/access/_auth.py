"""Gateway auth settings, and the token a first start creates.

Auth is on by default: `gateway.auth.mode` unset means `token`. The token comes from
`--token`, `gateway.auth.token` or `CLAWLANE_GATEWAY_TOKEN`; with none of them the gateway
uses `<state-dir>/gateway-token` (mode 0600), creating it with a random token on the first
start. Clients on the same machine (`clawlane agent`, `call`, `loadtest`) read that file from
the same default state dir when they talk to a loopback URL, so a local setup needs no
token handling at all. `"none"` works only when written explicitly and only on a loopback
bind; a non-loopback bind needs a token.

Errors: `GatewayConfigError` (defined in `_gateway`) for settings that must not start.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Final

import attrs

from .._errors import TransportError

if TYPE_CHECKING:  # annotations only: the CLI's client commands read the token file here
    from runtime.model import Config

log = logging.getLogger("clawlane.auth")

TOKEN_FILENAME: Final = "gateway-token"
TOKEN_ENV: Final = "CLAWLANE_GATEWAY_TOKEN"
STATE_DIR_ENV: Final = "CLAWLANE_STATE_DIR"
_NON_LOOPBACK: Final = (
    "refusing to bind {host}: a non-loopback bind requires a token "
    "(set gateway.auth.token, --token or CLAWLANE_GATEWAY_TOKEN)"
)


class AuthConfigError(TransportError):
    """Auth settings that must not start (re-raised as `GatewayConfigError`)."""


def is_loopback(host: str) -> bool:
    if host in ("localhost", "loopback"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_state_dir() -> Path:
    """The state dir the gateway and the CLI agree on: `$CLAWLANE_STATE_DIR` or `.clawlane`."""
    return Path(os.environ.get(STATE_DIR_ENV, ".clawlane"))


@attrs.frozen
class AuthSettings:
    mode: str
    token: str | None
    token_file: Path | None = None
    """Where the token lives when it came from (or was created in) the state dir."""
    created: bool = False


def token_path(state_dir: Path) -> Path:
    return state_dir / TOKEN_FILENAME


def read_token_file(path: Path) -> str | None:
    """The token in `path`, or None when there is none. Blocking."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise AuthConfigError(f"cannot read the gateway token file {path}: {exc}") from exc
    return text or None


def _create_token_file(path: Path) -> str:
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise AuthConfigError(
            f"cannot create the gateway token file {path}: {exc.strerror or exc} "
            "(set gateway.auth.token, --token or CLAWLANE_GATEWAY_TOKEN, or fix the state dir)"
        ) from exc
    return token


def auth_settings(
    config: Config, *, token_override: str | None, host: str, state_dir: Path | None = None
) -> AuthSettings:
    """Resolve `gateway.auth` (see the module docstring). With `state_dir` given and no
    token configured, reads or creates the token file there (blocking). Raises
    `AuthConfigError`."""
    explicit_mode = config.gateway.auth.mode
    if explicit_mode == "none":
        if not is_loopback(host):
            raise AuthConfigError(
                f'gateway.auth.mode "none" is allowed only on a loopback bind, not {host} '
                "(remove it to use a token)"
            )
        if token_override or config.gateway.auth.token:
            log.warning('gateway.auth.mode is "none": the configured token is not used')
        return AuthSettings(mode="none", token=None)
    token = token_override or config.gateway.auth.token or os.environ.get(TOKEN_ENV) or None
    if token:
        return AuthSettings(mode="token", token=token)
    if not is_loopback(host) and state_dir is None:
        raise AuthConfigError(_NON_LOOPBACK.format(host=host))
    if state_dir is None:
        raise AuthConfigError(
            "no gateway token is set (gateway.auth.token, --token or CLAWLANE_GATEWAY_TOKEN)"
        )
    path = token_path(state_dir)
    existing = read_token_file(path)
    if existing is not None:
        return AuthSettings(mode="token", token=existing, token_file=path)
    if not is_loopback(host):
        raise AuthConfigError(_NON_LOOPBACK.format(host=host))
    return AuthSettings(mode="token", token=_create_token_file(path), token_file=path, created=True)


def local_client_token(url: str, state_dir: Path | None = None) -> str | None:
    """The token a client on this machine uses for `url` when none was given: the state
    dir's token file, only for a loopback URL (never sent elsewhere). Blocking."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if not is_loopback(host):
        return None
    try:
        return read_token_file(token_path(state_dir or default_state_dir()))
    except AuthConfigError:
        return None
