"""`clawlane gateway --workers N`: N gateway processes on one port of one machine.

(Work in progress: the listener part.)
"""

from __future__ import annotations

import socket
from typing import Final, Protocol

import trio

from runtime.model import Config

__all__ = ["open_listeners", "reuse_port_sockets"]

BACKLOG: Final = socket.SOMAXCONN


class _Where(Protocol):
    """What `open_listeners` reads of `GatewayOptions` (`_gateway` imports this module)."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int | None: ...
    @property
    def worker_index(self) -> int | None: ...


def reuse_port_sockets(host: str, port: int, *, listen: bool) -> list[socket.socket]:
    """One TCP socket per address `host` resolves to, each with SO_REUSEADDR and
    SO_REUSEPORT, bound to `port` (port 0: the first one's port for all) and, with `listen`,
    listening. Raises `OSError` (the address in use, not available, ...). Blocking (name
    resolution)."""
    infos = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(
            (i[0], i[1], i[2], i[3], i[4]) for i in infos
        ):
            if sockets and port == 0:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sockets.append(_bound(family, kind, proto, address, listen=listen))
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _bound(
    family: socket.AddressFamily,
    kind: socket.SocketKind,
    proto: int,
    address: tuple[object, ...],
    *,
    listen: bool,
) -> socket.socket:
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        if listen:
            sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


async def open_listeners(config: Config, options: _Where) -> list[trio.SocketListener]:
    """The gateway's listeners on `options.host` and `options.port` (else `gateway.port`):
    `trio.open_tcp_listeners`, or for a worker (`options.worker_index`) sockets that share
    the port with the other workers (the kernel spreads the connections). A checkpoint;
    raises `OSError`."""
    host = options.host
    port = options.port if options.port is not None else config.gateway.port
    if options.worker_index is None:
        return await trio.open_tcp_listeners(port, host=host)
    sockets = await trio.to_thread.run_sync(lambda: reuse_port_sockets(host, port, listen=True))
    return [trio.SocketListener(trio.socket.from_stdlib_socket(s)) for s in sockets]
