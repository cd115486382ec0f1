"""Opt-in check (not in the suite): OpenClaw's own CLI and terminal UI against clawlane.

Starts `clawlane gateway` on a free loopback port (token auth, the `local` model with slow
deltas, `logging.file` set, a fresh state dir), then runs the `openclaw@2026.9.6` CLI with a
clean home of its own (`OPENCLAW_GATEWAY_URL` / `OPENCLAW_GATEWAY_TOKEN`) and its terminal UI
in tmux, and checks what a user sees:

CLI: `openclaw agent --message M` (no --agent / --session-key), `gateway call sessions.list`,
`models list`, `status --json`, `health`, `logs`.
TUI: connect, a streamed reply, the footer's model and tokens, a follow-up while the reply
streams (each user line once), `/status`, `/new`, and the history after a gateway restart.

    .venv/bin/python scripts/openclaw_clients.py [--openclaw-dir DIR] [--node PATH]
        [--workers N]

`--workers N` (N > 1) runs the gateway as a cluster of N processes on the one port
(`clawlane gateway --workers N`, on PostgreSQL at `$CLAWLANE_PG_URL`, default the local
`test` database, in a schema of its own, and Redis at `$CLAWLANE_REDIS_URL` under a key
prefix of its own): the clients' connections land on either worker and their sessions are
served across them.

Needs Node 24 (`--node`, default `~/.cache/node24/bin/node`), the package (`--openclaw-dir`,
default `~/.cache/openclaw-peer/node_modules/openclaw`) and tmux. Exit status 0 when every
check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HOME_CACHE = Path.home() / ".cache"
TOKEN = "openclaw-clients-check"
FAILED: list[str] = []


def check(ok: bool, what: str, detail: str = "") -> None:
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILED.append(what)
        if detail:
            print("     " + detail.strip().replace("\n", "\n     ")[:2000], flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


PG_URL = os.environ.get("CLAWLANE_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("CLAWLANE_REDIS_URL", "redis://127.0.0.1:6379/0")


@contextlib.contextmanager
def cluster_config(workers: int) -> Iterator[dict[str, object]]:
    """The config keys of a cluster of `workers` (none for one process): a PostgreSQL
    schema and a Redis key prefix of this run's own, removed afterwards."""
    if workers <= 1:
        yield {}
        return
    import psycopg

    name = f"openclaw_check_{os.getpid()}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    sep = "&" if "?" in PG_URL else "?"
    try:
        yield {
            "storage": {
                "backend": "postgres",
                "postgres": {"url": f"{PG_URL}{sep}options=-csearch_path%3D{name}"},
            },
            "cluster": {"redis": {"url": REDIS_URL, "keyPrefix": f"{name}:"}, "nodeId": name},
        }
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{name}" CASCADE')
        if shutil.which("redis-cli"):
            keys = subprocess.run(
                ["redis-cli", "-u", REDIS_URL, "--scan", "--pattern", f"{name}:*"],
                capture_output=True,
                text=True,
            ).stdout.split()
            for chunk in range(0, len(keys), 500):
                command = ["redis-cli", "-u", REDIS_URL, "del", *keys[chunk : chunk + 500]]
                subprocess.run(command, stdout=subprocess.DEVNULL)


