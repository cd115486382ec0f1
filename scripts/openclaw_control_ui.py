"""Opt-in check (not in the suite): OpenClaw's own web Control UI against a clawlane gateway.

Starts `clawlane gateway` on a free loopback port (token auth, the `local` model, a fresh
state dir), serves the `openclaw` npm package's `dist/control-ui` from a separate loopback
static server (with the single-page-app fallback to `index.html`), opens it in headless
Chromium (Playwright, `/usr/bin/chromium`) with `?gatewayUrl=ws://...#token=...`, and checks,
as a user would see them:

1. the UI connects (hello-ok) and its startup calls all succeed (`cron.*` excepted: another
   part of clawlane answers those);
2. the model picker lists the generation's models;
3. a message typed in the composer streams a reply (`chat` deltas, then `final`);
4. after a page reload the conversation shows each turn once, and no "Delivery
   unconfirmed" notice appears.

Every WebSocket frame is written to `--record FILE` (JSONL) and screenshots to `--shots DIR`.
Needs: `pip install playwright==1.65.2` (the dev extra), Debian's `chromium`
(`apt-get install chromium`), and the `openclaw@2026.9.6` package
(`--openclaw-dir`, default `~/.cache/openclaw-peer/node_modules/openclaw`).

    .venv/bin/python scripts/openclaw_control_ui.py [--openclaw-dir DIR] [--record FILE]
        [--workers N]

`--workers N` (N > 1) runs the gateway as a cluster of N processes on the one port (as
`scripts/openclaw_clients.py --workers N` does: PostgreSQL and Redis on loopback); every
page load is a new connection, landing on any worker, and the presence the UI is sent
must list every worker's gateway (OpenClaw's Instances view).

Exit status 0 when every check passed, 1 otherwise (each failed check is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from openclaw_clients import cluster_config

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OPENCLAW = Path.home() / ".cache" / "openclaw-peer" / "node_modules" / "openclaw"
TOKEN = "control-ui-check-token"
MESSAGE = "hello from the control ui"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class SpaHandler(http.server.SimpleHTTPRequestHandler):
    """Static files; any path that is not a file gets `index.html` (the UI's routes)."""

    def send_head(self) -> Any:
        path = self.path.split("?", 1)[0]
        if not Path(self.translate_path(path)).exists():
            # A route of the UI (`/chat/main`): its assets are relative to it, so a file is
            # looked up without the route's leading segments; anything else is the app.
            parts = [p for p in path.split("/") if p]
            for i in range(1, len(parts)):
                candidate = "/" + "/".join(parts[i:])
                if Path(self.translate_path(candidate)).is_file():
                    self.path = candidate
                    break
            else:
                self.path = "/index.html"
        return super().send_head()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def static_server(root: Path) -> Iterator[int]:
    handler = functools.partial(SpaHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def clawlane_gateway(state: Path, ui_origin: str, workers: int) -> Iterator[int]:
    port = free_port()
    config = state / "clawlane.json"
    cluster = contextlib.ExitStack()
    extra = cluster.enter_context(cluster_config(workers))
    config.write_text(
        json.dumps(
            {
                **extra,
                "gateway": {
                    "auth": {"mode": "token", "token": TOKEN},
                    # The UI is served from another port: its origin must be allowed.
                    "controlUi": {"allowedOrigins": [ui_origin]},
                },
                "models": {
                    "providers": {
                        "local": {
                            "api": "local",
                            "models": [
                                {"id": "echo", "name": "Echo"},
                                {"id": "echo-2", "name": "Echo Two"},
                            ],
                            "options": {"deltaDelayMs": 60},
                        }
                    }
                },
            }
        )
    )
    log = (state / "gateway.log").open("w")
    proc = subprocess.Popen(
        [
            str(REPO / ".venv" / "bin" / "clawlane"),
            "gateway",
            "--port",
            str(port),
            "--config",
            str(config),
            "--state-dir",
            str(state / "state"),
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
                raise SystemExit(f"clawlane gateway exited: see {state / 'gateway.log'}")
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()
        cluster.close()


class Recorder:
    def __init__(self, path: Path) -> None:
        self.out = path.open("w", buffering=1)
        self.frames: list[tuple[str, dict[str, Any]]] = []
        self.methods: dict[str, str] = {}
        self.console: list[str] = []

    def frame(self, direction: str, data: Any) -> None:
        try:
            frame = json.loads(data)
        except (TypeError, ValueError):
            return
        self.out.write(json.dumps({"t": time.time(), "dir": direction, "f": frame}) + "\n")
        if isinstance(frame, dict):
            if frame.get("type") == "req":
                self.methods[frame["id"]] = frame["method"]
            self.frames.append((direction, frame))

    def failures(self, since: int = 0) -> list[str]:
        bad = []
        for direction, f in self.frames[since:]:
            if direction == "s2c" and f.get("type") == "res" and not f.get("ok"):
                method = self.methods.get(f["id"], "?")
                if not method.startswith("cron."):
                    bad.append(f"{method}: {f.get('error')}")
        return bad

    def unanswered(self, since: int = 0) -> list[str]:
        """The methods of the requests sent after `since` that got no answer."""
        answered = {f.get("id") for d, f in self.frames if d == "s2c" and f.get("type") == "res"}
        return [
            str(f.get("method"))
            for d, f in self.frames[since:]
            if d == "c2s" and f.get("type") == "req" and f.get("id") not in answered
        ]

    def gateways_in_presence(self) -> int:
        """The most gateway entries in one presence list the UI was sent (hello-ok's
        snapshot, a `presence` event, a `system-presence` answer)."""
        most = 0
        for d, f in self.frames:
            payload = f.get("payload")
            if d != "s2c" or not isinstance(payload, dict | list):
                continue
            if isinstance(payload, dict) and payload.get("type") == "hello-ok":
                payload = payload["snapshot"]
            entries = payload.get("presence") if isinstance(payload, dict) else payload
            if isinstance(entries, list):
                gateways = [e for e in entries if isinstance(e, dict) and e.get("reason") == "self"]
                most = max(most, len(gateways))
        return most

    def chat_states(self, since: int = 0) -> list[str]:
        return [
            f["payload"].get("state", "")
            for d, f in self.frames[since:]
            if d == "s2c" and f.get("type") == "event" and f.get("event") == "chat"
        ]


def shown(page: Any, text: str) -> int:
    """How many visible elements show exactly `text` (screen-reader announcements aside)."""
    found = page.get_by_text(text, exact=True).filter(visible=True).all()
    return sum(1 for el in found if "sr-only" not in (el.get_attribute("class") or ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--openclaw-dir", type=Path, default=DEFAULT_OPENCLAW)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--record", type=Path, default=None)
    parser.add_argument("--shots", type=Path, default=None)
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="gateway processes (> 1: a cluster, as in openclaw_clients.py)",
    )
    args = parser.parse_args(argv)
    ui_root = args.openclaw_dir / "dist" / "control-ui"
    if not (ui_root / "index.html").exists():
        print(f"no Control UI at {ui_root} (install openclaw@2026.9.6)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    failed: list[str] = []

    def check(ok: bool, what: str) -> None:
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failed.append(what)

    with tempfile.TemporaryDirectory(prefix="clawlane-ui-") as tmp:
        work = Path(tmp)
        shots = args.shots or work
        shots.mkdir(parents=True, exist_ok=True)
        rec = Recorder(args.record or work / "frames.jsonl")
        with (
            static_server(ui_root) as ui_port,
            clawlane_gateway(work, f"http://127.0.0.1:{ui_port}", args.workers) as gw_port,
            sync_playwright() as pw,
        ):
            browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda m: rec.console.append(f"{m.type}: {m.text}"))

            def on_ws(ws: Any) -> None:
                ws.on("framesent", lambda data: rec.frame("c2s", data))
                ws.on("framereceived", lambda data: rec.frame("s2c", data))

            page.on("websocket", on_ws)

            def open_and_switch(url: str | None) -> None:
                if url is None:
                    page.reload()
                else:
                    page.goto(url)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    switch = page.get_by_role("button", name="Switch to")
                    if switch.count():
                        switch.first.click()
                    if page.locator("textarea:visible, [contenteditable=true]:visible").count():
                        break
                    page.wait_for_timeout(300)
                page.wait_for_timeout(3000)

            url = f"http://127.0.0.1:{ui_port}/?gatewayUrl=ws://127.0.0.1:{gw_port}#token={TOKEN}"
            open_and_switch(url)
            page.screenshot(path=str(shots / "1-connected.png"))
            hello = [
                f
                for d, f in rec.frames
                if d == "s2c"
                and isinstance(f.get("payload"), dict)
                and f["payload"].get("type") == "hello-ok"
            ]
            check(bool(hello), "the Control UI connects (hello-ok)")
            check(not rec.failures(), f"its startup calls succeed {rec.failures()[:5]}")
            picker = page.get_by_text("Echo", exact=True).filter(visible=True)
            if picker.count():
                picker.last.click()  # the composer's model chip opens the picker
                page.wait_for_timeout(1000)
                group = page.get_by_text("Local", exact=True).filter(visible=True)
                if group.count():
                    group.first.click()  # the provider's group ("Local 2") opens its list
                    page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / "1b-model-picker.png"))
            check(
                shown(page, "Echo Two") >= 1,
                "the model picker lists the generation's models (Echo, Echo Two)",
            )
            page.keyboard.press("Escape")
            page.wait_for_timeout(500)

            mark = len(rec.frames)
            box = page.locator("textarea:visible, [contenteditable=true]:visible").first
            box.click()
            page.keyboard.type(MESSAGE)
            page.keyboard.press("Enter")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "final" not in rec.chat_states(mark):
                page.wait_for_timeout(300)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and shown(page, f"You said: {MESSAGE}") != 1:
                page.wait_for_timeout(300)
            page.screenshot(path=str(shots / "2-turn.png"))
            states = rec.chat_states(mark)
            check("delta" in states and "final" in states, f"a chat turn streams ({states[:3]}...)")
            n = shown(page, f"You said: {MESSAGE}")
            check(n == 1, f"the reply is shown once (shown {n} times)")
            check(not rec.failures(mark), f"the turn's calls succeed {rec.failures(mark)[:5]}")

            mark = len(rec.frames)
            open_and_switch(None)
            page.wait_for_timeout(2000)
            page.screenshot(path=str(shots / "3-reloaded.png"))
            check(shown(page, MESSAGE) == 1, "after a reload the message is shown once")
            check(
                shown(page, f"You said: {MESSAGE}") == 1, "after a reload the reply is shown once"
            )
            check(
                page.get_by_text("Delivery unconfirmed").count() == 0, "no 'Delivery unconfirmed'"
            )
            check(not rec.failures(mark), f"the reload's calls succeed {rec.failures(mark)[:5]}")
            seen = rec.gateways_in_presence()
            check(seen == args.workers, f"presence lists every worker's gateway ({seen})")
            for name in ("debug", "skills", "plugins", "systems"):
                mark = len(rec.frames)
                page.goto(f"http://127.0.0.1:{ui_port}/{name}")
                page.wait_for_timeout(6000)
                page.screenshot(path=str(shots / f"4-{name}.png"))
                bad = rec.failures(mark) + [f"{m}: unanswered" for m in rec.unanswered(mark)]
                check(not bad, f"the {name} page's calls are answered {bad[:5]}")
            browser.close()
        print(f"frames: {rec.out.name}; screenshots: {shots}")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PLAYWRIGHT_BROWSERS_PATH", "0")
    raise SystemExit(main())
