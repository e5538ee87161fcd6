"""The handlers that take a memory out or bring it back: delete (soft), restore (undo a soft delete), remove (for
good)."""

from __future__ import annotations

from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import DeleteMemory, RemoveMemory, RestoreMemory
from agent_memory.domain.context import Context, is_memory_id
from agent_memory.domain.errors import DomainError, ErrorCode, not_found
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.loading import load_ref, unexpired
from agent_memory.domain.model import Memory
from agent_memory.domain.path_rules import paths_free
from agent_memory.domain.paths import parse_memory_path
from agent_memory.domain.tenancy import Guard, visible
from agent_memory.domain.views import MemoryView


def delete_memory(ctx: Context, command: DeleteMemory) -> Result[Memory, DomainError]:
    """Soft delete: the memory stays stored with deleted=true and never surfaces again.

    An expired memory is MEMORY_EXPIRED unless include_expired (as for get); `remove` and `prune` are
    the ways to get rid of expired memories for good."""
    store = command.store
    return ctx.exclusive(
        store,
        lambda: load_ref(ctx, command.ref, store, namespace=command.namespace).bind(
            lambda memory: _soft_deleted(ctx, memory, include_expired=command.include_expired)
        ),
    )


def _soft_deleted(ctx: Context, memory: Memory, *, include_expired: bool) -> Result[Memory, DomainError]:
    if memory.deleted:
        return Failure(
            DomainError(ErrorCode.INVALID_OPERATION, f"Memory {memory.id} is already deleted.", path=memory.id)
        )
    return unexpired(ctx, memory, include_expired=include_expired, doing="delete").bind(
        lambda live: _mark_deleted(ctx, live)
    )


def _mark_deleted(ctx: Context, memory: Memory) -> Result[Memory, DomainError]:
    gone = evolve(memory, deleted=True, deleted_at=ctx.clock.now())
    return ctx.save_metadata(gone).map(lambda _: gone)


def restore_memory(ctx: Context, command: RestoreMemory) -> Result[MemoryView, DomainError]:
    """Undo a soft delete, by id or path: the memory is live again with its id and every field as they were.

    DESTINATION_EXISTS if a live memory of its namespace holds its path now (move or delete that one first);
    INVALID_OPERATION for a memory that is not deleted; a memory removed for good is MEMORY_NOT_FOUND."""
    store = command.store
    return ctx.exclusive(
        store,
        lambda: (
            ctx.guard(command.namespace)
            .bind(lambda guard: _deleted_at(ctx, command.ref, store, guard))
            .bind(lambda memory: _restored(ctx, memory))
        ),
    )


def _deleted_at(ctx: Context, ref: str, store: str | None, guard: Guard) -> Result[Memory, DomainError]:
    """The soft-deleted memory a ref names: by id, or the one soft-deleted memory at a path."""
    match parse_memory_path(ref) if ref.strip() and not is_memory_id(ref) else None:
        case Success(path):
            where = MemoryFilter(path=path, namespace=guard, include_deleted=True)
            found = ctx.open(store, create=False).bind(lambda opened: opened.scan(where))
            return found.bind(lambda memories: _one_deleted(str(path), [m for m in memories if visible(m, guard)]))
        case _:  # an id, or a bad ref refused in the usual words
            return load_ref(ctx, ref, store, namespace=guard)


def _one_deleted(path: str, found: list[Memory]) -> Result[Memory, DomainError]:
    deleted = [m for m in found if m.deleted]
    if len(deleted) == 1:
        return Success(deleted[0])
    if deleted:
        ids = ", ".join(m.id for m in sorted(deleted, key=lambda m: m.deleted_at or m.updated_at, reverse=True))
        return Failure(
            DomainError(
                ErrorCode.INVALID_INPUT,
                f"Several deleted memories were at '{path}' ({ids}, most recently deleted first): restore one by id.",
                path=path,
            )
        )
    if found:
        return Failure(
            DomainError(
                ErrorCode.INVALID_OPERATION, f"The memory at '{path}' is not deleted: nothing to restore.", path=path
            )
        )
    return Failure(not_found(path, cause="no soft-deleted memory is at that path (removed for good, or never there)"))


def _restored(ctx: Context, memory: Memory) -> Result[MemoryView, DomainError]:
    if not memory.deleted:
        return Failure(
            DomainError(
                ErrorCode.INVALID_OPERATION,
                f"Memory {memory.id} is not deleted: nothing to restore.",
                path=memory.id,
            )
        )
    back = evolve(memory, deleted=False, deleted_at=None)  # every other field as it was
    return (
        ctx.open(memory.store, create=False)
        .bind(lambda opened: paths_free(opened, [back]).alt(_path_since_taken))
        .bind(lambda opened: opened.update_metadata([back]))
        .map(lambda written: ctx.view(written[0]))
    )


def _path_since_taken(error: DomainError) -> DomainError:
    if error.code is not ErrorCode.DESTINATION_EXISTS:
        return error
    return DomainError(
        ErrorCode.DESTINATION_EXISTS,
        f"Path '{error.path}' is taken by a live memory since the delete: move or delete that memory, then restore.",
        path=error.path,
    )


def remove_memory(ctx: Context, command: RemoveMemory) -> Result[Memory, DomainError]:
    """Delete for good (MCP remove_memory), soft-deleted or not."""
    store = command.store
    return ctx.exclusive(
        store,
        lambda: load_ref(ctx, command.ref, store, namespace=command.namespace).bind(
            lambda memory: _removed(ctx, memory)
        ),
    )


def _removed(ctx: Context, memory: Memory) -> Result[Memory, DomainError]:
    return (
        ctx.open(memory.store, create=False)
        .bind(lambda opened: opened.remove([memory.id]))
        .bind(lambda _: ctx.unindex_keywords(memory.store, [memory.id]))
        .map(lambda _: memory)
    )
