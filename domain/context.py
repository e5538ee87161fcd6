"""What every use case shares: the ports and policy it runs on (`Context`), its common steps, loading by reference."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from attrs import evolve, field, frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.batches import InProcessJournal, InProcessKeys
from agent_memory.domain.decay import DEFAULT_DECAY_WINDOW_HOURS, confidence
from agent_memory.domain.duplicates import DuplicatePolicy
from agent_memory.domain.empty_store import EmptyStore
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue, not_found
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DEFAULT_STORE, Memory, check_memory_id, check_store_name
from agent_memory.domain.paths import CategoryPath, MemoryPath, parse_category_path, parse_memory_path
from agent_memory.domain.ports import (
    BatchJournal,
    CategoryRegistry,
    Clock,
    Embedder,
    IdempotencyKeys,
    KeywordEntry,
    KeywordIndex,
    PartVectors,
    PendingBatch,
    StoreCatalog,
    VectorStore,
    WriteLocks,
)
from agent_memory.domain.results import in_turn, validated
from agent_memory.domain.search.relevance import UNCALIBRATED, RelevanceRule
from agent_memory.domain.tenancy import Guard, narrow, visible
from agent_memory.domain.thread_keys import thread_key
from agent_memory.domain.views import Census, MemoryView

T = TypeVar("T")
_PATH_SCANS = 8  # above this many paths in one batch, one scan of the store beats a scan per path


Place = tuple[tuple[str, ...], MemoryPath]  # paths are unique per namespace: (namespace, path)


def _none_taken(
    found: Sequence[Sequence[Memory]], owners: Mapping[Place, str], ids: set[str]
) -> Result[None, DomainError]:
    for other in (memory for group in found for memory in group):
        if other.path is not None and (other.namespace, other.path) in owners and other.id not in ids:
            return Failure(_taken(other.path, "a memory is already there"))
    return Success(None)


def _taken(path: MemoryPath, why: str) -> DomainError:
    return DomainError(
        ErrorCode.DESTINATION_EXISTS,
        f"Path '{path}' is taken ({why}): update that memory, or choose another path.",
        path=str(path),
    )


def optional_path(raw: str | None) -> Result[MemoryPath | None, DomainError]:
    return Success(None) if raw is None else parse_memory_path(raw).map(lambda path: path)


def optional_category(raw: str | None) -> Result[CategoryPath | None, DomainError]:
    return Success(None) if raw is None else parse_category_path(raw).map(lambda path: path)


def is_memory_id(ref: str) -> bool:
    try:
        check_memory_id(ref)
    except InvalidValue:
        return False
    return True


def _inside(memory: Memory, guard: Guard) -> Result[Memory, DomainError]:
    return Success(memory) if visible(memory, guard) else Failure(not_found(memory.id))


def _path_like(ref: str) -> bool:
    """A ref with a separator or a dot segment is a path, so a bad one is INVALID_PATH (traversal, say)."""
    return any(mark in ref for mark in ("/", "\\", ".."))


EMPTY_REF = "The memory reference is empty: give a memory id (a UUID) or its path, such as 'category/slug'."


def _neither(ref: str, error: DomainError) -> DomainError:
    return not_found(str(ref), cause=f"{ref!r} is neither a memory id (UUID) nor a path: {error.message}")


def _one_at(path: MemoryPath, found: Sequence[Memory], guard: Guard) -> Result[Memory, DomainError]:
    """The memory a path names within a guard: the one in the guard's own namespace, else the only one below it."""
    home = guard or ()
    exact = [m for m in found if m.namespace == home]
    if exact or len(found) == 1:
        return Success((exact or list(found))[0])
    if not found:
        return Failure(not_found(str(path)))
    spaces = ", ".join(sorted({"/".join(m.namespace) or "(none)" for m in found}))
    return Failure(
        DomainError(
            ErrorCode.INVALID_INPUT,
            f"Several memories are at '{path}', in namespaces {spaces}: give the namespace, or use the id.",
            path=str(path),
        )
    )


def under(known: str, category: CategoryPath) -> bool:
    """Whether a category path (as text) is the category or one below it."""
    prefix = str(category)
    return known == prefix or known.startswith(prefix + "/")


