"""ChromaDB adapter: a StoreCatalog of collections (embedded or server) and the VectorStore over one collection."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar, cast
from uuid import UUID

import chromadb
import filelock
import httpx
from attrs import define, evolve, field, frozen
from chromadb.api import ClientAPI
from chromadb.api.client import Client
from chromadb.api.models.Collection import Collection
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.config import Settings
from chromadb.errors import ChromaError, NotFoundError, UniqueConstraintError
from returns.result import Failure, Result, Success

from agent_memory.adapters.chroma.mirror import VectorMirror
from agent_memory.adapters.chroma.records import (
    MetadataDict,
    memory_from_record,
    memory_metadata,
    similarity_from_distance,
    to_where,
)
from agent_memory.adapters.chroma.salvage import (
    SalvageError,
    damaged_index_problem,
    is_vector_index_damage,
    salvage_memories,
)
from agent_memory.adapters.shared.disk import cannot_write, disk_hint, read_only_copy
from agent_memory.adapters.shared.vector_math import cosines
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DEFAULT_STORE, Memory, check_store_name
from agent_memory.domain.paths import CategoryPath
from agent_memory.domain.ports import Vector

T = TypeVar("T")

STORE_SEPARATOR = "--"  # store names never contain "--" (domain.model.STORE_NAME), so this is reversible
NEXT_SUFFIX = ".next"  # a rebuild in progress; "." never occurs in store names, so names() skips these
PREV_SUFFIX = ".prev"  # the contents a rebuild is replacing, until the swap is done
CATEGORIES_SUFFIX = ".categories"  # a store's category registry
REBUILDING = "rebuilding"  # collection-metadata flag of a .next collection that is not filled yet
COSINE: Any = {"hnsw": {"space": "cosine"}}  # a chromadb CreateCollectionConfiguration
SCAN_PAGE = 5000
FALLBACK_BATCH = 1000
CONNECT_TIMEOUT_S = 3.0
LOCK_FILE = ".agent-memory.lock"  # an embedded data directory's lock, held around every operation on it
GENERATION_FILE = ".agent-memory.generation"  # how many writes the data directory has seen (see _Session)
LOCK_TIMEOUT_S = 60.0
MIRROR_LIMIT = 200_000  # the most records an embedded store mirrors in process (about 1.6 KB of RAM each at 384-d)
MIRROR_BUILD_S_PER_RECORD = 3e-4  # a first guess at a mirror's build cost (measured: 0.2-0.3 ms); see _mirrored


# --- the error boundary -----------------------------------------------------------------------


@frozen
class Boundary:
    """Where the library meets the domain: runs a Chroma call and turns its exceptions into DomainErrors."""

    location: str
    server: bool

    def unavailable(self, cause: BaseException | str) -> DomainError:
        if self.server:
            message = f"Cannot connect to ChromaDB at {self.location}. Is Docker running?"
        else:
            message = f"Cannot open the ChromaDB data at {self.location}{disk_hint(cause)}."
        return DomainError(ErrorCode.BACKEND_UNAVAILABLE, message, cause=str(cause))

    def run(self, doing: str, call: Callable[[], T]) -> Result[T, DomainError]:
        """`call()` as a Result: network failures → BACKEND_UNAVAILABLE, library errors → STORAGE_ERROR."""
        try:
            return Success(call())
        except (httpx.TransportError, ConnectionError) as error:
            return Failure(self.unavailable(error))
        except (ChromaError, ValueError, TypeError, KeyError) as error:
            return Failure(storage_error(doing, error))
        except Exception as error:
            # Boundary catch-all, narrowed: chromadb's HTTP client raises a plain `Exception(response.text)`
            # for server errors it cannot classify (chromadb/api/base_http_client.py). Only that exact
            # type is turned into STORAGE_ERROR; any subclass is a bug and propagates.
            if type(error) is not Exception:
                raise
            return Failure(storage_error(doing, error))


def storage_error(doing: str, error: BaseException) -> DomainError:
    return DomainError(
        ErrorCode.STORAGE_ERROR,
        f"ChromaDB failed to {doing}{disk_hint(error) or index_hint(error)}.",
        cause=f"{type(error).__name__}: {error}",
    )


def index_hint(cause: BaseException | str) -> str:
    """': its vector index is damaged …' when the cause is Chroma failing to load its HNSW files; '' otherwise."""
    if not is_vector_index_damage(str(cause)):
        return ""
    return (
        ": its vector index (HNSW files) is damaged. `memory export` still reads every memory, and "
        "`memory reindex` rebuilds the index from them"
    )


def _chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[start : start + size] for start in range(0, len(items), max(1, size))]


def _last_wins(memories: Sequence[Memory]) -> dict[str, Memory]:
    return {memory.id: memory for memory in memories}


# --- collections ------------------------------------------------------------------------------


def collection_metadata(model: str, dimension: int) -> MetadataDict:
    return {"embedding_model": model, "dimension": dimension}


def _space(collection: Collection) -> str:
    """The distance space of a collection: its configuration, else legacy metadata, else Chroma's default l2."""
    configuration = cast(Mapping[str, Any], collection.configuration_json or {})  # `.configuration` warns
    for index in ("hnsw", "spann"):
        settings = configuration.get(index)
        if isinstance(settings, Mapping) and isinstance(settings.get("space"), str):
            return str(settings["space"])
    legacy = (collection.metadata or {}).get("hnsw:space")
    return str(legacy) if isinstance(legacy, str) else "l2"


def _recorded_dimension(collection: Collection) -> int | None:
    recorded = (collection.metadata or {}).get("dimension")
    return recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else None


