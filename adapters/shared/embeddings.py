"""The checks every vector store makes on the embeddings it is given, as the DomainErrors they refuse with."""

from __future__ import annotations

from collections.abc import Sequence, Sized

from agent_memory.domain.errors import DomainError, ErrorCode


def count_mismatch(memories: Sized, embeddings: Sized) -> DomainError | None:
    """STORAGE_ERROR when there is not one embedding per memory (a caller's bug, never user input)."""
    if len(memories) == len(embeddings):
        return None
    return DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number")


def dimension_mismatch(expected: int | None, vectors: Sequence[Sized]) -> DomainError | None:
    """EMBEDDING_MISMATCH for the first vector whose length is not the store's dimension (None: not known yet)."""
    for vector in vectors:
        if expected is not None and len(vector) != expected:
            return DomainError(
                ErrorCode.EMBEDDING_MISMATCH,
                f"This store holds {expected}-dimensional embeddings but got {len(vector)} "
                "dimensions. Run `memory reindex` after changing the embedding model.",
            )
    return None


def mixed_dimensions(vectors: Sequence[Sized]) -> DomainError | None:
    """EMBEDDING_MISMATCH when a rebuild's embeddings do not all have one dimension."""
    dimensions = {len(vector) for vector in vectors}
    if len(dimensions) < 2:
        return None
    return DomainError(
        ErrorCode.EMBEDDING_MISMATCH, f"A rebuild got embeddings of several dimensions: {sorted(dimensions)}."
    )
