"""The memory index on a real SQLite file: incremental sync, keyword and filename hits,
recency, the byte bound, a corrupt index rebuilt; the chunker; recall@5 on a labelled set.

The behaviour tests take their index from `make_index` (`index`): the same tests run on
the PostgreSQL index with its own `make_index` (`tests/actors/store/test_memory_index.py`)."""

from __future__ import annotations

import datetime as dt
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.memory import IndexBackend, MemoryIndex, MemorySettings, rank
from runtime.memory._chunks import chunk_markdown
from runtime.memory._embed import normalize, pack
from runtime.memory._index import DEFAULT_MAX_INDEX_BYTES, tokens

TODAY = dt.date(2026, 12, 8)
MakeIndex = Callable[..., IndexBackend]
"""`make_index(ws, max_bytes=...)`: an index over workspace `ws` (closed after the test)."""


def _write(ws: Path, rel: str, text: str) -> None:
    path = ws / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _search(index: IndexBackend, query: str, n: int = 5) -> list[str]:
    hits = index.keyword_search(query, limit=50)
    ranked = rank(hits, today=TODAY, settings=MemorySettings(), max_results=n, min_score=0.35)
    return [h.path for h in ranked]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture
def make_index(tmp_path: Path) -> Iterator[MakeIndex]:
    made: list[MemoryIndex] = []

    def make(ws: Path, max_bytes: int = DEFAULT_MAX_INDEX_BYTES) -> MemoryIndex:
        made.append(MemoryIndex(tmp_path / "idx" / f"{len(made)}.sqlite", ws, max_bytes=max_bytes))
        return made[-1]

    yield make
    for idx in made:
        idx.close()


@pytest.fixture
def index(make_index: MakeIndex, ws: Path) -> IndexBackend:
    return make_index(ws)


def test_chunks_are_whole_lines_with_overlap_and_line_numbers() -> None:
    text = "\n".join(f"line {i} " + "x" * 90 for i in range(1, 61))
    chunks = chunk_markdown(text)
    assert len(chunks) > 2
    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == 60
    for a, b in itertools.pairwise(chunks):
        assert b.start_line <= a.end_line  # overlap
        assert len(a.text) <= 1600
    assert chunk_markdown("") == []
    long = chunk_markdown("y" * 4000)
    assert [c.start_line for c in long] == [1, 1, 1]


def test_only_memory_files_are_indexed_and_found(index: IndexBackend, ws: Path) -> None:
    _write(ws, "MEMORY.md", "The deploy key lives in the vault.\n")
    _write(ws, "USER.md", "Prefers TypeScript over JavaScript.\n")
    _write(ws, "memory/2026-12-07.md", "Met Alice about the quarterly budget.\n")
    _write(ws, "notes.md", "budget budget budget (not memory)\n")
    _write(ws, "memory/img.png", "budget")
    assert _search(index, "quarterly budget") == ["memory/2026-12-07.md"]
    assert _search(index, "typescript") == ["USER.md"]
    assert index.status().files == 3


def test_the_index_follows_edits_additions_and_deletions_on_disk(
    index: IndexBackend, ws: Path
) -> None:
    _write(ws, "memory/a.md", "the blue whale\n")
    assert _search(index, "whale") == ["memory/a.md"]
    _write(ws, "memory/a.md", "the red panda, bigger now\n")
    os.utime(ws / "memory/a.md", ns=(1, 1))  # a different time even within one tick
    assert _search(index, "whale") == []
    assert _search(index, "panda") == ["memory/a.md"]
    _write(ws, "memory/b.md", "another panda\n")
    assert sorted(_search(index, "panda")) == ["memory/a.md", "memory/b.md"]
    (ws / "memory/a.md").unlink()
    assert _search(index, "panda") == ["memory/b.md"]
    assert index.sync() == 0  # nothing changed: nothing re-indexed


