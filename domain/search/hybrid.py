"""Hybrid ranking: cosine similarity with neighbour context fused with normalised bm25 (see BENCHMARKS.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

DEPTH = 50  # candidates taken from each side before fusing
DENSE_WEIGHT = 0.5  # score = DENSE_WEIGHT * dense + (1 - DENSE_WEIGHT) * keyword
NEIGHBOUR_COSINE = 0.25  # share of the previous and the next memory's cosine added to a memory's own
# the relevance floor by default: a search whose best candidate has a cosine similarity under it finds nothing;
# otherwise the ranking is untouched. Set for the bundled MiniLM: on the LoCoMo dev file every question's best hit
# scores over 0.3 and costs nothing up to 0.3, while 0.2 empties 37 and 40 of 50 off-topic questions (turns, facts);
# short questions set the ceiling ("which language?" for "User prefers Python" scores 0.25) and "nonexistent topic"
# the floor (0.19 in a two-memory store) (bench/research/relevance_floor.py, BENCHMARKS.md "The relevance floor")
MIN_SIMILARITY = 0.2


class SearchMode(StrEnum):
    """How search ranks: both signals fused (default), meaning only, or words only."""

    HYBRID = "hybrid"
    SEMANTIC = "semantic"
    KEYWORD = "keyword"


def dense_score(
    memory_id: str,
    similarity: Mapping[str, float],
    neighbours: Mapping[str, tuple[str | None, str | None]],
) -> float:
    """A memory's cosine plus a quarter of each neighbour's: the turns around a hit carry its context."""
    before, after = neighbours.get(memory_id, (None, None))
    context = sum(similarity.get(n, 0.0) for n in (before, after) if n is not None)
    return similarity.get(memory_id, 0.0) + NEIGHBOUR_COSINE * context


def fuse(
    candidates: Sequence[str],
    similarity: Mapping[str, float],
    keyword: Mapping[str, float],
    neighbours: Mapping[str, tuple[str | None, str | None]],
) -> list[tuple[str, float]]:
    """Candidates ranked by the weighted sum of dense score and keyword score (0 when not a keyword hit)."""
    scored = [
        (
            memory_id,
            DENSE_WEIGHT * dense_score(memory_id, similarity, neighbours)
            + (1.0 - DENSE_WEIGHT) * keyword.get(memory_id, 0.0),
        )
        for memory_id in candidates
    ]
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored
