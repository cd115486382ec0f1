"""The vector side of an agent's memory index in memory: one `VectorTable` per embedding model,
every embedded chunk's unit vector kept as float32, searched by brute-force cosine similarity.

With numpy (the `clawlane[memory]` extra) the vectors are rows of one float32 matrix and a
search is one matrix-vector product and a partial sort: about 10 ms at 10,000 chunks x 1,536
dimensions on this machine (`scripts/bench_memory`), where the pure-Python loop takes over a
second. Without numpy the same table keeps one `array('f')` per chunk and compares them in C
through `math.dist` (unit vectors: |a - b|^2 = 2 - 2 cos): correct, and fine for a few
hundred chunks, but it grows with chunks x dimensions. `NUMPY` says which one this process
has; `VectorTable(numpy=False)` forces the pure-Python side (tests, the benchmark).

The table is filled once from the index file and then kept current by the index as it changes
(`put` when a chunk is embedded, `discard` when a chunk is dropped or re-embedded by another
model), never rebuilt on every change: a slot freed by a dropped chunk is reused by the next
one, and the matrix grows by half again when full. All vectors of a table have the dimensions
of the latest one put (an endpoint that changes its dimensions starts the table again); a
query of other dimensions finds nothing.

Not thread-safe: the index calls it under its lock. Blocking (pure computation).
"""

from __future__ import annotations

import array
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from ._embed import unpack

__all__ = ["NUMPY", "VectorTable"]

if TYPE_CHECKING:
    import numpy as np
else:
    try:
        import numpy as np
    except ImportError:  # the `memory` extra is not installed: the pure-Python side
        np = None

NUMPY: Final = np is not None
"""numpy is importable here (the `clawlane[memory]` extra): tables use a float32 matrix."""
_FIRST_CAPACITY: Final = 64


class VectorTable:
    """One model's chunk vectors (see the module docstring). Rows go by chunk id."""

    def __init__(self, *, numpy: bool = NUMPY) -> None:
        self.numpy = numpy and NUMPY
        self._reset(0)

    def _reset(self, dims: int) -> None:
        self.dims = dims
        self._slots: dict[int, int] = {}
        """chunk id -> row."""
        self._ids: list[int] = []
        """row -> chunk id (-1: free)."""
        self._free: list[int] = []
        self._matrix: Any = None
        """numpy: float32 rows x dims (zero rows where free; rows past `_ids` unset)."""
        self._rows: list[array.array[float] | None] = []
        """pure Python: one vector per row (None where free)."""

    def __len__(self) -> int:
        return len(self._slots)

    def nbytes(self) -> int:
        """Bytes the vectors take (the matrix's capacity with numpy)."""
        if self.numpy:
            return int(self._matrix.nbytes) if self._matrix is not None else 0
        return sum(len(r) * 4 for r in self._rows if r is not None)

    def load(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Fill an empty table with many chunks' vectors at once (those of the most common
        dimensions; the index's file as first read)."""
        rows = list(rows)
        by_dims = Counter(len(blob) // 4 for _i, blob in rows)
        if self._slots or not by_dims:
            for chunk_id, blob in rows:
                self.put(chunk_id, blob)
            return
        dims = by_dims.most_common(1)[0][0]
        kept = [(i, blob) for i, blob in rows if len(blob) // 4 == dims and dims]
        self._reset(dims)
        self._ids = [i for i, _blob in kept]
        self._slots = {i: row for row, i in enumerate(self._ids)}
        if not self.numpy:
            self._rows = [unpack(blob) for _i, blob in kept]
            return
        capacity = max(_FIRST_CAPACITY, len(kept) * 3 // 2)
        self._matrix = np.empty((capacity, dims), np.float32)
        joined = b"".join(blob for _i, blob in kept)
        self._matrix[: len(kept)] = np.frombuffer(joined, dtype="<f4").reshape(len(kept), dims)

    def put(self, chunk_id: int, blob: bytes) -> None:
        """Keep (or replace) a chunk's vector, given as little-endian float32 bytes."""
        dims = len(blob) // 4
        if dims == 0:
            return
        if dims != self.dims:
            self._reset(dims)
        row = self._slots.get(chunk_id)
        if row is None:
            row = self._free.pop() if self._free else self._grow()
            self._slots[chunk_id] = row
            self._ids[row] = chunk_id
        if self.numpy:
            self._matrix[row] = np.frombuffer(blob, dtype="<f4")
        else:
            self._rows[row] = unpack(blob)

    def _grow(self) -> int:
        row = len(self._ids)
        self._ids.append(-1)
        if not self.numpy:
            self._rows.append(None)
            return row
        capacity = 0 if self._matrix is None else self._matrix.shape[0]
        if row >= capacity:
            bigger = np.empty((max(_FIRST_CAPACITY, capacity * 3 // 2), self.dims), np.float32)
            if self._matrix is not None:
                bigger[:capacity] = self._matrix
            self._matrix = bigger
        return row

    def discard(self, chunk_id: int) -> None:
        """Forget a chunk's vector (nothing when it has none)."""
        row = self._slots.pop(chunk_id, None)
        if row is None:
            return
        self._ids[row] = -1
        self._free.append(row)
        if self.numpy:
            self._matrix[row] = 0.0
        else:
            self._rows[row] = None

    def search(self, query: Sequence[float], limit: int) -> list[tuple[int, float]]:
        """The `limit` chunks most similar to `query` (a unit vector): (chunk id, cosine
        similarity clamped to [0, 1]), best first."""
        if not self._slots or len(query) != self.dims or limit <= 0:
            return []
        if self.numpy:
            return self._search_numpy(query, limit)
        point = tuple(query)
        dist = math.dist
        scored = [
            (max(0.0, 1.0 - dist(vector, point) ** 2 / 2), self._ids[row])
            for row, vector in enumerate(self._rows)
            if vector is not None
        ]
        scored.sort(key=lambda e: -e[0])
        return [(chunk_id, score) for score, chunk_id in scored[:limit]]

    def _search_numpy(self, query: Sequence[float], limit: int) -> list[tuple[int, float]]:
        used = len(self._ids)
        scores = self._matrix[:used] @ np.asarray(query, dtype=np.float32)
        if self._free:
            scores[self._free] = -np.inf
        k = min(limit, len(self._slots))
        top = np.argpartition(-scores, k - 1)[:k] if k < used else np.arange(used)
        top = top[np.argsort(-scores[top], kind="stable")][:k]
        return [(self._ids[row], max(0.0, min(1.0, float(scores[row])))) for row in top.tolist()]