@contextlib.contextmanager
def gateway(work: Path, port: int, extra: dict[str, object], workers: int) -> Iterator[None]:
    config = work / "clawlane.json"
    skill = work / "workspace" / "skills" / "weather" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text("---\nname: weather\ndescription: Look up the weather.\n---\nUse wttr.in.\n")
    config.write_text(
        json.dumps(
            {
                **extra,
                "agents": {"defaults": {"workspace": str(work / "workspace")}},
                "gateway": {"auth": {"mode": "token", "token": TOKEN}},
                # one process: a log file named in the config; workers: the default one
                # they share in the state dir (`openclaw logs` must see every worker's lines)
                **(
                    {"logging": {"file": str(work / "logs" / "clawlane.log")}}
                    if workers == 1
                    else {}
                ),
                "models": {
                    "providers": {
                        "local": {
                            "api": "local",
                            "models": [{"id": "echo"}, {"id": "echo-2"}],
                            "options": {"deltaDelayMs": 120},
                        }
                    }
                },
            }
        )
    )
    log = (work / "gateway.log").open("a")
    proc = subprocess.Popen(
        [
            str(REPO / ".venv" / "bin" / "clawlane"),
            "gateway",
            "--port",
            str(port),
            "--config",
            str(config),
            "--state-dir",
            str(work / "state"),
            "--workers",
            str(workers),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            if proc.poll() is not None:
                raise SystemExit(f"clawlane gateway exited: see {work / 'gateway.log'}")
            time.sleep(0.2)
        yield
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()


class OpenClaw:
    def __init__(self, node: Path, package: Path, work: Path, port: int) -> None:
        home = work / "openclaw-home"
        (home / "state").mkdir(parents=True, exist_ok=True)
        self.argv = [str(node), str(package / "openclaw.mjs")]
        self.env = {
            "PATH": f"{node.parent}:/usr/bin:/bin",
            "HOME": str(home),
            "OPENCLAW_HOME": str(home),
            "OPENCLAW_STATE_DIR": str(home / "state"),
            "OPENCLAW_CONFIG_PATH": str(home / "state" / "openclaw.json"),
            "OPENCLAW_SKIP_CHANNELS": "1",
            "OPENCLAW_NO_AUTO_UPDATE": "1",
            "OPENCLAW_OFFLINE": "1",
            "DO_NOT_TRACK": "1",
            "OPENCLAW_GATEWAY_URL": f"ws://127.0.0.1:{port}",
            "OPENCLAW_GATEWAY_TOKEN": TOKEN,
        }
        self.port = port
        self.work = work
        # The CLI probes only a gateway its own config names (`status` skips it otherwise).
        (home / "state" / "openclaw.json").write_text(
            json.dumps(
                {
                    "gateway": {
                        "mode": "local",
                        "port": port,
                        "bind": "loopback",
                        "auth": {"mode": "token", "token": TOKEN},
                    }
                }
            )
        )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.argv, *args], env=self.env, capture_output=True, text=True, timeout=120
        )


