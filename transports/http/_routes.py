"""The plain HTTP routes of the gateway's port.

| route | auth | answer |
|---|---|---|
| `GET/HEAD /healthz`, `/health` | none | 200 `{"ok":true,"status":"live"}` while the process serves |
| `GET/HEAD /readyz`, `/ready` | none | 200 / 503 `{"ready":bool}`; with `failing` and `uptimeMs` for loopback callers and token holders |
| `GET /metrics`, `/api/diagnostics/prometheus` | Bearer token (when the gateway has one) | Prometheus text format |
| `GET /`, `/dashboard/*` | none (the page asks for the token itself) | the live dashboard |
| `/v1/models`, `/v1/chat/completions` | Bearer token | OpenAI-compatible, when enabled (`_openai_http`) |
| `POST /tools/invoke` | Bearer token | one tool invoked directly, as OpenClaw's (`_tools_invoke`) |

Everything else is 404; a known path with another method is 405 with `Allow`. Readiness
is OpenClaw's decision for what clawlane has: the store is open, a generation is published,
and the gateway is not shutting down (`failing` names what is not: `store`, `generation`,
`shutdown`).

Browser requests: a request carrying an `Origin` header must come from an allowed origin
(the WebSocket upgrade's rule, `_origins`: the gateway's own origin, or
`gateway.controlUi.allowedOrigins`) or gets 403 before anything else happens. A wrong
Bearer token counts against the same `gateway.auth.rateLimit` as a wrong WebSocket token
(429 with `Retry-After` while locked out). Auth and origin are checked before a body is
read. Responses carry `nosniff`, `no-referrer` and
`no-store` (`_http`); the dashboard's page adds a Content-Security-Policy that allows only
its own scripts and connections to its own origin, and no framing.
"""

from __future__ import annotations

import hmac
import importlib.resources
import time
from typing import TYPE_CHECKING, Final, Protocol

import msgspec

from ..access import SCOPE_SHARED_SECRET, AuthRateLimiter, Peer, browser_origin_key
from ._counters import MetricsHost
from ._openai import OpenAiHost, OpenAiRoutes, error_response
from ._server import Exchange, Request, Response, Route
from ._tools_invoke import MAX_BODY_BYTES as TOOLS_INVOKE_MAX_BODY
from ._tools_invoke import tools_invoke

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


class RoutesHost(MetricsHost, OpenAiHost, Protocol):
    """The gateway as its HTTP routes see it: what a scrape and the OpenAI routes read,
    and what decides who may ask (peers, origins, the token, rate limits)."""

    @property
    def rate_limiter(self) -> AuthRateLimiter: ...
    @property
    def browser_rate_limiter(self) -> AuthRateLimiter: ...

    def is_local_address(self, address: str) -> bool: ...

    def refuse_origin(self, peer: Peer) -> tuple[int, str] | None: ...


FORWARDING_HEADERS: Final = ("forwarded", "x-forwarded-for", "x-real-ip")
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
    root = importlib.resources.files("transports.http") / "dashboard"
    return {name: (root / name).read_bytes() for name, _ in set(DASHBOARD_FILES.values())}


