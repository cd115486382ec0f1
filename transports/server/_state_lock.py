"""One gateway process per state dir: an exclusive lock on `<state-dir>/gateway.lock`.

As OpenClaw's state ownership lock (its `gateway-lock` doc): the state dir's SQLite file and
the cron jobs belong to one process, so every job fires once. The lock is `flock(2)` on an
open file: the kernel releases it when the process ends however it ends (SIGKILL included),
so a stale file never blocks a restart. The file holds the owner's pid, for the message. A
second gateway on the same state dir fails at once with one clear line (`GatewayLockError`,
a `GatewayConfigError`: the CLI prints it and exits 2).

In a cluster several processes share jobs through a Redis lease on cron itself (one node runs
it at a time: `transports.cluster._node`), and each node locks its own state dir. The workers of
`clawlane gateway --workers N` (`_workers`) share one state dir: their parent holds
`gateway.lock` for as long as it runs, and worker i holds `gateway-w<i>.lock`
(`worker_lock_name`), so a second gateway on the dir is still refused and two copies of
one worker never run.

The workers share the port too, which is the other thing a gateway process owns on its
machine: `open_listeners` gives a worker (`GatewayOptions.worker_index`) sockets with
SO_REUSEPORT (`reuse_port_sockets`), so the kernel spreads the connections over them, and
the one gateway `trio.open_tcp_listeners` as before. (Here rather than in `_workers`, which
imports `_gateway`: the import graph has no circles.)
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Final, Protocol

import trio

from runtime.model import Config

from .._errors import GatewayConfigError, TransportError

__all__ = [
    "LOCK_NAME",
    "GatewayLockError",
    "ListenOptions",
    "open_listeners",
    "own_state_dir",
    "reuse_port_sockets",
    "state_dir_lock",
    "worker_lock_name",
]

LOCK_NAME: Final = "gateway.lock"


class GatewayLockError(TransportError):
    """Another gateway owns the state dir."""


def worker_lock_name(index: int) -> str:
    """The lock file of worker `index` of a `--workers` gateway."""
    return f"gateway-w{index}.lock"


@contextmanager
def state_dir_lock(state_dir: Path, *, worker: int | None = None) -> Iterator[Path]:
    """Hold the state dir's lock (`gateway.lock`, or with `worker` that worker's) for the
    block. Raises `GatewayLockError` at once when another process holds it. Blocking file
    I/O (a few syscalls); not a checkpoint."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / (LOCK_NAME if worker is None else worker_lock_name(worker))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise GatewayLockError(
                f"gateway already running on state dir {state_dir.resolve()} (pid {owner}); "
                "stop it or pass another --state-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock


@asynccontextmanager
async def own_state_dir(state_dir: Path, worker: int | None) -> AsyncIterator[None]:
    """`state_dir_lock` for a gateway's lifetime (one gateway per state dir); a
    refusal is `GatewayConfigError`. A checkpoint."""
    try:
        lock = state_dir_lock(state_dir, worker=worker)
        lock.__enter__()
    except GatewayLockError as exc:
        raise GatewayConfigError(str(exc)) from None
    try:
        await trio.lowlevel.checkpoint()
        yield
    finally:
        lock.__exit__(None, None, None)


# --- the port: a worker shares it with its siblings (SO_REUSEPORT) --------------------------

BACKLOG: Final = socket.SOMAXCONN


class ListenOptions(Protocol):
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


async def open_listeners(config: Config, options: ListenOptions) -> list[trio.SocketListener]:
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
