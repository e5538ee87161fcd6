"""The built-in default store before anything is written to it: reads answer empty, nothing is created."""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DEFAULT_STORE, Memory
from agent_memory.domain.ports import Vector


def _not_written_yet() -> Failure[DomainError]:
    return Failure(
        DomainError(
            ErrorCode.STORE_NOT_FOUND,
            f"The store '{DEFAULT_STORE}' holds nothing yet: create a memory first.",
        )
    )


class EmptyStore:
    """A VectorStore with no memories that refuses writes: what a reader sees of a store nobody wrote to.

    Read-only commands on a fresh install (`memory search`, `status`, `list`, `export`, …) answer from it
    instead of creating the store; the first write opens the real store with `create=True`.
    """

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        return _not_written_yet()

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        return Success([])

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        return Success([])

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        return Success([])

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        return _not_written_yet()

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        return _not_written_yet()

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        return _not_written_yet()

    def count(self) -> Result[int, DomainError]:
        return Success(0)

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def embedding_model(self) -> Result[str | None, DomainError]:
        return Success(None)

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        return Success(set())

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        return Success({})

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        return Success(None) if not memories else _not_written_yet()
