"""The keyword ranking of the PostgreSQL memory index (`actors.store._memory`): bm25 as FTS5
computes it (k1 1.2, b 0.75; a term's idf from the chunks of the scope that hold it), with
`ts_rank_cd` of the term alone as its frequency in the chunk and the chunk's distinct words
(`doc_len`) as its length, summed over the query's words: a rare word weighs more than a
common one, as in the SQLite index, where `ts_rank_cd` of the whole query alone would rank
`the` as high as `kestrel`.

Fast without changing the answer (`keyword_scores`):

- The scope's chunk count and average length, and each word's chunk count, are read once per
  revision of the scope (`Bm25Cache`; the revision is raised by every change, and read again
  before each search).
- The chunks a common word matches are not all scored (MaxScore pruning): a term's score in
  a chunk is below `2.2 × idf` whatever its frequency, so the chunks holding only the most
  common words (`idf` 1e-6 for a word in half the chunks or more) score below the sum of
  those bounds. The chunks holding any of the other words are scored in full; when `limit`
  of them score at least that sum, the others cannot reach the top `limit` and are never
  unpacked. Otherwise the next most common word joins the scored ones, until every word
  does (the full ranking, as before).
"""

from __future__ import annotations

import math
from typing import Any, Final

import attrs
import psycopg

__all__ = ["Bm25Cache", "keyword_scores"]

K1: Final = 1.2
_TERM_BOUND: Final = K1 + 1
"""A term's score in a chunk is below `idf × (k1 + 1)`: tf / (tf + k1 × length part) < 1."""
IDF_FLOOR: Final = 1e-6
_DF_KEEP: Final = 4_096
"""Word counts kept per revision (past it, the cache starts again)."""

_REVISION: Final = "SELECT revision FROM memory_scopes WHERE id = %s"
_STATS: Final = """
SELECT s.revision, count(c.id), COALESCE(avg(c.doc_len), 0) + 1
FROM memory_scopes AS s LEFT JOIN memory_chunks AS c ON c.scope_id = s.id
WHERE s.id = %s GROUP BY s.revision
"""
_DF: Final = """
SELECT (
    SELECT count(*) FROM memory_chunks AS c
    WHERE c.scope_id = %(scope)s AND c.doc @@ websearch_to_tsquery('simple', '"' || u.w || '"')
) FROM unnest(%(words)s::text[]) WITH ORDINALITY AS u(w, i) ORDER BY u.i
"""
_SCORES: Final = """
WITH terms AS MATERIALIZED (
    SELECT websearch_to_tsquery('simple', '"' || u.w || '"') AS tq, u.idf
    FROM unnest(%(words)s::text[], %(idfs)s::float8[]) AS u(w, idf)
)
SELECT h.id, s.score FROM (
    SELECT c.id, c.doc || ''::tsvector AS doc, c.doc_len FROM memory_chunks AS c
    WHERE c.scope_id = %(scope)s AND c.doc @@ websearch_to_tsquery('simple', %(match)s)
    OFFSET 0
) AS h, LATERAL (
    SELECT sum(t.idf * f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * h.doc_len / %(avgdl)s))) AS score
    FROM terms AS t, LATERAL (SELECT ts_rank_cd('{1,1,1,1}', h.doc, t.tq) AS tf OFFSET 0) AS f
    WHERE f.tf > 0
) AS s
WHERE s.score IS NOT NULL ORDER BY s.score DESC, h.id LIMIT %(limit)s
"""
"""The chunks holding any of `match`'s words, scored over all the query's words (`words`
with their `idfs`): each chunk's tsvector unpacked once (`|| ''`, kept by `OFFSET 0` from
being inlined into each word's `ts_rank_cd`, which is computed once per word), and nothing
held but the scores."""


@attrs.define
class Bm25Cache:
    """What bm25 needs of a scope, as of one revision: its chunk count, their average length
    (plus 1, as the ranking has always had it) and the chunk count of each word asked for.
    One per index; used under its lock."""

    revision: int | None = None
    chunks: int = 0
    avgdl: float = 1.0
    df: dict[str, int] = attrs.field(factory=dict)
    pruned: int = 0
    """Searches answered without scoring every chunk that holds one of their words."""
    widened: int = 0
    """Times the words left out turned out able to reach the top: scored again with more."""

    def clear(self) -> None:
        self.revision = None
        self.df.clear()

    def refresh(self, conn: psycopg.Connection[Any], scope: int, words: list[str]) -> None:
        """Current for the scope's revision now, with the counts of `words`: one read when
        nothing changed and every word is known."""
        row = conn.execute(_REVISION, (scope,)).fetchone()
        if row is None or row[0] != self.revision:
            stats = conn.execute(_STATS, (scope,)).fetchone()
            self.clear()
            if stats is not None:
                self.revision, self.chunks, self.avgdl = stats[0], stats[1], float(stats[2])
        missing = [w for w in words if w not in self.df]
        if missing:
            if len(self.df) + len(missing) > _DF_KEEP:
                self.df.clear()
            found = conn.execute(_DF, {"scope": scope, "words": missing}).fetchall()
            self.df.update(zip(missing, (int(r[0]) for r in found), strict=True))

    def idf(self, word: str) -> float:
        df = self.df[word]
        return max(IDF_FLOOR, math.log((self.chunks - df + 0.5) / (df + 0.5)))


def keyword_scores(
    conn: psycopg.Connection[Any],
    scope: int,
    words: list[str],
    limit: int,
    cache: Bm25Cache,
    *,
    prune: bool = True,
) -> list[tuple[int, float]]:
    """The `limit` best chunks of the scope for `words` (distinct), by bm25 (higher is better;
    ties by id): (id, relevance). The same answer as scoring every chunk that holds a word
    (`prune` False), found by scoring fewer (the module docstring)."""
    cache.refresh(conn, scope, words)
    idfs = [cache.idf(w) for w in words]
    args: dict[str, Any] = {"scope": scope, "words": words, "idfs": idfs, "limit": limit}
    args["avgdl"] = cache.avgdl
    # The words from the most common (lowest bound) on: the first `skip` are left out of the
    # match (a guess, checked below).
    by_bound = sorted(range(len(words)), key=lambda i: (idfs[i], -i))
    skip = 0
    while (
        prune
        and skip < len(words) - 1
        and _worth_skipping(skip + 1, by_bound, idfs, cache, words, limit)
    ):
        skip += 1
    while True:
        args["match"] = " or ".join(f'"{words[i]}"' for i in sorted(by_bound[skip:]))
        found = [(int(i), float(s)) for i, s in conn.execute(_SCORES, args).fetchall()]
        if not skip:
            return found
        bound = sum(idfs[i] * _TERM_BOUND for i in by_bound[:skip])
        if len(found) == limit and bound < found[-1][1]:
            cache.pruned += 1
            return found
        cache.widened += 1
        skip -= 1


def _worth_skipping(
    skip: int,
    by_bound: list[int],
    idfs: list[float],
    cache: Bm25Cache,
    words: list[str],
    limit: int,
) -> bool:
    """Whether to leave the `skip` most common words out of the match: if the words left
    still match `limit` chunks between them and the bounds of those left out stay below the
    score of one occurrence of the rarest word in a chunk of average length (its idf)."""
    left = by_bound[skip:]
    bound = sum(idfs[i] * _TERM_BOUND for i in by_bound[:skip])
    return sum(cache.df[words[i]] for i in left) >= limit and bound < idfs[by_bound[-1]]
