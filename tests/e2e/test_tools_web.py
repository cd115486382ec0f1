"""web_fetch and web_search over a real gateway, driven by the `local` model's directives:
a page from a loopback server the test starts, reachable only when the config names its host
(`tools.web.fetch.ssrfPolicy.allowedHostnames`, as OpenClaw's), refused otherwise; the
redirect and size limits from the config; web_search an error naming what to configure. Failures
come as OpenClaw's agent answers its web tools throwing: the thrown-tool result, the message
wrapped as untrusted `Source: API` content (compared with what its peer gateway answered,
tests/data/openclaw-web-fetch-errors-2026.9.6.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trio

from tests._page_server import Page, page_server
from tests._thrown import thrown
from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events

PAGE = b"<html><head><title>Local page</title></head><body><main><h2>Served here</h2>"
PAGE += b"<p>Loopback text.</p></main></body></html>"


def tool_results(events: Events, run_id: str) -> list[dict[str, Any]]:
    return [
        p["data"]
        for p in run_events(events, run_id, "tool")
        if p["data"]["phase"] == "result" and p["data"]["name"] != "tool_call"
    ]


def directive(name: str, args: dict[str, Any]) -> str:
    return f"[[tool:{name} {json.dumps(args)}]]"


def result_text(data: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in data["result"]["content"])


OBSERVED: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "data/openclaw-web-fetch-errors-2026.9.6.json").read_text()
)["errors"]


def thrown_error(data: dict[str, Any]) -> str:
    """The error of a tool event's thrown-tool result, marker ids masked."""
    message = thrown({**data["result"], "isError": data["isError"]}, data["name"])
    return re.sub(r'id="[0-9a-f]{16}"', 'id="<id>"', message)


async def run(gw: Any, message: str, run_id: str) -> tuple[Events, dict[str, Any]]:
    events, on_event = recorder_events()
    with trio.fail_after(20):
        async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
            final = await client.request(
                "agent", {"message": message, "idempotencyKey": run_id}, expect_final=True
            )
    return events, final


async def test_web_fetch_reads_a_page_from_an_allowed_host(tmp_path: Path) -> None:
    fetch = {
        "ssrfPolicy": {"allowedHostnames": ["127.0.0.1"]},
        "maxRedirects": 1,
        "maxResponseBytes": 32_000,
    }
    big = Page(b"<html><body><p>" + b"many words " * 10_000 + b"</p></body></html>")
    async with (
        page_server({"/page": Page(PAGE), "/big": big}) as server,
        running_gateway(tmp_path, local_config(tools__web={"fetch": fetch})) as gw,
    ):
        message = " ".join(
            [
                directive("web_fetch", {"url": server.url("/page")}),
                directive("web_fetch", {"url": server.url("/hop/2")}),
                directive("web_fetch", {"url": server.url("/big"), "maxChars": 5000}),
                directive("web_search", {"query": "clawlane"}),
            ]
        )
        events, final = await run(gw, message, "web")
    page, hops, large, search = tool_results(events, "web")
    assert [d["name"] for d in (page, hops, large, search)] == ["web_fetch"] * 3 + ["web_search"]
    assert page["isError"] is False
    payload = json.loads(result_text(page))
    assert payload["status"] == 200 and payload["finalUrl"] == server.url("/page")
    assert "## Served here" in payload["text"] and "Loopback text." in payload["text"]
    assert page["result"]["details"]["extractor"] == "html"
    too_many = OBSERVED["too_many_redirects"]["error"].replace("(limit: 3)", "(limit: 1)")
    assert thrown_error(hops) == too_many
    sized = json.loads(result_text(large))
    assert sized["truncated"] is True and sized["length"] <= 5000
    assert "Response body incomplete after 32000 bytes" in sized["warning"]
    assert "tools.web.search.provider" in thrown_error(search)
    assert "\nSource: API\n---\nweb_search is unavailable: " in thrown_error(search)
    assert server.hits["/page"] == 1
    assert final["result"]["payloads"][0]["text"].startswith("Tool results: web_fetch:")


async def test_web_fetch_refuses_loopback_unless_configured(tmp_path: Path) -> None:
    async with page_server({"/page": Page(PAGE)}) as server, running_gateway(tmp_path) as gw:
        message = " ".join(
            directive("web_fetch", {"url": server.url("/page", host=host)})
            for host in ("127.0.0.1", "localhost")
        )
        events, _final = await run(gw, message, "refused")
    results = tool_results(events, "refused")
    assert [d["isError"] for d in results] == [True, True]
    for data in results:
        assert thrown_error(data) == OBSERVED["loopback_literal"]["error"]
    assert server.hits["/page"] == 0


async def test_web_tools_can_be_switched_off(tmp_path: Path) -> None:
    web = {"fetch": {"enabled": False}, "search": {"enabled": False}}
    async with running_gateway(tmp_path, local_config(tools__web=web)) as gw:
        message = directive("web_fetch", {"url": "https://example.com/"})
        _events, final = await run(gw, message, "off")
    assert "not available" in final["result"]["payloads"][0]["text"]
