"""The web tools of OpenClaw's `group:web`: `web_fetch`, and `web_search` (unavailable).

`web_fetch` GETs one http(s) URL and returns its readable content as markdown or text, as
OpenClaw's does (same parameters, same result fields, same `tools.web.fetch.*` settings):

- Every hop (the URL, then each redirect, at most `max_redirects`) passes the SSRF guard of
  `_egress` before anything is sent: the host name, then every address it resolves to. The
  request goes to the checked address itself (the `Host` header and TLS SNI carry the name, and
  the certificate is verified against it), so a later DNS answer cannot redirect it. Configured
  `headers` go to the first host only; a redirect to another origin drops them.
- Reaching a response (redirects included) has `timeout_seconds`; its body is read up to
  `max_response_bytes` (decoded) and until that time: what is cut off (past the size, the time,
  or a connection that broke) is dropped, with `truncated` and a `warning`.
- HTML becomes markdown or text through `_html` (`extractor: "html"`), `text/markdown` is kept
  (`"markdown"`), JSON is pretty-printed (`"json"`), anything else, binary included, is
  returned as text (`"raw"`), as OpenClaw returns it.
- The result is JSON (`{url, finalUrl, status, contentType?, title?, extractMode, extractor,
  externalContent, truncated, length, rawLength, fetchedAt, tookMs, text, warning?,
  cached?}`); `text`, `title` and `warning` are wrapped as untrusted content (`_external`,
  OpenClaw's markers), with its security notice before the body, and share `maxChars` (UTF-16
  units, as OpenClaw counts them).
- Results are cached per tool instance (one per config generation) for `cache_ttl_minutes`,
  at most `CACHE_MAX_ENTRIES` of them, keyed by URL, mode and `maxChars`.

Each call opens its own `httpx.AsyncClient` (no cookies, no connection reuse between calls or
hops, no environment proxy) and closes it before returning.

A failure is answered as OpenClaw 2026.9.6's agent answers its `web_fetch` throwing
(`thrown_result`: `{status: "error", tool: "web_fetch", error}`), the error being OpenClaw's own
message, bounded and wrapped as untrusted `Source: API` content with the notice
(`_external.network_tool_error`): "Invalid URL: must be http or https", the guard's "Blocked
hostname or private/internal/special-use IP address" / "Blocked: resolves to
private/internal/special-use IP address", "getaddrinfo ENOTFOUND <host>", "fetch failed |
connect ECONNREFUSED <address>:<port> | ECONNREFUSED", "request timed out", "Too many redirects
(limit: N)", "Redirect loop detected", "Redirect missing location header (<status>)", "Web
fetch failed (<status>): <the body or the reason phrase, wrapped as fetched content>", the
extraction failures, "web_fetch is disabled.".

`web_search` is offered with OpenClaw's schema so that a policy naming it means the same, but
clawlane has no search provider: a call fails (thrown as OpenClaw's does without a provider)
with clawlane's own text saying what to configure.
"""

from __future__ import annotations

import codecs
import errno
import json
import re
import socket
import ssl
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

import httpx
import msgspec
import trio
from attrs import field, frozen

from ._egress import EgressPolicy, IpAddress, normalize_hostname, resolve_pinned
from ._errors import EgressBlockedError
from ._external import (
    network_tool_error,
    truncate_sanitized,
    utf16_len,
    utf16_prefix,
    wrap_external_content,
)
from ._html import extract_readable, markdown_to_text
from ._html_fragment import html_to_markdown
from ._html_fragment import markdown_to_text as fragment_text
from ._tool import ToolContext, ToolResult, text_result, thrown_result

__all__ = [
    "CACHE_MAX_ENTRIES",
    "WebFetchParams",
    "WebFetchSettings",
    "WebFetchTool",
    "WebSearchParams",
    "WebSearchTool",
    "WebSettings",
    "web_tools",
]

