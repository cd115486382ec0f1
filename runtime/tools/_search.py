"""OpenClaw's Tool Search: most tool schemas deferred behind `tool_search`, `tool_describe`
and `tool_call`, as OpenClaw 2026.9.6 offers them by default.

`tools.toolSearch` (global only, as OpenClaw's), read by `tool_search_settings`:

- unset: on, mode `tools`; `false` (or an object with `enabled: false`, or an empty object):
  off, every permitted schema offered directly;
- `true`, or an object without `mode`: OpenClaw's `code` mode (a JavaScript bridge in a Node
  subprocess), which clawlane does not have: it runs as `tools`, as OpenClaw falls back when
  it cannot start that subprocess;
- `{mode: "directory"}`: as `tools`, and a model may also call a deferred tool by its exact
  name directly;
- `searchDefaultLimit` (8) and `maxSearchLimit` (20, 1-50): how many hits a search returns.
  Unset, a run of a model served on the operator's own hardware gets OpenClaw's smaller
  local limits, 5 and 10 (`serves_locally`: LM Studio, and Ollama but for its hosted routes).

`ToolSurface.of` splits a run's permitted tools as OpenClaw does: the core coding tools
(`read`, `edit`, `ls`, `write`, `apply_patch`, `exec`, `process`) and the direct-only ones
(`sessions_yield`, `heartbeat_respond`, ...) stay offered directly; every tool but the
direct-only ones goes into the run's `ToolCatalog` (the direct ones too, marked so, so a
search still finds them); the three control tools are offered when the catalog is not empty.
The system prompt gets the catalog's `directory`: the deferred tools' names and one-line
descriptions, sorted, at most 18,000 characters (descriptions shortened first, then rows
dropped), with OpenClaw's guidance.

The control tools' results are OpenClaw's: `tool_search` returns the hits as a JSON array
of `{id, source, sourceName, name, label, description, input}` (`input`: a compact signature,
`_search_rank.input_signature`), or `{results: [{query, candidates}]}` for a batch;
`tool_describe` the entry with its full `parameters`; `tool_call` runs the target through
the run's tool runner (policy, hooks, approvals, the exec policy: `runtime.loop`) and returns
`{tool: {id, name, source}, result}`. Catalog ids are `openclaw:<owner>:<name>` (`core`, or
the plugin's id). Pure data and small tools; nothing here blocks.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal

import msgspec
from attrs import field, frozen

from ._errors import ToolError
from ._search_rank import LexicalIndex, input_signature, parameter_text
from ._tool import Tool, ToolContext, ToolResult, text_result, tool_spec

__all__ = [
    "CONTROL_TOOLS",
    "DIRECT_ONLY_TOOLS",
    "DIRECT_TOOLS",
    "CatalogEntry",
    "ToolCatalog",
    "ToolSearchError",
    "ToolSearchSettings",
    "ToolSurface",
    "call_target",
    "tool_search_settings",
]

DIRECT_TOOLS: Final = frozenset({"read", "edit", "ls", "write", "apply_patch", "exec", "process"})
"""OpenClaw's core coding surface: always offered directly (and searchable)."""

DIRECT_ONLY_TOOLS: Final = frozenset(
    {"sessions_yield", "heartbeat_respond", "structured_output", "openclaw", "computer"}
)
"""OpenClaw's `catalogMode: "direct-only"` tools: offered directly, never in the catalog."""

CONTROL_TOOLS: Final = ("tool_search", "tool_describe", "tool_call")

_DEFAULT_LIMIT: Final = 8
_MAX_LIMIT: Final = 20
_LOCAL_DEFAULT_LIMIT: Final = 5
_LOCAL_MAX_LIMIT: Final = 10
_DIRECTORY_MAX_CHARS: Final = 18_000
_BATCH_MAX_CHARS: Final = 4_000
_SELECTORS: Final = ("id", "toolId", "name")


class ToolSearchError(ToolError):
    """A Tool Search call the model got wrong (unknown id, bad query): its message is the
    error result the model reads."""


@frozen
class ToolSearchSettings:
    """What `tools.toolSearch` asks for (see the module docstring)."""

    mode: Literal["tools", "directory"] = "tools"
    search_default_limit: int = _DEFAULT_LIMIT
    max_search_limit: int = _MAX_LIMIT


