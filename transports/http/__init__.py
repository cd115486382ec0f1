"""Plain HTTP/1.1 on the gateway's port, beside the WebSocket upgrade.

- `_server`: h11 request/response exchange with byte limits (`Request`, `Response`,
  `Exchange`, `Route`), read with a deadline; a peer that never finishes is closed.
- `_routes`: the routes: `/health`, `/healthz`, `/ready`, `/metrics`, the dashboard's files,
  and the OpenAI API, each behind the same auth as a WebSocket `connect`.
- `_caller`: an in-process caller, so a route calls an RPC method exactly as a WebSocket
  client would (scopes, validation, the cluster's routing).
- `_openai`: OpenAI-compatible `/v1/models` and `/v1/chat/completions` (SSE streaming), as
  OpenClaw offers them.
- `_otel_mirror`: `mirror_metrics`, what `/metrics` serves as OTLP observable gauges and
  counters too, with `diagnostics.otel` metrics on (the gateway runs it in its nursery).
- `_metrics`: the gateway in the Prometheus text format (imported by the first scrape);
  `_counters`: what the HTTP side counts, and what a scrape reads (`MetricsHost`).
- `dashboard/`: the live dashboard's static files.

For the operator:

- `/metrics` (Prometheus text 0.0.4; `Authorization: Bearer <token>` when the gateway has
  one, e.g. a scrape job's `authorization.credentials_file`): `clawlane_*` counters, gauges
  and histograms of runs (started, ended, aborted by reason, duration, time to first event),
  provider errors by kind, sessions (loaded, busy, idle context bytes, contexts dropped,
  crashes), events emitted and delivered, connections by role, HTTP requests, slow-consumer
  closes, the global lanes (capacity, in use, waiting, wait time), the store (queue, backlog,
  commits and their time, failures, rows and entries written), generations (number,
  publishes, failures), uptime, readiness, build info; plus `process_*` and `python_gc_*`.
  Each metric's HELP text is in `_metrics`.
- The OpenAI-compatible API (`_openai`), on with
  `{"gateway": {"http": {"endpoints": {"chatCompletions": {"enabled": true}}}}}` (read from
  the serving generation, so it turns on and off without a restart): base URL the gateway's
  `/v1`, API key the gateway token, `model: "openclaw"` (or `openclaw/<agentId>`), `user`
  for a stable session.
- The dashboard (`GET /`; `clawlane dashboard [--open]` prints its address with the token in
  the URL fragment, which the browser never sends; the page keeps it in this origin's
  storage). It is a protocol v4 client of the same gateway (`session-scoped-events`: it
  receives only the session it watches) using `clawlane.dashboard`, `clawlane.generations`
  and `clawlane.series` (`transports.methods._dashboard`). Like OpenClaw's Control UI it
  signs the connect challenge with a device key of its own (WebCrypto ed25519, not
  extractable, kept in this origin's IndexedDB): paired silently on direct loopback, from
  elsewhere it waits for an operator's approval. WebCrypto needs a secure context: open it
  over https, or on `localhost` / `127.0.0.1`.
"""

from ._counters import HttpCounters as HttpCounters
from ._otel_mirror import mirror_metrics as mirror_metrics
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
    "mirror_metrics",
    "read_head",
]