def test_the_chunks_to_embed_follow_writes_and_embeddings(index: IndexBackend, ws: Path) -> None:
    def waiting(model: str, limit: int = 10) -> list[str]:
        got = index.chunks_for_embedding(model, limit)
        assert [i for i, _text in got] == sorted(i for i, _text in got)
        assert index.pending_embeddings(model) >= len(got)
        return [text.split()[0] for _i, text in got]

    _write(ws, "memory/a.md", "alpha\n")
    _write(ws, "memory/b.md", "bravo\n")
    index.sync()
    assert sorted(waiting("m")) == ["alpha", "bravo"]
    assert waiting("m", 1) == waiting("m")[:1]
    ids = {text.split()[0]: i for i, text in index.chunks_for_embedding("m", 10)}
    blob = pack(normalize([1.0, 0.0]))
    index.store_embeddings("m", [(ids["alpha"], "a", blob)], now=1)
    assert waiting("m") == ["bravo"]
    _write(ws, "memory/c.md", "charlie\n")
    _write(ws, "memory/a.md", "alpha again\n")
    os.utime(ws / "memory/a.md", ns=(1, 1))
    index.sync()
    assert sorted(waiting("m")) == ["alpha", "bravo", "charlie"]
    assert index.pending_embeddings("m") == 3
    assert sorted(waiting("other")) == ["alpha", "bravo", "charlie"]
    rows = [(i, text, blob) for i, text in index.chunks_for_embedding("other", 10)]
    index.store_embeddings("other", rows, now=2)  # another model's vectors replace them
    assert waiting("other") == []
    assert index.pending_embeddings("other") == 0
    assert sorted(waiting("m")) == ["alpha", "bravo", "charlie"]
    (ws / "memory/b.md").unlink()
    index.sync()
    assert sorted(waiting("m")) == ["alpha", "charlie"]
    assert index.pending_embeddings("m") == 2


def test_the_chunks_to_embed_follow_another_process_on_the_same_file(
    tmp_path: Path, ws: Path
) -> None:
    _write(ws, "memory/a.md", "alpha\n")
    one = MemoryIndex(tmp_path / "shared.sqlite", ws)
    two = MemoryIndex(tmp_path / "shared.sqlite", ws)
    try:
        one.sync()
        assert two.pending_embeddings("m") == 1
        ((i, _text),) = one.chunks_for_embedding("m", 10)
        one.store_embeddings("m", [(i, "a", pack(normalize([1.0])))], now=1)
        assert two.chunks_for_embedding("m", 10) == []
        _write(ws, "memory/b.md", "bravo\n")
        one.sync()
        assert [text for _i, text in two.chunks_for_embedding("m", 10)] == ["bravo"]
    finally:
        one.close()
        two.close()


def test_filename_hits_rank_first_and_recency_orders_daily_notes(
    index: IndexBackend, ws: Path
) -> None:
    _write(ws, "memory/2026-12-07.md", "standup notes: ship the parser\n")
    _write(ws, "memory/2026-06-01.md", "standup notes: ship the parser\n")
    _write(ws, "memory/projects.md", "the parser project is late\n")
    found = _search(index, "ship the parser")
    assert found[0] == "memory/2026-12-07.md"  # the same words: the newer note first
    assert found[-1] == "memory/2026-06-01.md"  # six months old: 1/64 of its weight
    assert _search(index, "projects")[0] == "memory/projects.md"
    assert _search(index, "2026-06-01.md")[0] == "memory/2026-06-01.md"


def test_the_indexed_text_is_bounded_in_bytes_newest_notes_first(
    make_index: MakeIndex, ws: Path
) -> None:
    _write(ws, "MEMORY.md", "evergreen fact zebra\n" * 10)
    for day in range(1, 8):
        _write(ws, f"memory/2026-12-0{day}.md", f"note of day {day} zebra\n" * 10)
    size = (ws / "MEMORY.md").stat().st_size + 3 * (ws / "memory/2026-12-01.md").stat().st_size
    idx = make_index(ws, max_bytes=size)
    found = set(_search(idx, "zebra", 20))
    assert found == {
        "MEMORY.md",
        "memory/2026-12-07.md",
        "memory/2026-12-06.md",
        "memory/2026-12-05.md",
    }
    status = idx.status()
    assert status.indexed_bytes <= size and status.skipped_files == 4
    (ws / "memory/2026-12-07.md").unlink()  # room for the next newest
    assert "memory/2026-12-04.md" in _search(idx, "zebra", 20)


