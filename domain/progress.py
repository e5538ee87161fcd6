"""A batch's progress: texts embedded a slice at a time, each slice counted to the caller's Progress."""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Result

from agent_memory.domain.errors import DomainError
from agent_memory.domain.ports import Embedder, Vector
from agent_memory.domain.results import in_turn
from agent_memory.domain.views import Progress

# memories embedded between two reports: small enough for a bar that moves every few seconds with the slowest model
# (about 20 memories/s), large enough that the embedder still sorts each slice by length into full batches
EMBED_SLICE = 64


class Count:
    """Memories done of a batch's total, reported after each step (the counts only grow)."""

    def __init__(self, total: int, progress: Progress) -> None:
        self.total, self.progress, self.done = total, progress, 0

    def add(self, done: int) -> None:
        self.done += done
        self.progress(self.done, self.total)


def embedded(embedder: Embedder, texts: Sequence[str], count: Count) -> Result[list[Vector], DomainError]:
    """The texts' vectors in order, embedded a slice at a time, each slice counted; the first failure stops it."""
    slices = [texts[start : start + EMBED_SLICE] for start in range(0, len(texts), EMBED_SLICE)]

    def embed(part: Sequence[str]) -> Result[list[Vector], DomainError]:
        return embedder.embed_documents(part).map(lambda vectors: _counted(vectors, len(part), count))

    return in_turn(slices, embed).map(lambda parts: [vector for part in parts for vector in part])


def _counted(vectors: list[Vector], done: int, count: Count) -> list[Vector]:
    count.add(done)
    return vectors
