"""Ranking memory hits as OpenClaw's builtin engine does, and the per-agent service that owns
the indexes.

`rank` merges keyword hits (and vector hits, when there are any) into results: relevance is
`vectorWeight × vector + textWeight × keyword` (keyword alone when there is no vector side),
times the recency decay of dated notes (a 30-day half-life; `MEMORY.md`, `USER.md` and undated
notes are evergreen). Files whose path is the query (full path, file name or stem) come first.
Results at or above `minScore` are kept; when none is, the keyword matches are returned anyway,
and free places are filled with keyword matches below it (OpenClaw's rules).

`MemoryService` holds one index per agent and runs their blocking work in worker threads:
by default a `MemoryIndex` (`<root>/<agentId>.sqlite`); a host that keeps them elsewhere
hands in its own `IndexFactory` (`use_indexes`: the gateway on PostgreSQL). With an embeddings endpoint configured (`MemorySettings.
embedding`), a search is hybrid: chunks not embedded yet are embedded first (from the cache
by text hash when it has them, else by the endpoint, in batches, kept as they arrive), the
query is embedded, and the closest chunks by cosine similarity join the keyword hits in
`rank`. All of it within the endpoint's timeout, the catching up within half of it: chunks
still waiting are found by keywords only, with a `warning` counting them, and the next search
goes on from there. An endpoint that fails or is too slow leaves keyword results with a
`warning` saying why (`mode` `fts-only`), never a failed search.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from ._backend import IndexBackend, IndexFactory, IndexStatus, KeywordHit, VectorHit
from ._embed import EmbeddingFailed, pack
from ._index import SNIPPET_MAX_CHARS, MemoryIndex
from ._local import Embedder, embedding_client
from ._settings import EmbeddingSettings, MemorySettings

__all__ = ["IMPORTS_KEPT", "MemoryService", "SearchHit", "SearchOutcome", "rank"]

_CANDIDATE_MULTIPLIER: Final = 4
_KEYWORD_FLOOR: Final = 50
PENDING_NOTE: Final = (
    "{pending} memory chunks are not embedded yet (the embeddings endpoint is catching up);"
    " until then they are found by keywords only"
)
IMPORTS_KEPT: Final = 256
_EMBED_ROUND: Final = 256
"""Chunks embedded per round of a search's catch-up (each round's vectors are kept)."""


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
        self._indexes: dict[str, IndexBackend] = {}
        self._factory: IndexFactory = self._sqlite_index
        self.clock = time.time
        """The wall clock searches date their recency by (tests replace it)."""
        self._probes: dict[EmbeddingSettings, dict[str, Any]] = {}
        """The last embedding probe's answer, by endpoint settings."""
        self.imports: OrderedDict[str, tuple[str, dict[str, Any] | str]] = OrderedDict()
        """`migrations.memory.apply`'s answers by idempotency key: the request's fingerprint
        and its result (or error message); the latest `IMPORTS_KEPT`."""
        self.importing: set[str] = set()
        """The agent:provider memory imports running now."""

    def use_indexes(self, factory: IndexFactory | None) -> None:
        """Keep the agents' indexes where `factory` makes them (None: the SQLite files under
        `root` again); the indexes made so far are closed. Not a checkpoint; blocks briefly
        (closing: call it before searches start)."""
        self.close()
        self._factory = factory or self._sqlite_index

    def _sqlite_index(self, agent_id: str, workspace: Path) -> IndexBackend:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent_id)
        return MemoryIndex(self.root / f"{safe}.sqlite", workspace)

    def index_for(self, agent_id: str, workspace: Path, settings: MemorySettings) -> IndexBackend:
        """The agent's index (one per agent; made when first asked for). Not a checkpoint."""
        index = self._indexes.get(agent_id)
        if index is None or index.workspace != workspace:
            if index is not None:
                index.close()
            index = self._factory(agent_id, workspace)
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
        candidates = max(_KEYWORD_FLOOR, limit * _CANDIDATE_MULTIPLIER)
        keyword = await trio.to_thread.run_sync(
            lambda: index.keyword_search(query, limit=candidates), abandon_on_cancel=True
        )
        vector: list[VectorHit] = []
        warning: str | None = None
        hybrid = False
        embedding = settings.embedding
        if embedding is not None:
            try:
                vector, warning = await self._vector_hits(
                    index, query, embedding, settings, candidates
                )
                hybrid = True
            except EmbeddingFailed as exc:
                warning = f"embedding provider failed ({exc}); keyword results only"
        hits = rank(
            keyword,
            vector,
            today=self.today(),
            settings=settings,
            max_results=limit,
            min_score=threshold,
        )
        return SearchOutcome(
            hits=hits,
            provider=settings.provider,
            model=embedding.model if embedding is not None else None,
            mode="hybrid" if hybrid else "fts-only",
            search_ms=(time.perf_counter() - started) * 1000,
            candidates=len(keyword) + len(vector),
            warning=warning,
        )

    async def _vector_hits(
        self,
        index: IndexBackend,
        query: str,
        embedding: EmbeddingSettings,
        settings: MemorySettings,
        limit: int,
    ) -> tuple[list[VectorHit], str | None]:
        """The chunks closest to `query`, within the endpoint's timeout, and a note when some
        chunks are not embedded yet. The index's embeddings catch up first, for at most half
        the timeout (what is done is kept; the next search goes on). Raises
        `EmbeddingFailed`. A checkpoint."""
        client = embedding_client(embedding)
        deadline = trio.current_time() + embedding.timeout_s
        with trio.move_on_after(embedding.timeout_s / 2) as catching:
            await self._catch_up(index, client, cache=settings.cache)
        with trio.move_on_at(deadline) as scope:
            (vector,) = await client.embed([query])
            hits = await trio.to_thread.run_sync(
                index.vector_search, client.identity, vector, limit
            )
        if scope.cancelled_caught:
            raise EmbeddingFailed(
                f"{embedding.base_url} did not answer within {embedding.timeout_s:g} s"
            )
        note = None
        if catching.cancelled_caught:
            pending = await trio.to_thread.run_sync(index.pending_embeddings, client.identity)
            note = PENDING_NOTE.format(pending=pending)
        return hits, note

    async def _catch_up(self, index: IndexBackend, client: Embedder, *, cache: bool) -> None:
        """Embed the chunks that have no vector from this endpoint and model yet, round by
        round (each round kept as soon as it is in). Raises `EmbeddingFailed`."""
        model = client.identity
        while True:
            pending = await trio.to_thread.run_sync(index.chunks_for_embedding, model, _EMBED_ROUND)
            if not pending:
                return
            hashes = [hashlib.sha256(text.encode()).hexdigest() for _i, text in pending]
            cached = (
                await trio.to_thread.run_sync(index.cached_embeddings, model, hashes)
                if cache
                else {}
            )
            texts = {h: text for (_i, text), h in zip(pending, hashes, strict=True)}
            missing = [h for h in dict.fromkeys(hashes) if h not in cached]
            fresh = await client.embed([texts[h] for h in missing]) if missing else []
            blobs = {**cached, **{h: pack(v) for h, v in zip(missing, fresh, strict=True)}}
            rows = [(i, h, blobs[h]) for (i, _t), h in zip(pending, hashes, strict=True)]
            store = functools.partial(
                index.store_embeddings, model, rows, cache=cache, now=int(self.clock())
            )
            await trio.to_thread.run_sync(store)

    async def status(self, agent_id: str, workspace: Path, settings: MemorySettings) -> IndexStatus:
        """The agent's index status, synced first. A checkpoint (a worker thread)."""
        index = self.index_for(agent_id, workspace, settings)

        def work() -> IndexStatus:
            index.sync()
            return index.status()

        return await trio.to_thread.run_sync(work, abandon_on_cancel=True)

    async def embedding_status(self, settings: MemorySettings, *, probe: bool) -> dict[str, Any]:
        """`doctor.memory.status`'s `embedding`, as OpenClaw's: with `probe`, `ping` is
        embedded to see whether the endpoint answers (`{ok: true}` or `{ok: false, error}`,
        kept for later asks); without, the last probe's answer, else `{ok: false, checked:
        false, error}`. A checkpoint."""
        await trio.lowlevel.checkpoint()
        embedding = settings.embedding
        if embedding is None:
            return {
                "ok": False,
                "checked": False,
                "error": "no embedding provider (memory.search.provider none or no endpoint "
                "configured): keyword search only",
            }
        if not probe:
            return dict(
                self._probes.get(embedding)
                or {
                    "ok": False,
                    "checked": False,
                    "error": "memory embedding readiness not checked; ask with probe: true",
                }
            )
        client = embedding_client(embedding)
        answer: dict[str, Any] = {"ok": True}
        try:
            with trio.fail_after(embedding.timeout_s):
                await client.embed(["ping"])
        except trio.TooSlowError:
            error = f"{embedding.base_url} did not answer within {embedding.timeout_s:g} s"
            answer = {"ok": False, "error": error}
        except EmbeddingFailed as exc:
            answer = {"ok": False, "error": str(exc)}
        self._probes[embedding] = answer
        return dict(answer)

    def close(self) -> None:
        for index in self._indexes.values():
            index.close()
        self._indexes.clear()
