"""The dashboard in a real headless browser: Debian's Chromium driven by Playwright (a
blocking API, in a worker thread) against a real gateway on loopback. The page gets its
token from the URL fragment, connects over WebSocket as a protocol v4 client, sends a
message, and the reply streams in; the panels show the gateway's state; a screenshot is
taken (kept in `CLAWLANE_SCREENSHOT_DIR` when that is set)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest
import trio

from tests._needs import missing
from tests.conftest import local_config, open_client, running_gateway
from transports import GatewayRequestError
from transports.server._gateway import Gateway

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "browser-token"
_T = TypeVar("_T")


@pytest.fixture(autouse=True)
def _chromium() -> None:
    """Every test here needs Chromium: skip without it, saying why (fail under CI)."""
    if not os.path.exists(CHROMIUM):
        missing("Chromium", f"Debian's chromium is not at {CHROMIUM} (apt-get install -y chromium)")


def page_url(gw: Gateway, fragment: str = "") -> str:
    return f"http://127.0.0.1:{gw.listeners[0].socket.getsockname()[1]}/{fragment}"


async def in_browser(tmp_path: Path, script: Callable[[Any], _T]) -> _T:
    """Run `script(page)` in a fresh headless Chromium (Playwright gives it a new empty
    profile)."""
    try:
        from playwright import sync_api
    except ImportError as exc:
        missing("Playwright", f"cannot be imported (the dev extra installs it): {exc}")

    def run() -> _T:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(15_000)
                return script(page)
            finally:
                browser.close()

    return await trio.to_thread.run_sync(run, abandon_on_cancel=True)


def keep_screenshot(path: Path) -> None:
    target = os.environ.get("CLAWLANE_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


def answer_history_after_the_run(gw: Gateway, key: str, monkeypatch: Any) -> list[bool]:
    """The page's first `chat.history` of `key` is answered only once a `chat.send` to it
    was handled and the run it started has ended: the page has shown the message and the
    streamed reply meanwhile, and the history holds both. Returns [whether it did] once
    that history is answered."""
    sent: list[str] = []
    was_sent = trio.Event()
    answered: list[bool] = []
    send, history = gw.methods._table["chat.send"], gw.methods._table["chat.history"]

    async def chat_send(call: Any, params: Any) -> Any:
        try:
            return await send.handler(call, params)
        finally:
            sent.append(params.idempotencyKey)
            was_sent.set()

    async def chat_history(call: Any, params: Any) -> Any:
        if params.sessionKey != key or answered:
            return await history.handler(call, params)
        with trio.move_on_after(20):  # the page sent nothing: answer anyway
            await was_sent.wait()
            await gw.registry.wait(sent[0], 20)
        result = await history.handler(call, params)
        roles = [m.get("role") for m in result["messages"]]
        answered.append(roles == ["user", "assistant"])
        return result

    monkeypatch.setitem(gw.methods._table, "chat.send", attrs.evolve(send, handler=chat_send))
    monkeypatch.setitem(
        gw.methods._table, "chat.history", attrs.evolve(history, handler=chat_history)
    )
    return answered


async def test_the_dashboard_streams_a_reply_and_shows_the_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_gateway(tmp_path, token=TOKEN) as gw:
        history_after_run = answer_history_after_the_run(gw, "agent:main:browser", monkeypatch)
        with trio.fail_after(30):
            async with open_client(gw, token=TOKEN) as client:
                snap = await client.request("config.get")
                bad = {"agents": {"defaults": {"model": {"primary": "nowhere/none"}}}}
                with pytest.raises(GatewayRequestError):
                    await client.request(
                        "config.patch", {"raw": json.dumps(bad), "baseHash": snap["hash"]}
                    )
        shot = tmp_path / "dashboard.png"
        errors: list[str] = []

        def script(page: Any) -> dict[str, Any]:
            def on_console(message: Any) -> None:
                if message.type == "error":
                    errors.append(message.text)

            page.on("console", on_console)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_url(gw, f"#token={TOKEN}"))
            page.wait_for_selector("#conn-state[data-state=online]")
            seen: dict[str, Any] = {
                "url": page.url,
                "stored": page.evaluate("localStorage.getItem('clawlane.dashboard.token')"),
            }
            page.fill("#session-key", "agent:main:browser")
            page.fill("#message", "[[delay:120]] the reply streams in word by word")
            page.click("#send")
            bubble = page.wait_for_selector(".msg-assistant.streaming")
            page.wait_for_function(
                "() => { const t = document.querySelector('.msg-assistant.streaming .text');"
                " return t && t.textContent.length > 0; }"
            )
            seen["partial"] = bubble.inner_text()
            page.wait_for_selector(".msg-assistant[data-done=true]")
            seen["final"] = page.inner_text(".msg-assistant[data-done=true] .text")
            seen["transcript"] = page.eval_on_selector_all(
                "#transcript .msg", "nodes => nodes.map(n => n.querySelector('.text').textContent)"
            )
            page.wait_for_selector("#sessions li[data-key='agent:main:browser']")
            page.wait_for_selector("#generations tr.gen-failed")
            page.wait_for_selector("#connections tr")
            page.wait_for_timeout(2500)  # two more samples on the chart
            seen["generations"] = page.inner_text("#generations")
            seen["connections"] = page.inner_text("#connections")
            seen["lanes"] = page.inner_text("#lanes")
            page.screenshot(path=str(shot), full_page=True)
            return seen

        with trio.fail_after(90):
            seen = await in_browser(tmp_path, script)
        home = page_url(gw)
        _, paired = gw.pairing.records(now=gw.now_ms())
    keep_screenshot(shot)
    assert seen["url"] == home  # the token left the address bar at once
    assert seen["stored"] == TOKEN
    final = "You said: the reply streams in word by word"
    assert seen["final"] == final
    # Sent while the session's history loaded, the message and its streamed reply stayed
    # on screen, each once (the history, when it came, had both).
    assert history_after_run == [True]
    assert seen["transcript"] == ["[[delay:120]] the reply streams in word by word", final]
    partial = seen["partial"].removeprefix("ASSISTANT").strip()
    assert partial and final.startswith(partial) and len(partial) < len(final)
    assert "failed" in seen["generations"] and "nowhere/none" in seen["generations"]
    assert "webchat-ui" in seen["connections"]
    assert "main" in seen["lanes"] and "/8" in seen["lanes"]
    assert shot.stat().st_size > 10_000
    assert errors == []  # no script error, no CSP violation
    # It signed in as a device of its own (WebCrypto ed25519), paired silently on loopback.
    [device] = [d for d in paired if d.clientId == "webchat-ui"]
    assert sorted(device.scopes or []) == ["operator.read", "operator.write"]


async def test_sessions_are_searchable_and_queued_runs_and_lanes_show(tmp_path: Path) -> None:
    config = local_config(
        agents__defaults__maxConcurrent=1,
        messages__queue__mode="followup",
        messages__queue__debounceMs=0,
    )
    async with running_gateway(tmp_path, config, token=TOKEN) as gw:
        with trio.fail_after(60):
            async with open_client(gw, token=TOKEN) as client:
                await client.request(
                    "agent",
                    {"message": "done", "idempotencyKey": "done", "sessionKey": "finished"},
                    expect_final=True,
                )
                for key, session, message in [
                    ("held", "held", "[[stall]]"),
                    ("waits", "other", "next"),
                    ("queued", "held", "after"),
                ]:
                    await client.request(
                        "agent", {"message": message, "idempotencyKey": key, "sessionKey": session}
                    )

                def script(page: Any) -> dict[str, Any]:
                    page.goto(page_url(gw, f"#token={TOKEN}"))
                    page.wait_for_selector("#conn-state[data-state=online]")
                    page.wait_for_selector("#runs tr.status-queued")
                    page.wait_for_selector("#sessions li[data-key='agent:main:held']")
                    seen: dict[str, Any] = {
                        "runs": page.inner_text("#runs"),
                        "runs_count": page.inner_text("#runs-count"),
                        "main_lane": page.inner_text(".lane[data-lane=main] .lane-num"),
                    }
                    page.fill("#session-search", "finish")
                    page.wait_for_selector(
                        "#sessions li[data-key='agent:main:held']", state="detached"
                    )
                    seen["found"] = page.eval_on_selector_all(
                        "#sessions li", "items => items.map(li => li.dataset.key)"
                    )
                    return seen

                seen = await in_browser(tmp_path, script)
                await client.request(
                    "chat.abort", {"sessionKey": "agent:main:held", "runId": "held"}
                )
                for run_id in ("waits", "queued"):
                    await client.request("agent.wait", {"runId": run_id, "timeoutMs": 20_000})
    assert "held" in seen["runs"] and "queued" in seen["runs"] and "running" in seen["runs"]
    assert seen["runs_count"] == "3 (2 queued)"
    assert seen["main_lane"] == "1/1 · 1 waiting"
    assert seen["found"] == ["agent:main:finished"]


async def test_a_wrong_token_asks_for_the_right_one(tmp_path: Path) -> None:
    async with running_gateway(tmp_path, token=TOKEN) as gw:

        def script(page: Any) -> dict[str, Any]:
            page.goto(page_url(gw, "#token=wrong"))
            page.wait_for_selector("#conn-state[data-state=auth]")
            seen = {"panel": page.is_visible("#token-panel")}
            page.fill("#token-input", TOKEN)
            page.click("#token-form button")
            page.wait_for_selector("#conn-state[data-state=online]")
            seen["panel_after"] = page.is_visible("#token-panel")
            return seen

        with trio.fail_after(90):
            seen = await in_browser(tmp_path, script)
    assert seen == {"panel": True, "panel_after": False}


async def test_the_page_embeds_no_secret_and_forbids_framing(tmp_path: Path) -> None:
    import httpx

    async with running_gateway(tmp_path, token=TOKEN) as gw:
        with trio.fail_after(10):
            async with httpx.AsyncClient() as http:
                res = await http.get(page_url(gw))
                script = await http.get(page_url(gw) + "dashboard/app.js")
    assert res.status_code == 200 and res.headers["content-type"] == "text/html; charset=utf-8"
    assert TOKEN not in res.text and TOKEN not in script.text
    csp = res.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert res.headers["x-frame-options"] == "DENY"
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
