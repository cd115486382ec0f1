"""Protocol v4 frame envelopes, error shape and error codes.

Inbound frames (`req`, `cancel`) are decoded with one typed decoder; outbound frames (`res`,
`event`) are encoded with one module-level encoder. Method params and results live in
`runtime.protocol._wire` (generated from the published schema).

Errors in this module:
- `GatewayError`: a request failed with a wire error `{code, message, details?, retryable?,
  retryAfterMs?}`; raised by method handlers and turned into a `res ok:false` at the edge.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Final, TypeVar

import msgspec

from ._wire import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._wire import ErrorShape

MAX_PREAUTH_PAYLOAD_BYTES: Final = 64 * 1024
MAX_PAYLOAD_BYTES: Final = 25 * 1024 * 1024
MAX_BUFFERED_BYTES: Final = 50 * 1024 * 1024
TICK_INTERVAL_MS: Final = 30_000
MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024
"""A request's `message` (`agent`, `chat.send`, `sessions.send`, `chat.inject`), UTF-8."""
MAX_IDEMPOTENCY_KEY_BYTES: Final = 256
MAX_SESSION_KEY_BYTES: Final = 512
"""`sessionKey` (and `key` of `sessions.*`): OpenClaw's `chat.send` allows 1-512 chars."""
HANDSHAKE_TIMEOUT_S: Final = 10.0
MAX_PARAMS_DEPTH: Final = 64
"""How deeply a request's params may nest objects and arrays (no method's params come near)."""
PARAMS_INT_RANGE: Final = (-(2**63), 2**63 - 1)
"""The integers params may hold: what a field holding an integer can (the store's INTEGER, a
timeout in seconds as a float, every client's 64-bit decoder)."""

# Error codes (OpenClaw `error-codes.ts`).
NOT_LINKED: Final = "NOT_LINKED"
NOT_PAIRED: Final = "NOT_PAIRED"
AGENT_TIMEOUT: Final = "AGENT_TIMEOUT"
FORBIDDEN: Final = "FORBIDDEN"
INVALID_REQUEST: Final = "INVALID_REQUEST"
UNAVAILABLE: Final = "UNAVAILABLE"
AGENT_RESULT_NOT_FOUND: Final = "AGENT_RESULT_NOT_FOUND"

_T = TypeVar("_T")

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class RequestFrame(
    msgspec.Struct, frozen=True, tag="req", tag_field="type", forbid_unknown_fields=True
):
    id: NonEmpty
    method: NonEmpty
    params: Any = None
    traceparent: Annotated[str, msgspec.Meta(max_length=128)] | None = None


class CancelFrame(
    msgspec.Struct, frozen=True, tag="cancel", tag_field="type", forbid_unknown_fields=True
):
    id: NonEmpty


InboundFrame = RequestFrame | CancelFrame


class ResponseFrame(msgspec.Struct, frozen=True, tag="res", tag_field="type", omit_defaults=True):
    id: str
    ok: bool
    payload: Any | msgspec.UnsetType = msgspec.UNSET
    error: ErrorShape | msgspec.UnsetType = msgspec.UNSET


class StateVersion(msgspec.Struct, frozen=True):
    presence: int
    health: int


class EventFrame(msgspec.Struct, frozen=True, tag="event", tag_field="type", omit_defaults=True):
    """An event frame without its per-connection `seq`: the connection writer splices it in."""

    event: str
    payload: Any | msgspec.UnsetType = msgspec.UNSET
    stateVersion: StateVersion | msgspec.UnsetType = msgspec.UNSET


# `float_hook`: a float literal out of a double's range (`1e999`) decodes to an infinity, for
# `decode_params` to refuse naming its field, not to a refusal of the whole frame.
_inbound_decoder: Final = msgspec.json.Decoder(InboundFrame, float_hook=float)
_encoder: Final = msgspec.json.Encoder()


