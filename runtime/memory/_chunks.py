"""Markdown split into the chunks the index holds: runs of whole lines of about 400 tokens
(1,600 characters) with about 80 tokens (320 characters) of overlap, as OpenClaw chunks memory;
a line longer than a chunk is cut. Each chunk knows its first and last line (1-based)."""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ["CHUNK_CHARS", "OVERLAP_CHARS", "Chunk", "chunk_markdown"]

CHUNK_CHARS: Final = 1_600
OVERLAP_CHARS: Final = 320


@attrs.frozen
class Chunk:
    start_line: int
    end_line: int
    text: str


def _pieces(lines: list[str], max_chars: int) -> list[tuple[int, str]]:
    """(line number, text) pieces: each line, a long one cut into `max_chars` parts."""
    out: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if len(line) <= max_chars:
            out.append((number, line))
            continue
        for start in range(0, len(line), max_chars):
            out.append((number, line[start : start + max_chars]))
    return out


def chunk_markdown(
    text: str, *, max_chars: int = CHUNK_CHARS, overlap_chars: int = OVERLAP_CHARS
) -> list[Chunk]:
    """`text` as chunks in order; blank chunks are left out."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    pieces = _pieces(lines, max_chars)
    chunks: list[Chunk] = []
    i = 0
    while i < len(pieces):
        size = 0
        j = i
        while j < len(pieces) and (j == i or size + len(pieces[j][1]) + 1 <= max_chars):
            size += len(pieces[j][1]) + 1
            j += 1
        body = "\n".join(p[1] for p in pieces[i:j])
        if body.strip():
            chunks.append(Chunk(pieces[i][0], pieces[j - 1][0], body))
        if j >= len(pieces):
            break
        back, k = 0, j
        while k - 1 > i and back + len(pieces[k - 1][1]) + 1 <= overlap_chars:
            back += len(pieces[k - 1][1]) + 1
            k -= 1
        i = k
    return chunks
