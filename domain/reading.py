"""The handlers that read without searching: get one memory, list a category, the most recent memories."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from attrs import evolve, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import FindDuplicates, GetMemory, ListMemories, RecentMemories
from agent_memory.domain.context import Context, optional_category, under
from agent_memory.domain.duplicates import Candidate, duplicates_of, in_scope, named, nearest, same_scope
from agent_memory.domain.errors import DomainError, ErrorCode, invalid_input
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.loading import load_live
from agent_memory.domain.model import Memory
from agent_memory.domain.paging import MAX_PAGE, MAX_RECENT, page_problem
from agent_memory.domain.paths import CategoryPath
from agent_memory.domain.tenancy import Guard
from agent_memory.domain.views import CategorySummary, Duplicate, Listing, MemoryView


def get_memory(ctx: Context, command: GetMemory) -> Result[MemoryView, DomainError]:
    """A live memory by id or path with its confidence now; soft-deleted ones are not found."""
    loaded = load_live(
        ctx, command.ref, command.store, include_expired=command.include_expired, namespace=command.namespace
    )
    return loaded.map(ctx.view)


def find_duplicates(ctx: Context, command: FindDuplicates) -> Result[tuple[Duplicate, ...], DomainError]:
    """A memory's near-duplicates by the create rule (domain.duplicates): its text embedded again, one
    nearest-neighbour query of its store in its scope, those at or over the model's threshold but itself."""
    threshold = ctx.policy.duplicate_similarity

    def around(memory: Memory) -> Result[tuple[Duplicate, ...], DomainError]:
        if threshold is None:
            return Success(())
        where = evolve(same_scope(memory), alive_at=ctx.clock.now())

        def counts(other: Memory) -> bool:
            return other.id != memory.id and in_scope(memory, other)

        return ctx.embedder.embed_documents([memory.content]).bind(
            lambda vectors: (
                ctx.open_to_read(memory.store)
                .bind(
                    lambda store: nearest(lambda limit: store.query(vectors[0], where, limit), threshold, counts=counts)
                )
                .map(
                    lambda found: named(
                        duplicates_of(
                            [Candidate(m, s) for m, s in found if m.id != memory.id and in_scope(memory, m)], threshold
                        )
                    )
                )
            )
        )

    loaded = load_live(ctx, command.ref, command.store, include_expired=True, namespace=command.namespace)
    return loaded.bind(around)


def list_memories(ctx: Context, command: ListMemories) -> Result[Listing, DomainError]:
    """A category's memories (recursively; `limit` of them after `offset`, all by default) with their total,
    and its direct subcategories with counts and descriptions; soft-deleted ones only with include_deleted.

    Under a namespace, only its memories and the categories their paths make (the store's registered
    categories and descriptions belong to no tenant, so they are not shown)."""
    limit, offset = command.limit, command.offset
    problem = page_problem(limit, offset, MAX_PAGE, unlimited=True)
    if problem is not None:
        return Failure(invalid_input(problem))
    page = slice(offset, None if limit is None else offset + limit)
    return ctx.guard(command.namespace).bind(
        lambda guard: optional_category(command.category).bind(
            lambda parsed: Reading(ctx)._listing(
                parsed,
                command.store,
                include_expired=command.include_expired,
                guard=guard,
                page=page,
                include_deleted=command.include_deleted,
            )
        )
    )


def recent_memories(ctx: Context, command: RecentMemories) -> Result[tuple[MemoryView, ...], DomainError]:
    """The most recently updated memories, newest first (limit 1–100, default 5)."""
    limit = command.limit
    if not 1 <= limit <= MAX_RECENT:
        return Failure(invalid_input(f"limit must be between 1 and {MAX_RECENT}, got {limit}."))
    listed = ListMemories(
        category=command.category,
        store=command.store,
        include_expired=command.include_expired,
        namespace=command.namespace,
        limit=limit,
    )
    return list_memories(ctx, listed).map(lambda listing: listing.memories)


@frozen
class Reading:
    """The steps the reading handlers share."""

    ctx: Context

    def _listing(
        self,
        category: CategoryPath | None,
        store: str | None,
        *,
        include_expired: bool,
        guard: Guard,
        page: slice = slice(None),
        include_deleted: bool = False,
    ) -> Result[Listing, DomainError]:
        name = store or self.ctx.policy.default_store
        where = MemoryFilter(
            path_prefix=category,
            alive_at=None if include_expired else self.ctx.clock.now(),
            namespace=guard,
            include_deleted=include_deleted,
        )
        scanned = self.ctx.open_to_read(name).bind(lambda opened: opened.scan(where))
        return scanned.bind(
            lambda memories: self.ctx.descriptions(name, guard).bind(
                lambda described: _assemble_listing(category, memories, described, self.ctx.view, page)
            )
        )


def _assemble_listing(
    category: CategoryPath | None,
    memories: list[Memory],
    described: Mapping[str, str],
    view: Callable[[Memory], MemoryView],
    page: slice,
) -> Result[Listing, DomainError]:
    depth = 0 if category is None else len(category.segments)
    known_here = [k for k in described if category is None or under(k, category)]
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
    views = tuple(view(m) for m in ordered[page])
    description = described.get(str(category), "") if category is not None else ""
    name = None if category is None else str(category)
    return Success(Listing(name, views, subcategories, description, total=len(ordered)))
