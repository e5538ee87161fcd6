"""The handlers that create memories, one or a batch (at a free path or not), and the steps they share: build, embed,
settle near-duplicates, write as one unit. Changing a memory is domain/updating.py; taking it out, deleting.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

import attrs
from attrs import evolve, frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.batch_units import refereed, whole
from agent_memory.domain.commands import (
    CreateMemories,
    CreateMemory,
)
from agent_memory.domain.context import Context, optional_path
from agent_memory.domain.duplicates import (
    Answer,
    BatchPlan,
    DuplicatePolicy,
    Fresh,
    nearest,
    parse_duplicate_policy,
    plan_batch,
    same_scope,
)
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.idempotency import (
    KEYS_ARE_SINGLE,
    Found,
    how_to_check,
    keyed_create,
    keyed_memory_id,
    nothing_found,
)
from agent_memory.domain.model import (
    Memory,
    check_store_name,
    new_memory_id,
    parse_decay_policy,
)
from agent_memory.domain.path_rules import paths_free
from agent_memory.domain.paths import MemoryPath, parse_memory_path
from agent_memory.domain.ports import PendingBatch, RefereedCommits, Vector, VectorStore
from agent_memory.domain.progress import Count, embedded
from agent_memory.domain.results import in_turn, validated
from agent_memory.domain.tenancy import new_memory_namespace
from agent_memory.domain.views import MemoryView, Progress, quiet

# A command field that names a Memory field sets it as given, but for those read first (the store by name, the
# namespace and path checked, the decay policy parsed, the time the memory's own).
_CREATE_READS = frozenset({"store", "namespace", "path", "global_", "decay_policy", "created_at"})
_MEMORY_FIELDS = attrs.fields(Memory)
_CREATE_COPIES = tuple(
    a.name for a in attrs.fields(CreateMemory) if hasattr(_MEMORY_FIELDS, a.name) and a.name not in _CREATE_READS
)


def create_memory(ctx: Context, command: CreateMemory) -> Result[MemoryView, DomainError]:
    """Store a new memory with a fresh UUID; its confidence starts at 1.0. With a path, the path must be free
    (DESTINATION_EXISTS otherwise); the store and categories come into being as needed. With an idempotency key,
    its id comes from the key and a retry answers the memory the first stored (domain.idempotency)."""
    if command.idempotency_key is not None:
        return keyed_create(ctx, ctx.keys, command, partial(_create_one, ctx))
    return _create_one(ctx, command)


def _create_one(ctx: Context, command: CreateMemory, found: Found = nothing_found) -> Result[MemoryView, DomainError]:
    """One create: checked and embedded first, then written under the store's write lock, which a path's check
    shares with the write (the batch refuses a taken path, per namespace: one check, not two). `found`, run under
    the lock first, is what a keyed create's first attempt already stored (domain.idempotency)."""
    if command.path is None:
        return _create_many(ctx, [command], found=found).map(lambda views: views[0])
    raw_path = command.path
    return (
        new_memory_namespace(ctx.tenant, command.namespace)
        .bind(lambda _: parse_memory_path(raw_path))
        .bind(lambda path: _create_many(ctx, [evolve(command, path=str(path))], found=found))
        .map(lambda views: views[0])
    )


def create_memories(ctx: Context, command: CreateMemories) -> Result[list[MemoryView], DomainError]:
    """Store a batch, embedded a slice at a time (progress counts the memories embedded; a store's part is written
    once all of it is embedded); all are validated before any is written. Idempotency keys are for single creates."""
    if any(each.idempotency_key is not None for each in command.memories):
        return Failure(invalid_input(KEYS_ARE_SINGLE))
    return _create_many(ctx, command.memories, command.progress)


def _create_many(
    ctx: Context, commands: Sequence[CreateMemory], progress: Progress = quiet, found: Found = nothing_found
) -> Result[list[MemoryView], DomainError]:
    steps, now = Creating(ctx), ctx.clock.now()
    built = Fold.collect([steps._new_memory(command, now) for command in commands], Success(()))
    return built.bind(lambda batch: steps._write_batch(batch, Count(len(batch), progress), found))


