"""The use cases of hierarchical memories (spec 002/004): paths, update, move, list, prune, categories, stores."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import evolve
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.base import UseCaseBase, attempt, keyword_entry, optional_category
from agent_memory.domain.commands import CreateMemory, UpdateMemory
from agent_memory.domain.errors import DomainError, ErrorCode, invalid_input
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DEFAULT_STORE, Memory, check_store_name, parse_decay_policy
from agent_memory.domain.paths import CategoryPath, MemoryPath, parse_category_path, parse_memory_path
from agent_memory.domain.ports import CategoryRegistry, VectorStore
from agent_memory.domain.tenancy import Guard, guarded_only, place
from agent_memory.domain.views import (
    CategorySummary,
    Listing,
    MemoryView,
    PruneReport,
    ReindexReport,
    StoreSummary,
)

MAX_RECENT = 100
MAX_DESCRIPTION = 500
REINDEX_BATCH = 256


class HierarchicalUseCases(UseCaseBase):
    """add, update, remove, move, list, recent, prune, reindex, categories and stores."""

    # create_many comes from ScopedUseCases; declared here so the mixin type-checks alone
    def create_many(self, commands: Sequence[CreateMemory]) -> Result[list[MemoryView], DomainError]:
        raise NotImplementedError  # pragma: no cover - provided by ScopedUseCases

    # --- add / update / remove / move ---------------------------------------------------------

    def add(self, command: CreateMemory) -> Result[MemoryView, DomainError]:
        """Create a memory at a path; the store and categories come into being as needed."""
        raw_path = command.path
        if raw_path is None:
            return Failure(invalid_input("add needs a path like 'category/slug'."))
        return self._exclusive(
            command.store,
            lambda: (
                place(self.tenant, command.namespace)
                .bind(lambda _: parse_memory_path(raw_path))
                # create_many refuses a taken path (per namespace) under the same lock: one check, not two
                .bind(lambda path: self.create_many([evolve(command, path=str(path))]))
                .map(lambda views: views[0])
            ),
        )

    def update(self, command: UpdateMemory) -> Result[MemoryView, DomainError]:
        """Change content or metadata; content changes are re-embedded. Nothing to change is an error."""
        changes = _changes(command)
        if isinstance(changes, Failure):
            return changes
        return self._exclusive(
            command.store,
            lambda: (
                changes.bind(
                    lambda fields: self._load_live(
                        command.ref,
                        command.store,
                        include_expired=command.include_expired,
                        namespace=command.namespace,
                        doing="update",
                    ).map(lambda memory: (memory, fields))
                )
                .bind(lambda pair: attempt(lambda: evolve(pair[0], **pair[1], updated_at=self.clock.now())))
                .bind(self._save_changed)
                .map(self._view)
            ),
        )

    def _save_changed(self, memory: Memory) -> Result[Memory, DomainError]:
        def save(store: VectorStore, before: Memory) -> Result[None, DomainError]:
            if before.content == memory.content:
                return store.update_metadata([memory]).bind(lambda _: self._reindex_words(before, memory))
            return (
                self.embedder.embed_documents([memory.content])
                .bind(lambda vectors: store.replace(memory, vectors[0]))
                .bind(lambda _: self._reindex_words(before, memory))
            )

        return (
            self._open(memory.store, create=False)
            .bind(lambda store: store.get([memory.id]).bind(lambda found: save(store, found[0])))
            .map(lambda _: memory)
        )

    def remove(
        self, ref: str, *, store: str | None = None, namespace: Sequence[str] | None = None
    ) -> Result[Memory, DomainError]:
        """Delete for good (MCP remove_memory), soft-deleted or not."""
        return self._exclusive(
            store,
            lambda: self._load_ref(ref, store, namespace=namespace).bind(
                lambda memory: (
                    self._open(memory.store, create=False)
                    .bind(lambda opened: opened.remove([memory.id]))
                    .bind(lambda _: self._unindex_keywords(memory.store, [memory.id]))
                    .map(lambda _: memory)
                )
            ),
        )

    def move(
        self,
        ref: str,
        destination: str,
        *,
        store: str | None = None,
        namespace: Sequence[str] | None = None,
        include_expired: bool = False,
    ) -> Result[MemoryView, DomainError]:
        """Give a memory a new path; DESTINATION_EXISTS if taken; moving onto itself changes nothing.

        An expired memory is MEMORY_EXPIRED unless include_expired (as for get)."""

        def relocate(memory: Memory, target: MemoryPath) -> Result[MemoryView, DomainError]:
            if memory.path == target:
                return Success(self._view(memory))
            moved = evolve(memory, path=target, updated_at=self.clock.now())
            return (
                self._open(memory.store, create=False)
                .bind(lambda opened: self._paths_free(opened, [moved]))
                .bind(lambda opened: opened.update_metadata([moved]))
                .bind(lambda _: self._reindex_words(memory, moved))
                .map(lambda _: self._view(moved))
            )

        return self._exclusive(
            store,
            lambda: parse_memory_path(destination).bind(
                lambda target: self._load_live(
                    ref, store, include_expired=include_expired, namespace=namespace, doing="move"
                ).bind(lambda memory: relocate(memory, target))
            ),
        )

    # --- list / recent / prune ----------------------------------------------------------------

    def list(
        self,
        category: str | None = None,
        *,
        store: str | None = None,
        include_expired: bool = False,
        namespace: Sequence[str] | None = None,
    ) -> Result[Listing, DomainError]:
        """A category's memories (recursively) and direct subcategories with counts and descriptions.

        Under a namespace, only its memories and the categories their paths make (the store's registered
        categories and descriptions belong to no tenant, so they are not shown)."""
        return self._guard(namespace).bind(
            lambda guard: optional_category(category).bind(
                lambda parsed: self._listing(parsed, store, include_expired=include_expired, guard=guard)
            )
        )

    def _listing(
        self,
        category: CategoryPath | None,
        store: str | None,
        *,
        include_expired: bool,
        guard: Guard,
    ) -> Result[Listing, DomainError]:
        name = store or self.policy.default_store
        where = MemoryFilter(
            path_prefix=category, alive_at=None if include_expired else self.clock.now(), namespace=guard
        )
        return (
            self._open(name, create=False)
            .bind(lambda opened: opened.scan(where))
            .bind(
                lambda memories: self._descriptions(name, guard).bind(
                    lambda described: _assemble_listing(category, memories, described, self._view)
                )
            )
        )

    def recent(
        self,
        *,
        store: str | None = None,
        limit: int = 5,
        category: str | None = None,
        include_expired: bool = False,
        namespace: Sequence[str] | None = None,
    ) -> Result[tuple[MemoryView, ...], DomainError]:
        """The most recently updated memories, newest first (limit 1–100, default 5)."""
        if not 1 <= limit <= MAX_RECENT:
            return Failure(invalid_input(f"limit must be between 1 and {MAX_RECENT}, got {limit}."))
        return self.list(category, store=store, include_expired=include_expired, namespace=namespace).map(
            lambda listing: listing.memories[:limit]
        )

    def prune(
        self, *, store: str | None = None, dry_run: bool = False, namespace: Sequence[str] | None = None
    ) -> Result[PruneReport, DomainError]:
        """Remove every expired memory (of the namespace, under one) for good; a dry run only lists them."""
        now = self.clock.now()

        def expired_ones(opened: VectorStore) -> Result[PruneReport, DomainError]:
            def report(memories: list[Memory]) -> Result[PruneReport, DomainError]:
                expired = tuple(m for m in memories if m.is_expired(now))
                if dry_run or not expired:
                    return Success(PruneReport(dry_run, expired))
                ids = [m.id for m in expired]
                return (
                    opened.remove(ids)
                    .bind(lambda _: self._unindex_keywords(expired[0].store, ids))
                    .map(lambda _: PruneReport(False, expired))
                )

            return (
                self._guard(namespace)
                .bind(lambda guard: opened.scan(MemoryFilter(include_deleted=True, namespace=guard)))
                .bind(report)
            )

        return self._exclusive(store, lambda: self._open(store, create=False).bind(expired_ones))

    def reindex(self, *, store: str | None = None) -> Result[ReindexReport, DomainError]:
        """Re-embed every memory of the store with the configured embedder, replacing the index at once."""
        name = store or self.policy.default_store

        def rebuild(opened: VectorStore, found: list[Memory]) -> Result[ReindexReport, DomainError]:
            memories, renamed = one_memory_per_path(found)
            batches = [memories[i : i + REINDEX_BATCH] for i in range(0, len(memories), REINDEX_BATCH)]
            vectors = Fold.collect(
                [self.embedder.embed_documents([m.content for m in batch]) for batch in batches], Success(())
            )
            return (
                vectors.bind(
                    lambda parts: opened.rebuild(memories, [v for part in parts for v in part], self.embedder.name)
                )
                .bind(lambda _: self._rebuild_keywords(name, memories))
                .map(lambda _: ReindexReport(name, len(memories), self.embedder.name, renamed))
            )

        return self._exclusive(
            name,
            lambda: (
                guarded_only(self.tenant, "reindex")
                .bind(lambda _: self._open(name, create=False))
                .bind(
                    lambda opened: opened.scan(MemoryFilter(include_deleted=True)).bind(
                        lambda memories: rebuild(opened, memories)
                    )
                )
            ),
        )

    def _rebuild_keywords(self, store: str, memories: Sequence[Memory]) -> Result[None, DomainError]:
        keywords = self.keywords
        if keywords is None:
            return Success(None)
        known: Result[Mapping[str, tuple[str | None, str | None]], DomainError] = keywords.neighbours(
            store, [m.id for m in memories]
        )
        return known.lash(lambda _: Success({})).bind(  # an unreadable index: creation order alone
            lambda links: keywords.rebuild(store, [keyword_entry(m) for m in saved_order(memories, links)])
        )

    # --- categories ---------------------------------------------------------------------------

    def create_category(
        self,
        category: str,
        *,
        description: str = "",
        store: str | None = None,
        namespace: Sequence[str] | None = None,
    ) -> Result[CategorySummary, DomainError]:
        """Register a category (the store is created if missing); creating one that exists is a no-op.

        The registry belongs to the store, not to a tenant: under a namespace it is INVALID_OPERATION
        (a tenant's categories are the paths of its memories)."""
        name = store or self.policy.default_store
        if len(description) > MAX_DESCRIPTION:
            return Failure(invalid_input(f"A description has at most {MAX_DESCRIPTION} characters."))
        return self._exclusive(
            name,
            lambda: (
                self._registry_allowed(namespace, "Registering a category")
                .bind(lambda _: parse_category_path(category))
                .bind(
                    lambda path: (
                        self._open(name, create=True)
                        .bind(lambda _: self._registry(name))
                        .bind(
                            lambda registry: registry.describe_all().bind(
                                lambda known: registry.put(path, description or known.get(str(path), ""))
                            )
                        )
                        .bind(lambda _: self._category_summary(name, path))
                    )
                )
            ),
        )

    def describe_category(
        self, category: str, description: str, *, store: str | None = None, namespace: Sequence[str] | None = None
    ) -> Result[CategorySummary, DomainError]:
        """Set a category's description (at most 500 characters); INVALID_OPERATION under a namespace."""
        name = store or self.policy.default_store
        if len(description) > MAX_DESCRIPTION:
            return Failure(
                invalid_input(f"The description is {len(description)} characters; the limit is {MAX_DESCRIPTION}.")
            )
        return self._exclusive(
            name,
            lambda: (
                self._registry_allowed(namespace, "A category description")
                .bind(lambda _: parse_category_path(category))
                .bind(
                    lambda path: (
                        self._category_exists(name, path, None)
                        .bind(lambda _: self._registry(name))
                        .bind(lambda registry: registry.put(path, description))
                        .bind(lambda _: self._category_summary(name, path))
                    )
                )
            ),
        )

    def delete_category(
        self, category: str, *, store: str | None = None, namespace: Sequence[str] | None = None
    ) -> Result[CategorySummary, DomainError]:
        """Delete a non-root category with its subcategories and memories, for good.

        Under a namespace: only that namespace's memories under it, and never the store's registry."""
        name = store or self.policy.default_store

        def delete(path: CategoryPath, guard: Guard) -> Result[CategorySummary, DomainError]:
            if len(path.segments) == 1:
                return Failure(
                    invalid_input(f"'{path}' is a root category and cannot be deleted; delete its subcategories.")
                )
            return self._category_exists(name, path, guard).bind(
                lambda summary: (
                    self._open(name, create=False)
                    .bind(
                        lambda opened: opened.scan(
                            MemoryFilter(path_prefix=path, include_deleted=True, namespace=guard)
                        ).bind(
                            lambda memories: opened.remove([m.id for m in memories]).bind(
                                lambda _: self._unindex_keywords(name, [m.id for m in memories])
                            )
                        )
                    )
                    .bind(lambda _: self._forget_categories(name, path, guard))
                    .map(lambda _: summary)
                )
            )

        return self._exclusive(
            name,
            lambda: self._guard(namespace).bind(
                lambda guard: parse_category_path(category).bind(lambda path: delete(path, guard))
            ),
        )

    def _forget_categories(self, name: str, path: CategoryPath, guard: Guard) -> Result[None, DomainError]:
        if guard is not None:
            return Success(None)  # the registry is the store's, not the tenant's
        return (
            self._registry(name)
            .bind(
                lambda registry: registry.describe_all().bind(
                    lambda known: registry.remove([CategoryPath(tuple(k.split("/"))) for k in known if _under(k, path)])
                )
            )
            .map(lambda _: None)
        )

    def _registry_allowed(self, namespace: Sequence[str] | None, what: str) -> Result[None, DomainError]:
        return self._guard(namespace).bind(lambda guard: guarded_only(guard, what))

    def _registry(self, store: str) -> Result[CategoryRegistry, DomainError]:
        return attempt(lambda: check_store_name(store)).bind(self.catalog.categories)

    def _descriptions(self, store: str, guard: Guard = None) -> Result[Mapping[str, str], DomainError]:
        """The store's registered categories; none under a namespace (they belong to no tenant)."""
        if guard is not None:
            return Success({})
        described = self._registry(store).bind(lambda registry: registry.describe_all())
        if store != DEFAULT_STORE:
            return described
        # the built-in store reads as empty until written (see _open)
        return described.lash(lambda error: Success({}) if error.code is ErrorCode.STORE_NOT_FOUND else Failure(error))

    def _category_summary(self, store: str, path: CategoryPath) -> Result[CategorySummary, DomainError]:
        return self._category_exists(store, path, None)

    def _category_exists(self, store: str, path: CategoryPath, guard: Guard) -> Result[CategorySummary, DomainError]:
        def summarise(memories: list[Memory], described: Mapping[str, str]) -> Result[CategorySummary, DomainError]:
            registered = any(_under(known, path) for known in described)
            if not memories and not registered:
                return Failure(
                    DomainError(
                        ErrorCode.CATEGORY_NOT_FOUND,
                        f"Category '{path}' does not exist: create it, or add a memory under it.",
                        path=str(path),
                    )
                )
            return Success(CategorySummary(str(path), len(memories), described.get(str(path), "")))

        where = MemoryFilter(path_prefix=path, namespace=guard)
        return self._open(store, create=False).bind(
            lambda opened: opened.scan(where).bind(
                lambda memories: self._descriptions(store, guard).bind(lambda described: summarise(memories, described))
            )
        )

    # --- stores -------------------------------------------------------------------------------

    def list_stores(self, *, namespace: Sequence[str] | None = None) -> Result[tuple[StoreSummary, ...], DomainError]:
        """Every store with its memory count (soft-deleted ones included; under a namespace, only its own)."""

        def summary(name: str, guard: Guard) -> Result[StoreSummary, DomainError]:
            return self._count(name, guard).map(lambda n: StoreSummary(name, n))

        return self._guard(namespace).bind(
            lambda guard: self.catalog.names().bind(
                lambda names: Fold.collect([summary(n, guard) for n in names], Success(()))
            )
        )

    def create_store(self, name: str) -> Result[StoreSummary, DomainError]:
        """Create an empty store; DESTINATION_EXISTS if there is one by that name."""

        def create(checked: str, existing: list[str]) -> Result[StoreSummary, DomainError]:
            if checked in existing:
                return Failure(
                    DomainError(ErrorCode.DESTINATION_EXISTS, f"Store '{checked}' already exists.", path=checked)
                )
            return self.catalog.open(checked, create=True).map(lambda _: StoreSummary(checked, 0))

        return self._exclusive(
            name,
            lambda: attempt(lambda: check_store_name(name)).bind(
                lambda checked: self.catalog.names().bind(lambda existing: create(checked, existing))
            ),
        )


def _under(known: str, category: CategoryPath) -> bool:
    prefix = str(category)
    return known == prefix or known.startswith(prefix + "/")


def _changes(command: UpdateMemory) -> Result[dict[str, Any], DomainError]:
    if command.expires_at is not None and command.clear_expiry:
        return Failure(invalid_input("Give either expires_at or clear_expiry, not both."))
    fields: dict[str, Any] = {
        name: getattr(command, name)
        for name in ("content", "tags", "source", "citations", "agent", "personality", "project", "type", "global_")
        if getattr(command, name) is not None
    }
    if command.expires_at is not None:
        fields["expires_at"] = command.expires_at
    if command.clear_expiry:
        fields["expires_at"] = None
    if command.decay_policy is not None:
        policy = attempt(lambda: parse_decay_policy(command.decay_policy or ""))
        if isinstance(policy, Failure):
            return policy
        fields["decay_policy"] = policy.value_or(None)
    if not fields:
        return Failure(
            invalid_input(
                "Nothing to update: give content, tags, source, citations, expires_at or clear_expiry "
                "(or a scope field)."
            )
        )
    return Success(fields)


def _assemble_listing(
    category: CategoryPath | None,
    memories: list[Memory],
    described: Mapping[str, str],
    view: Callable[[Memory], MemoryView],
) -> Result[Listing, DomainError]:
    depth = 0 if category is None else len(category.segments)
    known_here = [k for k in described if category is None or _under(k, category)]
    if category is not None and not memories and not known_here:
        return Failure(
            DomainError(
                ErrorCode.CATEGORY_NOT_FOUND,
                f"Category '{category}' does not exist: create it, or add a memory under it.",
                path=str(category),
            )
        )
    counts: dict[str, int] = {}
    for memory in memories:
        if memory.path is not None and len(memory.path.segments) - 1 > depth:
            child = "/".join(memory.path.segments[: depth + 1])
            counts[child] = counts.get(child, 0) + 1
    for known in known_here:
        parts = known.split("/")
        if len(parts) > depth:
            counts.setdefault("/".join(parts[: depth + 1]), 0)
    subcategories = tuple(CategorySummary(path, counts[path], described.get(path, "")) for path in sorted(counts))
    ordered = sorted(memories, key=lambda m: m.updated_at, reverse=True)
    views = tuple(view(m) for m in ordered)
    description = described.get(str(category), "") if category is not None else ""
    return Success(Listing(None if category is None else str(category), views, subcategories, description))


def saved_order(memories: Sequence[Memory], links: Mapping[str, tuple[str | None, str | None]]) -> list[Memory]:
    """Creation order; memories created at the same moment (one batch's turns) keep their order in the old index.

    The old order is read off the index's previous/next links: each chain is walked from its first
    known memory, and a memory's place in that walk breaks ties of created_at (then the id).
    """
    present = {m.id for m in memories}
    place: dict[str, int] = {}
    for memory in memories:
        before = links.get(memory.id, (None, None))[0]
        if before in present:
            continue  # not the first of its chain
        current: str | None = memory.id
        while current is not None and current in present and current not in place:
            place[current] = len(place)
            current = links.get(current, (None, None))[1]
    return sorted(memories, key=lambda m: (m.created_at, place.get(m.id, len(place)), m.id))


def one_memory_per_path(memories: Sequence[Memory]) -> tuple[list[Memory], tuple[str, ...]]:
    """Live memories that share a path (hand-made files like `My Note.md` and `my_note.md`, or data written
    before paths were enforced) keep their content: the oldest keeps the path, each other one moves to
    `<slug>-<first 8 characters of its id>` beside it. Returns the memories and what was renamed.
    Paths are unique per namespace: memories of different namespaces at one path all keep it."""
    holders: dict[tuple[tuple[str, ...], MemoryPath], Memory] = {}
    for memory in sorted(memories, key=lambda m: (m.created_at, m.id)):
        if memory.path is not None and not memory.deleted:
            holders.setdefault((memory.namespace, memory.path), memory)
    kept: list[Memory] = []
    renamed: list[str] = []
    for memory in memories:
        path = memory.path
        if path is None or memory.deleted or holders[(memory.namespace, path)].id == memory.id:
            kept.append(memory)
            continue
        unique = MemoryPath((*path.segments[:-1], f"{path.slug[:100]}-{memory.id[:8]}"))
        kept.append(evolve(memory, path=unique))
        renamed.append(f"{path} → {unique}")
    return kept, tuple(renamed)
