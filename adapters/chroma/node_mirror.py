"""A node's mirror over a Chroma server: each store's vectors in this process, kept current by the engine's "vectors" feed.

Why: a Chroma server answers a filtered query in tens of milliseconds at 10k (72 ms hybrid against 14.7 ms embedded,
issue 46), and its other clients' writes give no signal, so until now a node over a server mirrored nothing. Here
every write of a store through ChromaVectorStore claims, after it reached the engine, one record of the ids it wrote
in the engine's Ledger (`change:vectors:<collection>:<seq>`, insert-if-absent at the next seq, as adapters/feeds/ do);
a node that keeps its storage open (`keep_warm`) builds each searched store's mirror in a background thread and,
before each search from it, reads the key after its watermark (one round trip) and, when there is more, reads those
ids' records and vectors again from the engine. A write is acknowledged only after its record is claimed, and its
record is claimed only after the write reached the engine, so a node's next search after the acknowledgement reads
the write. The hits are read again from the engine and checked against the filter before they are answered, so the
mirror never answers a record the engine no longer holds as it was (deleted, moved, changed by a writer the mirror
has not heard of yet, or dropped by the store's own read path). A search before the mirror is ready, or of a store
over `limit` records, is Chroma's own query, as before; a reindex (a new collection id) drops the mirror and builds
it again. Memory is bounded by `limit` records per store (about 1.6 KB each at 384 dimensions). With a `folder`
(the node's data directory) each mirror is kept in a file of its own (adapters.chroma.mirror_file, its generation
the feed watermark), written after a build and at exit, and a new process restores it and catches up from there.
"""

from __future__ import annotations

import atexit
import json
import logging
import pathlib
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar
from uuid import UUID, uuid4

from attrs import define, field
from chromadb.api.models.Collection import Collection
from returns.result import Result, Success

from agent_memory.adapters.chroma import layout, mirror_file
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.records import memories_of
from agent_memory.adapters.chroma.vector_mirror import VectorMirror
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.feed_probe import FeedProbe
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector

LOG = logging.getLogger(__name__)
T = TypeVar("T")
FEED = "vectors"
KIND = "vectors-change"
ATTEMPTS = 3  # builds of one store before giving up until a search asks again
SLACK = 8  # hits asked beyond the limit, so that one dropped by the engine's check is replaced
OnCollection = Callable[[str, Callable[[Collection], Any]], Any]  # ChromaVectorStore.on_collection


def key(store: str, seq: int) -> str:
    return f"change:{FEED}:{store}:{seq}"


def _unwrap(result: Result[Any, DomainError]) -> Any:
    match result:
        case Success(value):
            return value
        case _:
            raise Abort(result.failure())


@define(eq=False)
class _Mirrored:
    collection_id: UUID
    mirror: VectorMirror
    mark: int  # the seq of the last feed record applied
    saved: int = -2  # the mark its file was written at (-2: never)