DEFAULT_MAX_CHARS: Final = 20_000
DEFAULT_MAX_RESPONSE_BYTES: Final = 750_000
MAX_RESPONSE_BYTES_RANGE: Final = (32_000, 10_000_000)
DEFAULT_MAX_REDIRECTS: Final = 3
DEFAULT_TIMEOUT_SECONDS: Final = 30.0
DEFAULT_CACHE_TTL_MINUTES: Final = 15.0
CACHE_MAX_ENTRIES: Final = 100
DEFAULT_USER_AGENT: Final = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7_2) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/122.0.0.0 Safari/537.36"
)
_ERROR_MAX_BYTES: Final = 64_000
_ERROR_MAX_CHARS: Final = 4_000
_FIELD_MAX_CHARS: Final = 256
_METADATA_MAX_CHARS: Final = 512
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
# Headers the fetch owns, and framing / hop-by-hop headers a request cannot carry as extras.
_RESERVED_HEADERS: Final = frozenset(
    [
        "accept",
        "accept-language",
        "user-agent",
        "sec-fetch-mode",
        "connection",
        "content-length",
        "expect",
        "host",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ]
)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


# --- settings ----------------------------------------------------------------------------


def _clamp_bytes(value: int) -> int:
    low, high = MAX_RESPONSE_BYTES_RANGE
    return min(high, max(low, value))


def _headers(
    value: Mapping[str, str] | Iterable[tuple[str, str]],
) -> tuple[tuple[str, str], ...]:
    """Operator headers a request can carry: reserved, malformed and case-colliding names
    dropped (a later entry replaces an earlier one of the same name in another case)."""
    pairs = value.items() if isinstance(value, Mapping) else value
    kept: dict[str, tuple[str, str]] = {}
    for raw_name, raw_value in pairs:
        name = raw_name.strip()
        key = name.lower()
        kept.pop(key, None)
        if key in _RESERVED_HEADERS or not _TOKEN.match(name):
            continue
        if any(ch in raw_value for ch in "\r\n\0") or any(ord(ch) > 0xFF for ch in raw_value):
            continue
        kept[key] = (name, raw_value)
    return tuple(sorted(kept.values()))


@frozen
class WebFetchSettings:
    """`tools.web.fetch.*`, resolved (OpenClaw's defaults; `max_response_bytes` clamped to
    32,000–10,000,000; `max_chars` at least 100 and at most `max_chars_cap`)."""

    enabled: bool = True
    max_chars: int = DEFAULT_MAX_CHARS
    max_chars_cap: int = DEFAULT_MAX_CHARS
    max_response_bytes: int = field(default=DEFAULT_MAX_RESPONSE_BYTES, converter=_clamp_bytes)
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    cache_ttl_minutes: float = DEFAULT_CACHE_TTL_MINUTES
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    user_agent: str = DEFAULT_USER_AGENT
    headers: tuple[tuple[str, str], ...] = field(default=(), converter=_headers)
    readability: bool = True
    egress: EgressPolicy = field(factory=EgressPolicy)

    def max_chars_for(self, requested: int | None) -> int:
        """The `maxChars` a call gets: its own or the configured one, within [100, cap]."""
        value = requested if requested is not None else self.max_chars
        return min(max(100, value), max(100, self.max_chars_cap))


# --- untrusted-content wrapping ------------------------------------------------------------

_WITH_WARNING_OVERHEAD: Final = utf16_len(wrap_external_content("", source="web_fetch"))
_NO_WARNING_OVERHEAD: Final = utf16_len(
    wrap_external_content("", source="web_fetch", include_warning=False)
)


def _wrap_web_fetch(value: str, limit: int) -> tuple[str, bool]:
    """`value` wrapped as fetched content within `limit` UTF-16 units, as OpenClaw's
    `wrapWebFetchContent`: with the security notice when the empty wrapper with it fits, the
    text cut to what is left (or the empty wrapper itself cut, when even that does not fit).
    Returns the wrapped text and whether anything was cut."""
    if limit <= 0:
        return "", True
    warning = limit >= _WITH_WARNING_OVERHEAD
    overhead = _WITH_WARNING_OVERHEAD if warning else _NO_WARNING_OVERHEAD
    if overhead > limit:
        empty = wrap_external_content("", source="web_fetch", include_warning=warning)
        return utf16_prefix(empty, limit), True
    inner = truncate_sanitized(value, limit - overhead)
    return (
        wrap_external_content(inner.text, source="web_fetch", include_warning=warning),
        inner.truncated,
    )


