"""The use cases of scoped memories (spec 001): create, get, search, reinforce, soft delete, status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from attrs import evolve, frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.base import UseCaseBase, attempt, optional_category, optional_path
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.decay import oldest_anchor_for
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue, invalid_input
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.hybrid import DEPTH, SearchMode, fuse
from agent_memory.domain.model import (
    DecayPolicy,
    Memory,
    ScoredMemory,
    check_store_name,
    new_memory_id,
    parse_decay_policy,
)
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.ports import Vector, VectorStore, thread_of
from agent_memory.domain.tenancy import Guard, place
from agent_memory.domain.views import Census, MemoryView, SearchResults, Status

MAX_SEARCH_LIMIT = 1000


class ScopedUseCases(UseCaseBase):
    """create, get, search, reinforce, delete (soft) and status."""

    # --- create -----------------------------------------------------------------------------

    def create(self, command: CreateMemory) -> Result[MemoryView, DomainError]:
        """Store a new memory with a fresh UUID; its confidence starts at 1.0."""
        return self.create_many([command]).map(lambda views: views[0])

    def create_many(self, commands: Sequence[CreateMemory]) -> Result[list[MemoryView], DomainError]:
        """Store a batch with one embedding call per store; all are validated before any is written."""
        now = self.clock.now()
        built = Fold.collect([self._new_memory(command, now) for command in commands], Success(()))
        return built.bind(self._write_batch)

    def _new_memory(self, command: CreateMemory, now: datetime) -> Result[Memory, DomainError]:
        created = command.created_at or now
        return place(self.tenant, command.namespace).bind(
            lambda namespace: optional_path(command.path).bind(
                lambda path: self._built(command, created, namespace, path)
            )
        )

    def _built(
        self, command: CreateMemory, created: datetime, namespace: tuple[str, ...], path: MemoryPath | None
    ) -> Result[Memory, DomainError]:
        return attempt(
            lambda: Memory(
                id=new_memory_id(),
                content=command.content,
                created_at=created,
                updated_at=created,
                store=check_store_name(command.store or self.policy.default_store),
                namespace=namespace,
                path=path,
                agent=command.agent,
                personality=command.personality,
                project=command.project,
                type=command.type,
                global_=bool(command.global_),
                tags=command.tags,
                source=command.source,
                citations=command.citations,
                thread=command.thread,
                decay_policy=parse_decay_policy(command.decay_policy),
                expires_at=command.expires_at,
            )
        )

    def _write_batch(self, memories: tuple[Memory, ...]) -> Result[list[MemoryView], DomainError]:
        by_store: dict[str, list[Memory]] = {}
        for memory in memories:
            by_store.setdefault(memory.store, []).append(memory)
        for store_name, group in by_store.items():
            written = self._exclusive(store_name, lambda s=store_name, g=group: self._write_new(s, g))  # type: ignore[misc]
            if isinstance(written, Failure):
                return written
        return Success([self._view(memory) for memory in memories])

    def _write_new(self, store_name: str, memories: list[Memory]) -> Result[None, DomainError]:
        return (
            self._open(store_name, create=True)
            .bind(self._check_model)
            .bind(lambda store: self._paths_free(store, memories))
            .bind(
                lambda store: (
                    self.embedder.embed_documents([m.content for m in memories])
                    .bind(lambda vectors: store.add(memories, vectors))
                    .bind(
                        lambda _: self._index_keywords(store_name, memories).lash(
                            lambda error: _undo_add(store, memories, error)
                        )
                    )
                )
            )
        )

    # --- read -------------------------------------------------------------------------------

    def get(
        self,
        memory_id: str,
        *,
        store: str | None = None,
        include_expired: bool = False,
        namespace: Sequence[str] | None = None,
    ) -> Result[MemoryView, DomainError]:
        """A live memory by id or path with its confidence now; soft-deleted ones are not found."""
        return self._load_live(memory_id, store, include_expired=include_expired, namespace=namespace).map(self._view)

    def search(self, command: SearchMemories) -> Result[SearchResults, DomainError]:
        """Search under the filters: hybrid (default), semantic or keyword; `limit` hits whenever that many qualify."""
        return self._guard(command.namespace).bind(
            lambda guard: self._search_plan(command, guard).bind(self._run_search)
        )

    def _run_search(self, plan: _SearchPlan) -> Result[SearchResults, DomainError]:
        def ranked(store: VectorStore, vector: Vector) -> Result[SearchResults, DomainError]:
            if plan.mode is SearchMode.SEMANTIC or self.keywords is None:
                return self._fetch(store, vector, plan, max(plan.limit * 2, 20))
            return self._blend(store, vector, plan, max(plan.limit, DEPTH))

        return (
            self._open(plan.store, create=False)
            .bind(self._check_model)
            .bind(lambda store: self.embedder.embed_query(plan.query).bind(lambda vector: ranked(store, vector)))
        )

    def _fetch(
        self, store: VectorStore, vector: Vector, plan: _SearchPlan, want: int
    ) -> Result[SearchResults, DomainError]:
        """Semantic: the store's nearest memories, asking for more until enough pass the confidence floor."""

        def qualify(pairs: list[tuple[Memory, float]]) -> Result[SearchResults, DomainError]:
            qualified = [
                ScoredMemory(memory, round(similarity, 4), conf, round(similarity, 4))
                for memory, similarity in pairs
                if (conf := self._confidence(memory)) >= plan.floor
            ]
            if len(qualified) >= plan.limit or len(pairs) < want:
                return Success(SearchResults(tuple(qualified[: plan.limit])))
            return self._fetch(store, vector, plan, want * 4)

        return store.query(vector, plan.where, want).bind(qualify)

    def _blend(
        self, store: VectorStore, vector: Vector, plan: _SearchPlan, depth: int
    ) -> Result[SearchResults, DomainError]:
        """Hybrid and keyword: candidates from both sides, filtered, then ranked (domain.hybrid)."""
        keywords = self.keywords
        assert keywords is not None  # _run_search routes here only with a keyword index
        dense: Result[list[tuple[Memory, float]], DomainError] = (
            store.query(vector, plan.where, depth) if plan.mode is SearchMode.HYBRID else Success([])
        )
        return dense.bind(
            lambda pairs: keywords.search(plan.store, plan.query, depth, thread_prefix=plan.thread_prefix).bind(
                lambda hits: self._keyword_memories(store, plan, hits).bind(
                    lambda found: self._rank(store, vector, plan, depth, pairs, dict(hits), found)
                )
            )
        )

    def _keyword_memories(
        self, store: VectorStore, plan: _SearchPlan, hits: list[tuple[str, float]]
    ) -> Result[list[Memory], DomainError]:
        """The keyword hits' records, kept only if they pass every filter (deleted, expired, scope…)."""
        return store.get([memory_id for memory_id, _ in hits]).map(
            lambda memories: [m for m in memories if plan.where.matches(m)]
        )

    def _rank(
        self,
        store: VectorStore,
        vector: Vector,
        plan: _SearchPlan,
        depth: int,
        pairs: list[tuple[Memory, float]],
        keyword: dict[str, float],
        keyword_memories: list[Memory],
    ) -> Result[SearchResults, DomainError]:
        keywords = self.keywords
        assert keywords is not None
        memories = {m.id: m for m in keyword_memories} | {m.id: m for m, _ in pairs}
        candidates = [i for i, m in memories.items() if self._confidence(m) >= plan.floor]
        similarity = {m.id: s for m, s in pairs}

        def score(links: dict[str, tuple[str | None, str | None]]) -> Result[SearchResults, DomainError]:
            wanted = {n for i in candidates for n in links.get(i, (None, None)) if n} | set(candidates)
            return store.similarities(vector, [i for i in wanted if i not in similarity]).map(
                lambda scored: self._results(plan, memories, candidates, similarity | scored, keyword, links)
            )

        exhausted = len(pairs) < depth and len(keyword) < depth
        if len(candidates) < plan.limit and not exhausted:
            return self._blend(store, vector, plan, depth * 4)
        return keywords.neighbours(plan.store, candidates).bind(score)

    def _results(
        self,
        plan: _SearchPlan,
        memories: dict[str, Memory],
        candidates: list[str],
        similarity: dict[str, float],
        keyword: dict[str, float],
        links: dict[str, tuple[str | None, str | None]],
    ) -> SearchResults:
        if plan.mode is SearchMode.KEYWORD:
            ranking = sorted(((i, keyword.get(i, 0.0)) for i in candidates), key=lambda p: (-p[1], p[0]))
        else:
            ranking = fuse(candidates, similarity, keyword, links)
        return SearchResults(
            tuple(
                ScoredMemory(
                    memories[i], round(similarity.get(i, 0.0), 4), self._confidence(memories[i]), round(score, 4)
                )
                for i, score in ranking[: plan.limit]
            )
        )

    def _search_plan(self, command: SearchMemories, guard: Guard) -> Result[_SearchPlan, DomainError]:
        if not isinstance(command.query, str) or not command.query.strip():
            return Failure(invalid_input("The search query is empty: say what to look for."))
        limit = self.policy.default_limit if command.limit is None else command.limit
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            return Failure(invalid_input(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}."))
        floor = self.policy.min_confidence if command.min_confidence is None else command.min_confidence
        if not 0.0 <= floor <= 1.0:
            return Failure(invalid_input(f"min-confidence must be between 0 and 1, got {floor}."))
        now = self.clock.now()
        return optional_category(command.path_prefix).bind(
            lambda prefix: attempt(
                lambda: _SearchPlan(
                    mode=parse_mode(command.mode),
                    query=command.query,
                    store=check_store_name(command.store or self.policy.default_store),
                    limit=limit,
                    floor=floor,
                    where=MemoryFilter(
                        namespace=guard,
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
                )
            )
        )

    # --- change -----------------------------------------------------------------------------

    def reinforce(
        self, memory_id: str, *, store: str | None = None, namespace: Sequence[str] | None = None
    ) -> Result[MemoryView, DomainError]:
        """Reset a reinforceable memory's decay to now; stable and contextual ones refuse."""
        return self._exclusive(
            store,
            lambda: self._load_live(memory_id, store, include_expired=False, namespace=namespace).bind(
                self._reinforced
            ),
        )

    def _reinforced(self, memory: Memory) -> Result[MemoryView, DomainError]:
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

    def delete(
        self,
        memory_id: str,
        *,
        store: str | None = None,
        namespace: Sequence[str] | None = None,
        include_expired: bool = False,
    ) -> Result[Memory, DomainError]:
        """Soft delete: the memory stays stored with deleted=true and never surfaces again.

        An expired memory is MEMORY_EXPIRED unless include_expired (as for get); `remove` and `prune` are
        the ways to get rid of expired memories for good."""
        return self._exclusive(
            store,
            lambda: self._load_ref(memory_id, store, namespace=namespace).bind(
                lambda memory: self._soft_deleted(memory, include_expired=include_expired)
            ),
        )

    def _soft_deleted(self, memory: Memory, *, include_expired: bool) -> Result[Memory, DomainError]:
        if memory.deleted:
            return Failure(
                DomainError(ErrorCode.INVALID_OPERATION, f"Memory {memory.id} is already deleted.", path=memory.id)
            )
        if isinstance(live := self._unexpired(memory, include_expired=include_expired, doing="delete"), Failure):
            return live
        gone = evolve(memory, deleted=True, deleted_at=self.clock.now())
        return self._save_metadata(gone).map(lambda _: gone)

    # --- status -----------------------------------------------------------------------------

    def status(
        self, *, store: str | None = None, namespace: Sequence[str] | None = None
    ) -> Result[Status, DomainError]:
        """Reach the backend, count the store's live memories (and its soft-deleted and expired ones beside
        them) and verify the indexes.

        Under a namespace only its memories are counted, and the store-wide checks (whose findings name other
        tenants' files and counts) are left to the operator."""
        name = store or self.policy.default_store
        return self._guard(namespace).bind(
            lambda guard: self.catalog.health().bind(
                lambda location: self._open(name, create=False).bind(
                    lambda opened: (
                        self._verified(opened, name, location)
                        if guard is None
                        else self._census(opened, guard).map(
                            lambda census: _status(self.catalog.backend, name, census, location, ())
                        )
                    )
                )
            )
        )

    def _verified(self, opened: VectorStore, name: str, location: Mapping[str, str]) -> Result[Status, DomainError]:
        """The store's status; with damage found, counts cannot agree until it is fixed, so only the damage is said."""
        return Result.do(
            _status(self.catalog.backend, name, census, location, damage or self._problems(name, count, model))
            for count in opened.count()
            for census in self._census(opened, None)
            for model in opened.embedding_model()
            for damage in opened.problems()
        )

    def _census(self, opened: VectorStore, guard: Guard) -> Result[Census, DomainError]:
        """How many of the store's (or the namespace's) memories are live, soft-deleted, expired."""
        now = self.clock.now()

        def tally(memories: list[Memory]) -> Census:
            deleted = sum(1 for m in memories if m.deleted)
            expired = sum(1 for m in memories if not m.deleted and m.is_expired(now))
            return Census(len(memories) - deleted - expired, deleted, expired)

        return opened.scan(MemoryFilter(include_deleted=True, namespace=guard)).map(tally)

    def _problems(self, store: str, count: int, model: str | None) -> tuple[str, ...]:
        """What is out of step in a readable store, each with what to run."""
        repair = (
            f"run `memory reindex --store {store}`" if store != self.policy.default_store else "run `memory reindex`"
        )
        found: list[str] = []
        if model is not None and model != self.embedder.name:
            found.append(f"The store was embedded with '{model}' but '{self.embedder.name}' is configured: {repair}.")
        if self.keywords is not None:
            match self.keywords.count(store):
                case Success(indexed) if indexed != count:
                    found.append(f"The keyword index holds {indexed} of the {count} memories: {repair}.")
                case Failure(error):
                    found.append(f"The keyword index cannot be read ({error.cause or error.message}): {repair}.")
        return tuple(found)


@frozen(kw_only=True)
class _SearchPlan:
    mode: SearchMode
    query: str
    store: str
    limit: int
    floor: float
    where: MemoryFilter

    @property
    def thread_prefix(self) -> str | None:
        """The keyword side's restriction to the filter's namespace (None: the whole store)."""
        return thread_of(self.where.namespace) if self.where.namespace else None


def parse_mode(raw: str) -> SearchMode:
    try:
        return SearchMode(str(raw).strip().lower())
    except ValueError:
        names = ", ".join(m.value for m in SearchMode)
        raise InvalidValue(f"Unknown search mode {raw!r}: use one of {names}.") from None


def _status(backend: str, store: str, census: Census, location: Mapping[str, str], problems: tuple[str, ...]) -> Status:
    return Status(backend, store, census.live, location, problems, census.deleted, census.expired)


def _undo_add(store: VectorStore, memories: Sequence[Memory], error: DomainError) -> Result[None, DomainError]:
    """A batch the keyword index refused is taken back out of the store: it lands whole or not at all."""
    undone = store.remove([m.id for m in memories])
    kept = "" if isinstance(undone, Success) else " Some of them may be stored: run `memory reindex`."
    return Failure(evolve(error, message=f"{error.message} Nothing was stored.{kept}"))
