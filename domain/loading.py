"""Loading a memory by reference: by id or path, within the call's namespace guard, live or not, expired or not."""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from agent_memory.domain.context import Context, is_memory_id
from agent_memory.domain.errors import DomainError, ErrorCode, not_found
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, check_memory_id
from agent_memory.domain.paths import MemoryPath, parse_memory_path
from agent_memory.domain.results import validated
from agent_memory.domain.tenancy import Guard, visible

EMPTY_REF = "The memory reference is empty: give a memory id (a UUID) or its path, such as 'category/slug'."


def load_ref(
    ctx: Context, ref: str, store: str | None, *, namespace: Sequence[str] | None = None
) -> Result[Memory, DomainError]:
    """A memory by id (a UUID) or path (anything else), soft-deleted ones included.

    Within the call's guard (the service's pin, narrowed by `namespace`): a memory outside it (or its
    sub-namespaces) is not found, by id or by path, so tenants never reach each other's memories.
    """
    return ctx.guard(namespace).bind(lambda guard: _load_guarded(ctx, ref, store, guard))


def load_live(
    ctx: Context,
    ref: str,
    store: str | None,
    *,
    include_expired: bool,
    namespace: Sequence[str] | None = None,
    doing: str = "read",
) -> Result[Memory, DomainError]:
    """A memory by id or path that is neither soft-deleted nor (unless asked) expired; `doing` words the refusal."""
    return load_ref(ctx, ref, store, namespace=namespace).bind(
        lambda memory: readable(ctx, memory, include_expired=include_expired, doing=doing)
    )


def readable(
    ctx: Context, memory: Memory, *, include_expired: bool, doing: str = "read"
) -> Result[Memory, DomainError]:
    """NOT_FOUND for a soft-deleted memory; MEMORY_EXPIRED for an expired one unless include_expired."""
    if memory.deleted:
        return Failure(not_found(memory.id))
    return unexpired(ctx, memory, include_expired=include_expired, doing=doing)


def unexpired(ctx: Context, memory: Memory, *, include_expired: bool, doing: str) -> Result[Memory, DomainError]:
    """MEMORY_EXPIRED for a memory past its expiry, unless the caller said include_expired."""
    if include_expired or not memory.is_expired(ctx.clock.now()):
        return Success(memory)
    return Failure(
        DomainError(
            ErrorCode.MEMORY_EXPIRED,
            f"Memory expired: pass --include-expired to {doing} it anyway.",
            path=str(memory.path or memory.id),
        )
    )


def _load_guarded(ctx: Context, ref: str, store: str | None, guard: Guard) -> Result[Memory, DomainError]:
    if not ref.strip():  # a mistake in the call, not a memory that is missing
        return Failure(DomainError(ErrorCode.INVALID_INPUT, EMPTY_REF, path=ref))
    if is_memory_id(ref):
        return _load_any(ctx, ref, store).bind(lambda memory: _inside(memory, guard))
    return (
        parse_memory_path(ref)
        .alt(lambda error: error if _path_like(ref) else _neither(ref, error))
        .bind(lambda path: _load_path(ctx, path, store, guard))
    )


def _load_any(ctx: Context, memory_id: str, store: str | None) -> Result[Memory, DomainError]:
    """A memory by id, soft-deleted ones included, whatever its namespace."""
    return validated(lambda: check_memory_id(memory_id)).bind(lambda canonical: _load_id(ctx, canonical, store))


def _load_id(ctx: Context, canonical: str, store: str | None) -> Result[Memory, DomainError]:
    found = Result.do(memories for opened in ctx.open_to_read(store) for memories in opened.get([canonical]))
    return found.bind(lambda memories: Success(memories[0]) if memories else Failure(not_found(canonical)))


def _load_path(ctx: Context, path: MemoryPath, store: str | None, guard: Guard) -> Result[Memory, DomainError]:
    where = MemoryFilter(path=path, namespace=guard)
    return (
        ctx.open_to_read(store)
        .bind(lambda opened: opened.scan(where))
        .bind(lambda found: _one_at(path, [m for m in found if visible(m, guard)], guard))
    )


def _inside(memory: Memory, guard: Guard) -> Result[Memory, DomainError]:
    return Success(memory) if visible(memory, guard) else Failure(not_found(memory.id))


def _path_like(ref: str) -> bool:
    """A ref with a separator or a dot segment is a path, so a bad one is INVALID_PATH (traversal, say)."""
    return any(mark in ref for mark in ("/", "\\", ".."))


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
