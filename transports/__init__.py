"""clawlane transports: the edges.

- The WebSocket gateway (`open_gateway`, `serve_gateway`, `Gateway`, `GatewayOptions`).
- The Python gateway client (`open_gateway_client`, `GatewayClient`).
- The CLI (`main`).

Errors, one tree rooted at `TransportError` (itself a `runtime.protocol.ClawlaneError`):

    TransportError
    ├── GatewayConfigError (the gateway refuses to start), AuthConfigError, StartupError,
    │   GatewayLockError (another gateway holds the state dir)
    ├── GatewayClientError (cannot reach the gateway / the connection broke)
    │   └── GatewayAuthError (handshake refused)
    ├── GatewayRequestError (a request answered `ok:false`)
    ├── ConnectionClosed, MessageTooBig, HttpClosed (a peer's connection, inside the server)
    ├── FrameError (a peer broke RFC 6455: `_wscodec`, the frame codec of both ends)
    ├── InvalidRequest (an OpenAI-compatible request that cannot be served)
    └── LoadtestError (a load test could not run)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from ._errors import GatewayConfigError as GatewayConfigError
from ._errors import TransportError as TransportError

if TYPE_CHECKING:
    from .cli import main as main
    from .client import GatewayAuthError as GatewayAuthError
    from .client import GatewayClient as GatewayClient
    from .client import GatewayClientError as GatewayClientError
    from .client import GatewayRequestError as GatewayRequestError
    from .client import open_gateway_client as open_gateway_client
    from .loadtest import LoadtestError as LoadtestError
    from .loadtest import LoadtestOptions as LoadtestOptions
    from .loadtest import LoadtestReport as LoadtestReport
    from .loadtest import run_loadtest as run_loadtest
    from .loadtest import spawn_gateway_process as spawn_gateway_process
    from .server import Gateway as Gateway
    from .server import GatewayOptions as GatewayOptions
    from .server import open_gateway as open_gateway
    from .server import serve_gateway as serve_gateway
    from .websocket import WebSocketServerConnection as WebSocketServerConnection
    from .websocket import client_frame as client_frame

_LAZY: Final = {
    "main": ".cli",
    "GatewayAuthError": ".client",
    "GatewayClient": ".client",
    "GatewayClientError": ".client",
    "GatewayRequestError": ".client",
    "open_gateway_client": ".client",
    "LoadtestError": ".loadtest",
    "LoadtestOptions": ".loadtest",
    "LoadtestReport": ".loadtest",
    "run_loadtest": ".loadtest",
    "spawn_gateway_process": ".loadtest",
    "Gateway": ".server",
    "GatewayOptions": ".server",
    "open_gateway": ".server",
    "serve_gateway": ".server",
    "WebSocketServerConnection": ".websocket",
    "client_frame": ".websocket",
}
"""Names resolved on first use (`__getattr__`): the CLI's entry point (`transports.cli._main`)
imports this package first, and a client command must not load the gateway with it."""

__all__ = [
    "Gateway",
    "GatewayAuthError",
    "GatewayClient",
    "GatewayClientError",
    "GatewayConfigError",
    "GatewayOptions",
    "GatewayRequestError",
    "LoadtestError",
    "LoadtestOptions",
    "LoadtestReport",
    "TransportError",
    "WebSocketServerConnection",
    "client_frame",
    "main",
    "open_gateway",
    "open_gateway_client",
    "run_loadtest",
    "serve_gateway",
    "spawn_gateway_process",
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