def _positive(value: Any, fallback: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else fallback
    )


def serves_locally(provider: str, model_id: str, base_url: str | None) -> bool:
    """Whether OpenClaw gives a run of this model Tool Search's local limits (its LM Studio and
    Ollama provider policies): an `lmstudio` provider always; an `ollama` one unless the
    route is hosted (a `:cloud` or `-cloud` model, or `https://ollama.com`). Nothing else is
    taken for local, a loopback URL or a model's name included."""
    name = provider.strip().lower()
    if name in ("lmstudio", "lm-studio"):
        return True
    if name != "ollama":
        return False
    _base, colon, source = model_id.strip().lower().rpartition(":")
    cloud = bool(colon) and (source == "cloud" or ("/" not in source and source.endswith("-cloud")))
    hosted = False
    if base_url is not None:
        parts = urllib.parse.urlsplit(base_url.strip())
        hosted = parts.scheme == "https" and parts.netloc.lower() in (
            "ollama.com",
            "ollama.com:443",
        )
    return not (cloud or hosted)


def tool_search_settings(
    setting: bool | Mapping[str, Any] | None, *, local: bool = False
) -> ToolSearchSettings | None:
    """`tools.toolSearch` as settings; None: off (every schema offered directly). `local`:
    the run's model `serves_locally` (its limits apply while the setting is unset)."""
    if setting is None and local:
        return ToolSearchSettings("tools", _LOCAL_DEFAULT_LIMIT, _LOCAL_MAX_LIMIT)
    if setting is None or setting is True:
        return ToolSearchSettings()
    if setting is False:
        return None
    raw = {k: v for k, v in setting.items() if v is not None}
    enabled = raw.get("enabled")
    if not (enabled if isinstance(enabled, bool) else any(k != "enabled" for k in raw)):
        return None
    most = max(1, min(50, _positive(raw.get("maxSearchLimit"), _MAX_LIMIT)))
    default = max(1, min(most, _positive(raw.get("searchDefaultLimit"), _DEFAULT_LIMIT)))
    mode: Literal["tools", "directory"] = "directory" if raw.get("mode") == "directory" else "tools"
    return ToolSearchSettings(mode, default, most)


# --- the catalog -----------------------------------------------------------------------------


@frozen(eq=False)
class CatalogEntry:
    """One tool a run may find and call through Tool Search."""

    id: str
    name: str
    source_name: str
    description: str
    parameters: dict[str, Any]
    direct: bool
    tool: Tool

    def compact(self) -> dict[str, Any]:
        """The search hit OpenClaw returns for it."""
        return {
            "id": self.id,
            "source": "openclaw",
            "sourceName": self.source_name,
            "name": self.name,
            "label": _label(self.name),
            "description": self.description,
            "input": input_signature(self.parameters),
        }

    def described(self) -> dict[str, Any]:
        """What `tool_describe` returns: the hit and its full input schema."""
        return {**self.compact(), "parameters": self.parameters}


def _label(name: str) -> str:
    """A tool's display label as OpenClaw's read (`web_fetch` → `Web Fetch`)."""
    return " ".join(word[:1].upper() + word[1:] for word in name.split("_") if word)


def _entry_text(entry: CatalogEntry) -> str:
    return " ".join(
        part
        for part in (entry.name, entry.id, entry.description, parameter_text(entry.parameters))
        if part
    )