class ClawlaneError(Exception):
    """The root of clawlane's errors. `runtime`'s errors derive from it directly;
    `actors.ActorError` and `transports.TransportError` root the other two packages' trees."""


class GatewayError(ClawlaneError):
    """A request failed; carries the wire error shape."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: Any = msgspec.UNSET,
        retryable: bool | msgspec.UnsetType = msgspec.UNSET,
        retry_after_ms: int | msgspec.UnsetType = msgspec.UNSET,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms

    def shape(self) -> ErrorShape:
        return ErrorShape(
            code=self.code,
            message=self.message or self.code,
            details=self.details,
            retryable=self.retryable,
            retryAfterMs=self.retry_after_ms,
        )


def describe_exception(exc: BaseException) -> str:
    """How an unexpected exception is told to a client or written in a run's error:
    `<Type>: <message>` (no traceback: that goes to the log)."""
    return f"{type(exc).__name__}: {exc}"


def internal_error(exc: BaseException) -> GatewayError:
    """The wire error for an exception a method did not expect (`UNAVAILABLE`)."""
    return GatewayError(UNAVAILABLE, describe_exception(exc))


def invalid_request(message: str, **details: Any) -> GatewayError:
    return GatewayError(INVALID_REQUEST, message, details=details or msgspec.UNSET)


def opt(value: _T | msgspec.UnsetType) -> _T | None:
    """A decoded optional param: None when it was absent (`msgspec.UNSET`)."""
    return None if isinstance(value, msgspec.UnsetType) else value


def decode_params(method: str, raw: Any, type_: type[_T]) -> _T:
    """Validate a request's params; the error names the field (`INVALID_REQUEST`). The
    byte bounds (`MAX_MESSAGE_BYTES`, ...) and `check_params_values` hold for every method
    whose params have the field, on the fast path and the general one alike."""
    check_params_values(method, raw)
    try:
        params = msgspec.convert({} if raw is None else raw, type_)
    except msgspec.ValidationError as exc:
        raise invalid_request(f"invalid {method} params: {exc}") from exc
    _check_sizes(method, params)
    return params


def check_params_values(method: str, raw: Any) -> None:
    """What no method's params may hold, whatever their type: nesting deeper than
    `MAX_PARAMS_DEPTH`, an integer outside `PARAMS_INT_RANGE`, a number that is not finite
    (`1e999` as decoded). `INVALID_REQUEST` naming where; anything else passes. Iterative
    (nesting never costs Python's stack); linear in the params' containers and numbers."""
    lo, hi = PARAMS_INT_RANGE
    stack: list[tuple[Any, _Path, int]] = [(raw, None, 0)]
    while stack:
        value, path, depth = stack.pop()
        if type(value) is dict:
            items: Any = value.items()
        elif type(value) is list:
            items = enumerate(value)
        else:
            continue
        if depth == MAX_PARAMS_DEPTH:
            raise _bad_value(method, f"nested deeper than {MAX_PARAMS_DEPTH} levels", path)
        for key, item in items:
            kind = type(item)
            if kind is int:
                if not lo <= item <= hi:
                    raise _bad_value(method, "integer out of range (64 bits)", (path, key))
            elif kind is float:
                if not math.isfinite(item):
                    raise _bad_value(method, "number out of range", (path, key))
            elif kind is dict or kind is list:
                stack.append((item, (path, key), depth + 1))


_Path = tuple[Any, str | int] | None
"""Where a value sits in decoded JSON, innermost key last: (parent's path, key)."""


def _render_path(path: _Path, prefix: str = "$") -> str:
    """`$.a.b[0]`, as msgspec names a field (keys as they are); a long one cut short."""
    keys: list[str | int] = []
    while path is not None:
        path, key = path
        keys.append(key)
    keys.reverse()
    shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys[:8])
    return prefix + shown + (f"... ({len(keys)} levels)" if len(keys) > 8 else "")


def _bad_value(method: str, what: str, path: _Path) -> GatewayError:
    return invalid_request(f"invalid {method} params: {what} - at `{_render_path(path)}`")


def _bounds(method: str) -> tuple[tuple[str, int], ...]:
    if method.startswith("sessions."):
        return _SESSIONS_BOUNDS
    return _BOUNDS


_BOUNDS: Final = (
    ("message", MAX_MESSAGE_BYTES),
    ("idempotencyKey", MAX_IDEMPOTENCY_KEY_BYTES),
    ("sessionKey", MAX_SESSION_KEY_BYTES),
)
_SESSIONS_BOUNDS: Final = (*_BOUNDS, ("key", MAX_SESSION_KEY_BYTES))


def utf8_len(text: str) -> int:
    """The UTF-8 size of `text` (a lone surrogate counts as 3 bytes, as it would escape)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _check_sizes(method: str, params: Any) -> None:
    for field, limit in _bounds(method):
        value = getattr(params, field, None)
        if type(value) is str and len(value) > limit // 4 and utf8_len(value) > limit:
            raise invalid_request(
                f"invalid {method} params: {field} is {utf8_len(value)} bytes, over the"
                f" limit of {limit} bytes",
                field=field,
                maxBytes=limit,
            )


def missing_scope(scope: str, required: list[str]) -> GatewayError:
    return GatewayError(
        FORBIDDEN,
        f"missing scope: {scope}",
        details={"code": "MISSING_SCOPE", "missingScope": scope, "requiredScopes": required},
    )


def decode_inbound(data: bytes | str) -> InboundFrame:
    """Decode one client frame. Raises `msgspec.DecodeError`/`ValidationError` on bad input
    (nesting deeper than the decoder's recursion limit is a `DecodeError` too)."""
    try:
        frame: InboundFrame = _inbound_decoder.decode(data)
    except RecursionError as exc:
        raise msgspec.DecodeError("JSON nested too deeply") from exc
    except msgspec.DecodeError as exc:
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        located = _locate_bad_token(text) if len(text) <= _LOCATE_MAX_CHARS else None
        if located is not None:
            raise msgspec.DecodeError(located) from exc
        # msgspec reports an unpaired surrogate escape as truncated input: say what it is.
        if str(exc).startswith("Input data was truncated") and _SURROGATE_RE.search(text):
            raise msgspec.DecodeError("a string holds a lone UTF-16 surrogate") from exc
        raise
    return frame


_SURROGATE_RE: Final = re.compile(r"\\u[dD][89abcdefABCDEF]")

_LOCATE_MAX_CHARS: Final = 1 << 20
"""Frames up to this size that fail to decode are searched for the token at fault."""
_TOKEN_RE: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|-?Infinity|NaN')
_ESCAPE_RE: Final = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)")
_MARK: Final = "\ufdd0clawlane:bad-token\ufdd0"


def _locate_bad_token(text: str) -> str | None:
    """Where a frame that failed to decode holds a `NaN`/`Infinity` token or a string with
    a lone UTF-16 surrogate escape: `"<what> - at `$.params.x`"`, None when it holds neither
    (or is broken elsewhere too). The error path only; linear in the frame."""
    found: list[str] = []

    def mark(match: re.Match[str]) -> str:
        token = match.group(0)
        if token[0] == '"':
            if "\\u" not in token or not _has_lone_surrogate(token):
                return token
            what, neutral = "a string holds a lone UTF-16 surrogate", '""'
        else:
            what, neutral = f"{token} is not a JSON number", "0"
        if found:
            return neutral
        found.append(what)
        return f'"{_MARK}"'

    marked = _TOKEN_RE.sub(mark, text)
    if not found:
        return None
    try:
        raw = msgspec.json.decode(marked)
    except (msgspec.DecodeError, RecursionError):
        return None
    stack: list[tuple[Any, _Path]] = [(raw, None)]
    while stack:
        value, path = stack.pop()
        if value == _MARK:
            return f"{found[0]} - at `{_render_path(path)}`"
        items: Any = (
            value.items()
            if type(value) is dict
            else enumerate(value)
            if type(value) is list
            else ()
        )
        for key, item in items:
            if key == _MARK:  # a key: name the object holding it
                return f"{found[0].replace('a string', 'a key', 1)} - at `{_render_path(path)}`"
            stack.append((item, (path, key)))
    return None


def _has_lone_surrogate(literal: str) -> bool:
    """Whether a JSON string literal escapes a UTF-16 surrogate that is not half of a pair."""
    high_end = -1  # where the last high surrogate escape ended, while it waits for its low
    for match in _ESCAPE_RE.finditer(literal):
        unit = int(match.group(1), 16) if match.group(1) else -1
        paired = match.start() == high_end
        if high_end >= 0 and not (paired and 0xDC00 <= unit <= 0xDFFF):
            return True
        if paired:
            high_end = -1
        elif 0xD800 <= unit <= 0xDBFF:
            high_end = match.end()
        elif 0xDC00 <= unit <= 0xDFFF:
            return True
    return high_end >= 0


_ID_RE: Final = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.)*")')
_STRING_RE: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_PEEK_MATCHES: Final = 8