@frozen
class Creating:
    """The steps of a create, one memory or a batch, on one context."""

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

    def _write_batch(
        self, batch: tuple[Fresh, ...], count: Count, found: Found
    ) -> Result[list[MemoryView], DomainError]:
        """Each store's part embedded (a slice at a time, each counted) before its write lock is taken, then written
        under it: the lock covers only what must be fresh (the model, free paths, near-duplicates) and the writes,
        so writers to one store embed in parallel."""
        by_store: dict[str, list[int]] = {}
        for index, fresh in enumerate(batch):
            by_store.setdefault(fresh.memory.store, []).append(index)
        answers: dict[int, MemoryView] = {}

        def write(store_name: str, indexes: list[int]) -> Result[None, DomainError]:
            part = [batch[index] for index in indexes]
            return (
                embedded(self.ctx.embedder, [fresh.memory.content for fresh in part], count)
                .bind(lambda vectors: self._committed(store_name, part, vectors, found))
                .map(lambda views: answers.update(zip(indexes, views, strict=True)))
            )

        written = in_turn(by_store.items(), lambda item: write(*item)).lash(
            lambda error: how_to_check([fresh.memory for fresh in batch], error)
        )
        return written.map(lambda _: [answers[index] for index in range(len(batch))])

    def _committed(
        self, store_name: str, part: list[Fresh], vectors: list[Vector], found: Found
    ) -> Result[list[MemoryView], DomainError]:
        """A part that only adds new memories, over a server engine (a referee), commits without the write lock:
        the engine's conditional writes decide (paths claimed, the outcome claimed once). A part whose near-duplicates
        may skip or update (it must see the creates of its scope before it) and a keyed create (its first attempt
        read under the lock) take the store's write lock, as every write does without a referee."""
        referee = self.ctx.referee
        if referee is not None and found is nothing_found and self._adds_only(part):
            return self._write_new(store_name, part, vectors, found, referee)
        return self.ctx.exclusive(store_name, partial(self._write_new, store_name, part, vectors, found))

    def _adds_only(self, part: list[Fresh]) -> bool:
        return self.ctx.policy.duplicate_similarity is None or all(
            fresh.policy is DuplicatePolicy.KEEP for fresh in part
        )

    def _write_new(
        self,
        store_name: str,
        batch: list[Fresh],
        vectors: list[Vector],
        found: Found,
        referee: RefereedCommits | None = None,
    ) -> Result[list[MemoryView], DomainError]:
        return found().bind(
            lambda view: (
                Success([view])
                if view is not None
                else self.ctx.open(store_name, create=True)
                .bind(self.ctx.check_model)
                .bind(lambda store: paths_free(store, [fresh.memory for fresh in batch]))
                .bind(lambda store: self._store_new(store, store_name, batch, vectors, referee))
            )
        )

    def _store_new(
        self,
        store: VectorStore,
        store_name: str,
        batch: list[Fresh],
        vectors: list[Vector],
        referee: RefereedCommits | None = None,
    ) -> Result[list[MemoryView], DomainError]:
        """Settle the batch's near-duplicates (one nearest-neighbour query each, with the vector embedded before
        the lock), then add the new memories, change the ones updated and index their words as one unit: a
        failure or a kill part-way leaves none of it (the journal records the new ids and the updated memories as
        they were before the first write; the next open takes a killed batch back out). With a `referee` (a part
        that only adds), the unit is the referee's: its records stay invisible until its outcome is claimed."""

        def unit(plan: BatchPlan) -> Result[None, DomainError]:
            pending = PendingBatch(store_name, tuple(plan.added), tuple(old for old, _, _ in plan.changed.values()))
            write = partial(self._write_plan, store, store_name, plan)
            if referee is not None and not plan.changed:
                return refereed(self.ctx, referee, store, pending, write, partial(self.ctx.exclusive, store_name))
            return whole(self.ctx, store, pending, write)

        return plan_batch(batch, vectors, partial(self._neighbours, store), self.ctx.policy.duplicate_similarity).bind(
            lambda plan: unit(plan).map(lambda _: [self._answer(plan, answer) for answer in plan.answers])
        )

    def _neighbours(
        self, store: VectorStore, memory: Memory, vector: Vector, counts: Callable[[Memory], bool]
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        where = evolve(same_scope(memory), alive_at=memory.updated_at)
        threshold = self.ctx.policy.duplicate_similarity or 0.0  # only asked when there is one
        return nearest(lambda limit: store.query(vector, where, limit), threshold, counts=counts)

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
                    else Success([])
                )
            )
            .bind(lambda _: in_turn(changed, lambda change: self.ctx.reindex_words(change[0], change[1])))
            .map(lambda _: None)
        )

    def _answer(self, plan: BatchPlan, answer: Answer) -> MemoryView:
        return evolve(
            self.ctx.view(plan.final(answer.memory_id)), duplicates=answer.duplicates, on_duplicate=answer.action
        )
