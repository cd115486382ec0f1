"""What the three HTTP transports share: the pooled client, timeouts, error classification.

`HttpProvider` is the base of every SSE transport: it owns one pooled `httpx.AsyncClient`
(created on first use, closed by `aclose`), POSTs one JSON body per turn and turns the SSE
response into deltas with a transport-specific `StreamParser`. Everything that can go wrong
ends as a `ProviderError`:

- an HTTP status → `classify_status` (auth 401/403, rate limit 429 with Retry-After,
  overloaded 503/529, context overflow from the providers' real 400/413 messages, ...);
- an error event inside the stream → `classify_error` with the provider's error type/code;
- an httpx exception → `map_transport_error` (timeout, network, malformed);
- a chunk that is not valid JSON or SSE → ``malformed``;
- a stream that ends before its terminal event → ``network``.

Cancellation closes the HTTP response at once (httpcore closes the connection of a response
that was not read to the end), so the server sees the client go.
"""

from __future__ import annotations

import abc
import contextlib
import email.utils
import functools
import math
import ssl
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol

import httpx
import msgspec
import trio

from ._sse import SSEDecodeError, SSEDecoder, SSEEvent
from ._types import ModelDelta, ModelRequest, ProviderError, ProviderErrorKind

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "HttpProvider",
    "ModelParams",
    "StreamParser",
    "classify_error",
    "classify_status",
    "encode_body",
    "error_from_payload",
    "is_context_overflow",
    "make_timeout",
    "map_transport_error",
    "open_client",
    "parse_params",
    "parse_retry_after",
]

DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds to open a TCP (+TLS) connection."""
DEFAULT_READ_TIMEOUT = 300.0
"""Seconds without a byte from the socket before httpx gives up. A backstop: the agent's LLM
idle watchdog (`stream_with_retry(idle_timeout=...)`) is the tighter, delta-level bound."""
DEFAULT_WRITE_TIMEOUT = 30.0
DEFAULT_POOL_TIMEOUT = 30.0

MAX_ERROR_BODY = 64 * 1024
"""Bytes of an error response read for its message; the rest is dropped."""
DRAIN_TIMEOUT = 0.5
"""After the terminal event, seconds spent reading the end of the response so the connection
can go back to the pool. A server that keeps it open longer loses the connection, no more."""
DRAIN_LIMIT = 64 * 1024

_USER_AGENT = "clawlane/0.1"

# --- client and timeouts ----------------------------------------------------------------


def make_timeout(timeout_seconds: float | None) -> httpx.Timeout:
    """Timeouts of one provider. ``timeout_seconds`` (the provider's ``timeoutSeconds``)
    replaces the read timeout: the longest wait for the next bytes of a response."""
    read = timeout_seconds if timeout_seconds is not None and timeout_seconds > 0 else None
    return httpx.Timeout(
        connect=DEFAULT_CONNECT_TIMEOUT,
        read=read if read is not None else DEFAULT_READ_TIMEOUT,
        write=DEFAULT_WRITE_TIMEOUT,
        pool=DEFAULT_POOL_TIMEOUT,
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~20 ms: once per process, not once per generation.
    return httpx.create_ssl_context()


def open_client(
    *,
    headers: Mapping[str, str],
    timeout_seconds: float | None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """A pooled client for one provider. No I/O; close it with ``await client.aclose()``.

    ``transport`` replaces the network (tests pass an `httpx.MockTransport`).
    """
    return httpx.AsyncClient(
        headers={"user-agent": _USER_AGENT, **headers},
        timeout=make_timeout(timeout_seconds),
        limits=httpx.Limits(
            max_connections=64, max_keepalive_connections=16, keepalive_expiry=30.0
        ),
        verify=_ssl_context(),
        follow_redirects=False,
        transport=transport,
    )


# --- error classification ---------------------------------------------------------------

_OVERFLOW_MARKERS = (
    "context_length_exceeded",  # OpenAI error code (chat completions and responses)
    "maximum context length",  # OpenAI / vLLM: "This model's maximum context length is ..."
    "exceeds the context window",  # OpenAI responses: "Your input exceeds the context window ..."
    "prompt is too long",  # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    "exceed context limit",  # Anthropic: "input length and `max_tokens` exceed context limit"
    "exceeds the available context size",  # llama.cpp server
)


def is_context_overflow(
    message: str, *, code: str | None = None, error_type: str | None = None
) -> bool:
    """Whether a provider error says the prompt does not fit the model's context window."""
    if code == "context_length_exceeded" or error_type == "request_too_large":
        return True
    lowered = message.lower()
    return any(marker in lowered for marker in _OVERFLOW_MARKERS)


def classify_error(
    message: str,
    *,
    status: int | None = None,
    error_type: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
) -> ProviderError:
    """Map a provider error (HTTP status and/or the body's error type and code) to a kind.

    OpenAI's ``insufficient_quota`` (a 429) is classified ``auth``: waiting does not help,
    the account needs attention, exactly as with a rejected key.
    """
    kind: ProviderErrorKind
    if is_context_overflow(message, code=code, error_type=error_type):
        kind = "context_overflow"
    elif (
        status in (401, 403)
        or error_type in ("authentication_error", "permission_error")
        or code in ("invalid_api_key", "insufficient_quota")
    ):
        kind = "auth"
    elif (
        status == 429
        or error_type in ("rate_limit_error", "rate_limit_exceeded")
        or code == "rate_limit_exceeded"
    ):
        kind = "rate_limit"
    elif status in (503, 529) or error_type == "overloaded_error" or code == "server_is_overloaded":
        kind = "overloaded"
    elif status == 408 or error_type == "timeout_error":
        kind = "timeout"
    elif status == 413:
        kind = "context_overflow"
    elif (
        (status is not None and status >= 500)
        or error_type in ("api_error", "server_error")
        or code == "server_error"
    ):
        kind = "server"
    elif (status is not None and 400 <= status < 500) or error_type in (
        "invalid_request_error",
        "not_found_error",
    ):
        kind = "bad_request"
    else:
        kind = "unknown"
    text = message or (f"HTTP {status}" if status is not None else "provider error")
    return ProviderError(kind, text, status=status, retry_after=retry_after)


def _error_fields(payload: Any) -> tuple[str, str | None, str | None]:
    """(message, type, code) from the error bodies of OpenAI, Anthropic and look-alikes."""
    error: Any = payload
    if isinstance(payload, dict):
        inner = payload.get("error")
        if isinstance(inner, dict):
            error = inner
        elif isinstance(inner, str):
            return inner, None, None
    if not isinstance(error, dict):
        return "", None, None
    message = error.get("message")
    if not isinstance(message, str):
        detail = error.get("detail")
        message = detail if isinstance(detail, str) else ""
    kind = error.get("type")
    code = error.get("code")
    return (
        message,
        kind if isinstance(kind, str) else None,
        str(code) if isinstance(code, str | int) and not isinstance(code, bool) else None,
    )


def classify_status(status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
    """The `ProviderError` for a non-2xx response, from its status, headers and body."""
    try:
        payload: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        payload = None
    message, error_type, code = _error_fields(payload)
    if not message:
        message = body[:500].decode("utf-8", "replace").strip()
    message = f"HTTP {status}: {message}" if message else f"HTTP {status}"
    return classify_error(
        message,
        status=status,
        error_type=error_type,
        code=code,
        retry_after=parse_retry_after(headers),
    )


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI), else ``retry-after`` (seconds or an
    HTTP date). ``None`` when absent or unreadable; never negative."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            pass
        else:
            if math.isfinite(ms) and ms >= 0:
                return ms / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = (when - (now or datetime.now(UTC))).total_seconds()
    return max(delta, 0.0)


def map_transport_error(exc: httpx.HTTPError) -> ProviderError:
    """The `ProviderError` for an httpx exception (raise it ``from exc``)."""
    name = type(exc).__name__
    detail = str(exc) or name
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError("timeout", f"LLM request timed out ({name}): {detail}")
    if isinstance(exc, httpx.DecodingError):
        return ProviderError("malformed", f"undecodable response body: {detail}")
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError):
        return ProviderError("network", f"connection to the provider failed ({name}): {detail}")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ProviderError("bad_request", f"bad provider URL: {detail}")
    if isinstance(exc, httpx.TransportError):
        return ProviderError("network", f"transport error ({name}): {detail}")
    return ProviderError("unknown", f"{name}: {detail}")


# --- per-model request parameters -------------------------------------------------------


