"""`memory_search` and `memory_get`, OpenClaw's memory tools: its names, parameter schemas and
result shapes (a JSON text block, the same object as `details`).

`memory_search` answers `{results: [{path, startLine, endLine, score, textScore, snippet,
source, corpus, citation?}], provider, citations, mode, debug}`; `corpus: "sessions"` is
answered unavailable (clawlane indexes no transcripts), `corpus: "wiki"` finds nothing (no
wiki is registered). `memory_get` reads a memory file or a line range of it (120 lines and
12,000 characters by default, with `truncated` / `nextFrom` when more remains); a path that
is not a memory file of the workspace is an error result with OpenClaw's
`code: "MEMORY_PATH_NOT_ALLOWED"`, and a missing one `status: "not_found"`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import msgspec
import trio

from ..tools import ToolContext, ToolResult, text_result
from ._files import MAX_FILE_BYTES, is_memory_path
from ._search import MemoryService
from ._settings import MemorySettings

__all__ = ["MemoryGetTool", "MemorySearchTool", "memory_tools"]

_READ_LINES: Final = 120
_READ_MAX_CHARS: Final = 12_000
_SEARCH_DESCRIPTION: Final = (
    "Mandatory recall step: search MEMORY.md, USER.md, Markdown files recursively under "
    "memory/ before answering questions about prior work, decisions, dates, people, "
    "preferences, or todos. `corpus=memory` restricts hits to indexed memory files. "
    "If response has disabled=true, tell the user and include the warning/action guidance."
)
_GET_DESCRIPTION: Final = (
    "Safe exact excerpt read from MEMORY.md, USER.md, Markdown files recursively under "
    "memory/. Defaults to a bounded excerpt when lines are omitted and includes "
    "truncation/continuation info when more content exists. status=ok means the requested "
    "excerpt was read; status=not_found means the file does not exist; status=error means "
    "the requested read failed, not that memory is disabled."
)


class MemorySearchParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    query: str
    maxResults: Annotated[int, msgspec.Meta(ge=1)] | None = None
    minScore: float | None = None
    corpus: Literal["memory", "wiki", "all", "sessions"] | None = None


class MemoryGetParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    path: str
    from_: Annotated[int, msgspec.Meta(ge=1)] | None = msgspec.field(default=None, name="from")
    lines: Annotated[int, msgspec.Meta(ge=1)] | None = None
    corpus: Literal["memory", "wiki", "all"] | None = None


def json_result(payload: dict[str, Any], *, is_error: bool = False) -> ToolResult:
    """OpenClaw's `jsonResult`: the payload as indented JSON text, and as `details`."""
    return text_result(json.dumps(payload, indent=2), is_error=is_error, details=payload)


def _citations_on(mode: str, session_key: str) -> bool:
    if mode != "auto":
        return mode == "on"
    rest = set(session_key.lower().split(":")[2:])
    return not rest & {"channel", "group"}


class MemorySearchTool:
    """`memory_search` over the run's agent's index (see the module docstring)."""

    name = "memory_search"
    description = _SEARCH_DESCRIPTION
    params = MemorySearchParams
    mutating = False

    def __init__(self, service: MemoryService, settings: Callable[[str], MemorySettings]):
        self._service = service
        self._settings = settings

    async def run(self, args: MemorySearchParams, ctx: ToolContext) -> ToolResult:
        """Search (a worker thread); a checkpoint."""
        if args.corpus == "sessions":
            return json_result(_sessions_unavailable())
        if not args.query.strip():
            raise ValueError("query required")
        settings = self._settings(ctx.agent_id)
        if args.corpus == "wiki":
            await trio.lowlevel.checkpoint()
            return json_result({"results": [], "citations": settings.citations})
        outcome = await self._service.search(
            ctx.agent_id,
            ctx.workspace,
            args.query,
            settings,
            max_results=args.maxResults,
            min_score=args.minScore,
        )
        cite = _citations_on(settings.citations, ctx.session_key)
        results = []
        for hit in outcome.hits:
            entry = hit.to_json()
            entry["corpus"] = "memory"
            if cite:
                lines = (
                    f"#L{hit.start_line}"
                    if hit.start_line == hit.end_line
                    else f"#L{hit.start_line}-L{hit.end_line}"
                )
                entry["citation"] = f"{hit.path}{lines}"
                entry["snippet"] = f"{entry['snippet'].rstrip()}\n\nSource: {entry['citation']}"
            results.append(entry)
        payload: dict[str, Any] = {"results": results, "provider": outcome.provider}
        if outcome.model:
            payload["model"] = outcome.model
        if outcome.fallback:
            payload["fallback"] = outcome.fallback
        payload["citations"] = settings.citations
        payload["mode"] = outcome.mode
        if outcome.warning:
            payload["warning"] = outcome.warning
        payload["debug"] = {
            "backend": "builtin",
            "effectiveMode": outcome.mode,
            "searchMs": round(outcome.search_ms, 3),
            "hits": len(results),
            "candidateHits": outcome.candidates,
        }
        return json_result(payload)


