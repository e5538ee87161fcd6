"""The StoreCatalog of one Qdrant database (local mode or a server), and each store's CategoryRegistry."""

from __future__ import annotations

import contextlib
import pathlib
import threading
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import httpx
from attrs import define, field
from qdrant_client import QdrantClient, models
from returns.result import Failure, Result, Success

from agent_memory.adapters.qdrant import layout
from agent_memory.adapters.qdrant.boundary import Boundary
from agent_memory.adapters.qdrant.layout import (
    CATEGORIES_SUFFIX,
    FIRST_GENERATION,
    GENERATION,
    MODELS_SUFFIX,
    RECORD_VECTOR,
    UNIT_1D,
    ModelRecords,
)
from agent_memory.adapters.qdrant.store import QdrantVectorStore
from agent_memory.adapters.shared import names
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.disk import cannot_write, creatable, read_only_copy
from agent_memory.adapters.shared.private import owner_only_files, private_directory
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import check_store_name
from agent_memory.domain.paths import CategoryPath

CONNECT_TIMEOUT_S = 3.0
REQUEST_TIMEOUT_S = 60  # qdrant-client takes whole seconds; bulk upserts on a busy server can be slow


# --- categories -------------------------------------------------------------------------------


@define(kw_only=True)
class QdrantCategories:
    """A store's CategoryRegistry: the `<alias>.categories` collection, one point per category.

    The point id is a UUID derived from the category path; the payload holds the path and description.
    The collection is created on the first `put`; reading or removing before that sees an empty registry.
    It is keyed by the store's alias, not its generation, so a rebuild leaves it alone.
    """

    client: QdrantClient = field(repr=False)
    name: str
    boundary: Boundary

    def describe_all(self) -> Result[Mapping[str, str], DomainError]:
        return self.boundary.result("read categories", self._read_all)

    def put(self, category: CategoryPath, description: str) -> Result[None, DomainError]:
        def write() -> None:
            layout.ensure_registry(self.client, self.name)
            self.client.upsert(
                self.name,
                points=[
                    models.PointStruct(
                        id=layout.record_id(str(category)),
                        vector={RECORD_VECTOR: UNIT_1D},
                        payload={"path": str(category), "description": description},
                    )
                ],
                wait=True,
            )

        return self.boundary.result("write a category", write)

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]:
        ids = list(dict.fromkeys(layout.record_id(str(category)) for category in categories))

        def delete() -> None:
            if ids and self.client.collection_exists(self.name):
                for batch in chunks(ids, layout.MAX_BATCH_POINTS):
                    self.client.delete(self.name, points_selector=models.PointIdsList(points=list(batch)), wait=True)

        return self.boundary.result("remove categories", delete) if ids else Success(None)

    def _read_all(self) -> dict[str, str]:
        described: dict[str, str] = {}
        if not self.client.collection_exists(self.name):
            return described
        offset: models.ExtendedPointId | None = None
        while True:
            points, offset = self.client.scroll(self.name, limit=layout.SCAN_PAGE, offset=offset, with_payload=True)
            for found in points:
                payload = found.payload or {}
                described[str(payload["path"])] = str(payload.get("description", ""))
            if offset is None:
                return described


# --- clients ----------------------------------------------------------------------------------


def _bound_connect_timeout(client: QdrantClient) -> None:
    """qdrant-client has one timeout for every phase; keep long reads but give up connecting quickly."""
    remote = getattr(client, "_client", None)
    session = getattr(getattr(getattr(remote, "openapi_client", None), "client", None), "_client", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)


def _is_lock_conflict(error: RuntimeError) -> bool:
    """Local mode re-raises portalocker's LockException as a plain RuntimeError (qdrant_local.py `_load`)."""
    import portalocker  # imported by qdrant-client's local mode already; not at module level (see there)

    return isinstance(error.__context__, portalocker.exceptions.LockException)


def _in_use(data: pathlib.Path, error: RuntimeError) -> DomainError:
    return DomainError(
        ErrorCode.BACKEND_UNAVAILABLE,
        f"The Qdrant data at {data} is in use by another process: Qdrant's local mode admits one process "
        "at a time. Stop the other process, or run a Qdrant server and set QDRANT_URL.",
        cause=str(error),
    )


