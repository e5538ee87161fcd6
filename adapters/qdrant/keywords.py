"""The keyword side inside Qdrant: per store a collection of BM25-weighted sparse term vectors, ranked with IDF."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from attrs import define, field
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException
from returns.result import Result, Success

from agent_memory.adapters.qdrant import layout
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.keyword_threads import (
    KEYWORD_PAYLOAD_FIELDS,
    TERMS,
    Window,
    match_value,
    payload_text,
    scope_filter,
)
from agent_memory.adapters.qdrant.layout import FIRST_GENERATION, GENERATION
from agent_memory.adapters.qdrant.terms import query_vector
from agent_memory.domain.errors import DomainError
from agent_memory.domain.ports import KeywordEntry
from agent_memory.domain.thread_keys import KeywordScope

T = TypeVar("T")

KEYWORDS_SUFFIX = ".keywords"  # the layout of the index's collections: adapters/qdrant/keyword_threads.py

# --- collections ------------------------------------------------------------------------------


def create_collection(client: QdrantClient, name: str, *, server: bool) -> None:
    """A sparse-only collection for one store's keywords; an existing one is kept (another process made it)."""
    layout.create_collection(
        client,
        name,
        vectors_config={},
        sparse_vectors_config={TERMS: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    if server:  # local mode ignores payload indexes
        for key in KEYWORD_PAYLOAD_FIELDS:
            client.create_payload_index(name, field_name=key, field_schema=models.PayloadSchemaType.KEYWORD, wait=True)


# --- the index --------------------------------------------------------------------------------


@define
class QdrantKeywordIndex:
    """KeywordIndex inside the catalog's Qdrant: one sparse-vector collection per store, on the catalog's client.

    Sharing the catalog's client matters in local mode (one client per folder) and its Boundary turns every
    Qdrant exception into a DomainError. Writes are serialised within the process; Qdrant has no transactions,
    so two machines appending to one thread at the same moment may fork it until a `memory reindex`.
    """

    catalog: QdrantCatalog
    _write_lock: threading.Lock = field(factory=threading.Lock, init=False, repr=False)
    _ready: set[str] = field(factory=set, init=False, repr=False)  # aliases known to exist

    def alias_of(self, store: str) -> str:
        """The alias of a store's keyword collection."""
        return self.catalog.collection_of(store) + KEYWORDS_SUFFIX

    # --- the port

    def upsert(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        if not entries:
            return Success(None)

        def write(client: QdrantClient) -> None:
            window = Window(client, self._ensure(client, store))
            window.load(entry.id for entry in entries)
            for entry in entries:
                window.put(entry)
            window.flush()

        return self._write("index keywords", write)

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        if not ids:
            return Success(None)

        def delete(client: QdrantClient) -> None:
            alias = self._existing(client, store)
            if alias is None:
                return
            window = Window(client, alias)
            window.load(ids)
            for memory_id in ids:
                window.unlink(memory_id)
            window.flush()

        return self._write("remove keywords", delete)

    def search(
        self,
        store: str,
        query: str,
        limit: int,
        *,
        thread_prefix: str | None = None,
        scope: KeywordScope | None = None,
    ) -> Result[list[tuple[str, float]], DomainError]:
        vector = query_vector(query)
        if vector is None or limit < 1:
            return Success([])
        conditions: list[models.Condition] = (
            [] if thread_prefix is None else [match_value("thread_prefixes", thread_prefix)]
        )
        if scope is not None:
            conditions.append(scope_filter(scope))
        where = models.Filter(must=conditions) if conditions else None

        def find(client: QdrantClient) -> list[tuple[str, float]]:
            alias = self._existing(client, store)
            if alias is None:
                return []
            answer = client.query_points(
                alias, query=vector, using=TERMS, query_filter=where, limit=limit, with_payload=["id"]
            )
            return normalised(
                [(payload_text(point.payload or {}, "id"), float(point.score)) for point in answer.points]
            )

        return self._read("search keywords", find)

    def neighbours(
        self, store: str, ids: Sequence[str]
    ) -> Result[dict[str, tuple[str | None, str | None]], DomainError]:
        def find(client: QdrantClient) -> dict[str, tuple[str | None, str | None]]:
            alias = self._existing(client, store)
            if alias is None or not ids:
                return {}
            window = Window(client, alias)
            window.load(ids)
            return {i: (link.prev, link.next) for i in ids if (link := window.links.get(i)) is not None}

        return self._read("read keyword neighbours", find)

    def count(self, store: str) -> Result[int, DomainError]:
        def points(client: QdrantClient) -> int:
            alias = self._existing(client, store)
            return 0 if alias is None else int(client.count(alias, exact=True).count)

        return self._read("count keywords", points)

    def rebuild(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        """Fill a new generation in the order given, then switch the alias to it (readers see old or new)."""
        return self._write("rebuild keywords", partial(self._rebuilt, store, entries)).map(self._drop_quietly)

    # --- helpers

    def _read(self, doing: str, work: Callable[[QdrantClient], T]) -> Result[T, DomainError]:
        """One port method's plain work on the catalog's client, through the catalog's boundary."""
        return self.catalog.boundary.result(doing, lambda: work(self.catalog.client()))

    def _write(self, doing: str, work: Callable[[QdrantClient], T]) -> Result[T, DomainError]:
        """One write, whole: under the process's write lock and (local mode) the catalog's guard throughout."""
        with self._write_lock:
            return self._read(doing, work)

    def _rebuilt(self, store: str, entries: Sequence[KeywordEntry], client: QdrantClient) -> str | None:
        """The new generation filled and published; the one it replaced, if any."""
        alias = self.alias_of(store)
        live = layout.aliases(client).get(alias)
        generation = f"{alias}{GENERATION}{uuid.uuid4().hex[:12]}"
        self._drop_stale(client, alias, keep=live)
        create_collection(client, generation, server=self.catalog.boundary.server)
        window = Window(client, generation, fresh=True)
        for entry in entries:
            window.put(entry)
        window.flush()
        layout.point_alias(client, alias, generation, replacing=live is not None)  # the commit point
        self._ready.add(alias)
        return live

    def _drop_quietly(self, old: str | None) -> None:
        """Drop the generation a rebuild replaced.

        The rebuild is done: a generation left behind here is dropped by the next rebuild, so the outcome is
        deliberately not reported.
        """
        if old is not None:
            self._read(f"drop collection '{old}'", lambda client: client.delete_collection(old))

    def _existing(self, client: QdrantClient, store: str) -> str | None:
        """The store's keyword alias if it exists (reading a store never written is reading nothing)."""
        alias = self.alias_of(store)
        if alias not in self._ready and alias in layout.aliases(client):
            self._ready.add(alias)
        return alias if alias in self._ready else None

    def _ensure(self, client: QdrantClient, store: str) -> str:
        """The store's keyword alias, over a first generation made now when missing."""
        alias = self._existing(client, store)
        if alias is not None:
            return alias
        alias = self.alias_of(store)
        generation = alias + GENERATION + FIRST_GENERATION
        create_collection(client, generation, server=self.catalog.boundary.server)
        try:
            layout.point_alias(client, alias, generation, replacing=False)
        except (ApiException, ValueError):  # another process made the alias meanwhile
            if alias not in layout.aliases(client):
                raise
        self._ready.add(alias)
        return alias

    def _drop_stale(self, client: QdrantClient, alias: str, *, keep: str | None) -> None:
        """Generations left by failed rebuilds (never the live one)."""
        for generation in layout.generations(client, alias):
            if generation != keep:
                client.delete_collection(generation)


def normalised(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Scores divided by the best (best first, ties by id, the best exactly 1.0); non-positive scores left out."""
    kept = sorted(((memory_id, score) for memory_id, score in hits if score > 0), key=lambda hit: (-hit[1], hit[0]))
    if not kept:
        return []
    best = kept[0][1]
    return [(memory_id, min(1.0, score / best)) for memory_id, score in kept]


def keyword_index_for(catalog: QdrantCatalog) -> QdrantKeywordIndex:
    """The keyword index that lives in the catalog's own Qdrant (for the composition root)."""
    return QdrantKeywordIndex(catalog)
