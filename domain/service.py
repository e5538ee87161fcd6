"""The service: the ports and policy a handler runs on (its `context`), and each use case by name, dispatched."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TypeVar

from attrs import evolve, field, frozen
from returns.result import Failure, Result

from agent_memory.domain import commands as c
from agent_memory.domain.batches import InProcessJournal, InProcessKeys
from agent_memory.domain.context import Context, SearchPolicy
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.locks import ThreadWriteLocks
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import (
    BatchJournal,
    Clock,
    Embedder,
    IdempotencyKeys,
    KeywordIndex,
    PartVectors,
    RefereedCommits,
    StoreCatalog,
    WriteLocks,
)
from agent_memory.domain.results import validated
from agent_memory.domain.tenancy import Guard, check_pin
from agent_memory.domain.views import (
    CategorySummary,
    Export,
    ImportReport,
    Listing,
    MemoryView,
    Progress,
    PruneReport,
    ReindexReport,
    SearchResults,
    Status,
    StoreOutline,
    StoreSummary,
    quiet,
)

__all__ = ["MemoryService", "SearchPolicy"]

T = TypeVar("T")


@frozen(kw_only=True)
class MemoryService:
    """The use cases over the ports. Every method returns a Result; none raises for bad input.

    A door hands commands to `dispatch(service, command)` (domain/dispatch.py), which runs the command's handler
    on the one `Context` (the ports, the policy and the pin) built from these fields; the named methods below
    build a command and do the same, for Python callers.
    """

    catalog: StoreCatalog
    embedder: Embedder
    clock: Clock
    policy: SearchPolicy = field(factory=SearchPolicy)
    keywords: KeywordIndex | None = None
    locks: WriteLocks = field(factory=ThreadWriteLocks)
    journal: BatchJournal = field(factory=InProcessJournal)
    parts: PartVectors | None = None  # long memories' later parts (None: found by their first window only)
    keys: IdempotencyKeys = field(factory=InProcessKeys)  # creates a caller may retry (domain.idempotency)
    referee: RefereedCommits | None = None  # creates that only add commit without the write lock (a server engine)
    tenant: Guard = None
    context: Context = field(init=False, repr=False, eq=False)

    @context.default
    def _build_context(self) -> Context:
        return Context(
            catalog=self.catalog,
            embedder=self.embedder,
            clock=self.clock,
            policy=self.policy,
            keywords=self.keywords,
            locks=self.locks,
            tenant=self.tenant,
            journal=self.journal,
            parts=self.parts,
            keys=self.keys,
            referee=self.referee,
        )

    def within(self, namespace: Sequence[str] | None) -> Result[MemoryService, DomainError]:
        """The same service pinned to a namespace: every use case then acts only on it and those below it,
        whatever namespace a caller gives (a caller may narrow it, never leave it). None keeps this service;
        an empty namespace is refused, and a pinned service can only be pinned further down."""
        if namespace is None:
            return Result.from_value(self)
        return validated(lambda: check_pin(namespace)).bind(
            lambda pin: self.context.guard(pin).map(lambda guard: evolve(self, tenant=guard))
        )

    def dispatch(self, command: c.Asks[T]) -> Result[T, DomainError]:
        """Run a command's handler on this service (the same as `dispatch(service, command)`)."""
        return dispatch(self, command)

    # --- the use cases by name, each a command dispatched (for Python callers and tests) -----------------------

    def create(self, command: c.CreateMemory) -> Result[MemoryView, DomainError]:
        """Store a new memory (at its path, which must be free, when it has one)."""
        return dispatch(self, command)

    def create_many(
        self, commands: Sequence[c.CreateMemory], *, progress: Progress = quiet
    ) -> Result[builtins.list[MemoryView], DomainError]:
        """Store a batch: all validated before any is written, each store's part as one unit; `progress` hears
        (embedded, total) after each slice."""
        return dispatch(self, c.CreateMemories(memories=tuple(commands), progress=progress))

    def add(self, command: c.CreateMemory) -> Result[MemoryView, DomainError]:
        """Create a memory at its path, which must be given and free."""
        if command.path is None:
            return Failure(invalid_input("add needs a path like 'category/slug'."))
        return dispatch(self, command)

    def update(self, command: c.UpdateMemory) -> Result[MemoryView, DomainError]:
        return dispatch(self, command)

    def search(self, command: c.SearchMemories) -> Result[SearchResults, DomainError]:
        return dispatch(self, command)

    def move(
        self,
        ref: str,
        destination: str,
        *,
        store: str | None = None,
        namespace: tuple[str, ...] | None = None,
        include_expired: bool = False,
    ) -> Result[MemoryView, DomainError]:
        moved = c.MoveMemory(
            ref=ref, destination=destination, store=store, namespace=namespace, include_expired=include_expired
        )
        return dispatch(self, moved)

    def reinforce(
        self, ref: str, *, store: str | None = None, namespace: tuple[str, ...] | None = None
    ) -> Result[MemoryView, DomainError]:
        return dispatch(self, c.ReinforceMemory(ref=ref, store=store, namespace=namespace))

    def delete(
        self,
        ref: str,
        *,
        store: str | None = None,
        namespace: tuple[str, ...] | None = None,
        include_expired: bool = False,
    ) -> Result[Memory, DomainError]:
        return dispatch(
            self, c.DeleteMemory(ref=ref, store=store, namespace=namespace, include_expired=include_expired)
        )

    def restore(
        self, ref: str, *, store: str | None = None, namespace: tuple[str, ...] | None = None
    ) -> Result[MemoryView, DomainError]:
        """Undo a soft delete: the memory (by id or path) is live again with its id and every field."""
        return dispatch(self, c.RestoreMemory(ref=ref, store=store, namespace=namespace))

    def remove(
        self, ref: str, *, store: str | None = None, namespace: tuple[str, ...] | None = None
    ) -> Result[Memory, DomainError]:
        return dispatch(self, c.RemoveMemory(ref=ref, store=store, namespace=namespace))

    def get(
        self,
        ref: str,
        *,
        store: str | None = None,
        include_expired: bool = False,
        namespace: tuple[str, ...] | None = None,
    ) -> Result[MemoryView, DomainError]:
        return dispatch(self, c.GetMemory(ref=ref, store=store, include_expired=include_expired, namespace=namespace))

    def recent(
        self,
        *,
        store: str | None = None,
        limit: int = 5,
        category: str | None = None,
        include_expired: bool = False,
        namespace: tuple[str, ...] | None = None,
    ) -> Result[tuple[MemoryView, ...], DomainError]:
        asked = c.RecentMemories(
            store=store, limit=limit, category=category, include_expired=include_expired, namespace=namespace
        )
        return dispatch(self, asked)

    def list_stores(self, *, namespace: tuple[str, ...] | None = None) -> Result[tuple[StoreSummary, ...], DomainError]:
        return dispatch(self, c.ListStores(namespace=namespace))

    def create_store(self, name: str) -> Result[StoreSummary, DomainError]:
        return dispatch(self, c.CreateStore(name=name))

    def create_category(
        self,
        category: str,
        *,
        description: str = "",
        store: str | None = None,
        namespace: tuple[str, ...] | None = None,
    ) -> Result[CategorySummary, DomainError]:
        made = c.CreateCategory(category=category, description=description, store=store, namespace=namespace)
        return dispatch(self, made)

    def describe_category(
        self, category: str, description: str, *, store: str | None = None, namespace: tuple[str, ...] | None = None
    ) -> Result[CategorySummary, DomainError]:
        described = c.DescribeCategory(category=category, description=description, store=store, namespace=namespace)
        return dispatch(self, described)

    def delete_category(
        self,
        category: str,
        *,
        store: str | None = None,
        namespace: tuple[str, ...] | None = None,
        purge: bool = False,
    ) -> Result[CategorySummary, DomainError]:
        """Soft-delete a category's memories (restorable), or with purge remove them for good; memory_count: how many."""
        return dispatch(self, c.DeleteCategory(category=category, store=store, namespace=namespace, purge=purge))

    def status(
        self, *, store: str | None = None, namespace: tuple[str, ...] | None = None
    ) -> Result[Status, DomainError]:
        return dispatch(self, c.StoreStatus(store=store, namespace=namespace))

    def prune(
        self, *, store: str | None = None, dry_run: bool = False, namespace: tuple[str, ...] | None = None
    ) -> Result[PruneReport, DomainError]:
        return dispatch(self, c.PruneMemories(store=store, dry_run=dry_run, namespace=namespace))

    def reindex(self, *, store: str | None = None, progress: Progress = quiet) -> Result[ReindexReport, DomainError]:
        """Re-embed every memory of the store; `progress` hears (embedded, total) after each slice."""
        return dispatch(self, c.ReindexStore(store=store, progress=progress))

    def export(self, *, stores: Sequence[str] | None = None) -> Result[builtins.list[Memory], DomainError]:
        """Every memory of the given stores (all when None), soft-deleted and expired ones too."""
        return self._exported(stores).map(lambda exported: builtins.list(exported.memories))

    def export_outlines(
        self, *, stores: Sequence[str] | None = None
    ) -> Result[builtins.list[StoreOutline], DomainError]:
        """Every given store (all when None) with its registered categories and their descriptions."""
        return self._exported(stores).map(lambda exported: builtins.list(exported.outlines))

    def _exported(self, stores: Sequence[str] | None) -> Result[Export, DomainError]:
        return dispatch(self, c.ExportMemories(stores=None if stores is None else tuple(stores)))

    def import_outlines(self, outlines: Sequence[StoreOutline]) -> Result[int, DomainError]:
        """Create each store and register its categories with their descriptions; idempotent. The stores made."""
        return dispatch(self, c.ImportMemories(outlines=tuple(outlines))).map(lambda report: report.stores)

    def import_memories(
        self, memories: Sequence[Memory], *, progress: Progress = quiet
    ) -> Result[ImportReport, DomainError]:
        """Write memories exactly as given (ids, timestamps, flags); an id already present is replaced."""
        return dispatch(self, c.ImportMemories(memories=tuple(memories), progress=progress))

    def list(
        self,
        category: str | None = None,
        *,
        store: str | None = None,
        include_expired: bool = False,
        namespace: tuple[str, ...] | None = None,
        limit: int | None = None,
        offset: int = 0,
        include_deleted: bool = False,
    ) -> Result[Listing, DomainError]:
        listed = c.ListMemories(
            category=category,
            store=store,
            include_expired=include_expired,
            include_deleted=include_deleted,
            namespace=namespace,
            limit=limit,
            offset=offset,
        )
        return dispatch(self, listed)
