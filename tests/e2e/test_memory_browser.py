"""OpenClaw's own Control UI (openclaw@2026.9.6's `dist/control-ui`, served from a loopback
static server) opens its Memory settings page against a real clawlane gateway in headless
Chromium: the Overview shows the engine's status from `doctor.memory.status` (keyword search,
no embeddings) and the Memories tab finds a note of the agent's workspace through
`memory.search`, with no error. Skipped when the OpenClaw package is not installed
(`../shared/openclaw-peer/peer.sh install`); Chromium and Playwright as the dashboard's test,
the static server and the connection as the Usage page's."""

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
from tests.e2e.test_usage_browser import TOKEN, UI_ROOT, _Spa

NOTE = "The kestrel deploys go out on Thursdays after the standup.\n"


class _NestedSpa(_Spa):
    """The Usage page's static server, for a route two levels deep (`/settings/memory`):
    the page's relative `./assets/...` resolve under `/settings/`, served from the root."""

    def send_head(self) -> Any:
        _dir, found, rest = self.path.partition("/assets/")
        if found and not Path(self.translate_path(self.path)).exists():
            self.path = f"/assets/{rest}"
        return super().send_head()


@contextmanager
def ui_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_NestedSpa, directory=str(UI_ROOT))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def memory_page(
    ui_port: int, gw_port: int, shots: Path
) -> Callable[[Any], tuple[str, str, list[dict[str, Any]]]]:
    """Open the UI on the gateway, then its Memory page: the Overview's text once the status
    is in, the Memories tab's text after a search, and the answers to memory requests."""

    def script(page: Any) -> tuple[str, str, list[dict[str, Any]]]:
        sent: dict[str, str] = {}
        answers: list[dict[str, Any]] = []

        def on_ws(ws: Any) -> None:
            def out(data: str) -> None:
                frame = json.loads(data)
                if frame.get("type") == "req":
                    sent[frame["id"]] = frame["method"]

            def back(data: str) -> None:
                frame = json.loads(data)
                if frame.get("type") == "res" and "memory" in sent.get(frame["id"], ""):
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
        page.goto(f"{base}/settings/memory")
        page.get_by_text("Engine health").first.wait_for()
        page.get_by_text("keyword search (no embeddings)").first.wait_for()
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "memory-overview.png"))
        overview = page.inner_text("body")
        page.get_by_role("tab", name="Memories").first.click()
        box = page.get_by_placeholder("Search this agent's memories")
        box.fill("kestrel deploys")
        box.press("Enter")
        page.get_by_text("Thursdays after the standup").first.wait_for()
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "memory-search.png"))
        return overview, page.inner_text("body"), answers

    return script


async def test_the_control_ui_memory_page_shows_status_and_finds_a_note(tmp_path: Path) -> None:
    if not (UI_ROOT / "index.html").exists():
        pytest.skip(f"OpenClaw's Control UI is not installed at {UI_ROOT}")
    with ui_server() as ui_port:
        config = parse_config(
            {"gateway": {"controlUi": {"allowedOrigins": [f"http://127.0.0.1:{ui_port}"]}}}
        )
        async with running_gateway(tmp_path, config, token=TOKEN) as gw:
            with trio.fail_after(90):
                async with open_client(gw, token=TOKEN) as client:  # makes the workspace
                    await client.request(
                        "agent",
                        {"message": "hello", "sessionKey": "agent:main:m", "idempotencyKey": "m"},
                        expect_final=True,
                    )
                notes = tmp_path / "state" / "workspaces" / "main" / "memory"
                await trio.Path(notes).mkdir(parents=True, exist_ok=True)
                await trio.Path(notes / "2026-12-07.md").write_text(NOTE)
                gw_port = gw.listeners[0].socket.getsockname()[1]
                script = memory_page(ui_port, gw_port, tmp_path)
                overview, search, answers = await in_browser(tmp_path, script)
                for name in ("memory-overview.png", "memory-search.png"):
                    keep_screenshot(tmp_path / name)
    status = next(a for a in answers if a["method"] == "doctor.memory.status")
    assert status["ok"] and status["payload"]["agentId"] == "main", status
    found = next(a for a in answers if a["method"] == "memory.search")
    assert found["ok"], found
    assert found["payload"]["results"][0]["path"] == "memory/2026-12-07.md"
    assert all(a["ok"] for a in answers), [a for a in answers if not a["ok"]]
    assert "Memory is awake" in overview, overview[:2000]
    assert "keyword search (no embeddings)" in overview
    assert "Memory needs attention" not in overview
    assert "memory/2026-12-07.md" in search, search[:2000]
    assert "Memory search failed" not in search and "unknown method" not in search.lower()
