"""OpenClaw's own Control UI (openclaw@2026.9.6's `dist/control-ui`) on its Agents, Config and
Sessions settings pages against a real clawlane gateway, in headless Chromium: each change is
made as an operator makes it, is answered without an error (no `ok: false` to the page, no
error banner), and is still there after a reload.

- Agents: an agent made with `agents.create` (the UI's own "New agent" goes to its
  assistant, `openclaw.chat`, which clawlane does not have; `openclaw agents add` calls
  `agents.create`) is picked in the agent menu, its AGENTS.md edited in the Files tab and
  saved (`agents.files.set`), the text shown again after a reload; deleted (`agents.delete`,
  as `openclaw agents delete`: no page of the UI deletes an agent), it is gone from the menu
  after a reload.
- Config: the Advanced page in form mode (`config.schema`), a value changed in the form,
  saved by the form's own save (`config.set`), shown after a reload and in effect.
- Sessions: the transcripts searched (`sessions.search`), a session labelled in its details
  (`sessions.patch`), another forked from its menu (`sessions.create {fork: true}`: the
  fork holds the parent's transcript), all seen again after a reload.

Skipped without the OpenClaw package (`../shared/openclaw-peer/peer.sh install`); Chromium
and Playwright as the dashboard's test."""

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
from transports.server._gateway import Gateway

UI_ROOT = Path.home() / ".cache/openclaw-peer/node_modules/openclaw/dist/control-ui"
TOKEN = "pages-browser-token"
BANNERS = ".callout.danger, .oc-banner-error, .cron-error-banner, .systems-callout--error"
"""What the Control UI shows a failure in (its error callouts and banners)."""


class _Spa(http.server.SimpleHTTPRequestHandler):
    """The Control UI's files. Its pages are routes of the app (`/settings/agents`): a path
    that is no file is the app's `index.html`, and an asset asked for below a route (the
    page's relative `./assets/...` from `/settings/...`) is the asset itself."""

    def send_head(self) -> Any:
        path = self.path.split("?", 1)[0]
        if not Path(self.translate_path(path)).exists():
            parts = path.strip("/").split("/")
            tails = ("/" + "/".join(parts[i:]) for i in range(1, len(parts)))
            self.path = next(
                (t for t in tails if Path(self.translate_path(t)).is_file()), "/index.html"
            )
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


class Wire:
    """The page's requests and the answers it got (by method), as its WebSocket carried
    them; `refused`: the requests answered with an error or `{ok: false}`."""

    def __init__(self) -> None:
        self.sent: dict[str, dict[str, Any]] = {}
        self.answers: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def attach(self, page: Any) -> None:
        def on_ws(ws: Any) -> None:
            ws.on("framesent", self._out)
            ws.on("framereceived", self._back)

        page.on("websocket", on_ws)

    def _out(self, data: str) -> None:
        frame = json.loads(data)
        if frame.get("type") == "req":
            self.sent[frame["id"]] = frame

    def _back(self, data: str) -> None:
        frame = json.loads(data)
        req = self.sent.get(frame.get("id", "")) if frame.get("type") == "res" else None
        if req is not None:
            self.answers.append((req["method"], req.get("params") or {}, frame))

    def of(self, method: str) -> list[dict[str, Any]]:
        return [frame for name, _, frame in self.answers if name == method]

    def refused(self) -> list[tuple[str, Any]]:
        return [
            (name, frame.get("error") or frame.get("payload"))
            for name, _, frame in self.answers
            if not frame.get("ok")
            or (isinstance(frame.get("payload"), dict) and frame["payload"].get("ok") is False)
        ]


def wait_answer(page: Any, wire: Wire, method: str, count: int = 1) -> dict[str, Any]:
    """The `count`th answer to `method` the page got, once it came (15 s)."""
    for _ in range(150):
        if len(wire.of(method)) >= count:
            return wire.of(method)[count - 1]
        page.wait_for_timeout(100)
    raise AssertionError(
        f"no answer to {method} (sent: {[r['method'] for r in wire.sent.values()]})"
    )


def banners(page: Any) -> list[str]:
    return [b.inner_text() for b in page.locator(BANNERS).all() if b.is_visible()]


def open_ui(page: Any, ui_port: int, gw_port: int) -> str:
    """Point the UI at the gateway (the link names another gateway than the page's own:
    switch to it) and wait for the chat; returns the UI's base URL."""
    base = f"http://127.0.0.1:{ui_port}"
    page.goto(f"{base}/?gatewayUrl=ws://127.0.0.1:{gw_port}#token={TOKEN}")
    for _ in range(60):
        switch = page.get_by_role("button", name="Switch to")
        if switch.count():
            switch.first.click()
        if page.locator("textarea:visible, [contenteditable=true]:visible").count():
            break
        page.wait_for_timeout(250)
    return base


