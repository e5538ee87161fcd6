"""The Chroma writes of memory records a store makes: upsert, fields only, content with the stored vector."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from chromadb.api.models.Collection import Collection

from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.records import memory_metadata
from agent_memory.domain.model import Memory


def upsert(
    boundary: Boundary, collection: Collection, memories: Sequence[Memory], vectors: Sequence[list[float]]
) -> None:
    boundary.call(
        "write memories",
        lambda: collection.upsert(
            ids=[m.id for m in memories],
            embeddings=cast(Any, list(vectors)),
            documents=[m.content for m in memories],
            metadatas=cast(Any, [memory_metadata(m) for m in memories]),
        ),
    )


def update_fields(boundary: Boundary, collection: Collection, memories: Sequence[Memory]) -> None:
    boundary.call(
        "update memories",
        lambda: collection.update(
            ids=[m.id for m in memories], metadatas=cast(Any, [memory_metadata(m) for m in memories])
        ),
    )


def update_content(boundary: Boundary, collection: Collection, memories: Sequence[Memory]) -> None:
    """New content with the stored vector: Chroma wants embeddings with documents when it has no embedder."""
    ids = [m.id for m in memories]
    found = boundary.call("read embeddings", lambda: collection.get(ids=ids, include=["embeddings"]))
    vectors = dict(zip(found["ids"], found["embeddings"] if found["embeddings"] is not None else [], strict=False))
    boundary.call(
        "update memories",
        lambda: collection.update(
            ids=ids,
            embeddings=cast(Any, [[float(x) for x in vectors[i]] for i in ids]),
            documents=[m.content for m in memories],
            metadatas=cast(Any, [memory_metadata(m) for m in memories]),
        ),
    )