def _recorded_model(collection: Collection) -> str | None:
    recorded = (collection.metadata or {}).get("embedding_model")
    return recorded if isinstance(recorded, str) else None


def _find(client: ClientAPI, name: str) -> Collection | None:
    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError:
        return None


def _drop(client: ClientAPI, name: str) -> None:
    with contextlib.suppress(NotFoundError):
        client.delete_collection(name)


def _recover(client: ClientAPI, name: str) -> Collection | None:
    """Finish or undo a rebuild that stopped between its two renames (the only moment `name` is missing).

    A filled `.next` wins (the rebuild had finished writing); otherwise `.prev` goes back in place.
    """
    staged = _find(client, name + NEXT_SUFFIX)
    if staged is not None and not (staged.metadata or {}).get(REBUILDING):
        staged.modify(name=name)
        return staged
    previous = _find(client, name + PREV_SUFFIX)
    if previous is not None:
        previous.modify(name=name)
        return previous
    return None


# --- the session: one client per database, shared safely between processes -------------------


def _forget_system(identifier: str) -> None:
    """Make the next client for `identifier` start a fresh Chroma System, which reads the data from disk.

    Chroma keeps one System per data directory per process (SharedSystemClient, chromadb 1.5.9) and a
    new client reuses it, stale segments included. `close()` stops it only when no other client of this
    process holds it, so the cached entry is dropped here too. Its reference count is left alone: a
    later `close()` of such an old client must not count against, and stop, the new System.
    """
    SharedSystemClient._identifier_to_system.pop(identifier, None)


@define
class _Session:
    """The one Chroma client of a database in this process, and the rules for sharing it with others.

    Every operation goes through `run`. A server orders its clients' writes itself, so there `run` only
    supplies the (lazily made) client. An embedded database is safe for one process only (Chroma's docs,
    chroma-core/chroma#961, #3792): a process keeps cached segments and overwrites what another wrote.
    So around each operation on a data directory `run`
      1. takes the directory's lock (LOCK_FILE): one process at a time touches the files;
      2. reads the generation (GENERATION_FILE); when it is not the one this process saw last, another
         process has written since: the client, the cached collections and Chroma's cached System are
         dropped and a new client reads everything from disk;
      3. before a write, bumps the generation, so the other processes reload before their next operation
         (before, not after: a writer killed half-way has announced what it may have written);
      4. runs the operation, each collection looked up by name (a handle from before a reload is dead).
    A process that is the only writer pays for the lock and the read of a small file per operation.
    """

    boundary: Boundary
    directory: pathlib.Path | None  # the embedded database's data directory; None for a server
    connect: Callable[[], Result[ClientAPI, DomainError]]
    _client: ClientAPI | None = field(default=None, init=False)
    _collections: dict[str, Collection] = field(factory=dict, init=False)  # by name, until a write or reload
    _seen: int | None = field(default=None, init=False)  # the generation the client has read up to
    # per collection id: the in-process mirror of its records, and the seconds Chroma spent on its searches,
    # both valid only while no other process has written (dropped by _reset); see ChromaVectorStore.query
    mirrors: dict[UUID, VectorMirror] = field(factory=dict, init=False)
    search_seconds: dict[UUID, float] = field(factory=dict, init=False)
    build_s_per_record: float = field(default=MIRROR_BUILD_S_PER_RECORD, init=False)  # learnt from each build
    _mutex: threading.RLock = field(factory=threading.RLock, init=False)  # this process's threads take turns
    _lock: filelock.FileLock | None = field(default=None, init=False)

    def run(
        self, doing: str, op: Callable[[ClientAPI], Result[T, DomainError]], *, write: bool = False
    ) -> Result[T, DomainError]:
        """`op` with a client that has seen every other process's writes; a `write` is announced first.

        Re-entrant: a run inside a run of the same thread keeps the lock it holds.
        """
        with self._mutex:  # the threads of this process take turns too
            locked = self._lock_directory(doing, write=write)
            if isinstance(locked, Failure):
                return locked
            try:
                ready = self._refresh()
                if write:
                    ready = ready.bind(lambda _: self._announce())
                result = ready.bind(lambda _: self._connect()).bind(op)
                if write:
                    self._collections.clear()  # it may have created, renamed or dropped some
                return result
            finally:
                if self._lock is not None and self._lock.is_locked:
                    self._lock.release()

    def find(self, client: ClientAPI, name: str) -> Collection | None:
        """The collection called `name`, None when there is none (raises what chromadb raises)."""
        cached = self._collections.get(name)
        if cached is not None and cached.name == name:  # a rename in this process changes `name` in place
            return cached
        found = _find(client, name)
        if found is None:
            self._collections.pop(name, None)
        else:
            self._collections[name] = found
        return found

    # --- helpers

    def _connect(self) -> Result[ClientAPI, DomainError]:
        """The client, made on first success (a failed attempt is retried on the next call)."""
        if self._client is not None:
            return Success(self._client)
        made = self.connect()
        if isinstance(made, Success):
            self._client = made.unwrap()
        return made

    def _lock_directory(self, doing: str, *, write: bool) -> Result[None, DomainError]:
        """Take the data directory's lock; a reader on a disk that refuses writes reads without it (nobody
        can write there either), a writer there is refused saying why."""
        if self.directory is None:
            return Success(None)
        lock_path = self.directory / LOCK_FILE
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if self._lock is None:
                self._lock = filelock.FileLock(str(lock_path))
            self._lock.acquire(timeout=LOCK_TIMEOUT_S)
        except filelock.Timeout as error:  # before OSError: filelock.Timeout is one
            return Failure(
                DomainError(
                    ErrorCode.BACKEND_UNAVAILABLE,
                    f"Cannot {doing}: another process has held the ChromaDB data directory {self.directory} for "
                    f"more than {LOCK_TIMEOUT_S:.0f} s (lock file {lock_path}). Retry when it has finished.",
                    path=str(lock_path),
                    cause=str(error),
                )
            )
        except OSError as error:
            if not write and cannot_write(error):
                return Success(None)
            return Failure(self.boundary.unavailable(error))
        return Success(None)

    def _refresh(self) -> Result[None, DomainError]:
        """Drop the client when another process wrote since it was made (the next `_connect` makes a new one)."""
        if self.directory is None:
            return Success(None)
        read = self._generation(self.directory)
        if isinstance(read, Failure):
            return read
        current = read.unwrap()
        if current != self._seen:
            self._reset()
            self._seen = current
        return Success(None)

    def _reset(self) -> None:
        client, self._client = self._client, None
        self._collections.clear()
        self.mirrors.clear()
        self.search_seconds.clear()
        if client is None:  # nothing read yet: a first client reads from disk anyway
            return
        # chromadb 1.5.9 may raise AttributeError('bindings') while stopping a System (chromadb/api/rust.py
        # stop()); the old System is dropped all the same and the new client does not depend on it.
        if isinstance(client, Client):  # what PersistentClient makes
            with contextlib.suppress(ChromaError, AttributeError):
                client.close()
        _forget_system(str(self.directory))

    def _generation(self, directory: pathlib.Path) -> Result[int, DomainError]:
        try:
            text = (directory / GENERATION_FILE).read_bytes()
        except FileNotFoundError:
            return Success(0)  # nothing written since this protocol started
        except OSError as error:
            return Failure(self.boundary.unavailable(error))
        try:
            return Success(int(text))
        except ValueError:
            return Success(-1)  # not written by this module: differs from every count, the next write replaces it

    def _announce(self) -> Result[None, DomainError]:
        """Bump the generation: written whole (temporary file, fsync, rename), so no reader sees half of it.

        It is done with the lock held and before the write, so no other process can read in between.
        """
        if self.directory is None:
            return Success(None)
        following = max(self._seen or 0, 0) + 1
        target = self.directory / GENERATION_FILE
        temporary = target.with_name(GENERATION_FILE + ".tmp")  # one writer at a time: the lock is held
        try:
            with temporary.open("wb") as handle:
                handle.write(b"%d\n" % following)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except OSError as error:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"Cannot write to the ChromaDB data at {self.directory}{disk_hint(error)}: the write could not "
                    f"be announced to other processes in {target}. Nothing was written.",
                    path=str(target),
                    cause=f"{type(error).__name__}: {error}",
                )
            )
        self._seen = following
        return Success(None)