def _sessions_unavailable() -> dict[str, Any]:
    warning = "Session transcript search is unavailable for this agent."
    action = (
        "clawlane does not index session transcripts for memory_search; use the session "
        "history tools where they are available."
    )
    error = "Session transcript search is not enabled."
    return {
        "results": [],
        "disabled": True,
        "unavailable": True,
        "error": error,
        "warning": warning,
        "action": action,
        "debug": {"warning": warning, "action": action, "error": error},
    }


class MemoryGetTool:
    """`memory_get`: a memory file or a line range of it, confined to memory paths."""

    name = "memory_get"
    description = _GET_DESCRIPTION
    params = MemoryGetParams
    mutating = False

    async def run(self, args: MemoryGetParams, ctx: ToolContext) -> ToolResult:
        """Read (a worker thread); a checkpoint."""
        if args.corpus == "wiki":
            await trio.lowlevel.checkpoint()
            return json_result({"status": "not_found", "path": args.path, "text": ""})
        return await trio.to_thread.run_sync(
            read_memory_file, ctx.workspace, args.path, args.from_, args.lines
        )


def _refused(path: str) -> ToolResult:
    return json_result(
        {
            "path": path,
            "text": "",
            "status": "error",
            "code": "MEMORY_PATH_NOT_ALLOWED",
            "error": "path is not an allowed Markdown memory file",
        },
        is_error=True,
    )


def read_memory_file(
    workspace: Path, raw_path: str, start: int | None, count: int | None
) -> ToolResult:
    """`memory_get`'s read: confined to the workspace's memory files (no symlink out, no
    `..`). Blocking."""
    raw = raw_path.strip()
    if not raw or "\0" in raw:
        raise ValueError("path required")
    root = Path(os.path.realpath(workspace))
    absolute = Path(os.path.normpath(root / os.path.expanduser(raw)))
    try:
        rel = absolute.relative_to(root).as_posix()
    except ValueError:
        return _refused(raw)
    if not is_memory_path(rel):
        return _refused(raw)
    real = Path(os.path.realpath(absolute))
    if not real.is_relative_to(root) or not is_memory_path(real.relative_to(root).as_posix()):
        return _refused(rel)
    try:
        if not real.is_file():
            return json_result({"status": "not_found", "text": "", "path": rel})
        with real.open("rb") as f:
            content = f.read(MAX_FILE_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return json_result({"status": "not_found", "text": "", "path": rel})
    return json_result(_excerpt(content, rel, start or 1, count or _READ_LINES))


def _excerpt(content: str, rel: str, start: int, count: int) -> dict[str, Any]:
    """OpenClaw's excerpt: whole lines within the character budget, and where to go on."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    selected = lines[start - 1 : start - 1 + count]
    more_remain = start - 1 + len(selected) < len(lines)
    included = chars = 0
    for line in selected:
        nxt = chars + len(line) + (1 if included else 0)
        if included and nxt > _READ_MAX_CHARS:
            break
        included += 1
        chars = nxt
    text = "\n".join(selected[:included])[:_READ_MAX_CHARS]
    hard_cut = chars > _READ_MAX_CHARS
    truncated = hard_cut or included < len(selected) or more_remain
    next_from = (
        start + included if not hard_cut and (more_remain or included < len(selected)) else None
    )
    if truncated and text:
        notice = (
            f"[More content available. Use from={next_from} to continue.]"
            if next_from is not None
            else "[More content available. Requested excerpt exceeded the default maxChars "
            "budget. If you need the full raw line, use read on the source file.]"
        )
        text = f"{text}\n\n{notice}"
    out: dict[str, Any] = {
        "status": "ok",
        "text": text,
        "path": rel,
        "from": start,
        "lines": included,
    }
    if truncated:
        out["truncated"] = True
    if next_from is not None:
        out["nextFrom"] = next_from
    return out


def memory_tools(
    service: MemoryService, settings: Callable[[str], MemorySettings]
) -> list[MemorySearchTool | MemoryGetTool]:
    """The two memory tools over `service`; `settings(agent_id)` gives an agent's settings."""
    return [MemorySearchTool(service, settings), MemoryGetTool()]
