"""The LangGraph door: a `BaseStore` over the service, so LangGraph and LangMem keep their tools and gain its backends.

Imported only when used (the `langgraph` extra, which installs langgraph-checkpoint): nothing here loads with
agent_memory. An item IS a memory (decision 25, tooling/items.py), so LangMem's tools, `store.put` and the product's doors
read, update and delete each other's writes: the item's namespace tuple is the memory's namespace (labels the
domain refuses escaped as %XX, langgraph/labels.py); a key `put` creates names the stable path
`langgraph/<key as a slug>-<digest of namespace and key>` (a put over it updates that memory, keeping its
created_at), while any other memory of the namespace is keyed by its id; the value is the content (the text of
LangMem's `{"content": text}`, else a JSON envelope). A delete removes an item `put` made for good, as LangGraph's
stores do, and soft-deletes any other memory, as the product's doors do (decision 13).

Its parts: this module is the `BaseStore` LangGraph calls, method for method, with an item's get, put and delete;
item_search.py searches items and lists namespaces; writes.py writes a batch's puts together; ttl.py renews and
sweeps TTLs; ops.py checks operations and builds items; batcher.py runs the async calls; index.py, labels.py and
value_filters.py are LangGraph's index, namespace labels and value filters. Operations of a batch run in order,
after all have been checked, so a batch with a bad operation changes nothing.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import weakref
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, Self

from returns.result import Failure

from agent_memory.domain.commands import (
    DeleteMemory,
    GetMemory,
    RemoveMemory,
    UpdateMemory,
)
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import InvalidValue
from agent_memory.domain.model import Memory, check_store_name, parse_decay_policy
from agent_memory.domain.paths import normalise_segment
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.extras import missing_extra
from agent_memory.entrypoints.tooling.items import (
    CATEGORY,
    encoded,
    item_path,
    key_and_value,
    put_key,
    readable_key,
)
from agent_memory.entrypoints.tooling.tool_errors import invalid, succeeded

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
    from langgraph.store.base import Result as OpResult
except ImportError as missing:  # say which extra to install, not just which module is missing
    absent = missing_extra("langgraph", "agent_memory's LangGraph store")
    raise ImportError(absent.message if absent is not None else str(missing)) from missing

from agent_memory.entrypoints.langgraph.batcher import (
    DEFAULT_CONCURRENCY,
    AsyncRunner,
    Outcome,
    put_run,
    stop_sweeping,
    sweeping,
)
from agent_memory.entrypoints.langgraph.index import VectorCache, index_config
from agent_memory.entrypoints.langgraph.item_search import namespaces, searched
from agent_memory.entrypoints.langgraph.ops import (
    absent_code,
    check_op,
    checked_ttl,
    id_key,
    item_of,
    product_op,
)
from agent_memory.entrypoints.langgraph.ttl import renewed, sweep
from agent_memory.entrypoints.langgraph.writes import upserted, written_together

__all__ = ["CATEGORY", "MemoryStore", "item_path"]

# stores not closed yet, closed at interpreter exit before the modules go (a Qdrant client left to its __del__ then
# prints an ImportError)
_OPEN: weakref.WeakSet[MemoryStore] = weakref.WeakSet()


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN):
        store.close()


class MemoryStore(BaseStore):
    """LangGraph's BaseStore over a MemoryService: any backend (Chroma, Qdrant, files), hybrid search, decay.

    `MemoryStore(service)` uses a ready service; `MemoryStore.from_settings()` builds one from the settings
    (config file, environment, `flags`) as the CLI and servers do. `store` picks the product's store
    (default: the configured one), `decay_policy` the decay of new items (stable: they never fade).
    `index` is LangGraph's index configuration (langgraph/index.py): with it a query is scored by the cosine
    of its embeddings; without it by the product's hybrid search. `ttl` is LangGraph's TTLConfig: an item's
    TTL (minutes) is its memory's expiry, renewed on read unless `refresh_on_read` is False. The async calls run
    on at most `max_concurrency` threads, single ones batched together (batcher.py).
    """

    supports_ttl = True
    __slots__ = (
        "_async",
        "_category",
        "_decay_policy",
        "_service",
        "_store",
        "_sweeper",
        "_vectors",
        "embeddings",
        "index_config",
        "ttl_config",
    )

    def __init__(
        self,
        service: MemoryService,
        *,
        store: str | None = None,
        decay_policy: str = "stable",
        category: str = CATEGORY,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        max_concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        if not isinstance(service, MemoryService):
            raise TypeError(f"MemoryStore needs a MemoryService, got {type(service).__name__}.")
        try:
            self._store = None if store is None else check_store_name(store)
            self._decay_policy = parse_decay_policy(decay_policy).value
        except InvalidValue as error:
            raise invalid(error.message) from None
        if normalise_segment(category) != category or not category:
            raise invalid(f"category must be one path segment (letters, digits, '-'), got {category!r}.")
        self._service, self._category = service, category
        self.index_config, self.embeddings = index_config(index, service)
        self._vectors = None if self.embeddings is None else VectorCache(self.embeddings)
        self.ttl_config = checked_ttl(ttl)
        self._sweeper: tuple[threading.Thread, threading.Event] | None = None
        try:
            self._async = AsyncRunner(self._outcomes, self.batch, max_concurrency)
        except ValueError as error:
            raise invalid(str(error)) from None
        _OPEN.add(self)

    @classmethod
    def from_settings(
        cls,
        flags: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        store: str | None = None,
        decay_policy: str = "stable",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        max_concurrency: int = DEFAULT_CONCURRENCY,
    ) -> MemoryStore:
        """A store over the service the composition root builds from the settings (as every door does)."""
        from agent_memory.entrypoints.bootstrap import build_service
        from agent_memory.entrypoints.settings import load_settings

        service = succeeded(load_settings(flags, env).bind(build_service))
        return cls(
            service, store=store, decay_policy=decay_policy, index=index, ttl=ttl, max_concurrency=max_concurrency
        )

    @property
    def service(self) -> MemoryService:
        return self._service

    @property
    def category(self) -> str:
        """The root category the items `put` makes sit in."""
        return self._category

    @property
    def decay_policy(self) -> str:
        """The decay policy of the items `put` makes."""
        return self._decay_policy

    @property
    def vectors(self) -> VectorCache | None:
        """The index's embeddings of items' fields (None without LangGraph's index configured)."""
        return self._vectors

    @property
    def store_name(self) -> str | None:
        """The product's store the items are kept in (None: the configured one)."""
        return self._store

    # --- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[OpResult]:
        """Run the operations in order and return their results; every one is checked before any runs."""
        checked = list(ops)
        for op in checked:
            check_op(op)
        outcomes = self._outcomes([product_op(op) for op in checked], stop=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return outcomes  # type: ignore[return-value]

    async def abatch(self, ops: Iterable[Op]) -> list[OpResult]:
        """batch, on the store's bounded threads; a single operation (aget, aput, …) joins others (batcher.py)."""
        checked = list(ops)
        for op in checked:
            check_op(op)
        if len(checked) == 1:
            return [await self._async.one(product_op(checked[0]))]
        return await self._async.many(checked)

    def _outcomes(self, ops: list[Op], *, stop: bool = False) -> list[Outcome]:
        """Each operation's result or exception, in order (with `stop`, none after the first exception). Puts of
        different keys in a row commute: they are written together, each kind in one write (writes.py)."""
        outcomes: list[Outcome] = []
        at = 0
        while at < len(ops):
            run = put_run(ops, at)
            together = written_together(self, run)
            steps: list[Op] = [*run] or [ops[at]]
            for op in steps:
                if id(op) in together:
                    outcomes.append(None)
                    continue
                try:
                    outcomes.append(self._run(op))
                except Exception as error:  # the caller's own failure: handed back with its operation
                    outcomes.append(error)
                    if stop:
                        return outcomes
            at += max(len(run), 1)
        return outcomes

    def _run(self, op: Op) -> OpResult:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        return self._namespaces(op)

    # --- get / put --------------------------------------------------------------------------------

    def _memory(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        """The memory that is the item (namespace, key): the one `put` made under the key, else (the key being a
        memory id) the memory of that id in exactly this namespace."""
        path = item_path(namespace, key, category=self._category)
        found = self._read(GetMemory(ref=path, store=self._store, namespace=namespace))
        if found is not None and self._key(found, namespace) == key:
            return found
        if not id_key(key):
            return None
        found = self._read(GetMemory(ref=key, store=self._store, namespace=namespace))
        return found if found is not None and self._key(found, namespace) == key else None

    def _read(self, command: GetMemory) -> Memory | None:
        found = dispatch(self._service, command)
        if isinstance(found, Failure) and absent_code(found.failure()):
            return None
        memory: Memory = succeeded(found).memory
        return memory

    def _key(self, memory: Memory, namespace: tuple[str, ...]) -> str | None:
        decoded = self._decoded(memory, namespace)
        return None if decoded is None else decoded[0]

    def _load(self, namespace: tuple[str, ...], key: str) -> Item | None:
        memory = self._memory(namespace, key)
        decoded = None if memory is None else self._decoded(memory, namespace)
        return None if memory is None or decoded is None else item_of(memory, *decoded)

    def _get(self, op: GetOp) -> Item | None:
        memory = self._memory(tuple(op.namespace), op.key)
        if memory is None:
            return None
        if op.refresh_ttl:
            memory = renewed(self, [memory])[0]
        decoded = self._decoded(memory, None)
        return None if decoded is None else item_of(memory, *decoded)

    def _decoded(self, memory: Memory, namespace: tuple[str, ...] | None) -> tuple[str, dict[str, Any]] | None:
        """(key, value) of a memory as an item (in `namespace` exactly, when given); None without a namespace."""
        if not memory.namespace or (namespace is not None and memory.namespace != namespace):
            return None  # LangGraph has no item of no namespace
        return key_and_value(memory, category=self._category)

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        extras = {"index": op.index, "ttl": op.ttl}
        expires_at = None if op.ttl is None else self._service.clock.now() + timedelta(minutes=op.ttl)
        held = self._memory(namespace, key)
        if op.value is None:
            if held is not None:
                self._delete(held)
            return
        if held is not None and put_key(held, category=self._category) is None:  # a memory keyed by its id
            command = UpdateMemory(
                ref=held.id,
                store=self._store,
                namespace=namespace,
                content=encoded(key, op.value, extras, plain=True),
                expires_at=expires_at,
                clear_expiry=expires_at is None,
            )
            updated = dispatch(self._service, command)
            if not (isinstance(updated, Failure) and absent_code(updated.failure())):
                succeeded(updated)
                return
        upserted(self, namespace, key, encoded(key, op.value, extras, plain=readable_key(key)), expires_at)

    def _delete(self, memory: Memory) -> None:
        """An item `put` made is removed for good (LangGraph's delete); any other memory soft-deleted (decision 13)."""
        command: RemoveMemory | DeleteMemory
        if put_key(memory, category=self._category) is not None:
            command = RemoveMemory(ref=memory.id, store=self._store, namespace=memory.namespace)
        else:
            command = DeleteMemory(ref=memory.id, store=self._store, namespace=memory.namespace)
        gone = dispatch(self._service, command)
        if not (isinstance(gone, Failure) and absent_code(gone.failure())):
            succeeded(gone)

    # --- search / list namespaces (item_search.py) ---------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        return searched(self, op)

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        return namespaces(self, op)

    # --- TTL sweeping ---------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every item whose TTL ran out (its memory expired) for good; how many were deleted."""
        return sweep(self)

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(sweep, self)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> threading.Thread | None:
        """Sweep every `sweep_interval_minutes` (default the TTLConfig's) in a daemon thread; None without one."""
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        if not minutes or self._sweeper is not None:
            return None if self._sweeper is None else self._sweeper[0]
        self._sweeper = sweeping(self.sweep_ttl, minutes)
        return self._sweeper[0]

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; whether it has stopped (True when none ran)."""
        return self._stop_sweeper_thread(timeout)

    def _stop_sweeper_thread(self, timeout: float | None) -> bool:
        stopped = self._sweeper is None or stop_sweeping(self._sweeper, timeout)
        self._sweeper = None if stopped else self._sweeper
        return stopped

    # --- closing ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the sweeper, let the async calls' threads go and release the engine clients (Qdrant's client and,
        in local mode, its folder lock; embedded Chroma's files): a later call opens them again."""
        from agent_memory.entrypoints.bootstrap import release_storage

        _OPEN.discard(self)
        self._stop_sweeper_thread(None)
        self._async.close()
        release_storage(self._service.context.catalog)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