_EMBEDDED: dict[str, _Session] = {}  # this process's session of each data directory
_EMBEDDED_GUARD = threading.Lock()


def _embedded_session(path: pathlib.Path) -> _Session:
    """The one session of the data directory `path` in this process (Chroma keeps one System per path too).

    Catalogs of the same directory share it, so they never make each other reload.
    """
    key = str(path)
    with _EMBEDDED_GUARD:
        session = _EMBEDDED.get(key)
        if session is None:
            boundary = Boundary(key, server=False)
            session = _Session(boundary=boundary, directory=path, connect=partial(_embedded_client, boundary, path))
            _EMBEDDED[key] = session
        return session


# --- the store --------------------------------------------------------------------------------


@define(kw_only=True)
class ChromaVectorStore:
    """One store = one Chroma collection; memories are records (id, content as document, fields as metadata).

    Each operation looks the collection up by name through the session (another process may have rebuilt
    it), and re-reads the space, model and dimension when the collection found is not the last one seen.
    """

    session: _Session
    name: str
    boundary: Boundary
    batch_size: int = FALLBACK_BATCH
    space: str = "cosine"
    model: str | None = None
    dimension: int | None = None
    mirror_limit: int = MIRROR_LIMIT  # 0: never mirror, every search goes to Chroma
    mirror_eagerly: bool = False  # build the mirror at the first search (tests), not by the rule of _mirrored
    _collection_id: UUID | None = None

    @classmethod
    def over(
        cls,
        session: _Session,
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
            space=_space(collection),
            model=_recorded_model(collection),
            dimension=_recorded_dimension(collection),
            mirror_limit=mirror_limit,
            mirror_eagerly=mirror_eagerly,
            collection_id=collection.id,
        )

    @property
    def collection(self) -> Collection:
        """The collection as of now, for inspection (the store's operations look it up themselves).

        Raises returns' UnwrapFailedError when it cannot be found: the operations, not this, are the port.
        """
        return self._on_collection("open the collection", Success).unwrap()

    # --- writes

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        """Upsert (so a re-added id is overwritten, as in the reference store), in client-sized batches."""
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))
        latest = {memory.id: (memory, list(vector)) for memory, vector in zip(memories, embeddings, strict=True)}
        pairs = list(latest.values())
        if not pairs:
            return Success(None)

        def write(collection: Collection) -> Result[None, DomainError]:
            checked = self._check_dimension([vector for _, vector in pairs])
            if isinstance(checked, Failure):
                return checked
            for batch in _chunks(pairs, self.batch_size):
                written = self._upsert(collection, [m for m, _ in batch], [v for _, v in batch])
                if isinstance(written, Failure):
                    return self._mirror_written(collection, written, None)
            return self._mirror_written(
                collection, Success(None), lambda mirror: mirror.upsert([m for m, _ in pairs], [v for _, v in pairs])
            )

        return self._on_collection("write memories", write, write=True)

    def replace(self, memory: Memory, embedding: Vector) -> Result[None, DomainError]:
        return self._on_collection(
            "write memories",
            lambda collection: self._check_dimension([embedding]).bind(
                lambda _: self._mirror_written(
                    collection,
                    self._upsert(collection, [memory], [list(embedding)]),
                    lambda mirror: mirror.upsert([memory], [embedding]),
                )
            ),
            write=True,
        )

    def update_metadata(self, memories: Sequence[Memory]) -> Result[None, DomainError]:
        """Rewrite fields of existing memories, keeping their vectors; MEMORY_NOT_FOUND before any write."""
        latest = _last_wins(memories)
        if not latest:
            return Success(None)
        ids = list(latest)

        def update(collection: Collection) -> Result[None, DomainError]:
            documents: dict[str, str | None] = {}
            for id_batch in _chunks(ids, self.batch_size):
                stored = self.boundary.run(
                    "read memories", partial(collection.get, ids=list(id_batch), include=["documents"])
                )
                if isinstance(stored, Failure):
                    return stored
                found = stored.unwrap()
                documents.update(zip(found["ids"], found["documents"] or [], strict=False))
            missing = [memory_id for memory_id in ids if memory_id not in documents]
            if missing:
                return Failure(DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=missing[0]))
            same = [latest[i] for i in ids if documents[i] == latest[i].content]
            changed = [latest[i] for i in ids if documents[i] != latest[i].content]
            for batch in _chunks(same, self.batch_size):
                written = self._update_fields(collection, batch)
                if isinstance(written, Failure):
                    return self._mirror_written(collection, written, None)
            for batch in _chunks(changed, self.batch_size):
                written = self._update_content(collection, batch)
                if isinstance(written, Failure):
                    return self._mirror_written(collection, written, None)
            return self._mirror_written(collection, Success(None), lambda mirror: mirror.update(list(latest.values())))

        return self._on_collection("update memories", update, write=True)

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return Success(None)

        def delete(collection: Collection) -> Result[None, DomainError]:
            for batch in _chunks(unique, self.batch_size):
                done = self.boundary.run("delete memories", partial(collection.delete, ids=list(batch)))
                if isinstance(done, Failure):
                    return self._mirror_written(collection, done, None)
            return self._mirror_written(collection, Success(None), lambda mirror: mirror.remove(unique))

        return self._on_collection("delete memories", delete, write=True)

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        """Fill a fresh `.next` collection, then swap it in by two renames (see `_recover` for a crash between).

        The fill takes the lock batch by batch (other processes only wait for one batch); the swap holds
        it throughout, so no other process ever finds the store's collection missing.
        """
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))
        dimensions = {len(vector) for vector in embeddings}
        if len(dimensions) > 1:
            return Failure(
                DomainError(
                    ErrorCode.EMBEDDING_MISMATCH,
                    f"A rebuild got embeddings of several dimensions: {sorted(dimensions)}.",
                )
            )
        current = self._on_collection("read the store's dimension", lambda _: Success(self.dimension))
        if isinstance(current, Failure):
            return current
        dimension = dimensions.pop() if dimensions else current.unwrap()
        staged = self._stage(memories, embeddings, embedding_model, dimension)
        return staged.bind(self._swap_in)

    # --- reads

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        """The memories with these ids, in the order asked, unknown ids left out."""
        unique = list(dict.fromkeys(ids))

        def read(collection: Collection) -> Result[dict[str, Memory], DomainError]:
            mirror = self.session.mirrors.get(collection.id)
            if mirror is not None:
                return Success({memory.id: memory for memory in mirror.get(unique)})
            found: dict[str, Memory] = {}
            for batch in _chunks(unique, self.batch_size):
                page = self.boundary.run(
                    "read memories",
                    partial(collection.get, ids=list(batch), include=["documents", "metadatas"]),
                ).bind(self._memories)
                if isinstance(page, Failure):
                    return page
                found.update((memory.id, memory) for memory in page.unwrap())
            return Success(found)

        if not unique:
            return Success([])
        return self._on_collection("read memories", read).map(lambda found: [found[i] for i in ids if i in found])

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        """Cosine of `embedding` against the stored vectors of these ids, unknown ids left out."""
        unique = list(dict.fromkeys(ids))

        def read(collection: Collection) -> Result[dict[str, float], DomainError]:
            mirror = self.session.mirrors.get(collection.id)
            if mirror is not None:
                return Success(mirror.similarities(embedding, unique))
            vectors: dict[str, Any] = {}
            for batch in _chunks(unique, self.batch_size):
                page = self.boundary.run(
                    "read vectors", partial(collection.get, ids=list(batch), include=["embeddings"])
                )
                if isinstance(page, Failure):
                    return page
                found = page.unwrap()
                stored = found["embeddings"] if found["embeddings"] is not None else []
                vectors.update(zip(found["ids"], stored, strict=False))
            return Success(cosines(embedding, vectors))

        if not unique:
            return Success({})
        return self._on_collection("read vectors", read)

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        """The `limit` nearest memories `where` keeps, best first: from the mirror when there is one, else Chroma.

        Embedded stores are mirrored in process (adapters.chroma.mirror) once Chroma's searches of the store
        since another process last wrote have cost as much as reading it would (see `_mirrored`): a
        process that searches once (a CLI call) never pays for reading the whole collection; a server or
        an agent loop pays once, then searches in numpy.
        """
        if limit < 1:
            return Success([])

        def search(collection: Collection) -> Result[list[tuple[Memory, float]], DomainError]:
            checked = self._check_dimension([embedding])
            if isinstance(checked, Failure):
                return checked
            mirrored = self._mirrored(collection)
            if isinstance(mirrored, Failure):
                return mirrored
            mirror = mirrored.unwrap()
            if mirror is not None:
                return Success(mirror.query(embedding, where, limit))
            clause = to_where(where)
            started = time.perf_counter()
            answer = self.boundary.run(
                "search memories",
                lambda: collection.query(
                    query_embeddings=cast(Any, [list(embedding)]),
                    n_results=limit,
                    where=cast(Any, clause),
                    include=["documents", "metadatas", "distances"],
                ),
            ).bind(lambda result: self._ranked(result, self.space, limit))
            spent = self.session.search_seconds
            spent[collection.id] = spent.get(collection.id, 0.0) + time.perf_counter() - started
            return answer

        return self._on_collection("search memories", search)

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        """Every memory the filter keeps, read in pages of SCAN_PAGE."""
        clause = to_where(where)

        def read(collection: Collection) -> Result[list[Memory], DomainError]:
            memories: list[Memory] = []
            offset = 0
            while True:
                page = self.boundary.run(
                    "scan memories",
                    partial(
                        collection.get,
                        where=cast(Any, clause),
                        limit=SCAN_PAGE,
                        offset=offset,
                        include=["documents", "metadatas"],
                    ),
                ).bind(self._memories)
                if isinstance(page, Failure):
                    return page
                batch = page.unwrap()
                memories.extend(batch)
                if len(batch) < SCAN_PAGE:
                    return Success(memories)
                offset += SCAN_PAGE

        return self._on_collection("scan memories", read).lash(
            lambda error: self._salvaged(error).map(lambda found: [m for m in found if where.matches(m)])
        )

    def count(self) -> Result[int, DomainError]:
        return self._on_collection(
            "count memories", lambda collection: self.boundary.run("count memories", collection.count)
        ).lash(lambda error: self._salvaged(error).map(len))

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        """A damaged vector index (embedded Chroma): the records are read from chroma.sqlite3 meanwhile."""
        probe = self._on_collection(
            "count memories", lambda collection: self.boundary.run("count memories", collection.count)
        )
        if (
            isinstance(probe, Success)
            or self.session.directory is None
            or not is_vector_index_damage(probe.failure().cause)
        ):
            return Success(())
        return Success((damaged_index_problem(self.session.directory, self.name),))

    def _salvaged(self, error: DomainError) -> Result[list[Memory], DomainError]:
        """With a damaged HNSW index (embedded only), the records straight from chroma.sqlite3; else `error`."""
        directory = self.session.directory
        if directory is None or not is_vector_index_damage(error.cause):
            return Failure(error)
        try:
            return Success(salvage_memories(directory, self.name))
        except SalvageError as problem:
            return Failure(evolve(error, message=f"{error.message} Reading the records without it failed: {problem}."))

    def embedding_model(self) -> Result[str | None, DomainError]:
        return self._on_collection("read the embedding model", lambda _: Success(self.model))

    # --- helpers

    def _on_collection(
        self, doing: str, op: Callable[[Collection], Result[T, DomainError]], *, write: bool = False
    ) -> Result[T, DomainError]:
        """`op` on this store's collection, as found now, under the session's rules."""
        return self.session.run(doing, lambda client: self._resolve(client).bind(op), write=write)

    def _resolve(self, client: ClientAPI) -> Result[Collection, DomainError]:
        found = self.boundary.run(f"open collection '{self.name}'", partial(self.session.find, client, self.name))
        return found.bind(self._adopt)

    def _adopt(self, collection: Collection | None) -> Result[Collection, DomainError]:
        """The collection, its space, model and dimension read again when it is not the one seen last."""
        if collection is None:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"The ChromaDB collection '{self.name}' no longer exists (was it deleted by another tool?).",
                )
            )
        if collection.id != self._collection_id:
            self.space, self.model = _space(collection), _recorded_model(collection)
            self.dimension, self._collection_id = _recorded_dimension(collection), collection.id
        return Success(collection)

    def _mirrored(self, collection: Collection) -> Result[VectorMirror | None, DomainError]:
        """The collection's current mirror, or a new one when renting Chroma's searches has cost as much as buying.

        The rule is the ski-rental one: keep answering from Chroma until the time its searches of this
        store took (since another process last wrote) reaches the estimated time to read the store into
        a mirror, then build it. Whatever the pattern of searches and foreign writes, that spends at most
        about twice what the best choice made in hindsight would.
        """
        mirror = self.session.mirrors.get(collection.id)
        if mirror is not None or self.session.directory is None or self.mirror_limit <= 0:
            return Success(mirror)
        if self.mirror_eagerly:
            return self._build_mirror(collection)
        counted = self.boundary.run("count memories", collection.count)
        if isinstance(counted, Failure):
            return counted
        records = counted.unwrap()
        if records > self.mirror_limit:
            return Success(None)
        if self.session.search_seconds.get(collection.id, 0.0) < records * self.session.build_s_per_record:
            return Success(None)
        return self._build_mirror(collection)

    def _build_mirror(self, collection: Collection) -> Result[VectorMirror | None, DomainError]:
        """Read the whole collection into a mirror (None when it is too large or its dimension is unknown)."""
        started = time.perf_counter()
        counted = self.boundary.run("count memories", collection.count)
        if isinstance(counted, Failure):
            return counted
        if counted.unwrap() > self.mirror_limit:
            return Success(None)
        memories: list[Memory] = []
        vectors: list[Any] = []
        offset = 0
        while True:
            page = self.boundary.run(
                "read the store into memory",
                partial(
                    collection.get, limit=SCAN_PAGE, offset=offset, include=["embeddings", "documents", "metadatas"]
                ),
            )
            if isinstance(page, Failure):
                return page
            found = page.unwrap()
            built = self._memories(found)
            if isinstance(built, Failure):
                return built
            memories.extend(built.unwrap())
            vectors.extend(found["embeddings"] if found["embeddings"] is not None else [])
            if len(found["ids"]) < SCAN_PAGE:
                break
            offset += SCAN_PAGE
        dimension = self.dimension or (len(vectors[0]) if vectors else None)
        if dimension is None or len(vectors) != len(memories):
            return Success(None)
        mirror = VectorMirror.of(dimension, memories, vectors)
        self.session.mirrors[collection.id] = mirror
        if memories:
            self.session.build_s_per_record = (time.perf_counter() - started) / len(memories)
        return Success(mirror)

    def _mirror_written(
        self,
        collection: Collection,
        written: Result[None, DomainError],
        change: Callable[[VectorMirror], bool | None] | None,
    ) -> Result[None, DomainError]:
        """Apply a finished write to the collection's mirror; a failed (maybe partial) write drops it."""
        mirror = self.session.mirrors.get(collection.id)
        if mirror is not None and (isinstance(written, Failure) or change is None or change(mirror) is False):
            del self.session.mirrors[collection.id]
        return written

    def _check_dimension(self, vectors: Sequence[Vector]) -> Result[None, DomainError]:
        for vector in vectors:
            if self.dimension is not None and len(vector) != self.dimension:
                return Failure(
                    DomainError(
                        ErrorCode.EMBEDDING_MISMATCH,
                        f"This store holds {self.dimension}-dimensional embeddings but got {len(vector)} "
                        "dimensions. Run `memory reindex` after changing the embedding model.",
                    )
                )
        return Success(None)

    def _upsert(
        self, collection: Collection, memories: Sequence[Memory], vectors: Sequence[list[float]]
    ) -> Result[None, DomainError]:
        return self.boundary.run(
            "write memories",
            lambda: collection.upsert(
                ids=[m.id for m in memories],
                embeddings=cast(Any, list(vectors)),
                documents=[m.content for m in memories],
                metadatas=cast(Any, [memory_metadata(m) for m in memories]),
            ),
        )

    def _update_fields(self, collection: Collection, memories: Sequence[Memory]) -> Result[None, DomainError]:
        return self.boundary.run(
            "update memories",
            lambda: collection.update(
                ids=[m.id for m in memories], metadatas=cast(Any, [memory_metadata(m) for m in memories])
            ),
        )

    def _update_content(self, collection: Collection, memories: Sequence[Memory]) -> Result[None, DomainError]:
        """New content with the stored vector: Chroma wants embeddings with documents when it has no embedder."""
        ids = [m.id for m in memories]
        stored = self.boundary.run("read embeddings", lambda: collection.get(ids=ids, include=["embeddings"]))
        if isinstance(stored, Failure):
            return stored
        found = stored.unwrap()
        vectors = dict(zip(found["ids"], found["embeddings"] if found["embeddings"] is not None else [], strict=False))
        return self.boundary.run(
            "update memories",
            lambda: collection.update(
                ids=ids,
                embeddings=cast(Any, [[float(x) for x in vectors[i]] for i in ids]),
                documents=[m.content for m in memories],
                metadatas=cast(Any, [memory_metadata(m) for m in memories]),
            ),
        )

    def _stage(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], model: str, dimension: int | None
    ) -> Result[ChromaVectorStore, DomainError]:
        """A filled `.next` collection, flagged REBUILDING until its last write succeeded."""
        staged_name = self.name + NEXT_SUFFIX
        final = collection_metadata(model, dimension) if dimension is not None else {"embedding_model": model}

        def create(client: ClientAPI) -> Result[ChromaVectorStore, DomainError]:
            def fresh() -> Collection:
                _drop(client, staged_name)
                return client.create_collection(
                    staged_name, configuration=COSINE, metadata={**final, REBUILDING: True}, embedding_function=None
                )

            made = self.boundary.run(f"create collection '{staged_name}'", fresh)
            return made.map(
                lambda collection: ChromaVectorStore.over(self.session, collection, self.boundary, self.batch_size)
            )

        def finish(collection: Collection) -> Result[None, DomainError]:
            return self.boundary.run("finish a rebuild", partial(collection.modify, metadata=final))

        created = self.session.run(f"create collection '{staged_name}'", create, write=True)
        if isinstance(created, Failure):
            return created
        staging = created.unwrap()
        return (
            staging.add(memories, embeddings)
            .bind(lambda _: staging._on_collection("finish a rebuild", finish, write=True))
            .map(lambda _: staging)
        )

    def _swap_in(self, staged: ChromaVectorStore) -> Result[None, DomainError]:
        """Old → `.prev`, `.next` → the store's name, drop `.prev`, all under one hold of the lock."""
        previous_name = self.name + PREV_SUFFIX
        doing = f"swap in the rebuilt collection '{self.name}'"

        def swap(client: ClientAPI, current: Collection) -> None:
            self.session.mirrors.pop(current.id, None)
            replacement = client.get_collection(staged.name, embedding_function=None)
            _drop(client, previous_name)
            current.modify(name=previous_name)
            replacement.modify(name=self.name)
            _drop(client, previous_name)

        return self.session.run(
            doing,
            lambda client: self._resolve(client).bind(
                lambda current: self.boundary.run(doing, partial(swap, client, current))
            ),
            write=True,
        )

    def _ranked(self, result: Any, space: str, limit: int) -> Result[list[tuple[Memory, float]], DomainError]:
        ids = result["ids"][0] if result["ids"] else []
        documents = (result["documents"] or [[]])[0]
        metadatas = (result["metadatas"] or [[]])[0]
        distances = (result["distances"] or [[]])[0]
        built = self._build(ids, documents, metadatas)
        if isinstance(built, Failure):
            return built
        pairs = [
            (memory, similarity_from_distance(float(distance), space))
            for memory, distance in zip(built.unwrap(), distances, strict=True)
        ]
        pairs.sort(key=lambda pair: pair[1], reverse=True)
        return Success(pairs[:limit])

    def _memories(self, found: Any) -> Result[list[Memory], DomainError]:
        return self._build(found["ids"], found["documents"] or [], found["metadatas"] or [])

    def _build(
        self, ids: Sequence[str], documents: Sequence[Any], metadatas: Sequence[Any]
    ) -> Result[list[Memory], DomainError]:
        try:
            return Success(
                [
                    memory_from_record(memory_id, document, meta or {})
                    for memory_id, document, meta in zip(ids, documents, metadatas, strict=True)
                ]
            )
        except (KeyError, ValueError, TypeError) as error:  # InvalidValue is a ValueError
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    "A ChromaDB record is not a memory this program can read "
                    "(was the collection written by another tool?).",
                    cause=f"{type(error).__name__}: {error}",
                )
            )


