"""Plain HTTP/1.1 on the gateway's port, beside the WebSocket upgrade.

- `_server`: h11 request/response exchange with byte limits (`Request`, `Response`,
  `Exchange`, `Route`), read with a deadline; a peer that never finishes is closed.
- `_routes`: the routes: `/health`, `/healthz`, `/ready`, `/metrics`, the dashboard's files,
  and the OpenAI API, each behind the same auth as a WebSocket `connect`.
- `_caller`: an in-process caller, so a route calls an RPC method exactly as a WebSocket
  client would (scopes, validation, the cluster's routing).
- `_openai`: OpenAI-compatible `/v1/models` and `/v1/chat/completions` (SSE streaming), as
  OpenClaw offers them.
- `_metrics`: the gateway in the Prometheus text format.
- `dashboard/`: the live dashboard's static files.
"""

from ._metrics import HttpCounters as HttpCounters
from ._routes import HttpRoutes as HttpRoutes
from ._routes import load_dashboard as load_dashboard
from ._server import MAX_HEAD_BYTES as MAX_HEAD_BYTES
from ._server import HttpConnection as HttpConnection
from ._server import is_websocket_upgrade as is_websocket_upgrade
from ._server import lingering_close as lingering_close
from ._server import read_head as read_head

__all__ = [
    "MAX_HEAD_BYTES",
    "HttpConnection",
    "HttpCounters",
    "HttpRoutes",
    "is_websocket_upgrade",
    "lingering_close",
    "load_dashboard",
    "read_head",
]
