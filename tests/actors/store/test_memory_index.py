"""The agents' memory indexes on a real PostgreSQL (`actors.store.PostgresMemoryIndexes`): the
SQLite index's behaviour tests (`tests/runtime/memory/test_index.py`) and its hybrid search
tests (`test_vectors.py`) run here again on indexes in PostgreSQL, each test in a schema of
its own; and what is PostgreSQL's own: rows scoped to a host, an agent and a workspace, the
workers of one host sharing theirs (vectors following another process's writes), a lost
connection replaced, the tables made by the store's migrations."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from actors import PostgresBackend
from actors.store import PostgresMemoryIndexes
from runtime.memory import IndexBackend, MemoryService
from runtime.memory._embed import normalize, pack
from runtime.memory._index import DEFAULT_MAX_INDEX_BYTES
from tests.actors._databases import pg_url, terminate_connections
from tests.runtime.memory.test_index import (
    CORPUS,
    TODAY,
    MakeIndex,
    _search,
    _write,
    index,
    test_filename_hits_rank_first_and_recency_orders_daily_notes,
    test_keyword_recall_at_5_on_the_labelled_set,
    test_only_memory_files_are_indexed_and_found,
    test_queries_without_words_find_nothing,
    test_the_chunks_to_embed_follow_writes_and_embeddings,
    test_the_index_follows_edits_additions_and_deletions_on_disk,
    test_the_indexed_text_is_bounded_in_bytes_newest_notes_first,
)
from tests.runtime.memory.test_vectors import (
    test_a_hybrid_search_merges_vector_and_keyword_scores,
    test_a_slow_backfill_is_kept_and_the_search_answers_meanwhile,
    test_recall_at_5_keyword_only_and_hybrid_on_the_labelled_set,
    test_unchanged_text_is_never_embedded_twice,
)

__all__ = [  # the fixtures, used by name, and the shared tests, run here on PostgreSQL
    "index",
    "pg_url",
    "test_a_hybrid_search_merges_vector_and_keyword_scores",
    "test_a_slow_backfill_is_kept_and_the_search_answers_meanwhile",
    "test_filename_hits_rank_first_and_recency_orders_daily_notes",
    "test_keyword_recall_at_5_on_the_labelled_set",
    "test_only_memory_files_are_indexed_and_found",
    "test_queries_without_words_find_nothing",
    "test_recall_at_5_keyword_only_and_hybrid_on_the_labelled_set",
    "test_the_chunks_to_embed_follow_writes_and_embeddings",
    "test_the_index_follows_edits_additions_and_deletions_on_disk",
    "test_the_indexed_text_is_bounded_in_bytes_newest_notes_first",
    "test_unchanged_text_is_never_embedded_twice",
]


@pytest.fixture
def migrated(pg_url: str) -> str:
    """`pg_url` with the store's migrations applied (the memory tables among them)."""
    backend = PostgresBackend(pg_url)
    backend.open()
    backend.close([])
    return pg_url


def _indexes(url: str, host: str = "host-a") -> PostgresMemoryIndexes:
    backend = PostgresBackend(url)
    return PostgresMemoryIndexes(backend.open_reader, backend.location, host=host)


@pytest.fixture
def make_index(migrated: str) -> Iterator[MakeIndex]:
    indexes = _indexes(migrated)
    made: list[IndexBackend] = []

    def make(ws: Path, max_bytes: int = DEFAULT_MAX_INDEX_BYTES) -> IndexBackend:
        idx = indexes(f"agent-{len(made)}", ws)
        idx.max_bytes = max_bytes
        made.append(idx)
        return idx

    yield make
    for idx in made:
        idx.close()
    indexes.close()


@pytest.fixture
def service(migrated: str, tmp_path: Path) -> Iterator[MemoryService]:
    svc = MemoryService(tmp_path / "idx")
    indexes = _indexes(migrated)
    svc.use_indexes(indexes)
    noon = dt.datetime.combine(TODAY, dt.time(12)).astimezone().timestamp()
    svc.clock = lambda: noon
    yield svc
    svc.close()
    indexes.close()
    assert not (tmp_path / "idx").exists()  # no SQLite index was made


