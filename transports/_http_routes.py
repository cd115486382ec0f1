"""The plain HTTP routes of the gateway's port.

| route | auth | answer |
|---|---|---|
| `GET/HEAD /healthz`, `/health` | none | 200 `{"ok":true,"status":"live"}` while the process serves |
| `GET/HEAD /readyz`, `/ready` | none | 200 / 503 `{"ready":bool}`; with `failing` and `uptimeMs` for loopback callers and token holders |
| `GET /metrics`, `/api/diagnostics/prometheus` | Bearer token (when the gateway has one) | Prometheus text format |
| `GET /`, `/dashboard/*` | none (the page asks for the token itself) | the live dashboard |
| `/v1/models`, `/v1/chat/completions` | Bearer token | OpenAI-compatible, when enabled (`_openai_http`) |

Everything else is 404; a known path with another method is 405 with `Allow`. Readiness
is OpenClaw's decision for what clawlane has: the store is open, a generation is published,
and the gateway is not shutting down (`failing` names what is not: `store`, `generation`,
`shutdown`).

Browser requests: a request carrying an `Origin` header must come from an allowed origin
(the WebSocket upgrade's rule) or gets 403 before anything else happens. Auth and origin
are checked before a body is read. Responses carry `nosniff`, `no-referrer` and
`no-store` (`_http`); the dashboard's page adds a Content-Security-Policy that allows only
its own scripts and connections to its own origin, and no framing.
"""

from __future__ import annotations

import hmac
import importlib.resources
import time
import urllib.parse
from typing import TYPE_CHECKING, Final

import msgspec

from ._http import Exchange, Request, Response, Route
from ._metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from ._metrics import open_registry, render
from ._openai_http import OpenAiRoutes, error_response

if TYPE_CHECKING:
    from ._gateway import Gateway

PROBES: Final = {"/health": "live", "/healthz": "live", "/ready": "ready", "/readyz": "ready"}
METRICS_PATHS: Final = ("/metrics", "/api/diagnostics/prometheus")
DASHBOARD_FILES: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/dashboard/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/dashboard/style.css": ("style.css", "text/css; charset=utf-8"),
    "/favicon.ico": ("favicon.svg", "image/svg+xml"),
}
DASHBOARD_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_json: Final = msgspec.json.Encoder()


def origin_allowed(gw: Gateway, origin: str, host: str | None) -> bool:
    """The browser-origin rule of the WebSocket upgrade, for HTTP requests that carry one.

    Until `transports._origins` (trust-auth, issue 12) is on main this is its default: the
    gateway's own origin on loopback (http://127.0.0.1:<port>, localhost, [::1]); the swap
    is this function's body becoming one call of that module's check."""
    from ._gateway import is_loopback

    try:
        parts = urllib.parse.urlsplit(origin)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    ports = {listener.socket.getsockname()[1] for listener in gw.listeners}
    return is_loopback(parts.hostname) and port in ports


def _json_response(status: int, payload: object, *headers: tuple[str, str]) -> Response:
    return Response(status, _json.encode(payload), "application/json; charset=utf-8", headers)


def _method_not_allowed(allow: str) -> Response:
    return Response.text(405, "Method Not Allowed", headers=(("allow", allow),))


def bearer_token(req: Request) -> str | None:
    value = req.header("authorization") or ""
    scheme, _, token = value.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def load_dashboard() -> dict[str, bytes]:
    """The dashboard's files, read once (they ship in the package). Blocking file I/O."""
    root = importlib.resources.files("transports") / "dashboard"
    return {name: (root / name).read_bytes() for name, _ in set(DASHBOARD_FILES.values())}