# --- categories -------------------------------------------------------------------------------

UNIT_1D = [1.0]  # registry records are looked up by id only; Chroma still wants a vector for each


@define(kw_only=True)
class ChromaCategories:
    """A store's CategoryRegistry: the `<collection>.categories` collection, one record per category.

    The record id is the category path ("a/b"), its metadata holds the description. The collection is
    created on the first `put`; reading or removing before that sees an empty registry.
    """

    session: _Session
    name: str
    boundary: Boundary
    batch_size: int = FALLBACK_BATCH

    def describe_all(self) -> Result[Mapping[str, str], DomainError]:
        def read(client: ClientAPI) -> Result[Mapping[str, str], DomainError]:
            found = self.boundary.run("read categories", partial(self.session.find, client, self.name))
            if isinstance(found, Failure):
                return found
            collection = found.unwrap()
            if collection is None:
                return Success({})
            described: dict[str, str] = {}
            offset = 0
            while True:
                page = self.boundary.run(
                    "read categories",
                    partial(collection.get, limit=SCAN_PAGE, offset=offset, include=["metadatas"]),
                )
                if isinstance(page, Failure):
                    return page
                records = page.unwrap()
                metadatas = records["metadatas"] or []
                described.update(
                    (path, str((meta or {}).get("description", "")))
                    for path, meta in zip(records["ids"], metadatas, strict=False)
                )
                if len(records["ids"]) < SCAN_PAGE:
                    return Success(described)
                offset += SCAN_PAGE

        return self.session.run("read categories", read)

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

        return self.session.run(
            "write a category", lambda client: self.boundary.run("write a category", partial(write, client)), write=True
        )

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]:
        ids = list(dict.fromkeys(str(category) for category in categories))
        if not ids:
            return Success(None)

        def delete(client: ClientAPI) -> None:
            collection = self.session.find(client, self.name)
            if collection is not None:
                for batch in _chunks(ids, self.batch_size):
                    collection.delete(ids=list(batch))

        return self.session.run(
            "remove categories",
            lambda client: self.boundary.run("remove categories", partial(delete, client)),
            write=True,
        )


