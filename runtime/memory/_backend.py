"""Where an agent's memory index lives, as one interface: `IndexBackend`, which the SQLite
index (`_index.MemoryIndex`, the default) and the host's own (the gateway's PostgreSQL index,
`actors.store.PostgresMemoryIndexes`) both implement, and the rules they share so that both
answer the same search the same way.

- `plan_sync`: which files an incremental sync drops, (re)indexes or leaves out, from the
  files on disk (size and modification time) and the files the index knows, within the
  byte budget (`MEMORY.md` and `USER.md` first, then dated notes newest first, then the
  rest: `by_priority`).
- `keyword_hits`: the keyword side of a search from the chunks the body query ranked (their
  relevance, mapped into (0, 1) by `relevance_score`) and the files whose path matches the
  query (`path_matches`: filename hits, which bring the file's first chunk when no chunk of
  it matched by body).
- `tokens`: the query's words, as both full-text engines see them (lower case, `\\w+`).

An index's methods block (database and file I/O): `MemoryService` calls them in worker
threads. Each index serializes its own users (`lock`).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

import attrs

from ._files import dated_day
from ._vectors import VectorTable

__all__ = [
    "IndexBackend",
    "IndexFactory",
    "IndexStatus",
    "KeywordHit",
    "SyncPlan",
    "VectorHit",
    "by_priority",
    "day_text",
    "embeddings_stored",
    "keyword_hits",
    "path_matches",
    "plan_sync",
    "relevance_score",
    "tokens",
]

_TOKEN: Final = re.compile(r"\w+", re.UNICODE)
_PATH_NOISE: Final = frozenset({"memory", "md"})


def tokens(text: str) -> list[str]:
    """The lower-case word tokens of `text` (as the FTS5 `unicode61` tokenizer sees them)."""
    return [t.lower() for t in _TOKEN.findall(text)]


@attrs.frozen
class KeywordHit:
    """A chunk that matched: its place, its text and how well its body and path matched."""

    id: int
    path: str
    start_line: int
    end_line: int
    text: str
    text_score: float
    """The body's relevance mapped to (0, 1) (`relevance_score`)."""
    path_score: float = 0.0
    """Half the share of the query's words found in the file's path (`memory` and `md`
    aside)."""
    exact_path: int = 0
    """3: the query is the full path; 2: the file name; 1: its stem; 0: none."""
    day: dt.date | None = None


@attrs.frozen
class VectorHit:
    """A chunk close to the query: its place, its text and its cosine similarity."""

    id: int
    path: str
    start_line: int
    end_line: int
    text: str
    score: float

    @classmethod
    def of(
        cls, found: Sequence[tuple[int, float]], rows: Mapping[int, Sequence[Any]]
    ) -> list[VectorHit]:
        """The hits for `found` (chunk id, similarity), best first, from their chunk rows
        (`id, path, start_line, end_line, text`, by id); a chunk gone meanwhile is left out."""
        return [
            cls(i, rows[i][1], rows[i][2], rows[i][3], rows[i][4], score)
            for i, score in found
            if i in rows
        ]


@attrs.frozen
class IndexStatus:
    files: int
    chunks: int
    indexed_bytes: int
    max_bytes: int
    db_bytes: int
    skipped_files: int
    db_path: str
    rebuilt: str | None


class IndexBackend(Protocol):
    """One agent's memory index, wherever it is kept. Every method blocks (call it in a
    worker thread); `workspace` is the folder whose memory files it indexes, `max_bytes`
    the budget of indexed text (the service sets it from the settings before each use)."""

    workspace: Path
    max_bytes: int

    def sync(self) -> int:
        """Bring the index up to date with the files; the files (re)indexed or dropped."""
        ...

    def keyword_search(self, query: str, *, limit: int, sync: bool = True) -> list[KeywordHit]:
        """The `limit` best chunks by body, and each file whose path matches (its first
        chunk) when no chunk of it matched; synced first unless `sync` is False."""
        ...

    def chunks_for_embedding(self, model: str, limit: int) -> list[tuple[int, str]]:
        """Chunks without an embedding from `model`: (id, text), by id."""
        ...

    def pending_embeddings(self, model: str) -> int: ...

    def cached_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]: ...

    def store_embeddings(
        self, model: str, rows: Iterable[tuple[int, str, bytes]], *, cache: bool = True, now: int
    ) -> None:
        """Keep chunks' embeddings (id, text hash, float32 bytes), cached by hash when
        `cache`."""
        ...

    def vector_search(self, model: str, query: Sequence[float], limit: int) -> list[VectorHit]:
        """The `limit` chunks `model` embedded closest to `query` (a unit vector)."""
        ...

    def status(self) -> IndexStatus:
        """What the index holds now (without syncing)."""
        ...

    def close(self) -> None:
        """Let go of connections and vectors in memory (taken again when next used)."""
        ...


IndexFactory = Callable[[str, Path], IndexBackend]
"""Makes the index of an agent (its id) over the memory files of its workspace. No I/O."""


