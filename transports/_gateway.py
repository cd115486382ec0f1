"""The WebSocket gateway: listens, accepts, authenticates, and serves connections.

`open_gateway` runs the whole embedded gateway in one nursery: the store, the supervisor (with
its generation), the listener, the tick task. Shutdown (leaving the context, or SIGINT/SIGTERM
in `serve_gateway`): stop accepting, broadcast `shutdown`, end every run with its terminal
lifecycle event, flush the store, close the connections.
"""

from __future__ import annotations

import gc
import hmac
import ipaddress
import itertools
import logging
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from actors import EventHub, RunRegistry, Supervisor, open_store, open_supervisor
from actors._publisher import GENERATION_EVENT, Publisher
from runtime._config import Config, ConfigError
from runtime._frames import (
    INVALID_REQUEST,
    MAX_BUFFERED_BYTES,
    MAX_PAYLOAD_BYTES,
    PROTOCOL_VERSION,
    TICK_INTERVAL_MS,
    GatewayError,
)
from runtime._generation import GenerationBuilder
from runtime._hooks import GatewayStartEvent, GatewayStopEvent
from runtime._plugins import load_plugins
from runtime._resources import discover_resources
from runtime._retire import close_all_providers
from runtime._sessions import DEFAULT_MAIN_KEY
from runtime._wire import ConnectParams, ConnectParamsAuth

from ._connection import ClientConnection
from ._methods import Methods
from ._ws import CLOSE_GOING_AWAY, WebSocketServerConnection

log = logging.getLogger("clawlane.gateway")

VERSION: Final = "0.1.0"
EVENTS: Final = (
    "connect.challenge",
    "agent",
    "chat",
    "tick",
    "shutdown",
    "health",
    "sessions.changed",
    "session.message",
    GENERATION_EVENT,  # clawlane-only: "runtime.generation" (publishes and failed builds)
)


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


class GatewayConfigError(Exception):
    """The gateway refuses to start (e.g. a non-loopback bind without a token)."""