class ModelParams(msgspec.Struct, frozen=True, kw_only=True):
    """The per-model request parameters a transport understands, with OpenClaw's key names.

    Unknown keys are ignored (the same ``params`` map carries gateway-level settings such as
    ``cacheRetention``); ``extraBody`` is merged verbatim into the request body, last.
    """

    temperature: float | None = None
    maxTokens: int | None = None
    topP: float | None = None
    topK: int | None = None
    stop: list[str] | None = None
    stopSequences: list[str] | None = None
    seed: int | None = None
    presencePenalty: float | None = None
    frequencyPenalty: float | None = None
    parallelToolCalls: bool | None = None
    thinking: str | None = None  # level: off | minimal | low | medium | high | xhigh
    reasoningEffort: str | None = None
    thinkingBudget: int | None = None
    extraBody: dict[str, Any] | None = None

    @property
    def stop_list(self) -> list[str] | None:
        return self.stop if self.stop is not None else self.stopSequences

    @property
    def effort(self) -> str | None:
        """Reasoning effort level, ``None`` when unset; ``"off"`` disables reasoning."""
        return self.reasoningEffort or self.thinking


def parse_params(params: Mapping[str, Any]) -> ModelParams:
    """Validate ``ModelRequest.params``. A wrong type is a ``bad_request`` naming the key."""
    try:
        return msgspec.convert(dict(params), ModelParams)
    except msgspec.ValidationError as exc:
        raise ProviderError("bad_request", f"invalid model params: {exc}") from exc


def encode_body(body: msgspec.Struct, extra: dict[str, Any] | None) -> bytes:
    """JSON of a request body, with ``extraBody`` merged over its top-level keys."""
    if not extra:
        return _encoder.encode(body)
    merged = msgspec.to_builtins(body)
    merged.update(extra)
    return _encoder.encode(merged)


_encoder = msgspec.json.Encoder()


# --- the shared transport ---------------------------------------------------------------


class StreamParser(Protocol):
    """Turns one provider's SSE events into deltas. One per model turn; sans-IO."""

    done: bool
    """The terminal event was seen: the stream is complete."""

    def feed(self, event: SSEEvent, out: list[ModelDelta]) -> None:
        """Append the deltas ``event`` produces to ``out``.

        Raises `ProviderError` for an error event, msgspec errors for malformed JSON.
        """
        ...

    def finish(self, out: list[ModelDelta]) -> None:
        """The stream ended without its terminal event: complete it if what was seen allows
        (append the last deltas), else raise `ProviderError`."""
        ...


