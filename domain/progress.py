"""A batch's progress: texts embedded a slice at a time, each slice counted to the caller's Progress."""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Result

from agent_memory.domain.errors import DomainError
from agent_memory.domain.ports import Embedder, Vector
from agent_memory.domain.results import in_turn
from agent_memory.domain.views import Progress

# memories embedded between two reports: a slice this large, of texts of like length, embeds as fast as one call
# (bench/progress_slices.py: 0.99x of one call's CPU for 1,024 texts; slices of 64 cost 1.10x even so sorted, 1.44x
# not), and the bar still moves every 2 s with the shipped model (13 s with one about 20 memories/s)
EMBED_SLICE = 256


class Count:
    """Memories done of a batch's total, reported after each step (the counts only grow)."""

    def __init__(self, total: int, progress: Progress) -> None:
        self.total, self.progress, self.done = total, progress, 0

    def add(self, done: int) -> None:
        self.done += done
        self.progress(self.done, self.total)


def embedded(embedder: Embedder, texts: Sequence[str], count: Count) -> Result[list[Vector], DomainError]:
    """The texts' vectors in order, embedded a slice at a time, each slice counted; the first failure stops it.
    Slices hold texts of like length (shortest first), so that the embedder pads no more than in one call."""
    order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
    slices = [order[start : start + EMBED_SLICE] for start in range(0, len(order), EMBED_SLICE)]

    def embed(part: list[int]) -> Result[list[Vector], DomainError]:
        return embedder.embed_documents([texts[index] for index in part]).map(
            lambda vectors: _counted(vectors, len(part), count)
        )

    return in_turn(slices, embed).map(lambda parts: _in_order(order, [vector for part in parts for vector in part]))


def _counted(vectors: list[Vector], done: int, count: Count) -> list[Vector]:
    count.add(done)
    return vectors


def _in_order(order: list[int], vectors: list[Vector]) -> list[Vector]:
    """Vectors embedded in `order` put back at their texts' places."""
    placed: list[Vector] = list(vectors)
    for vector, index in zip(vectors, order, strict=True):
        placed[index] = vector
    return placed
