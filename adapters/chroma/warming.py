"""Mirrors built in a background thread for a long-lived process, so that no search pays for reading a store.

A one-shot process leaves the choice to the ski-rental rule of adapters.chroma.mirror_policy (a CLI call never
builds). A process that keeps its storage open (the memory server, `memory serve`, `memory mcp`) asks its
catalog to keep it warm: every existing store is then read into a mirror by a daemon thread, and again after
another process's write has dropped it (the next search asks for it). Searches never wait: until the mirror
is installed they are answered by Chroma.

A mirror built so is written to its own file (adapters.chroma.mirror_file) with the data directory's generation; a
later process that finds the directory at that generation restores the file instead (seconds at 100k, not minutes),
and one that finds it stale, damaged or missing reads Chroma as before and writes it anew.

The build reads the collection page by page, each page under the session's lock (so a search waits for one
page at most), and installs the mirror under the lock only when nothing it read can be stale: no other
process wrote (the session's resets), the collection is the same one (no rebuild swapped it), no write of
this process failed half-way, and, after this process's writes that raced the read are applied to the
mirror (session.racing), it holds exactly as many memories as the collection. Otherwise it reads again.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from uuid import UUID

from attrs import define, field
from chromadb.api.models.Collection import Collection

from agent_memory.adapters.chroma import mirror_file
from agent_memory.adapters.chroma.records import memories_of
from agent_memory.adapters.chroma.session import RacingWrites, Session
from agent_memory.adapters.chroma.store import ChromaVectorStore
from agent_memory.adapters.chroma.vector_mirror import Columns, VectorMirror
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.domain.model import Memory

LOG = logging.getLogger(__name__)

WARM_PAGE = 1000  # records read per hold of the lock (read at call time: tests shrink it)
ATTEMPTS = 3  # reads of one store before giving up until a search asks again


class _Stale(Exception):
    """What the build has read so far can no longer be trusted: read again."""


class _Closed(Exception):
    """The session was closed while the build read: give up (the process is done with this data directory)."""


@define
class Warmer:
    """Builds the mirrors of the stores asked for, one at a time, in one daemon thread that ends when none are left.

    `paused` (tests) is waited for before each page is read, so a test can land a write in the middle of a build.
    """

    paused: Callable[[], None] | None = None
    _wanted: dict[str, ChromaVectorStore] = field(factory=dict, init=False)  # by collection name, in order asked
    _guard: threading.Lock = field(factory=threading.Lock, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _idle: threading.Event = field(factory=threading.Event, init=False)
    _sessions: list[Session] = field(factory=list, init=False)  # whose mirrors are written to their files at exit

    def want(self, store: ChromaVectorStore) -> None:
        """Build `store`'s mirror soon (once however often it is asked while waiting or building); returns at once."""
        if store.session.directory is None or store.mirror_limit <= 0:
            return  # a Chroma server's stores are mirrored by adapters.chroma.node_mirror instead
        with self._guard:
            if not any(session is store.session for session in self._sessions):
                self._sessions.append(store.session)
                atexit.register(store.session.keep_mirrors)  # what this process wrote is in the next one's mirror
            self._wanted.setdefault(store.name, store)
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="agent-memory-mirror", daemon=True)
                self._thread.start()

    def want_all(self, stores: Callable[[], Iterable[ChromaVectorStore]]) -> None:
        """Build the mirrors of the stores `stores` finds, looked up in the background thread too."""

        def find() -> None:
            try:
                for store in stores():
                    self.want(store)
            except Abort as abort:
                LOG.warning("cannot list the stores to mirror: %s", abort.error.message)

        threading.Thread(target=find, name="agent-memory-mirror-list", daemon=True).start()

    def wait_idle(self, timeout: float) -> bool:
        """True once no build is waiting or running (tests, benchmarks)."""
        return self._idle.wait(timeout)

    def _work(self) -> None:
        done = False
        try:
            while (store := self._next()) is not None:
                try:
                    warm(store, paused=self.paused)
                except Abort as abort:  # the store is gone or unreadable: its searches keep going to Chroma
                    LOG.warning("cannot mirror collection %r: %s", store.name, abort.error.message)
                finally:
                    with self._guard:
                        self._wanted.pop(store.name, None)
            done = True
        finally:
            if not done:  # a build failed unexpectedly: the next `want` starts a new thread
                with self._guard:
                    self._thread = None
                    self._idle.set()

    def _next(self) -> ChromaVectorStore | None:
        """The next store to mirror; with none left, the thread is over (decided under the guard `want` takes)."""
        with self._guard:
            store = next(iter(self._wanted.values()), None)
            if store is None:
                self._thread = None
                self._idle.set()
            return store


def warm(store: ChromaVectorStore, *, paused: Callable[[], None] | None = None) -> VectorMirror | None:
    """Read `store` into a mirror and install it (the one there already, if any); None when it cannot be mirrored."""
    for attempt in range(1, ATTEMPTS + 1):
        started = time.perf_counter()
        try:
            outcome = _attempt(store, paused)
        except _Stale:
            LOG.info(
                "mirror of collection %r read again: it changed while it was read (attempt %d)", store.name, attempt
            )
            continue
        except _Closed:
            return None
        if outcome is not None:
            LOG.info(
                "mirrored collection %r of %s: %d memories in %.2f s",
                store.name,
                store.session.directory,
                len(outcome),
                time.perf_counter() - started,
            )
        return outcome
    return None


