"""Many updates, or many removals, as one write per store: the in-process commands a batching caller uses.

The LangGraph store turns concurrent `aput` / `adelete` calls into one batch (entrypoints/langgraph/batcher.py);
written one memory at a time, each paid a store write of its own (an embedded Chroma commit is ~90 ms whatever its
size), so updates and deletes ran at a tenth of the rate of new items, which were already written together.
These commands are not in the doors' table (dispatch.IN_PROCESS): their fields are records, and every door writes
one memory per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from attrs import evolve, field, frozen
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.batch_units import whole
from agent_memory.domain.command_docs import doc
from agent_memory.domain.commands import Asks, UpdateMemory
from agent_memory.domain.context import Context, is_memory_id, keyword_entry
from agent_memory.domain.errors import DomainError, ErrorCode, not_found
from agent_memory.domain.loading import load_live, load_ref, readable
from agent_memory.domain.model import Memory, check_memory_id, check_store_name
from agent_memory.domain.ports import PendingBatch, VectorStore
from agent_memory.domain.results import in_turn, validated
from agent_memory.domain.tenancy import Guard, visible
from agent_memory.domain.updating import changes_of
from agent_memory.domain.views import MemoryView

_GONE = (ErrorCode.MEMORY_NOT_FOUND, ErrorCode.STORE_NOT_FOUND)  # nothing there to remove: not an error here


@frozen(kw_only=True)
class UpdateMemories(Asks[list[MemoryView]]):
    """Many updates, each as `update` takes one, written as one unit per store: every one is checked and its memory
    loaded before any is written (a refusal changes nothing), the changed contents are embedded together, and a
    failure part-way takes the written ones back. Several updates of one memory apply in their order."""

    updates: tuple[UpdateMemory, ...] = field(metadata=doc("The updates, each as `update` takes one."))
    touch: bool = field(
        default=True,
        metadata=doc("Set updated_at to now (False: a change that is no edit, e.g. a TTL renewed by a read)."),
    )


@frozen(kw_only=True)
class RemoveMemories(Asks[list[Memory]]):
    """Delete memories for good, all in one write: those already gone are left out of the answer."""

    refs: tuple[str, ...] = field(metadata=doc("The memories' paths or ids."))
    store: str | None = field(default=None, metadata=doc("The store they are in; omit for the default store."))
    namespace: tuple[str, ...] | None = field(
        default=None, metadata=doc("Act only within this namespace or below it; a memory outside it is not found.")
    )


# --- update many ---------------------------------------------------------------------------------------------------


def update_memories(ctx: Context, command: UpdateMemories) -> Result[list[MemoryView], DomainError]:
    """Check every update, then write each store's share under its lock (see UpdateMemories)."""
    checked = Fold.collect([changes_of(update) for update in command.updates], Success(()))
    return checked.bind(lambda changes: _by_store(ctx, command.updates, changes, touch=command.touch))


def _by_store(
    ctx: Context, updates: Sequence[UpdateMemory], changes: Sequence[dict[str, Any]], *, touch: bool
) -> Result[list[MemoryView], DomainError]:
    names = [validated(partial(check_store_name, u.store or ctx.policy.default_store)) for u in updates]
    return Fold.collect(names, Success(())).bind(lambda known: _in_groups(ctx, updates, changes, known, touch=touch))


def _in_groups(
    ctx: Context,
    updates: Sequence[UpdateMemory],
    changes: Sequence[dict[str, Any]],
    names: Sequence[str],
    *,
    touch: bool,
) -> Result[list[MemoryView], DomainError]:
    groups: dict[str, list[int]] = {}
    for at, name in enumerate(names):
        groups.setdefault(name, []).append(at)
    answers: dict[int, MemoryView] = {}

    def write(store: str, ats: list[int]) -> Result[None, DomainError]:
        share = [(updates[at], changes[at]) for at in ats]
        return ctx.exclusive(store, lambda: _update_in(ctx, store, share, touch=touch)).map(
            lambda views: answers.update(zip(ats, views, strict=True))
        )

    return in_turn(groups.items(), lambda item: write(*item)).map(lambda _: [answers[at] for at in range(len(updates))])