@pytest.fixture(name="ws")
def _corpus_or_empty_ws(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The vector tests' workspace holds the labelled corpus; the index tests' is empty."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    if request.node.originalname in _VECTOR_TESTS:
        for rel, text in CORPUS.items():
            _write(workspace, rel, text + "\n")
    return workspace


_VECTOR_TESTS = frozenset(
    {
        "test_a_hybrid_search_merges_vector_and_keyword_scores",
        "test_a_slow_backfill_is_kept_and_the_search_answers_meanwhile",
        "test_recall_at_5_keyword_only_and_hybrid_on_the_labelled_set",
        "test_unchanged_text_is_never_embedded_twice",
    }
)


def test_each_host_agent_and_workspace_has_rows_of_its_own(migrated: str, tmp_path: Path) -> None:
    ws, other = tmp_path / "ws", tmp_path / "other"
    _write(ws, "memory/a.md", "the kestrel nests in the tower\n")
    _write(other, "memory/a.md", "the falcon hunts at dawn\n")
    host_a, host_b = _indexes(migrated, "host-a"), _indexes(migrated, "host-b")
    try:
        a = host_a("main", ws)
        assert _search(a, "kestrel") == ["memory/a.md"]
        # another host with a workspace at the same path: its own files, not A's rows
        b = host_b("main", ws)
        assert b.keyword_search("kestrel", limit=50, sync=False) == []
        assert _search(b, "kestrel") == ["memory/a.md"]
        # another agent of host A, another workspace
        c = host_a("ops", other)
        assert _search(c, "kestrel") == []
        assert _search(c, "falcon") == ["memory/a.md"]
        assert _search(a, "falcon") == []
        # B's file gone on B's disk: B forgets it, A (not synced) keeps its own rows
        (ws / "memory/a.md").unlink()
        assert _search(b, "kestrel") == []
        assert [h.path for h in a.keyword_search("kestrel", limit=50, sync=False)] == [
            "memory/a.md"
        ]
        assert a.status().chunks == 1 and b.status().chunks == 0
    finally:
        host_a.close()
        host_b.close()


def test_the_workers_of_one_host_share_their_rows_and_vectors_follow(
    migrated: str, ws: Path
) -> None:
    _write(ws, "memory/a.md", "the kestrel nests in the tower\n")
    _write(ws, "memory/b.md", "the falcon hunts at dawn\n")
    worker_1, worker_2 = _indexes(migrated), _indexes(migrated)  # two processes' pools
    try:
        one, two = worker_1("main", ws), worker_2("main", ws)
        assert one.sync() == 2
        assert two.sync() == 0  # the first worker's rows are the second's
        assert [h.path for h in two.keyword_search("falcon", limit=50, sync=False)] == [
            "memory/b.md"
        ]
        model = "test#2"
        ids = dict((text.split()[1], i) for i, text in one.chunks_for_embedding(model, 10))
        near, far = pack(normalize([1.0, 0.0])), pack(normalize([0.0, 1.0]))
        assert two.pending_embeddings(model) == 2
        one.store_embeddings(model, [(ids["kestrel"], "k", near), (ids["falcon"], "f", far)], now=1)
        assert two.chunks_for_embedding(model, 10) == []  # the first worker's embeddings
        assert [h.path for h in two.vector_search(model, [1.0, 0.0], 1)] == ["memory/a.md"]
        # the first worker re-embeds: the second's vectors in memory follow
        one.store_embeddings(
            model, [(ids["kestrel"], "k2", far), (ids["falcon"], "f2", near)], now=2
        )
        assert [h.path for h in two.vector_search(model, [1.0, 0.0], 1)] == ["memory/b.md"]
        assert two.pending_embeddings(model) == 0
        assert set(two.cached_embeddings(model, ["k", "f2", "x"])) == {"k", "f2"}
    finally:
        worker_1.close()
        worker_2.close()


def test_a_lost_connection_is_replaced(migrated: str, ws: Path) -> None:
    _write(ws, "memory/a.md", "the kestrel nests in the tower\n")
    indexes = _indexes(migrated)
    try:
        idx = indexes("main", ws)
        assert _search(idx, "kestrel") == ["memory/a.md"]
        assert terminate_connections(migrated) >= 1  # as a PostgreSQL restart would
        assert _search(idx, "kestrel") == ["memory/a.md"]
    finally:
        indexes.close()


async def test_a_gateway_store_on_postgresql_makes_the_memory_tables(migrated: str) -> None:
    def tables() -> list[str]:
        import psycopg

        with psycopg.connect(migrated, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'memory%%'"
                " AND schemaname = current_schema() ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]

    with trio.fail_after(20):
        found = await trio.to_thread.run_sync(tables)
    assert found == ["memory_chunks", "memory_embedding_cache", "memory_files", "memory_scopes"]


def test_keyword_ranking_scores_fewer_chunks_for_the_same_answer(
    make_index: MakeIndex, migrated: str, tmp_path: Path
) -> None:
    """bm25 over the chunks that hold the rarer words only, when the common words cannot lift
    the others into the top (`keyword_scores`' pruning): the same chunks in the same order
    with the same scores as scoring every chunk that holds a word, on notes whose words
    follow Zipf's law, as prose's do."""
    import random

    import psycopg

    from actors.store._memory_bm25 import Bm25Cache, keyword_scores

    rng = random.Random(3)
    vocabulary = [f"w{n}" for n in range(400)]
    weights = [1 / (n + 1) for n in range(len(vocabulary))]
    ws = tmp_path / "zipf"
    for day in range(1, 29):
        paragraphs = [
            " ".join(rng.choices(vocabulary, weights, k=rng.randint(150, 220))) for _ in range(6)
        ]
        _write(ws, f"memory/2026-02-{day:02d}.md", "\n\n".join(paragraphs) + "\n")
    idx = make_index(ws)
    assert idx.sync() == 28
    queries = [[rng.choice(vocabulary[:8]), *rng.sample(vocabulary[20:200], 2)] for _ in range(30)]
    queries += [["w0"], ["w1", "w2"], ["w0", "w399"], ["w3", "w250", "w0", "w60"], ["nothing"]]
    pruning, full = Bm25Cache(), Bm25Cache()
    with psycopg.connect(migrated, autocommit=True) as conn:
        (scope,) = conn.execute("SELECT id FROM memory_scopes").fetchone() or (0,)
        for words in queries:
            for limit in (5, 20, 50):
                want = keyword_scores(conn, scope, words, limit, full, prune=False)
                got = keyword_scores(conn, scope, words, limit, pruning)
                assert [i for i, _ in got] == [i for i, _ in want], (words, limit)
                assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)
    assert pruning.pruned >= 50 and full.pruned == 0
    assert pruning.widened >= 1  # a guess found wrong was scored again with more words
