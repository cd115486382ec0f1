"""OpenClaw's own Control UI (openclaw@2026.9.6's `dist/control-ui`, served from a loopback
static server) opens its Usage page against a real clawlane gateway in headless Chromium: it
shows the sessions, tokens and cost of the runs that ended, and no error banner (it showed
`unknown method: sessions.usage` before). Skipped when the OpenClaw package is not installed
(`../shared/openclaw-peer/peer.sh install`); Chromium and Playwright as the dashboard's test."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model import parse_config
from tests.conftest import open_client, running_gateway
from tests.e2e.test_dashboard_browser import in_browser, keep_screenshot

UI_ROOT = Path.home() / ".cache/openclaw-peer/node_modules/openclaw/dist/control-ui"
TOKEN = "usage-browser-token"


class _Spa(http.server.SimpleHTTPRequestHandler):
    """The Control UI's files; any other path is the app's `index.html` (its routes)."""

    def send_head(self) -> Any:
        path = Path(self.translate_path(self.path))
        if not path.exists():
            self.path = "/index.html"
        return super().send_head()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def ui_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Spa, directory=str(UI_ROOT))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def usage_page(
    ui_port: int, gw_port: int, shot: Path
) -> Callable[[Any], tuple[str, list[dict[str, Any]]]]:
    """Open the UI on the gateway, then its Usage page: the page's text once the report is
    in, and the answers to its usage requests."""

    def script(page: Any) -> tuple[str, list[dict[str, Any]]]:
        sent: dict[str, str] = {}
        answers: list[dict[str, Any]] = []

        def on_ws(ws: Any) -> None:
            def out(data: str) -> None:
                frame = json.loads(data)
                if frame.get("type") == "req":
                    sent[frame["id"]] = frame["method"]

            def back(data: str) -> None:
                frame = json.loads(data)
                if frame.get("type") == "res" and "usage" in sent.get(frame["id"], ""):
                    answers.append({"method": sent[frame["id"]], **frame})

            ws.on("framesent", out)
            ws.on("framereceived", back)

        page.on("websocket", on_ws)
        base = f"http://127.0.0.1:{ui_port}"
        page.goto(f"{base}/?gatewayUrl=ws://127.0.0.1:{gw_port}#token={TOKEN}")
        for _ in range(60):  # the link names another gateway than the page's own: switch
            switch = page.get_by_role("button", name="Switch to")
            if switch.count():
                switch.first.click()
            if page.locator("textarea:visible, [contenteditable=true]:visible").count():
                break
            page.wait_for_timeout(250)
        page.goto(f"{base}/usage")
        page.get_by_text("sessions in range").first.wait_for()
        page.wait_for_timeout(1000)
        page.screenshot(path=str(shot))
        return page.inner_text("body"), answers

    return script


async def test_the_control_ui_usage_page_shows_the_gateways_usage(tmp_path: Path) -> None:
    if not (UI_ROOT / "index.html").exists():
        pytest.skip(f"OpenClaw's Control UI is not installed at {UI_ROOT}")
    with ui_server() as ui_port:
        config = parse_config(
            {
                "gateway": {"controlUi": {"allowedOrigins": [f"http://127.0.0.1:{ui_port}"]}},
                "models": {
                    "providers": {
                        "local": {
                            "api": "local",
                            "models": [{"id": "echo", "cost": {"input": 3, "output": 15}}],
                        }
                    }
                },
            }
        )
        async with running_gateway(tmp_path, config, token=TOKEN) as gw:
            with trio.fail_after(60):
                async with open_client(gw, token=TOKEN) as client:
                    for key in ("agent:main:first", "agent:main:second"):
                        await client.request(
                            "agent",
                            {"message": "hello", "sessionKey": key, "idempotencyKey": key},
                            expect_final=True,
                        )
                gw_port = gw.listeners[0].socket.getsockname()[1]
                shot = tmp_path / "usage-page.png"
                text, answers = await in_browser(tmp_path, usage_page(ui_port, gw_port, shot))
                keep_screenshot(shot)
    report = next(a for a in answers if a["method"] == "sessions.usage")
    assert report["ok"], report
    assert {s["key"] for s in report["payload"]["sessions"]} == {
        "agent:main:first",
        "agent:main:second",
    }
    assert report["payload"]["totals"]["totalCost"] > 0
    assert all(a["ok"] for a in answers), answers
    assert "2 sessions in range" in text, text[:2000]
    assert "unknown method" not in text.lower()
    assert "Usage unavailable" not in text and "failed to load" not in text.lower()
