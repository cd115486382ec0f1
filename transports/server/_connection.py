"""One client connection after its WebSocket upgrade: handshake, reader, request tasks.

The reader decodes frames and starts one task per request (bounded: at most
`MAX_INFLIGHT_REQUESTS` at once; more get `UNAVAILABLE` with `retryable`); the writer
(`WebSocketServerConnection.run_writer`) drains the outbox. A bad frame gets a `res` with
`INVALID_REQUEST` and the connection lives on; a `cancel` frame cancels its pending request.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any, Final, Protocol

import msgspec
import trio
from wsproto.events import Request

from runtime.protocol import (
    INVALID_REQUEST,
    MAX_PAYLOAD_BYTES,
    MAX_PREAUTH_PAYLOAD_BYTES,
    PROTOCOL_VERSION,
    UNAVAILABLE,
    CancelFrame,
    ConnectParams,
    GatewayError,
    RequestFrame,
    decode_inbound,
    decode_params,
    encode_event,
    encode_response,
    operator_scope_satisfied,
    opt,
    peek_request_id,
)

from ..access import Peer, PreauthSlot
from ..methods import (
    Cancellable,
    Host,
    Methods,
    Route,
)
from ..websocket import (
    CLOSE_POLICY,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_TOO_BIG,
    ConnectionClosed,
    MessageTooBig,
    WebSocketServerConnection,
)
from ._handshake import Admitted, HandshakeHost, admit_connect

log = logging.getLogger("clawlane.connection")

MAX_INFLIGHT_REQUESTS: Final = 256
DISPATCH_ROUND: Final = 32


def _now_ms() -> int:
    return int(time.time() * 1000)


class ConnectionHost(HandshakeHost, Host, Protocol):
    """The gateway as a connection sees it: what the methods and the handshake see, the
    method table, the handshake's timing, and where connections are listed."""

    @property
    def methods(self) -> Methods: ...

    @property
    def handshake_timeout_s(self) -> float: ...
    @property
    def close_grace_s(self) -> float: ...

    def peer_of(self, address: str, request: Request) -> Peer: ...

    def refuse_origin(self, peer: Peer) -> tuple[int, str] | None: ...

    def hello_ok(
        self, conn: ClientConnection, admitted: Admitted | None = None
    ) -> dict[str, Any]: ...

    def attach(self, conn: ClientConnection) -> None: ...

    def detach(self, conn: ClientConnection) -> None: ...


