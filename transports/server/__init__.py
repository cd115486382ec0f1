"""Serving the gateway's port: the composition root and each connection's life.

- `_gateway`: `open_gateway` / `serve_gateway` and `Gateway`: builds the supervisor, the
  store, the publisher, the cron scheduler and (with cluster config) the node, listens,
  accepts, and serves each socket as WebSocket or plain HTTP. `GatewayOptions` is what the
  CLI hands it.
  The methods see it through three roles (`methods.Host`: `actors`, `trust`, `process`),
  each the gateway itself typed as that role's Protocol.
- `_handshake`: the `connect` admission in OpenClaw's order (protocol, origin, auth, device
  identity, pairing, scopes) -> `Admitted`.
- `_connection`: one client after its upgrade: the handshake, then one reader and the
  request tasks; frames go to the method table.
- `_connlog`: a connection's log lines (`clawlane.connections`).
- `_startup`: why the gateway cannot start, in one line; `_state_lock`: one gateway process
  per state dir; `_logging`: the process's logging (text or JSON lines, one handler);
  `_version`: `VERSION`.
- `_workers`: `--workers N`, N gateway processes on one port of one machine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from ._logging import DEFAULT_LOG_FORMAT as DEFAULT_LOG_FORMAT
from ._logging import DEFAULT_LOG_LEVEL as DEFAULT_LOG_LEVEL
from ._logging import LOG_FORMATS as LOG_FORMATS
from ._logging import LOG_LEVELS as LOG_LEVELS
from ._logging import configure_logging as configure_logging
from ._version import VERSION as VERSION

if TYPE_CHECKING:
    from ._gateway import Gateway as Gateway
    from ._gateway import GatewayOptions as GatewayOptions
    from ._gateway import open_gateway as open_gateway
    from ._gateway import serve_gateway as serve_gateway
    from ._startup import EXIT_CONFIG as EXIT_CONFIG
    from ._startup import StartupError as StartupError
    from ._startup import check_config_file as check_config_file
    from ._startup import check_state_dir as check_state_dir
    from ._startup import describe_failure as describe_failure
    from ._workers import gateway_workers as gateway_workers

_LAZY: Final = {
    "Gateway": "._gateway",
    "GatewayOptions": "._gateway",
    "open_gateway": "._gateway",
    "serve_gateway": "._gateway",
    "EXIT_CONFIG": "._startup",
    "StartupError": "._startup",
    "check_config_file": "._startup",
    "check_state_dir": "._startup",
    "describe_failure": "._startup",
    "gateway_workers": "._workers",
}
"""Names resolved on first use (`__getattr__`): the CLI builds its parser from the log
settings and prints `VERSION` without loading the gateway (and the actors under it)."""

__all__ = [
    "DEFAULT_LOG_FORMAT",
    "DEFAULT_LOG_LEVEL",
    "EXIT_CONFIG",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "VERSION",
    "Gateway",
    "GatewayOptions",
    "StartupError",
    "check_config_file",
    "check_state_dir",
    "configure_logging",
    "describe_failure",
    "gateway_workers",
    "open_gateway",
    "serve_gateway",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
