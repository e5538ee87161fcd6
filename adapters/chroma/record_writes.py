"""The write side of a Chroma store: records upserted, updated (fields, or content with the stored vector) and
deleted in client-sized batches, each write applied to the collection's mirror after it (mirror_policy.written).

The store (store.py) runs these on the collection it found, under its session's lock and retry rules, and
announces the written ids to a server's node mirrors afterwards; they raise Abort as `Boundary.call` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, cast

from chromadb.api.models.Collection import Collection

from agent_memory.adapters.chroma import mirror_policy
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.records import memory_metadata
from agent_memory.adapters.chroma.session import Session
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory


def upserted(
    session: Session,
    boundary: Boundary,
    collection: Collection,
    pairs: Sequence[tuple[Memory, list[float]]],
    batch: int,
) -> None:
    """Each memory written with its vector (a known id overwritten), then the mirror told."""

    def write() -> None:
        for part in chunks(pairs, batch):
            upsert(boundary, collection, [m for m, _ in part], [v for _, v in part])

    mirror_policy.written(
        session, collection, write, lambda mirror: mirror.upsert([m for m, _ in pairs], [v for _, v in pairs])
    )


def updated(
    session: Session, boundary: Boundary, collection: Collection, latest: dict[str, Memory], batch: int
) -> None:
    """Existing memories' fields rewritten, their vectors kept (MEMORY_NOT_FOUND before any write), then the
    mirror told: the fields only where the content is the stored one, else the content with the stored vector."""
    ids = list(latest)
    documents: dict[str, str | None] = {}
    for id_batch in chunks(ids, batch):
        found = boundary.call("read memories", partial(collection.get, ids=list(id_batch), include=["documents"]))
        documents.update(zip(found["ids"], found["documents"] or [], strict=False))
    missing = [memory_id for memory_id in ids if memory_id not in documents]
    if missing:
        raise Abort(DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=missing[0]))
    same = [latest[i] for i in ids if documents[i] == latest[i].content]
    changed = [latest[i] for i in ids if documents[i] != latest[i].content]

    def write() -> None:
        for part in chunks(same, batch):
            update_fields(boundary, collection, part)
        for part in chunks(changed, batch):
            update_content(boundary, collection, part)

    mirror_policy.written(session, collection, write, lambda mirror: mirror.update(list(latest.values())))


def removed(session: Session, boundary: Boundary, collection: Collection, ids: list[str], batch: int) -> None:
    """The records of these ids deleted (unknown ids are no error), then the mirror told."""

    def write() -> None:
        for part in chunks(ids, batch):
            boundary.call("delete memories", partial(collection.delete, ids=list(part)))

    mirror_policy.written(session, collection, write, lambda mirror: mirror.remove(ids))


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
