"""OpenClaw's own Control UI (openclaw@2026.9.6's `dist/control-ui`, from a loopback static
server, as the Usage page's test serves it) connected to a real clawlane gateway in headless
Chromium: a run's exec in the session the UI shows, which `tools.exec.mode: ask` puts to the
operators, shows the UI's approval card ("Exec approval needed", the command, Allow once /
Always allow here / Deny), and clicking Allow once lets the run's exec run (a marker file
the command makes); the card goes away. Skipped when the OpenClaw package is
not installed; Chromium and Playwright as the dashboard's test."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from runtime.model import parse_config
from tests.conftest import open_client, running_gateway
from tests.e2e.test_dashboard_browser import in_browser, keep_screenshot
from tests.e2e.test_usage_browser import UI_ROOT, ui_server

TOKEN = "approval-card-token"
RUN = '[[tool:exec {"command": "touch marker.txt"}]]'


def marker(tmp_path: Path) -> Path:
    return tmp_path / "state" / "workspaces" / "main" / "marker.txt"


def approve_in_the_ui(
    ui_port: int, gw_port: int, shot: Path, start_run: Any, tmp_path: Path
) -> Callable[[Any], dict[str, Any]]:
    """Open the UI on the gateway, start the run once it is connected, then answer the
    card it shows with allow-once."""

    def script(page: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {"resolves": []}

        def on_ws(ws: Any) -> None:
            def out(data: str) -> None:
                frame = json.loads(data)
                if frame.get("type") == "req" and "approval" in frame.get("method", ""):
                    seen["resolves"].append((frame["method"], frame.get("params")))

            ws.on("framesent", out)

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
        start_run()
        allow = page.get_by_role("button", name="Allow once")
        allow.first.wait_for()
        page.get_by_text("Exec approval needed").first.wait_for()
        seen["card"] = page.inner_text("body")
        seen["ran_before"] = marker(tmp_path).exists()
        page.screenshot(path=str(shot))
        allow.first.click()
        for _ in range(100):
            if marker(tmp_path).exists() and not allow.count():
                break
            page.wait_for_timeout(100)
        seen["ran"] = marker(tmp_path).exists()
        seen["card_left"] = allow.count() == 0
        return seen

    return script


async def test_the_control_ui_card_allows_a_runs_exec_once(tmp_path: Path) -> None:
    if not (UI_ROOT / "index.html").exists():
        pytest.skip(f"OpenClaw's Control UI is not installed at {UI_ROOT}")
    with ui_server() as ui_port:
        config = parse_config(
            {
                "gateway": {"controlUi": {"allowedOrigins": [f"http://127.0.0.1:{ui_port}"]}},
                "tools": {"exec": {"mode": "ask"}},
            }
        )
        async with running_gateway(tmp_path, config, token=TOKEN) as gw:
            done: dict[str, Any] = {}
            with trio.fail_after(90):
                async with (
                    open_client(
                        gw, token=TOKEN, scopes=["operator.read", "operator.write"]
                    ) as runner,
                    trio.open_nursery() as nursery,
                ):

                    async def run() -> None:
                        done["final"] = await runner.request(
                            "agent",
                            {"message": RUN, "idempotencyKey": "card", "sessionKey": "main"},
                            expect_final=True,
                        )

                    def start_run() -> None:  # from the browser's thread
                        trio.from_thread.run_sync(nursery.start_soon, run)

                    gw_port = gw.listeners[0].socket.getsockname()[1]
                    shot = tmp_path / "approval-card.png"
                    seen = await in_browser(
                        tmp_path, approve_in_the_ui(ui_port, gw_port, shot, start_run, tmp_path)
                    )
                keep_screenshot(shot)
    assert "Exec approval needed" in seen["card"] and "touch marker.txt" in seen["card"]
    assert seen["ran_before"] is False
    assert seen["ran"] is True and seen["card_left"] is True
    [(method, params)] = [r for r in seen["resolves"] if r[0].endswith("resolve")]
    assert method == "exec.approval.resolve" and params["decision"] == "allow-once"
    assert done["final"]["status"] == "ok"
