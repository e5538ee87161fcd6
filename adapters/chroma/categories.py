"""A store's CategoryRegistry in Chroma: the `<collection>.categories` collection, one record per category."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from attrs import define
from chromadb.api import ClientAPI
from returns.result import Result, Success

from agent_memory.adapters.chroma import layout
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.session import Session
from agent_memory.adapters.shared.batching import chunks
from agent_memory.domain.errors import DomainError
from agent_memory.domain.paths import CategoryPath

UNIT_1D = [1.0]  # registry records are looked up by id only; Chroma still wants a vector for each


@define(kw_only=True)
class ChromaCategories:
    """A store's CategoryRegistry: the `<collection>.categories` collection, one record per category.

    The record id is the category path ("a/b"), its metadata holds the description. The collection is
    created on the first `put`; reading or removing before that sees an empty registry.
    """

    session: Session
    name: str
    boundary: Boundary
    batch_size: int = layout.FALLBACK_BATCH

    def describe_all(self) -> Result[Mapping[str, str], DomainError]:
        def read(client: ClientAPI) -> Mapping[str, str]:
            collection = self.boundary.call("read categories", partial(self.session.find, client, self.name))
            if collection is None:
                return {}
            described: dict[str, str] = {}
            offset = 0
            while True:
                records = self.boundary.call(
                    "read categories",
                    partial(collection.get, limit=layout.SCAN_PAGE, offset=offset, include=["metadatas"]),
                )
                metadatas = records["metadatas"] or []
                described.update(
                    (path, str((meta or {}).get("description", "")))
                    for path, meta in zip(records["ids"], metadatas, strict=False)
                )
                if len(records["ids"]) < layout.SCAN_PAGE:
                    return described
                offset += layout.SCAN_PAGE

        return self.boundary.result(partial(self.session.run, "read categories", read))

    def put(self, category: CategoryPath, description: str) -> Result[None, DomainError]:
        def write(client: ClientAPI) -> None:
            collection = self.session.find(client, self.name)
            if collection is None:
                collection = client.get_or_create_collection(self.name, embedding_function=None)
            collection.upsert(
                ids=[str(category)],
                embeddings=cast(Any, [UNIT_1D]),
                documents=[str(category)],
                metadatas=[{"description": description}],
            )

        return self._write("write a category", write)

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]:
        ids = list(dict.fromkeys(str(category) for category in categories))
        if not ids:
            return Success(None)

        def delete(client: ClientAPI) -> None:
            collection = self.session.find(client, self.name)
            if collection is not None:
                for batch in chunks(ids, self.batch_size):
                    collection.delete(ids=list(batch))

        return self._write("remove categories", delete)

    def _write(self, doing: str, write: Callable[[ClientAPI], None]) -> Result[None, DomainError]:
        """A write under the session's rules, its library errors STORAGE_ERROR saying what it was doing."""
        return self.boundary.result(
            partial(
                self.session.run, doing, lambda client: self.boundary.call(doing, partial(write, client)), write=True
            )
        )