# --- parameters --------------------------------------------------------------------------


class WebFetchParams(msgspec.Struct, frozen=True, rename="camel"):
    url: Annotated[str, msgspec.Meta(description="HTTP(S) URL.")]
    extract_mode: Annotated[
        Literal["markdown", "text"], msgspec.Meta(description="Extract as markdown/text.")
    ] = "markdown"
    max_chars: (
        Annotated[int, msgspec.Meta(ge=100, description="Max chars returned; truncates.")] | None
    ) = None


@frozen
class _Fetched:
    final_url: str
    status: int
    content_type: str
    body: str
    truncated: bool
    bytes_read: int


class _FetchFailed(Exception):
    """A fetch that failed; the message is what OpenClaw's `web_fetch` throws for it."""


_INVALID_URL: Final = "Invalid URL: must be http or https"
_TIMED_OUT: Final = "request timed out"
_NO_CONTENT: Final = (
    "Web fetch extraction failed: Readability, provider fallback, and basic HTML cleanup "
    "returned no content."
)
_NO_READABILITY: Final = (
    "Web fetch extraction failed: Readability disabled and no fetch provider is available."
)


def _thrown(message: str) -> ToolResult:
    """A failure as OpenClaw's agent answers a throw from `web_fetch` (a tool whose content
    comes from the network): the message wrapped as untrusted `Source: API` content."""
    return thrown_result("web_fetch", network_tool_error(message))


def _sanitize_url(raw: str) -> str:
    """Whitespace a model put around the URL or after the scheme removed."""
    url = raw.strip()
    return re.sub(r"^(https?://)\s+", r"\1", url, flags=re.IGNORECASE)


def _content_type(value: str | None) -> str:
    return (value or "application/octet-stream").split(";", 1)[0].strip().lower()


def _decode(data: bytes, charset: str | None, *, truncated: bool) -> str:
    """`data` as text (UTF-8 unless the response names another charset); a character the cut
    left incomplete is dropped, not replaced."""
    encoding = "utf-8"
    if charset:
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            encoding = "utf-8"
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    return decoder.decode(data, final=not truncated)


def _errno_name(exc: BaseException) -> str | None:
    """The name (`ECONNREFUSED`, ...) of the first OS error under `exc`, through causes,
    contexts and exception groups."""
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        number = current.errno if isinstance(current, OSError) else None
        if number is not None and number in errno.errorcode:
            return errno.errorcode[number]
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def _request_failure(exc: httpx.HTTPError, address: IpAddress, port: int) -> str:
    """What OpenClaw says when its request (undici's fetch) fails, its causes joined by ` | `:
    a connection refused or unreachable as `fetch failed | connect ECONNREFUSED
    <address>:<port> | ECONNREFUSED`, a server that closed without answering as `fetch failed |
    other side closed | UND_ERR_SOCKET`, anything else as `fetch failed | <the error>`."""
    code = _errno_name(exc)
    if isinstance(exc, httpx.ConnectError) and code:
        return f"fetch failed | connect {code} {address}:{port} | {code}"
    if isinstance(exc, httpx.RemoteProtocolError) and "without sending a response" in str(exc):
        return "fetch failed | other side closed | UND_ERR_SOCKET"
    detail = str(exc) or type(exc).__name__
    return f"fetch failed | {detail}" + (f" | {code}" if code and code not in detail else "")


def _looks_like_html(body: str) -> bool:
    head = body.lstrip()[:256].lower()
    return head.startswith(("<!doctype html", "<html"))


