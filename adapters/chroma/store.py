"""The VectorStore over one Chroma collection: the port's methods, and the rules every one goes through.

The class holds what all its methods share: finding the collection as of now (another process may have rebuilt
it), retrying an operation that met a rebuild's swap, and falling back to chroma.sqlite3 when the vector index is
damaged. Its parts live beside it: record_writes.py writes records (upserts, updates, deletes, each kept in the
mirror), record_reads.py reads them from Chroma itself (or chroma.sqlite3), records.py converts them, sifting.py
filters ids without a mirror, rebuild.py fills a `.next` collection and swaps it in, mirror_policy.py decides
when the store is mirrored in process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from returns.result import Result, Success

from agent_memory.adapters.chroma import layout, mirror_policy, rebuild, record_reads, record_writes, sifting
from agent_memory.adapters.chroma.boundary import Boundary, CollectionGone
from agent_memory.adapters.chroma.mirror_policy import MIRROR_LIMIT
from agent_memory.adapters.chroma.node_mirror import NodeMirrors
from agent_memory.adapters.chroma.records import ranked, to_where
from agent_memory.adapters.chroma.salvage import (
    damaged_index_problem,
    is_vector_index_damage,
)
from agent_memory.adapters.chroma.session import Session
from agent_memory.adapters.chroma.vector_mirror import VectorMirror
from agent_memory.adapters.shared.boundary import Abort, abort_if
from agent_memory.adapters.shared.disk import FULL_DISK, write_size
from agent_memory.adapters.shared.embeddings import count_mismatch, dimension_mismatch, mixed_dimensions
from agent_memory.adapters.shared.feed_probe import is_reading
from agent_memory.adapters.shared.vector_math import cosines
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector

T = TypeVar("T")


@define(kw_only=True)
class ChromaVectorStore:
    """One store = one Chroma collection; memories are records (id, content as document, fields as metadata).

    Each operation looks the collection up by name through the session (another process may have rebuilt
    it), and re-reads the space, model and dimension when the collection found is not the last one seen.
    Each port method is plain Python that raises (Abort) inside, turned into a Result once by the Boundary.
    """

    session: Session
    name: str
    boundary: Boundary
    batch_size: int = layout.FALLBACK_BATCH
    space: str = "cosine"
    model: str | None = None
    dimension: int | None = None
    mirror_limit: int = MIRROR_LIMIT  # 0: never mirror, every search goes to Chroma
    mirror_eagerly: bool = False  # build the mirror at the first search (tests), not by adapters.chroma.mirror_policy
    # a long-lived process's request for the mirror to be built in the background (adapters.chroma.warming);
    # with it a search never builds the mirror itself
    warm: Callable[[ChromaVectorStore], None] | None = None
    node: NodeMirrors | None = None  # over a server: the node's mirrors and their feed (adapters.chroma.node_mirror)
    store_name: str | None = None  # the store's name (the catalog's), which its feeds' shared probe is kept under
    _collection_id: UUID | None = None

    @classmethod
    def over(
        cls,
        session: Session,
        collection: Collection,
        boundary: Boundary,
        batch_size: int,
        mirror_limit: int = 0,
        mirror_eagerly: bool = False,
    ) -> ChromaVectorStore:
        """The store over an existing collection, reading its space, model and dimension."""
        return cls(
            session=session,
            name=collection.name,
            boundary=boundary,
            batch_size=batch_size,
            space=layout.space(collection),
            model=layout.recorded_model(collection),
            dimension=layout.recorded_dimension(collection),
            mirror_limit=mirror_limit,
            mirror_eagerly=mirror_eagerly,
            collection_id=collection.id,
        )

    @property
    def collection(self) -> Collection:
        """The collection as of now, for inspection (the store's operations look it up themselves).

        Raises Abort (holding the DomainError) when it cannot be found: the operations, not this, are the port.
        """
        return self._run("open the collection", lambda collection: collection)

    # --- writes

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        """Upsert (so a re-added id is overwritten, as in the reference store), in client-sized batches."""
        return self.boundary.result(partial(self._add, memories, embeddings))

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        """Overwrite memories and their vectors: the same upsert as `add` (one write per client-sized batch)."""
        return self.boundary.result(partial(self._add, memories, embeddings)).map(lambda _: list(memories))

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        """Rewrite fields of existing memories, keeping their vectors; MEMORY_NOT_FOUND before any write."""
        latest = {memory.id: memory for memory in memories}
        if not latest:
            return Success([])
        ids = list(latest)

        def update(collection: Collection) -> None:
            record_writes.updated(self.session, self.boundary, collection, latest, self.batch_size)
            self._announce(ids)

        needs = write_size([memory.content for memory in latest.values()], self.dimension)
        return self._result("update memories", update, write=True, needs=needs, records_only=True).map(
            lambda _: list(memories)
        )

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return Success(None)

        def delete(collection: Collection) -> None:
            record_writes.removed(self.session, self.boundary, collection, unique, self.batch_size)
            self._announce(unique)

        # never refused for want of room
        return self._result("delete memories", delete, write=True, needs=None, records_only=True)

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        """Fill a fresh `.next` collection, then swap it in by two renames (see `layout.recover` for a crash between).

        The fill takes the lock batch by batch (other processes only wait for one batch); the swap holds
        it throughout, so no other process ever finds the store's collection missing.
        """

        def fill_and_swap() -> None:
            abort_if(count_mismatch(memories, embeddings))
            abort_if(mixed_dimensions(embeddings))
            current = self._run("read the store's dimension", lambda _: self.dimension)
            dimension = len(embeddings[0]) if embeddings else current
            rebuild.swap(self, rebuild.staged(self, memories, embeddings, embedding_model, dimension))

        return self.boundary.result(fill_and_swap)

    # --- reads

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        """The memories with these ids, in the order asked, unknown ids left out."""
        return self.boundary.result(partial(self._read, list(ids))) if ids else Success([])

    def _read(self, ids: list[str]) -> list[Memory]:
        """`get` as a plain call (raises Abort); also the record check a node mirror's hits pass."""
        unique = list(dict.fromkeys(ids))

        def read(collection: Collection) -> list[Memory]:
            mirror = self.session.mirrors.get(collection.id)
            found: dict[str, Memory] = {}
            if mirror is not None:
                found.update((memory.id, memory) for memory in mirror.get(unique))
            else:
                held = self._from_node(collection, lambda node: node.get(unique))
                found.update((memory.id, memory) for memory in held or ())
                missing = unique if held is None else [i for i in unique if i not in found]
                if missing:  # not mirrored (or not held: the keyword side may be a record ahead), the engine's
                    found.update(record_reads.by_id(self.boundary, collection, missing, self.batch_size))
            return [found[i] for i in ids if i in found]

        return self._run("read memories", read)

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        """The ids among these that `where` keeps: by the mirror's masks, else by adapters.chroma.sifting."""
        unique = list(dict.fromkeys(ids))

        def read(collection: Collection) -> set[str]:
            mirror = self.session.mirrors.get(collection.id)
            if mirror is not None:
                return mirror.passing(unique, where)
            held = self._from_node(collection, lambda node: (node.holds(unique), node.passing(unique, where)))
            if held is None:
                return sifting.passing(self.boundary, collection, unique, where, self.batch_size)
            known, kept = held
            missing = [i for i in unique if i not in known]
            return kept | (
                sifting.passing(self.boundary, collection, missing, where, self.batch_size) if missing else set()
            )

        return self._result("filter memories", read) if unique else Success(set())

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        """Cosine of `embedding` against the stored vectors of these ids, unknown ids left out."""
        unique = list(dict.fromkeys(ids))

        def read(collection: Collection) -> dict[str, float]:
            mirror = self.session.mirrors.get(collection.id)
            if mirror is not None:
                return mirror.similarities(embedding, unique)
            held = self._from_node(collection, lambda node: node.similarities(embedding, unique))
            scored = dict(held or {})
            missing = unique if held is None else [i for i in unique if i not in scored]
            if missing:
                scored.update(
                    cosines(embedding, record_reads.vectors_by_id(self.boundary, collection, missing, self.batch_size))
                )
            return scored

        return self._result("read vectors", read) if unique else Success({})

    def _from_node(self, collection: Collection, work: Callable[[VectorMirror], T]) -> T | None:
        """`work` on this node's mirror of the store for a use case's read (feed_probe.reading) when its round caught
        it up (NodeMirrors.answer: the engine's records as of the round's probe), else None."""
        if self.node is None or self.store_name is None or self.session.directory is not None or not is_reading():
            return None  # a write's own checks always read the engine
        return self.node.answer(self.name, self.store_name, collection, self.boundary, work)

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        """The `limit` nearest memories `where` keeps, best first: from the mirror when there is one, else Chroma.

        Embedded stores are mirrored in process (adapters.chroma.vector_mirror) once Chroma's searches of the store
        since another process last wrote have cost as much as reading it would (adapters.chroma.mirror_policy):
        a process that searches once (a CLI call) never pays for reading the whole collection; an agent loop
        pays once, then searches in numpy. A store kept `warm` (a server) is read in the background instead
        (adapters.chroma.warming): its searches go to Chroma until the mirror is ready, and none builds it.
        """
        if limit < 1:
            return Success([])

        def search(collection: Collection) -> list[tuple[Memory, float]]:
            self._check_dimension([embedding])
            mirror = mirror_policy.current(
                self.session,
                self.boundary,
                collection,
                limit=self.mirror_limit,
                eagerly=self.mirror_eagerly,
                dimension=self.dimension,
                inline=self.warm is None,
            )
            if mirror is not None:
                return mirror.query(embedding, where, limit)
            if self.node is not None:
                answered = self.node.query(
                    self.name,
                    collection,
                    self.boundary,
                    self.on_collection,
                    (embedding, where, limit),
                    self._read,
                    self.store_name,
                )
                if answered is not None:
                    return answered
            if self.warm is not None:
                self.warm(self)
            clause = to_where(where)

            def ask() -> list[tuple[Memory, float]]:
                answer = self.boundary.call(
                    "search memories",
                    lambda: collection.query(
                        query_embeddings=cast(Any, [list(embedding)]),
                        n_results=limit,
                        where=cast(Any, clause),
                        include=["documents", "metadatas", "distances"],
                    ),
                )
                return ranked(answer, self.space, limit)

            return mirror_policy.timed(self.session, collection.id, ask)

        return self._result("search memories", search)

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        """Every memory the filter keeps, read in pages of SCAN_PAGE."""

        def read(collection: Collection) -> list[Memory]:
            return record_reads.scanned(self.boundary, collection, where)

        def scan() -> list[Memory]:
            try:
                return self._run("scan memories", read)
            except Abort as abort:
                return [memory for memory in self._salvaged(abort.error) if where.matches(memory)]

        return self.boundary.result(scan)

    def count(self) -> Result[int, DomainError]:
        def count() -> int:
            try:
                return self._count()
            except Abort as abort:
                return len(self._salvaged(abort.error))

        return self.boundary.result(count)

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        """A damaged vector index (embedded Chroma): the records are read from chroma.sqlite3 meanwhile."""

        def problems() -> tuple[str, ...]:
            try:
                self._count()
            except Abort as abort:
                directory = self.session.directory
                if directory is not None and is_vector_index_damage(abort.error.cause):
                    return (damaged_index_problem(directory, self.name),)
                if directory is not None and FULL_DISK in abort.error.message:
                    return (f"{abort.error.message} Reads come from chroma.sqlite3 meanwhile; writes fail.",)
            return ()

        return self.boundary.result(problems)

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def embedding_model(self) -> Result[str | None, DomainError]:
        return self._result("read the embedding model", lambda _: self.model)

    # --- the steps of a rebuild, as Results for the tests that stop a rebuild half-way

    def _stage(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], model: str, dimension: int | None
    ) -> Result[ChromaVectorStore, DomainError]:
        """A filled `.next` collection, not swapped in yet."""
        return self.boundary.result(partial(rebuild.staged, self, memories, embeddings, model, dimension))

    def _swap_in(self, staged: ChromaVectorStore) -> Result[None, DomainError]:
        """Swap a staged collection in."""
        return self.boundary.result(partial(rebuild.swap, self, staged))

    def on_collection(self, doing: str, op: Callable[[Collection], T]) -> T:
        """`op` on this store's collection under the session's rules, for adapters.chroma.warming (raises Abort)."""
        return self._run(doing, op)

    # --- helpers (plain: they raise, the port method's boundary converts)

    def _result(
        self,
        doing: str,
        op: Callable[[Collection], T],
        *,
        write: bool = False,
        needs: int | None = 0,
        records_only: bool = False,
    ) -> Result[T, DomainError]:
        """`op` on this store's collection (see `_run`), as a port method's Result."""
        return self.boundary.result(partial(self._run, doing, op, write=write, needs=needs, records_only=records_only))

    def _run(
        self,
        doing: str,
        op: Callable[[Collection], T],
        *,
        write: bool = False,
        needs: int | None = 0,
        records_only: bool = False,
    ) -> T:
        """`op` on this store's collection, as found now, under the session's rules (a write needing `needs`
        bytes of disk is refused whole when there is not room for them: Session.run).

        On a server, another client's rebuild renames the collection away and drops it (`_swap`) while this one
        may hold it: an operation that finds it gone, or fails while the name came to mean another collection
        (a collection half-dropped answers oddly), looks it up again and runs again, for up to
        layout.SWAP_WAIT_S (the swap itself takes a few requests). A write retried so ran on a collection that
        no longer exists, so it is written once, in the new one (the store's write lock keeps writes out of a
        rebuild's fill). An embedded session holds the directory's lock through a swap: nothing to wait for.
        `records_only`: a write of records, which keeps the session's collections found (Session.run).
        """

        def attempt() -> T:
            return self.session.run(
                doing, lambda client: op(self._resolve(client)), write=write, needs=needs, records_only=records_only
            )

        if self.session.directory is not None:
            return attempt()
        deadline = time.monotonic() + layout.SWAP_WAIT_S
        while True:
            used = self._collection_id
            try:
                return attempt()
            except Abort as abort:
                if time.monotonic() >= deadline:
                    raise
                if not isinstance(abort, CollectionGone) and not self._swapped_since(used):
                    raise
                self.session.forget(self.name)
                time.sleep(layout.SWAP_RETRY_S)

    def _swapped_since(self, used: UUID | None) -> bool:
        """Whether this store's name now means another collection than the one last used (or none): a rebuild
        swapped it meanwhile. A failure to ask says no (the original failure then stands)."""
        used = self._collection_id if self._collection_id is not None else used
        self.session.forget(self.name)
        try:
            current = self.session.run(
                f"open collection '{self.name}'",
                lambda client: self.boundary.call("open collection", partial(self.session.find, client, self.name)),
            )
        except Abort:
            return False
        return current is None or current.id != used

    def _resolve(self, client: ClientAPI) -> Collection:
        """The collection, its space, model and dimension read again when it is not the one seen last."""
        collection = self.boundary.call(f"open collection '{self.name}'", partial(self.session.find, client, self.name))
        if collection is None:
            raise CollectionGone(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"The ChromaDB collection '{self.name}' no longer exists (was it deleted by another tool?).",
                )
            )
        if collection.id != self._collection_id:
            self.space, self.model = layout.space(collection), layout.recorded_model(collection)
            self.dimension, self._collection_id = layout.recorded_dimension(collection), collection.id
        return collection

    def _add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> None:
        abort_if(count_mismatch(memories, embeddings))
        latest = {memory.id: (memory, list(vector)) for memory, vector in zip(memories, embeddings, strict=True)}
        pairs = list(latest.values())
        if not pairs:
            return

        def write(collection: Collection) -> None:
            self._check_dimension([vector for _, vector in pairs])
            record_writes.upserted(self.session, self.boundary, collection, pairs, self.batch_size)
            self._announce([m.id for m, _ in pairs])

        needs = write_size([memory.content for memory, _ in pairs], len(pairs[0][1]))
        self._run("write memories", write, write=True, needs=needs, records_only=True)

    def _announce(self, ids: Sequence[str]) -> None:
        """After a write reached a server: its change record, so every node's mirror reads these ids again."""
        if self.node is not None and self.session.directory is None:
            self.node.written(self.name, ids, self.store_name)

    def _count(self) -> int:
        return self._run("count memories", lambda collection: self.boundary.call("count memories", collection.count))

    def _salvaged(self, error: DomainError) -> list[Memory]:
        return record_reads.salvaged(self.session.directory, self.name, error)

    def _check_dimension(self, vectors: Sequence[Vector]) -> None:
        abort_if(dimension_mismatch(self.dimension, vectors))