class HttpRoutes:
    """The router of one gateway (`_http.Router`)."""

    def __init__(self, gateway: Gateway, dashboard: dict[str, bytes]) -> None:
        self.gw = gateway
        self.openai = OpenAiRoutes(gateway)
        self.registry = open_registry(gateway)
        self.dashboard = dashboard

    @property
    def chat_completions_enabled(self) -> bool:
        # Read from the serving generation: a config change turns it on or off at once.
        return self.gw.supervisor.generation.config.gateway.http.endpoints.chatCompletions.enabled

    def authorized(self, req: Request) -> bool:
        """The caller proves the gateway's token (or the gateway has none)."""
        auth = self.gw.auth
        if auth.mode != "token":
            return True
        given = bearer_token(req)
        assert auth.token is not None
        return given is not None and hmac.compare_digest(given.encode(), auth.token.encode())

    def __call__(self, req: Request) -> Route | Response:
        response = self._route(req)
        if isinstance(response, Response):
            self.gw.http_counters.count(self._route_name(req.path), response.status)
            return response
        handler = response.handler

        async def counted(request: Request, exchange: Exchange) -> Response | None:
            answer = await handler(request, exchange)
            status = answer.status if answer is not None else 200
            self.gw.http_counters.count(self._route_name(request.path), status)
            return answer

        return Route(counted, response.max_body)

    @staticmethod
    def _route_name(path: str) -> str:
        if path in PROBES:
            return "healthz" if PROBES[path] == "live" else "readyz"
        if path in METRICS_PATHS:
            return "metrics"
        if path in DASHBOARD_FILES:
            return "dashboard"
        if path.startswith("/v1/models"):
            return "v1_models"
        return "v1_chat_completions" if path == "/v1/chat/completions" else "other"

    def _route(self, req: Request) -> Route | Response:
        origin = req.header("origin")
        if origin is not None and not origin_allowed(self.gw, origin, req.header("host")):
            return error_response(403, "origin not allowed", "forbidden")
        path = req.path
        probe = PROBES.get(path)
        if probe is not None:
            if req.method not in ("GET", "HEAD"):
                return _method_not_allowed("GET, HEAD")
            return Route(self.live if probe == "live" else self.ready)
        if path in METRICS_PATHS:
            if req.method not in ("GET", "HEAD"):
                return _method_not_allowed("GET, HEAD")
            if not self.authorized(req):
                return self.unauthorized()
            return Route(self.metrics)
        if path in DASHBOARD_FILES:
            if req.method not in ("GET", "HEAD"):
                return _method_not_allowed("GET, HEAD")
            return Route(self.dashboard_file)
        if path.startswith("/v1/") and self.chat_completions_enabled:
            if not self.authorized(req):
                return self.unauthorized()
            return self.openai.route(req)
        return Response.text(404, "Not Found")

    @staticmethod
    def unauthorized() -> Response:
        response = error_response(401, "Unauthorized", "unauthorized")
        return Response(
            response.status,
            response.body,
            response.content_type,
            (("www-authenticate", 'Bearer realm="clawlane"'),),
        )

    # --- handlers ---------------------------------------------------------------------------

    async def live(self, req: Request, exchange: Exchange) -> Response:
        return _json_response(200, {"ok": True, "status": "live"})

    async def ready(self, req: Request, exchange: Exchange) -> Response:
        failing = self.gw.readiness_failures()
        ready = not failing
        body: dict[str, object] = {"ready": ready}
        if req.local_direct or (self.authorized(req) and self.gw.auth.mode == "token"):
            body["failing"] = failing
            body["uptimeMs"] = int((time.time() - self.gw.started) * 1000)
        return _json_response(200 if ready else 503, body)

    async def metrics(self, req: Request, exchange: Exchange) -> Response:
        return Response(200, render(self.registry), METRICS_CONTENT_TYPE)

    async def dashboard_file(self, req: Request, exchange: Exchange) -> Response:
        name, content_type = DASHBOARD_FILES[req.path]
        headers: tuple[tuple[str, str], ...] = (("cache-control", "no-cache"),)
        if content_type.startswith("text/html"):
            headers += (
                ("content-security-policy", DASHBOARD_CSP),
                ("x-frame-options", "DENY"),
            )
        return Response(200, self.dashboard[name], content_type, headers)
