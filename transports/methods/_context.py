"""What the RPC methods see of the gateway and of the connection calling them.

The methods sit below the connection and the gateway: they never import `Host` or
`Client`, only these two views, which those classes (and the in-process HTTP
caller, `transports.http._caller.Caller`) satisfy as they are. A handler reaches them
through its `Call` (`call.gateway`, `call.conn`).

- `Client`: the calling connection: who it is (role, scopes, device), where its answers go
  (`respond`, `respond_error`), and, as the hub's `Subscriber`, where its events go; its
  requests in flight (`pending`) and the sessions its UI has open (`viewed_sessions`).
- `Connected`: a connection the gateway lists (`Host.process.connections`): a `Client` with its
  client's name and mode and its outbox.
- `Host`: the gateway, as three roles: `actors` (`Actors`: what runs: the supervisor, hub,
  registry, cron, webhooks, publisher, recovery, and the operators' desks: plugin approvals,
  questions, progress cards), `trust` (`Trust`: who may do what: auth, pairing, users'
  prefs, and the `device.pair.*` / `users.prefs.changed` events and closing a device's
  connections that go with them) and `process` (`Process`: this process as a node: version,
  boot, state dir and config path, listeners, connections, the dashboard sampler, the
  clock, presence and the cluster's view). The `Gateway` is all three, each seen only
  through its role's Protocol.
- `Forwarder`: the cluster's router as the methods see it (`_routing`), when the gateway
  is a node of one.
- `Call`: one request as its handler sees it: the two above, the frame, its cancel scope,
  its place in its session's submission order and the router; `MethodTable`: where a
  method module adds its handlers (`_table.Methods`).

Everything here is read in the trio thread; nothing is a checkpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs
import msgspec
import trio

from actors import (
    CronScheduler,
    EventHub,
    PluginApprovals,
    ProgressCards,
    Publisher,
    Questions,
    RecoveryReport,
    RunRegistry,
    RunWebhooks,
    StoreError,
    Subscriber,
    Supervisor,
    Ticket,
)
from runtime.devices import PairingStore
from runtime.protocol import UNAVAILABLE, GatewayError, RequestFrame
from runtime.users import UserPrefs

from ..access import AuthSettings

__all__ = [
    "Actors",
    "Call",
    "Cancellable",
    "Client",
    "Connected",
    "Forwarder",
    "Handler",
    "Host",
    "MethodTable",
    "Process",
    "Samples",
    "Trust",
]


class Cancellable(Protocol):
    """A request in flight: a handler task's cancel scope, or an `agent` request on the
    task-free path (`_agent`)."""

    def cancel(self) -> None: ...


class Client(Subscriber, Protocol):
    """The connection a request came from (see the module docstring)."""

    role: str
    scopes: frozenset[str]
    """Exactly the scopes granted (`has_scope` applies what each one satisfies)."""
    granted_scopes: list[str]
    auth_method: str
    device_id: str | None
    viewed_sessions: set[str]
    """Sessions the Control UI has open (`sessions.viewers.set`)."""
    scoped: bool
    """Whether it asked for session-scoped events only."""
    pending: dict[str, Cancellable]
    """Requests in flight by id."""

    def has_scope(self, scope: str) -> bool: ...

    def respond(self, req_id: str, payload: Any = None) -> None: ...

    def respond_error(
        self, req_id: str, error: GatewayError, payload: Any = msgspec.UNSET
    ) -> None: ...


class Connected(Client, Protocol):
    """A WebSocket connection the gateway lists."""

    client_id: str
    client_mode: str

    @property
    def buffered_bytes(self) -> int:
        """What its outbox holds, not yet written to the socket."""
        ...


class Samples(Protocol):
    """The dashboard chart's samples (`_dashboard.Sampler`)."""

    @property
    def samples(self) -> Iterable[dict[str, Any]]: ...


class Actors(Protocol):
    """What runs: the supervisor and its hub and registry, cron, the runs' webhooks, the
    publisher, what recovery found, and the operators' desks."""

    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def hub(self) -> EventHub: ...
    @property
    def registry(self) -> RunRegistry: ...
    @property
    def cron(self) -> CronScheduler | None: ...
    @property
    def webhooks(self) -> RunWebhooks | None: ...
    @property
    def publisher(self) -> Publisher | None: ...
    @property
    def recovery(self) -> RecoveryReport | None: ...
    @property
    def approvals(self) -> PluginApprovals:
        """The plugin approvals pending for the operators (`plugin.approval.*`)."""
        ...

    @property
    def questions(self) -> Questions:
        """The questions pending for the operators (`question.*`, `ask_user`)."""
        ...

    @property
    def cards(self) -> ProgressCards:
        """The sessions' progress cards (`progressCard.*`, `progress_card`)."""
        ...