def _update_in(
    ctx: Context, store_name: str, share: list[tuple[UpdateMemory, dict[str, Any]]], *, touch: bool
) -> Result[list[MemoryView], DomainError]:
    """Load every memory (as this batch has changed it so far), change it, then write them all as one unit."""
    now = ctx.clock.now()
    before: dict[str, Memory] = {}
    after: dict[str, Memory] = {}

    def changed(stored: Memory, fields: dict[str, Any]) -> Result[str, DomainError]:
        current = after.get(stored.id, stored)  # an earlier update of this batch: change what it left
        made = validated(partial(evolve, current, **fields, updated_at=now if touch else current.updated_at))
        return made.map(lambda memory: _noted(before, after, stored, memory))

    def step(read: dict[str, Memory], item: tuple[UpdateMemory, dict[str, Any]]) -> Result[str, DomainError]:
        return _loaded(ctx, store_name, item[0], read).bind(lambda stored: changed(stored, item[1]))

    return (
        _read_ids(ctx, store_name, [update.ref for update, _ in share])
        .bind(lambda read: in_turn(share, partial(step, read)))
        .bind(
            lambda answered: (
                ctx.open(store_name, create=False)
                .bind(lambda store: _write_changes(ctx, store, store_name, [(before[i], m) for i, m in after.items()]))
                .map(lambda _: [ctx.view(after[memory_id]) for memory_id in answered])
            )
        )
    )


def _noted(before: dict[str, Memory], after: dict[str, Memory], stored: Memory, changed: Memory) -> str:
    before.setdefault(stored.id, stored)
    after[stored.id] = changed
    return stored.id


def _canonical(ref: str) -> Result[tuple[str, str], DomainError]:
    return validated(partial(check_memory_id, ref)).map(lambda canonical: (ref, canonical))


def _read_ids(ctx: Context, store_name: str, refs: Sequence[str]) -> Result[dict[str, Memory], DomainError]:
    """The memories the refs that are ids name, by ref, read in one call (a path is looked up by itself)."""
    return Fold.collect([_canonical(ref) for ref in refs if is_memory_id(ref)], Success(())).bind(
        lambda pairs: _read_pairs(ctx, store_name, dict(pairs))
    )


def _read_pairs(ctx: Context, store_name: str, ids: dict[str, str]) -> Result[dict[str, Memory], DomainError]:
    if not ids:
        return Success({})
    found = ctx.open(store_name, create=False).bind(lambda store: store.get(list(dict.fromkeys(ids.values()))))
    return found.map(lambda memories: _by_ref(ids, memories))


def _by_ref(ids: dict[str, str], memories: list[Memory]) -> dict[str, Memory]:
    by_id = {memory.id: memory for memory in memories}
    return {ref: by_id[canonical] for ref, canonical in ids.items() if canonical in by_id}


def _loaded(ctx: Context, store: str, update: UpdateMemory, read: dict[str, Memory]) -> Result[Memory, DomainError]:
    """The memory an update names, as `load_live` finds it: within the caller's guard, live (or expired if asked)."""
    known = read.get(update.ref)
    if known is None:
        return load_live(
            ctx, update.ref, store, include_expired=update.include_expired, namespace=update.namespace, doing="update"
        )
    return (
        ctx.guard(update.namespace)
        .bind(lambda guard: Success(known) if visible(known, guard) else Failure(not_found(known.id)))
        .bind(lambda memory: readable(ctx, memory, include_expired=update.include_expired, doing="update"))
    )


