"""`clawlane gateway --workers N`: N gateway processes on one port of one machine.

The parent (`run_workers`) checks that the config can be shared: N in 1..64, and for N > 1
`cluster.redis.url` (the workers form one cluster: cron and the config file watch run on
one of them, a config published on one is served by all) and `storage.backend: "postgres"`
(SQLite belongs to one process). It resolves the auth (creating the state dir's token file
once, before any worker could race to), binds the port without listening (port 0: the
kernel picks one, and every worker gets that one; a port in use fails here, in one line),
then starts N workers: this same CLI, `clawlane gateway` with the same flags and the
internal `CLAWLANE_WORKER=<index>:<fd>` in its environment (not a flag: it never shows in
`--help` or the completions, and the worker removes it at once so nothing it spawns sees
it). Each worker opens the gateway with `GatewayOptions.worker_index` set: its listener
has SO_REUSEPORT on the shared port, so the kernel spreads the connections over the
workers. Its node id is `<cluster.nodeId>-w<i>` when the config names one, else
`node_id_for`'s default (hostname, pid, random: already one per process).

The state dir's lock: the parent holds `gateway.lock` for as long as it runs, so a second
gateway on the dir (one process or a `--workers` one) is refused as before; worker i holds
`gateway-w<i>.lock` (two copies of one worker never run, and the kernel releases it when
the worker dies, so a restart finds it free). The workers share the rest of the dir: the
token file (read only) and the workspaces; the device pairing they share as every node of
the cluster does, through the PostgreSQL document (`actors.open_pairing`, seeded from the
state dir's pairing file by the first to start), and the log file: without `logging.file`
the parent and the workers append to `<state-dir>/logs/gateway.log` (`shared_log_file`), so
`logs.tail` on any worker reads every one's lines. A connection the kernel had queued for a
worker that dies is lost unless `net.ipv4.tcp_migrate_req` is on (Linux 5.14+).

Start: each worker writes one line on the pipe `<fd>`: `ready <node id>` once it listens,
or `error <exit code> <reason>` when it cannot start. The parent logs the `listening on
ws://host:port` line once, when all are ready. When one cannot start (it said why, it
exited, or `STARTUP_TIMEOUT_S` passed) the parent prints that one line, stops the others
and exits with the worker's code. Supervision (as OTP's one-for-one with an intensity):
SIGINT and SIGTERM are forwarded to the workers (they run in their own process group, so a
terminal's ^C reaches the parent only) and the parent waits for them (`STOP_GRACE_S`, then
SIGKILL); a worker that dies later is started again, at most `MAX_RESTARTS` times within
`RESTART_WINDOW_S` (then the parent stops the others and exits 1 saying so; a restart that
fails to start counts as one more death, not as a failed start). A worker
whose parent dies (even by SIGKILL) sees its stdin, a pipe from the parent, close, and
shuts down as on SIGTERM. `--workers 1` runs none of this.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Final, Protocol

import attrs
import msgspec
import trio

from runtime.logs import install_log_ring
from runtime.model import Config

from ._startup import (
    EXIT_CONFIG,
    EXIT_ENVIRONMENT,
    EXIT_FAILED,
    StartupError,
    describe_failure,
)
from ._state_lock import GatewayLockError, ListenOptions, reuse_port_sockets, state_dir_lock

__all__ = [
    "MAX_WORKERS",
    "WORKER_ENV",
    "WorkerSlot",
    "check_workers",
    "gateway_workers",
    "run_worker",
    "run_workers",
    "take_worker_slot",
]

log = logging.getLogger("clawlane.workers")

MAX_WORKERS: Final = 64
WORKER_ENV: Final = "CLAWLANE_WORKER"
"""`<index>:<ready fd>`: set by the parent for its workers only."""
WORKER_TOKEN_ENV: Final = "CLAWLANE_WORKER_TOKEN"
"""The parent's `--token`, handed on without showing it in `ps`."""
STARTUP_TIMEOUT_S: Final = 120.0
"""A worker that has neither listened nor failed by then is killed, and the start fails."""
STOP_GRACE_S: Final = 60.0
"""After SIGINT/SIGTERM the workers have this long to finish their runs, then SIGKILL."""
MAX_RESTARTS: Final = 3
RESTART_WINDOW_S: Final = 60.0
WORKERS_LOG_FILE: Final = Path("logs") / "gateway.log"
"""Where the workers log, in the state dir, when `logging.file` is not set."""
"""At most `MAX_RESTARTS` restarts (of any worker) within this many seconds."""
_CHILD_MAIN: Final = "import sys; from transports.cli._main import main; sys.exit(main())"
_PACKAGE_ROOT: Final = str(Path(__file__).resolve().parents[2])