def ui_config(ui_port: int, extra: dict[str, Any] | None = None) -> Any:
    raw = {"gateway": {"controlUi": {"allowedOrigins": [f"http://127.0.0.1:{ui_port}"]}}}
    return parse_config({**raw, **(extra or {})})


def gw_port(gw: Gateway) -> int:
    return int(gw.listeners[0].socket.getsockname()[1])


async def browse(
    tmp_path: Path, gw: Gateway, ui_port: int, script: Callable[[Any, str, Wire], Any]
) -> Any:
    def run(page: Any) -> Any:
        wire = Wire()
        wire.attach(page)
        base = open_ui(page, ui_port, gw_port(gw))
        return script(page, base, wire)

    with trio.fail_after(120):
        return await in_browser(tmp_path, run)


def _skip_without_ui() -> None:
    if not (UI_ROOT / "index.html").exists():
        pytest.skip(f"OpenClaw's Control UI is not installed at {UI_ROOT}")


def pick_agent(page: Any, current: str, name: str) -> None:
    page.get_by_role("button", name=f"Agent: {current}").click()
    page.get_by_text(name, exact=True).last.click()


async def test_the_agents_page_edits_an_agents_agents_md(tmp_path: Path) -> None:
    _skip_without_ui()
    text = "# Writer\n\nAnswer in haiku.\n"
    with ui_server() as ui_port:
        async with running_gateway(tmp_path, ui_config(ui_port), token=TOKEN) as gw:
            async with open_client(gw, token=TOKEN) as client:
                made = await client.request("agents.create", {"name": "Writer"})

            def edit(page: Any, base: str, wire: Wire) -> dict[str, Any]:
                page.goto(f"{base}/settings/agents")
                pick_agent(page, "main", "Writer")
                page.get_by_text("Files", exact=True).first.click()
                wait_answer(page, wire, "agents.files.get")
                page.locator("textarea:visible").first.fill(text)
                page.get_by_role("button", name="Save").last.click()
                saved = wait_answer(page, wire, "agents.files.set")
                shown: dict[str, Any] = {"saved": saved, "banners": banners(page)}
                page.reload()
                page.get_by_text("CORE FILES").wait_for()  # the Files tab, still open
                area = page.locator("textarea:visible").first
                area.wait_for()
                for _ in range(50):
                    if area.input_value() == text:
                        break
                    page.wait_for_timeout(100)
                shown["after_reload"] = area.input_value()
                shown["workspace"] = page.get_by_text(made["workspace"]).count() > 0
                shown["banners_after"] = banners(page)
                shown["refused"] = wire.refused()
                page.screenshot(path=str(tmp_path / "agents-page.png"))
                return shown

            seen = await browse(tmp_path, gw, ui_port, edit)
            on_disk = (Path(made["workspace"]) / "AGENTS.md").read_text()
            async with open_client(gw, token=TOKEN) as client:
                await client.request("agents.delete", {"agentId": made["agentId"]})

            def after_delete(page: Any, base: str, wire: Wire) -> dict[str, Any]:
                page.goto(f"{base}/settings/agents")
                page.get_by_text("Agent defaults").first.wait_for()
                wait_answer(page, wire, "agents.list")
                menu = page.get_by_role("button", name="Agent: main")
                if menu.is_enabled():  # with one agent left there is nothing to pick
                    menu.click()
                return {
                    "listed": page.get_by_text("Writer", exact=True).count(),
                    "agents": [
                        a["id"] for a in wait_answer(page, wire, "agents.list")["payload"]["agents"]
                    ],
                    "banners": banners(page),
                    "refused": wire.refused(),
                }

            gone = await browse(tmp_path, gw, ui_port, after_delete)
    keep_screenshot(tmp_path / "agents-page.png")
    assert made["agentId"] == "writer"
    assert seen["saved"]["ok"] and seen["saved"]["payload"]["ok"], seen["saved"]
    assert on_disk == text
    assert seen["after_reload"] == text
    assert seen["banners"] == [] and seen["banners_after"] == []
    assert seen["refused"] == [], seen["refused"]
    assert gone["agents"] == ["main"] and gone["listed"] == 0
    assert gone["banners"] == [] and gone["refused"] == []


