"""The LangGraph door: a `BaseStore` over the service, so LangGraph and LangMem keep their tools and gain its backends.

Imported only when used (the `langgraph` extra, which installs langgraph-checkpoint): nothing here loads with
agent_memory. How an item is kept:

- its namespace tuple is the memory's namespace (labels the domain refuses escaped as %XX, langgraph_labels.py), so
  tenancy, listing and search scopes are the product's own;
- its key names a memory path `langgraph/<key as a slug>-<digest>`, the digest being a hash of namespace and
  key: the path is stable (a put over an existing key updates that memory, keeping its created_at), never
  collides between keys that slug alike ("A b" and "a-b"), and is readable in `memory list langgraph` and as
  the files backend's markdown file name;
- its value is the memory's content, as the JSON text `{"key": …, "value": {…}}`: content is the one field
  that holds arbitrary structure (up to 100,000 characters; the other fields are short labels), it is what
  hybrid search embeds and indexes, so a query finds an item by what its value says, and it gives the
  value back exactly as JSON has it (the key rides along because a digest cannot be read back).

Search with a query is the service's hybrid search over the namespace prefix; without one it lists the
prefix, newest update first. A filter is matched on the value as LangGraph's own stores match it (equality,
nested dicts, $eq $ne $gt $gte $lt $lte). Operations of a batch run in order, after all have been checked,
so a batch with a bad operation changes nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from returns.result import Failure

from agent_memory.domain.commands import (
    CreateMemories,
    CreateMemory,
    GetMemory,
    ListMemories,
    RemoveMemory,
    SearchMemories,
    UpdateMemory,
)
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import Memory, check_store_name, parse_decay_policy
from agent_memory.domain.paths import normalise_segment
from agent_memory.domain.search.searching import MAX_SEARCH_LIMIT
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.agents.tool_errors import invalid, succeeded
from agent_memory.entrypoints.extras import missing_extra

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
from agent_memory.entrypoints.langgraph.filters import matches, namespace_matches
from agent_memory.entrypoints.langgraph.index import VectorCache, index_config
from agent_memory.entrypoints.langgraph.labels import from_product, to_product
from agent_memory.entrypoints.langgraph.ops import (
    SOURCE,
    check_op,
    checked_ttl,
    cosine_ranked,
    encoded,
    envelope,
    item_of,
    key_and_value,
    product_op,
    search_item,
)

__all__ = ["CATEGORY", "MemoryStore", "item_path"]

CATEGORY = "langgraph"  # the root category every item's path sits in
_SLUG_CHARS = 48  # of the key, in the path (the digest makes it unique)
_UPSERT_ROUNDS = 64  # create/update turns a put takes while other writers create and delete its key


def item_path(namespace: Sequence[str], key: str, *, category: str = CATEGORY) -> str:
    """The memory path of one item: the category, the key as a slug, a digest of namespace and key."""
    digest = hashlib.sha256(json.dumps([list(namespace), key], ensure_ascii=False).encode()).hexdigest()[:32]
    slug = normalise_segment(key)[:_SLUG_CHARS].strip("-")
    return f"{category}/{slug}-{digest}" if slug else f"{category}/{digest}"


class MemoryStore(BaseStore):
    """LangGraph's BaseStore over a MemoryService: any backend (Chroma, Qdrant, files), hybrid search, decay.

    `MemoryStore(service)` uses a ready service; `MemoryStore.from_settings()` builds one from the settings
    (config file, environment, `flags`) as the CLI and servers do. `store` picks the product's store
    (default: the configured one), `decay_policy` the decay of new items (stable: they never fade).
    `index` is LangGraph's index configuration (langgraph_index.py): with it a query is scored by the cosine
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
        different keys in a row commute: those of new items are created as one batch, embedded together."""
        outcomes: list[Outcome] = []
        at = 0
        while at < len(ops):
            run: list[Op] = list(put_run(ops, at))
            created = self._created_together(run)
            for op in run or [ops[at]]:
                if id(op) in created:
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

    def _created_together(self, run: list[Op]) -> set[int]:
        """Of a run of puts, those of items that do not exist yet, created in one batch: their ids (none when
        fewer than two are new, or when the batch is refused, e.g. another writer created one meanwhile)."""
        if len(run) < 2:
            return set()
        fresh = [
            op
            for op in run
            if isinstance(op, PutOp) and op.value is not None and self._load(tuple(op.namespace), op.key) is None
        ]
        if len(fresh) < 2:
            return set()
        creates = tuple(
            CreateMemory(
                content=encoded(op.key, op.value, {"index": op.index, "ttl": op.ttl}),
                namespace=tuple(op.namespace),
                path=item_path(op.namespace, op.key, category=self._category),
                store=self._store,
                source=SOURCE,
                decay_policy=self._decay_policy,
                expires_at=None if op.ttl is None else self._service.clock.now() + timedelta(minutes=op.ttl),
                on_duplicate="keep",  # an item's key is its identity: a put is stored under it, like or not
            )
            for op in fresh
        )
        created = dispatch(self._service, CreateMemories(memories=creates))
        return set() if isinstance(created, Failure) else {id(op) for op in fresh}

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
        path = item_path(namespace, key, category=self._category)
        found = dispatch(self._service, GetMemory(ref=path, store=self._store, namespace=namespace))
        if isinstance(found, Failure) and _absent_code(found.failure()):
            return None
        memory: Memory = succeeded(found).memory
        decoded = self._decoded(memory, namespace)
        return None if decoded is None or decoded[0] != key else memory

    def _load(self, namespace: tuple[str, ...], key: str) -> Item | None:
        memory = self._memory(namespace, key)
        decoded = None if memory is None else self._decoded(memory, namespace)
        return None if memory is None or decoded is None else item_of(memory, *decoded)

    def _get(self, op: GetOp) -> Item | None:
        memory = self._memory(tuple(op.namespace), op.key)
        if memory is None:
            return None
        if op.refresh_ttl:
            memory = self._refreshed(memory)
        decoded = self._decoded(memory, None)
        return None if decoded is None else item_of(memory, *decoded)

    def _refreshed(self, memory: Memory) -> Memory:
        """The memory with its expiry renewed by its item's TTL (a read counts as use); as it was without a TTL."""
        minutes = envelope(memory).get("ttl")
        if not isinstance(minutes, int | float) or memory.path is None:
            return memory
        expires_at = self._service.clock.now() + timedelta(minutes=minutes)
        command = UpdateMemory(
            ref=str(memory.path), store=self._store, namespace=memory.namespace, expires_at=expires_at
        )
        renewed = dispatch(self._service, command)
        if isinstance(renewed, Failure) and _absent_code(renewed.failure()):
            return memory  # deleted or expired meanwhile: the read answers what it read
        view: Any = succeeded(renewed)
        return view.memory  # type: ignore[no-any-return]

    def _decoded(self, memory: Memory, namespace: tuple[str, ...] | None) -> tuple[str, dict[str, Any]] | None:
        """(key, value) of a memory this store wrote (in `namespace` exactly, when given); None for any other."""
        decoded = key_and_value(memory)
        if decoded is None or (namespace is not None and memory.namespace != namespace):
            return None
        if str(memory.path) != item_path(memory.namespace, decoded[0], category=self._category):
            return None
        return decoded

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        path = item_path(namespace, key, category=self._category)
        if op.value is None:
            if self._load(namespace, key) is not None:
                gone = dispatch(self._service, RemoveMemory(ref=path, store=self._store, namespace=namespace))
                if not (isinstance(gone, Failure) and _absent_code(gone.failure())):
                    succeeded(gone)
            return
        content = encoded(key, op.value, {"index": op.index, "ttl": op.ttl})
        expires_at = None if op.ttl is None else self._service.clock.now() + timedelta(minutes=op.ttl)
        exists = self._load(namespace, key) is not None
        for _ in range(_UPSERT_ROUNDS):
            if not exists:
                created = dispatch(
                    self._service,
                    CreateMemory(
                        content=content,
                        namespace=namespace,
                        path=path,
                        store=self._store,
                        source=SOURCE,
                        decay_policy=self._decay_policy,
                        expires_at=expires_at,
                        on_duplicate="keep",  # an item's key is its identity: a put is stored under it, like or not
                    ),
                )
                if not (isinstance(created, Failure) and created.failure().code is ErrorCode.DESTINATION_EXISTS):
                    succeeded(created)
                    return
                # another writer created it since we looked: theirs is updated over, as a put does
            command = UpdateMemory(
                ref=path,
                store=self._store,
                namespace=namespace,
                content=content,
                include_expired=True,
                expires_at=expires_at,
                clear_expiry=expires_at is None,
            )
            updated = dispatch(self._service, command)
            if not (isinstance(updated, Failure) and _absent_code(updated.failure())):
                succeeded(updated)
                return
            exists = False  # a concurrent delete won since we looked: the put creates it again
        raise invalid(f"The item {key!r} kept being created and deleted by other writers; put it again.")

    # --- search -----------------------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit == 0:
            return []
        if op.query and self._vectors is not None:
            listed = [(memory, kv) for memory, kv in self._listed(prefix) if matches(kv[1], op.filter)]
            return self._refreshing(op, cosine_ranked(op, listed, self._vectors, self.index_config))
        if op.query:
            return self._refreshing(op, self._ranked(op, prefix))
        listed = self._listed(prefix)
        matching = [(memory, kv) for memory, kv in listed if matches(kv[1], op.filter)]
        matching.sort(key=lambda pair: (-pair[0].updated_at.timestamp(), pair[1][0]))
        page = matching[op.offset : op.offset + op.limit]
        return self._refreshing(op, [search_item(memory, key, value, None) for memory, (key, value) in page])

    def _refreshing(self, op: SearchOp, hits: list[SearchItem]) -> list[SearchItem]:
        """The hits, their items' TTLs renewed when the search asks it (LangGraph's refresh on read)."""
        if op.refresh_ttl and self.ttl_config is not None:
            for hit in hits:
                memory = self._memory(to_product(hit.namespace), hit.key)
                if memory is not None:
                    self._refreshed(memory)
        return hits

    # --- TTL sweeping ---------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every item whose TTL ran out (its memory expired) for good; how many were deleted."""
        listed = ListMemories(category=self._category, store=self._store, include_expired=True)
        listing = dispatch(self._service, listed)
        if isinstance(listing, Failure) and _absent_code(listing.failure()):
            return 0
        now, swept = self._service.clock.now(), 0
        for view in succeeded(listing).memories:
            memory = view.memory
            if memory.is_expired(now) and self._decoded(memory, None) is not None and memory.path is not None:
                gone = dispatch(
                    self._service, RemoveMemory(ref=str(memory.path), store=self._store, namespace=memory.namespace)
                )
                swept += not isinstance(gone, Failure)
        return swept

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> threading.Thread | None:
        """Sweep every `sweep_interval_minutes` (default the TTLConfig's) in a daemon thread; None without one."""
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        if not minutes or self._sweeper is not None:
            return None if self._sweeper is None else self._sweeper[0]
        self._sweeper = sweeping(self.sweep_ttl, minutes)
        return self._sweeper[0]

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; whether it has stopped (True when none ran)."""
        stopped = self._sweeper is None or stop_sweeping(self._sweeper, timeout)
        self._sweeper = None if stopped else self._sweeper
        return stopped

    def _listed(self, prefix: tuple[str, ...]) -> list[tuple[Memory, tuple[str, dict[str, Any]]]]:
        """Every item under the namespace prefix (in the product's namespaces below it too)."""
        listed = ListMemories(category=self._category, store=self._store, namespace=prefix or None)
        listing = dispatch(self._service, listed)
        if isinstance(listing, Failure) and _absent_code(listing.failure()):
            return []
        found = []
        for view in succeeded(listing).memories:
            decoded = self._decoded(view.memory, None)
            if decoded is not None:
                found.append((view.memory, decoded))
        return found

    def _ranked(self, op: SearchOp, prefix: tuple[str, ...]) -> list[SearchItem]:
        """Hybrid search, asking for more hits while the filter leaves fewer than the page needs."""
        window = op.offset + op.limit
        want = window if not op.filter else min(max(window * 4, 40), MAX_SEARCH_LIMIT)
        while True:
            command = SearchMemories(
                query=op.query or "",
                namespace=prefix or None,
                path_prefix=self._category,
                store=self._store,
                limit=want,
                mode="hybrid",
                min_similarity=0.0,  # LangGraph's stores rank every item of the prefix: no relevance floor
            )
            searched = dispatch(self._service, command)
            if isinstance(searched, Failure) and _absent_code(searched.failure()):
                return []
            results = succeeded(searched)
            hits = []
            for hit in results.results:
                decoded = self._decoded(hit.memory, None)
                if decoded is not None and matches(decoded[1], op.filter):
                    hits.append(search_item(hit.memory, *decoded, hit.score))
            if len(hits) >= window or not results.has_more or want >= MAX_SEARCH_LIMIT:
                return hits[op.offset : window]
            want = min(want * 4, MAX_SEARCH_LIMIT)

    # --- list namespaces ----------------------------------------------------------------------------

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        pushdown: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                fixed = []
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                pushdown = max(pushdown, tuple(fixed), key=len)
        namespaces = {memory.namespace for memory, _ in self._listed(pushdown)}
        chosen = [ns for ns in namespaces if all(namespace_matches(condition, ns) for condition in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(from_product(ns) for ns in chosen)[op.offset : op.offset + op.limit]


def _absent_code(error: DomainError) -> bool:
    """Nothing there to read: no such memory or item yet, or the named store was never written to."""
    return error.code in (
        ErrorCode.MEMORY_NOT_FOUND,
        ErrorCode.MEMORY_EXPIRED,
        ErrorCode.CATEGORY_NOT_FOUND,
        ErrorCode.STORE_NOT_FOUND,
    )