def _attempt(store: ChromaVectorStore, paused: Callable[[], None] | None) -> VectorMirror | None:
    session, boundary = store.session, store.boundary
    resets, closes = session.resets, session.closes

    def begin(collection: Collection) -> tuple[UUID, RacingWrites, int | None] | VectorMirror | None:
        installed = session.mirrors.get(collection.id)
        if installed is not None:
            return installed
        if boundary.call("count memories", collection.count) > store.mirror_limit:
            return None
        racing = RacingWrites(collection.id)
        session.racing.append(racing)
        return collection.id, racing, session.generation

    begun = store.on_collection("prepare a mirror", begin)
    if not isinstance(begun, tuple):
        return begun
    collection_id, racing, generation = begun
    try:
        restored = _restored(store, collection_id, generation)
        return _read_and_install(store, collection_id, racing, (resets, closes), paused, restored)
    finally:
        session.stop_racing(racing)


def _restored(store: ChromaVectorStore, collection_id: UUID, generation: int | None) -> VectorMirror | None:
    """The mirror's file when it holds this collection at this generation (read outside the lock), else None."""
    directory = store.session.directory
    if directory is None or generation is None:
        return None
    try:
        mirror = mirror_file.load(directory, str(collection_id), generation, store.dimension)
    except mirror_file.Unusable as why:
        LOG.info("mirror file of collection %r not used: %s", store.name, why)
        return None
    LOG.info("mirror of collection %r restored from its file (generation %d)", store.name, generation)
    store.session.mirror_files[collection_id] = generation
    return mirror


def _read_and_install(
    store: ChromaVectorStore,
    collection_id: UUID,
    racing: RacingWrites,
    seen: tuple[int, int],
    paused: Callable[[], None] | None,
    restored: VectorMirror | None = None,
) -> VectorMirror | None:
    session, boundary = store.session, store.boundary

    def check(collection: Collection) -> None:
        if session.closes != seen[1]:
            raise _Closed
        if session.resets != seen[0] or collection.id != collection_id or racing.spoiled:
            raise _Stale

    mirror = restored if restored is not None else _read(store, check, seen, paused)
    if mirror is None:
        return None
    snapshot: list[tuple[int | None, Columns]] = []

    def install(collection: Collection) -> VectorMirror:
        check(collection)
        for change in racing.changes:
            if change(mirror) is False:
                raise _Stale
        if len(mirror) != boundary.call("count memories", collection.count):
            raise _Stale  # a removal moved records across a page boundary while they were read
        session.mirrors[collection_id] = mirror
        if restored is None:  # what it holds now is the store at the generation now seen: that is what the file keeps
            snapshot.append((session.generation, mirror.columns()))
        return mirror

    installed = store.on_collection("install a mirror", install)
    for generation, columns in snapshot:
        _write(store, collection_id, generation, installed.dimension, columns)
    return installed


def _write(
    store: ChromaVectorStore, collection_id: UUID, generation: int | None, dimension: int, columns: Columns
) -> None:
    """Write the mirror's file (best effort: without it the next process reads Chroma, as before)."""
    directory = store.session.directory
    if directory is None or generation is None:
        return
    try:
        mirror_file.save(directory, str(collection_id), generation, dimension, columns)
    except OSError as error:
        LOG.warning("cannot write the mirror file of collection %r: %s", store.name, error)
        return
    store.session.mirror_files[collection_id] = generation


def _read(
    store: ChromaVectorStore,
    check: Callable[[Collection], None],
    seen: tuple[int, int],
    paused: Callable[[], None] | None,
) -> VectorMirror | None:
    """The store read out of Chroma page by page into a new mirror (None when it cannot be mirrored)."""
    session, boundary = store.session, store.boundary
    memories: list[Memory] = []
    vectors: list[Any] = []
    offset = 0
    while True:
        if paused is not None:
            paused()
        if session.closes != seen[1]:
            raise _Closed  # before the lock: a closed session is not opened again for a page
        page = WARM_PAGE

        def read(collection: Collection, offset: int = offset, page: int = page) -> Any:
            check(collection)
            return boundary.call(
                "read the store into memory",
                lambda: collection.get(limit=page, offset=offset, include=["embeddings", "documents", "metadatas"]),
            )

        found = store.on_collection("read the store into memory", read)
        memories.extend(memories_of(found["ids"], found["documents"] or [], found["metadatas"] or []))
        vectors.extend(found["embeddings"] if found["embeddings"] is not None else [])
        if len(found["ids"]) < page:
            break
        offset += page
    dimension = store.dimension or (len(vectors[0]) if vectors else None)
    if dimension is None or len(vectors) != len(memories):
        return None
    return VectorMirror.of(dimension, memories, vectors)  # outside the lock: searches go on meanwhile
