"""Hybrid ranking: cosine similarity with neighbour context fused with normalised bm25 (see BENCHMARKS.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

DEPTH = 50  # candidates taken from each side before fusing
DENSE_WEIGHT = 0.5  # score = DENSE_WEIGHT * dense + (1 - DENSE_WEIGHT) * keyword
NEIGHBOUR_COSINE = 0.25  # share of the previous and the next memory's cosine added to a memory's own
# the relevance floor by default: off. The floor is the cosine similarity a hit needs, half of it when it shares a
# word with the query; 0.25 cost under 0.2 points of recall on the LoCoMo dev file's long questions
# (bench/research/relevance_floor.py, BENCHMARKS.md "The relevance floor"), but it drops what short questions
# ("which language?") and keyword feedback rightly find with the bundled MiniLM: to be set with a stronger model
MIN_SIMILARITY = 0.0


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