class HttpRoutes:
    """The router of one gateway (`_http.Router`)."""

    def __init__(self, gateway: RoutesHost, dashboard: dict[str, bytes]) -> None:
        self.gw = gateway
        self.openai = OpenAiRoutes(gateway)
        self.registry: CollectorRegistry | None = None  # made by the first scrape
        self.dashboard = dashboard

    @property
    def chat_completions_enabled(self) -> bool:
        # Read from the serving generation: a config change turns it on or off at once.
        return self.gw.actors.supervisor.generation.config.gateway.http.endpoints.chatCompletions.enabled

    def peer(self, req: Request) -> Peer:
        """Where a request comes from, as the WebSocket upgrade's `Peer`: direct loopback
        only without forwarding headers."""
        forwarded = any(h in req.headers for h in FORWARDING_HEADERS) or any(
            h.startswith("x-forwarded-") for h in req.headers
        )
        return Peer(
            address=req.peer,
            local=self.gw.is_local_address(req.peer) and not forwarded,
            origin=req.header("origin"),
            host=req.header("host"),
        )

    def authorized(self, req: Request) -> bool:
        """The caller proves the gateway's token (or the gateway has none). Not a
        checkpoint; counts nothing (see `_authorize`)."""
        auth = self.gw.trust.auth
        if auth.mode != "token":
            return True
        given = bearer_token(req)
        assert auth.token is not None
        return given is not None and hmac.compare_digest(given.encode(), auth.token.encode())

    def _limiter(self, peer: Peer) -> tuple[AuthRateLimiter, str]:
        """The WebSocket handshake's limiters and keys: browser origins on loopback are
        counted per origin, everything else per address."""
        if peer.has_origin and peer.origin is not None and self.gw.is_local_address(peer.address):
            return self.gw.browser_rate_limiter, browser_origin_key(peer.origin)
        return self.gw.rate_limiter, peer.address

    async def _authorize(self, req: Request, peer: Peer) -> Response | None:
        """None when the Bearer token is right; else 401, or 429 while the caller is
        locked out. A wrong token counts as a failed attempt, answered late on loopback
        (the WebSocket handshake's `gateway.auth.rateLimit`). A checkpoint."""
        if self.gw.trust.auth.mode != "token":
            return None
        limiter, key = self._limiter(peer)
        check = limiter.check(key, SCOPE_SHARED_SECRET)
        if not check.allowed:
            seconds = max(1, -(-check.retry_after_ms // 1000))
            limited = error_response(
                429,
                "Too many failed authentication attempts. Please try again later.",
                "rate_limited",
            )
            return Response(
                429, limited.body, limited.content_type, (("retry-after", str(seconds)),)
            )
        if self.authorized(req):
            limiter.reset(key, SCOPE_SHARED_SECRET)
            return None
        if bearer_token(req) is not None:
            await limiter.record_failure_and_delay(key, SCOPE_SHARED_SECRET)
        return self.unauthorized()

    async def __call__(self, req: Request) -> Route | Response:
        response = await self._route(req)
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

    async def _route(self, req: Request) -> Route | Response:
        peer = self.peer(req)
        refusal = self.gw.refuse_origin(peer)  # the WebSocket upgrade's rule (`_origins`)
        if refusal is not None:
            return error_response(refusal[0], refusal[1], "forbidden")
        path = req.path
        probe = PROBES.get(path)
        if probe is not None:
            if req.method not in ("GET", "HEAD"):
                return _method_not_allowed("GET, HEAD")
            return Route(self.live if probe == "live" else self.ready)
        if path in METRICS_PATHS:
            if req.method not in ("GET", "HEAD"):
                return _method_not_allowed("GET, HEAD")
            refused = await self._authorize(req, peer)
            return refused if refused is not None else Route(self.metrics)
        if path in DASHBOARD_FILES:
            if req.method not in ("GET", "HEAD"):
                return _method_not_allowed("GET, HEAD")
            return Route(self.dashboard_file)
        if path == "/tools/invoke":
            if req.method != "POST":
                return _method_not_allowed("POST")
            refused = await self._authorize(req, peer)
            return refused or Route(self.tools_invoke, TOOLS_INVOKE_MAX_BODY)
        if path.startswith("/v1/") and self.chat_completions_enabled:
            refused = await self._authorize(req, peer)
            return refused if refused is not None else self.openai.route(req)
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

    async def tools_invoke(self, req: Request, exchange: Exchange) -> Response:
        return await tools_invoke(self.gw.actors.supervisor, req, exchange)

    async def live(self, req: Request, exchange: Exchange) -> Response:
        return _json_response(200, {"ok": True, "status": "live"})

    async def ready(self, req: Request, exchange: Exchange) -> Response:
        failing = self.gw.readiness_failures()
        ready = not failing
        body: dict[str, object] = {"ready": ready}
        if self.peer(req).local or (self.authorized(req) and self.gw.trust.auth.mode == "token"):
            body["failing"] = failing
            body["uptimeMs"] = int((time.time() - self.gw.process.started) * 1000)
        return _json_response(200 if ready else 503, body)

    async def metrics(self, req: Request, exchange: Exchange) -> Response:
        # Imported here: prometheus-client loads when /metrics is first served, not at start.
        from ._metrics import CONTENT_TYPE, open_registry, render

        if self.registry is None:
            self.registry = open_registry(self.gw)
        return Response(200, render(self.registry), CONTENT_TYPE)

    async def dashboard_file(self, req: Request, exchange: Exchange) -> Response:
        name, content_type = DASHBOARD_FILES[req.path]
        headers: tuple[tuple[str, str], ...] = (("cache-control", "no-cache"),)
        if content_type.startswith("text/html"):
            headers += (
                ("content-security-policy", DASHBOARD_CSP),
                ("x-frame-options", "DENY"),
            )
        return Response(200, self.dashboard[name], content_type, headers)
