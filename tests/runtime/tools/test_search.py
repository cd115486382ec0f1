"""Tool Search as OpenClaw 2026.9.6 has it: `tools.toolSearch` read as OpenClaw reads it, the
tools split into the direct surface and the catalog, the ranking, the compact signatures, the
directory for the system prompt, and the control tools' results."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from runtime.tools import (
    ToolCatalog,
    ToolContext,
    ToolSearchError,
    ToolSearchSettings,
    ToolSurface,
    WebSettings,
    builtin_tools,
    call_target,
    invoke_tool,
    serves_locally,
    tool_search_settings,
)
from runtime.tools._search_rank import input_signature, tokenize


class _WeatherParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    city: str
    days: int | None = None


class _Plugin:
    """A plugin tool, as a plugin registers one."""

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description
        self.params = _WeatherParams
        self.mutating = False

    async def run(self, args: Any, ctx: ToolContext) -> Any:
        raise AssertionError("not run here")


_ON = ToolSearchSettings()


def _surface(settings: ToolSearchSettings | None = _ON) -> ToolSurface:
    tools = [*builtin_tools(WebSettings()), _Plugin("weather", "Current weather and forecast")]
    return ToolSurface.of(tools, settings, owners={"weather": "weatherplug"})


def _catalog() -> ToolCatalog:
    catalog = _surface().catalog
    assert catalog is not None
    return catalog


# --- tools.toolSearch -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (None, ToolSearchSettings()),  # unset: on, structured tools
        (True, ToolSearchSettings()),  # code mode: no bridge here, runs as tools
        (False, None),
        ({}, None),  # an object with nothing but... nothing: off, as OpenClaw reads it
        ({"enabled": False, "mode": "tools"}, None),
        ({"mode": "code"}, ToolSearchSettings()),
        ({"mode": "directory"}, ToolSearchSettings(mode="directory")),
        ({"enabled": True, "searchDefaultLimit": 3}, ToolSearchSettings(search_default_limit=3)),
        (
            {"mode": "tools", "maxSearchLimit": 99, "searchDefaultLimit": 70},
            ToolSearchSettings(search_default_limit=50, max_search_limit=50),
        ),
    ],
)
def test_tool_search_settings_are_read_as_openclaw_reads_them(
    setting: Any, expected: ToolSearchSettings | None
) -> None:
    assert tool_search_settings(setting) == expected


@pytest.mark.parametrize(
    ("provider", "model", "base_url", "local"),
    [
        ("ollama", "llama3.2", "http://127.0.0.1:11434", True),
        ("Ollama", "my-cloud", None, True),  # no source suffix: the daemon's model
        ("ollama", "gpt-oss:120b-cloud", None, False),  # hosted routes keep the general limits
        ("ollama", "qwen3:cloud", None, False),
        ("ollama", "llama3.2", "https://ollama.com", False),
        ("lmstudio", "qwen", "http://10.0.0.5:1234/v1", True),
        ("openai", "gpt-4.1", "http://127.0.0.1:8080/v1", False),  # loopback alone is not local
        ("ollama-cloud", "llama3.2", None, False),
    ],
)
def test_the_models_served_locally_are_openclaws(
    provider: str, model: str, base_url: str | None, local: bool
) -> None:
    assert serves_locally(provider, model, base_url) is local


def test_a_local_model_searches_with_smaller_limits_unless_the_config_says() -> None:
    assert tool_search_settings(None, local=True) == ToolSearchSettings(
        search_default_limit=5, max_search_limit=10
    )
    assert tool_search_settings({"maxSearchLimit": 30}, local=True) == ToolSearchSettings(
        max_search_limit=30
    )
    assert tool_search_settings(False, local=True) is None


# --- the surface ------------------------------------------------------------------------------


def test_the_core_coding_tools_and_the_controls_are_direct_the_rest_deferred() -> None:
    surface = _surface()
    names = [t.name for t in surface.direct]
    assert names == [
        "tool_search",
        "tool_describe",
        "tool_call",
        "ls",
        "read",
        "write",
        "edit",
        "apply_patch",
        "exec",
    ]
    catalog = surface.catalog
    assert catalog is not None
    deferred = sorted(e.name for e in catalog.entries if not e.direct)
    assert deferred == ["message", "weather", "web_fetch", "web_search"]
    # the direct ones stay searchable; ids name their owner
    assert catalog.find("read").direct and catalog.find("read").id == "openclaw:core:read"
    assert catalog.find("weather").id == "openclaw:weatherplug:weather"


def test_without_tool_search_every_tool_is_direct_and_nothing_is_deferred() -> None:
    surface = _surface(None)
    assert surface.catalog is None
    assert "web_fetch" in [t.name for t in surface.direct]
    assert "tool_search" not in [t.name for t in surface.direct]


def test_an_empty_catalog_offers_no_controls() -> None:
    surface = ToolSurface.of([], ToolSearchSettings())
    assert surface.direct == () and surface.catalog is None


def test_direct_only_tools_are_never_cataloged() -> None:
    yielder = _Plugin("sessions_yield", "End this turn")
    surface = ToolSurface.of([yielder, _Plugin("weather", "Weather")], ToolSearchSettings())
    assert [t.name for t in surface.direct][-1] == "sessions_yield"
    assert surface.catalog is not None
    assert [e.name for e in surface.catalog.entries] == ["weather"]


def test_a_plugin_tool_named_like_a_core_coding_tool_is_deferred() -> None:
    surface = ToolSurface.of(
        [_Plugin("read", "Read a feed")], ToolSearchSettings(), owners={"read": "rss"}
    )
    assert [t.name for t in surface.direct] == ["tool_search", "tool_describe", "tool_call"]


# --- ranking and signatures ------------------------------------------------------------------


def test_light_stemming_meets_inflections_and_splits_compound_names() -> None:
    assert tokenize("scheduling")[0] == tokenize("schedule")[0]
    assert tokenize("running") == ["run"] and tokenize("stopping") == ["stop"]
    assert tokenize("news") == ["news"]  # not a plural
    assert tokenize("web_fetch") == ["web_fetch", "web", "fetch"]


def test_search_ranks_by_meaning_words_and_an_exact_name_first() -> None:
    catalog = _catalog()
    assert catalog.search("fetch this url", 3)[0]["name"] == "web_fetch"
    assert catalog.search("look up the latest news", 2)[0]["name"] == "web_search"
    assert catalog.search("weather forecast for Paris", 1)[0]["name"] == "weather"
    assert catalog.search("message", 1)[0]["name"] == "message"
    assert catalog.search("", 5) == []
    hit = catalog.search("weather", 1)[0]
    assert hit == {
        "id": "openclaw:weatherplug:weather",
        "source": "openclaw",
        "sourceName": "weatherplug",
        "name": "weather",
        "label": "Weather",
        "description": "Current weather and forecast",
        "input": "{ city: string; days?: number /* integer */ }",
    }


def test_input_signatures_are_compact_and_unknown_when_they_cannot_be_rendered() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert input_signature(schema) == (
        '{ path: string; limit?: number /* integer, >= 1 */; mode?: "a" | "b"; '
        "tags?: Array<string> }"
    )
    assert input_signature("nope") == "unknown"
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(40)}}
    assert input_signature(many).endswith("; ... }")


# --- the directory ---------------------------------------------------------------------------


def test_the_directory_lists_the_deferred_tools_sorted_with_openclaws_guidance() -> None:
    directory = _catalog().directory
    lines = directory.splitlines()
    assert lines[0] == "Available deferred-schema tools:"
    assert [line.split(" ")[1] for line in lines[1:5]] == [
        "message",
        "weather",
        "web_fetch",
        "web_search",
    ]
    assert lines[2].startswith("- weather (weatherplug): Current weather")
    assert "read" not in [line.split(" ")[1] for line in lines[1:] if line.startswith("- ")]
    assert "Deferred names are not directly callable. Call tool_call" in lines[-1]
    directory_mode = ToolSurface.of(
        [_Plugin("weather", "Weather")], ToolSearchSettings(mode="directory")
    ).catalog
    assert directory_mode is not None
    assert "Call a unique deferred tool name directly" in directory_mode.directory


def test_a_long_directory_shortens_descriptions_then_drops_rows() -> None:
    tools = [_Plugin(f"tool_{i:03}", "does a thing " * 30) for i in range(1200)]
    catalog = ToolSurface.of(tools, ToolSearchSettings()).catalog
    assert catalog is not None
    assert len(catalog.directory) <= 18_000
    assert "additional tools omitted." in catalog.directory
    assert "- tool_000 (core)\n" in catalog.directory  # no description left


# --- the control tools -----------------------------------------------------------------------


def _tool(name: str) -> Any:
    return next(t for t in _surface().direct if t.name == name)


async def test_tool_search_answers_one_query_or_a_batch(ctx: ToolContext) -> None:
    search = _tool("tool_search")
    one = await invoke_tool(search, {"query": "weather", "limit": 1}, ctx)
    assert not one.is_error
    assert [h["name"] for h in json.loads(one.content[0].text)] == ["weather"]  # type: ignore[union-attr]
    batch = await invoke_tool(
        search, {"queries": [{"query": "fetch a page", "limit": 1}, {"query": "send"}]}, ctx
    )
    payload = json.loads(batch.content[0].text)  # type: ignore[union-attr]
    assert [g["query"] for g in payload["results"]] == ["fetch a page", "send"]
    assert payload["results"][0]["candidates"][0]["name"] == "web_fetch"
    assert all(len(c["description"]) <= 180 for g in payload["results"] for c in g["candidates"])
    bad = await invoke_tool(search, {"queries": [{"query": "x"}], "limit": 2}, ctx)
    assert bad.is_error and "set limit on each batch query" in bad.content[0].text  # type: ignore[union-attr]
    nothing = await invoke_tool(search, {}, ctx)
    assert nothing.is_error and "provide query or queries" in nothing.content[0].text  # type: ignore[union-attr]


async def test_tool_describe_gives_the_full_schema_and_unknown_ids_suggest(
    ctx: ToolContext,
) -> None:
    describe = _tool("tool_describe")
    result = await invoke_tool(describe, {"id": "weather"}, ctx)
    described = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert described["parameters"]["required"] == ["city"]
    assert described["id"] == "openclaw:weatherplug:weather"
    unknown = await invoke_tool(describe, {"id": "wether forecast"}, ctx)
    text = unknown.content[0].text  # type: ignore[union-attr]
    assert unknown.is_error and "Unknown tool id: wether forecast." in text
    assert "Did you mean: weather" in text and "tool_call with the exact id or name" in text


def test_call_target_reads_nested_and_flattened_arguments_as_openclaw_repairs_them() -> None:
    catalog = _catalog()
    entry, args = call_target({"id": "weather", "args": {"city": "Oslo"}}, catalog)
    assert entry.name == "weather" and args == {"city": "Oslo"}
    entry, args = call_target({"name": "openclaw:weatherplug:weather", "city": "Oslo"}, catalog)
    assert entry.name == "weather" and args == {"city": "Oslo"}
    entry, args = call_target({"id": "web_fetch", "args": {}, "url": "http://x"}, catalog)
    assert entry.name == "web_fetch" and args == {"url": "http://x"}
    with pytest.raises(ToolSearchError, match="Ambiguous tool selectors"):
        call_target({"id": "weather", "name": "message"}, catalog)
    with pytest.raises(ToolSearchError, match="id must be a non-empty string"):
        call_target({"args": {"city": "Oslo"}}, catalog)