class ClientConnection:
    """A connected client: the hub's `Subscriber`, and the place requests come from."""

    def __init__(
        self,
        gateway: ConnectionHost,
        ws: WebSocketServerConnection,
        conn_id: str,
        *,
        peer: Peer | None = None,
        preauth: PreauthSlot | None = None,
    ) -> None:
        self.gateway = gateway
        self.ws = ws
        self._conn_id = conn_id
        self.peer = peer or Peer(address="", local=False)
        self.preauth = preauth
        """This socket's place in its address's unauthenticated budget, until `connect`."""
        self.role = "operator"
        self.scopes: frozenset[str] = frozenset()
        """Exactly the scopes granted (`has_scope` applies what each one satisfies)."""
        self.granted_scopes: list[str] = []
        self.auth_method = ""
        self.device_id: str | None = None
        self.caps: frozenset[str] = frozenset()
        self.client_id = ""
        self.client_mode = ""
        self.instance_id = ""
        self.viewed_sessions: set[str] = set()
        """Sessions the Control UI has open (`sessions.viewers.set`)."""
        self._wants_tools = False
        self.scoped = False
        self.connected = False
        self.pending: dict[str, Cancellable] = {}
        """Requests in flight by id: a handler task's cancel scope, or an `agent` request
        on the fast path (`methods._agent`)."""
        self.nursery: trio.Nursery | None = None
        self.handshake_deadline: float | None = None
        """When the handshake must be done (from the socket's accept); None: the
        gateway's handshake timeout from now."""
        self.opened_mono = time.monotonic()  # for the connection's log lines

    # --- Subscriber ----------------------------------------------------------------------

    @property
    def conn_id(self) -> str:
        return self._conn_id

    @property
    def wants_tool_events(self) -> bool:
        return self._wants_tools

    def push_event(self, frame: bytes) -> None:
        self.ws.send_event(frame)

    # --- responses -----------------------------------------------------------------------

    def respond(self, req_id: str, payload: Any = None) -> None:
        self.ws.send_text(encode_response(req_id, payload=payload))

    def respond_error(self, req_id: str, error: GatewayError, payload: Any = msgspec.UNSET) -> None:
        self.ws.send_text(encode_response(req_id, payload=payload, error=error.shape()))

    @property
    def buffered_bytes(self) -> int:
        """What its outbox holds, not yet written to the socket."""
        return self.ws.buffered_bytes

    def has_scope(self, scope: str) -> bool:
        """Whether the granted scopes satisfy `scope` (admin: all; write: read, ...)."""
        return operator_scope_satisfied(scope, self.scopes)

    # --- life ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until it ends. A checkpoint; cancellation closes it."""
        gw = self.gateway
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                nursery.start_soon(self.ws.run_writer, name=f"writer:{self.conn_id}")
                try:
                    await self._serve()
                except ConnectionClosed:
                    pass
                finally:
                    if not self.ws.closing:
                        self.ws.close(1000, "bye")
                    # Give the writer a moment to put the close frame on the wire, and the
                    # peer a moment to answer it, before the TCP stream goes.
                    with trio.move_on_after(gw.close_grace_s):
                        await self.ws.writer_done.wait()
                        await self.ws.wait_peer_close()
                    nursery.cancel_scope.cancel()
        finally:
            if self.preauth is not None:
                self.preauth.release()
            gw.detach(self)
            with trio.CancelScope(shield=True):
                await self.ws.aclose()

    async def _serve(self) -> None:
        gw = self.gateway
        self.ws.max_message_bytes = MAX_PREAUTH_PAYLOAD_BYTES
        deadline = self.handshake_deadline
        if deadline is None:
            deadline = trio.current_time() + gw.handshake_timeout_s
        with trio.move_on_at(deadline) as handshake:
            await self.ws.accept(admit=self._admit_upgrade)
            nonce = secrets.token_urlsafe(24)
            self.ws.send_text(encode_event("connect.challenge", {"nonce": nonce, "ts": _now_ms()}))
            try:
                text = await self.ws.receive_message()
            except MessageTooBig:
                self.ws.close(CLOSE_TOO_BIG, "preauth payload too large", drop_pending=False)
                return
            if not await self._handshake(text, nonce):
                return
        if handshake.cancelled_caught:
            self.ws.close(CLOSE_POLICY, "handshake timeout")
            return
        self.ws.max_message_bytes = MAX_PAYLOAD_BYTES
        dispatched = 0
        while True:
            try:
                text = await self.ws.receive_message()
            except MessageTooBig:
                self.ws.close(CLOSE_TOO_BIG, "payload too large", drop_pending=True)
                return
            if self.ws.closing:
                return  # closed meanwhile (e.g. a slow consumer): nothing more is served
            self._dispatch(text)
            dispatched += 1
            if dispatched % DISPATCH_ROUND == 0:
                # Messages already received are parsed without a yield: after a round of
                # them, let what they started (and the writers) run before the next round.
                await trio.lowlevel.checkpoint()

    def _admit_upgrade(self, request: Request) -> tuple[int, str] | None:
        """The upgrade request: where it comes from, and whether its `Origin` may connect."""
        self.peer = self.gateway.peer_of(self.peer.address, request)
        return self.gateway.refuse_origin(self.peer)

    async def _handshake(self, text: str, nonce: str) -> bool:
        gw = self.gateway
        req_id = peek_request_id(text) or "connect"
        try:
            frame = decode_inbound(text)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            self._fail_handshake(
                req_id, f"invalid handshake: first request must be connect ({exc})"
            )
            return False
        if not isinstance(frame, RequestFrame) or frame.method != "connect":
            self._fail_handshake(req_id, "invalid handshake: first request must be connect")
            return False
        try:
            params = decode_params("connect", frame.params, ConnectParams)
        except GatewayError as exc:
            self._fail_handshake(frame.id, exc.message)
            return False
        if params.maxProtocol < PROTOCOL_VERSION or params.minProtocol > PROTOCOL_VERSION:
            err = GatewayError(
                INVALID_REQUEST,
                "protocol mismatch",
                details={
                    "code": "PROTOCOL_MISMATCH",
                    "clientMinProtocol": params.minProtocol,
                    "clientMaxProtocol": params.maxProtocol,
                    "expectedProtocol": PROTOCOL_VERSION,
                    "minimumProbeProtocol": 3,
                },
            )
            self.respond_error(frame.id, err)
            self.ws.close(CLOSE_PROTOCOL_ERROR, "protocol mismatch")
            return False
        admitted = await admit_connect(gw, self, frame.id, params, nonce, self.peer)
        if admitted is None:
            return False
        self.role = admitted.role
        self.granted_scopes = admitted.scopes
        self.scopes = frozenset(admitted.scopes) if self.role == "operator" else frozenset()
        self.auth_method = admitted.auth_method
        self.device_id = admitted.device_id
        self.caps = frozenset(params.caps) if isinstance(params.caps, list) else frozenset()
        self._wants_tools = "tool-events" in self.caps
        self.scoped = "session-scoped-events" in self.caps
        self.client_id = params.client.id
        self.client_mode = params.client.mode
        self.instance_id = opt(params.client.instanceId) or ""
        self.respond(frame.id, gw.hello_ok(self, admitted))
        self.connected = True
        if self.preauth is not None:
            self.preauth.release()
        gw.attach(self)
        return True

    def _fail_handshake(self, req_id: str, message: str) -> None:
        self.respond_error(req_id, GatewayError(INVALID_REQUEST, message))
        self.ws.close(CLOSE_POLICY, "invalid handshake")

    # --- requests ------------------------------------------------------------------------

    def _dispatch(self, text: str) -> None:
        try:
            frame = decode_inbound(text)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            req_id = peek_request_id(text) or "invalid"
            self.respond_error(req_id, GatewayError(INVALID_REQUEST, f"invalid frame: {exc}"))
            return
        if isinstance(frame, CancelFrame):
            pending = self.pending.get(frame.id)
            if pending is not None:
                pending.cancel()
            return
        if frame.method == "connect":
            self.respond_error(frame.id, GatewayError(INVALID_REQUEST, "already connected"))
            return
        if len(self.pending) >= MAX_INFLIGHT_REQUESTS:
            self.respond_error(
                frame.id,
                GatewayError(
                    UNAVAILABLE, "too many requests in flight", retryable=True, retry_after_ms=100
                ),
            )
            return
        if frame.id in self.pending:
            self.respond_error(
                frame.id, GatewayError(INVALID_REQUEST, f"duplicate request id: {frame.id}")
            )
            return
        # Where it goes, and its place in its session's order, are fixed now, as it is
        # received (the method table's `route`).
        route = self.gateway.methods.route(self, frame)
        if route is None:
            return  # answered, or on its way without a task (`agent`'s fast path)
        scope = trio.CancelScope()
        self.pending[frame.id] = scope
        assert self.nursery is not None
        try:
            self.nursery.start_soon(self._handle, frame, scope, route)
        except BaseException:
            route.release()
            raise

    async def _handle(self, frame: RequestFrame, scope: trio.CancelScope, route: Route) -> None:
        try:
            with scope:
                await self.gateway.methods.serve(self, frame, scope, route)
        finally:
            route.release()
            if self.pending.get(frame.id) is scope:
                del self.pending[frame.id]
