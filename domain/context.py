"""What every use case shares: the ports and policy it runs on (`Context`) and its common steps: opening a store, the
keyword index and parts kept in step. Loading by reference is domain/loading.py; batches, batch_units.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from attrs import field, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.batch_units import recover
from agent_memory.domain.batches import InProcessJournal, InProcessKeys
from agent_memory.domain.decay import DEFAULT_DECAY_WINDOW_HOURS, confidence
from agent_memory.domain.duplicates import DuplicatePolicy
from agent_memory.domain.empty_store import EmptyStore
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
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
    RefereedCommits,
    StoreCatalog,
    VectorStore,
    WriteLocks,
)
from agent_memory.domain.results import validated
from agent_memory.domain.search.relevance import UNCALIBRATED, RelevanceRule
from agent_memory.domain.tenancy import Guard, narrow
from agent_memory.domain.thread_keys import thread_key
from agent_memory.domain.views import Census, MemoryView

T = TypeVar("T")


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


def under(known: str, category: CategoryPath) -> bool:
    """Whether a category path (as text) is the category or one below it."""
    prefix = str(category)
    return known == prefix or known.startswith(prefix + "/")


def keyword_entry(memory: Memory) -> KeywordEntry:
    """What the keyword index sees: the content plus the path's words and the tags, in the memory's thread."""
    extras = [*(memory.path.segments if memory.path else ()), *memory.tags]
    text = memory.content if not extras else memory.content + "\n" + " ".join(extras).replace("-", " ")
    return KeywordEntry(memory.id, text, thread_key(memory), alone=not memory.thread)


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
    # a server engine's referee: creates that only add commit by its conditional writes, without the write lock
    # (domain.creating; None: every write runs under `locks`)
    referee: RefereedCommits | None = None

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
                recover(self, store_name)
                .lash(lambda _: Success(()))
                .bind(lambda _: self._open_checked(store_name, create=create))
            )
        )

    def open_to_read(self, name: str | None) -> Result[VectorStore, DomainError]:
        """A store to read, as `open(name, create=False)`; but where every read already leaves an unfinished
        batch's records out (BatchJournal.hides_unfinished: a server engine's commit marks), it rolls nothing back
        and so never lists the store's batches nor takes its write lock: recovering a dead writer's batch is for
        the store's writers, before their own commit."""
        if not self.journal.hides_unfinished:
            return self.open(name, create=False)
        return validated(lambda: check_store_name(name or self.policy.default_store)).bind(
            lambda store_name: self._open_checked(store_name, create=False)
        )

    def _open_checked(self, store_name: str, *, create: bool) -> Result[VectorStore, DomainError]:
        opened = self.catalog.open(store_name, create=create)
        if create or store_name != DEFAULT_STORE:
            return opened
        return opened.lash(
            lambda error: Success(EmptyStore()) if error.code is ErrorCode.STORE_NOT_FOUND else Failure(error)
        )

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

    def save_metadata(self, memory: Memory) -> Result[None, DomainError]:
        return self.save_changed(memory).map(lambda _: None)

    def save_changed(self, memory: Memory) -> Result[Memory, DomainError]:
        """Write a stored memory's changed fields; the memory as written (at the revision its write stored)."""
        return self.open(memory.store, create=False).bind(
            lambda s: s.update_metadata([memory]).map(lambda written: written[0])
        )

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
