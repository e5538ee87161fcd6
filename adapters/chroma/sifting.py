"""Which of some ids a filter keeps, asked of Chroma itself (a store not mirrored in process): few records read.

Chroma's `get` with both ids and a `where` is not the way: at 10k records it took about 7 s for 800 ids (the
filter's namespace or not-deleted clause over the ids), against 11 ms for the tag clause alone over the whole
store. So the store's memories with the filter's tags and path are listed first (ids only), when there are at
most SELECTIVE_REACH times as many as the ids asked; they narrow the ids, and the records of those left are
read and checked against the whole filter (MemoryFilter.matches, the semantics `query` applies).
"""

from __future__ import annotations

from functools import partial
from typing import Any, cast

from chromadb.api.models.Collection import Collection

from agent_memory.adapters.chroma import layout
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.records import memories_of, to_where
from agent_memory.adapters.shared.batching import chunks
from agent_memory.domain.filters import MemoryFilter


def passing(boundary: Boundary, collection: Collection, ids: list[str], where: MemoryFilter, batch: int) -> set[str]:
    """The ids (each once) that name a memory `where` keeps; raises Abort as `boundary.call` does."""
    kept: set[str] = set()
    for part in chunks(narrowed(boundary, collection, ids, where), batch):
        page = boundary.call(
            "filter memories", partial(collection.get, ids=list(part), include=["documents", "metadatas"])
        )
        found = memories_of(page["ids"], page["documents"] or [], page["metadatas"] or [])
        kept.update(memory.id for memory in found if where.matches(memory))
    return kept


def narrowed(boundary: Boundary, collection: Collection, ids: list[str], where: MemoryFilter) -> list[str]:
    """The ids whose memories have the filter's tags and path: all of them when the filter names none, or when
    more than SELECTIVE_REACH times as many memories of the store have them."""
    having = MemoryFilter(tags=where.tags, path=where.path, path_prefix=where.path_prefix, include_deleted=True)
    clause = to_where(having)
    if clause is None:
        return ids
    reach = len(ids) * layout.SELECTIVE_REACH
    found = boundary.call(
        "filter memories", partial(collection.get, where=cast(Any, clause), limit=reach + 1, include=[])
    )
    if len(found["ids"]) > reach:
        return ids
    listed = set(found["ids"])
    return [i for i in ids if i in listed]