def keyword_entry(memory: Memory) -> KeywordEntry:
    """What the keyword index sees: the content plus the path's words and the tags, in the memory's thread."""
    extras = [*(memory.path.segments if memory.path else ()), *memory.tags]
    text = memory.content if not extras else memory.content + "\n" + " ".join(extras).replace("-", " ")
    return KeywordEntry(memory.id, text, thread_key(memory), alone=not memory.thread)


_TAKEN_BACK = (
    "The storage server stopped answering a write after it was sent; the write was then taken back out, so nothing "
    "was stored. Try again."
)


def _left_over(store: VectorStore, batch: PendingBatch) -> str:
    """What a failed batch whose rollback failed too (a full disk, say) left in the store, read back: often nothing
    (the write failed before anything was stored), else exactly how much, which the next open takes back out."""
    replaced = {memory.id: memory for memory in batch.replaced}
    match store.get([*batch.created, *replaced]):
        case Success(found):
            now = {memory.id: memory for memory in found}
        case _:
            return " Part of the batch may be stored until the store is next opened, which takes it back out."
    created = [memory_id for memory_id in batch.created if memory_id in now]
    changed = [memory_id for memory_id, before in replaced.items() if now.get(memory_id) != before]
    if not created and not changed:
        return " Nothing was stored."
    said = []
    if created:
        shown = ", ".join(created[:5]) + (", …" if len(created) > 5 else "")
        said.append(f"{len(created)} of its {len(batch.created)} new memories ({shown}) are stored")
    if changed:
        said.append(f"{len(changed)} of the {len(replaced)} memories it replaces are changed")
    return f" {' and '.join(said)} until the store is next opened, which takes the batch back out."


@frozen(kw_only=True)
class SearchPolicy:
    """The tunable rules of search and decay (decisions 5 and 7)."""

    decay_window_hours: float = DEFAULT_DECAY_WINDOW_HOURS
    min_confidence: float = 0.3
    # the relevance floor (domain.search.searching): 0, none, unless the composition root sets the one calibrated for its
    # model (settings' min_similarity, hybrid.MIN_SIMILARITY): a similarity's scale is the embedder's own
    min_similarity: float = 0.0
    # the embedder's own relevance rule (domain.search.relevance): which hits an answer keeps and the figure each
    # shows; the composition root hands over the model directory's, UNCALIBRATED when it carries none
    relevance: RelevanceRule = UNCALIBRATED
    # near-duplicates at the door (domain.duplicates): the similarity at and over which a new memory says what one
    # of its scope says (the model directory's calibrated one, or the duplicate_similarity setting; None: no check),
    # and what a create does about it when the call does not say
    duplicate_similarity: float | None = None
    on_duplicate: DuplicatePolicy = DuplicatePolicy.KEEP
    default_limit: int = 10
    default_store: str = DEFAULT_STORE
    # hybrid search's learnt second stage (domain.search.reranking); False: the first stage's ranking, as it was
    # before the ranker (an A/B switch: bench/feedback_latency.py --stage rerank)
    rerank: bool = True


