"""What a command loads: each `clawlane` process imports what it uses, not every library the
project depends on. Each check runs in a fresh interpreter (this one has imported everything
by now) and reads its `sys.modules`; nothing here is timed (`scripts/bench_startup` measures).

- `clawlane --version` and the client commands (`agent`, `status`, ...) load the client and
  what they print with: not the gateway, the actors, the config's modules, the load tool,
  nor coredis, psycopg, prometheus-client, PyYAML, cryptography or httpx. The server's face
  is loaded for the gateway command's flags (`_logging`) and `VERSION` (`_version`), nothing
  else of it.
- The gateway with the embedded default config (no config file: SQLite, no cluster) loads
  neither coredis nor psycopg, nor OpenTelemetry (`diagnostics.otel` is off), nor
  prometheus-client until `/metrics` is scraped, nor PyYAML
  (no skill file), nor cryptography (no device has connected).
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Final

import trio

CLIENT_UNUSED: Final = (
    "coredis",
    "psycopg",
    "prometheus_client",
    "yaml",
    "cryptography",
    "httpx",
    "actors",
    "runtime.model",
    "runtime.agent",
    "runtime.llm",
    "transports.methods",
    "transports.http",
    "transports.cluster",
    "transports.loadtest._run",
)
"""Packages (with everything under them) that no client command loads."""
SERVER_FOR_FLAGS: Final = {
    "transports.server",
    "transports.server._logging",
    "transports.server._version",
}
"""All of `transports.server` a client command loads: the face, the gateway's log flags and
the version."""
GATEWAY_UNUSED: Final = (
    "coredis",
    "psycopg",
    "prometheus_client",
    "yaml",
    "cryptography",
    "opentelemetry",
    "google.protobuf",
    "requests",
)
"""What the embedded default gateway does not load."""

_REPORT: Final = "import json, sys; print(json.dumps(sorted(sys.modules)))"


async def loaded_after(code: str, *args: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `code` (with `args` as its
    argv), then printing `sys.modules` as the last line of its output."""
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, "-c", f"{code}\n{_REPORT}", *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    last = result.stdout.decode().splitlines()[-1]
    return set(json.loads(last))


def under(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def closed_port() -> int:
    """A loopback port nothing listens on (bound and closed again: refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_version_loads_neither_the_gateway_nor_the_client() -> None:
    code = "from transports.cli._main import main\ntry:\n    main()\nexcept SystemExit:\n    pass"
    loaded = await loaded_after(code, "--version")
    assert "transports.cli._main" in loaded
    assert under(loaded, CLIENT_UNUSED) == []
    assert {m for m in loaded if m.startswith("transports.server")} <= SERVER_FOR_FLAGS
    assert "transports.client._client" not in loaded
    assert "trio_websocket" not in loaded


async def test_the_client_commands_load_the_client_and_no_more(tmp_path: Path) -> None:
    """Each command runs for real against a port that refuses (exit 3), so its whole path
    up to the connection is taken, the client's included."""
    url = f"ws://127.0.0.1:{closed_port()}"
    common = ["--url", url, "--token", "t", "--state-dir", str(tmp_path), "--timeout", "5"]
    for command in (
        ["agent", "-m", "hi"],
        ["status"],
        ["health", "--json"],
        ["sessions", "list"],
        ["call", "health"],
        ["config", "get"],
    ):
        code = "from transports.cli._main import main\nassert main() == 3"
        loaded = await loaded_after(code, *command, *common)
        assert "transports.client._client" in loaded, command
        assert under(loaded, CLIENT_UNUSED) == [], command
        assert {m for m in loaded if m.startswith("transports.server")} <= SERVER_FOR_FLAGS


GATEWAY: Final = """
import os, signal, socket, sys, threading, time
from transports.cli._main import main

port = int(sys.argv[1])


def stop_once_listening() -> None:
    deadline = time.monotonic() + 50
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)


threading.Thread(target=stop_once_listening, daemon=True).start()
assert main(["gateway", "--port", sys.argv[1], "--state-dir", sys.argv[2]]) == 0
"""


async def test_the_embedded_default_gateway_loads_no_cluster_or_postgres_library(
    tmp_path: Path,
) -> None:
    """The real `clawlane gateway` with no config file, stopped (SIGTERM) once it accepts
    connections: what it loaded to start and serve is what it holds."""
    loaded = await loaded_after(GATEWAY, str(closed_port()), str(tmp_path / "state"))
    assert "transports.server._gateway" in loaded and "actors.store._sqlite" in loaded
    assert under(loaded, GATEWAY_UNUSED) == []
    assert "actors.cluster._redis" not in loaded
    assert not {"actors.store._pg", "actors.store._documents"} & loaded
