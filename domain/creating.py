"""The handlers that write one memory or a batch: create (at a free path or not), update, move, reinforce, delete,
restore, remove."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

import attrs
from attrs import evolve, frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import (
    CreateMemories,
    CreateMemory,
    DeleteMemory,
    MoveMemory,
    ReinforceMemory,
    RemoveMemory,
    RestoreMemory,
    UpdateMemory,
)
from agent_memory.domain.context import Context, is_memory_id, optional_path
from agent_memory.domain.duplicates import (
    Answer,
    BatchPlan,
    Fresh,
    nearest,
    parse_duplicate_policy,
    plan_batch,
    same_scope,
)
from agent_memory.domain.errors import DomainError, ErrorCode, invalid_input, not_found
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.idempotency import KEYS_ARE_SINGLE, how_to_check, keyed_create, keyed_memory_id
from agent_memory.domain.model import (
    DecayPolicy,
    Memory,
    check_store_name,
    new_memory_id,
    parse_decay_policy,
    stored_rule,
)
from agent_memory.domain.paths import MemoryPath, parse_memory_path
from agent_memory.domain.ports import PendingBatch, Vector, VectorStore
from agent_memory.domain.progress import Count, embedded
from agent_memory.domain.results import in_turn, validated
from agent_memory.domain.tenancy import Guard, new_memory_namespace, visible
from agent_memory.domain.views import MemoryView, Progress, quiet

# A command field that names a Memory field sets it as given, but for those read first (the store by name, the
# namespace and path checked, the decay policy parsed, the time the memory's own) and the update's guards.
_CREATE_READS = frozenset({"store", "namespace", "path", "global_", "decay_policy", "created_at"})
_UPDATE_READS = frozenset({"store", "namespace", "decay_policy"})
_MEMORY_FIELDS = attrs.fields(Memory)
_CREATE_COPIES = tuple(
    a.name for a in attrs.fields(CreateMemory) if hasattr(_MEMORY_FIELDS, a.name) and a.name not in _CREATE_READS
)
_UPDATE_SETS = tuple(
    a.name for a in attrs.fields(UpdateMemory) if hasattr(_MEMORY_FIELDS, a.name) and a.name not in _UPDATE_READS
)
_SCOPE = frozenset({"agent", "personality", "project", "type", "global_"})  # named together in an empty update's error
_UPDATE_CLEARS = {  # the Memory field each clearing flag of UpdateMemory resets to its default
    flag: a for a in _MEMORY_FIELDS if (flag := stored_rule(a).clear_with) is not None
}


def create_memory(ctx: Context, command: CreateMemory) -> Result[MemoryView, DomainError]:
    """Store a new memory with a fresh UUID; its confidence starts at 1.0. With a path, the path must be free
    (DESTINATION_EXISTS otherwise); the store and categories come into being as needed. With an idempotency key,
    its id comes from the key and a retry answers the memory the first stored (domain.idempotency)."""
    if command.idempotency_key is not None:
        return keyed_create(ctx, ctx.keys, command, partial(_create_one, ctx))
    return _create_one(ctx, command)


def _create_one(ctx: Context, command: CreateMemory) -> Result[MemoryView, DomainError]:
    if command.path is None:
        return _create_many(ctx, [command]).map(lambda views: views[0])
    raw_path = command.path
    return ctx.exclusive(
        command.store,
        lambda: (
            new_memory_namespace(ctx.tenant, command.namespace)
            .bind(lambda _: parse_memory_path(raw_path))
            # the batch refuses a taken path (per namespace) under the same lock: one check, not two
            .bind(lambda path: _create_many(ctx, [evolve(command, path=str(path))]))
            .map(lambda views: views[0])
        ),
    )


def create_memories(ctx: Context, command: CreateMemories) -> Result[list[MemoryView], DomainError]:
    """Store a batch, embedded a slice at a time (progress counts the memories embedded; a store's part is written
    once all of it is embedded); all are validated before any is written. Idempotency keys are for single creates."""
    if any(each.idempotency_key is not None for each in command.memories):
        return Failure(invalid_input(KEYS_ARE_SINGLE))
    return _create_many(ctx, command.memories, command.progress)


def _create_many(
    ctx: Context, commands: Sequence[CreateMemory], progress: Progress = quiet
) -> Result[list[MemoryView], DomainError]:
    steps, now = Writing(ctx), ctx.clock.now()
    built = Fold.collect([steps._new_memory(command, now) for command in commands], Success(()))
    return built.bind(lambda batch: steps._write_batch(batch, Count(len(batch), progress)))


@frozen
class Writing:
    """The steps the writing handlers share (create, update, move, reinforce, delete, remove), on one context."""

    ctx: Context

    def _new_memory(self, command: CreateMemory, now: datetime) -> Result[Fresh, DomainError]:
        created = command.created_at or now
        return parse_duplicate_policy(command.on_duplicate, self.ctx.policy.on_duplicate).bind(
            lambda policy: (
                new_memory_namespace(self.ctx.tenant, command.namespace)
                .bind(
                    lambda namespace: optional_path(command.path).bind(
                        lambda path: self._built(command, created, namespace, path)
                    )
                )
                .map(lambda memory: Fresh(memory, policy))
            )
        )

    def _built(
        self, command: CreateMemory, created: datetime, namespace: tuple[str, ...], path: MemoryPath | None
    ) -> Result[Memory, DomainError]:
        return validated(
            lambda: Memory(
                id=new_memory_id()
                if command.idempotency_key is None
                else keyed_memory_id(
                    check_store_name(command.store or self.ctx.policy.default_store), namespace, command.idempotency_key
                ),
                created_at=created,
                updated_at=created,
                store=check_store_name(command.store or self.ctx.policy.default_store),
                namespace=namespace,
                path=path,
                global_=bool(command.global_),
                decay_policy=parse_decay_policy(command.decay_policy),
                **{name: getattr(command, name) for name in _CREATE_COPIES},
            )
        )

    def _write_batch(self, batch: tuple[Fresh, ...], count: Count) -> Result[list[MemoryView], DomainError]:
        by_store: dict[str, list[int]] = {}
        for index, fresh in enumerate(batch):
            by_store.setdefault(fresh.memory.store, []).append(index)
        answers: dict[int, MemoryView] = {}

        def write(store_name: str, indexes: list[int]) -> Result[None, DomainError]:
            part = [batch[index] for index in indexes]
            return self.ctx.exclusive(store_name, partial(self._write_new, store_name, part, count)).map(
                lambda views: answers.update(zip(indexes, views, strict=True))
            )

        written = in_turn(by_store.items(), lambda item: write(*item)).lash(
            lambda error: how_to_check([fresh.memory for fresh in batch], error)
        )
        return written.map(lambda _: [answers[index] for index in range(len(batch))])

    def _write_new(self, store_name: str, batch: list[Fresh], count: Count) -> Result[list[MemoryView], DomainError]:
        return (
            self.ctx.open(store_name, create=True)
            .bind(self.ctx.check_model)
            .bind(lambda store: self.ctx.paths_free(store, [fresh.memory for fresh in batch]))
            .bind(lambda store: self._store_new(store, store_name, batch, count))
        )

    def _store_new(
        self, store: VectorStore, store_name: str, batch: list[Fresh], count: Count
    ) -> Result[list[MemoryView], DomainError]:
        """Embed the batch (a slice at a time, each counted), settle its near-duplicates (one nearest-neighbour
        query each, reusing its vector), then add the new memories, change the ones updated and index their words
        as one unit: a failure or a kill part-way leaves none of it (the journal records the new ids and the
        updated memories as they were before the first write; the next open takes a killed batch back out)."""
        return (
            embedded(self.ctx.embedder, [fresh.memory.content for fresh in batch], count)
            .bind(
                lambda vectors: plan_batch(
                    batch, vectors, partial(self._neighbours, store), self.ctx.policy.duplicate_similarity
                )
            )
            .bind(
                lambda plan: self.ctx.whole(
                    store,
                    PendingBatch(store_name, tuple(plan.added), tuple(old for old, _, _ in plan.changed.values())),
                    partial(self._write_plan, store, store_name, plan),
                ).map(lambda _: [self._answer(plan, answer) for answer in plan.answers])
            )
        )

    def _neighbours(
        self, store: VectorStore, memory: Memory, vector: Vector
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        where = evolve(same_scope(memory), alive_at=memory.updated_at)
        threshold = self.ctx.policy.duplicate_similarity or 0.0  # only asked when there is one
        return nearest(lambda limit: store.query(vector, where, limit), threshold)

    def _write_plan(self, store: VectorStore, store_name: str, plan: BatchPlan) -> Result[None, DomainError]:
        added = [memory for memory, _ in plan.added.values()]
        stored = (store.add(added, [vector for _, vector in plan.added.values()]) if added else Success(None)).bind(
            lambda _: self.ctx.index_keywords(store_name, added)
        )
        changed = list(plan.changed.values())
        return (
            stored.bind(
                lambda _: (
                    store.replace([after for _, after, _ in changed], [vector for _, _, vector in changed])
                    if changed
                    else Success(None)
                )
            )
            .bind(lambda _: in_turn(changed, lambda change: self.ctx.reindex_words(change[0], change[1])))
            .map(lambda _: None)
        )

    def _answer(self, plan: BatchPlan, answer: Answer) -> MemoryView:
        return evolve(
            self.ctx.view(plan.final(answer.memory_id)), duplicates=answer.duplicates, on_duplicate=answer.action
        )

    # --- update / move: the steps -------------------------------------------------------------------

    def _updated(self, command: UpdateMemory, fields: dict[str, Any]) -> Result[MemoryView, DomainError]:
        loaded = self.ctx.load_live(
            command.ref,
            command.store,
            include_expired=command.include_expired,
            namespace=command.namespace,
            doing="update",
        )
        return (
            loaded.bind(lambda memory: validated(lambda: evolve(memory, **fields, updated_at=self.ctx.clock.now())))
            .bind(self._save_changed)
            .map(self.ctx.view)
        )

    def _save_changed(self, memory: Memory) -> Result[Memory, DomainError]:
        return (
            self.ctx.open(memory.store, create=False)
            .bind(lambda store: store.get([memory.id]).bind(lambda found: self._save_over(store, found[0], memory)))
            .map(lambda _: memory)
        )

    def _save_over(self, store: VectorStore, before: Memory, after: Memory) -> Result[None, DomainError]:
        """Write a changed memory over its old self: metadata only, or re-embedded when its content changed."""
        if before.content == after.content:
            written = store.update_metadata([after])
        else:
            written = self.ctx.embedder.embed_documents([after.content]).bind(
                lambda vectors: store.replace([after], vectors)
            )
        return written.bind(lambda _: self.ctx.reindex_words(before, after))

    def _relocated(self, memory: Memory, target: MemoryPath) -> Result[MemoryView, DomainError]:
        if memory.path == target:
            return Success(self.ctx.view(memory))
        moved = evolve(memory, path=target, updated_at=self.ctx.clock.now())
        return (
            self.ctx.open(memory.store, create=False)
            .bind(lambda opened: self.ctx.paths_free(opened, [moved]))
            .bind(lambda opened: opened.update_metadata([moved]))
            .bind(lambda _: self.ctx.reindex_words(memory, moved))
            .map(lambda _: self.ctx.view(moved))
        )

    # --- reinforce / delete / remove: the steps -----------------------------------------------------

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
        reinforced = evolve(memory, last_reinforced_at=self.ctx.clock.now())
        return self.ctx.save_metadata(reinforced).map(lambda _: self.ctx.view(reinforced))

    def _soft_deleted(self, memory: Memory, *, include_expired: bool) -> Result[Memory, DomainError]:
        if memory.deleted:
            return Failure(
                DomainError(ErrorCode.INVALID_OPERATION, f"Memory {memory.id} is already deleted.", path=memory.id)
            )
        return self.ctx.unexpired(memory, include_expired=include_expired, doing="delete").bind(self._mark_deleted)

    def _mark_deleted(self, memory: Memory) -> Result[Memory, DomainError]:
        gone = evolve(memory, deleted=True, deleted_at=self.ctx.clock.now())
        return self.ctx.save_metadata(gone).map(lambda _: gone)

    def _deleted_at(self, ref: str, store: str | None, guard: Guard) -> Result[Memory, DomainError]:
        """The soft-deleted memory a ref names: by id, or the one soft-deleted memory at a path."""
        match parse_memory_path(ref) if ref.strip() and not is_memory_id(ref) else None:
            case Success(path):
                where = MemoryFilter(path=path, namespace=guard, include_deleted=True)
                found = self.ctx.open(store, create=False).bind(lambda opened: opened.scan(where))
                return found.bind(lambda memories: _one_deleted(str(path), [m for m in memories if visible(m, guard)]))
            case _:  # an id, or a bad ref refused in the usual words
                return self.ctx.load_ref(ref, store, namespace=guard)

    def _restored(self, memory: Memory) -> Result[MemoryView, DomainError]:
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
            self.ctx.open(memory.store, create=False)
            .bind(lambda opened: self.ctx.paths_free(opened, [back]).alt(_path_since_taken))
            .bind(lambda opened: opened.update_metadata([back]))
            .map(lambda _: self.ctx.view(back))
        )

    def _removed(self, memory: Memory) -> Result[Memory, DomainError]:
        return (
            self.ctx.open(memory.store, create=False)
            .bind(lambda opened: opened.remove([memory.id]))
            .bind(lambda _: self.ctx.unindex_keywords(memory.store, [memory.id]))
            .map(lambda _: memory)
        )


def update_memory(ctx: Context, command: UpdateMemory) -> Result[MemoryView, DomainError]:
    """Change content or metadata; content changes are re-embedded. Nothing to change is an error; an expiry already
    past expires the memory at once (as a create's does)."""
    return changes_of(command).bind(
        lambda fields: ctx.exclusive(command.store, lambda: Writing(ctx)._updated(command, fields))
    )


def move_memory(ctx: Context, command: MoveMemory) -> Result[MemoryView, DomainError]:
    """Give a memory a new path; DESTINATION_EXISTS if taken; moving onto itself changes nothing.

    An expired memory is MEMORY_EXPIRED unless include_expired (as for get)."""
    store = command.store

    def load_and_move(target: MemoryPath) -> Result[MemoryView, DomainError]:
        return ctx.load_live(
            command.ref, store, include_expired=command.include_expired, namespace=command.namespace, doing="move"
        ).bind(lambda memory: Writing(ctx)._relocated(memory, target))

    return ctx.exclusive(store, lambda: parse_memory_path(command.destination).bind(load_and_move))


def reinforce_memory(ctx: Context, command: ReinforceMemory) -> Result[MemoryView, DomainError]:
    """Reset a reinforceable memory's decay to now; stable and contextual ones refuse."""
    store = command.store
    return ctx.exclusive(
        store,
        lambda: ctx.load_live(command.ref, store, include_expired=False, namespace=command.namespace).bind(
            Writing(ctx)._reinforced
        ),
    )


def delete_memory(ctx: Context, command: DeleteMemory) -> Result[Memory, DomainError]:
    """Soft delete: the memory stays stored with deleted=true and never surfaces again.

    An expired memory is MEMORY_EXPIRED unless include_expired (as for get); `remove` and `prune` are
    the ways to get rid of expired memories for good."""
    store = command.store
    return ctx.exclusive(
        store,
        lambda: ctx.load_ref(command.ref, store, namespace=command.namespace).bind(
            lambda memory: Writing(ctx)._soft_deleted(memory, include_expired=command.include_expired)
        ),
    )


def restore_memory(ctx: Context, command: RestoreMemory) -> Result[MemoryView, DomainError]:
    """Undo a soft delete, by id or path: the memory is live again with its id and every field as they were.

    DESTINATION_EXISTS if a live memory of its namespace holds its path now (move or delete that one first);
    INVALID_OPERATION for a memory that is not deleted; a memory removed for good is MEMORY_NOT_FOUND."""
    store, steps = command.store, Writing(ctx)
    return ctx.exclusive(
        store,
        lambda: (
            ctx.guard(command.namespace)
            .bind(lambda guard: steps._deleted_at(command.ref, store, guard))
            .bind(steps._restored)
        ),
    )


def remove_memory(ctx: Context, command: RemoveMemory) -> Result[Memory, DomainError]:
    """Delete for good (MCP remove_memory), soft-deleted or not."""
    store = command.store
    return ctx.exclusive(
        store, lambda: ctx.load_ref(command.ref, store, namespace=command.namespace).bind(Writing(ctx)._removed)
    )


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


def _path_since_taken(error: DomainError) -> DomainError:
    if error.code is not ErrorCode.DESTINATION_EXISTS:
        return error
    return DomainError(
        ErrorCode.DESTINATION_EXISTS,
        f"Path '{error.path}' is taken by a live memory since the delete: move or delete that memory, then restore.",
        path=error.path,
    )


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