@define(eq=False)
class NodeMirrors:
    """This process's mirrors of a Chroma server's stores (by collection name) and their feed in the engine."""

    ledger: Ledger
    limit: int
    active: bool = False  # set by `keep_warm`: a one-shot process never reads a whole store
    folder: pathlib.Path | None = None  # where the mirrors' files are kept (None: not kept)
    _guard: threading.Lock = field(factory=threading.Lock)
    _mirrors: dict[str, _Mirrored] = field(factory=dict)
    _building: set[str] = field(factory=set)
    _heads: dict[str, int] = field(factory=dict)  # the highest seq this process has seen per store
    _exit_hook: bool = field(default=False)
    _collections: dict[str, str] = field(factory=dict)  # a store's name (its other feeds' key) → its collection
    _probe: FeedProbe | None = field(default=None)

    @property
    def probe(self) -> FeedProbe:
        """The probe this feed shares with the store's keyword and parts feeds (adapters/shared/feed_probe.py)."""
        if self._probe is None:
            self._probe = FeedProbe.of(self.ledger)
            self._probe.join(self._feed, self._wanted)
        return self._probe

    @property
    def _feed(self) -> str:
        """This object's name among the probe's feeds (two catalogs of a process may share a ledger)."""
        return f"{FEED}@{id(self)}"

    def _wanted(self, group: str) -> list[str]:
        """The key after the watermark of the mirror of store `group`'s collection (none without a mirror)."""
        collection = self._collections.get(group)
        state = None if collection is None else self._mirrors.get(collection)
        return [] if collection is None or state is None else [key(collection, state.mark + 1)]

    # --- writers

    def written(self, store: str, ids: Sequence[str], group: str | None = None) -> None:
        """Claim the next record of `store`'s feed for these ids (after the write reached the engine); raises Abort
        saying the write is stored but other nodes may not find it by meaning when the claim fails. `group`: the
        store's name, whose probes the write makes stale."""
        if not ids:
            return
        try:
            self._claim_written(store, ids)
        finally:
            if group is not None:
                self.probe.wrote(group)  # an answer probed before this write is not used after it

    def _claim_written(self, store: str, ids: Sequence[str]) -> None:
        body = json.dumps(list(dict.fromkeys(ids)))
        writer = uuid4().hex
        try:
            listed = _unwrap(self.ledger.listed(store, KIND, after=self._heads.get(store, -1)))
            seq = max([self._heads.get(store, -1), *(r.seq for r in listed)]) + 1
            while True:
                mine = LedgerRecord(key(store, seq), store, KIND, seq, {"writer": writer}, body)
                won = _unwrap(self.ledger.claim(mine))
                self._heads[store] = max(self._heads.get(store, -1), seq)
                if won.fields.get("writer") == writer:
                    return
                seq += 1
        except Abort as abort:
            raise Abort(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"The write was stored, but its change record could not be written ({abort.error.message}): "
                    "other machines may not find it by meaning until `memory reindex`. Check with `memory get`.",
                    cause=abort.error.cause,
                )
            ) from abort

    # --- readers

    def query(
        self,
        store: str,
        collection: Collection,
        boundary: Boundary,
        on_collection: OnCollection,
        request: tuple[Vector, MemoryFilter, int],
        read: Callable[[list[str]], list[Memory]],
        group: str | None = None,
    ) -> list[tuple[Memory, float]] | None:
        """The search answered from the mirror after catching up on the feed; None when there is no mirror yet
        (one is being built: the caller asks Chroma meanwhile). Raises Abort.

        With `group` (the store's name: a reader's round, adapters/shared/feed_probe.py) the catch-up uses the round's
        shared probe, and the hits are the engine's records as of that probe: answered as the mirror holds them.
        Without it, the hits are read again through the store's own read path (`read`) and checked against the
        filter."""
        embedding, where, limit = request
        with self._guard:
            state = self._mirrors.get(store)
            if state is not None and state.collection_id != collection.id:
                del self._mirrors[store]  # a reindex swapped the collection in: build again
                state = None
            if group is not None:
                self._collections[group] = store
        if state is None:
            if self.active and self.limit > 0:
                self._build_soon(store, on_collection, boundary)
            return None
        with self._guard:
            try:
                self._catch_up(store, state, collection, boundary, group)
            except Abort as abort:  # what it holds can no longer be trusted: Chroma answers, a new one is built
                LOG.warning("mirror of collection %r dropped: %s", store, abort.error.message)
                self._mirrors.pop(store, None)
                return None
            hits = state.mirror.query(embedding, where, limit + SLACK)
            if group is not None and self.probe.fresh(group, self._feed):
                return hits[:limit]
        return _checked(hits, read, where)[:limit]

    def answer(
        self, store: str, group: str, collection: Collection, boundary: Boundary, work: Callable[[VectorMirror], T]
    ) -> T | None:
        """`work` on the mirror of `store` once this reader's round caught it up (FeedProbe.fresh: it then holds the
        engine's records as of the round's probe; a round whose search did not catch it up yet, a keyword search,
        catches up now from the round's probe); None without a mirror of `collection` or a round (ask the engine)."""
        with self._guard:
            state = self._mirrors.get(store)
            if state is None or state.collection_id != collection.id:
                return None
            if not self.probe.fresh(group, self._feed):
                if not self.probe.within(group):
                    return None
                try:
                    self._catch_up(store, state, collection, boundary, group)
                except Abort as abort:
                    LOG.warning("mirror of collection %r dropped: %s", store, abort.error.message)
                    self._mirrors.pop(store, None)
                    return None
                if not self.probe.fresh(group, self._feed):
                    return None
            return work(state.mirror)

    def _catch_up(
        self, store: str, state: _Mirrored, collection: Collection, boundary: Boundary, group: str | None = None
    ) -> None:
        """Read the key after the watermark (by the round's shared probe, with `group`); when there is one, every
        record after it, and their ids again."""
        wanted = [key(store, state.mark + 1)]
        found = _unwrap(self.ledger.read(wanted) if group is None else self.probe.read(group, self._feed, wanted))
        if wanted[0] not in found:
            return
        records: list[LedgerRecord] = _unwrap(self.ledger.listed(store, KIND, after=state.mark))
        ids: list[str] = []
        for record in records:
            try:
                ids.extend(str(i) for i in json.loads(record.text))
            except (ValueError, TypeError) as error:
                raise Abort(
                    DomainError(
                        ErrorCode.STORAGE_ERROR, f"The change record {record.key} is malformed.", cause=str(error)
                    )
                ) from error
        _refresh(state.mirror, collection, boundary, list(dict.fromkeys(ids)))
        state.mark = max([state.mark, *(record.seq for record in records)])
        self._heads[store] = max(self._heads.get(store, -1), state.mark)

    # --- building

    def _build_soon(self, store: str, on_collection: OnCollection, boundary: Boundary) -> None:
        with self._guard:
            if store in self._building:
                return
            self._building.add(store)
            if not self._exit_hook and self.folder is not None:
                self._exit_hook = True
                atexit.register(self.keep_files)
        threading.Thread(
            target=self._build, args=(store, on_collection, boundary), name="agent-memory-node-mirror", daemon=True
        ).start()

    def _build(self, store: str, on_collection: OnCollection, boundary: Boundary) -> None:
        try:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    if self._attempt(store, on_collection, boundary, use_file=attempt == 1):
                        return
                except Abort as abort:
                    LOG.warning("cannot mirror collection %r: %s", store, abort.error.message)
                    return
                LOG.info(
                    "mirror of collection %r read again: it changed while it was read (attempt %d)", store, attempt
                )
        finally:
            with self._guard:
                self._building.discard(store)

    def _attempt(self, store: str, on_collection: OnCollection, boundary: Boundary, *, use_file: bool) -> bool:
        """Read the feed's head, then the store page by page (or its file, at a watermark no later than the head),
        then catch up from there: whatever was written while it read is read again. When it then holds another number
        of records than the collection, the ids that differ are read again."""
        listed: list[LedgerRecord] = _unwrap(self.ledger.listed(store, KIND, after=self._heads.get(store, -1)))
        head = max([self._heads.get(store, -1), *(r.seq for r in listed)])

        def read(collection: Collection) -> tuple[UUID, VectorMirror, int, bool] | None:
            if boundary.call("count memories", collection.count) > self.limit:
                return None
            if use_file and self.folder is not None:
                try:
                    restored, mark = mirror_file.load_behind(self.folder, str(collection.id), head, None)
                    LOG.info("mirror of collection %r restored from its file (watermark %d)", store, mark)
                    return collection.id, restored, mark, True
                except mirror_file.Unusable as why:
                    LOG.info("mirror file of collection %r not used: %s", store, why)
            memories: list[Memory] = []
            vectors: list[Any] = []
            offset = 0
            while True:
                found = boundary.call(
                    "read the store into memory",
                    partial(
                        collection.get,
                        limit=layout.SCAN_PAGE,
                        offset=offset,
                        include=["embeddings", "documents", "metadatas"],
                    ),
                )
                memories.extend(memories_of(found["ids"], found["documents"] or [], found["metadatas"] or []))
                vectors.extend(found["embeddings"] if found["embeddings"] is not None else [])
                if len(found["ids"]) < layout.SCAN_PAGE:
                    break
                offset += layout.SCAN_PAGE
            if not vectors or len(vectors) != len(memories):
                return None
            return collection.id, VectorMirror.of(len(vectors[0]), memories, vectors), head, False

        built = on_collection("read the store into memory", read)
        if built is None:
            return True  # too large, empty or unreadable: searches keep going to Chroma
        collection_id, mirror, mark, from_file = built
        state = _Mirrored(collection_id, mirror, mark, saved=mark if from_file else -2)

        def settle(collection: Collection) -> bool:
            if collection.id != collection_id:
                return False
            # not installed yet: no search reads or changes it, so this needs no guard (searches go on meanwhile)
            self._catch_up(store, state, collection, boundary)
            if len(mirror) != boundary.call("count memories", collection.count):
                # a removal moved records across a page, or a write reached the engine without its record (its
                # writer died, or its claim failed): the ids that differ are read again
                _reconcile(mirror, collection, boundary)
            with self._guard:
                self._mirrors[store] = state
            LOG.info("mirrored collection %r of the Chroma server: %d memories", store, len(mirror))
            return True

        if not on_collection("install a mirror", settle):
            return False
        if not from_file:
            self._save(store, state)
        return True

    # --- files

    def keep_files(self) -> None:
        """Write the file of each mirror that has caught up since its file was written (at exit)."""
        with self._guard:
            held = list(self._mirrors.items())
        for store, state in held:
            if state.saved != state.mark:
                self._save(store, state)

    def _save(self, store: str, state: _Mirrored) -> None:
        if self.folder is None:
            return
        with self._guard:  # catch-ups change the mirror under the guard: a consistent copy at one watermark
            columns, mark = state.mirror.columns(), state.mark
        try:
            mirror_file.save(self.folder, str(state.collection_id), mark, state.mirror.dimension, columns)
        except OSError as error:
            LOG.warning("cannot write the mirror file of collection %r: %s", store, error)
            return
        state.saved = mark


