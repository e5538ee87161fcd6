"""The mirror's build policy: when an embedded store's searches move from Chroma to an in-process mirror, and how."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

from chromadb.api.models.Collection import Collection

from agent_memory.adapters.chroma import layout
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.records import memories_of
from agent_memory.adapters.chroma.session import Session
from agent_memory.adapters.chroma.vector_mirror import VectorMirror
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.domain.model import Memory

T = TypeVar("T")

MIRROR_LIMIT = 200_000  # the most records an embedded store mirrors in process (about 1.6 KB of RAM each at 384-d)


def current(
    session: Session,
    boundary: Boundary,
    collection: Collection,
    *,
    limit: int,
    eagerly: bool,
    dimension: int | None,
    inline: bool = True,
) -> VectorMirror | None:
    """The collection's current mirror, or a new one when renting Chroma's searches has cost as much as buying.

    The rule is the ski-rental one: keep answering from Chroma until the time its searches of this store
    took (since another process last wrote) reaches the estimated time to read the store into a mirror,
    then build it. Whatever the pattern of searches and foreign writes, that spends at most about twice
    what the best choice made in hindsight would. A server's stores (no directory) are not mirrored here:
    other clients write there unannounced (adapters.chroma.node_mirror follows them through the engine's feed). `eagerly` (tests) builds at the first search. Not `inline`
    (a long-lived process builds its mirrors in the background, adapters.chroma.warming): never builds.
    """
    mirror = session.mirrors.get(collection.id)
    if mirror is not None or session.directory is None or limit <= 0 or not inline:
        return mirror
    if not eagerly:
        records = boundary.call("count memories", collection.count)
        if records > limit or session.search_seconds.get(collection.id, 0.0) < records * session.build_s_per_record:
            return None
    return build(session, boundary, collection, limit=limit, dimension=dimension)


def build(
    session: Session, boundary: Boundary, collection: Collection, *, limit: int, dimension: int | None
) -> VectorMirror | None:
    """Read the whole collection into a mirror (None when it is too large or its dimension is unknown)."""
    started = time.perf_counter()
    if boundary.call("count memories", collection.count) > limit:
        return None
    memories: list[Memory] = []
    vectors: list[Any] = []
    offset = 0
    while True:
        found = boundary.call(
            "read the store into memory",
            partial(
                collection.get, limit=layout.SCAN_PAGE, offset=offset, include=["embeddings", "documents", "metadatas"]
            ),
        )
        memories.extend(memories_of(found["ids"], found["documents"] or [], found["metadatas"] or []))
        vectors.extend(found["embeddings"] if found["embeddings"] is not None else [])
        if len(found["ids"]) < layout.SCAN_PAGE:
            break
        offset += layout.SCAN_PAGE
    dimension = dimension or (len(vectors[0]) if vectors else None)
    if dimension is None or len(vectors) != len(memories):
        return None
    mirror = VectorMirror.of(dimension, memories, vectors)
    session.mirrors[collection.id] = mirror
    if memories:
        session.build_s_per_record = (time.perf_counter() - started) / len(memories)
    return mirror


def timed(session: Session, collection_id: UUID, search: Callable[[], T]) -> T:
    """A search Chroma answers, its seconds added to what renting has cost for this store so far."""
    started = time.perf_counter()
    try:
        return search()
    finally:
        spent = session.search_seconds
        spent[collection_id] = spent.get(collection_id, 0.0) + time.perf_counter() - started


def written(
    session: Session, collection: Collection, write: Callable[[], None], change: Callable[[VectorMirror], bool | None]
) -> None:
    """Run a write, then apply it to the collection's mirror; a failed (maybe partial) write drops the mirror.

    A mirror being built meanwhile (adapters.chroma.warming) gets the change too before it is installed, or
    is read again when the write failed.
    """
    racing = [build for build in session.racing if build.collection_id == collection.id]
    try:
        write()
    except Abort:
        session.mirrors.pop(collection.id, None)
        for build in racing:
            build.spoiled = True
        raise
    for build in racing:
        build.changes.append(change)
    mirror = session.mirrors.get(collection.id)
    if mirror is not None and change(mirror) is False:
        del session.mirrors[collection.id]