@frozen(eq=False)
class ToolCatalog:
    """A run's searchable tools (the same for every run of one `ToolSet`)."""

    entries: tuple[CatalogEntry, ...]
    settings: ToolSearchSettings
    index: LexicalIndex[CatalogEntry] = field(init=False)
    directory: str = field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(
            self, "index", LexicalIndex.build((e, _entry_text(e)) for e in self.entries)
        )
        object.__setattr__(self, "directory", _directory(self.entries, self.settings.mode))

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        """The best `limit` hits for `query`: an exact id or name first, then by rank."""
        spelled = query.strip()
        exact = [e for e in self.entries if e.id == spelled]
        if not exact:
            lowered = spelled.lower()
            exact = [e for e in self.entries if lowered in (e.name.lower(), e.id.lower())]
        ranked = [e for e, _score, _literal in self.index.rank(query) if e not in exact]
        return [e.compact() for e in [*exact, *ranked][:limit]]

    def find(self, needle: str) -> CatalogEntry:
        """The entry an id or a unique name names; raises `ToolSearchError` (with up to
        three suggestions) for anything else."""
        needle = needle.strip()
        for entry in self.entries:
            if entry.id == needle:
                return entry
        named = [e for e in self.entries if e.name == needle]
        if len(named) > 1:
            raise ToolSearchError(f"Ambiguous tool name: {needle}; use an exact tool id.")
        if named:
            return named[0]
        hits = [e.name for e, _s, _l in self.index.rank(needle)][:3]
        hint = f" Did you mean: {', '.join(hits)}?" if hits else ""
        raise ToolSearchError(
            f"Unknown tool id: {needle}.{hint} Use tool_search to find a tool, tool_describe "
            "to inspect it, then tool_call with the exact id or name."
        )

    def deferred(self, name: str) -> CatalogEntry | None:
        """The deferred (not directly offered) entry called exactly `name`, if one is."""
        named = [e for e in self.entries if e.name == name]
        return named[0] if len(named) == 1 and not named[0].direct else None


def _directory(entries: Sequence[CatalogEntry], mode: str) -> str:
    """OpenClaw's bounded list of the deferred tools, for the system prompt."""
    deferred = sorted((e for e in entries if not e.direct), key=lambda e: (e.name, e.id))
    if not deferred:
        return "Available deferred-schema tools: none."
    width = 180

    def rows() -> list[str]:
        if width == 0:
            return [f"- {e.name} ({e.source_name})" for e in deferred]
        return [
            f"- {e.name} ({e.source_name}): {_shorten(e.description, width) or 'No description.'}"
            for e in deferred
        ]

    lines = rows()
    omitted = 0
    notice = "Policy-approved MCP and client tools may also be discoverable through search."
    while True:
        guidance = (
            "Use tool_search to find a tool and its input signature; use tool_describe when a "
            "full schema is needed."
            if omitted
            else "Use tool_search for a compact input signature or tool_describe for a full schema."
        )
        if mode == "directory":
            guidance += (
                " Call a unique deferred tool name directly, or use tool_call with its id and args."
            )
        else:
            guidance += (
                " Deferred names are not directly callable. Call tool_call with the result id or "
                "name in id and all tool parameters in args. Use this wrapper even when other "
                "guidance names a deferred tool directly."
            )
        footer = f"{omitted} additional tools omitted. {guidance}" if omitted else guidance
        text = "\n".join(["Available deferred-schema tools:", *lines, "", notice, footer])
        if len(text) <= _DIRECTORY_MAX_CHARS or not lines:
            return text
        if width:
            width = 64 if width == 180 else 0
            lines = rows()
            continue
        lines.pop()
        omitted += 1


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


@frozen(eq=False)
class ToolSurface:
    """What a run offers the model (`direct`, the control tools among them) and the catalog
    behind them (None: nothing deferred, every tool direct)."""

    direct: tuple[Tool, ...]
    catalog: ToolCatalog | None

    @classmethod
    def of(
        cls,
        tools: Sequence[Tool],
        settings: ToolSearchSettings | None,
        *,
        owners: Mapping[str, str] | None = None,
    ) -> ToolSurface:
        """Split the permitted `tools` (see the module docstring); `owners`: each plugin
        tool's plugin id (a tool without one is `core`)."""
        if settings is None:
            return cls(tuple(tools), None)
        owners = owners or {}
        direct: list[Tool] = []
        entries: list[CatalogEntry] = []
        for tool in tools:
            if tool.name in CONTROL_TOOLS:
                continue
            owner = owners.get(tool.name, "core")
            visible = tool.name in DIRECT_ONLY_TOOLS or (
                owner == "core" and tool.name in DIRECT_TOOLS
            )
            if visible:
                direct.append(tool)
            if tool.name in DIRECT_ONLY_TOOLS:
                continue
            entries.append(
                CatalogEntry(
                    id=f"openclaw:{owner}:{tool.name}",
                    name=tool.name,
                    source_name=owner,
                    description=tool.description,
                    parameters=tool_spec(tool).parameters,
                    direct=visible,
                    tool=tool,
                )
            )
        if not entries:
            return cls(tuple(direct), None)
        catalog = ToolCatalog(tuple(sorted(entries, key=lambda e: e.id)), settings)
        controls = (ToolSearchTool(catalog), ToolDescribeTool(catalog), ToolCallTool(catalog))
        return cls((*controls, *direct), catalog)


