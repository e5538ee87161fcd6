"""The StoreCatalog of one Chroma database (embedded or a server): store names, opening and creating stores."""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TypeVar

from attrs import define, field
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import ChromaError, UniqueConstraintError
from returns.result import Failure, Result

from agent_memory.adapters.chroma import layout
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.categories import ChromaCategories
from agent_memory.adapters.chroma.clients import DATABASE_FILE, server_client
from agent_memory.adapters.chroma.mirror_policy import MIRROR_LIMIT
from agent_memory.adapters.chroma.node_mirror import NodeMirrors
from agent_memory.adapters.chroma.session import Session, embedded_session
from agent_memory.adapters.chroma.store import ChromaVectorStore
from agent_memory.adapters.chroma.warming import Warmer
from agent_memory.adapters.shared import names
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.disk import creatable
from agent_memory.domain.errors import DomainError, InvalidValue
from agent_memory.domain.model import check_store_name

T = TypeVar("T")


def _wait_for_swap(seconds: float) -> None:
    """A pause while another client swaps a rebuilt collection in (a function of its own so that a test sees it)."""
    time.sleep(seconds)


@define(kw_only=True)
class ChromaCatalog:
    """The stores of one Chroma database: store "default" is `collection`, store s is `collection--s`.

    Talks to a Chroma server when `host` is set, else opens the embedded database at `path`, which other
    processes may use at the same time (see adapters.chroma.session). The client is created on first use;
    every failure comes back as a DomainError, never an exception.
    """

    path: pathlib.Path | None = None
    host: str | None = None
    port: int = 8000
    collection: str = "memories"
    embedder_name: str
    dimension: int
    mirror_limit: int = MIRROR_LIMIT  # see adapters.chroma.mirror_policy; 0 sends every search to Chroma
    mirror_eagerly: bool = False  # tests: mirror every store at its first search
    warmer: Warmer = field(factory=Warmer)  # builds the mirrors in the background once `keep_warm` is called
    node: NodeMirrors | None = (
        None  # over a server: this node's mirrors fed from the engine (adapters.chroma.node_mirror)
    )
    _warm: bool = field(default=False, init=False, repr=False)
    _guard: threading.Lock = field(factory=threading.Lock, init=False, repr=False)  # the store handles
    _session: Session | None = field(default=None, init=False, repr=False)
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
    def session(self) -> Session:
        """This catalog's session: its own for a server, the process's one for a data directory."""
        if self._session is None:
            if self.host is not None:
                connect = partial(server_client, self.boundary, self.host, self.port)
                self._session = Session(boundary=self.boundary, directory=None, connect=connect)
            else:
                self._session = embedded_session(pathlib.Path(str(self.path)))
        return self._session

    # --- StoreCatalog

    def health(self) -> Result[Mapping[str, str], DomainError]:
        def health() -> Mapping[str, str]:
            if not self._nothing_yet():
                self._call("answer a heartbeat", lambda client: client.heartbeat())
            return {"chromadb_host": self.location, "collection": self.collection}

        return self.boundary.result(health)

    def names(self) -> Result[list[str], DomainError]:
        def listed() -> list[str]:
            if self._nothing_yet():
                return []
            collections = self._call("list collections", lambda client: client.list_collections())
            return sorted(name for found in collections if (name := self.store_of(found.name)) is not None)

        return self.boundary.result(listed)

    def open(self, name: str, *, create: bool) -> Result[ChromaVectorStore, DomainError]:
        """The store (a handle that stays valid: it finds its collection anew for each operation)."""
        try:
            check_store_name(name)
        except InvalidValue as error:
            return Failure(error.to_error())
        if not create and self._nothing_yet():
            return Failure(names.store_not_found(name))
        if self.node is not None and self.host is not None:
            self.node.probe.begin(
                name
            )  # a use case begins: its feeds' probe is read afresh (adapters/shared/feed_probe.py)
        return self.boundary.result(partial(self._opened, name, create=create))

    def categories(self, name: str) -> Result[ChromaCategories, DomainError]:
        return self.open(name, create=False).map(
            lambda store: ChromaCategories(
                session=self.session,
                name=store.name + layout.CATEGORIES_SUFFIX,
                boundary=self.boundary,
                batch_size=store.batch_size,
            )
        )

    def keep_warm(self) -> None:
        """Mirror the embedded database's stores in the background, now and after another process's writes
        (adapters.chroma.warming); searches no longer build mirrors themselves. A server's stores are then mirrored
        once searched (adapters.chroma.node_mirror)."""
        if self.host is not None and self.node is not None:
            self.node.active = True  # a server's stores are mirrored once searched (adapters.chroma.node_mirror)
        if self.host is not None or self.mirror_limit <= 0:
            return
        with self._guard:
            if self._warm:
                return
            self._warm = True
            for store in self._stores.values():
                store.warm = self.warmer.want
        self.warmer.want_all(self._existing)

    # --- naming

    def collection_of(self, store: str) -> str:
        return names.collection_of(self.collection, store)

    def store_of(self, collection: str) -> str | None:
        """The store a collection name belongs to; None for internal collections and other catalogs'."""
        return names.store_of(self.collection, collection)

    # --- helpers (plain: they raise, the port method's boundary converts)

    def _call(self, doing: str, call: Callable[[ClientAPI], T], *, write: bool = False) -> T:
        """One library call with the session's client, its errors saying what it was doing."""
        return self.session.run(doing, lambda client: self.boundary.call(doing, partial(call, client)), write=write)

    def _opened(self, name: str, *, create: bool) -> ChromaVectorStore:
        """The store over its collection; finding none is a write: recovering a rebuild, creating (or neither)."""
        collection_name = self.collection_of(name)
        doing = f"open collection '{collection_name}'"
        found = self._call(doing, partial(self.session.find, name=collection_name))
        if found is None and self.host is not None:
            found = self._after_swap(doing, collection_name)
        if found is None:
            found = self._call(doing, partial(self._settle, collection_name=collection_name, create=create), write=True)
        if found is None:
            raise Abort(names.store_not_found(name))
        return self._store(name, found)

    def _after_swap(self, doing: str, collection_name: str) -> Collection | None:
        """On a server, a missing collection with a `.prev` beside it is most likely another client's rebuild
        between its two renames (ChromaVectorStore._swap): wait up to layout.SWAP_WAIT_S for the second, rather
        than settle the rebuild from here (which would race the rebuilder). None: still missing (a rebuild that
        stopped there, which `_settle` then finishes or undoes)."""
        deadline = time.monotonic() + layout.SWAP_WAIT_S
        while self._call(doing, partial(layout.find, name=collection_name + layout.PREV_SUFFIX)) is not None:
            if time.monotonic() >= deadline:
                return None
            _wait_for_swap(layout.SWAP_RETRY_S)
            self.session.forget(collection_name)
            found = self._call(doing, partial(self.session.find, name=collection_name))
            if found is not None:
                return found
        self.session.forget(collection_name)
        return self._call(doing, partial(self.session.find, name=collection_name))

    def _nothing_yet(self) -> bool:
        """An embedded data directory without its database: reads answer as empty ones, and create nothing."""
        if self.host is not None:
            return False
        data = pathlib.Path(str(self.path))
        return not (data / DATABASE_FILE).exists() and (data.is_dir() or creatable(data))

    def _existing(self) -> list[ChromaVectorStore]:
        """The handles of every store there is now."""
        if self._nothing_yet():
            return []
        collections = self._call("list collections", lambda client: client.list_collections())
        names = sorted(name for found in collections if (name := self.store_of(found.name)) is not None)
        return [self._opened(name, create=False) for name in names]

    def _settle(self, client: ClientAPI, collection_name: str, *, create: bool) -> Collection | None:
        """The collection, after any interrupted rebuild is settled, created when asked to."""
        collection = layout.find(client, collection_name) or layout.recover(client, collection_name)
        if collection is not None or not create:
            return collection
        try:
            return client.create_collection(
                collection_name,
                configuration=layout.COSINE,
                metadata=layout.collection_metadata(self.embedder_name, self.dimension),
                embedding_function=None,
            )
        except UniqueConstraintError:  # created meanwhile (by another client of the embedded store)
            return client.get_collection(collection_name, embedding_function=None)
        except ChromaError:  # a server answers a lost create race with a plain ChromaError ("already exists")
            created = layout.find(client, collection_name)
            if created is None:
                raise
            return created

    def _store(self, name: str, collection: Collection) -> ChromaVectorStore:
        """The handle of the store over `collection` (one per store and catalog)."""
        with self._guard:  # the thread of `keep_warm` opens stores too
            store = self._stores.get(name)
            if store is None:
                batch_size = self._call("read the batch size", lambda client: client.get_max_batch_size())
                store = ChromaVectorStore.over(
                    self.session, collection, self.boundary, batch_size, self.mirror_limit, self.mirror_eagerly
                )
                store.warm = self.warmer.want if self._warm else None
                store.node = self.node
                store.store_name = name
                self._stores[name] = store
            return store