class HttpProvider(abc.ABC):
    """Base of the SSE transports: one pooled client, one POST per turn, one SSE stream.

    Subclasses set `api_name` and implement `_endpoint`, `_auth_headers`, `_encode_request` and
    `_new_parser`. The client is created on the first `stream` (so constructing a provider
    does no I/O) and closed by `aclose`; after `aclose`, `stream` raises
    `trio.ClosedResourceError`.
    """

    api_name: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""

    def __init__(
        self,
        provider_id: str,
        *,
        base_url: str | None,
        api_key: str | None,
        headers: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.id = provider_id
        self.api = self.api_name
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.timeout_seconds = timeout_seconds
        self._headers = {**self._auth_headers(api_key), **(headers or {})}
        self._url = self._endpoint(self.base_url)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._closed = False

    # --- for subclasses --------------------------------------------------------------------

    @abc.abstractmethod
    def _endpoint(self, base_url: str) -> str:
        """Each provider transport defines it."""

    @abc.abstractmethod
    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Each provider transport defines it."""

    @abc.abstractmethod
    def _encode_request(self, request: ModelRequest) -> bytes:
        """Each provider transport defines it."""

    @abc.abstractmethod
    def _new_parser(self, request: ModelRequest) -> StreamParser:
        """Each provider transport defines it."""

    # --- the ModelProvider interface -------------------------------------------------------

    @property
    def url(self) -> str:
        """The endpoint each turn is POSTed to."""
        return self._url

    @property
    def closed(self) -> bool:
        """`aclose` was called: the pooled connections are released, `stream` refuses."""
        return self._closed

    def _get_client(self) -> httpx.AsyncClient:
        if self._closed:
            raise trio.ClosedResourceError(f"provider {self.id!r} was closed")
        if self._client is None:
            self._client = open_client(
                headers={
                    "content-type": "application/json",
                    "accept": "text/event-stream",
                    **self._headers,
                },
                timeout_seconds=self.timeout_seconds,
                transport=self._transport,
            )
        return self._client

    async def aclose(self) -> None:
        """Close the pooled connections. Idempotent; a checkpoint."""
        self._closed = True
        client, self._client = self._client, None
        if client is None:
            await trio.lowlevel.checkpoint()
        else:
            await client.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        """Stream one model turn (an async generator: iterate it inside `aclosing`).

        Each ``await`` on it is a checkpoint. Cancelling the iterating task closes the HTTP
        response at once. Failures raise `ProviderError`, possibly after some deltas.
        """
        client = self._get_client()
        try:
            body = self._encode_request(request)
        except (msgspec.EncodeError, TypeError, ValueError) as exc:
            raise ProviderError("bad_request", f"cannot encode the request: {exc}") from exc
        parser = self._new_parser(request)
        decoder = SSEDecoder()
        out: list[ModelDelta] = []
        try:
            tp = request.traceparent
            headers = {"traceparent": tp} if tp is not None else None
            async with client.stream("POST", self._url, content=body, headers=headers) as response:
                if not 200 <= response.status_code < 300:
                    raise classify_status(
                        response.status_code, response.headers, await _read_limited(response)
                    )
                if response.headers.get("content-type", "").startswith("application/json"):
                    raise _unexpected_json(await _read_limited(response))
                async with _consuming(response.aiter_bytes()) as chunks:
                    async for chunk in chunks:
                        failure = _feed(decoder, parser, chunk, out)
                        for delta in out:
                            yield delta
                        out.clear()
                        if failure is not None:
                            raise failure
                        if parser.done:
                            await _drain(chunks)
                            return
                decoder.close()
                parser.finish(out)
                for delta in out:
                    yield delta
        except httpx.HTTPError as exc:
            raise map_transport_error(exc) from exc
        except (msgspec.MsgspecError, SSEDecodeError) as exc:
            raise ProviderError("malformed", f"malformed stream from the provider: {exc}") from exc


def _feed(
    decoder: SSEDecoder, parser: StreamParser, chunk: bytes, out: list[ModelDelta]
) -> ProviderError | None:
    """Feed one chunk. A failure is returned, not raised, so the deltas before it are yielded
    first: output seen is output streamed, whatever comes next."""
    try:
        for event in decoder.feed(chunk):
            parser.feed(event, out)
            if parser.done:
                break
    except ProviderError as exc:
        return exc
    except (msgspec.MsgspecError, SSEDecodeError) as exc:
        failure = ProviderError("malformed", f"malformed stream from the provider: {exc}")
        failure.__cause__ = exc
        return failure
    return None


@contextlib.asynccontextmanager
async def _consuming(chunks: AsyncIterator[bytes]) -> AsyncIterator[AsyncIterator[bytes]]:
    """Iterate a response's bytes; on leaving early (a failure, a finished parser, a
    consumer that stopped), end the iterator with `_abandon`."""
    try:
        yield chunks
    finally:
        await _abandon(chunks)


async def _abandon(chunks: AsyncIterator[bytes]) -> None:
    """End a response byte iterator that will not be read to its end.

    httpx and httpcore nest half a dozen async generators under ``aiter_bytes``; closing the
    outer one leaves the inner ones suspended for the garbage collector, and trio warns
    about every one it finalises (encode/httpx#3686). Instead the iterator is resumed under
    an already cancelled scope: its next network read raises `trio.Cancelled` inside the
    innermost generator, which ends the whole chain (httpcore then drops the connection).
    Whatever is already buffered is skipped; an exhausted iterator costs nothing.
    """
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            async for _chunk in chunks:
                pass
        except httpx.HTTPError:
            pass


async def _read_limited(response: httpx.Response) -> bytes:
    parts: list[bytes] = []
    size = 0
    async with _consuming(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            parts.append(chunk)
            size += len(chunk)
            if size >= MAX_ERROR_BODY:
                break
    return b"".join(parts)[:MAX_ERROR_BODY]


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the end of a finished response (bounded) so its connection can be reused."""
    size = 0
    with trio.move_on_after(DRAIN_TIMEOUT):
        async for chunk in chunks:
            size += len(chunk)
            if size > DRAIN_LIMIT:
                return


def error_from_payload(data: bytes) -> ProviderError:
    """The `ProviderError` an error event's JSON describes (OpenAI's ``{"error": {...}}``,
    Anthropic's ``{"type": "error", "error": {...}}``, or a flat ``{message, type, code}``)."""
    try:
        payload: Any = msgspec.json.decode(data)
    except msgspec.DecodeError:
        payload = None
    message, error_type, code = _error_fields(payload)
    if not message:
        message = data[:500].decode("utf-8", "replace").strip() or "provider error"
    return classify_error(message, error_type=error_type, code=code)


def _unexpected_json(body: bytes) -> ProviderError:
    """A 2xx JSON body where an event stream was expected: an error, or a server that
    ignored ``stream: true``."""
    try:
        payload: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        payload = None
    message, error_type, code = _error_fields(payload)
    if message or error_type or code:
        return classify_error(message, error_type=error_type, code=code)
    return ProviderError("malformed", "expected an event stream, got a JSON body")
