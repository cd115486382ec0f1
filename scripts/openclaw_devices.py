"""Opt-in: OpenClaw's own CLI and terminal UI against a clawlane gateway (auth, devices).

    .venv/bin/python scripts/openclaw_devices.py [--node PATH] [--openclaw PATH/openclaw.mjs]

Needs Node 24 and the `openclaw` npm package (defaults: ~/.cache/node24/bin/node and
~/.cache/openclaw-peer/node_modules/openclaw/openclaw.mjs) and `tmux` for the terminal UI.
Not part of the test suite. It starts an in-process gateway (token auth, a fresh state dir;
127.0.0.2 is treated as a remote address so that a device from there waits for approval)
and checks, printing one line per step:

1. `openclaw gateway call health` (device-less CLI on loopback with the token);
2. `openclaw tui` in tmux: it signs a device, is paired silently, streams a reply;
3. `openclaw devices list --json` shows that device;
4. a device connecting from 127.0.0.2 gets PAIRING_REQUIRED; `devices list` shows the
   request; `openclaw devices approve <id>` approves it; the device connects;
5. `openclaw devices reject` a second request; `openclaw devices remove` the first device.

Exit code 0 when every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.devices import DeviceIdentity
from runtime.model import parse_config
from transports import (
    GatewayAuthError,
    GatewayOptions,
    open_gateway,
    open_gateway_client,
)

REMOTE = "127.0.0.2"
CACHE = Path.home() / ".cache"


class Step:
    def __init__(self) -> None:
        self.failed = 0

    def check(self, name: str, ok: bool, detail: Any = "") -> bool:
        print(
            f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail and not ok else "")
        )
        self.failed += 0 if ok else 1
        return ok


async def openclaw(args: argparse.Namespace, home: Path, *argv: str) -> tuple[int, str, str]:
    env = {
        "PATH": f"{Path(args.node).parent}:/usr/bin:/bin",
        "HOME": str(home),
        "OPENCLAW_HOME": str(home),
        "OPENCLAW_STATE_DIR": str(home / "state"),
        "OPENCLAW_SKIP_CHANNELS": "1",
        "OPENCLAW_DISABLE_BONJOUR": "1",
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "OPENCLAW_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
    }
    with trio.fail_after(120):
        done = await trio.run_process(
            [args.node, args.openclaw, *argv],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
            cwd=str(home),
        )
    return (
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


async def tmux(*argv: str) -> str:
    done = await trio.run_process(["tmux", *argv], capture_stdout=True, check=False)
    return done.stdout.decode(errors="replace")


async def tui(args: argparse.Namespace, home: Path, url: str, token: str, step: Step) -> None:
    if shutil.which("tmux") is None:
        step.check("tui (tmux not installed: skipped)", True)
        return
    session = f"clawlane-devices-{os.getpid()}"
    env = f"HOME={home} OPENCLAW_HOME={home} OPENCLAW_STATE_DIR={home}/state OPENCLAW_OFFLINE=1"
    command = f"cd {home} && env {env} {args.node} {args.openclaw} tui --url {url} --token {token}"
    await tmux("new-session", "-d", "-s", session, "-x", "150", "-y", "40", command)
    try:
        screen = ""
        with trio.move_on_after(60):
            while "connected" not in screen:
                await trio.sleep(1)
                screen = await tmux("capture-pane", "-t", session, "-p")
        step.check(
            "tui connects (signed device, paired silently)", "connected" in screen, screen[-300:]
        )
        await tmux("send-keys", "-t", session, "hello from the tui", "Enter")
        with trio.move_on_after(30):
            while "You said: hello from the tui" not in screen:
                await trio.sleep(1)
                screen = await tmux("capture-pane", "-t", session, "-p")
        step.check("tui streams a reply", "You said: hello from the tui" in screen, screen[-300:])
    finally:
        await tmux("kill-session", "-t", session)


async def main(args: argparse.Namespace) -> int:
    step = Step()
    with tempfile.TemporaryDirectory(prefix="clawlane-openclaw-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        options = GatewayOptions(
            port=0, state_dir=Path(tmp) / "state", remote_peer_addresses=frozenset({REMOTE})
        )
        async with open_gateway(parse_config({}), options) as gw:
            url = f"ws://127.0.0.1:{gw.listeners[0].socket.getsockname()[1]}"
            token = gw.auth.token or ""
            common = ["--url", url, "--token", token]
            code, out, err = await openclaw(
                args, home, "gateway", "call", "health", "--json", *common
            )
            step.check(
                "openclaw gateway call health", code == 0 and json.loads(out or "{}").get("ok"), err
            )
            await tui(args, home, url, token, step)
            code, out, err = await openclaw(args, home, "devices", "list", "--json", *common)
            listing = json.loads(out or "{}") if code == 0 else {}
            tui_devices = [
                d for d in listing.get("paired", []) if d.get("clientId") == "openclaw-tui"
            ]
            if shutil.which("tmux") is not None:
                step.check(
                    "openclaw devices list shows the tui's device", bool(tui_devices), err or out
                )
            device = DeviceIdentity.generate()

            async def remote_connect(dev: DeviceIdentity) -> Any:
                try:
                    async with open_gateway_client(
                        url, token=token, device=dev, local_address=REMOTE, scopes=["operator.read"]
                    ) as c:
                        return c.hello
                except GatewayAuthError as exc:
                    return exc

            refused = await remote_connect(device)
            pending_ok = (
                isinstance(refused, GatewayAuthError)
                and refused.details.get("code") == "PAIRING_REQUIRED"
            )
            step.check("a remote device gets PAIRING_REQUIRED", pending_ok, refused)
            request_id = refused.details.get("requestId") if pending_ok else ""
            code, out, err = await openclaw(args, home, "devices", "list", "--json", *common)
            pending = json.loads(out or "{}").get("pending", []) if code == 0 else []
            step.check(
                "openclaw devices list shows the request",
                any(p["requestId"] == request_id for p in pending),
                err or out,
            )
            code, out, err = await openclaw(args, home, "devices", "approve", request_id, *common)
            step.check("openclaw devices approve", code == 0, err or out)
            hello = await remote_connect(device)
            step.check("the approved device connects", isinstance(hello, dict), hello)
            other = DeviceIdentity.generate()
            second = await remote_connect(other)
            second_id = (
                second.details.get("requestId", "") if isinstance(second, GatewayAuthError) else ""
            )
            code, out, err = await openclaw(args, home, "devices", "reject", second_id, *common)
            step.check(
                "openclaw devices reject",
                code == 0 and gw.pairing.pending(second_id, now=gw.now_ms()) is None,
                err or out,
            )
            code, out, err = await openclaw(
                args, home, "devices", "remove", device.device_id, *common
            )
            step.check(
                "openclaw devices remove",
                code == 0 and gw.pairing.paired(device.device_id) is None,
                err or out,
            )
    print("all passed" if not step.failed else f"{step.failed} step(s) failed")
    return 1 if step.failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--node", default=str(CACHE / "node24" / "bin" / "node"))
    parser.add_argument(
        "--openclaw",
        default=str(CACHE / "openclaw-peer" / "node_modules" / "openclaw" / "openclaw.mjs"),
    )
    parsed = parser.parse_args()
    for path in (parsed.node, parsed.openclaw):
        if not Path(path).exists():
            sys.exit(f"not found: {path} (see --node / --openclaw)")
    sys.exit(trio.run(main, parsed))
