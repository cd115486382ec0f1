"""The gateway a load test drives, when it is not one already running: in this process
(`--spawn`) or a `clawlane gateway` child process on a free port (`--spawn-process`,
`spawn_gateway_process`), and the sampler of the gateway process's RSS and CPU
(`_Sampler`, psutil).

Errors: `LoadtestError` (the gateway did not start).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import psutil
import trio

from runtime.model import parse_config

from ._conn import LoadtestError, LoadtestOptions


class _Sampler:
    """Peak RSS and CPU of the gateway process, sampled in the background."""

    def __init__(self, pid: int | None) -> None:
        self.proc: psutil.Process | None = None
        self.pid: int | None = None
        self.start_rss: int | None = None
        self.peak_rss: int | None = None
        self.rss: int | None = None
        self._cpu0 = 0.0
        self._t0 = 0.0
        self.cpu_percent: float | None = None
        if pid is not None:
            self.attach(pid)

    def attach(self, pid: int) -> None:
        """Watch `pid` from now on (RSS at start, CPU from now)."""
        try:
            proc = psutil.Process(pid)
            self.start_rss = self.peak_rss = self.rss = proc.memory_info().rss
            times = proc.cpu_times()
        except psutil.Error:
            return
        self.proc, self.pid = proc, pid
        self._cpu0 = times.user + times.system
        self._t0 = time.monotonic()

    def sample(self) -> None:
        if self.proc is None:
            return
        try:
            rss = self.proc.memory_info().rss
        except psutil.Error:
            self.proc = None
            return
        self.rss = rss
        if self.peak_rss is None or rss > self.peak_rss:
            self.peak_rss = rss

    def finish(self) -> None:
        if self.proc is None:
            return
        self.sample()
        try:
            times = self.proc.cpu_times()
        except psutil.Error:
            return
        wall = time.monotonic() - self._t0
        if wall > 0:
            self.cpu_percent = round(100.0 * (times.user + times.system - self._cpu0) / wall, 1)

    async def run(self, interval: float = 0.1) -> None:
        while True:
            self.sample()
            await trio.sleep(interval)


@contextlib.asynccontextmanager
async def _spawned_in_process(
    options: LoadtestOptions,
) -> AsyncIterator[tuple[str, int, str | None]]:
    from ..server import GatewayOptions, open_gateway

    config = parse_config(
        {
            "agents": {
                "defaults": {"maxConcurrent": options.max_concurrent or max(8, options.sessions)}
            }
        }
    )
    with tempfile.TemporaryDirectory(prefix="clawlane-loadtest-") as tmp:
        gw_options = GatewayOptions(
            host="127.0.0.1", port=0, state_dir=Path(tmp) / "state", token=options.token
        )
        async with open_gateway(config, gw_options) as gateway:
            port = gateway.listeners[0].socket.getsockname()[1]
            yield f"ws://127.0.0.1:{port}", os.getpid(), gateway.auth.token


@contextlib.asynccontextmanager
async def spawn_gateway_process(
    *,
    max_concurrent: int,
    token: str | None = None,
    spawned_log: Path | None = None,
    config_extra: Mapping[str, Any] | None = None,
    workers: int = 1,
) -> AsyncIterator[tuple[str, int, str | None]]:
    """Run `clawlane gateway` in a child process on a free loopback port: (url, pid, the
    token to connect with: `token`, else the one the child created in its state dir).
    `config_extra`: more top-level config keys (a cluster's `storage`, `cluster`);
    `workers` > 1: `--workers N` (the pid is the parent's, the workers its children).

    On exit the child gets SIGINT (a clean shutdown), then SIGKILL if it lingers; its log
    (stdout and stderr) is copied to `spawned_log` when given.
    """
    with tempfile.TemporaryDirectory(prefix="clawlane-loadtest-") as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        config = state / "clawlane.json"
        agents = {"defaults": {"maxConcurrent": max_concurrent}}
        config.write_text(json.dumps({**(config_extra or {}), "agents": agents}))
        argv = [
            sys.executable,
            "-c",
            "import sys; from transports.cli._main import main; sys.exit(main())",
            "gateway",
            "--port",
            "0",
            "--state-dir",
            str(state),
            "--config",
            str(config),
        ]
        if token:
            argv += ["--token", token]
        if workers > 1:
            argv += ["--workers", str(workers)]
        if os.environ.get("CLAWLANE_LOG_LEVEL", "").lower() != "debug":
            argv += ["--log-level", "info"]  # its startup line says where it listens
        log_path = Path(tmp) / "gateway.log"
        with log_path.open("wb") as log:
            proc = await trio.lowlevel.open_process(
                argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
            try:
                url = await _read_listening_url(proc, log_path, offset=0, all_workers=workers > 1)
                from ..access import read_token_file, token_path

                yield url, proc.pid, token or read_token_file(token_path(state))
            finally:
                with trio.CancelScope(shield=True):
                    if proc.returncode is None:
                        proc.send_signal(signal.SIGINT)
                        with trio.move_on_after(40):
                            await proc.wait()
                    if proc.returncode is None:
                        proc.kill()
                        await proc.wait()
                    if spawned_log is not None:
                        await trio.to_thread.run_sync(_copy_log, log_path, spawned_log)


def _copy_log(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())


def _read_from(path: Path, offset: int) -> str:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


async def _read_listening_url(
    proc: trio.Process, log_path: Path, *, offset: int | None = None, all_workers: bool = False
) -> str:
    """Wait (30 s at most, 60 s for workers) for the gateway's startup log line in `log_path` and return its
    URL. Only what the file gains from `offset` on counts (default: its size now, for a
    log file another gateway wrote to before). `all_workers`: the line `--workers N` logs
    once every worker listens."""
    wanted = "clawlane gateway listening on ws://" if all_workers else "listening on ws://"
    start = offset if offset is not None else (await trio.Path(log_path).stat()).st_size
    text = ""
    with trio.move_on_after(60 if all_workers else 30):
        while True:
            text = await trio.to_thread.run_sync(_read_from, log_path, start)
            for line in text.splitlines():
                if wanted in line:
                    return line.split("listening on ", 1)[1].split()[0]
            if proc.poll() is not None:
                break
            await trio.sleep(0.05)
    raise LoadtestError(f"the spawned gateway did not start:\n{text[-2000:]}")