# --- the command ---------------------------------------------------------------------------


def check_workers(config: Config, count: int) -> None:
    """`--workers count` with this config, or `StartupError` (`EXIT_CONFIG`) naming the
    flag or the config key that is missing."""
    if not 1 <= count <= MAX_WORKERS:
        raise StartupError(
            f"--workers {count} is out of range: give 1 to {MAX_WORKERS} (about one per CPU)",
            EXIT_CONFIG,
        )
    if count == 1:
        return
    if config.cluster.redis.url is None:
        raise StartupError(
            f"--workers {count} needs cluster.redis.url in the config (the workers form "
            "one cluster through Redis)",
            EXIT_CONFIG,
        )
    if config.storage.backend != "postgres":
        raise StartupError(
            f'--workers {count} needs storage.backend "postgres" in the config (the '
            "workers share sessions through PostgreSQL; SQLite is one process)",
            EXIT_CONFIG,
        )


def gateway_workers(
    config: Config, options: GatewayOptionsLike, count: int, *, log_args: tuple[str, str]
) -> int | None:
    """`clawlane gateway` when it is a worker (run it) or `--workers` is not 1 (supervise
    the workers); None: neither, the CLI runs the one gateway. Returns the exit code."""
    try:
        slot = take_worker_slot()
        if slot is None and count == 1:
            return None
        check_workers(config, count)
    except StartupError as exc:
        return _fail(str(exc), exc.exit_code)
    config = shared_log_file(config, options.state_dir)
    if slot is not None:
        return run_worker(config, options, slot)
    # The parent's lines (listening, a worker started again or lost) go to the gateway's
    # log file as well, as one gateway's do (`logging.file`; `openclaw logs` reads it).
    install_log_ring(
        file=Path(config.logging.file).expanduser() if config.logging.file else None,
        max_file_bytes=config.logging.maxFileBytes,
        level=config.logging.level,
    )
    return run_workers(config, options, count, log_args=log_args)


def shared_log_file(config: Config, state_dir: Path) -> Config:
    """`logging.file`, or `<state-dir>/logs/gateway.log` when the config names none: the
    parent and every worker append their lines to one file, so `logs.tail` (`openclaw
    logs`) on any worker shows the whole gateway's (each one's ring would hold its own)."""
    if config.logging.file:
        return config
    shared = msgspec.structs.replace(config.logging, file=str(state_dir / WORKERS_LOG_FILE))
    return msgspec.structs.replace(config, logging=shared)


def _fail(message: str, code: int) -> int:
    print(f"clawlane: {message}", file=sys.stderr)
    return code


class GatewayOptionsLike(ListenOptions, Protocol):
    """The `GatewayOptions` fields this module reads (`_gateway` imports this module)."""

    @property
    def state_dir(self) -> Path: ...
    @property
    def config_path(self) -> Path | None: ...
    @property
    def token(self) -> str | None: ...


# --- the parent ------------------------------------------------------------------------------


@attrs.frozen
class WorkerPlan:
    """How the parent starts worker i: `argv`, and `env` plus the worker's own entries."""

    count: int
    argv: tuple[str, ...]
    env: Mapping[str, str]
    listening: str
    """The line logged once all the workers listen."""

    def env_for(self, index: int, ready_fd: int) -> dict[str, str]:
        return {**self.env, WORKER_ENV: f"{index}:{ready_fd}"}


