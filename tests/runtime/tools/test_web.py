"""web_fetch against a real HTTP server on loopback (allowed by name, as OpenClaw's
ssrfPolicy.allowedHostnames allows it), the SSRF guard refusing loopback and private targets
by default, the redirect, size and time limits, the cache; web_search unavailable."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import jsonschema
import pytest
import trio

from runtime.llm._types import TextContent
from runtime.tools import (
    EgressBlockedError,
    EgressPolicy,
    WebFetchSettings,
    WebFetchTool,
    WebSearchTool,
)
from runtime.tools._egress import check_addresses, check_hostname
from runtime.tools._tool import ToolContext, ToolResult, invoke_tool
from tests._page_server import Page, page_server

ARTICLE = b"""<!doctype html><html><head><title>A page</title>
<script>var scriptValue = 1;</script></head>
<body><nav>navMenu</nav><article><h1>Hello web</h1><p>Some <b>bold</b> text and a
<a href="/next">link</a>.</p><ul><li>one</li><li>two</li></ul></article></body></html>"""


_INT0: dict[str, Any] = {"type": "integer", "minimum": 0}
# OpenClaw 2026.9.6's WebFetchOutputSchema (dist/openclaw-tools-*.mjs), as JSON Schema.
WEB_FETCH_OUTPUT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "url",
        "finalUrl",
        "status",
        "extractMode",
        "extractor",
        "externalContent",
        "truncated",
        "length",
        "rawLength",
        "fetchedAt",
        "tookMs",
        "text",
    ],
    "properties": {
        "url": {"type": "string"},
        "finalUrl": {"type": "string"},
        "status": _INT0,
        "contentType": {"type": "string"},
        "title": {"type": "string"},
        "extractMode": {"enum": ["markdown", "text"]},
        "extractor": {"type": "string"},
        "externalContent": {
            "type": "object",
            "additionalProperties": False,
            "required": ["untrusted", "source", "wrapped"],
            "properties": {
                "untrusted": {"const": True},
                "source": {"const": "web_fetch"},
                "wrapped": {"const": True},
                "provider": {"type": "string"},
            },
        },
        "truncated": {"type": "boolean"},
        "length": _INT0,
        "rawLength": _INT0,
        "fetchedAt": {"type": "string"},
        "tookMs": _INT0,
        "text": {"type": "string"},
        "warning": {"type": "string"},
        "cached": {"const": True},
    },
}


def _text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def trusting(**settings: Any) -> WebFetchTool:
    egress = EgressPolicy(allowed_hostnames=["127.0.0.1", "localhost"])
    return WebFetchTool(WebFetchSettings(egress=egress, **settings))


async def fetch(tool: WebFetchTool, ctx: ToolContext, **args: Any) -> ToolResult:
    with trio.fail_after(10):
        return await invoke_tool(tool, args, ctx)


async def test_a_page_becomes_readable_markdown_with_openclaws_fields(ctx: ToolContext) -> None:
    async with page_server({"/a": Page(ARTICLE)}) as server:
        result = await fetch(trusting(), ctx, url=server.url("/a"))
        as_text = await fetch(trusting(), ctx, url=server.url("/a"), extractMode="text")
    assert not result.is_error, _text(result)
    payload = json.loads(_text(result))
    assert payload == result.details
    jsonschema.validate(payload, WEB_FETCH_OUTPUT)
    assert payload["url"] == payload["finalUrl"] == server.url("/a")
    assert payload["status"] == 200 and payload["contentType"] == "text/html"
    assert payload["extractMode"] == "markdown" and payload["extractor"] == "html"
    assert payload["externalContent"] == {"untrusted": True, "source": "web_fetch", "wrapped": True}
    assert payload["truncated"] is False and "A page" in payload["title"]
    body = payload["text"]
    assert body.startswith("SECURITY NOTICE") and "EXTERNAL_UNTRUSTED_CONTENT" in body
    assert "# Hello web" in body and "**bold**" in body
    assert f"[link]({server.url('/next')})" in body and "- one" in body
    assert "scriptValue" not in body and "navMenu" not in body
    assert payload["length"] == len(body) and isinstance(payload["tookMs"], int)
    text = json.loads(_text(as_text))["text"]
    assert "Hello web" in text and "**" not in text and "](" not in text


async def test_json_and_markdown_are_kept_and_binary_is_refused(ctx: ToolContext) -> None:
    pages = {
        "/j": Page(b'{"a": [1, 2]}', content_type="application/json"),
        "/m": Page(b"# Title\n\ntext", content_type="text/markdown"),
        "/bin": Page(b"\x89PNG....", content_type="image/png"),
    }
    async with page_server(pages) as server:
        j = await fetch(trusting(), ctx, url=server.url("/j"))
        m = await fetch(trusting(), ctx, url=server.url("/m"))
        b = await fetch(trusting(), ctx, url=server.url("/bin"))
    assert json.loads(_text(j))["extractor"] == "json"
    assert '"a": [\n    1,' in json.loads(_text(j))["text"]
    assert json.loads(_text(m))["extractor"] == "markdown"
    assert b.is_error and "image/png" in _text(b)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "[::1]", "2130706433", "127.1", "0.0.0.0", "x.localhost"]
)
async def test_loopback_is_refused_by_default_before_anything_is_sent(
    ctx: ToolContext, host: str
) -> None:
    async with page_server({"/a": Page(ARTICLE)}) as server:
        result = await fetch(WebFetchTool(), ctx, url=server.url("/a", host=host))
    assert result.is_error and "refused" in _text(result) and "Blocked" in _text(result)
    assert server.hits["/a"] == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00::1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://metadata.google.internal/",
        "http://printer.local/",
    ],
)
async def test_private_and_metadata_targets_are_refused(ctx: ToolContext, url: str) -> None:
    result = await fetch(WebFetchTool(), ctx, url=url)
    assert result.is_error and f"web_fetch refused {url}" in _text(result)


def test_the_guard_judges_names_and_every_resolved_address() -> None:
    policy = EgressPolicy(allowed_hostnames=["intranet.example"], blocked_hostnames=["*.bad.io"])
    assert check_hostname("Example.COM.", policy) == "example.com"
    with pytest.raises(EgressBlockedError, match="blockedHostnames"):
        check_hostname("x.bad.io", policy)
    public, private = ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.0.0.1")
    check_addresses("example.com", [public], policy)
    with pytest.raises(EgressBlockedError, match="resolves to private"):
        check_addresses("example.com", [public, private], policy)  # one bad answer is enough
    check_addresses("intranet.example", [private], policy)  # allowed by name
    for never in ("169.254.169.254", "127.0.0.1", "0.0.0.0"):
        with pytest.raises(EgressBlockedError):
            check_addresses("intranet.example", [ipaddress.ip_address(never)], policy)


async def test_redirects_are_followed_up_to_the_cap(ctx: ToolContext) -> None:
    async with page_server() as server:
        ok = await fetch(trusting(max_redirects=3), ctx, url=server.url("/hop/3"))
        too_many = await fetch(trusting(max_redirects=3), ctx, url=server.url("/hop/4"))
        none = await fetch(trusting(max_redirects=0), ctx, url=server.url("/hop/1"))
    payload = json.loads(_text(ok))
    assert payload["finalUrl"] == server.url("/hop/0") and "the end of the hops" in payload["text"]
    assert too_many.is_error and "too many redirects (limit 3)" in _text(too_many)
    assert none.is_error and "limit 0" in _text(none)
    assert server.hits["/hop/0"] == 1


async def test_a_redirect_to_loopback_is_refused(ctx: ToolContext) -> None:
    """A trusted host may not hand the fetch on to an untrusted one."""
    async with page_server() as server:
        back = server.url("/hop/0", host="localhost")
        pages = {"/go": Page(b"", status=302, headers=(("location", back),))}
        server.pages.update(pages)
        egress = EgressPolicy(allowed_hostnames=["127.0.0.1"])
        result = await fetch(
            WebFetchTool(WebFetchSettings(egress=egress)), ctx, url=server.url("/go")
        )
    assert result.is_error and "Blocked" in _text(result) and server.hits["/hop/0"] == 0


async def test_the_body_is_read_up_to_the_size_cap_and_the_text_to_max_chars(
    ctx: ToolContext,
) -> None:
    big = b"<html><body><p>" + b"word " * 20_000 + b"</p></body></html>"
    async with page_server({"/big": Page(big)}) as server:
        capped = await fetch(trusting(max_response_bytes=32_000), ctx, url=server.url("/big"))
        short = await fetch(trusting(), ctx, url=server.url("/big"), maxChars=1000)
    payload = json.loads(_text(capped))
    jsonschema.validate(payload, WEB_FETCH_OUTPUT)
    assert (
        payload["truncated"] is True
        and "Response body incomplete after 32000 bytes" in (payload["warning"])
    )
    assert payload["length"] <= 20_000
    small = json.loads(_text(short))
    assert small["truncated"] is True and small["length"] <= 1000
    assert small["text"].rstrip().endswith('">>>')


async def test_a_slow_server_times_out(ctx: ToolContext) -> None:
    async with page_server() as server:
        result = await fetch(trusting(timeout_seconds=0.5), ctx, url=server.url("/stall"))
    assert result.is_error and "timed out after 0.5 s" in _text(result)
    assert server.stalled.is_set()


async def test_results_are_cached_for_the_ttl(ctx: ToolContext) -> None:
    async with page_server({"/a": Page(ARTICLE)}) as server:
        tool = trusting()
        first = json.loads(_text(await fetch(tool, ctx, url=server.url("/a"))))
        second = json.loads(_text(await fetch(tool, ctx, url=server.url("/a"))))
        other_mode = await fetch(tool, ctx, url=server.url("/a"), extractMode="text")
        uncached = trusting(cache_ttl_minutes=0)
        await fetch(uncached, ctx, url=server.url("/a"))
        await fetch(uncached, ctx, url=server.url("/a"))
    assert "cached" not in first and second["cached"] is True
    jsonschema.validate(second, WEB_FETCH_OUTPUT)
    assert not other_mode.is_error
    assert server.hits["/a"] == 4  # first, the text mode, and both uncached calls


async def test_errors_the_model_can_read(ctx: ToolContext) -> None:
    async with page_server() as server:
        missing = await fetch(trusting(), ctx, url=server.url("/nope"))
    assert missing.is_error and "Web fetch failed (404)" in _text(missing)
    assert "Not here" in _text(missing)
    bad = await fetch(trusting(), ctx, url="ftp://example.com/x")
    assert bad.is_error and "must be http or https" in _text(bad)
    small = await invoke_tool(trusting(), {"url": "http://example.com", "maxChars": 5}, ctx)
    assert small.is_error and "maxChars" in _text(small)


async def test_web_search_is_unavailable_and_says_what_to_configure(ctx: ToolContext) -> None:
    result = await invoke_tool(WebSearchTool(), {"query": "trio"}, ctx)
    assert result.is_error and "tools.web.search.provider" in _text(result)
    named = await invoke_tool(WebSearchTool("brave"), {"query": "trio", "count": 3}, ctx)
    assert "'brave'" in _text(named) and "not available in clawlane" in _text(named)
    assert "tools.web.search.enabled: false" in _text(named)
