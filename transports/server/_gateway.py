"""The WebSocket gateway: listens, accepts, authenticates, and serves connections.

`open_gateway` runs the whole embedded gateway in one nursery: the store, the supervisor (with
its generation), the listener, the tick task. Shutdown (leaving the context, or SIGINT/SIGTERM
in `serve_gateway`): stop accepting, broadcast `shutdown`, end every run with its terminal
lifecycle event, flush the store, close the connections.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio
from wsproto.events import Request

from actors import (
    CronScheduler,
    EventHub,
    Publisher,
    RecoveryReport,
    RunRegistry,
    RunWebhooks,
    SqliteCronStore,
    Supervisor,
    adopt_subagents,
    open_config_document,
    open_cron,
    open_gateway_supervisor,
    open_store_backend,
    operator_desks,
    recover_runs,
    run_desks,
    serve_run_webhooks,
    wall_ms,
)
from runtime import telemetry
from runtime.agent import discover_resources
from runtime.devices import PairingStore, PairingStoreError
from runtime.hooks import GatewayStartEvent, GatewayStopEvent
from runtime.logs import LogRing, install_log_ring
from runtime.model import (
    Config,
    ConfigError,
    GenerationBuilder,
    ModelRuntimeGeneration,
    close_all_providers,
    load_plugins,
)
from runtime.protocol import (
    MAX_BUFFERED_BYTES,
    MAX_PAYLOAD_BYTES,
    PROTOCOL_VERSION,
    TICK_INTERVAL_MS,
)
from runtime.sessions import DEFAULT_MAIN_KEY
from runtime.users import UserPrefs

from .._errors import GatewayConfigError
from ..access import (
    DEFAULT_MAX_PREAUTH_PER_ADDRESS,
    ORIGIN_NOT_ALLOWED_MESSAGE,
    AuthConfigError,
    AuthRateLimiter,
    AuthSettings,
    Peer,
    PreauthBudget,
    browser_origin_key,
    check_origin,
    http_refusal,
    is_loopback_address,
)
from ..access import auth_settings as _auth_settings
from ..access import is_loopback as is_loopback
from ..cluster import PRESENCE_MODES, ClusterNode, Presence, Router, open_node, start_node
from ..http import (
    MAX_HEAD_BYTES,
    HttpConnection,
    HttpCounters,
    HttpRoutes,
    is_websocket_upgrade,
    lingering_close,
    load_dashboard,
    mirror_metrics,
    read_head,
)
from ..methods import Methods, Sampler, health_view, restore_idempotency
from ..websocket import CLOSE_GOING_AWAY, CLOSE_POLICY, WebSocketServerConnection
from ._connection import ClientConnection
from ._connlog import log_connection_closed, log_connection_opened
from ._handshake import Admitted
from ._startup import open_gateway_documents, tune_gc
from ._state_lock import open_listeners, own_state_dir
from ._version import VERSION

if TYPE_CHECKING:
    from actors import ConfigDocument

log = logging.getLogger("clawlane.gateway")

HEAD_TOO_LARGE: Final = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 31\r\nconnection: close\r\n\r\nRequest Header Fields Too Large"
)

HEALTH_INTERVAL_MS: Final = 60_000
CAPABILITIES: Final = (
    # OpenClaw's capability names for what clawlane does as OpenClaw's gateway does:
    "published-model-catalog",  # models.list answers from the published generation
    "session-scoped-model-catalog",  # models.list / chat.metadata take a sessionKey
    "session-scoped-chat-metadata",
)
CONNECTION_EVENTS: Final = ("connect.challenge", "tick", "shutdown", "health", "presence")
"""What every connection may get; the method modules advertise the rest (`Methods.events`)."""


def extension_specs(roots: list[str]) -> list[str | Path]:
    """The extensions (Python plugins) declared by resource packages, to load at startup.
    Problems in a package are logged and the rest still loads. Blocking file I/O."""
    specs: list[str | Path] = []
    for root in roots:
        found = discover_resources(Path(root).expanduser())
        for problem in found.problems:
            log.warning("resource package %s: %s: %s", root, problem.path, problem.message)
        specs.extend(ext.path for ext in found.extensions)
    return specs


def auth_settings(
    config: Config, *, token_override: str | None, host: str, state_dir: Path | None = None
) -> AuthSettings:
    """Resolve `gateway.auth` (`transports.access._auth`). Raises `GatewayConfigError`."""
    try:
        return _auth_settings(config, token_override=token_override, host=host, state_dir=state_dir)
    except AuthConfigError as exc:
        raise GatewayConfigError(str(exc)) from exc


class Gateway:
    """Shared state of one gateway process; methods run in the trio thread."""

    def __init__(
        self,
        *,
        config: Config,
        supervisor: Supervisor,
        auth: AuthSettings,
        state_dir: Path,
        config_path: Path | None,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
        pairing: PairingStore | None = None,
        prefs: UserPrefs | None = None,
        max_preauth_per_address: int = DEFAULT_MAX_PREAUTH_PER_ADDRESS,
        remote_peer_addresses: frozenset[str] = frozenset(),
    ) -> None:
        self.config = config
        self.supervisor = supervisor
        self.hub: EventHub = supervisor.hub
        self.registry: RunRegistry = supervisor.registry
        self.auth = auth
        self.state_dir = state_dir
        self.config_path = config_path
        self.max_buffered_bytes = max_buffered_bytes
        self.handshake_timeout_s = 10.0
        self.close_grace_s = 5.0
        self.tick_interval_ms = TICK_INTERVAL_MS
        self.publisher: Publisher | None = None  # set by open_gateway
        self.cron: CronScheduler | None = None  # set by open_gateway
        self.webhooks: RunWebhooks | None = None  # the `agent` runs' webhooks, every node
        self.recovery: RecoveryReport | None = None  # set by open_gateway
        self.node: ClusterNode | None = None  # with cluster.redis.url
        self.config_document: ConfigDocument | None = None  # a cluster on PostgreSQL
        self.router: Router | None = None  # sessions across the cluster's nodes
        self.methods = Methods(self)
        self.connections: dict[str, ClientConnection] = {}
        self.approvals, self.questions, self.cards = operator_desks(supervisor, self.connections)
        self._ids = itertools.count(1)
        self.started = time.time()
        self.accepting = True
        self.boot_id = os.urandom(6).hex()
        self.listeners: list[trio.SocketListener] = []
        self._all_closed = trio.Event()
        # --- trust: admission limits, pairing ---
        self.pairing = pairing or PairingStore.empty(state_dir)
        self.preauth = PreauthBudget(max_preauth_per_address)
        self.remote_peer_addresses = remote_peer_addresses
        """Loopback addresses treated as remote (a test seam: pairing, rate limits)."""
        limits = config.gateway.auth.rateLimit
        self.rate_limiter = AuthRateLimiter(
            max_attempts=limits.maxAttempts,
            window_ms=limits.windowMs,
            lockout_ms=limits.lockoutMs,
            exempt_loopback=limits.exemptLoopback,
            is_local=self.is_local_address,
        )
        self.browser_rate_limiter = AuthRateLimiter(
            max_attempts=limits.maxAttempts,
            window_ms=limits.windowMs,
            lockout_ms=limits.lockoutMs,
            exempt_loopback=False,
        )
        # --- plain HTTP on the same port, /metrics, the dashboard ---
        self.version = VERSION
        self.http_counters = HttpCounters()
        self.slow_consumer_closes = 0
        self.websocket_sockets = 0
        self.http_sockets = 0
        self.http_routes: HttpRoutes | None = None  # set by open_gateway (reads files)
        self.sampler = Sampler(self)
        self.user_prefs = prefs or UserPrefs.in_state_dir(state_dir)
        """The Control UI's `users.prefs.*` (the state dir's file, or the cluster's)."""
        self.presence_list = Presence(self.hub, self.connections, VERSION)
        self.health_version = 0
        self.log_ring: LogRing = install_log_ring(
            file=Path(config.logging.file).expanduser() if config.logging.file else None,
            max_file_bytes=config.logging.maxFileBytes,
            level=config.logging.level,
        )

    # --- trust: peers, origins, pairing events -----------------------------------------

    # The methods' roles (`methods.Host`): the gateway itself, each seen only through its
    # role's Protocol (`methods.Actors`, `Trust`, `Process`), which it satisfies as it is.
    @property
    def actors(self) -> Gateway:
        return self

    @property
    def trust(self) -> Gateway:
        return self

    @property
    def process(self) -> Gateway:
        return self

    def is_local_address(self, address: str) -> bool:
        return is_loopback_address(address) and address not in self.remote_peer_addresses

    def peer_of(self, address: str, request: Request) -> Peer:
        """Where an upgrade request comes from: direct loopback only without forwarding."""
        headers = {name.lower(): value for name, value in request.extra_headers}
        forwarded = any(name in headers for name in _FORWARDED_HEADERS) or any(
            name.startswith(b"x-forwarded-") for name in headers
        )
        origin = headers.get(b"origin")
        return Peer(
            address=address,
            local=self.is_local_address(address) and not forwarded,
            origin=origin.decode("latin-1") if origin is not None else None,
            host=request.host,
        )

    def refuse_origin(self, peer: Peer) -> tuple[int, str] | None:
        """HTTP 403 for an upgrade whose `Origin` is not allowed (`_origins`)."""
        if not peer.has_origin:
            return None
        ui = self.supervisor.generation.config.gateway.controlUi
        decision = check_origin(
            peer.origin,
            host=peer.host,
            local_client=peer.local,
            allowed_origins=ui.allowedOrigins,
            allow_host_header_fallback=ui.dangerouslyAllowHostHeaderOriginFallback,
        )
        if decision.ok:
            return None
        log.warning("refused origin %r from %s (%s)", peer.origin, peer.address, decision.reason)
        return 403, ORIGIN_NOT_ALLOWED_MESSAGE

    def browser_rate_key(self, peer: Peer) -> str:
        if peer.origin and self.is_local_address(peer.address):
            return browser_origin_key(peer.origin)
        return peer.address

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    def pairing_event(self, event: str, payload: dict[str, Any], *, here: bool = False) -> None:
        """`device.pair.*` go to operators holding `operator.pairing` only, on every node
        (the records are the cluster's; `here`: on this node only)."""
        targets = [
            c
            for c in self.connections.values()
            if c.role == "operator" and c.has_scope("operator.pairing")
        ]
        if targets:
            self.hub.send_to(targets, event, payload)
        if self.router is not None and not here:
            self.router.tell_all({"pairing": event, "payload": payload})

    def connected_device_ids(self) -> set[str]:
        return self.presence_list.device_ids()  # here, and on the other nodes

    def prefs_changed(self, entries: dict[str, Any], *, here: bool = False) -> None:
        """`users.prefs.changed` to every connection, on every node (`here`: this one)."""
        self.hub.broadcast("users.prefs.changed", {"entries": entries})
        if self.router is not None and not here:
            self.router.tell_all({"prefs": entries})

    def disconnect_device(
        self, device_id: str, reason: str, *, role: str | None = None, here: bool = False
    ) -> None:
        """Close the connections of a device whose pairing or token went away, on every
        node (`here`: on this node only)."""
        for conn in list(self.connections.values()):
            if conn.device_id == device_id and (role is None or conn.role == role):
                conn.ws.close(CLOSE_POLICY, reason)
        if self.router is not None and not here:
            self.router.tell_all({"disconnect": device_id, "reason": reason, "role": role})

    def on_node(self, node: str, how: str) -> None:
        """(The router.) A node `joined`, said `hello` (started again) or is `gone`."""
        if self.router is not None:
            self.presence_list.on_node(node, how, self.router.tell)

    def on_note(self, note: dict[str, Any]) -> None:
        """(The router.) What another node did that this node's connections must see."""
        if "cron" in note:
            self.emit_cron(dict(note["cron"]), here=True)
        elif "pairing" in note:
            self.pairing_event(str(note["pairing"]), dict(note["payload"]), here=True)
        elif "presence" in note:
            self.presence_list.on_part(str(note["from"]), note)
        elif "prefs" in note:
            self.prefs_changed(dict(note["prefs"]), here=True)
        elif "disconnect" in note:
            role = note.get("role")
            self.disconnect_device(
                str(note["disconnect"]), str(note["reason"]), role=role and str(role), here=True
            )

    # --- hello ---------------------------------------------------------------------------

    def hello_ok(self, conn: ClientConnection, admitted: Admitted | None = None) -> dict[str, Any]:
        gen = self.supervisor.generation
        agent = gen.default_agent
        return {
            "type": "hello-ok",
            "protocol": PROTOCOL_VERSION,
            "server": {"version": VERSION, "connId": conn.conn_id, "bootId": self.boot_id},
            "features": {
                "methods": self.methods.names(),
                "events": [*CONNECTION_EVENTS, *self.methods.events()],
                "capabilities": list(CAPABILITIES),
            },
            "snapshot": {
                "presence": self.presence(),
                "health": {"ok": True, "ts": int(time.time() * 1000)},
                "stateVersion": {"presence": self.presence_list.version, "health": 0},
                "uptimeMs": int((time.time() - self.started) * 1000),
                "stateDir": str(self.state_dir),
                **({"configPath": str(self.config_path)} if self.config_path else {}),
                "sessionDefaults": {
                    "defaultAgentId": agent,
                    "mainKey": DEFAULT_MAIN_KEY,
                    "mainSessionKey": f"agent:{agent}:{DEFAULT_MAIN_KEY}",
                    "scope": "per-sender",
                },
                "authMode": self.auth.mode,
            },
            "auth": _hello_auth(conn, admitted),
            "policy": {
                "maxPayload": MAX_PAYLOAD_BYTES,
                "maxBufferedBytes": self.max_buffered_bytes,
                "tickIntervalMs": self.tick_interval_ms,
            },
        }

    # --- connections ---------------------------------------------------------------------

    def attach(self, conn: ClientConnection) -> None:
        self.connections[conn.conn_id] = conn
        self.hub.attach(conn, scoped=conn.scoped, can_read=conn.has_scope("operator.read"))
        if conn.client_mode in PRESENCE_MODES or conn.device_id:
            self.presence_list.changed(shown=conn.client_mode in PRESENCE_MODES)
        log_connection_opened(conn)

    async def cluster_view(self) -> dict[str, Any] | None:  # the cluster's nodes
        return await self.node.view() if self.node is not None else None

    def readiness_failures(self) -> list[str]:
        """What keeps `/readyz` from 200: the store closed, no generation published,
        shutting down. Empty when ready. Not a checkpoint."""
        failing = []
        if self.supervisor.store.closed:
            failing.append("store")
        if self.publisher is None or self.supervisor.generation.number < 1:
            failing.append("generation")
        if not self.accepting:
            failing.append("shutdown")
        return failing

    def detach(self, conn: ClientConnection) -> None:
        log_connection_closed(conn)
        if conn.ws.close_reason == "slow consumer":
            self.slow_consumer_closes += 1
        known = self.connections.pop(conn.conn_id, None)
        self.hub.detach(conn)
        shown = conn.client_mode in PRESENCE_MODES
        if known is not None and self.accepting and (shown or conn.device_id):
            self.presence_list.changed(shown=shown)
        if not self.connections:
            self._all_closed.set()

    def presence(self) -> list[dict[str, Any]]:
        """OpenClaw's presence list (`_presence`)."""
        return self.presence_list.entries()

    async def wait_all_closed(self) -> None:
        """Wait until no connection is left (after `close_all`). A checkpoint."""
        if self.connections:
            self._all_closed = trio.Event()
            await self._all_closed.wait()
        else:
            await trio.lowlevel.checkpoint()

    async def handle_stream(self, stream: trio.SocketStream) -> None:
        if not self.accepting:
            await trio.aclose_forcefully(stream)
            return
        address = _peer_address(stream)
        slot = self.preauth.acquire(address)  # HTTP and WebSocket share the budget
        if slot is None:
            await _refuse_busy(stream)
            return
        # Read the request head once (bounded in bytes and by the handshake deadline): a
        # WebSocket upgrade goes on as before, anything else is plain HTTP.
        deadline = trio.current_time() + self.handshake_timeout_s
        head = bytearray()
        complete = False
        with trio.move_on_at(deadline):
            complete = await read_head(stream, head)
        if not is_websocket_upgrade(head):
            try:
                await self._serve_http(stream, head, deadline, complete=complete)
            finally:
                slot.release()
            return
        ws = WebSocketServerConnection(
            stream, max_buffered_bytes=self.max_buffered_bytes, received=bytes(head)
        )
        conn = ClientConnection(
            self,
            ws,
            f"c{next(self._ids)}-{os.urandom(3).hex()}",
            peer=Peer(address=address, local=self.is_local_address(address)),
            preauth=slot,
        )
        conn.handshake_deadline = deadline
        self.websocket_sockets += 1
        try:
            await conn.run()
        except Exception:
            log.exception("connection %s failed", conn.conn_id)
        finally:
            self.websocket_sockets -= 1

    async def _serve_http(
        self, stream: trio.SocketStream, head: bytearray, deadline: float, *, complete: bool
    ) -> None:
        """Plain HTTP (`_http`, routed by `_http_routes`). A head that never came whole
        gets 431 when it was too large, nothing when it was too slow or the peer closed.
        Closes the stream."""
        self.http_sockets += 1
        try:
            if not complete:
                if len(head) > MAX_HEAD_BYTES:
                    with trio.move_on_after(1):
                        await stream.send_all(HEAD_TOO_LARGE)
                        await lingering_close(stream)
                return
            try:
                peer = str(stream.socket.getpeername()[0])
            except OSError:
                peer = ""
            assert self.http_routes is not None
            http = HttpConnection(stream, head, peer)
            await http.serve(self.http_routes, head_deadline=deadline)
            if http.unread:
                with trio.move_on_after(1):
                    await lingering_close(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            log.exception("HTTP connection failed")
        finally:
            self.http_sockets -= 1
            await trio.aclose_forcefully(stream)

    async def run_ticks(self) -> None:
        ticks = 0
        while True:
            await trio.sleep(self.tick_interval_ms / 1000)
            self.hub.broadcast("tick", {"ts": int(time.time() * 1000)})
            ticks += 1
            if ticks * self.tick_interval_ms >= HEALTH_INTERVAL_MS and self.hub.has_readers():
                # As OpenClaw: a `health` event every minute (the snapshot's health shape).
                ticks = 0
                health = await health_view(self, extras=False)
                self.health_version += 1
                self.hub.broadcast("health", health, readers_only=True)

    def begin_shutdown(self, reason: str) -> None:
        """Stop accepting and tell every client."""
        self.accepting = False
        self.hub.broadcast("shutdown", {"reason": reason})

    def emit_cron(self, payload: dict[str, Any], *, here: bool = False) -> None:
        """The `cron` event, to every connection with `operator.read` (as OpenClaw), on
        every node (`here`: this node's only)."""
        targets = [c for c in self.connections.values() if c.has_scope("operator.read")]
        if targets:
            self.hub.send_to(targets, "cron", payload)
        if self.router is not None and not here:
            self.router.tell_all({"cron": payload})

    def close_all(self) -> None:
        for conn in list(self.connections.values()):
            conn.ws.close(CLOSE_GOING_AWAY, "gateway shutting down")


@attrs.frozen
class GatewayOptions:
    host: str = "127.0.0.1"
    port: int | None = None
    state_dir: Path = Path(".clawlane")
    config_path: Path | None = None
    token: str | None = None
    max_buffered_bytes: int = MAX_BUFFERED_BYTES
    max_preauth_per_address: int = DEFAULT_MAX_PREAUTH_PER_ADDRESS
    """Unauthenticated sockets per client address (OpenClaw: 32); more get HTTP 503."""
    remote_peer_addresses: frozenset[str] = frozenset()
    """Loopback client addresses to treat as remote (tests of remote pairing and limits)."""
    cron_clock: Callable[[], int] = wall_ms
    """Epoch ms for the cron scheduler (tests pass a clock that follows trio's)."""
    worker_index: int | None = None  # of `gateway --workers N`: SO_REUSEPORT (`_workers`)
    seed_config: bool = False
    """`gateway --seed-config`: in a cluster on PostgreSQL, this node's file replaces the
    cluster's config at start, and its file watch publishes the file even when it is older
    than the cluster's config (without it a node adopts the cluster's config)."""


async def _run_cron(
    gateway: Gateway, store: Any, clock: Callable[[], int], *, task_status: trio.TaskStatus[None]
) -> None:
    """The cron scheduler, for the gateway's lifetime (or the node's lease)."""
    async with open_cron(
        gateway.supervisor, SqliteCronStore(store), emit=gateway.emit_cron, clock=clock
    ) as cron:
        gateway.cron = cron
        task_status.started()
        await trio.sleep_forever()


@asynccontextmanager
async def open_gateway(config: Config, options: GatewayOptions) -> AsyncIterator[Gateway]:
    """Run an embedded gateway listening on loopback (or `options.host`).

    The bound port is `gateway.listeners[0].socket.getsockname()[1]` (port 0 picks one).
    Raises `GatewayConfigError` before binding anything when the settings are unsafe.
    """
    auth, builder, generation = await _prepare(config, options)
    async with (
        telemetry.open_telemetry(config.diagnostics),  # off by default; flushed last
        own_state_dir(options.state_dir, options.worker_index),  # one gateway per state dir
        open_node(config) as node,  # with cluster.redis.url: this node of the cluster
        open_store_backend(config, options.state_dir) as store,  # SQLite or PostgreSQL
        open_gateway_documents(config, options.state_dir) as (pairing, prefs),  # files, or PG's
        open_config_document(config) as config_document,  # a cluster on PG: its one config
        open_gateway_supervisor(  # with the session tools (sessions_send, sessions_spawn, ...)
            generation=generation, store=store, workspace_root=options.state_dir / "workspaces"
        ) as supervisor,
    ):
        del generation  # the supervisor holds the serving one; a pinned one never retires
        gateway = await _make_gateway(config, options, supervisor, auth, pairing)
        gateway.node, gateway.user_prefs = node, prefs
        gateway.config_document = config_document
        hooks = supervisor.hooks
        async with trio.open_nursery() as nursery:
            await _start_services(gateway, nursery, builder, store, options)
            nursery.start_soon(mirror_metrics, gateway)  # diagnostics.otel: /metrics too
            listeners = await open_listeners(config, options)
            gateway.listeners = listeners
            if hooks.has("gateway_start"):
                await hooks.fire(
                    "gateway_start", GatewayStartEvent(port=listeners[0].socket.getsockname()[1])
                )
            accepting = trio.CancelScope()
            accept_done = trio.Event()
            nursery.start_soon(_accept, gateway, nursery, accepting, accept_done)
            nursery.start_soon(gateway.run_ticks)
            try:
                yield gateway
            finally:
                with trio.CancelScope(shield=True):
                    await _shut_down(gateway, builder, accepting, accept_done)
                nursery.cancel_scope.cancel()


async def _prepare(
    config: Config, options: GatewayOptions
) -> tuple[AuthSettings, GenerationBuilder, ModelRuntimeGeneration]:
    """What is checked and built before anything binds or opens: the auth settings, the
    first generation. Raises `GatewayConfigError`, `ConfigError`."""
    auth = await trio.to_thread.run_sync(
        lambda: auth_settings(
            config, token_override=options.token, host=options.host, state_dir=options.state_dir
        )
    )
    # --- model runtime generations: one builder for startup and every publish ---
    builder = GenerationBuilder(state_dir=options.state_dir)
    try:
        generation = builder.build_config(config, 1)
    except Exception as exc:
        raise ConfigError(str(exc)) from exc
    options.state_dir.mkdir(parents=True, exist_ok=True)
    return auth, builder, generation


async def _make_gateway(
    config: Config,
    options: GatewayOptions,
    supervisor: Supervisor,
    auth: AuthSettings,
    pairing: PairingStore,
) -> Gateway:
    """The gateway's state, its plugins loaded, and the runs the previous process accepted
    and did not finish recovered."""
    gateway = Gateway(
        config=config,
        supervisor=supervisor,
        auth=auth,
        state_dir=options.state_dir,
        config_path=options.config_path,
        max_buffered_bytes=options.max_buffered_bytes,
        pairing=pairing,
        max_preauth_per_address=options.max_preauth_per_address,
        remote_peer_addresses=options.remote_peer_addresses,
    )
    specs: list[str | Path] = list(config.plugins.load)
    specs.extend(await trio.to_thread.run_sync(extension_specs, config.agents.defaults.resources))
    for loaded in await load_plugins(specs, supervisor.hooks, supervisor.plugins):
        if not loaded.ok:
            log.error("plugin %s failed to load: %s", loaded.spec, loaded.error)
    alone = config.cluster.redis.url is None  # a cluster's unended runs are the reaper's
    mode = config.gateway.interruptedRuns
    gateway.recovery = await recover_runs(supervisor, interrupted=mode, pending_too=alone)
    adopt_subagents(supervisor, gateway.recovery.runs)  # their parents hear how they ended
    restore_idempotency(gateway, gateway.recovery.runs)
    return gateway


async def _start_services(
    gateway: Gateway,
    nursery: trio.Nursery,
    builder: GenerationBuilder,
    store: Any,
    options: GatewayOptions,
) -> None:
    """The publisher, the HTTP routes and the chart sampler, the operator desks' expiry,
    the cron scheduler, each a task of `nursery`; a cluster node's too."""
    publisher = gateway.publisher = Publisher(
        gateway.supervisor, builder=builder, config_path=options.config_path
    )
    if gateway.node is not None and gateway.config_document is not None:
        origin = gateway.node.node_id
        publisher.use_document(gateway.config_document, origin=origin, seed=options.seed_config)
    cron_config = lambda: gateway.supervisor.generation.config.cron  # noqa: E731
    gateway.webhooks = await nursery.start(serve_run_webhooks, cron_config)
    if gateway.node is not None:
        ignored = trio.TASK_STATUS_IGNORED
        cron = lambda: _run_cron(gateway, store, options.cron_clock, task_status=ignored)  # noqa: E731
        await start_node(gateway.node, nursery, gateway, publisher=publisher, cron=cron)
    await nursery.start(publisher.run)
    gateway.http_routes = HttpRoutes(gateway, await trio.to_thread.run_sync(load_dashboard))
    nursery.start_soon(gateway.sampler.run)
    nursery.start_soon(run_desks, gateway.approvals, gateway.questions)  # their expiry
    nursery.start_soon(gateway.supervisor.backfill_usage)  # turns stored before usage was kept
    if gateway.node is None:
        await nursery.start(_run_cron, gateway, store, options.cron_clock)


async def _accept(
    gateway: Gateway, nursery: trio.Nursery, accepting: trio.CancelScope, done: trio.Event
) -> None:
    """Serve the listeners (connections in `nursery`) until `accepting` is cancelled."""
    try:
        with accepting:
            await trio.serve_listeners(
                gateway.handle_stream, gateway.listeners, handler_nursery=nursery
            )
    finally:
        done.set()


async def _shut_down(
    gateway: Gateway,
    builder: GenerationBuilder,
    accepting: trio.CancelScope,
    accept_done: trio.Event,
) -> None:
    """Stop accepting, tell every client, end every run, close the providers and the
    connections, flush the pairing store. Run shielded."""
    supervisor = gateway.supervisor
    gateway.begin_shutdown("gateway stopping")
    if supervisor.hooks.has("gateway_stop"):
        await supervisor.hooks.fire("gateway_stop", GatewayStopEvent(reason="shutdown"))
    accepting.cancel()
    await accept_done.wait()
    for listener in gateway.listeners:
        await listener.aclose()
    with trio.move_on_after(30):
        await supervisor.shutdown_runs()
    await close_all_providers(builder, supervisor.generation)
    gateway.close_all()
    with trio.move_on_after(2):
        await gateway.wait_all_closed()
    with trio.move_on_after(5):
        try:
            await gateway.pairing.flush(include_metadata=True)
        except PairingStoreError as exc:
            log.error("%s", exc)


_FORWARDED_HEADERS: Final = (b"forwarded", b"x-real-ip")
_TOO_MANY: Final = http_refusal(503, "Service Unavailable", "Too many unauthenticated sockets")


async def _refuse_busy(stream: trio.SocketStream) -> None:
    """Over an address's budget of unauthenticated sockets: answer 503 and close, reading
    (and dropping) at most 16 KiB for at most 0.25 s so that the answer is not lost to a
    reset when the client's request is already on its way."""
    try:
        with trio.move_on_after(0.25):
            await stream.send_all(_TOO_MANY)
            await stream.send_eof()
            drained = 0
            while drained < 16_384:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    break
                drained += len(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await trio.aclose_forcefully(stream)


def _peer_address(stream: trio.SocketStream) -> str:
    try:
        peer = stream.socket.getpeername()
    except OSError:
        return ""
    address = str(peer[0]) if isinstance(peer, tuple) else ""
    return address.removeprefix("::ffff:")


def _hello_auth(conn: ClientConnection, admitted: Admitted | None) -> dict[str, Any]:
    auth: dict[str, Any] = {"role": conn.role, "scopes": list(conn.granted_scopes)}
    if admitted is not None and admitted.device_token is not None:
        auth["deviceToken"] = admitted.device_token
        if admitted.device_token_issued_at is not None:
            auth["issuedAtMs"] = admitted.device_token_issued_at
    return auth


async def serve_gateway(config: Config, options: GatewayOptions) -> None:
    """Serve until SIGINT/SIGTERM, then shut down cleanly."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_gateway(config, options) as gateway:
            tune_gc()
            addr = gateway.listeners[0].socket.getsockname()
            # the startup lines are INFO records (stderr), no print
            if gateway.auth.token_file is not None:
                what = "created a gateway token in" if gateway.auth.created else "gateway token in"
                log.info(
                    "%s %s (clients on this machine read it from there)",
                    what,
                    gateway.auth.token_file.resolve(),
                )
            log.info(
                "clawlane gateway listening on ws://%s:%s (auth: %s, state dir: %s)",
                addr[0],
                addr[1],
                gateway.auth.mode,
                options.state_dir,
            )
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                break
    log.info("clawlane gateway stopped")