# --- the control tools -----------------------------------------------------------------------


class _Query(msgspec.Struct, frozen=True):
    query: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=512,
            description="Search query, in English. Describe the capability you need.",
        ),
    ]
    limit: (
        Annotated[
            int,
            msgspec.Meta(
                ge=1, description="Maximum results for this query. Defaults to 8 when omitted."
            ),
        ]
        | None
    ) = None


class ToolSearchParams(msgspec.Struct, frozen=True):
    query: (
        Annotated[
            str,
            msgspec.Meta(
                description="Single search query, in English. A non-empty query joins a "
                "non-empty batch first. Null or blank is ignored beside a non-empty batch."
            ),
        ]
        | None
    ) = None
    limit: (
        Annotated[
            int,
            msgspec.Meta(
                ge=1,
                description="Maximum number of single-search results. Omitted or null uses "
                "the default. With only batch queries, omit this or set it to null; set "
                "limits on each batch entry.",
            ),
        ]
        | None
    ) = None
    queries: (
        Annotated[
            list[_Query],
            msgspec.Meta(
                max_length=16,
                description="Independent searches. Prefer this alone for several searches; a "
                "non-empty query beside it runs as the first entry. Their effective limits may "
                "total at most 50; an omitted item limit counts as 8. The serialized query "
                "strings may use at most 512 UTF-8 bytes in total.",
            ),
        ]
        | None
    ) = None


class ToolDescribeParams(msgspec.Struct, frozen=True):
    id: Annotated[str, msgspec.Meta(description="Tool search result id or tool name.")]


class ToolCallParams(msgspec.Struct, frozen=True):
    id: Annotated[str, msgspec.Meta(description="Tool search result id or tool name.")]
    args: (
        Annotated[
            dict[str, Any],
            msgspec.Meta(
                description="Tool input.", extra_json_schema={"patternProperties": {"^.*$": {}}}
            ),
        ]
        | None
    ) = None


def _json_text(payload: Any, *, compact: bool = False) -> str:
    return json.dumps(payload, ensure_ascii=False, indent=None if compact else 2, default=str)


class ToolSearchTool:
    """`tool_search`: rank the catalog for one query or a batch of them."""

    name = "tool_search"
    params = ToolSearchParams
    mutating = False

    def __init__(self, catalog: ToolCatalog) -> None:
        self.catalog = catalog

    @property
    def description(self) -> str:
        return (
            "Search the effective Tool Search catalog. Pass query for one search or queries "
            "for several independent searches in one call; a non-empty query joins a non-empty "
            "batch first, with its own limit. Batch results stay grouped in request order. "
            "Queries must be in English: matching is lexical against tool names and "
            "descriptions, which are written in English, so another language will usually "
            "match nothing. Pass an exact result id or name to tool_call; use tool_describe "
            f"only when you need its input schema. Default limit: "
            f"{self.catalog.settings.search_default_limit}."
        )

    async def run(self, args: ToolSearchParams, ctx: ToolContext) -> ToolResult:
        settings = self.catalog.settings
        queries = list(args.queries or ())
        single = args.query if args.query is not None and args.query.strip() else None
        if not queries:
            if args.query is None:
                raise ToolSearchError("provide query or queries.")
            hits = self.catalog.search(args.query, self._limit(args.limit))
            return text_result(_json_text(hits), details={"results": hits})
        if single is None and args.limit is not None:
            raise ToolSearchError("set limit on each batch query, not on the batch request.")
        searches = [(q.query.strip(), self._limit(q.limit)) for q in queries]
        if single is not None:
            searches.insert(0, (single.strip(), self._limit(args.limit)))
        if len(searches) > 16:
            raise ToolSearchError("queries may contain at most 16 entries.")
        total = sum(limit for _q, limit in searches)
        if total > 50:
            raise ToolSearchError(
                f"batch queries resolve to {total} results, but may request at most 50 in "
                f"total. An omitted limit counts as {settings.search_default_limit}; set "
                "smaller per-query limits and retry."
            )
        if len(json.dumps([q for q, _l in searches], ensure_ascii=False).encode()) > 512:
            raise ToolSearchError("serialized batch query text may use at most 512 UTF-8 bytes.")
        groups = [
            {"query": q, "candidates": [_brief(h) for h in self.catalog.search(q, limit)]}
            for q, limit in searches
        ]
        payload = _bounded_batch(groups)
        return text_result(_json_text(payload), details=payload)

    def _limit(self, limit: int | None) -> int:
        settings = self.catalog.settings
        if limit is None:
            return settings.search_default_limit
        return min(limit, settings.max_search_limit)


