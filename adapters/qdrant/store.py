"""The VectorStore over one Qdrant store: an alias over a generation collection, a memory a point in it."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any

from attrs import define, evolve, field
from qdrant_client import QdrantClient, models
from returns.result import Result, Success

from agent_memory.adapters.qdrant import layout
from agent_memory.adapters.qdrant.boundary import Boundary
from agent_memory.adapters.qdrant.layout import GENERATION, ModelRecords
from agent_memory.adapters.qdrant.local_commit import one_commit
from agent_memory.adapters.qdrant.records import (
    DENSE,
    filter_conditions,
    memories_of,
    memory_payload,
    point,
    point_ids,
    to_filter,
)
from agent_memory.adapters.qdrant.records import similarity_from_score as similarity
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.boundary import Abort, abort_if
from agent_memory.adapters.shared.disk import FULL_DISK, disk_hint, keep_reserve, no_room, release_reserve, write_size
from agent_memory.adapters.shared.embeddings import count_mismatch, dimension_mismatch, mixed_dimensions
from agent_memory.adapters.shared.vector_math import cosines
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector


@define(kw_only=True)
class QdrantVectorStore:
    """One store = one alias over a generation collection; a memory is a point (id, dense vector, payload).

    Each port method is plain Python run once through the Boundary, which turns what it raises into a Failure.
    """

    client: QdrantClient = field(repr=False)
    name: str  # the alias
    collection: str  # the generation it points at when opened; reads and writes go there
    boundary: Boundary
    records: ModelRecords
    model: str | None = None
    dimension: int | None = None

    # --- writes

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        """Upsert (so a re-added id is overwritten, as in the reference store), in bounded batches."""
        return self.boundary.result("write memories", partial(self._add, memories, embeddings))

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        written = self.boundary.result("write memories", partial(self._add, memories, embeddings))
        return written.map(lambda _: list(memories))

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        """Overwrite the payload of existing memories, keeping their vectors; MEMORY_NOT_FOUND before any write."""
        latest = {memory.id: memory for memory in memories}
        if not latest:
            return Success([])
        written = self.boundary.result("update memories", partial(self._overwrite, list(latest.values())))
        return written.map(lambda _: list(memories))

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        def delete() -> None:
            with one_commit(self.client, self.collection):
                for batch in chunks(point_ids(ids), layout.MAX_BATCH_POINTS):
                    selector = models.PointIdsList(points=list(batch))
                    self.client.delete(self.collection, points_selector=selector, wait=True)

        def delete_with_room() -> None:
            """A delete needs room for its journal, even one taking back a write the keyword index refused on a
            full disk: it is one transaction (it lands whole or not at all), and on a full disk it is tried again
            once the folder's reserve is given back (local mode)."""
            try:
                delete()
            except sqlite3.Error as error:
                if (
                    self.boundary.server
                    or FULL_DISK not in disk_hint(error)
                    or not release_reserve(self.boundary.location)
                ):
                    raise
                delete()

        return self.boundary.result("delete memories", delete_with_room)

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        """Fill a fresh generation, record its model, then switch the alias to it in one request."""

        def rebuild() -> None:
            abort_if(count_mismatch(memories, embeddings))
            dimension = self._rebuild_dimension(embeddings)
            self._switch_to(self._staged(memories, embeddings, embedding_model, dimension))

        return self.boundary.result(f"rebuild store '{self.name}'", rebuild)

    # --- reads

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        """The memories with these ids, in the order asked, unknown ids left out."""

        def get() -> list[Memory]:
            found: dict[str, Memory] = {}
            for batch in chunks(point_ids(ids), layout.SCAN_PAGE):
                points = self.client.retrieve(self.collection, ids=list(batch), with_payload=True)
                found.update((memory.id, memory) for memory in memories_of(points))
            return [found[i] for i in ids if i in found]

        return self.boundary.result("read memories", get)

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        """The ids among these that `where` keeps: a scroll over just those points (a HasId condition beside
        the filter's), without payloads or vectors."""
        known = point_ids(ids)

        def passing() -> set[str]:
            conditions = filter_conditions(where)
            kept: set[str] = set()
            for batch in chunks(known, layout.SCAN_PAGE):
                points, _ = self.client.scroll(
                    self.collection,
                    scroll_filter=models.Filter(must=[models.HasIdCondition(has_id=list(batch)), *conditions]),
                    limit=len(batch),
                    with_payload=False,
                    with_vectors=False,
                )
                kept.update(str(found.id) for found in points)
            return kept

        return self.boundary.result("filter memories", passing) if known else Success(set())

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        """One Qdrant query: the filter applies before ranking; at most `limit` pairs, best first."""

        def search() -> list[tuple[Memory, float]]:
            self._check_dimension([embedding])
            answer = self.client.query_points(
                self.collection,
                query=[float(x) for x in embedding],
                using=DENSE,
                query_filter=to_filter(where),
                limit=limit,
                with_payload=True,
            )
            hits = answer.points
            pairs = [(memory, similarity(hit.score)) for memory, hit in zip(memories_of(hits), hits, strict=True)]
            return sorted(pairs, key=lambda pair: pair[1], reverse=True)[:limit]

        return Success([]) if limit < 1 else self.boundary.result("search memories", search)

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        """Every memory the filter keeps, scrolled in pages of SCAN_PAGE."""

        def scan() -> list[Memory]:
            condition = to_filter(where)
            memories: list[Memory] = []
            offset: models.ExtendedPointId | None = None
            while True:
                points, offset = self.client.scroll(
                    self.collection,
                    scroll_filter=condition,
                    limit=layout.SCAN_PAGE,
                    offset=offset,
                    with_payload=True,
                    with_vectors=False,
                )
                memories.extend(memories_of(points))
                if offset is None:
                    return memories

        return self.boundary.result("scan memories", scan)

    def count(self) -> Result[int, DomainError]:
        return self.boundary.result("count memories", lambda: self.client.count(self.collection, exact=True).count)

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def embedding_model(self) -> Result[str | None, DomainError]:
        return Success(self.model)

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        """Cosine of `embedding` against the stored dense vectors of these ids, unknown ids left out."""

        def scored() -> dict[str, float]:
            found: dict[str, Vector] = {}
            for stored in self.client.retrieve(self.collection, ids=point_ids(ids), with_vectors=[DENSE]):
                vector: Any = stored.vector.get(DENSE) if isinstance(stored.vector, dict) else stored.vector
                if vector is not None:
                    found[str(stored.id)] = list(vector)
            return cosines(embedding, found)

        return Success({}) if not ids else self.boundary.result("read vectors", scored)

    # --- the steps of a rebuild, as Results for the tests that stop a rebuild half-way

    def _stage(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], model: str, dimension: int
    ) -> Result[QdrantVectorStore, DomainError]:
        """A new, filled and recorded generation, not published yet."""
        return self.boundary.result("stage a rebuild", partial(self._staged, memories, embeddings, model, dimension))

    def _swap_in(self, staged: QdrantVectorStore) -> Result[None, DomainError]:
        """Publish a staged generation."""
        return self.boundary.result(f"switch store '{self.name}'", partial(self._switch_to, staged))

    # --- helpers (plain: they raise, the port method's boundary converts)

    def _add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> None:
        abort_if(count_mismatch(memories, embeddings))
        latest = {memory.id: (memory, vector) for memory, vector in zip(memories, embeddings, strict=True)}
        self._check_dimension([vector for _, vector in latest.values()])
        points = [point(memory, vector) for memory, vector in latest.values()]
        self._check_room(
            "write memories", write_size([memory.content for memory, _ in latest.values()], self.dimension)
        )
        with one_commit(self.client, self.collection):  # local mode: the whole add in one commit, not one per point
            for batch in layout.request_batches(points, partial(layout.dense_point_size, self.dimension or 0)):
                self.client.upsert(self.collection, points=batch, wait=True)

    def _check_room(self, doing: str, needs: int) -> None:
        """Local mode: a write is refused whole, before any of it is stored, when the disk has not room for it and
        a reserve (adapters.shared.disk.no_room), so one the keyword index then refuses can still be taken back."""
        if self.boundary.server:
            return
        hint = no_room(self.boundary.location, needs)
        if hint:
            raise Abort(DomainError(ErrorCode.STORAGE_ERROR, f"Qdrant did not {doing}{hint}. Nothing was written."))
        keep_reserve(self.boundary.location)

    def _check_dimension(self, vectors: Sequence[Vector]) -> None:
        abort_if(dimension_mismatch(self.dimension, vectors))

    def _overwrite(self, memories: Sequence[Memory]) -> None:
        """New payloads for memories that all exist (MEMORY_NOT_FOUND names the first that does not)."""
        present: set[str] = set()
        for page in chunks(point_ids([memory.id for memory in memories]), layout.SCAN_PAGE):
            present.update(
                str(found.id) for found in self.client.retrieve(self.collection, ids=list(page), with_payload=False)
            )
        missing = [memory.id for memory in memories if memory.id not in present]
        if missing:
            raise Abort(DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=missing[0]))
        operations = [
            models.OverwritePayloadOperation(
                overwrite_payload=models.SetPayload(payload=memory_payload(memory), points=[memory.id])
            )
            for memory in memories
        ]
        self._check_room("update memories", write_size([memory.content for memory in memories], 0))
        with one_commit(self.client, self.collection):
            for batch in chunks(operations, layout.MAX_BATCH_POINTS):
                self.client.batch_update_points(self.collection, update_operations=list(batch), wait=True)

    def _rebuild_dimension(self, embeddings: Sequence[Vector]) -> int:
        abort_if(mixed_dimensions(embeddings))
        dimension = len(embeddings[0]) if embeddings else self.dimension
        if dimension is None:
            raise Abort(DomainError(ErrorCode.STORAGE_ERROR, "The store's embedding dimension is unknown."))
        return dimension

    def _staged(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], model: str, dimension: int
    ) -> QdrantVectorStore:
        """A new generation, filled and recorded (stale ones of failed rebuilds are dropped first)."""
        generation = f"{self.name}{GENERATION}{uuid.uuid4().hex[:12]}"
        # never the live one: on a server, another process may have switched the alias since we opened
        live = {self.collection, layout.aliases(self.client).get(self.name)}
        for stale in layout.generations(self.client, self.name):
            if stale not in live:
                layout.drop_generation(self.client, self.records, stale)
        layout.create_generation(self.client, generation, dimension, server=self.boundary.server)
        staging = evolve(self, collection=generation, model=model, dimension=dimension)
        staging._add(memories, embeddings)
        self.records.write(generation, model, dimension)
        return staging

    def _switch_to(self, staged: QdrantVectorStore) -> None:
        """Alias → the new generation (the commit point); then this store uses it and the old one is dropped."""
        old = self.collection
        layout.switch_alias(self.client, self.name, staged.collection)
        self.collection, self.model, self.dimension = staged.collection, staged.model, staged.dimension
        # The rebuild is done; an old generation left behind by a failure here is harmless and is dropped by
        # the next rebuild, so this outcome is deliberately not reported.
        self.boundary.result(
            f"drop collection '{old}'", partial(layout.drop_generation, self.client, self.records, old)
        )