def _write_changes(
    ctx: Context, store: VectorStore, store_name: str, pairs: list[tuple[Memory, Memory]]
) -> Result[None, DomainError]:
    """Metadata-only changes in one write, content changes embedded together and replaced in one write, then the
    keyword index and parts in step: journaled as one unit (a failure or a kill part-way puts every memory back);
    a single memory is written as `update` writes it, unjournaled."""
    same = [new for old, new in pairs if old.content == new.content]
    retexted = [new for old, new in pairs if old.content != new.content]

    def write(vectors: Sequence[Any]) -> Result[None, DomainError]:
        return (
            (store.update_metadata(same) if same else Success([]))
            .bind(lambda _: store.replace(retexted, vectors) if retexted else Success([]))
            .bind(lambda _: _reindexed(ctx, store_name, pairs))
        )

    embedded = ctx.embedder.embed_documents([m.content for m in retexted]) if retexted else Success([])
    if len(pairs) == 1:  # one memory's write, as `update` does it: no journal to pay (a read's TTL renewal)
        return embedded.bind(write)
    pending = PendingBatch(store_name, (), tuple(old for old, _ in pairs))
    return embedded.bind(lambda vectors: whole(ctx, store, pending, lambda: write(vectors)))


def _reindexed(ctx: Context, store: str, pairs: list[tuple[Memory, Memory]]) -> Result[None, DomainError]:
    """Context.reindex_words for many memories at once: one removal, one upsert, one embedding of parts."""
    moved = [new for old, new in pairs if keyword_entry(old).thread != keyword_entry(new).thread]
    moved_ids = {memory.id for memory in moved}
    reworded = [
        new for old, new in pairs if new.id not in moved_ids and keyword_entry(old).text != keyword_entry(new).text
    ]
    rewritten = [new for old, new in pairs if old.content != new.content]
    return (
        ctx.unindex_words(store, [memory.id for memory in moved])
        .bind(lambda _: ctx.index_words(store, [*moved, *reworded]))
        .bind(lambda _: ctx.index_parts(store, rewritten))
    )


# --- remove many ---------------------------------------------------------------------------------------------------


def remove_memories(ctx: Context, command: RemoveMemories) -> Result[list[Memory], DomainError]:
    """Find every ref (ids in one read), then remove them and their keywords and parts in one write each."""
    return ctx.exclusive(
        command.store,
        lambda: ctx.guard(command.namespace).bind(lambda guard: _remove_found(ctx, command, guard)),
    )


def _remove_found(ctx: Context, command: RemoveMemories, guard: Guard) -> Result[list[Memory], DomainError]:
    store_name = command.store or ctx.policy.default_store
    opened: Result[VectorStore | None, DomainError] = ctx.open(store_name, create=False)
    return opened.lash(_none_if_gone).bind(
        lambda store: Success([]) if store is None else _remove_in(ctx, store, store_name, command.refs, guard)
    )


def _none_if_gone(error: DomainError) -> Result[None, DomainError]:
    return Success(None) if error.code in _GONE else Failure(error)


def _remove_in(
    ctx: Context, store: VectorStore, store_name: str, refs: Sequence[str], guard: Guard
) -> Result[list[Memory], DomainError]:
    """The refs' memories (the ids in one read, each path by itself; those gone left out), removed in one write."""
    by_id = _read_ids(ctx, store_name, refs).map(lambda read: {m.id: m for m in read.values() if visible(m, guard)})
    at_paths = in_turn(
        [ref for ref in refs if not is_memory_id(ref)], lambda ref: _at_path(ctx, ref, store_name, guard)
    )
    return by_id.bind(
        lambda found: at_paths.map(lambda more: {**found, **{m.id: m for m in more if m is not None}})
    ).bind(lambda memories: _gone(ctx, store, list(memories.values())))


def _at_path(ctx: Context, ref: str, store_name: str, guard: Guard) -> Result[Memory | None, DomainError]:
    found: Result[Memory | None, DomainError] = load_ref(ctx, ref, store_name, namespace=guard)
    return found.lash(_none_if_gone)


def _gone(ctx: Context, store: VectorStore, memories: list[Memory]) -> Result[list[Memory], DomainError]:
    ids = [memory.id for memory in memories]
    if not ids:
        return Success([])
    return store.remove(ids).bind(lambda _: ctx.unindex_keywords(memories[0].store, ids)).map(lambda _: memories)
