"""The store and category handlers: list and create stores; create, describe and delete categories."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from attrs import evolve, frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import CreateCategory, CreateStore, DeleteCategory, DescribeCategory, ListStores
from agent_memory.domain.context import Context, under
from agent_memory.domain.errors import DomainError, ErrorCode, invalid_input
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, check_store_name
from agent_memory.domain.paging import MAX_DESCRIPTION
from agent_memory.domain.paths import CategoryPath, parse_category_path
from agent_memory.domain.ports import CategoryRegistry, VectorStore
from agent_memory.domain.results import validated
from agent_memory.domain.tenancy import Guard, guarded_only
from agent_memory.domain.views import CategorySummary, StoreSummary


def list_stores(ctx: Context, command: ListStores) -> Result[tuple[StoreSummary, ...], DomainError]:
    """Every store with its live memories counted as `memory status` counts them, and its soft-deleted and
    expired ones beside them (under a namespace, only its own)."""

    def summaries(guard: Guard, names: list[str]) -> Result[tuple[StoreSummary, ...], DomainError]:
        return Fold.collect([Stores(ctx)._summary(name, guard) for name in names], Success(()))

    return ctx.guard(command.namespace).bind(
        lambda guard: ctx.catalog.names().bind(lambda names: summaries(guard, names))
    )


def create_store(ctx: Context, command: CreateStore) -> Result[StoreSummary, DomainError]:
    """Create an empty store; DESTINATION_EXISTS if there is one by that name."""
    name = command.name

    def create(checked: str) -> Result[StoreSummary, DomainError]:
        return ctx.catalog.names().bind(lambda existing: Stores(ctx)._created(checked, existing))

    return ctx.exclusive(name, lambda: validated(lambda: check_store_name(name)).bind(create))


def create_category(ctx: Context, command: CreateCategory) -> Result[CategorySummary, DomainError]:
    """Register a category (the store is created if missing); creating one that exists is a no-op.

    The registry belongs to the store, not to a tenant: under a namespace it is INVALID_OPERATION
    (a tenant's categories are the paths of its memories)."""
    name, description, steps = command.store or ctx.policy.default_store, command.description, Stores(ctx)
    if len(description) > MAX_DESCRIPTION:
        return Failure(invalid_input(f"A description has at most {MAX_DESCRIPTION} characters."))

    def register(path: CategoryPath) -> Result[CategorySummary, DomainError]:
        return (
            ctx.open(name, create=True)
            .bind(lambda _: ctx.registry(name))
            .bind(lambda registry: _put_keeping_description(registry, path, description))
            .bind(lambda _: steps._category_exists(name, path, None))
        )

    return steps._in_registry(name, command.namespace, "Registering a category", command.category, register)


def describe_category(ctx: Context, command: DescribeCategory) -> Result[CategorySummary, DomainError]:
    """Set a category's description (at most 500 characters); INVALID_OPERATION under a namespace."""
    name, description, steps = command.store or ctx.policy.default_store, command.description, Stores(ctx)
    if len(description) > MAX_DESCRIPTION:
        return Failure(
            invalid_input(f"The description is {len(description)} characters; the limit is {MAX_DESCRIPTION}.")
        )

    def describe(path: CategoryPath) -> Result[CategorySummary, DomainError]:
        return (
            steps._category_exists(name, path, None)
            .bind(lambda _: ctx.registry(name))
            .bind(lambda registry: registry.put(path, description))
            .bind(lambda _: steps._category_exists(name, path, None))
        )

    return steps._in_registry(name, command.namespace, "A category description", command.category, describe)


def delete_category(ctx: Context, command: DeleteCategory) -> Result[CategorySummary, DomainError]:
    """Delete a category (a root one too) with its subcategories: its memories are soft-deleted, restorable one by
    one (RestoreMemory), or with purge removed for good, soft-deleted ones included. The registered categories and
    their descriptions are forgotten either way. memory_count is how many memories were deleted (or removed).

    Under a namespace: only that namespace's memories under it, and never the store's registry."""
    name, purge = command.store or ctx.policy.default_store, command.purge

    def delete(guard: Guard) -> Result[CategorySummary, DomainError]:
        return parse_category_path(command.category).bind(
            lambda path: Stores(ctx)._deleted(name, path, guard, purge=purge)
        )

    return ctx.exclusive(name, lambda: ctx.guard(command.namespace).bind(delete))


@frozen
class Stores:
    """The steps the store and category handlers share."""

    ctx: Context

    # --- stores -------------------------------------------------------------------------------

    def _summary(self, name: str, guard: Guard) -> Result[StoreSummary, DomainError]:
        return (
            self.ctx.open_to_read(name)
            .bind(lambda opened: self.ctx.census(opened, guard))
            .map(lambda census: StoreSummary(name, census.live, census.deleted, census.expired))
        )

    def _created(self, checked: str, existing: list[str]) -> Result[StoreSummary, DomainError]:
        if checked in existing:
            return Failure(
                DomainError(ErrorCode.DESTINATION_EXISTS, f"Store '{checked}' already exists.", path=checked)
            )
        return self.ctx.catalog.open(checked, create=True).map(lambda _: StoreSummary(checked, 0))

    # --- categories ---------------------------------------------------------------------------

    def _deleted(
        self, name: str, path: CategoryPath, guard: Guard, *, purge: bool
    ) -> Result[CategorySummary, DomainError]:
        return self._category_exists(name, path, guard, include_deleted=purge).bind(
            lambda summary: (
                self._delete_memories_under(name, path, guard, purge=purge)
                .bind(lambda count: self._forget_categories(name, path, guard).map(lambda _: count))
                .map(lambda count: evolve(summary, memory_count=count))
            )
        )

    def _delete_memories_under(
        self, name: str, path: CategoryPath, guard: Guard, *, purge: bool
    ) -> Result[int, DomainError]:
        """Soft-delete the live (and expired) memories under a category, or with purge remove every one for good;
        how many."""
        where = MemoryFilter(path_prefix=path, include_deleted=purge, namespace=guard)

        def delete(opened: VectorStore) -> Result[int, DomainError]:
            scanned = opened.scan(where)
            if purge:
                return scanned.bind(
                    lambda memories: self._removed(opened, name, [m.id for m in memories]).map(lambda _: len(memories))
                )
            return scanned.bind(lambda memories: self._marked_deleted(opened, memories))

        return self.ctx.open(name, create=False).bind(delete)

    def _marked_deleted(self, opened: VectorStore, memories: list[Memory]) -> Result[int, DomainError]:
        """Mark memories deleted in one write, as a delete of each would (their keyword entries stay: search drops
        deleted memories, and a restore finds them indexed)."""
        if not memories:
            return Success(0)
        now = self.ctx.clock.now()
        gone = [evolve(m, deleted=True, deleted_at=now) for m in memories]
        return opened.update_metadata(gone).map(lambda _: len(gone))

    def _removed(self, opened: VectorStore, name: str, ids: list[str]) -> Result[None, DomainError]:
        return opened.remove(ids).bind(lambda _: self.ctx.unindex_keywords(name, ids))

    def _forget_categories(self, name: str, path: CategoryPath, guard: Guard) -> Result[None, DomainError]:
        if guard is not None:
            return Success(None)  # the registry is the store's, not the tenant's

        def forget(registry: CategoryRegistry) -> Result[None, DomainError]:
            return registry.describe_all().bind(
                lambda known: registry.remove([CategoryPath(tuple(k.split("/"))) for k in known if under(k, path)])
            )

        return self.ctx.registry(name).bind(forget).map(lambda _: None)

    def _in_registry(
        self,
        name: str,
        namespace: Sequence[str] | None,
        what: str,
        category: str,
        change: Callable[[CategoryPath], Result[CategorySummary, DomainError]],
    ) -> Result[CategorySummary, DomainError]:
        """Change a category of the store's registry under the store's lock; INVALID_OPERATION under a namespace."""
        return self.ctx.exclusive(
            name,
            lambda: (
                self.ctx.guard(namespace)
                .bind(lambda guard: guarded_only(guard, what))
                .bind(lambda _: parse_category_path(category))
                .bind(change)
            ),
        )

    def _category_exists(
        self, store: str, path: CategoryPath, guard: Guard, *, include_deleted: bool = False
    ) -> Result[CategorySummary, DomainError]:
        """The category's summary, or CATEGORY_NOT_FOUND when no memory is under it (soft-deleted ones count only
        with include_deleted) and it is not registered."""
        where = MemoryFilter(path_prefix=path, namespace=guard, include_deleted=include_deleted)
        scanned = self.ctx.open_to_read(store).bind(lambda opened: opened.scan(where))
        return scanned.bind(
            lambda memories: self.ctx.descriptions(store, guard).bind(
                lambda described: _summarised(path, memories, described)
            )
        )


def _put_keeping_description(
    registry: CategoryRegistry, path: CategoryPath, description: str
) -> Result[None, DomainError]:
    """Register a category; without a new description it keeps the one it has."""
    return registry.describe_all().bind(lambda known: registry.put(path, description or known.get(str(path), "")))


def _summarised(
    path: CategoryPath, memories: list[Memory], described: Mapping[str, str]
) -> Result[CategorySummary, DomainError]:
    registered = any(under(known, path) for known in described)
    if not memories and not registered:
        return Failure(
            DomainError(
                ErrorCode.CATEGORY_NOT_FOUND,
                f"Category '{path}' does not exist: create it, or add a memory under it.",
                path=str(path),
            )
        )
    return Success(CategorySummary(str(path), len(memories), described.get(str(path), "")))