# --- clients ----------------------------------------------------------------------------------


def _bound_connect_timeout(client: ClientAPI) -> None:
    """chromadb's HTTP client waits forever (httpx timeout=None) and has no setting; bound the connect phase."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(None, connect=CONNECT_TIMEOUT_S)


def _server_client(boundary: Boundary, host: str, port: int) -> Result[ClientAPI, DomainError]:
    try:  # a quick TCP probe: chromadb would wait for the OS connect timeout (minutes) on a silent host
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        return Failure(boundary.unavailable(error))
    try:
        client = chromadb.HttpClient(host=host, port=port, settings=Settings(anonymized_telemetry=False))
    except (httpx.TransportError, ConnectionError, ValueError) as error:
        # chromadb turns a refused connection during the handshake into ValueError("Could not connect…")
        return Failure(boundary.unavailable(error))
    except ChromaError as error:
        return Failure(storage_error("start a client", error))
    _bound_connect_timeout(client)
    return Success(client)


def _embedded_client(boundary: Boundary, path: pathlib.Path) -> Result[ClientAPI, DomainError]:
    database = path / "chroma.sqlite3"
    if database.is_file() and database.stat().st_size == 0:
        # an empty database file would silently become a new, empty store: refuse, and say what to do
        return Failure(
            DomainError(
                ErrorCode.STORAGE_ERROR,
                f"The ChromaDB data at {path} is damaged: chroma.sqlite3 is empty. Restore the folder from a "
                "backup (or a `memory export`), or move it aside to start a new store.",
                path=str(database),
            )
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        return Success(chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False)))
    except (ChromaError, OSError, ValueError, TypeError, AttributeError) as error:
        # AttributeError: chromadb 1.5.9 masks a failed start of its Rust bindings with
        # AttributeError('bindings') while cleaning up (chromadb/api/rust.py stop()).
        if cannot_write(error) and database.is_file():
            return _read_only_client(boundary, path)
        return Failure(boundary.unavailable(error))


def _read_only_client(boundary: Boundary, path: pathlib.Path) -> Result[ClientAPI, DomainError]:
    """Chroma must write to open its data (migrations, journals): on a disk that refuses writes, a client over a
    private copy, so reads still work. Writes never reach it: each is announced on the real disk first, and fails."""
    try:
        copy = read_only_copy(path)
        return Success(chromadb.PersistentClient(path=str(copy), settings=Settings(anonymized_telemetry=False)))
    except (ChromaError, OSError, ValueError, TypeError, AttributeError) as error:
        return Failure(boundary.unavailable(error))


# --- the catalog ------------------------------------------------------------------------------


def _is_store_name(text: str) -> bool:
    try:
        check_store_name(text)
    except InvalidValue:
        return False
    return True


@define(kw_only=True)
class ChromaCatalog:
    """The stores of one Chroma database: store "default" is `collection`, store s is `collection--s`.

    Talks to a Chroma server when `host` is set, else opens the embedded database at `path`, which other
    processes may use at the same time (see `_Session`). The client is created on first use; every
    failure comes back as a DomainError, never an exception.
    """

    path: pathlib.Path | None = None
    host: str | None = None
    port: int = 8000
    collection: str = "memories"
    embedder_name: str
    dimension: int
    mirror_limit: int = MIRROR_LIMIT  # see ChromaVectorStore.query; 0 sends every search to Chroma
    mirror_eagerly: bool = False  # tests: mirror every store at its first search
    _session: _Session | None = field(default=None, init=False, repr=False)
    _stores: dict[str, ChromaVectorStore] = field(factory=dict, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.host is None and self.path is None:
            raise ValueError("ChromaCatalog needs a data `path` (embedded) or a server `host`.")

    @property
    def backend(self) -> str:
        return "chroma"

    @property
    def location(self) -> str:
        return f"{self.host}:{self.port}" if self.host is not None else str(self.path)

    @property
    def boundary(self) -> Boundary:
        return Boundary(self.location, server=self.host is not None)

    @property
    def session(self) -> _Session:
        """This catalog's session: its own for a server, the process's one for a data directory."""
        if self._session is None:
            if self.host is not None:
                connect = partial(_server_client, self.boundary, self.host, self.port)
                self._session = _Session(boundary=self.boundary, directory=None, connect=connect)
            else:
                self._session = _embedded_session(pathlib.Path(str(self.path)))
        return self._session

    # --- StoreCatalog

    def health(self) -> Result[Mapping[str, str], DomainError]:
        return self.session.run(
            "answer a heartbeat", lambda client: self.boundary.run("answer a heartbeat", client.heartbeat)
        ).map(lambda _: {"chromadb_host": self.location, "collection": self.collection})

    def names(self) -> Result[list[str], DomainError]:
        listed = self.session.run(
            "list collections", lambda client: self.boundary.run("list collections", client.list_collections)
        )
        return listed.map(
            lambda collections: sorted(n for c in collections if (n := self.store_of(c.name)) is not None)
        )

    def open(self, name: str, *, create: bool) -> Result[ChromaVectorStore, DomainError]:
        """The store (a handle that stays valid: it finds its collection anew for each operation)."""
        try:
            check_store_name(name)
        except InvalidValue as error:
            return Failure(error.to_error())
        collection_name = self.collection_of(name)
        doing = f"open collection '{collection_name}'"

        def find(client: ClientAPI) -> Result[Collection | None, DomainError]:
            return self.boundary.run(doing, partial(self.session.find, client, collection_name))

        def settle(client: ClientAPI) -> Result[Collection | None, DomainError]:
            return self.boundary.run(doing, partial(self._settle, client, collection_name, create=create))

        found = self.session.run(doing, find)
        if isinstance(found, Success) and found.unwrap() is None:  # a write: recovering, creating (or neither)
            found = self.session.run(doing, settle, write=True)
        return found.bind(partial(self._store, name))

    def categories(self, name: str) -> Result[ChromaCategories, DomainError]:
        return self.open(name, create=False).map(
            lambda store: ChromaCategories(
                session=self.session,
                name=store.name + CATEGORIES_SUFFIX,
                boundary=self.boundary,
                batch_size=store.batch_size,
            )
        )

    # --- naming

    def collection_of(self, store: str) -> str:
        return self.collection if store == DEFAULT_STORE else f"{self.collection}{STORE_SEPARATOR}{store}"

    def store_of(self, collection: str) -> str | None:
        """The store a collection name belongs to; None for internal collections and other catalogs'."""
        if collection == self.collection:
            return DEFAULT_STORE
        prefix = f"{self.collection}{STORE_SEPARATOR}"
        if not collection.startswith(prefix):
            return None
        store = collection[len(prefix) :]
        return store if _is_store_name(store) else None

    # --- helpers

    def _settle(self, client: ClientAPI, collection_name: str, *, create: bool) -> Collection | None:
        """The collection, after any interrupted rebuild is settled, created when asked to."""
        collection = _find(client, collection_name) or _recover(client, collection_name)
        if collection is not None or not create:
            return collection
        try:
            return client.create_collection(
                collection_name,
                configuration=COSINE,
                metadata=collection_metadata(self.embedder_name, self.dimension),
                embedding_function=None,
            )
        except UniqueConstraintError:  # created meanwhile (by another client of a server)
            return client.get_collection(collection_name, embedding_function=None)

    def _store(self, name: str, collection: Collection | None) -> Result[ChromaVectorStore, DomainError]:
        """The handle of the store over `collection` (one per store and catalog)."""
        if collection is None:
            return Failure(
                DomainError(
                    ErrorCode.STORE_NOT_FOUND,
                    f"Store '{name}' does not exist. Create it with `memory store create {name}` or add a memory to it.",
                )
            )
        store = self._stores.get(name)
        if store is None:
            batch = self.session.run(
                "read the batch size",
                lambda client: self.boundary.run("read the batch size", client.get_max_batch_size),
            )
            if isinstance(batch, Failure):
                return batch
            store = ChromaVectorStore.over(
                self.session, collection, self.boundary, batch.unwrap(), self.mirror_limit, self.mirror_eagerly
            )
            self._stores[name] = store
        return Success(store)