def _http_failure(status: int, reason: str, content_type: str, body: str) -> str:
    """OpenClaw's message for a non-2xx answer: `Web fetch failed (<status>): ` and the body
    (an HTML page as its title and text, rendered as OpenClaw renders it, `_html_fragment`)
    within 4,000 characters, else the reason phrase, wrapped as fetched content with its
    notice."""
    detail = body
    if detail and ("text/html" in content_type or _looks_like_html(detail)):
        text, title = html_to_markdown(detail)
        detail = fragment_text(f"{title}\n{text}" if title else text)
    detail = utf16_prefix(detail.strip(), _ERROR_MAX_CHARS)
    wrapped, _ = _wrap_web_fetch(detail or reason, _ERROR_MAX_CHARS)
    return f"Web fetch failed ({status}): {wrapped}"


_SSL_CONTEXT: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = httpx.create_ssl_context()
    return _SSL_CONTEXT


async def _abandon(chunks: AsyncIterator[bytes]) -> None:
    """End a body iterator that will not be read to its end (as `runtime.llm` does): httpx
    nests several async generators under `aiter_bytes`, and closing the outer one leaves the
    inner ones for the garbage collector, which trio warns about. Resumed under a cancelled
    scope instead, the innermost read raises `trio.Cancelled` and the whole chain ends."""
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            async for _chunk in chunks:
                pass
        except httpx.HTTPError:
            pass


def _pinned_url(url: httpx.URL, address: IpAddress) -> str:
    return str(url.copy_with(host=str(address)))


