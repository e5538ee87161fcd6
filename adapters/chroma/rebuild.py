"""A Chroma store's rebuild: a `.next` collection filled and flagged until complete, then swapped in for the old."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol, Self, TypeVar

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection

from agent_memory.adapters.chroma import layout
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.session import Session
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector

T = TypeVar("T")


class Rebuilt(Protocol):
    """What a rebuild needs of the store it rebuilds (adapters.chroma.store.ChromaVectorStore, which calls it, so
    this module does not import it): the store's name, session and boundary, a store of its kind over another
    collection, and its steps to add records, run an operation on its collection and find that collection."""

    @property
    def name(self) -> str: ...

    @property
    def session(self) -> Session: ...

    @property
    def boundary(self) -> Boundary: ...

    @property
    def batch_size(self) -> int: ...

    @classmethod
    def over(cls, session: Session, collection: Collection, boundary: Boundary, batch_size: int) -> Self: ...

    def _add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> None: ...

    def _run(self, doing: str, op: Callable[[Collection], T], *, write: bool = False, needs: int | None = 0) -> T: ...

    def _resolve(self, client: ClientAPI) -> Collection: ...


S = TypeVar("S", bound=Rebuilt)


def staged(store: S, memories: Sequence[Memory], embeddings: Sequence[Vector], model: str, dimension: int | None) -> S:
    """A filled `.next` collection, flagged REBUILDING until its last write succeeded."""
    staged_name = store.name + layout.NEXT_SUFFIX
    final = layout.collection_metadata(model, dimension) if dimension is not None else {"embedding_model": model}
    creating = f"create collection '{staged_name}'"

    def create(client: ClientAPI) -> S:
        def fresh() -> Collection:
            layout.drop(client, staged_name)
            return client.create_collection(
                staged_name,
                configuration=layout.COSINE,
                metadata={**final, layout.REBUILDING: True},
                embedding_function=None,
            )

        collection = store.boundary.call(creating, fresh)
        return type(store).over(store.session, collection, store.boundary, store.batch_size)

    staging = store.session.run(creating, create, write=True)
    staging._add(memories, embeddings)
    staging._run(
        "finish a rebuild",
        lambda collection: store.boundary.call("finish a rebuild", partial(collection.modify, metadata=final)),
        write=True,
    )
    return staging


def swap(store: S, staged: S) -> None:
    """Old → `.prev`, `.next` → the store's name, drop `.prev`, all under one hold of the lock."""
    previous_name = store.name + layout.PREV_SUFFIX
    doing = f"swap in the rebuilt collection '{store.name}'"

    def under_lock(client: ClientAPI) -> None:
        current = store._resolve(client)

        def renames() -> None:
            store.session.mirrors.pop(current.id, None)
            replacement = client.get_collection(staged.name, embedding_function=None)
            layout.drop(client, previous_name)
            current.modify(name=previous_name)
            replacement.modify(name=store.name)
            layout.drop(client, previous_name)

        store.boundary.call(doing, renames)

    store.session.run(doing, under_lock, write=True)
