"""An in-process gateway caller: HTTP routes call RPC methods exactly as a WebSocket
client would (`Methods.call`), so an HTTP agent run takes the same path as `agent` over the
wire: params validation, scopes, idempotency, the session's lane, the final result; in a
cluster, through the router to the node that owns the session (as a connection's would).

A `Caller` stands where a `ClientConnection` does for the methods: it has scopes, takes
the `res` frames (`respond`, `respond_error`) and, as the hub's `Subscriber`, the event
frames of the runs it starts. Events arrive synchronously and are queued, bounded by bytes
(`max_buffered_bytes`): past the bound the caller is `overflowed` (a slow consumer) and
drops what comes next; the route decides what that means (an SSE stream ends with an error).
A caller made with `events=False` keeps none (a route that only wants the answers).

Errors: none of its own; `Response.error` carries the method's `ErrorShape`.
"""

from __future__ import annotations

import collections
import itertools
import os
from typing import Any, Final, Protocol

import attrs
import msgspec
import trio

from runtime.protocol import GatewayError, RequestFrame

from ..methods import Actors, Cancellable, Methods


class CallerHost(Protocol):
    """The gateway as an in-process caller sees it."""

    @property
    def actors(self) -> Actors: ...
    @property
    def methods(self) -> Methods: ...
    @property
    def max_buffered_bytes(self) -> int: ...


HTTP_SCOPES: Final = frozenset({"operator.admin", "operator.read", "operator.write"})
"""What a shared-secret (Bearer) HTTP caller gets, as OpenClaw grants it."""
_ids = itertools.count(1)
_event_decoder: Final = msgspec.json.Decoder()


@attrs.frozen
class Answer:
    """One `res` frame for a request: ok with its payload, or the error's shape."""

    ok: bool
    payload: Any
    error: dict[str, Any] | None = None


class Caller:
    """See the module docstring. Trio-thread only; nothing here is a checkpoint except
    `next_answer` and `next_event`."""

    def __init__(
        self,
        gateway: CallerHost,
        *,
        scopes: frozenset[str] = HTTP_SCOPES,
        label: str = "http",
        events: bool = True,
        traceparent: str | None = None,
    ) -> None:
        self.gateway = gateway
        self.traceparent = traceparent if traceparent and len(traceparent) <= 128 else None
        """The HTTP request's W3C `traceparent` header: its requests continue that trace."""
        self._conn_id = f"{label}{next(_ids)}-{os.urandom(3).hex()}"
        self.role = "operator"
        self.scopes = scopes
        self.granted_scopes = sorted(scopes)
        self.auth_method = "token"
        self.device_id: str | None = None
        self.viewed_sessions: set[str] = set()
        self.caps: frozenset[str] = frozenset()
        self.scoped = True
        self.client_id = label
        self.client_mode = label
        self.connected = True
        self.pending: dict[str, Cancellable] = {}
        self.nursery: trio.Nursery | None = None
        self.max_buffered_bytes = gateway.max_buffered_bytes
        """As for a WebSocket connection's outbox (`gateway.max_buffered_bytes`)."""
        self._wants_events = events
        self.overflowed = False
        self._answers: collections.deque[Answer] = collections.deque()
        self._events: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._wake = trio.Event()

    # --- what the methods and the hub see -------------------------------------------------

    @property
    def conn_id(self) -> str:
        return self._conn_id

    @property
    def wants_tool_events(self) -> bool:
        return False

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def push_event(self, frame: bytes) -> None:
        if self.overflowed or not self._wants_events:
            return
        self._buffered += len(frame)
        if self._buffered > self.max_buffered_bytes:
            self.overflowed = True
            self._events.clear()
            self._buffered = 0
        else:
            self._events.append(frame)
        self._wake.set()

    def respond(self, req_id: str, payload: Any = None) -> None:
        self._answers.append(Answer(True, payload))
        self._wake.set()

    def respond_error(self, req_id: str, error: GatewayError, payload: Any = msgspec.UNSET) -> None:
        shape = msgspec.to_builtins(error.shape())
        self._answers.append(Answer(False, None if payload is msgspec.UNSET else payload, shape))
        self._wake.set()

    # --- what the route uses --------------------------------------------------------------

    async def call(self, method: str, params: dict[str, Any], scope: trio.CancelScope) -> None:
        """Run one request to its end (its answers queue here). A checkpoint; cancelling
        `scope` cancels the request as a `cancel` frame would (an `agent` run is aborted)."""
        frame = RequestFrame(
            id=f"{self._conn_id}:{method}",
            method=method,
            params=params,
            traceparent=self.traceparent,
        )
        methods = self.gateway.methods
        route = methods.route(self, frame, fast=False)  # in a cluster: on the session's node
        assert route is not None  # only `agent`'s task-free path answers in `route`
        try:
            with scope:
                await methods.serve(self, frame, scope, route)
        finally:
            route.release()

    def take(self) -> tuple[list[Answer], list[dict[str, Any]]]:
        """What arrived since the last call: answers, and event frames decoded."""
        answers = list(self._answers)
        self._answers.clear()
        events = [_event_decoder.decode(f) for f in self._events]
        self._events.clear()
        self._buffered = 0
        return answers, events

    async def wait(self) -> None:
        """Until something arrives (or arrived already). A checkpoint."""
        if self._answers or self._events or self.overflowed:
            await trio.lowlevel.checkpoint()
            return
        if self._wake.is_set():
            self._wake = trio.Event()
        await self._wake.wait()

    def close(self) -> None:
        """Forget every subscription (the hub's, too)."""
        self.gateway.actors.hub.detach(self)