class WebFetchTool:
    """`web_fetch` (see the module docstring). One instance per config generation; it holds
    the cache, so instances are cheap to make and cheap to drop."""

    name = "web_fetch"
    description = "Fetch URL; extract readable markdown/text. Lightweight; no browser automation."
    params = WebFetchParams
    mutating = False

    def __init__(self, settings: WebFetchSettings | None = None) -> None:
        self.settings = settings or WebFetchSettings()
        self._cache: OrderedDict[tuple[str, str, int], tuple[float, dict[str, Any]]] = OrderedDict()

    async def run(self, args: WebFetchParams, ctx: ToolContext) -> ToolResult:
        """Fetch and extract (a checkpoint); every failure is OpenClaw's thrown-tool result
        (see the module docstring). Cancelling closes the connection and caches nothing."""
        settings = self.settings
        if not settings.enabled:
            await trio.lowlevel.checkpoint()
            return _thrown("web_fetch is disabled.")
        url = _sanitize_url(args.url)
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL:
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
            await trio.lowlevel.checkpoint()
            return _thrown(_INVALID_URL)
        mode = args.extract_mode
        max_chars = settings.max_chars_for(args.max_chars)
        key = (str(parsed), mode, max_chars)
        cached = self._cached(key)
        if cached is not None:
            await trio.lowlevel.checkpoint()
            return _json_result({**cached, "cached": True})
        started = time.monotonic()
        try:
            fetched = await self._fetch(parsed, trio.current_time() + settings.timeout_seconds)
        except (trio.TooSlowError, httpx.TimeoutException):
            return _thrown(_TIMED_OUT)
        except (EgressBlockedError, _FetchFailed) as exc:
            return _thrown(str(exc))
        except httpx.HTTPError as exc:
            return _thrown(f"fetch failed | {str(exc) or type(exc).__name__}")
        except OSError as exc:  # "Unable to resolve hostname: <host>", as OpenClaw's guard says
            return _thrown(str(exc) or type(exc).__name__)
        payload = self._payload(url, fetched, mode, max_chars, started)
        if isinstance(payload, str):
            return _thrown(payload)
        self._store(key, payload)
        return _json_result(payload)

    # --- the cache ---------------------------------------------------------------------

    def _cached(self, key: tuple[str, str, int]) -> dict[str, Any] | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        expires, payload = entry
        if time.monotonic() >= expires:
            del self._cache[key]
            return None
        return payload

    def _store(self, key: tuple[str, str, int], payload: dict[str, Any]) -> None:
        ttl = self.settings.cache_ttl_minutes * 60
        if ttl <= 0:
            return
        self._cache.pop(key, None)
        while len(self._cache) >= CACHE_MAX_ENTRIES:
            self._cache.popitem(last=False)  # the oldest entry
        self._cache[key] = (time.monotonic() + ttl, payload)

    # --- the fetch ---------------------------------------------------------------------

    async def _fetch(self, url: httpx.URL, deadline: float) -> _Fetched:
        """GET `url`, following redirects as OpenClaw's guarded fetch does (its checks and
        words: too many, a missing Location, a loop, a target that is not http(s)). Reaching
        a response's headers past `deadline` raises `trio.TooSlowError`; its body is read
        until then."""
        settings = self.settings
        first_origin = (url.scheme, url.host, url.port)
        visited = {str(url)}
        redirects = 0
        async with httpx.AsyncClient(
            verify=_ssl_context(),
            trust_env=False,
            follow_redirects=False,
            timeout=httpx.Timeout(settings.timeout_seconds),
            limits=httpx.Limits(max_keepalive_connections=0),
        ) as client:
            while True:
                if url.scheme not in ("http", "https"):
                    raise _FetchFailed(_INVALID_URL)
                with trio.fail_at(deadline):
                    response = await self._send(
                        client, url, same_origin=((url.scheme, url.host, url.port) == first_origin)
                    )
                try:
                    if response.status_code not in _REDIRECTS:
                        return await self._read(url, response, deadline)
                    redirects += 1
                    if redirects > settings.max_redirects:
                        raise _FetchFailed(f"Too many redirects (limit: {settings.max_redirects})")
                    location = response.headers.get("location")
                    if not location:
                        raise _FetchFailed(
                            f"Redirect missing location header ({response.status_code})"
                        )
                    try:
                        url = url.join(location)
                    except httpx.InvalidURL as exc:
                        raise _FetchFailed("Invalid URL") from exc
                    if str(url) in visited:
                        raise _FetchFailed("Redirect loop detected")
                    visited.add(str(url))
                finally:
                    await response.aclose()

    async def _send(
        self, client: httpx.AsyncClient, url: httpx.URL, *, same_origin: bool
    ) -> httpx.Response:
        """One hop: the guard, then the request to the checked address (configured headers
        only to the first origin). Failures in OpenClaw's words."""
        port = url.port or (443 if url.scheme == "https" else 80)
        host = url.raw_host.decode("ascii")
        try:
            target = await resolve_pinned(host, port, self.settings.egress)
        except socket.gaierror as exc:
            code = "EAI_AGAIN" if exc.errno == socket.EAI_AGAIN else "ENOTFOUND"
            raise _FetchFailed(f"getaddrinfo {code} {normalize_hostname(host)}") from exc
        headers = {
            "Accept": "text/markdown, text/html;q=0.9, */*;q=0.1",
            "User-Agent": self.settings.user_agent,
            "Accept-Language": "en-US,en;q=0.9",
            "Host": url.netloc.decode("ascii"),
        }
        if same_origin:
            headers.update(self.settings.headers)
        request = client.build_request(
            "GET",
            _pinned_url(url, target.address),
            headers=headers,
            extensions={"sni_hostname": host},
        )
        try:
            return await client.send(request, stream=True)
        except httpx.TimeoutException:
            raise
        except httpx.HTTPError as exc:
            raise _FetchFailed(_request_failure(exc, target.address, port)) from exc

    async def _read(self, url: httpx.URL, response: httpx.Response, deadline: float) -> _Fetched:
        """The body, up to the size cap; a body that breaks off or is still coming at
        `deadline` is kept as far as it came, marked truncated (as OpenClaw's reader does).
        A non-2xx answer raises OpenClaw's `Web fetch failed (<status>): ...`."""
        content_type = _content_type(response.headers.get("content-type"))
        ok = 200 <= response.status_code < 300
        limit = self.settings.max_response_bytes if ok else _ERROR_MAX_BYTES
        chunks: list[bytes] = []
        size = 0
        truncated = False
        body_chunks = response.aiter_bytes()
        try:
            with trio.move_on_at(deadline) as scope:
                async for chunk in body_chunks:
                    room = limit - size
                    if len(chunk) >= room:
                        chunks.append(chunk[:room])
                        size += room
                        truncated = len(chunk) > room
                        if truncated:
                            break
                        continue
                    chunks.append(chunk)
                    size += len(chunk)
        except httpx.HTTPError:
            truncated = True
        finally:
            await _abandon(body_chunks)
        truncated = truncated or scope.cancelled_caught
        body = _decode(b"".join(chunks), response.charset_encoding, truncated=truncated)
        if not ok:
            raise _FetchFailed(
                _http_failure(response.status_code, response.reason_phrase, content_type, body)
            )
        return _Fetched(
            final_url=str(url),
            status=response.status_code,
            content_type=content_type,
            body=body,
            truncated=truncated,
            bytes_read=size,
        )

    # --- the result --------------------------------------------------------------------

    def _payload(
        self, url: str, fetched: _Fetched, mode: str, max_chars: int, started: float
    ) -> dict[str, Any] | str:
        title: str | None = None
        text = fetched.body
        extractor = "raw"
        ctype = fetched.content_type
        if ctype == "text/markdown":
            extractor = "markdown"
            if mode == "text":
                text = markdown_to_text(text)
        elif ctype in ("text/html", "application/xhtml+xml"):
            if not self.settings.readability:
                return _NO_READABILITY
            page = extract_readable(
                fetched.body,
                base_url=fetched.final_url,
                mode="text" if mode == "text" else "markdown",
            )
            if not page.text:
                return _NO_CONTENT
            text, title, extractor = page.text, page.title, "html"
        elif ctype == "application/json" or ctype.endswith("+json"):
            try:
                text = json.dumps(json.loads(fetched.body), indent=2, ensure_ascii=False)
                extractor = "json"
            except ValueError:
                pass
        warning = (
            f"Response body incomplete after {fetched.bytes_read} bytes."
            if fetched.truncated
            else None
        )
        return _build_payload(
            url=url,
            fetched=fetched,
            mode=mode,
            extractor=extractor,
            title=title,
            text=text,
            warning=warning,
            max_chars=max_chars,
            took_ms=int((time.monotonic() - started) * 1000),
        )