def is_loopback(host: str) -> bool:
    if host in ("localhost", "loopback"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen
class AuthSettings:
    mode: str
    token: str | None


def auth_settings(config: Config, *, token_override: str | None, host: str) -> AuthSettings:
    """Resolve `gateway.auth` (+ `CLAWLANE_GATEWAY_TOKEN`). Raises `GatewayConfigError`."""
    token = (
        token_override
        or config.gateway.auth.token
        or os.environ.get("CLAWLANE_GATEWAY_TOKEN")
        or None
    )
    mode = config.gateway.auth.mode or ("token" if token else "none")
    if mode == "token" and not token:
        raise GatewayConfigError(
            'gateway.auth.mode is "token" but no token is set '
            "(gateway.auth.token, --token or CLAWLANE_GATEWAY_TOKEN)"
        )
    if not is_loopback(host) and (mode != "token" or not token):
        raise GatewayConfigError(
            f"refusing to bind {host}: a non-loopback bind requires a token "
            "(set gateway.auth.token, --token or CLAWLANE_GATEWAY_TOKEN)"
        )
    return AuthSettings(mode=mode, token=token if mode == "token" else None)


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
        self.publisher: Publisher | None = None  # set by open_gateway (issue 3)
        self.methods = Methods(self)
        self.connections: dict[str, ClientConnection] = {}
        self._ids = itertools.count(1)
        self.started = time.time()
        self.accepting = True
        self.boot_id = os.urandom(6).hex()
        self.listeners: list[trio.SocketListener] = []
        self._all_closed = trio.Event()

    # --- auth and hello ------------------------------------------------------------------

    def check_auth(self, params: ConnectParams) -> GatewayError | None:
        if self.auth.mode != "token":
            return None
        assert self.auth.token is not None
        given = params.auth.token if isinstance(params.auth, ConnectParamsAuth) else None
        if not isinstance(given, str) or not given:
            return GatewayError(
                INVALID_REQUEST,
                "unauthorized: gateway token missing (set auth.token in connect params)",
                details={
                    "code": "AUTH_TOKEN_MISSING",
                    "canRetryWithDeviceToken": False,
                    "recommendedNextStep": "update_auth_configuration",
                },
            )
        if not hmac.compare_digest(given.encode(), self.auth.token.encode()):
            return GatewayError(
                INVALID_REQUEST,
                "unauthorized: gateway token mismatch",
                details={
                    "code": "AUTH_TOKEN_MISMATCH",
                    "canRetryWithDeviceToken": False,
                    "recommendedNextStep": "update_auth_credentials",
                },
            )
        return None

    def hello_ok(self, conn: ClientConnection) -> dict[str, Any]:
        gen = self.supervisor.generation
        agent = gen.default_agent
        return {
            "type": "hello-ok",
            "protocol": PROTOCOL_VERSION,
            "server": {"version": VERSION, "connId": conn.conn_id, "bootId": self.boot_id},
            "features": {"methods": self.methods.names(), "events": list(EVENTS)},
            "snapshot": {
                "presence": [],
                "health": {"ok": True, "ts": int(time.time() * 1000)},
                "stateVersion": {"presence": 0, "health": 0},
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
            "auth": {"role": conn.role, "scopes": sorted(conn.scopes)},
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

    def detach(self, conn: ClientConnection) -> None:
        self.connections.pop(conn.conn_id, None)
        self.hub.detach(conn)
        if not self.connections:
            self._all_closed.set()

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
        ws = WebSocketServerConnection(stream, max_buffered_bytes=self.max_buffered_bytes)
        conn = ClientConnection(self, ws, f"c{next(self._ids)}-{os.urandom(3).hex()}")
        try:
            await conn.run()
        except Exception:
            log.exception("connection %s failed", conn.conn_id)

    async def run_ticks(self) -> None:
        while True:
            await trio.sleep(self.tick_interval_ms / 1000)
            self.hub.broadcast("tick", {"ts": int(time.time() * 1000)})

    def begin_shutdown(self, reason: str) -> None:
        """Stop accepting and tell every client."""
        self.accepting = False
        self.hub.broadcast("shutdown", {"reason": reason})

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


@asynccontextmanager
async def open_gateway(config: Config, options: GatewayOptions) -> AsyncIterator[Gateway]:
    """Run an embedded gateway listening on loopback (or `options.host`).

    The bound port is `gateway.listeners[0].socket.getsockname()[1]` (port 0 picks one).
    Raises `GatewayConfigError` before binding anything when the settings are unsafe.
    """
    auth = auth_settings(config, token_override=options.token, host=options.host)
    # --- model runtime generations (issue 3): one builder for startup and every publish ---
    builder = GenerationBuilder(state_dir=options.state_dir)
    try:
        generation = builder.build_config(config, 1)
    except Exception as exc:
        raise ConfigError(str(exc)) from exc
    options.state_dir.mkdir(parents=True, exist_ok=True)
    port = options.port if options.port is not None else config.gateway.port
    async with (
        open_store(options.state_dir / "clawlane.sqlite") as store,
        open_supervisor(
            generation=generation, store=store, workspace_root=options.state_dir / "workspaces"
        ) as supervisor,
    ):
        gateway = Gateway(
            config=config,
            supervisor=supervisor,
            auth=auth,
            state_dir=options.state_dir,
            config_path=options.config_path,
            max_buffered_bytes=options.max_buffered_bytes,
        )
        specs: list[str | Path] = list(config.plugins.load)
        specs.extend(
            await trio.to_thread.run_sync(extension_specs, config.agents.defaults.resources)
        )
        for loaded in await load_plugins(specs, supervisor.hooks, supervisor.plugins):
            if not loaded.ok:
                log.error("plugin %s failed to load: %s", loaded.spec, loaded.error)
        hooks = supervisor.hooks
        del generation  # the supervisor holds the serving one; a pinned one never retires
        async with trio.open_nursery() as nursery:
            # --- issue 3: the publisher (config watcher + publishes) ---
            gateway.publisher = Publisher(
                supervisor, builder=builder, config_path=options.config_path
            )
            await nursery.start(gateway.publisher.run)
            listeners = await trio.open_tcp_listeners(port, host=options.host)
            gateway.listeners = listeners
            if hooks.has("gateway_start"):
                await hooks.fire(
                    "gateway_start", GatewayStartEvent(port=listeners[0].socket.getsockname()[1])
                )
            accepting = trio.CancelScope()
            accept_done = trio.Event()

            async def accept() -> None:
                try:
                    with accepting:
                        await trio.serve_listeners(
                            gateway.handle_stream, listeners, handler_nursery=nursery
                        )
                finally:
                    accept_done.set()

            nursery.start_soon(accept)
            nursery.start_soon(gateway.run_ticks)
            try:
                yield gateway
            finally:
                with trio.CancelScope(shield=True):
                    gateway.begin_shutdown("gateway stopping")
                    if hooks.has("gateway_stop"):
                        await hooks.fire("gateway_stop", GatewayStopEvent(reason="shutdown"))
                    accepting.cancel()
                    await accept_done.wait()
                    for listener in listeners:
                        await listener.aclose()
                    with trio.move_on_after(30):
                        await supervisor.shutdown_runs()
                    await close_all_providers(builder, supervisor.generation)
                    gateway.close_all()
                    with trio.move_on_after(2):
                        await gateway.wait_all_closed()
                nursery.cancel_scope.cancel()


GC_THRESHOLDS: Final = (100_000, 20, 100)
"""The gateway process's garbage collector thresholds (CPython's: 700, 10, 10). The young
generation's count is allocations minus frees of tracked objects: what a run keeps for a
while (its record for `agent.wait`, its replay buffer, the cached final, the session's
context) grows it by ~80 per run. With the defaults a young collection, walking all of
that, ran every ~10 runs; at 1,000 busy sessions that was ~15 % of the CPU, and still ~5 %
at 20,000. At 100,000 one runs every ~1,000 runs and takes ~12 ms (well inside the latency
budget). Almost everything is freed by reference count; the collector is only for cycles,
and a larger young generation finds them as well."""


def tune_gc() -> None:
    """For a long-running gateway process: move what startup built (modules, the config,
    the first generation) out of the collector's sight and collect less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def serve_gateway(config: Config, options: GatewayOptions) -> None:
    """Serve until SIGINT/SIGTERM, then shut down cleanly."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_gateway(config, options) as gateway:
            tune_gc()
            addr = gateway.listeners[0].socket.getsockname()
            log.warning("clawlane gateway listening on ws://%s:%s", addr[0], addr[1])
            print(
                f"clawlane gateway listening on ws://{addr[0]}:{addr[1]} (auth: {gateway.auth.mode})",
                flush=True,
            )
            async for signum in signals:
                print(
                    f"clawlane: received {signal.Signals(signum).name}, shutting down", flush=True
                )
                break