def _refresh(mirror: VectorMirror, collection: Collection, boundary: Boundary, ids: list[str]) -> None:
    """These ids as the engine holds them now: their records and vectors put in the mirror, the absent removed."""
    present: set[str] = set()
    for batch in chunks(ids, layout.SCAN_PAGE):
        found = boundary.call(
            "read changed memories",
            partial(collection.get, ids=list(batch), include=["embeddings", "documents", "metadatas"]),
        )
        memories = memories_of(found["ids"], found["documents"] or [], found["metadatas"] or [])
        vectors: Any = found["embeddings"] if found["embeddings"] is not None else []
        if memories:
            mirror.upsert(memories, vectors)
        present.update(memory.id for memory in memories)
    mirror.remove([memory_id for memory_id in ids if memory_id not in present])


def _reconcile(mirror: VectorMirror, collection: Collection, boundary: Boundary) -> None:
    """The ids the collection holds and the mirror does not read in, those it no longer holds removed."""
    held = set(boundary.call("list memory ids", partial(collection.get, include=[]))["ids"])
    mirrored = set(mirror.ids())
    mirror.remove(list(mirrored - held))
    _refresh(mirror, collection, boundary, sorted(held - mirrored))


def _checked(
    hits: list[tuple[Memory, float]], read: Callable[[list[str]], list[Memory]], where: MemoryFilter
) -> list[tuple[Memory, float]]:
    """The hits as the store's read path answers them now, kept only when they still pass the filter."""
    if not hits:
        return []
    current = {m.id: m for m in read([memory.id for memory, _ in hits])}
    return [
        (current[memory.id], score)
        for memory, score in hits
        if memory.id in current and where.matches(current[memory.id])
    ]
