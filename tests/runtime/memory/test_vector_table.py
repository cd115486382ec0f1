"""The vectors of a memory index in memory (`runtime.memory._vectors.VectorTable`): with numpy
(the `memory` extra) and on the pure-Python side, the same nearest chunks as a plain cosine
over every vector; kept current in place as chunks are embedded and dropped (slots reused, the
matrix grown), never read again from the file; and, through a real index, the same results
after files change as a table read afresh."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from runtime.memory import MemoryIndex
from runtime.memory._embed import normalize, pack
from runtime.memory._vectors import NUMPY, VectorTable

SIDES = [
    pytest.param(True, id="numpy", marks=pytest.mark.skipif(not NUMPY, reason="no numpy")),
    pytest.param(False, id="python"),
]


def _vector(rng: random.Random, dims: int) -> list[float]:
    return normalize([rng.gauss(0, 1) for _ in range(dims)])


def _expected(
    vectors: dict[int, list[float]], query: list[float], limit: int
) -> list[tuple[int, float]]:
    scored = [
        (i, max(0.0, math.fsum(a * b for a, b in zip(v, query, strict=True))))
        for i, v in vectors.items()
    ]
    scored.sort(key=lambda e: -e[1])
    return scored[:limit]


def _same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [i for i, _s in found] == [i for i, _s in expected]
    for (_i, got), (_j, want) in zip(found, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-5)


@pytest.mark.parametrize("numpy", SIDES)
def test_the_nearest_chunks_as_a_plain_cosine_finds_them(numpy: bool) -> None:
    rng = random.Random(1)
    table = VectorTable(numpy=numpy)
    assert table.numpy is numpy
    vectors = {i * 3: _vector(rng, 32) for i in range(300)}
    table.load((i, pack(v)) for i, v in vectors.items())
    assert len(table) == 300 and table.dims == 32
    for _ in range(5):
        query = _vector(rng, 32)
        _same(table.search(query, 10), _expected(vectors, query, 10))
    assert table.search(_vector(rng, 16), 10) == []  # other dimensions: nothing
    assert len(table.search(query, 1000)) == 300


@pytest.mark.parametrize("numpy", SIDES)
def test_changes_are_taken_in_place_slots_reused_and_the_matrix_grown(numpy: bool) -> None:
    rng = random.Random(2)
    table = VectorTable(numpy=numpy)
    vectors: dict[int, list[float]] = {}
    for step in range(2_000):
        chunk_id = rng.randrange(400)
        if rng.random() < 0.3:
            table.discard(chunk_id)
            vectors.pop(chunk_id, None)
        else:
            vectors[chunk_id] = _vector(rng, 8)
            table.put(chunk_id, pack(vectors[chunk_id]))
        if step % 250 == 0:
            query = _vector(rng, 8)
            _same(table.search(query, 20), _expected(vectors, query, 20))
    assert len(table) == len(vectors)
    assert len(table._ids) <= 400  # freed slots were reused, never more rows than chunks
    query = _vector(rng, 8)
    _same(table.search(query, 20), _expected(vectors, query, 20))
    # an endpoint that changes its dimensions starts the table again
    table.put(7, pack(_vector(rng, 4)))
    assert (len(table), table.dims) == (1, 4)


@pytest.mark.parametrize("numpy", SIDES)
def test_an_index_keeps_its_vectors_current_as_files_change(tmp_path: Path, numpy: bool) -> None:
    rng = random.Random(3)
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for day in range(1, 6):
        (ws / "memory" / f"2026-12-0{day}.md").write_text(f"# Day {day}\n\nnote {day}\n")
    index = MemoryIndex(tmp_path / "index.sqlite", ws, numpy=numpy)
    index.sync()

    def embed_pending(model: str) -> None:
        pending = index.chunks_for_embedding(model, 1_000)
        rows = [(i, f"h{i}-{model}", pack(_vector(rng, 16))) for i, _text in pending]
        index.store_embeddings(model, rows, cache=False, now=0)

    embed_pending("a")
    query = _vector(rng, 16)
    first = index.vector_search("a", query, 10)
    assert len(first) == 5 and first[0].path.startswith("memory/")
    with index.lock:
        table = index.vector_table("a")
    # a file changes and one is deleted: their old chunks leave the table at once
    (ws / "memory" / "2026-12-01.md").write_text("# Day 1\n\nrewritten\n")
    (ws / "memory" / "2026-12-02.md").unlink()
    index.sync()
    assert len(table) == 3
    embed_pending("a")  # the rewritten file's new chunk joins it
    assert len(table) == 4
    # another model re-embedding a chunk takes it from model a's table
    (chunk_id, _text), *_ = index.chunks_for_embedding("b", 1)
    index.store_embeddings("b", [(chunk_id, "x", pack(_vector(rng, 16)))], cache=False, now=0)
    assert len(table) == 3
    with index.lock:
        assert index.vector_table("a") is table  # kept, not read again
    live = index.vector_search("a", query, 10)
    index.close()
    fresh = MemoryIndex(tmp_path / "index.sqlite", ws, numpy=numpy)
    again = fresh.vector_search("a", query, 10)
    assert [(h.id, h.path) for h in live] == [(h.id, h.path) for h in again]
    assert [h.score for h in live] == pytest.approx([h.score for h in again])
    fresh.close()


@pytest.mark.parametrize("numpy", SIDES)
def test_another_process_writing_the_index_file_is_seen(tmp_path: Path, numpy: bool) -> None:
    """Two workers of one state dir (`--workers`) share an agent's index file: what one
    re-chunks and embeds, the other's vectors in memory follow (SQLite's data_version)."""
    rng = random.Random(4)
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    note = ws / "memory" / "notes.md"
    note.write_text("# Notes\n\nfirst version\n")
    a = MemoryIndex(tmp_path / "index.sqlite", ws, numpy=numpy)
    b = MemoryIndex(tmp_path / "index.sqlite", ws, numpy=numpy)

    def embed(index: MemoryIndex) -> list[float]:
        pending = index.chunks_for_embedding("m", 100)
        vector = _vector(rng, 8)
        rows = [(i, f"h{i}{rng.random()}", pack(vector)) for i, _text in pending]
        index.store_embeddings("m", rows, cache=False, now=0)
        return vector

    a.sync()
    first = embed(a)
    (hit,) = b.vector_search("m", first, 5)  # b reads the table from the file
    assert "first version" in hit.text and hit.score == pytest.approx(1.0, abs=1e-5)
    note.write_text("# Notes\n\nsecond version, rewritten by the other worker\n")
    a.sync()  # a re-chunks the file (new chunk ids) and embeds them
    second = embed(a)
    (hit,) = b.vector_search("m", second, 5)
    assert "second version" in hit.text and hit.score == pytest.approx(1.0, abs=1e-5)
    a.close()
    b.close()