class Trust(Protocol):
    """Who may do what: the gateway's auth, the paired devices, the users' prefs, and
    telling the connections (of every node) when those change."""

    @property
    def auth(self) -> AuthSettings: ...
    @property
    def pairing(self) -> PairingStore: ...
    @property
    def user_prefs(self) -> UserPrefs:
        """The Control UI's `users.prefs.*` (the state dir's file, or the cluster's)."""
        ...

    def pairing_event(self, event: str, payload: dict[str, Any]) -> None:
        """`device.pair.*` to the operators holding `operator.pairing`."""
        ...

    def connected_device_ids(self) -> set[str]:
        """The devices connected (to any node of a cluster)."""
        ...

    def prefs_changed(self, entries: dict[str, Any]) -> None:
        """`users.prefs.changed` to every connection (of every node)."""
        ...

    def disconnect_device(self, device_id: str, reason: str, *, role: str | None = None) -> None:
        """Close the connections of a device whose pairing or token went away."""
        ...


class Process(Protocol):
    """This process as a node: its version and boot, where its state lives, its sockets
    and connections, its clock, its presence and its view of the cluster."""

    @property
    def version(self) -> str: ...
    @property
    def boot_id(self) -> str: ...
    @property
    def started(self) -> float:
        """When the gateway started (epoch seconds)."""
        ...

    @property
    def state_dir(self) -> Path: ...
    @property
    def config_path(self) -> Path | None: ...
    @property
    def listeners(self) -> Sequence[trio.SocketListener]: ...
    @property
    def connections(self) -> Mapping[str, Connected]: ...
    @property
    def sampler(self) -> Samples: ...

    def now_ms(self) -> int: ...

    def presence(self) -> list[dict[str, Any]]: ...

    async def cluster_view(self) -> dict[str, Any] | None:
        """The cluster's nodes, None without `cluster.redis.url`."""
        ...


class Host(Protocol):
    """The gateway as the methods see it: three roles (see the module docstring)."""

    @property
    def actors(self) -> Actors: ...
    @property
    def trust(self) -> Trust: ...
    @property
    def process(self) -> Process: ...


class Forwarder(Protocol):
    """The cluster's router as the method table uses it (`transports.cluster.Router`)."""

    def target(self, frame: RequestFrame) -> Any:
        """What the request concerns, when the router must take it; None otherwise."""
        ...

    def reserve(self, target: Any, method: str) -> Ticket | None:
        """The request's place in its session's order (runs of a session only)."""
        ...

    async def handle(
        self,
        conn: Client,
        frame: RequestFrame,
        scope: trio.CancelScope,
        ticket: Ticket | None,
        target: Any,
    ) -> None:
        """Serve the request here or on the node that owns its target. Never raises but
        `Cancelled`; the caller releases `ticket`."""
        ...


@attrs.define(eq=False)
class Call:
    """One request as its handler sees it (`_table.Methods.call` makes it)."""

    gateway: Host
    conn: Client
    frame: RequestFrame
    scope: trio.CancelScope
    ticket: Ticket | None = None
    """The request's place in its session's submission order, taken by the reader
    (`actors.runs._order`; runs of `agent`, `chat.send`, `sessions.send`); released when the
    handler returns."""
    router: Forwarder | None = None
    """The cluster's router when the gateway is a node of one (`_owners`: one session's
    part of a many-session method goes to that session's owner)."""

    @property
    def id(self) -> str:
        return self.frame.id

    def ticket_for(self, key: str) -> Ticket:
        """The request's ticket for session `key`: the reader's, or (when the reader could
        not tell the key, or it resolves differently now) one taken now."""
        ticket = self.ticket
        if ticket is None or ticket.key != key or ticket.released:
            self.release_ticket()
            ticket = self.ticket = self.gateway.actors.supervisor.order.reserve(key)
        return ticket

    def release_ticket(self) -> None:
        if self.ticket is not None:
            self.ticket.release()

    def respond(self, payload: Any) -> None:
        self.conn.respond(self.frame.id, payload)


Handler = Callable[[Call, Any], Awaitable[Any]]


class MethodTable(Protocol):
    """Where a method module's `register` adds its handlers, and names the events it sends
    (`hello-ok.features.events`)."""

    def add(
        self, name: str, handler: Handler, params: type[Any] | None, *, scope: str | None = None
    ) -> None: ...

    def advertise(self, *events: str) -> None: ...


def store_unavailable(exc: StoreError) -> GatewayError:
    """A store that cannot be read or written right now (its database is away, or the
    disk is full), as the wire says an outage: `UNAVAILABLE`, retryable, naming the store
    (its location: the SQLite file or the PostgreSQL server) and what failed."""
    return GatewayError(
        UNAVAILABLE, f"the store is unavailable: {exc}", retryable=True, retry_after_ms=1_000
    )
