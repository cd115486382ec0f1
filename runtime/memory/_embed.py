"""Embeddings for the vector side of memory search: an OpenAI-compatible `/embeddings` client
(`EmbeddingClient`) and how a vector is kept (`pack`, `unpack`: float32 bytes).

The client posts `{model, input: [texts]}` to `<baseUrl>/embeddings` with the configured key
and headers, in batches of `BATCH` texts, and returns one vector per text, normalized to unit
length (so a cosine similarity is a dot product). Anything that goes wrong (no answer within
the timeout, a status that is not 2xx, a body that is not the OpenAI shape, vectors of
different lengths) is `EmbeddingFailed` with a one-line reason, which the search turns into a
note on keyword results: the provider never fails a search or a run.

The vectors in memory and their search are `_vectors.VectorTable`'s.
"""

from __future__ import annotations

import array
import math
import sys
from collections.abc import Sequence
from typing import Any, Final

import attrs
import httpx
import msgspec

__all__ = [
    "BATCH",
    "EmbeddingClient",
    "EmbeddingFailed",
    "EmbeddingSettings",
    "pack",
    "unpack",
]

BATCH: Final = 64
"""Texts per `/embeddings` request."""
DEFAULT_EMBEDDING_TIMEOUT_S: Final = 10.0


@attrs.frozen
class EmbeddingSettings:
    """An OpenAI-compatible `/embeddings` endpoint (`memory.search.remote`)."""

    base_url: str
    model: str
    api_key: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = DEFAULT_EMBEDDING_TIMEOUT_S


class EmbeddingFailed(Exception):
    """The embeddings endpoint did not give usable vectors (the message says why)."""


class _Item(msgspec.Struct):
    embedding: list[float]
    index: int = -1


class _Response(msgspec.Struct):
    data: list[_Item]


_decode = msgspec.json.Decoder(_Response).decode


def normalize(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else list(vector)


def pack(vector: Sequence[float]) -> bytes:
    """A vector as float32 bytes (little-endian), as the index keeps it."""
    out = array.array("f", vector)
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def unpack(blob: bytes) -> array.array[float]:
    out = array.array("f")
    out.frombytes(blob)
    if sys.byteorder != "little":
        out.byteswap()
    return out


@attrs.define(eq=False)
class EmbeddingClient:
    """Talks to one `/embeddings` endpoint (see the module docstring). The transport is
    replaceable for unit tests; the gateway uses the network."""

    settings: EmbeddingSettings
    transport: httpx.AsyncBaseTransport | None = None

    @property
    def identity(self) -> str:
        """What the index files a vector under: the endpoint and the model."""
        return f"{self.settings.base_url.rstrip('/')}#{self.settings.model}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order. A checkpoint; raises `EmbeddingFailed`."""
        s = self.settings
        headers = {"content-type": "application/json", **dict(s.headers)}
        if s.api_key:
            headers["authorization"] = f"Bearer {s.api_key}"
        url = f"{s.base_url.rstrip('/')}/embeddings"
        out: list[list[float]] = []
        try:
            async with httpx.AsyncClient(
                timeout=httpx.Timeout(s.timeout_s), transport=self.transport
            ) as client:
                for start in range(0, len(texts), BATCH):
                    batch = list(texts[start : start + BATCH])
                    out.extend(await self._post(client, url, headers, batch))
        except httpx.TimeoutException as exc:
            raise EmbeddingFailed(f"no answer from {url} within {s.timeout_s:g} s") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingFailed(f"{url}: {type(exc).__name__}: {exc}") from exc
        if len({len(v) for v in out}) > 1:
            raise EmbeddingFailed(f"{url} answered vectors of different lengths")
        return out

    async def _post(
        self, client: httpx.AsyncClient, url: str, headers: dict[str, str], batch: list[str]
    ) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.settings.model, "input": batch}
        response = await client.post(url, content=msgspec.json.encode(body), headers=headers)
        if not response.is_success:
            text = response.text[:200].strip()
            raise EmbeddingFailed(f"{url} answered HTTP {response.status_code}: {text}")
        try:
            items = _decode(response.content).data
        except msgspec.DecodeError as exc:
            raise EmbeddingFailed(f"{url} answered an unexpected body: {exc}") from exc
        if len(items) != len(batch) or any(not item.embedding for item in items):
            raise EmbeddingFailed(f"{url} answered {len(items)} embeddings for {len(batch)} texts")
        if all(item.index >= 0 for item in items):
            items = sorted(items, key=lambda item: item.index)
        return [normalize(item.embedding) for item in items]
