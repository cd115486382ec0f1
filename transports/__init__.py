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

from ._cli import main as main
from ._client import GatewayAuthError as GatewayAuthError
from ._client import GatewayClient as GatewayClient
from ._client import GatewayClientError as GatewayClientError
from ._client import GatewayRequestError as GatewayRequestError
from ._client import open_gateway_client as open_gateway_client
from ._errors import GatewayConfigError as GatewayConfigError
from ._errors import TransportError as TransportError
from ._gateway import Gateway as Gateway
from ._gateway import GatewayOptions as GatewayOptions
from ._gateway import open_gateway as open_gateway
from ._gateway import serve_gateway as serve_gateway
from ._loadtest import run_loadtest as run_loadtest
from ._loadtest_conn import LoadtestError as LoadtestError
from ._loadtest_conn import LoadtestOptions as LoadtestOptions
from ._loadtest_gateway import spawn_gateway_process as spawn_gateway_process
from ._loadtest_report import LoadtestReport as LoadtestReport
from ._ws import WebSocketServerConnection as WebSocketServerConnection
from ._wscodec import client_frame as client_frame

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
