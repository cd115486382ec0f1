"""Which browser origins may talk to the gateway: one pure decision for WebSocket upgrades
and HTTP requests alike.

A request that carries an `Origin` comes from a web page; requests without one (CLIs,
SDKs) are not decided here. An origin is allowed when:

1. it is listed in `gateway.controlUi.allowedOrigins` (exact `scheme://host[:port]`,
   case-insensitive), or the list holds `"*"`;
2. `gateway.controlUi.dangerouslyAllowHostHeaderOriginFallback` is on and the origin's
   `host[:port]` equals the request's `Host` (OpenClaw's escape hatch; off by default);
3. it is the gateway's own origin: its `host[:port]` equals the request's `Host`, and that
   host is one the gateway can trust to be itself: a loopback name or address when the
   client is on loopback, a private or loopback IP address, or a `.local` / `.ts.net` name.
   A public name that merely matches `Host` (DNS rebinding: `evil.example` pointing at
   127.0.0.1) is not enough.

That is OpenClaw's `checkBrowserOrigin` without its "any loopback origin from a loopback
client" rule: a page served by some other local process (another port on localhost) must
be listed. The malformed and opaque origins (`null`, paths, user info) are refused.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Sequence
from typing import Final

import attrs

ORIGIN_NOT_ALLOWED_MESSAGE: Final = (
    "origin not allowed (open the Control UI from the gateway host or allow it in "
    "gateway.controlUi.allowedOrigins)"
)
_ORIGIN_SHAPE: Final = re.compile(r"^[a-z][a-z0-9+.-]*://[^/?#\\]+/?$", re.IGNORECASE)


@attrs.frozen
class OriginDecision:
    ok: bool
    reason: str = ""
    """Why it was refused (`origin missing or invalid`, `origin not allowed`)."""
    matched_by: str = ""
    """Why it was allowed (`allowlist`, `host-header-fallback`, `same-origin`)."""


@attrs.frozen
class _Origin:
    origin: str
    host: str  # host[:port] as in a Host header, lowercase
    hostname: str


def _parse(raw: str | None) -> _Origin | None:
    text = (raw or "").strip()
    if not text or text == "null" or not _ORIGIN_SHAPE.match(text):
        return None
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    hostname = parts.hostname.lower()
    default = {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(scheme)
    shown = f"[{hostname}]" if ":" in hostname else hostname
    host = shown if port is None or port == default else f"{shown}:{port}"
    return _Origin(origin=f"{scheme}://{host}", host=host, hostname=hostname)


def host_name(host_header: str | None) -> str:
    """The name part of a `Host` header (`[::1]:80` -> `::1`), lowercase."""
    host = (host_header or "").strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else ""
    if host.count(":") > 1:
        return host  # a bare IPv6 address
    return host.split(":", 1)[0]


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def is_loopback_host(name: str) -> bool:
    if name in ("localhost", "localhost.") or name.endswith(".localhost"):
        return True
    ip = _ip(name)
    return ip is not None and ip.is_loopback


def _trusted_same_origin_host(host_header: str, local_client: bool) -> bool:
    name = host_name(host_header)
    if not name:
        return False
    if is_loopback_host(name):
        return local_client
    ip = _ip(name)
    if ip is not None:
        return ip.is_private or ip.is_loopback or ip.is_link_local
    return name.endswith(".local") or name.endswith(".ts.net")


def check_origin(
    origin: str | None,
    *,
    host: str | None,
    local_client: bool,
    allowed_origins: Sequence[str] = (),
    allow_host_header_fallback: bool = False,
) -> OriginDecision:
    """Decide a browser `Origin` (see the module docstring). Pure."""
    parsed = _parse(origin)
    if parsed is None:
        return OriginDecision(False, reason="origin missing or invalid")
    allowlist = {entry.strip().lower().rstrip("/") for entry in allowed_origins if entry.strip()}
    if "*" in allowlist or parsed.origin in allowlist:
        return OriginDecision(True, matched_by="allowlist")
    request_host = (host or "").strip().lower()
    same_host = bool(request_host) and parsed.host == request_host
    if allow_host_header_fallback and same_host:
        return OriginDecision(True, matched_by="host-header-fallback")
    if same_host and _trusted_same_origin_host(request_host, local_client):
        return OriginDecision(True, matched_by="same-origin")
    return OriginDecision(False, reason="origin not allowed")


@attrs.frozen
class Peer:
    """Where a connection comes from, as the upgrade request showed it."""

    address: str
    local: bool
    """Direct loopback: a loopback address with no forwarding headers."""
    origin: str | None = None
    host: str | None = None

    @property
    def has_origin(self) -> bool:
        return bool(self.origin and self.origin.strip())
