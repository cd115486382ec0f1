"""`tools.web.*` from the config, as the web tools' settings (OpenClaw's defaults for what is
unset). Pure; read once per config generation."""

from __future__ import annotations

from ..model._config_types import ToolsWebConfig
from ..tools import EgressPolicy, WebFetchSettings, WebSettings

__all__ = ["web_settings"]


def web_settings(web: ToolsWebConfig) -> WebSettings:
    """The `WebSettings` `builtin_tools` takes, from the config's `tools.web`."""
    fetch = web.fetch
    ssrf = fetch.ssrfPolicy
    defaults = WebFetchSettings()
    max_chars_cap = fetch.maxCharsCap or defaults.max_chars_cap
    return WebSettings(
        fetch=WebFetchSettings(
            enabled=fetch.enabled,
            max_chars=fetch.maxChars or defaults.max_chars,
            max_chars_cap=max_chars_cap,
            max_response_bytes=fetch.maxResponseBytes or defaults.max_response_bytes,
            timeout_seconds=float(fetch.timeoutSeconds or defaults.timeout_seconds),
            cache_ttl_minutes=(
                defaults.cache_ttl_minutes
                if fetch.cacheTtlMinutes is None
                else fetch.cacheTtlMinutes
            ),
            max_redirects=(
                defaults.max_redirects if fetch.maxRedirects is None else fetch.maxRedirects
            ),
            user_agent=fetch.userAgent or defaults.user_agent,
            headers=fetch.headers,
            readability=fetch.readability,
            egress=EgressPolicy(
                allowed_hostnames=ssrf.allowedHostnames,
                blocked_hostnames=ssrf.blockedHostnames,
                allow_private_network=ssrf.dangerouslyAllowPrivateNetwork,
                allow_rfc2544_benchmark_range=ssrf.allowRfc2544BenchmarkRange,
                allow_ipv6_unique_local_range=ssrf.allowIpv6UniqueLocalRange,
            ),
        ),
        search_enabled=web.search.enabled,
        search_provider=web.search.provider,
    )
