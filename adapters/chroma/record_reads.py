"""The read side of a Chroma store asked of Chroma itself (no mirror in process): records and vectors by id, every
record a filter keeps page by page, and the records straight from chroma.sqlite3 when the vector index is damaged.

The store (store.py) answers from its mirror when it has one and calls these otherwise; they raise Abort as
`Boundary.call` does. Which of some ids a filter keeps is sifting.py's.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, cast

from attrs import evolve
from chromadb.api.models.Collection import Collection

from agent_memory.adapters.chroma import layout
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.records import memories_of, to_where
from agent_memory.adapters.chroma.salvage import SalvageError, is_vector_index_damage, salvage_memories
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.disk import FULL_DISK
from agent_memory.domain.errors import DomainError
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory


def by_id(boundary: Boundary, collection: Collection, ids: list[str], batch: int) -> dict[str, Memory]:
    """The memories of these (unique) ids, by id, unknown ids left out, read in client-sized batches."""
    found: dict[str, Memory] = {}
    for part in chunks(ids, batch):
        page = boundary.call(
            "read memories", partial(collection.get, ids=list(part), include=["documents", "metadatas"])
        )
        found.update((memory.id, memory) for memory in page_memories(page))
    return found


def vectors_by_id(boundary: Boundary, collection: Collection, ids: list[str], batch: int) -> dict[str, Any]:
    """The stored vectors of these (unique) ids, by id, unknown ids left out."""
    vectors: dict[str, Any] = {}
    for part in chunks(ids, batch):
        found = boundary.call("read vectors", partial(collection.get, ids=list(part), include=["embeddings"]))
        stored = found["embeddings"] if found["embeddings"] is not None else []
        vectors.update(zip(found["ids"], stored, strict=False))
    return vectors


def scanned(boundary: Boundary, collection: Collection, where: MemoryFilter) -> list[Memory]:
    """Every memory the filter keeps, read in pages of layout.SCAN_PAGE."""
    clause = to_where(where)
    memories: list[Memory] = []
    offset = 0
    while True:
        page = boundary.call(
            "scan memories",
            partial(
                collection.get,
                where=cast(Any, clause),
                limit=layout.SCAN_PAGE,
                offset=offset,
                include=["documents", "metadatas"],
            ),
        )
        batch = page_memories(page)
        memories.extend(batch)
        if len(batch) < layout.SCAN_PAGE:
            return memories
        offset += layout.SCAN_PAGE


def salvaged(directory: Path | None, name: str, error: DomainError) -> list[Memory]:
    """With a damaged HNSW index, or a full disk (Chroma applies its log on reads, which then fails), the records
    straight from chroma.sqlite3 (embedded only: `directory`); else `error` aborts."""
    if directory is None or not (is_vector_index_damage(error.cause) or FULL_DISK in error.message):
        raise Abort(error)
    try:
        return salvage_memories(directory, name)
    except SalvageError as problem:
        message = f"{error.message} Reading the records without it failed: {problem}."
        raise Abort(evolve(error, message=message)) from problem


def page_memories(found: Any) -> list[Memory]:
    """The memories of one answer of Chroma's `get`."""
    return memories_of(found["ids"], found["documents"] or [], found["metadatas"] or [])