def peek_request_id(data: bytes | str) -> str | None:
    """Best effort: the `id` of a frame that failed to decode, so the error can answer it.

    Also for frames the decoder refuses as a whole (nested too deeply, a lone UTF-16
    surrogate in some string): the first few `"id": "..."` members are looked at, and the
    one at the top level of the object is taken. Not a full parse: linear in the frame."""
    try:
        raw = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        raw = None
    if isinstance(raw, dict):
        rid = raw.get("id")
        return rid if isinstance(rid, str) and rid else None
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if not text.lstrip().startswith("{"):
        return None
    for i, match in enumerate(_ID_RE.finditer(text)):
        if i == _PEEK_MATCHES:
            break
        head = _STRING_RE.sub("", text[: match.start()])
        depth = head.count("{") + head.count("[") - head.count("}") - head.count("]")
        if depth != 1:
            continue
        try:
            rid = msgspec.json.decode(match.group(1))
        except msgspec.DecodeError:
            return None
        return rid if isinstance(rid, str) and rid else None
    return None


def encode_response(
    req_id: str, *, payload: Any = msgspec.UNSET, error: ErrorShape | None = None
) -> bytes:
    if error is not None:
        return _encoder.encode(ResponseFrame(id=req_id, ok=False, payload=payload, error=error))
    return _encoder.encode(ResponseFrame(id=req_id, ok=True, payload=payload))


_event_heads: dict[str, bytes] = {}


def encode_event(
    event: str,
    payload: Any = msgspec.UNSET,
    *,
    state_version: StateVersion | None = None,
) -> bytes:
    """Encode an event frame once; `splice_seq` adds a connection's `seq` to the bytes.

    The bytes are those of `EventFrame` encoded whole; a frame with a payload and no state
    version (every run event) is its cached head, the payload, and `}`, without building
    the frame struct."""
    if state_version is None and payload is not msgspec.UNSET:
        head = _event_heads.get(event)
        if head is None:
            head = _encoder.encode(EventFrame(event=event, payload=None))[:-5]  # cut "null}"
            if len(_event_heads) < 256:
                _event_heads[event] = head
        return head + _encoder.encode(payload) + b"}"
    return _encoder.encode(
        EventFrame(event=event, payload=payload, stateVersion=state_version or msgspec.UNSET)
    )


def splice_seq(frame: bytes, seq: int) -> bytes:
    """Add `"seq":N` to an encoded event frame without re-encoding its payload."""
    return b'%s,"seq":%d}' % (frame[:-1], seq)


def encode(value: Any) -> bytes:
    """Encode any msgspec-supported value with the shared encoder."""
    return _encoder.encode(value)
