"""Ranking memory hits as OpenClaw's builtin engine does, and the per-agent service that owns
the indexes.

`rank` merges keyword hits (and vector hits, when there are any) into results: relevance is
`vectorWeight × vector + textWeight × keyword` (keyword alone when there is no vector side),
times the recency decay of dated notes (a 30-day half-life; `MEMORY.md`, `USER.md` and undated
notes are evergreen). Files whose path is the query (full path, file name or stem) come first.
Results at or above `minScore` are kept; when none is, the keyword matches are returned anyway,
and free places are filled with keyword matches below it (OpenClaw's rules).

`MemoryService` holds one `MemoryIndex` per agent (`<root>/<agentId>.sqlite`) and runs their
blocking work in worker threads.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from ._index import SNIPPET_MAX_CHARS, IndexStatus, KeywordHit, MemoryIndex
from ._settings import MemorySettings

__all__ = ["MemoryService", "SearchHit", "SearchOutcome", "rank"]

_CANDIDATE_MULTIPLIER: Final = 4
_KEYWORD_FLOOR: Final = 50


@attrs.frozen
class SearchHit:
    """One result, as `memory_search` and `memory.search` show it."""

    path: str
    start_line: int
    end_line: int
    score: float
    text_score: float
    snippet: str
    vector_score: float | None = None
    keyword: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 6),
        }
        if self.vector_score is not None:
            out["vectorScore"] = round(self.vector_score, 6)
        out["textScore"] = round(self.text_score, 6)
        out["snippet"] = self.snippet
        out["source"] = "memory"
        return out


@attrs.frozen
class VectorHit:
    id: int
    path: str
    start_line: int
    end_line: int
    text: str
    score: float


def _decay(day: dt.date | None, today: dt.date, half_life_days: float) -> float:
    if day is None or half_life_days <= 0:
        return 1.0
    age = max(0, (today - day).days)
    return float(0.5 ** (age / half_life_days))


def rank(
    keyword: Sequence[KeywordHit],
    vector: Sequence[VectorHit] = (),
    *,
    today: dt.date,
    settings: MemorySettings,
    max_results: int,
    min_score: float,
) -> list[SearchHit]:
    """The results of one search, best first (see the module docstring)."""
    from ._files import dated_day

    hybrid = bool(vector)
    vw, tw = (settings.vector_weight, settings.text_weight) if hybrid else (0.0, 1.0)
    merged: dict[int, dict[str, Any]] = {}
    for v in vector:
        merged[v.id] = {"hit": v, "vector": v.score, "text": 0.0, "path": 0.0, "exact": 0}
    for k in keyword:
        entry = merged.setdefault(k.id, {"hit": k, "vector": 0.0})
        entry.update(text=k.text_score, path=k.path_score, exact=k.exact_path, kw=True)
    scored: list[tuple[int, float, SearchHit]] = []
    for entry in merged.values():
        hit = entry["hit"]
        keyword_score = entry["text"] if entry["text"] > 0 else entry["path"]
        content = vw * entry["vector"] + tw * keyword_score
        score = content * _decay(dated_day(hit.path), today, settings.half_life_days)
        result = SearchHit(
            path=hit.path,
            start_line=hit.start_line,
            end_line=hit.end_line,
            score=score,
            text_score=entry["text"],
            snippet=hit.text[:SNIPPET_MAX_CHARS],
            vector_score=entry["vector"] if hybrid else None,
            keyword=bool(entry.get("kw")),
        )
        scored.append((entry["exact"], score, result))
    scored.sort(key=lambda e: (-e[0], -e[1], e[2].path, e[2].start_line))
    ordered = [r for _, _, r in scored]
    exact = [r for e, _, r in scored if e > 0]
    strict = [r for r in ordered if r.score >= min_score or r in exact]
    selected = strict[:max_results]
    if len(selected) == max_results:
        return selected
    if not strict:
        return [r for r in ordered if r.keyword][:max_results]
    for r in ordered:
        if len(selected) == max_results:
            break
        if r not in selected and r.keyword and not r.vector_score:
            selected.append(r)
    return selected


@attrs.frozen
class SearchOutcome:
    """What one search found, and how."""

    hits: list[SearchHit]
    provider: str
    model: str | None
    mode: str
    """`fts-only` (keywords alone) or `hybrid`."""
    search_ms: float
    candidates: int
    warning: str | None = None
    """Why the vector side is missing when it should be there (the provider failed)."""
    fallback: str | None = None


class MemoryService:
    """The agents' memory indexes, under `root` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._indexes: dict[str, MemoryIndex] = {}
        self.clock = time.time
        """The wall clock searches date their recency by (tests replace it)."""

    def index_for(self, agent_id: str, workspace: Path, settings: MemorySettings) -> MemoryIndex:
        """The agent's index (one per agent; made when first asked for). Not a checkpoint."""
        index = self._indexes.get(agent_id)
        if index is None or index.workspace != workspace:
            if index is not None:
                index.close()
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent_id)
            index = MemoryIndex(self.root / f"{safe}.sqlite", workspace)
            self._indexes[agent_id] = index
        index.max_bytes = settings.max_index_bytes
        return index

    def today(self) -> dt.date:
        return dt.datetime.fromtimestamp(self.clock()).astimezone().date()

    async def search(
        self,
        agent_id: str,
        workspace: Path,
        query: str,
        settings: MemorySettings,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
    ) -> SearchOutcome:
        """Search the agent's memory (the index synced first). A checkpoint: the work runs
        in a worker thread; cancelled, the thread finishes on its own."""
        started = time.perf_counter()
        index = self.index_for(agent_id, workspace, settings)
        limit = max_results or settings.max_results
        threshold = settings.min_score if min_score is None else min_score
        keyword = await trio.to_thread.run_sync(
            lambda: index.keyword_search(
                query, limit=max(_KEYWORD_FLOOR, limit * _CANDIDATE_MULTIPLIER)
            ),
            abandon_on_cancel=True,
        )
        hits = rank(
            keyword,
            today=self.today(),
            settings=settings,
            max_results=limit,
            min_score=threshold,
        )
        return SearchOutcome(
            hits=hits,
            provider=settings.provider,
            model=None,
            mode="fts-only",
            search_ms=(time.perf_counter() - started) * 1000,
            candidates=len(keyword),
        )

    async def status(self, agent_id: str, workspace: Path, settings: MemorySettings) -> IndexStatus:
        """The agent's index status, synced first. A checkpoint (a worker thread)."""
        index = self.index_for(agent_id, workspace, settings)

        def work() -> IndexStatus:
            index.sync()
            return index.status()

        return await trio.to_thread.run_sync(work, abandon_on_cancel=True)

    async def embedding_status(self, settings: MemorySettings, *, probe: bool) -> dict[str, Any]:
        """`doctor.memory.status`'s `embedding`: `{ok, error?, checked?}`. A checkpoint."""
        await trio.lowlevel.checkpoint()
        if settings.embedding is None:
            return {
                "ok": False,
                "checked": False,
                "error": "no embedding provider (memory.search.provider none or no endpoint "
                "configured): keyword search only",
            }
        return {
            "ok": False,
            "checked": False,
            "error": "memory embedding readiness not checked; ask with probe: true",
        }

    def close(self) -> None:
        for index in self._indexes.values():
            index.close()
        self._indexes.clear()