@pytest.mark.parametrize("damage", ["garbage", "truncate"])
def test_a_corrupt_index_is_rebuilt_from_the_files(tmp_path: Path, ws: Path, damage: str) -> None:
    index = MemoryIndex(tmp_path / "idx" / "main.sqlite", ws)
    _write(ws, "memory/a.md", "the kestrel nests in the tower\n")
    assert _search(index, "kestrel") == ["memory/a.md"]
    index.close()
    db = index.db_path
    if damage == "garbage":
        db.write_bytes(b"this is not a sqlite database at all" * 200)
    else:
        data = db.read_bytes()
        db.write_bytes(data[:100] + b"\xff" * 4000 + data[4100:])
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert _search(index, "kestrel") == ["memory/a.md"]
    assert index.status().rebuilt is not None
    index.close()


def test_queries_without_words_find_nothing(index: IndexBackend, ws: Path) -> None:
    _write(ws, "memory/a.md", "text\n")
    assert _search(index, "?!  ") == []
    assert tokens('he said "hi" AND NOT x*') == ["he", "said", "hi", "and", "not", "x"]


# --- recall@5 on a small labelled set -----------------------------------------------------

CORPUS = {
    "memory/2026-11-02.md": "Booked flights to Lisbon for the offsite, leaving March 3.",
    "memory/2026-11-05.md": "Bob's birthday is on April 12; he likes single-origin coffee.",
    "memory/2026-11-09.md": "The staging database password rotates every 90 days.",
    "memory/2026-11-12.md": "Decided to use PostgreSQL instead of MySQL for the billing service.",
    "memory/2026-11-15.md": "Carol is allergic to peanuts; avoid Thai places for team lunch.",
    "memory/2026-11-20.md": "The CI pipeline fails on ARM runners because of the esbuild binary.",
    "memory/2026-11-22.md": "Quarterly OKR: reduce p95 latency of the search API below 200 ms.",
    "memory/2026-11-25.md": "Dentist appointment moved to Friday at 9:30.",
    "memory/2026-11-28.md": "The user's cat is named Miso and is twelve years old.",
    "memory/2026-12-01.md": "Renewed the TLS certificate for api.example.com; expires next June.",
    "MEMORY.md": "Prefers concise answers. Works in the Berlin timezone. Uses Neovim.",
    "memory/projects/garden.md": "Planted tomatoes and basil; water every second day.",
}
LABELLED = [
    ("when do we fly to Lisbon", "memory/2026-11-02.md"),
    ("Bob birthday present coffee", "memory/2026-11-05.md"),
    ("staging database password rotation", "memory/2026-11-09.md"),
    ("which database for billing", "memory/2026-11-12.md"),
    ("Carol allergies lunch", "memory/2026-11-15.md"),
    ("why does CI fail on ARM", "memory/2026-11-20.md"),
    ("search API latency goal", "memory/2026-11-22.md"),
    ("dentist appointment", "memory/2026-11-25.md"),
    ("name of the cat", "memory/2026-11-28.md"),
    ("TLS certificate expiry", "memory/2026-12-01.md"),
    ("what editor do I use", "MEMORY.md"),
    ("garden watering schedule", "memory/projects/garden.md"),
    ("my pet", "memory/2026-11-28.md"),  # no shared word: keyword search misses it
    ("timezone of the user", "MEMORY.md"),
]


def recall_at_5(index: IndexBackend) -> float:
    found = sum(1 for query, want in LABELLED if want in _search(index, query, 5))
    return found / len(LABELLED)


def test_keyword_recall_at_5_on_the_labelled_set(index: IndexBackend, ws: Path) -> None:
    for rel, text in CORPUS.items():
        _write(ws, rel, text + "\n")
    recall = recall_at_5(index)
    print(f"keyword recall@5: {recall:.3f}")
    assert recall >= 0.8
