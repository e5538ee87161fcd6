"""The handlers that change one memory in place: update (content or metadata), move (a new path), reinforce."""

from __future__ import annotations

from typing import Any

import attrs
from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import MoveMemory, ReinforceMemory, UpdateMemory
from agent_memory.domain.context import Context
from agent_memory.domain.errors import DomainError, ErrorCode, invalid_input
from agent_memory.domain.loading import load_live
from agent_memory.domain.model import MAX_CONTENT_CHARS, DecayPolicy, Memory, parse_decay_policy, stored_rule
from agent_memory.domain.path_rules import paths_free
from agent_memory.domain.paths import MemoryPath, parse_memory_path
from agent_memory.domain.ports import Vector, VectorStore
from agent_memory.domain.results import validated
from agent_memory.domain.views import MemoryView

# A command field that names a Memory field sets it as given, but for those read first (the store by name, the
# namespace checked, the decay policy parsed) and the update's guards.
_UPDATE_READS = frozenset({"store", "namespace", "decay_policy"})
_MEMORY_FIELDS = attrs.fields(Memory)
_UPDATE_SETS = tuple(
    a.name for a in attrs.fields(UpdateMemory) if hasattr(_MEMORY_FIELDS, a.name) and a.name not in _UPDATE_READS
)
_SCOPE = frozenset({"agent", "personality", "project", "type", "global_"})  # named together in an empty update's error
_UPDATE_CLEARS = {  # the Memory field each clearing flag of UpdateMemory resets to its default
    flag: a for a in _MEMORY_FIELDS if (flag := stored_rule(a).clear_with) is not None
}


def update_memory(ctx: Context, command: UpdateMemory) -> Result[MemoryView, DomainError]:
    """Change content or metadata; content changes are re-embedded. Nothing to change is an error; an expiry already
    past expires the memory at once (as a create's does). New content is embedded before the store's write lock is
    taken (the lock covers the read of the memory and the write), so writers to one store embed in parallel."""
    return changes_of(command).bind(
        lambda fields: _embedded_content(ctx, fields).bind(
            lambda vector: ctx.exclusive(command.store, lambda: _updated(ctx, command, fields, vector))
        )
    )


def _embedded_content(ctx: Context, fields: dict[str, Any]) -> Result[Vector | None, DomainError]:
    """The vector of the content an update sets (None when it sets none, or content the memory will refuse: the
    refusal comes first, as it did)."""
    content = fields.get("content")
    if not isinstance(content, str) or not content.strip() or len(content) > MAX_CONTENT_CHARS:
        return Success(None)
    return ctx.embedder.embed_documents([content]).map(lambda vectors: vectors[0])


def changes_of(command: UpdateMemory) -> Result[dict[str, Any], DomainError]:
    """The fields an update sets, checked: INVALID_INPUT for contradictory options or nothing to change."""
    fields: dict[str, Any] = {
        name: getattr(command, name) for name in _UPDATE_SETS if getattr(command, name) is not None
    }
    for flag, attribute in _UPDATE_CLEARS.items():
        if getattr(command, flag, False):
            if attribute.name in fields:
                return Failure(invalid_input(f"Give either {attribute.name} or {flag}, not both."))
            fields[attribute.name] = attribute.default
    raw_policy = command.decay_policy
    if raw_policy is not None:
        return validated(lambda: parse_decay_policy(raw_policy)).map(lambda policy: fields | {"decay_policy": policy})
    if not fields:
        settable = [name for name in _UPDATE_SETS if name not in _SCOPE]
        return Failure(
            invalid_input(
                f"Nothing to update: give {', '.join(settable)} or {' or '.join(_UPDATE_CLEARS)} (or a scope field)."
            )
        )
    return Success(fields)


def _updated(
    ctx: Context, command: UpdateMemory, fields: dict[str, Any], vector: Vector | None
) -> Result[MemoryView, DomainError]:
    loaded = load_live(
        ctx,
        command.ref,
        command.store,
        include_expired=command.include_expired,
        namespace=command.namespace,
        doing="update",
    )
    return (
        loaded.bind(lambda memory: validated(lambda: evolve(memory, **fields, updated_at=ctx.clock.now())))
        .bind(lambda memory: _save_changed(ctx, memory, vector))
        .map(ctx.view)
    )


def _save_changed(ctx: Context, memory: Memory, vector: Vector | None) -> Result[Memory, DomainError]:
    return ctx.open(memory.store, create=False).bind(
        lambda store: store.get([memory.id]).bind(lambda found: _save_over(ctx, store, found[0], memory, vector))
    )


def _save_over(
    ctx: Context, store: VectorStore, before: Memory, after: Memory, vector: Vector | None
) -> Result[Memory, DomainError]:
    """Write a changed memory over its old self: metadata only, or with its new content's vector (`vector`, embedded
    before the lock, else embedded now) when its content changed. The memory as written (at the revision its write
    stored)."""
    if before.content == after.content:
        written = store.update_metadata([after])
    else:
        vectors: Result[list[Vector], DomainError] = (
            Success([vector]) if vector is not None else ctx.embedder.embed_documents([after.content])
        )
        written = vectors.bind(lambda embedded: store.replace([after], embedded))
    return written.bind(lambda stored: ctx.reindex_words(before, stored[0]).map(lambda _: stored[0]))


def move_memory(ctx: Context, command: MoveMemory) -> Result[MemoryView, DomainError]:
    """Give a memory a new path; DESTINATION_EXISTS if taken; moving onto itself changes nothing.

    An expired memory is MEMORY_EXPIRED unless include_expired (as for get)."""
    store = command.store

    def load_and_move(target: MemoryPath) -> Result[MemoryView, DomainError]:
        return load_live(
            ctx, command.ref, store, include_expired=command.include_expired, namespace=command.namespace, doing="move"
        ).bind(lambda memory: _relocated(ctx, memory, target))

    return ctx.exclusive(store, lambda: parse_memory_path(command.destination).bind(load_and_move))


def _relocated(ctx: Context, memory: Memory, target: MemoryPath) -> Result[MemoryView, DomainError]:
    if memory.path == target:
        return Success(ctx.view(memory))
    moved = evolve(memory, path=target, updated_at=ctx.clock.now())
    return (
        ctx.open(memory.store, create=False)
        .bind(lambda opened: paths_free(opened, [moved]))
        .bind(lambda opened: opened.update_metadata([moved]))
        .bind(lambda written: ctx.reindex_words(memory, written[0]).map(lambda _: ctx.view(written[0])))
    )


def reinforce_memory(ctx: Context, command: ReinforceMemory) -> Result[MemoryView, DomainError]:
    """Reset a reinforceable memory's decay to now; stable and contextual ones refuse."""
    store = command.store
    return ctx.exclusive(
        store,
        lambda: load_live(ctx, command.ref, store, include_expired=False, namespace=command.namespace).bind(
            lambda memory: _reinforced(ctx, memory)
        ),
    )


def _reinforced(ctx: Context, memory: Memory) -> Result[MemoryView, DomainError]:
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
    reinforced = evolve(memory, last_reinforced_at=ctx.clock.now())
    return ctx.save_changed(reinforced).map(ctx.view)