def _build_payload(
    *,
    url: str,
    fetched: _Fetched,
    mode: str,
    extractor: str,
    title: str | None,
    text: str,
    warning: str | None,
    max_chars: int,
    took_ms: int,
) -> dict[str, Any]:
    """OpenClaw's result fields. `warning` (first) and `title` are wrapped without the notice,
    each from at most 256 characters, together within min(512, max_chars / 2); the body gets
    what is left of `max_chars`, notice included."""
    truncated = fetched.truncated
    metadata_room = min(_METADATA_MAX_CHARS, max_chars // 2)
    wrapped_meta: dict[str, str] = {}
    for name, value in (("warning", warning), ("title", title)):
        if not value:
            continue
        inner_room = max(0, metadata_room - _NO_WARNING_OVERHEAD)
        bounded = truncate_sanitized(value, min(_FIELD_MAX_CHARS, inner_room))
        truncated = truncated or bounded.truncated
        if bounded.text:
            wrapped = wrap_external_content(bounded.text, source="web_fetch", include_warning=False)
            wrapped_meta[name] = wrapped
            metadata_room -= utf16_len(wrapped)
    body_room = max_chars - sum(utf16_len(v) for v in wrapped_meta.values())
    body, body_cut = _wrap_web_fetch(text, body_room)
    payload: dict[str, Any] = {
        "url": url,
        "finalUrl": fetched.final_url,
        "contentType": fetched.content_type[:_FIELD_MAX_CHARS],
        "status": fetched.status,
    }
    if "title" in wrapped_meta:
        payload["title"] = wrapped_meta["title"]
    payload.update(
        {
            "extractMode": mode,
            "extractor": extractor,
            "externalContent": {"untrusted": True, "source": "web_fetch", "wrapped": True},
            "truncated": truncated or body_cut,
            "length": utf16_len(body),
            "rawLength": utf16_len(text),
            "fetchedAt": datetime.now(UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "tookMs": took_ms,
            "text": body,
        }
    )
    if "warning" in wrapped_meta:
        payload["warning"] = wrapped_meta["warning"]
    return payload


def _json_result(payload: dict[str, Any]) -> ToolResult:
    return text_result(json.dumps(payload, indent=2, ensure_ascii=False), details=payload)


# --- web_search ----------------------------------------------------------------------------


class WebSearchParams(msgspec.Struct, frozen=True):
    """OpenClaw's `web_search` parameters (snake_case, as OpenClaw names them)."""

    query: Annotated[str, msgspec.Meta(description="Search query.")]
    count: Annotated[float, msgspec.Meta(ge=1, le=10, description="Result count.")] | None = None
    country: Annotated[str, msgspec.Meta(description="2-letter country code.")] | None = None
    language: Annotated[str, msgspec.Meta(description="ISO 639-1 language.")] | None = None
    freshness: (
        Annotated[str, msgspec.Meta(description="Time filter: day/week/month/year.")] | None
    ) = None
    date_after: Annotated[str, msgspec.Meta(description="Published after YYYY-MM-DD.")] | None = (
        None
    )
    date_before: Annotated[str, msgspec.Meta(description="Published before YYYY-MM-DD.")] | None = (
        None
    )
    search_lang: Annotated[str, msgspec.Meta(description="Brave result language.")] | None = None
    ui_lang: Annotated[str, msgspec.Meta(description="Brave UI locale.")] | None = None
    domain_filter: (
        Annotated[list[str], msgspec.Meta(description="Perplexity domain filter.")] | None
    ) = None
    max_tokens: (
        Annotated[
            float, msgspec.Meta(ge=1, le=1_000_000, description="Perplexity total token budget.")
        ]
        | None
    ) = None
    max_tokens_per_page: (
        Annotated[float, msgspec.Meta(ge=1, description="Perplexity tokens per page.")] | None
    ) = None


class WebSearchTool:
    """`web_search`: offered with OpenClaw's schema; every call is an error result, since
    clawlane has no search provider. `provider` is `tools.web.search.provider`, if set."""

    name = "web_search"
    description = (
        "Search current web; normalized provider results. Supports freshness and date-range "
        "filters (freshness, date_after/date_before) and domain filtering (domain_filter)."
    )
    params = WebSearchParams
    mutating = False

    def __init__(self, provider: str | None = None) -> None:
        self.provider = provider

    async def run(self, args: WebSearchParams, ctx: ToolContext) -> ToolResult:
        """An error naming what to configure (a checkpoint), answered as OpenClaw's agent
        answers its `web_search` throwing without a provider ("web_search is disabled or no
        provider is available."): the thrown-tool result, the message wrapped as `Source: API`
        untrusted content."""
        await trio.lowlevel.checkpoint()
        if self.provider:
            why = f"the configured provider {self.provider!r} (tools.web.search.provider) is not available in clawlane"
        else:
            why = "no web search provider is configured (tools.web.search.provider)"
        message = (
            f"web_search is unavailable: {why}. clawlane has no web search provider yet; "
            "use web_fetch to read a page whose URL you know, or set "
            "tools.web.search.enabled: false to stop offering web_search."
        )
        return thrown_result(self.name, network_tool_error(message))


# --- the pair ------------------------------------------------------------------------------


@frozen
class WebSettings:
    """`tools.web.*`, resolved: `web_fetch`'s settings, and whether and with which provider
    `web_search` is offered."""

    fetch: WebFetchSettings = field(factory=WebFetchSettings)
    search_enabled: bool = True
    search_provider: str | None = None


def web_tools(settings: WebSettings | None = None) -> list[WebSearchTool | WebFetchTool]:
    """Fresh `web_search` and `web_fetch` (OpenClaw's order), less any disabled by config."""
    web = settings or WebSettings()
    tools: list[WebSearchTool | WebFetchTool] = []
    if web.search_enabled:
        tools.append(WebSearchTool(web.search_provider))
    if web.fetch.enabled:
        tools.append(WebFetchTool(web.fetch))
    return tools