def _taken(alias: str) -> DomainError:
    return DomainError(
        ErrorCode.STORAGE_ERROR,
        f"The Qdrant collection '{alias}' was not created by agent-memory (its stores are aliases). "
        "Use another collection name (MEMORY_COLLECTION), or remove that collection.",
    )


# --- the catalog ------------------------------------------------------------------------------


@define(kw_only=True)
class QdrantCatalog:
    """The stores of one Qdrant database: store "default" is the alias `collection`, store s is `collection--s`.

    Talks to a Qdrant server when `url` is set, else opens local mode (embedded, pure Python, one process
    at a time) at `path`. The client is created on first use; every failure comes back as a DomainError.
    """

    path: pathlib.Path | None = None
    url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    collection: str = "memories"
    embedder_name: str
    dimension: int
    _client: QdrantClient | None = field(default=None, init=False, repr=False)
    _stores: dict[str, QdrantVectorStore] = field(factory=dict, init=False, repr=False)
    _boundary: Boundary = field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.url is None and self.path is None:
            raise ValueError("QdrantCatalog needs a data `path` (local mode) or a server `url`.")
        guard: contextlib.AbstractContextManager[Any] = (
            contextlib.nullcontext() if self.url is not None else threading.RLock()
        )
        self._boundary = Boundary(self.location, server=self.url is not None, guard=guard)

    @property
    def backend(self) -> str:
        return "qdrant"

    @property
    def location(self) -> str:
        return self.url if self.url is not None else str(self.path)

    @property
    def boundary(self) -> Boundary:
        return self._boundary

    def connect(self) -> Result[QdrantClient, DomainError]:
        """The catalog's one client (made on first use), for adapters that share it (local mode admits one)."""
        return self.boundary.result("connect", self.client)

    def client(self) -> QdrantClient:
        """`connect` inside a boundary: the client, or an Abort saying why there is none.

        Under the guard: two threads opening one local folder at once would otherwise lock each other out.
        A failed attempt is retried on the next call.
        """
        with self.boundary.guard:
            if self._client is None:
                self._client = self._server_client() if self.url is not None else self._local_client()
            return self._client

    # --- StoreCatalog

    def keep_warm(self) -> None:
        """Nothing to prepare: searches are as fast on the first request as on the next ones."""

    def health(self) -> Result[Mapping[str, str], DomainError]:
        def health() -> Mapping[str, str]:
            if not self._nothing_yet():
                self.boundary.probe(self.client().get_collections)
            return {"qdrant_location": self.location, "collection": self.collection}

        return self.boundary.result("list collections", health)

    def names(self) -> Result[list[str], DomainError]:
        def listed() -> list[str]:
            if self._nothing_yet():
                return []
            found = self.boundary.probe(partial(layout.aliases, self.client()))
            return sorted(store for alias in found if (store := self.store_of(alias)) is not None)

        return self.boundary.result("list aliases", listed)

    def open(self, name: str, *, create: bool) -> Result[QdrantVectorStore, DomainError]:
        if name in self._stores:
            return Success(self._stores[name])
        try:
            check_store_name(name)
        except InvalidValue as error:
            return Failure(error.to_error())
        if not create and self._nothing_yet():
            return Failure(names.store_not_found(name))
        return self.boundary.result(f"open store '{name}'", partial(self._opened, name, create=create))

    def categories(self, name: str) -> Result[QdrantCategories, DomainError]:
        return self.open(name, create=False).map(
            lambda store: QdrantCategories(
                client=store.client, name=store.name + CATEGORIES_SUFFIX, boundary=self.boundary
            )
        )

    def close(self) -> None:
        """Release the client (in local mode: the storage folder's lock). Stores opened before stop working."""
        client, self._client = self._client, None
        self._stores.clear()
        if client is not None:
            with self.boundary.guard:
                client.close()

    # --- naming

    def collection_of(self, store: str) -> str:
        return names.collection_of(self.collection, store)

    def store_of(self, alias: str) -> str | None:
        """The store an alias belongs to; None for internal aliases and other catalogs'."""
        return names.store_of(self.collection, alias)

    @property
    def models_collection(self) -> str:
        return self.collection + MODELS_SUFFIX

    # --- helpers (plain: they raise, the port method's boundary converts)

    def _opened(self, name: str, *, create: bool) -> QdrantVectorStore:
        """The store behind the alias, or a first generation and its alias when asked to create it."""
        client = self.client()
        alias = self.collection_of(name)
        records = ModelRecords(client=client, name=self.models_collection)
        generation = self.boundary.probe(partial(layout.aliases, client)).get(alias)
        if generation is None and not create:
            raise Abort(names.store_not_found(name))
        if generation is None:
            generation = self._first_generation(client, alias, records)
        store = QdrantVectorStore(
            client=client,
            name=alias,
            collection=generation,
            boundary=self.boundary,
            records=records,
            model=records.read(generation),
            dimension=layout.dense_size(client.get_collection(generation)),
        )
        self._stores[name] = store
        return store

    def _first_generation(self, client: QdrantClient, alias: str, records: ModelRecords) -> str:
        """Create-or-reuse `<alias>.gen-0`, record it, alias it; the generation the alias then points at.

        A plain collection already named like the alias was made by someone else: refuse to touch it.
        A gen-0 without an alias is left by a crash during creation (so it is empty) or is being created by
        another process right now (on a server); both are reused, unless an empty one has another dimension.
        """
        if client.collection_exists(alias):
            raise Abort(_taken(alias))
        generation = alias + GENERATION + FIRST_GENERATION
        if client.collection_exists(generation):
            size = layout.dense_size(client.get_collection(generation))
            if size != self.dimension and client.count(generation, exact=True).count == 0:
                layout.drop_generation(client, records, generation)
        layout.create_generation(client, generation, self.dimension, server=self.boundary.server)
        if records.read(generation) is None:
            records.write(generation, self.embedder_name, self.dimension)
        layout.point_alias(client, alias, generation, replacing=False)
        return layout.aliases(client).get(alias, generation)

    def _nothing_yet(self) -> bool:
        """A local folder not made yet: reads answer as empty ones, and create nothing (a folder that exists is
        opened: another process may hold it)."""
        return self.url is None and self._client is None and creatable(pathlib.Path(str(self.path)))

    def _server_client(self) -> QdrantClient:
        try:
            client = QdrantClient(
                url=self.url, api_key=self.api_key, timeout=REQUEST_TIMEOUT_S, check_compatibility=False
            )
        except ValueError as error:  # a malformed URL (unknown scheme, host and prefix clash)
            raise Abort(self.boundary.unavailable(error)) from error
        _bound_connect_timeout(client)
        return client

    def _local_client(self) -> QdrantClient:
        data = pathlib.Path(str(self.path))
        try:
            with owner_only_files():
                return QdrantClient(path=str(private_directory(data)), force_disable_check_same_thread=True)
        except RuntimeError as error:
            # local mode's only start-up RuntimeError is the lock one; anything else still cannot open the data
            raise Abort(
                _in_use(data, error) if _is_lock_conflict(error) else self.boundary.unavailable(error)
            ) from error
        except (OSError, ValueError) as error:  # unwritable folder; unreadable meta.json
            if isinstance(error, OSError) and cannot_write(error) and (data / "meta.json").is_file():
                return self._read_only_client(data)
            raise Abort(self.boundary.unavailable(error)) from error

    def _read_only_client(self, data: pathlib.Path) -> QdrantClient:
        """Local mode must write to open its data (a lock file): on a disk that refuses writes, a client over a
        private copy, so reads still work. Writes never reach it: the store's write lock, on the same disk, fails."""
        try:
            return QdrantClient(path=str(read_only_copy(data)), force_disable_check_same_thread=True)
        except (OSError, ValueError, RuntimeError) as error:
            raise Abort(self.boundary.unavailable(error)) from error