def run_workers(
    config: Config, options: GatewayOptionsLike, count: int, *, log_args: tuple[str, str]
) -> int:
    """The parent: the state dir's lock, the auth, the port, then `count` workers until
    SIGINT/SIGTERM. Returns the exit code (each failure is one line on stderr)."""
    from ._gateway import auth_settings

    port = options.port if options.port is not None else config.gateway.port
    try:
        with state_dir_lock(options.state_dir):
            auth = auth_settings(
                config,
                token_override=options.token,
                host=options.host,
                state_dir=options.state_dir,
            )
            reserved = reuse_port_sockets(options.host, port, listen=False)
            try:
                _log_token(auth.token_file, created=auth.created)
                plan = _plan(options, count, reserved[0].getsockname(), auth.mode, log_args)
                failure = trio.run(supervise, plan)
            finally:
                for sock in reserved:
                    sock.close()
    except GatewayLockError as exc:
        return _fail(str(exc), EXIT_CONFIG)
    except Exception as exc:
        failure = describe_failure(exc, host=options.host, port=port)
    if failure is not None:
        return _fail(str(failure), failure.exit_code)
    return 0


def _log_token(token_file: Path | None, *, created: bool) -> None:
    if token_file is not None:
        what = "created a gateway token in" if created else "gateway token in"
        log.info("%s %s (clients on this machine read it from there)", what, token_file.resolve())


