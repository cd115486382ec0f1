"""What memory search runs with: the config's `memory.*` and `memory.search.*` (OpenClaw's
keys) as plain settings, with OpenClaw's defaults for what is unset. Pure."""

from __future__ import annotations

from typing import Literal

import attrs

from ._embed import EmbeddingSettings
from ._index import DEFAULT_MAX_INDEX_BYTES

__all__ = ["Citations", "EmbeddingSettings", "MemorySettings"]

Citations = Literal["auto", "on", "off"]


@attrs.frozen
class MemorySettings:
    """`memory.search` as a search runs it. `provider` is the configured one (`none`: keywords
    only); `embedding` is set when an endpoint is usable."""

    enabled: bool = True
    provider: str = "none"
    embedding: EmbeddingSettings | None = None
    max_results: int = 6
    min_score: float = 0.35
    vector_weight: float = 0.7
    text_weight: float = 0.3
    half_life_days: float = 30.0
    citations: Citations = "auto"
    max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES
    cache: bool = True
    """Embeddings cached by text hash (`memory.search.cache.enabled`)."""