class Tmux:
    def __init__(self, name: str, command: list[str], env: dict[str, str]) -> None:
        self.name = name
        envs = [f"{k}={v}" for k, v in env.items()]
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                "160",
                "-y",
                "50",
                "env",
                *envs,
                *command,
            ],
            check=True,
        )

    def screen(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-t", self.name, "-p"], capture_output=True, text=True
        )
        return out.stdout

    def send(self, text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", text], check=True)
        subprocess.run(["tmux", "send-keys", "-t", self.name, "Enter"], check=True)

    def wait_for(self, predicate: object, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if callable(predicate) and predicate(screen):
                return screen
            time.sleep(0.3)
        return screen

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def shows(oc: OpenClaw, args: list[str], what: str, *needles: str) -> None:
    """`openclaw ARGS` exits 0 and prints every one of `needles`."""
    r = oc.run(*args)
    ok = r.returncode == 0 and all(n in r.stdout for n in needles)
    check(ok, what, r.stdout + r.stderr)


def cli_checks(oc: OpenClaw) -> None:
    shows(
        oc,
        ["agent", "--message", "hello from the cli"],
        "openclaw agent --message M (no --agent/--session-key)",
        "You said: hello from the cli",
    )
    r = oc.run("gateway", "call", "sessions.list", "--json")
    ok = r.returncode == 0 and json.loads(r.stdout or "{}").get("count") == 1
    check(ok, "openclaw gateway call sessions.list", r.stdout + r.stderr)
    shows(oc, ["models", "list"], "openclaw models list", "local/echo", "local/echo-2")
    r = oc.run("status", "--json")
    try:
        status = json.loads(r.stdout[r.stdout.index("{") :])
        by_agent = status["sessions"]["byAgent"]
        ok = r.returncode == 0 and by_agent[0]["agentId"] == "main" and by_agent[0]["count"] == 1
    except (ValueError, KeyError, IndexError):
        ok = False
    check(ok, "openclaw status --json shows the gateway's agents and sessions", r.stdout + r.stderr)
    shows(
        oc,
        ["health"],
        "openclaw health shows the gateway's agents and sessions",
        "Agents: main (default)",
        "(1 entries)",
    )
    shows(oc, ["logs", "--limit", "20"], "openclaw logs", "clawlane gateway listening")
    shows(
        oc,
        ["skills", "list"],
        "openclaw skills list shows the workspace's skill",
        "weather",
        "ready",
    )
    shows(oc, ["channels", "status"], "openclaw channels status (none here)", "Gateway reachable")
    cron_checks(oc)
    approvals_checks(oc)
    follow_checks(oc)
    audit_checks(oc)


def audit_checks(oc: OpenClaw) -> None:
    """`openclaw audit`: the CLI's run above, started and finished, in the audit log (as a
    table and as JSON: `audit.list`, `audit.activity.list`), and a message filter on runs
    refused (by the CLI itself; the gateway refuses it too, tests/e2e/test_audit.py)."""
    shows(
        oc,
        ["audit", "--kind", "agent_run", "--limit", "20"],
        "openclaw audit lists the runs",
        "agent.run.started",
        "agent.run.finished",
        "succeeded",
    )
    r = oc.run("audit", "--json", "--limit", "20")
    try:
        events = json.loads(r.stdout[r.stdout.index("{") :])["events"]
        ok = r.returncode == 0 and all(e["redaction"] == "metadata_only" for e in events)
        ok = ok and {e["action"] for e in events} >= {"agent.run.started", "agent.run.finished"}
    except (ValueError, KeyError):
        ok = False
    check(ok, "openclaw audit --json (audit.activity.list)", r.stdout + r.stderr)
    r = oc.run("audit", "--kind", "agent_run", "--channel", "slack")
    ok = r.returncode != 0 and "only applies to" in r.stdout + r.stderr
    check(ok, "openclaw audit refuses a message filter on runs", r.stdout + r.stderr)


def approvals_checks(oc: OpenClaw) -> None:
    """`openclaw approvals get|allowlist add|set --gateway`: the host approvals document (with
    `--workers N` each command may land on another worker: one document in PostgreSQL)."""

    def snapshot() -> dict[str, Any]:
        r = oc.run("approvals", "get", "--gateway", "--json")
        try:
            found: dict[str, Any] = json.loads(r.stdout[r.stdout.index("{") :])
        except ValueError:
            return {"stdout": r.stdout + r.stderr}
        return found

    first = snapshot()
    ok = first.get("exists") is False and bool(first.get("effectivePolicy", {}).get("scopes"))
    check(ok, "openclaw approvals get --gateway --json (with effectivePolicy)", json.dumps(first))
    r = oc.run("approvals", "allowlist", "add", "--gateway", "--agent", "main", "/usr/bin/true")
    check(r.returncode == 0, "openclaw approvals allowlist add --gateway", r.stdout + r.stderr)
    after = snapshot()
    agents = after.get("file", {}).get("agents", {})
    listed = [e.get("pattern") for e in agents.get("main", {}).get("allowlist", [])]
    check(listed == ["/usr/bin/true"], "the allowlist entry is in the document", json.dumps(after))
    bad = oc.work / "bad-approvals.json"
    bad.write_text(json.dumps({"version": 1, "defaults": {"security": "open"}}))
    r = oc.run("approvals", "set", "--gateway", "--file", str(bad))
    ok = r.returncode != 0 and "file.defaults.security" in r.stdout + r.stderr
    check(ok, "openclaw approvals set refuses a bad value naming it", r.stdout + r.stderr)


def cron_checks(oc: OpenClaw) -> None:
    """`openclaw cron create` then `cron list` four times: with `--workers N` each command
    is a new connection, landing on any worker (cron runs on one of them)."""
    r = oc.run("cron", "create", "0 7 * * *", "Summarize the day.", "--name", "Morning brief")
    check(r.returncode == 0, "openclaw cron create", r.stdout + r.stderr)
    outs = [oc.run("cron", "list") for _ in range(4)]
    check(
        all(o.returncode == 0 and "Morning brief" in o.stdout for o in outs),
        "openclaw cron list (x4) shows the job",
        "\n".join(o.stdout + o.stderr for o in outs),
    )


def follow_checks(oc: OpenClaw) -> None:
    """`openclaw logs --follow` shows a record logged after it started: a config edit that
    does not build (the gateway logs the failed build and keeps serving)."""
    out_path = oc.work / "follow.out"
    with out_path.open("w") as out:
        follow = subprocess.Popen(
            [*oc.argv, "logs", "--follow", "--limit", "5"], env=oc.env, stdout=out, stderr=out
        )
    try:
        time.sleep(4)
        config = oc.work / "clawlane.json"
        good = config.read_text()
        broken = json.loads(good)
        broken["agents"] = {"defaults": {"model": {"primary": "nope/none"}}}
        config.write_text(json.dumps(broken))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "generation build failed" not in out_path.read_text():
            time.sleep(0.5)
        config.write_text(good)
        shown = out_path.read_text()
        check("generation build failed" in shown, "openclaw logs --follow", shown)
    finally:
        follow.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            follow.wait(10)


def tui_checks(oc: OpenClaw, restart: object) -> None:
    command = [*oc.argv, "tui", "--url", f"ws://127.0.0.1:{oc.port}", "--token", TOKEN]
    tui = Tmux("clawlane-tui-check", command, oc.env)
    try:
        # A cold start of the package (its plugins, a first device key) can take most of a
        # minute on a loaded machine; the 30 s once used failed there while the rest passed.
        screen = tui.wait_for(lambda s: "connected" in s, 90)
        check("connected" in screen, "the TUI connects", screen)
        tui.send("[[delay:250]] one two three four five six seven eight nine ten")
        screen = tui.wait_for(lambda s: "You said: one two" in s, 20)
        tui.send("and a follow-up while it streams")
        screen = tui.wait_for(
            lambda s: "idle" in s.split("\n")[-8:][0] or s.count("You said:") >= 3, 30
        )
        time.sleep(3)
        screen = tui.screen()
        check(
            screen.count("and a follow-up while it streams") >= 1
            and screen.count("\nand a follow-up while it streams") == 1,
            "a follow-up while streaming shows the user's line once",
            screen,
        )
        check(
            "[[delay:250]] one two" in screen and screen.count("[[delay:250]] one two") == 1,
            "the first line is shown once",
            screen,
        )
        check(
            "echo | " in screen and "tokens " in screen and "tokens ?" not in screen,
            "the footer shows the model and the tokens",
            screen,
        )
        oc.run("agent", "--session-key", "main", "--message", "a line from the cli")
        screen = tui.wait_for(lambda s: "You said: a line from the cli" in s, 20)
        check(
            "\na line from the cli" in screen and "You said: a line from the cli" in screen,
            "a line `openclaw agent` sent to the TUI's session is shown, and its reply",
            screen,
        )
        tui.send("/status")
        screen = tui.wait_for(lambda s: "Model: local/echo" in s, 20)
        check("Model: local/echo" in screen and "Queue:" in screen, "/status", screen)
        restart()  # type: ignore[operator]
        screen = tui.wait_for(lambda s: "connected" in s.split("\n")[-6:][0] if s else False, 40)
        tui.close()
        tui = Tmux("clawlane-tui-check", command, oc.env)
        screen = tui.wait_for(lambda s: "one two three" in s, 30)
        check(
            "one two three" in screen and "Model: local/echo" in screen,
            "the history is there after a gateway restart",
            screen,
        )
        tui.send("/new")
        screen = tui.wait_for(lambda s: "new session:" in s, 20)
        check("new session: agent:main:tui-" in screen, "/new", screen)
    finally:
        tui.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--openclaw-dir",
        type=Path,
        default=HOME_CACHE / "openclaw-peer" / "node_modules" / "openclaw",
    )
    parser.add_argument("--node", type=Path, default=HOME_CACHE / "node24" / "bin" / "node")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (printed)")
    parser.add_argument(
        "--workers", type=int, default=1, help="gateway processes (> 1: a cluster; see above)"
    )
    args = parser.parse_args(argv)
    if not (args.openclaw_dir / "openclaw.mjs").exists() or not args.node.exists():
        print("needs Node 24 (--node) and openclaw@2026.9.6 (--openclaw-dir)", file=sys.stderr)
        return 2
    if shutil.which("tmux") is None:
        print("needs tmux", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="clawlane-openclaw-"))
    port = free_port()
    oc = OpenClaw(args.node, args.openclaw_dir, work, port)
    outer = contextlib.ExitStack()
    extra = outer.enter_context(cluster_config(args.workers))
    stack = contextlib.ExitStack()
    stack.enter_context(gateway(work, port, extra, args.workers))

    def restart() -> None:
        stack.close()
        stack.enter_context(gateway(work, port, extra, args.workers))

    try:
        cli_checks(oc)
        tui_checks(oc, restart)
    finally:
        stack.close()
        outer.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir: {work}")
    print(f"{len(FAILED)} check(s) failed" if FAILED else "all checks passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