@frozen(kw_only=True)
class Context:
    """The ports and policy one service runs on, with the steps its use cases share; each use case unit holds one."""

    catalog: StoreCatalog
    embedder: Embedder
    clock: Clock
    policy: SearchPolicy
    keywords: KeywordIndex | None
    locks: WriteLocks
    tenant: Guard  # the namespace a pinned service is confined to (None: not pinned)
    journal: BatchJournal = field(factory=InProcessJournal)
    # long memories' later parts (Embedder.embed_parts), kept in step wherever the keyword index is (None: a
    # memory is found by its first window only, as before parts existed)
    parts: PartVectors | None = None
    keys: IdempotencyKeys = field(factory=InProcessKeys)  # creates a caller may retry (domain.idempotency)

    def guard(self, namespace: Sequence[str] | None) -> Result[Guard, DomainError]:
        """The namespace this call may act in: the caller's narrowing of the service's pin (domain.tenancy)."""
        return narrow(self.tenant, namespace)

    def exclusive(self, store: str | None, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        """Run a change to one store (the configured one by default) while no other change to it runs."""
        return validated(lambda: check_store_name(store or self.policy.default_store)).bind(
            lambda name: self.locks.exclusive(name, work)
        )

    def open(self, name: str | None, *, create: bool) -> Result[VectorStore, DomainError]:
        """A store by name (the configured one by default). Only writers create: a reader of a missing store
        gets STORE_NOT_FOUND, except for the built-in default store, which reads as empty until written.

        A batch its writer left unfinished (killed mid-write) is rolled back first; a rollback that fails
        now (a full disk, say) is tried again at the next open, and the store is still read."""
        return validated(lambda: check_store_name(name or self.policy.default_store)).bind(
            lambda store_name: (
                self.recover(store_name)
                .lash(lambda _: Success(()))
                .bind(lambda _: self._open_checked(store_name, create=create))
            )
        )

    # --- batches: whole or not at all -------------------------------------------------------------------------

    def whole(
        self, store: VectorStore, pending: PendingBatch, write: Callable[[], Result[T, DomainError]]
    ) -> Result[T, DomainError]:
        """Run a batch's writes to one store as one unit: journaled before the first write, committed after the
        last; a failure (or a refused commit) rolls back what was written. Call it under the store's write lock."""
        return (
            self.journal.begin(pending)
            .lash(lambda error: Failure(evolve(error, message=f"{error.message} Nothing was stored.")))  # not begun
            .bind(
                lambda begun: (
                    write()
                    .lash(lambda error: self._undone(store, begun, error))
                    .bind(
                        lambda value: (
                            self.journal.commit(begun)
                            .map(lambda _: value)
                            .lash(lambda error: self._undone(store, begun, error))
                        )
                    )
                )
            )
        )

    def _undone(self, store: VectorStore, batch: PendingBatch, error: DomainError) -> Result[T, DomainError]:
        undone = self.roll_back(store, batch)
        if error.code is ErrorCode.OUTCOME_UNKNOWN and isinstance(undone, Success):  # known after all: not stored
            return Failure(evolve(error, code=ErrorCode.BACKEND_UNAVAILABLE, message=_TAKEN_BACK))
        said = undone.map(lambda _: " Nothing was stored.").value_or(_left_over(store, batch))
        return Failure(evolve(error, message=f"{error.message}{said}"))

    def roll_back(self, store: VectorStore, batch: PendingBatch) -> Result[None, DomainError]:
        """Take a batch back out: its new ids removed, the memories it replaced put back as they were (re-embedded),
        the keyword index in step; then the journal forgets it (or, when that fails, keeps it for the next open)."""
        replaced = list(batch.replaced)
        ids = [*batch.created, *(memory.id for memory in replaced)]
        undone = (
            store.remove(ids)
            .bind(lambda _: self._restored(store, replaced))
            .bind(lambda _: self._words_back(batch.store, ids, replaced))
        )
        return undone.bind(lambda _: self.journal.drop(batch)).lash(
            lambda error: self.journal.release(batch).bind(lambda _: Failure(error))
        )

    def _restored(self, store: VectorStore, memories: list[Memory]) -> Result[None, DomainError]:
        if not memories:
            return Success(None)
        return self.embedder.embed_documents([m.content for m in memories]).bind(
            lambda vectors: store.add(memories, vectors)
        )

    def _words_back(self, store: str, ids: list[str], replaced: list[Memory]) -> Result[None, DomainError]:
        """The keyword index in step with a rolled-back batch; an index that refuses (damaged, say) is left for
        `status` to report and `reindex` to repair: the store's records are what the rollback must settle."""
        return (
            self.unindex_keywords(store, ids)
            .bind(lambda _: self.index_keywords(store, replaced))
            .lash(lambda _: Success(None))
        )

    def recover(self, store_name: str) -> Result[tuple[PendingBatch, ...], DomainError]:
        """Roll back every batch of the store whose writer died mid-write (under its write lock); the batches
        rolled back. Without such a batch this only looks (a read creates nothing)."""

        def settle() -> Result[tuple[PendingBatch, ...], DomainError]:
            return self.journal.interrupted(store_name).bind(lambda found: self._rolled_back(store_name, found))

        return self.journal.interrupted(store_name).bind(
            lambda found: self.locks.exclusive(store_name, settle) if found else Success(())
        )

    def _rolled_back(
        self, store_name: str, found: tuple[PendingBatch, ...]
    ) -> Result[tuple[PendingBatch, ...], DomainError]:
        if not found:
            return Success(())
        opened = self.catalog.open(store_name, create=False)
        return (
            opened.bind(lambda store: in_turn(found, lambda batch: self.roll_back(store, batch)))
            .lash(  # no store: the batch was never written (its store is made before the journal is begun)
                lambda error: (
                    in_turn(found, self.journal.drop) if error.code is ErrorCode.STORE_NOT_FOUND else Failure(error)
                )
            )
            .map(lambda _: found)
        )

    def _open_checked(self, store_name: str, *, create: bool) -> Result[VectorStore, DomainError]:
        opened = self.catalog.open(store_name, create=create)
        if create or store_name != DEFAULT_STORE:
            return opened
        return opened.lash(
            lambda error: Success(EmptyStore()) if error.code is ErrorCode.STORE_NOT_FOUND else Failure(error)
        )

    def paths_free(self, store: VectorStore, memories: Sequence[Memory]) -> Result[VectorStore, DomainError]:
        """DESTINATION_EXISTS unless every live memory of the batch has a path no other live memory of its
        namespace holds (paths are unique per namespace: tenants never learn of each other's paths).

        A batch may replace memories by id (import): a path held by one of the batch's own ids is free.
        """
        placed = [m for m in memories if m.path is not None and not m.deleted]
        if not placed:
            return Success(store)
        owners: dict[Place, str] = {}
        for memory in placed:
            assert memory.path is not None  # for the type checker: filtered above
            if owners.setdefault((memory.namespace, memory.path), memory.id) != memory.id:
                return Failure(_taken(memory.path, "the batch holds two memories"))
        ids = {m.id for m in memories}
        # a few paths: one exact scan each; many: one scan of the store's live memories
        scans = (
            [store.scan(MemoryFilter(path=path, namespace=namespace)) for namespace, path in owners]
            if len(owners) <= _PATH_SCANS
            else [store.scan(MemoryFilter())]
        )
        return Fold.collect(scans, Success(())).bind(lambda found: _none_taken(found, owners, ids)).map(lambda _: store)

    def census(self, opened: VectorStore, guard: Guard) -> Result[Census, DomainError]:
        """How many of the store's (or the namespace's) memories are live, soft-deleted, expired."""
        return opened.scan(MemoryFilter(include_deleted=True, namespace=guard)).map(self.tally)

    def tally(self, memories: Sequence[Memory]) -> Census:
        """How many of these memories are live, soft-deleted, expired (now)."""
        now = self.clock.now()
        deleted = sum(1 for m in memories if m.deleted)
        expired = sum(1 for m in memories if not m.deleted and m.is_expired(now))
        return Census(len(memories) - deleted - expired, deleted, expired)

    def registry(self, store: str) -> Result[CategoryRegistry, DomainError]:
        """A store's category registry."""
        return validated(lambda: check_store_name(store)).bind(self.catalog.categories)

    def descriptions(self, store: str, guard: Guard = None) -> Result[Mapping[str, str], DomainError]:
        """The store's registered categories; none under a namespace (they belong to no tenant)."""
        if guard is not None:
            return Success({})
        described = self.registry(store).bind(lambda registry: registry.describe_all())
        if store != DEFAULT_STORE:
            return described
        # the built-in store reads as empty until written (see open)
        return described.lash(lambda error: Success({}) if error.code is ErrorCode.STORE_NOT_FOUND else Failure(error))

    def check_model(self, store: VectorStore) -> Result[VectorStore, DomainError]:
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

    def load_any(self, memory_id: str, store: str | None) -> Result[Memory, DomainError]:
        """A memory by id, soft-deleted ones included, whatever its namespace."""
        return validated(lambda: check_memory_id(memory_id)).bind(lambda canonical: self._load_id(canonical, store))

    def _load_id(self, canonical: str, store: str | None) -> Result[Memory, DomainError]:
        found = Result.do(memories for opened in self.open(store, create=False) for memories in opened.get([canonical]))
        return found.bind(lambda memories: Success(memories[0]) if memories else Failure(not_found(canonical)))

    def load_live(
        self,
        ref: str,
        store: str | None,
        *,
        include_expired: bool,
        namespace: Sequence[str] | None = None,
        doing: str = "read",
    ) -> Result[Memory, DomainError]:
        """A memory by id or path that is neither soft-deleted nor (unless asked) expired; `doing` words the refusal."""
        return self.load_ref(ref, store, namespace=namespace).bind(
            lambda memory: self.readable(memory, include_expired=include_expired, doing=doing)
        )

    def save_metadata(self, memory: Memory) -> Result[None, DomainError]:
        return self.open(memory.store, create=False).bind(lambda s: s.update_metadata([memory]))

    def confidence_now(self, memory: Memory) -> float:
        return confidence(memory, self.clock.now(), self.policy.decay_window_hours)

    def view(self, memory: Memory) -> MemoryView:
        return MemoryView(memory, self.confidence_now(memory))

    def index_keywords(self, store: str, memories: Sequence[Memory]) -> Result[None, DomainError]:
        """Keep the keyword index and the long memories' parts in step after a write (no-op without them)."""
        return self.index_words(store, memories).bind(lambda _: self.index_parts(store, memories))

    def index_words(self, store: str, memories: Sequence[Memory]) -> Result[None, DomainError]:
        if self.keywords is None or not memories:
            return Success(None)
        return self.keywords.upsert(store, [keyword_entry(m) for m in memories])

    def index_parts(self, store: str, memories: Sequence[Memory]) -> Result[None, DomainError]:
        """Each memory's later parts, replacing what it had: none for one within the model's window (a lookup
        only, that drops the parts it had if an update shortened it)."""
        parts = self.parts
        if parts is None or not memories:
            return Success(None)
        return self.embedder.embed_parts([m.content for m in memories]).bind(
            lambda vectors: parts.put(store, {m.id: v for m, v in zip(memories, vectors, strict=True)})
        )

    def reindex_words(self, before: Memory, after: Memory) -> Result[None, DomainError]:
        """Re-index a memory whose indexed words (content, tags, path) or thread (scope) changed; its parts are
        embedded again only when its content changed."""
        old, new = keyword_entry(before), keyword_entry(after)
        if old.thread != new.thread:  # another scope: it leaves its old neighbours and joins the new thread's end
            words = self.unindex_words(after.store, [after.id]).bind(lambda _: self.index_words(after.store, [after]))
        elif old.text == new.text:
            words = Success(None)
        else:
            words = self.index_words(after.store, [after])
        if before.content == after.content:
            return words
        return words.bind(lambda _: self.index_parts(after.store, [after]))

    def unindex_keywords(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        """Forget memories in the keyword index and their parts."""
        parts = self.parts
        return self.unindex_words(store, ids).bind(
            lambda _: Success(None) if parts is None or not ids else parts.remove(store, ids)
        )

    def unindex_words(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        if self.keywords is None or not ids:
            return Success(None)
        return self.keywords.remove(store, ids)

    def load_ref(
        self, ref: str, store: str | None, *, namespace: Sequence[str] | None = None
    ) -> Result[Memory, DomainError]:
        """A memory by id (a UUID) or path (anything else), soft-deleted ones included.

        Within the call's guard (the service's pin, narrowed by `namespace`): a memory outside it (or its
        sub-namespaces) is not found, by id or by path, so tenants never reach each other's memories.
        """
        return self.guard(namespace).bind(lambda guard: self._load_guarded(ref, store, guard))

    def _load_guarded(self, ref: str, store: str | None, guard: Guard) -> Result[Memory, DomainError]:
        if not ref.strip():  # a mistake in the call, not a memory that is missing
            return Failure(DomainError(ErrorCode.INVALID_INPUT, EMPTY_REF, path=ref))
        if is_memory_id(ref):
            return self.load_any(ref, store).bind(lambda memory: _inside(memory, guard))
        return (
            parse_memory_path(ref)
            .alt(lambda error: error if _path_like(ref) else _neither(ref, error))
            .bind(lambda path: self._load_path(path, store, guard))
        )

    def _load_path(self, path: MemoryPath, store: str | None, guard: Guard) -> Result[Memory, DomainError]:
        where = MemoryFilter(path=path, namespace=guard)
        return (
            self.open(store, create=False)
            .bind(lambda opened: opened.scan(where))
            .bind(lambda found: _one_at(path, [m for m in found if visible(m, guard)], guard))
        )

    def readable(self, memory: Memory, *, include_expired: bool, doing: str = "read") -> Result[Memory, DomainError]:
        if memory.deleted:
            return Failure(not_found(memory.id))
        return self.unexpired(memory, include_expired=include_expired, doing=doing)

    def unexpired(self, memory: Memory, *, include_expired: bool, doing: str) -> Result[Memory, DomainError]:
        """MEMORY_EXPIRED for a memory past its expiry, unless the caller said include_expired."""
        if include_expired or not memory.is_expired(self.clock.now()):
            return Success(memory)
        return Failure(
            DomainError(
                ErrorCode.MEMORY_EXPIRED,
                f"Memory expired: pass --include-expired to {doing} it anyway.",
                path=str(memory.path or memory.id),
            )
        )
