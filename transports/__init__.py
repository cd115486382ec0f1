"""clawlane transports: the edges.

- The WebSocket gateway (`open_gateway`, `serve_gateway`, `Gateway`, `GatewayOptions`).
- The Python gateway client (`open_gateway_client`, `GatewayClient`).
- The CLI (`main`).

Errors: `GatewayConfigError` (the gateway refuses to start), `GatewayClientError` (cannot reach
the gateway / connection broke), `GatewayAuthError` (handshake refused), `GatewayRequestError`
(a request answered `ok:false`).
"""

from ._cli import main as main
from ._client import GatewayAuthError as GatewayAuthError
from ._client import GatewayClient as GatewayClient
from ._client import GatewayClientError as GatewayClientError
from ._client import GatewayRequestError as GatewayRequestError
from ._client import open_gateway_client as open_gateway_client
from ._gateway import Gateway as Gateway
from ._gateway import GatewayConfigError as GatewayConfigError
from ._gateway import GatewayOptions as GatewayOptions
from ._gateway import open_gateway as open_gateway
from ._gateway import serve_gateway as serve_gateway
from ._loadtest import LoadtestError as LoadtestError
from ._loadtest import LoadtestOptions as LoadtestOptions
from ._loadtest import LoadtestReport as LoadtestReport
from ._loadtest import client_frame as client_frame
from ._loadtest import run_loadtest as run_loadtest
from ._loadtest import spawn_gateway_process as spawn_gateway_process
from ._ws import WebSocketServerConnection as WebSocketServerConnection

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
    "WebSocketServerConnection",
    "client_frame",
    "main",
    "open_gateway",
    "open_gateway_client",
    "run_loadtest",
    "serve_gateway",
    "spawn_gateway_process",
]
