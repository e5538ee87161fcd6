"""The use cases of scoped memories (spec 001): create, get, search, reinforce, soft delete, status."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from attrs import evolve, frozen
from returns.result import Failure, Result, Success

from domain.commands import CreateMemory, SearchMemories
from domain.decay import DEFAULT_DECAY_WINDOW_HOURS, confidence, oldest_anchor_for
from domain.errors import DomainError, ErrorCode, InvalidValue, invalid_input, not_found
from domain.filters import MemoryFilter
from domain.model import (
    DEFAULT_STORE,
    DecayPolicy,
    Memory,
    ScoredMemory,
    check_memory_id,
    check_namespace,
    check_store_name,
    new_memory_id,
    parse_decay_policy,
)
from domain.paths import CategoryPath, MemoryPath, parse_category_path, parse_memory_path
from domain.ports import Clock, Embedder, StoreCatalog, VectorStore
from domain.views import MemoryView, SearchResults, Status

T = TypeVar("T")
MAX_SEARCH_LIMIT = 1000


def attempt(build: Callable[[], T]) -> Result[T, DomainError]:
    """Run a constructor or check that may raise InvalidValue, as a Result."""
    try:
        return Success(build())
    except InvalidValue as error:
        return Failure(error.to_error())


@frozen(kw_only=True)
class SearchPolicy:
    """The tunable rules of search and decay (decisions 5 and 7)."""

    decay_window_hours: float = DEFAULT_DECAY_WINDOW_HOURS
    min_confidence: float = 0.3
    default_limit: int = 10
    default_store: str = DEFAULT_STORE


@frozen(kw_only=True)
class MemoryService:
    """The use cases over the ports. Every method returns a Result; none raises for bad input."""

    catalog: StoreCatalog
    embedder: Embedder
    clock: Clock
    policy: SearchPolicy = SearchPolicy()

    # --- create -----------------------------------------------------------------------------

    def create(self, command: CreateMemory) -> Result[MemoryView, DomainError]:
        """Store a new memory with a fresh UUID; its confidence starts at 1.0."""
        return self.create_many([command]).map(lambda views: views[0])

    def create_many(self, commands: list[CreateMemory]) -> Result[list[MemoryView], DomainError]:
        """Store a batch with one embedding call per store; all are validated before any is written."""
        now = self.clock.now()
        built: list[Memory] = []
        for command in commands:
            memory = self._new_memory(command, now)
            if isinstance(memory, Failure):
                return memory
            built.append(memory.unwrap())
        by_store: dict[str, list[Memory]] = {}
        for memory in built:
            by_store.setdefault(memory.store, []).append(memory)
        for store_name, memories in by_store.items():
            written = self._write_new(store_name, memories)
            if isinstance(written, Failure):
                return written
        return Success([MemoryView(m, self._confidence(m)) for m in built])

    def _new_memory(self, command: CreateMemory, now: object) -> Result[Memory, DomainError]:
        path: MemoryPath | None = None
        if command.path is not None:
            parsed = parse_memory_path(command.path)
            if isinstance(parsed, Failure):
                return parsed
            path = parsed.unwrap()
        created = command.created_at or self.clock.now()
        return attempt(
            lambda: Memory(
                id=new_memory_id(),
                content=command.content,
                created_at=created,
                updated_at=created,
                store=check_store_name(command.store or self.policy.default_store),
                namespace=check_namespace(command.namespace),
                path=path,
                agent=command.agent,
                personality=command.personality,
                project=command.project,
                type=command.type,
                global_=bool(command.global_),
                tags=command.tags,
                source=command.source,
                citations=command.citations,
                decay_policy=parse_decay_policy(command.decay_policy),
                expires_at=command.expires_at,
            )
        )

    def _write_new(self, store_name: str, memories: list[Memory]) -> Result[None, DomainError]:
        opened = self._open(store_name, create=True).bind(self._check_model)
        if isinstance(opened, Failure):
            return opened
        vectors = self.embedder.embed_documents([m.content for m in memories])
        return vectors.bind(lambda vs: opened.unwrap().add(memories, vs))

    # --- read -------------------------------------------------------------------------------

    def get(
        self, memory_id: str, *, store: str | None = None, include_expired: bool = False
    ) -> Result[MemoryView, DomainError]:
        """A live memory by id with its confidence now; soft-deleted ones are not found."""
        return self._load_live(memory_id, store, include_expired=include_expired).map(self._view)

    def search(self, command: SearchMemories) -> Result[SearchResults, DomainError]:
        """Semantic search under the filters; fetches more until `limit` hits qualify or none are left."""
        checked = self._search_plan(command)
        if isinstance(checked, Failure):
            return checked
        where, limit, floor = checked.unwrap()
        opened = self._open(command.store or self.policy.default_store, create=False)
        if isinstance(opened, Failure):
            return opened
        store = opened.unwrap()
        model_ok = self._check_model(store)
        if isinstance(model_ok, Failure):
            return model_ok
        embedded = self.embedder.embed_query(command.query)
        if isinstance(embedded, Failure):
            return embedded
        vector = embedded.unwrap()
        want = max(limit * 2, 20)
        while True:
            hits = store.query(vector, where, want)
            if isinstance(hits, Failure):
                return hits
            pairs = hits.unwrap()
            qualified = [
                ScoredMemory(memory, round(similarity, 4), conf, round(similarity, 4))
                for memory, similarity in pairs
                if (conf := self._confidence(memory)) >= floor
            ]
            if len(qualified) >= limit or len(pairs) < want:
                return Success(SearchResults(tuple(qualified[:limit])))
            want *= 4

    def _search_plan(self, command: SearchMemories) -> Result[tuple[MemoryFilter, int, float], DomainError]:
        if not isinstance(command.query, str) or not command.query.strip():
            return Failure(invalid_input("The search query is empty: say what to look for."))
        limit = self.policy.default_limit if command.limit is None else command.limit
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            return Failure(invalid_input(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}."))
        floor = self.policy.min_confidence if command.min_confidence is None else command.min_confidence
        if not 0.0 <= floor <= 1.0:
            return Failure(invalid_input(f"min-confidence must be between 0 and 1, got {floor}."))
        prefix: CategoryPath | None = None
        if command.path_prefix is not None:
            parsed = parse_category_path(command.path_prefix)
            if isinstance(parsed, Failure):
                return parsed
            prefix = parsed.unwrap()
        now = self.clock.now()
        return attempt(
            lambda: (
                MemoryFilter(
                    namespace=None if command.namespace is None else check_namespace(command.namespace),
                    agent=command.agent,
                    personality=command.personality,
                    project=command.project,
                    type=command.type,
                    global_=command.global_,
                    tags=tuple(command.tags),
                    path_prefix=prefix,
                    alive_at=None if command.include_expired else now,
                    oldest_anchor=oldest_anchor_for(floor, now, self.policy.decay_window_hours),
                ),
                limit,
                floor,
            )
        )

    # --- change -----------------------------------------------------------------------------

    def reinforce(self, memory_id: str, *, store: str | None = None) -> Result[MemoryView, DomainError]:
        """Reset a reinforceable memory's decay to now; stable and contextual ones refuse."""
        loaded = self._load_live(memory_id, store, include_expired=False)
        if isinstance(loaded, Failure):
            return loaded
        memory = loaded.unwrap()
        if memory.decay_policy is DecayPolicy.STABLE:
            return Failure(
                DomainError(
                    ErrorCode.INVALID_OPERATION,
                    "Stable memories cannot be reinforced: their confidence is always 1.0.",
                    path=memory.id,
                )
            )
        if memory.decay_policy is DecayPolicy.CONTEXTUAL:
            return Failure(
                DomainError(
                    ErrorCode.INVALID_OPERATION,
                    "Contextual memories cannot be reinforced: they decay from creation. "
                    "Use --decay reinforceable for memories that should stay fresh while used.",
                    path=memory.id,
                )
            )
        reinforced = evolve(memory, last_reinforced_at=self.clock.now())
        return self._save_metadata(reinforced).map(lambda _: self._view(reinforced))

    def delete(self, memory_id: str, *, store: str | None = None) -> Result[Memory, DomainError]:
        """Soft delete: the memory stays stored with deleted=true and never surfaces again."""
        loaded = self._load_any(memory_id, store)
        if isinstance(loaded, Failure):
            return loaded
        memory = loaded.unwrap()
        if memory.deleted:
            return Failure(
                DomainError(ErrorCode.INVALID_OPERATION, f"Memory {memory.id} is already deleted.", path=memory.id)
            )
        gone = evolve(memory, deleted=True, deleted_at=self.clock.now())
        return self._save_metadata(gone).map(lambda _: gone)

    # --- status -----------------------------------------------------------------------------

    def status(self, *, store: str | None = None) -> Result[Status, DomainError]:
        """Reach the backend and count the store's memories (soft-deleted ones included)."""
        name = store or self.policy.default_store
        health = self.catalog.health()
        if isinstance(health, Failure):
            return health
        counted = self._open(name, create=False).bind(lambda s: s.count())
        return counted.map(lambda n: Status(self.catalog.backend, name, n, health.unwrap()))

    # --- helpers ----------------------------------------------------------------------------

    def _open(self, name: str | None, *, create: bool) -> Result[VectorStore, DomainError]:
        store_name = name or self.policy.default_store
        checked = attempt(lambda: check_store_name(store_name))
        if isinstance(checked, Failure):
            return checked
        is_default = store_name == self.policy.default_store
        return self.catalog.open(store_name, create=create or is_default)

    def _check_model(self, store: VectorStore) -> Result[VectorStore, DomainError]:
        def compare(recorded: str | None) -> Result[VectorStore, DomainError]:
            if recorded is None or recorded == self.embedder.name:
                return Success(store)
            return Failure(
                DomainError(
                    ErrorCode.EMBEDDING_MISMATCH,
                    f"This store was embedded with '{recorded}' but the configured embedder is "
                    f"'{self.embedder.name}'. Run `memory reindex` to re-embed it, or configure '{recorded}'.",
                )
            )

        return store.embedding_model().bind(compare)

    def _load_any(self, memory_id: str, store: str | None) -> Result[Memory, DomainError]:
        checked = attempt(lambda: check_memory_id(memory_id))
        if isinstance(checked, Failure):
            return checked
        canonical = checked.unwrap()

        def first(found: list[Memory]) -> Result[Memory, DomainError]:
            return Success(found[0]) if found else Failure(not_found(canonical))

        return self._open(store, create=False).bind(lambda s: s.get([canonical])).bind(first)

    def _load_live(self, memory_id: str, store: str | None, *, include_expired: bool) -> Result[Memory, DomainError]:
        def visible(memory: Memory) -> Result[Memory, DomainError]:
            if memory.deleted:
                return Failure(not_found(memory.id))
            if not include_expired and memory.is_expired(self.clock.now()):
                return Failure(
                    DomainError(
                        ErrorCode.MEMORY_EXPIRED,
                        "Memory expired: pass include_expired to read it anyway.",
                        path=memory.id,
                    )
                )
            return Success(memory)

        return self._load_any(memory_id, store).bind(visible)

    def _save_metadata(self, memory: Memory) -> Result[None, DomainError]:
        return self._open(memory.store, create=False).bind(lambda s: s.update_metadata([memory]))

    def _confidence(self, memory: Memory) -> float:
        return confidence(memory, self.clock.now(), self.policy.decay_window_hours)

    def _view(self, memory: Memory) -> MemoryView:
        return MemoryView(memory, self._confidence(memory))