def _plan(
    options: GatewayOptionsLike,
    count: int,
    address: tuple[str, int],
    auth_mode: str,
    log_args: tuple[str, str],
) -> WorkerPlan:
    """The workers' command line: this CLI with the parent's settings and the bound port."""
    host, port = address[0], address[1]
    argv = [sys.executable, "-c", _CHILD_MAIN, "gateway", "--host", options.host]
    argv += ["--port", str(port), "--state-dir", str(options.state_dir)]
    argv += ["--log-level", log_args[0], "--log-format", log_args[1]]
    if options.config_path is not None:
        argv += ["--config", str(options.config_path)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
    env.pop(WORKER_TOKEN_ENV, None)
    if options.token:
        env[WORKER_TOKEN_ENV] = options.token
    listening = (
        f"clawlane gateway listening on ws://{host}:{port} (auth: {auth_mode}, state dir: "
        f"{options.state_dir}, workers: {count})"
    )
    return WorkerPlan(count=count, argv=tuple(argv), env=env, listening=listening)


async def supervise(plan: WorkerPlan) -> StartupError | None:
    """Start the workers, log the listening line once they all listen, and keep them
    running until SIGINT/SIGTERM (forwarded to them) or a failure; returns the failure.
    Returns once every worker has exited."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as outer:
            workers = _Workers(plan, outer)
            outer.start_soon(workers.forward_signals, signals)
            async with trio.open_nursery() as nursery:
                for index in range(plan.count):
                    nursery.start_soon(workers.keep, index)
                await workers.settled.wait()
                if not workers.stopping:
                    log.info("%s", plan.listening)
            outer.cancel_scope.cancel()
    log.info("clawlane gateway stopped")
    return workers.failure


@attrs.define(eq=False)
class _Workers:
    """The parent's view of its workers: their processes, the node ids they reported,
    whether it is stopping, why it failed, when it last restarted one."""

    plan: WorkerPlan
    nursery: trio.Nursery
    """Where the stop timer runs."""
    processes: dict[int, trio.Process] = attrs.field(factory=dict)
    node_ids: dict[int, str] = attrs.field(factory=dict)
    settled: trio.Event = attrs.field(factory=trio.Event)
    """Set when all workers listen, or when stopping began (whichever comes first)."""
    stopping: bool = False
    signum: int = signal.SIGTERM
    failure: StartupError | None = None
    restarts: list[float] = attrs.field(factory=list)

    async def keep(self, index: int) -> None:
        """Worker `index`: start it, wait for it, start it again while allowed. Returns
        when it has exited and is not to be restarted."""
        while True:
            started = await self._spawn(index)
            if started is None:
                return
            proc, ready_fd = started
            await self._settle(index, proc, await _read_answer(ready_fd))
            code = await proc.wait()
            if self.stopping or not self._may_restart(index, code):
                return
            log.warning("worker %d exited (code %d); starting it again", index, code)

    async def _spawn(self, index: int) -> tuple[trio.Process, int] | None:
        read_fd, write_fd = os.pipe()
        try:
            proc = await trio.lowlevel.open_process(
                list(self.plan.argv),
                stdin=subprocess.PIPE,  # closed when the parent dies: the worker stops
                pass_fds=(write_fd,),
                env=self.plan.env_for(index, write_fd),
                process_group=0,  # ^C in a terminal reaches the parent, which forwards it
            )
        except OSError as exc:
            os.close(read_fd)
            self.fail(f"cannot start worker {index}: {exc.strerror or exc}", EXIT_ENVIRONMENT)
            return None
        finally:
            os.close(write_fd)
        self.processes[index] = proc
        if self.stopping:
            proc.send_signal(self.signum)
        return proc, read_fd

    async def _settle(self, index: int, proc: trio.Process, answer: str | None) -> None:
        """Act on worker `index`'s start line (None: it said nothing in time). A failed
        first start fails the gateway; a failed restart is logged (`keep` counts it)."""
        if answer is not None and answer.startswith("ready "):
            self.node_ids[index] = node_id = answer.removeprefix("ready ")
            log.info("worker %d listening (node %s, pid %d)", index, node_id, proc.pid)
            if len(self.node_ids) == self.plan.count:
                self.settled.set()
            return
        if self.stopping:
            return  # it was told to stop while it started
        if answer is None:
            proc.kill()
        message, code = _start_failure(index, answer, await proc.wait())
        if self.settled.is_set():
            log.warning("%s", message)
        else:
            self.fail(message, code)

    def _may_restart(self, index: int, code: int) -> bool:
        now = trio.current_time()
        self.restarts = [t for t in self.restarts if now - t < RESTART_WINDOW_S]
        if len(self.restarts) < MAX_RESTARTS:
            self.restarts.append(now)
            return True
        self.fail(
            f"worker {index} exited (code {code}) after {MAX_RESTARTS} restarts within "
            f"{RESTART_WINDOW_S:.0f} s; giving up (stopped the others)",
            EXIT_FAILED,
        )
        return False

    def fail(self, message: str, exit_code: int) -> None:
        """The first failure is the one reported; all the workers are told to stop."""
        if self.failure is None:
            self.failure = StartupError(message, exit_code)
        self.stop(signal.SIGTERM)

    def stop(self, signum: int) -> None:
        """Send `signum` to every running worker; the first time, start the stop timer."""
        first = not self.stopping
        self.stopping, self.signum = True, signum
        self.settled.set()
        for proc in self.processes.values():
            if proc.returncode is None:
                proc.send_signal(signum)
        if first:
            self.nursery.start_soon(self._kill_late)

    async def forward_signals(self, signals: AsyncIterator[int]) -> None:
        async for signum in signals:
            log.info("received %s, stopping the workers", signal.Signals(signum).name)
            self.stop(signum)

    async def _kill_late(self) -> None:
        await trio.sleep(STOP_GRACE_S)
        for index, proc in self.processes.items():
            if proc.returncode is None:
                log.warning("worker %d did not stop in %.0f s: killing it", index, STOP_GRACE_S)
                proc.kill()


def _start_failure(index: int, answer: str | None, exit_code: int) -> tuple[str, int]:
    """Why worker `index` did not start, and the gateway's exit code for it."""
    if answer is None:
        return f"worker {index} did not start in {STARTUP_TIMEOUT_S:.0f} s", EXIT_FAILED
    if answer.startswith("error "):
        told, _, reason = answer.removeprefix("error ").partition(" ")
        return f"worker {index}: {reason}", int(told) if told.isdigit() else EXIT_FAILED
    return f"worker {index} exited (code {exit_code}) before it listened", EXIT_FAILED


async def _read_answer(fd: int) -> str | None:
    """The worker's one start line; "" when it exited without one, None when it said
    nothing within `STARTUP_TIMEOUT_S`. Closes `fd`."""
    data = b""
    async with trio.lowlevel.FdStream(fd) as stream:
        with trio.move_on_after(STARTUP_TIMEOUT_S):
            while not data.endswith(b"\n"):
                chunk = await stream.receive_some(4096)
                if not chunk:
                    break
                data += chunk
            return data.decode(errors="replace").strip()
    return None


# --- a worker ----------------------------------------------------------------------------


@attrs.define(eq=False)
class WorkerSlot:
    """What a worker got from its parent: its index, the pipe to say it listens (or why it
    cannot), the parent's stdin pipe (closed when the parent dies), the parent's `--token`."""

    index: int
    ready_fd: int | None
    parent_fd: int | None
    token: str | None = None

    def report(self, line: str) -> bool:
        """Send the start line (once); False when it was sent already or cannot be."""
        fd, self.ready_fd = self.ready_fd, None
        if fd is None:
            return False
        try:
            os.write(fd, f"{line}\n".encode())
            return True
        except OSError:
            return False
        finally:
            os.close(fd)


def take_worker_slot() -> WorkerSlot | None:
    """This process's slot when the parent of `--workers` started it, else None. Removes
    the internal variables from the environment, keeps the ready pipe out of whatever the
    worker spawns, and moves stdin (the parent's pipe) aside for `_until_orphaned`.
    Raises `StartupError` when `CLAWLANE_WORKER` is malformed."""
    value = os.environ.pop(WORKER_ENV, None)
    token = os.environ.pop(WORKER_TOKEN_ENV, None)
    if value is None:
        return None
    index_text, _, fd_text = value.partition(":")
    if not (index_text.isdigit() and fd_text.isdigit()):
        raise StartupError(f"{WORKER_ENV}={value} is internal to `gateway --workers`", 2)
    ready_fd = int(fd_text)
    os.set_inheritable(ready_fd, False)
    return WorkerSlot(int(index_text), ready_fd, _take_stdin_pipe(), token)


def _take_stdin_pipe() -> int | None:
    """A private copy of stdin when it is a pipe (stdin becomes /dev/null), else None."""
    try:
        if not stat.S_ISFIFO(os.fstat(0).st_mode):
            return None
    except OSError:
        return None
    private = os.dup(0)  # not inheritable
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return private


def worker_config(config: Config, index: int) -> Config:
    """`cluster.nodeId` + `-w<index>` when the config names the node; else unchanged."""
    node_id = config.cluster.nodeId
    if not node_id:
        return config
    cluster = msgspec.structs.replace(config.cluster, nodeId=f"{node_id}-w{index}")
    return msgspec.structs.replace(config, cluster=cluster)


def run_worker(config: Config, options: GatewayOptionsLike, slot: WorkerSlot) -> int:
    """Worker `slot.index`: serve until SIGINT/SIGTERM or the parent's end. A failure to
    start goes to the parent (it prints it); a later one is one line on stderr."""
    from ._gateway import GatewayOptions

    assert isinstance(options, GatewayOptions)
    config = worker_config(config, slot.index)
    options = attrs.evolve(options, worker_index=slot.index, token=slot.token or options.token)
    port = options.port if options.port is not None else config.gateway.port
    try:
        trio.run(serve_worker, config, options, slot)
    except Exception as exc:
        failure = describe_failure(exc, host=options.host, port=port)
        if not slot.report(f"error {failure.exit_code} {failure}"):
            print(f"clawlane: worker {slot.index}: {failure}", file=sys.stderr)
        return failure.exit_code
    return 0


async def serve_worker(config: Config, options: GatewayOptionsLike, slot: WorkerSlot) -> None:
    """`serve_gateway` for a worker: the gateway on the shared port, its start line to the
    parent, then until SIGINT/SIGTERM or the parent's end."""
    from ._gateway import GatewayOptions, open_gateway
    from ._startup import tune_gc

    assert isinstance(options, GatewayOptions)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_gateway(config, options) as gateway:
            tune_gc()
            node_id = gateway.node.node_id if gateway.node is not None else "-"
            slot.report(f"ready {node_id}")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_until_signal, slot.index, signals, nursery.cancel_scope)
                if slot.parent_fd is not None:
                    nursery.start_soon(_until_orphaned, slot, nursery.cancel_scope)
    log.info("worker %d stopped", slot.index)


async def _until_signal(index: int, signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for signum in signals:
        log.info("worker %d: received %s, shutting down", index, signal.Signals(signum).name)
        break
    scope.cancel()


async def _until_orphaned(slot: WorkerSlot, scope: trio.CancelScope) -> None:
    """Return when the parent's pipe closes (the parent ended), cancelling `scope`."""
    assert slot.parent_fd is not None
    async with trio.lowlevel.FdStream(slot.parent_fd) as stream:
        while await stream.receive_some(4096):
            pass
    log.warning("worker %d: the parent process is gone, shutting down", slot.index)
    scope.cancel()