@attrs.frozen
class SyncPlan:
    """What a sync changes: files to drop, files to (re)index or to record as left out (each
    with its stat and whether it fits the budget), and how many files are left out."""

    removed: list[str]
    changed: list[tuple[str, os.stat_result, bool]]
    skipped: int

    @property
    def empty(self) -> bool:
        return not self.removed and not self.changed


def plan_sync(
    on_disk: Mapping[str, os.stat_result],
    known: Mapping[str, tuple[int, int, bool]],
    max_bytes: int,
) -> SyncPlan:
    """The sync that brings an index knowing `known` (path: mtime_ns, size, indexed) to the
    files `on_disk`, within `max_bytes` of indexed text."""
    removed = sorted(known.keys() - on_disk.keys())
    changed: list[tuple[str, os.stat_result, bool]] = []
    skipped = 0
    budget = max_bytes
    for rel in by_priority(on_disk):
        st = on_disk[rel]
        fits = st.st_size <= budget
        budget -= st.st_size if fits else 0
        skipped += 0 if fits else 1
        seen = known.get(rel)
        if seen is not None and seen == (st.st_mtime_ns, st.st_size, fits):
            continue
        changed.append((rel, st, fits))
    return SyncPlan(removed, changed, skipped)


def by_priority(files: Iterable[str]) -> list[str]:
    """`MEMORY.md` / `USER.md` first, then dated notes newest first, then the rest by path."""

    def key(rel: str) -> tuple[int, str, str]:
        if "/" not in rel:
            return (0, "", rel)
        day = dated_day(rel)
        if day is not None:
            return (1, f"{9999 - day.year:04d}{99 - day.month:02d}{99 - day.day:02d}", rel)
        return (2, "", rel)

    return sorted(files, key=key)


def day_text(rel: str) -> str | None:
    day = dated_day(rel)
    return day.isoformat() if day else None


def relevance_score(relevance: float) -> float:
    """A relevance (0 or more: better when larger) as OpenClaw maps bm25 into (0, 1):
    relevance / (1 + relevance); not a number: 0.001."""
    if relevance != relevance or relevance in (float("inf"), float("-inf")):
        return 0.001
    relevance = max(0.0, relevance)
    return relevance / (1 + relevance)


def path_matches(
    query: str, words: Sequence[str], paths: Iterable[str]
) -> dict[str, tuple[float, int]]:
    """Of `paths` (the indexed files), those whose path matches the query: (share of the
    query's words in the path / 2, exact specificity: 3 full path, 2 file name, 1 stem)."""
    wanted = query.strip().lower().removeprefix("./")
    out: dict[str, tuple[float, int]] = {}
    for rel in paths:
        low = rel.lower()
        name = low.rsplit("/", 1)[-1]
        exact = 3 if wanted == low else 2 if wanted == name else 1 if wanted == name[:-3] else 0
        path_words = set(tokens(low)) - _PATH_NOISE
        share = sum(1 for w in words if w in path_words) / len(words) / 2
        if exact or share:
            out[rel] = (share, exact)
    return out


Ranked = tuple[int, str, int, int, str, float]
"""A chunk the body query found: id, path, start line, end line, text, relevance score."""
FirstChunk = Callable[[str], "tuple[int, int, int, str] | None"]
"""A file's first chunk: id, start line, end line, text (None: it has none)."""


def keyword_hits(
    query: str,
    words: Sequence[str],
    ranked: Iterable[Ranked],
    paths: Iterable[str],
    first_chunk: FirstChunk,
) -> list[KeywordHit]:
    """The keyword side of a search: the ranked chunks with their files' path scores, then
    the first chunk of each file whose path matches and that no ranked chunk is from."""
    path_hits = path_matches(query, words, paths)
    out: list[KeywordHit] = []
    for i, rel, start, end, text, score in ranked:
        ps, exact = path_hits.get(rel, (0.0, 0))
        out.append(KeywordHit(i, rel, start, end, text, score, ps, exact, dated_day(rel)))
    covered = {h.path for h in out}
    for rel, (ps, exact) in path_hits.items():
        if rel in covered:
            continue
        row = first_chunk(rel)
        if row is not None:
            out.append(
                KeywordHit(row[0], rel, row[1], row[2], row[3], 0.0, ps, exact, dated_day(rel))
            )
    return out


def embeddings_stored(
    vectors: Mapping[str, VectorTable],
    pending: dict[str, set[int]],
    model: str,
    rows: Sequence[tuple[int, str, bytes]],
) -> None:
    """What an index keeps in memory once `model`'s embeddings of `rows` (chunk id, text
    hash, float32 blob) are stored: each put in `model`'s vector table and dropped from the
    other models' (the chunk's text changed); the chunks no longer pending for `model`;
    another model's pending ids read again when next asked for (the chunks it had embedded
    lost their vectors, and a chunk dropped meanwhile must not come back)."""
    for name, table in vectors.items():
        for i, _hash, blob in rows:
            if name == model:
                table.put(i, blob)
            else:
                table.discard(i)
    for name in list(pending):
        if name == model:
            pending[name].difference_update(i for i, _hash, _blob in rows)
        else:
            del pending[name]