def _brief(hit: dict[str, Any]) -> dict[str, Any]:
    """A batch hit with its description on one line of at most 180 characters."""
    return {**hit, "description": _shorten(hit["description"], 180)}


def _bounded_batch(groups: list[dict[str, Any]]) -> dict[str, Any]:
    """The batch answer within 4,000 characters: the lowest-ranked hits of the fullest
    group dropped first, each group that lost any marked `truncated`."""
    truncated = False
    while True:
        payload: dict[str, Any] = {"results": groups, **({"truncated": True} if truncated else {})}
        if len(_json_text(payload)) <= _BATCH_MAX_CHARS:
            return payload
        fullest = max(groups, key=lambda g: len(g["candidates"]))
        if not fullest["candidates"]:
            return payload
        fullest["candidates"].pop()
        fullest["truncated"] = truncated = True


class ToolDescribeTool:
    """`tool_describe`: one catalog entry with its full input schema."""

    name = "tool_describe"
    description = (
        "Load the full schema and metadata for one search result when its input is not "
        "already clear."
    )
    params = ToolDescribeParams
    mutating = False

    def __init__(self, catalog: ToolCatalog) -> None:
        self.catalog = catalog

    async def run(self, args: ToolDescribeParams, ctx: ToolContext) -> ToolResult:
        described = self.catalog.find(args.id).described()
        return text_result(_json_text(described), details=described)


class ToolCallTool:
    """`tool_call`: call a catalog entry by id or name. The run's tool runner routes these
    calls (`call_target`, then the target through its own policy and hooks); called any other
    way it refuses."""

    name = "tool_call"
    description = "Call an exact Tool Search result id or name through OpenClaw."
    params = ToolCallParams
    mutating = True

    def __init__(self, catalog: ToolCatalog) -> None:
        self.catalog = catalog

    async def run(self, args: ToolCallParams, ctx: ToolContext) -> ToolResult:
        return text_result("Tool Search catalog is unavailable for this run.", is_error=True)


def call_target(arguments: Mapping[str, Any], catalog: ToolCatalog) -> tuple[CatalogEntry, Any]:
    """The entry and the input a `tool_call`'s arguments name, repaired as OpenClaw repairs
    them: the input under `args` (or `input`), else the other top-level keys (a model that
    flattened them); the target under `id`, `toolId` or `name`. Raises `ToolSearchError`."""
    nested = arguments.get("args", arguments.get("input"))
    dotted = {k[5:]: v for k, v in arguments.items() if k.startswith("args.") and len(k) > 5}
    if nested is not None and not (isinstance(nested, dict) and not nested):
        target = next((arguments[k] for k in _SELECTORS if arguments.get(k) is not None), None)
        if not isinstance(target, str) or not target.strip():
            raise ToolSearchError("id must be a non-empty string.")
        payload = {**dotted, **nested} if isinstance(nested, dict) else nested
        return catalog.find(target), payload
    matching = [
        (key, entry)
        for key in _SELECTORS
        if isinstance(arguments.get(key), str)
        for entry in catalog.entries
        if arguments[key] in (entry.id, entry.name)
    ]
    if len({entry.id for _key, entry in matching}) > 1:
        raise ToolSearchError(
            "Ambiguous tool selectors: pass the target tool id and nest target arguments "
            "under args."
        )
    selector = (
        matching[0][0]
        if matching
        else next((k for k in _SELECTORS if arguments.get(k) is not None), "id")
    )
    target = arguments.get(selector)
    if not isinstance(target, str) or not target.strip():
        raise ToolSearchError("id must be a non-empty string.")
    wrapper = {"args", "input", selector, *(key for key, _entry in matching)}
    flattened = {
        k: v for k, v in arguments.items() if k not in wrapper and not k.startswith("args.")
    }
    return catalog.find(target), {**dotted, **flattened}
