"""What the use cases return: memories with their computed confidence, search results, status."""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from domain.model import Memory, ScoredMemory


@frozen
class MemoryView:
    """A memory as read now: the stored record plus its confidence at the time of reading."""

    memory: Memory
    confidence: float


@frozen
class SearchResults:
    """The hits of one search, best first."""

    results: tuple[ScoredMemory, ...]

    @property
    def count(self) -> int:
        return len(self.results)


@frozen
class Status:
    """A healthy backend: its name, how many memories the store holds, and where it lives."""

    backend: str
    store: str
    memory_count: int
    location: Mapping[str, str]