async def test_the_config_page_saves_a_change_made_in_its_form(tmp_path: Path) -> None:
    _skip_without_ui()
    field = "input[aria-label='Max File Bytes']"
    with ui_server() as ui_port:
        async with running_gateway(tmp_path, ui_config(ui_port), token=TOKEN) as gw:

            def change(page: Any, base: str, wire: Wire) -> dict[str, Any]:
                page.goto(f"{base}/settings/advanced")
                form = page.get_by_role("button", name="Form", exact=True)
                form.wait_for()
                wait_answer(page, wire, "config.schema")
                shown: dict[str, Any] = {
                    "form_mode": "active" in (form.get_attribute("class") or "")
                }
                box = page.locator(field).first
                box.fill("7000000")
                box.press("Tab")
                shown["set"] = wait_answer(page, wire, "config.set")
                shown["banners"] = banners(page)
                page.reload()
                page.get_by_role("button", name="Form", exact=True).wait_for()
                box = page.locator(field).first
                box.wait_for()
                shown["after_reload"] = box.input_value()
                shown["banners_after"] = banners(page)
                shown["refused"] = wire.refused()
                shown["schema_ok"] = wire.of("config.schema")[0]["ok"]
                page.screenshot(path=str(tmp_path / "config-page.png"))
                return shown

            seen = await browse(tmp_path, gw, ui_port, change)
            live = gw.supervisor.generation.config.logging.maxFileBytes
    keep_screenshot(tmp_path / "config-page.png")
    assert seen["schema_ok"] and seen["form_mode"]
    assert seen["set"]["ok"], seen["set"]
    assert seen["after_reload"] == "7000000"
    assert live == 7_000_000  # validated and applied
    assert seen["banners"] == [] and seen["banners_after"] == []
    assert seen["refused"] == [], seen["refused"]


async def test_the_sessions_page_searches_labels_and_forks(tmp_path: Path) -> None:
    _skip_without_ui()
    with ui_server() as ui_port:
        async with running_gateway(tmp_path, ui_config(ui_port), token=TOKEN) as gw:
            async with open_client(gw, token=TOKEN) as client:
                for key, words in (("agent:main:fruit", "pineapples"), ("agent:main:veg", "leeks")):
                    await client.request(
                        "agent",
                        {"message": f"notes on {words}", "sessionKey": key, "idempotencyKey": key},
                        expect_final=True,
                    )
            has_search = "sessions.search" in gw.methods.names()

            def manage(page: Any, base: str, wire: Wire) -> dict[str, Any]:
                page.goto(f"{base}/settings/sessions")
                page.get_by_text("agent:main:fruit").first.wait_for()
                shown: dict[str, Any] = {}
                if has_search:
                    page.get_by_placeholder("Search exact words or phrases…").fill("pineapples")
                    page.get_by_role("button", name="Search", exact=True).click()
                    shown["search"] = wait_answer(page, wire, "sessions.search")
                    page.get_by_text("Transcript matches").wait_for()
                    shown["search_text"] = page.inner_text("body")
                details = "Show session details for agent:main:fruit"
                page.get_by_role("button", name=details).click()
                label = page.get_by_placeholder("(optional)").first
                label.fill("Pineapple notes")
                label.press("Enter")
                shown["patch"] = wait_answer(page, wire, "sessions.patch")
                row = page.locator("tr", has_text="agent:main:veg").first
                row.get_by_role("button", name="Open session menu").click()
                page.get_by_role("menuitem", name="Fork conversation").click()
                shown["fork"] = wait_answer(page, wire, "sessions.create")
                shown["banners"] = banners(page)
                page.goto(f"{base}/settings/sessions")
                page.get_by_text("agent:main:fruit").first.wait_for()
                page.get_by_text("Pineapple notes").first.wait_for()
                shown["after_reload"] = page.inner_text("body")
                shown["banners_after"] = banners(page)
                shown["refused"] = wire.refused()
                page.screenshot(path=str(tmp_path / "sessions-page.png"))
                return shown

            seen = await browse(tmp_path, gw, ui_port, manage)
            fork_key = seen["fork"]["payload"]["key"]
            async with open_client(gw, token=TOKEN) as client:
                history = await client.request("chat.history", {"sessionKey": fork_key})
                rows = await client.request("sessions.list", {})
    keep_screenshot(tmp_path / "sessions-page.png")
    if has_search:
        assert seen["search"]["ok"], seen["search"]
        hits = {h["sessionKey"] for h in seen["search"]["payload"]["results"]}
        assert hits == {"agent:main:fruit"}
        assert "notes on pineapples" in seen["search_text"]
    assert seen["patch"]["ok"], seen["patch"]
    assert seen["fork"]["ok"] and seen["fork"]["payload"]["ok"], seen["fork"]
    texts = [json.dumps(m.get("content")) for m in history["messages"]]
    assert any("notes on leeks" in t for t in texts), texts  # the fork has the transcript
    labels = {r["key"]: r.get("label") for r in rows["sessions"]}
    assert labels["agent:main:fruit"] == "Pineapple notes"
    assert fork_key in labels and fork_key.split(":")[-1] in seen["after_reload"]
    assert "Pineapple notes" in seen["after_reload"]
    assert seen["banners"] == [] and seen["banners_after"] == []
    assert seen["refused"] == [], seen["refused"]
