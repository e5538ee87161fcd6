"""Batches as units, whole or not at all: a batch's writes journaled, committed or rolled back, and the batches a
killed writer left rolled back at the store's next open."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import (
    BatchJournal,
    Embedder,
    PendingBatch,
    RefereedCommits,
    StoreCatalog,
    VectorStore,
    WriteLocks,
)
from agent_memory.domain.results import in_turn

T = TypeVar("T")


class BatchContext(Protocol):
    """What a batch unit runs on: domain.context's Context, named here by what it offers (the context opens a store
    through recover(), so it imports this module, not the other way round)."""

    @property
    def catalog(self) -> StoreCatalog: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def locks(self) -> WriteLocks: ...
    @property
    def journal(self) -> BatchJournal: ...

    def index_keywords(self, store: str, memories: Sequence[Memory]) -> Result[None, DomainError]:
        """Keep the keyword index and the long memories' parts in step after a write."""
        ...

    def unindex_keywords(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        """Forget memories in the keyword index and their parts."""
        ...


_TAKEN_BACK = (
    "The storage server stopped answering a write after it was sent; the write was then taken back out, so nothing "
    "was stored. Try again."
)


def whole(
    ctx: BatchContext, store: VectorStore, pending: PendingBatch, write: Callable[[], Result[T, DomainError]]
) -> Result[T, DomainError]:
    """Run a batch's writes to one store as one unit: journaled before the first write, committed after the
    last; a failure (or a refused commit) rolls back what was written. Call it under the store's write lock."""
    return (
        ctx.journal.begin(pending)
        .lash(lambda error: Failure(evolve(error, message=f"{error.message} Nothing was stored.")))  # not begun
        .bind(
            lambda begun: (
                write()
                .lash(lambda error: _undone(ctx, store, begun, error))
                .bind(
                    lambda value: (
                        ctx.journal.commit(begun)
                        .map(lambda _: value)
                        .lash(lambda error: _undone(ctx, store, begun, error))
                    )
                )
            )
        )
    )


def refereed(
    ctx: BatchContext,
    referee: RefereedCommits,
    store: VectorStore,
    pending: PendingBatch,
    write: Callable[[], Result[T, DomainError]],
    locked: Callable[[Callable[[], Result[T, DomainError]]], Result[T, DomainError]],
) -> Result[T, DomainError]:
    """Run a batch that only adds new memories as one unit without the write lock: begun (its records invisible
    everywhere), written, then committed by the referee's conditional write; a failed write, or a commit refused
    or unanswered, voids it (then its records are taken out, best effort: never shown either way), unless its
    commit is found to have stood. While a reindex fences the store, it runs as `whole` does, in `locked` (the
    store's write lock)."""
    return (
        referee.begin(pending)
        .lash(lambda error: Failure(evolve(error, message=f"{error.message} Nothing was stored.")))
        .bind(
            lambda begun: (
                locked(lambda: whole(ctx, store, pending, write))
                if begun is None
                else write()
                .lash(lambda error: _refereed_undone(ctx, referee, store, begun, error).bind(lambda _: Failure(error)))
                .bind(
                    lambda value: (
                        referee.commit(begun)
                        .map(lambda _: value)
                        .lash(lambda error: _refereed_undone(ctx, referee, store, begun, error).map(lambda _: value))
                    )
                )
            )
        )
    )


def _refereed_undone(
    ctx: BatchContext, referee: RefereedCommits, store: VectorStore, batch: PendingBatch, error: DomainError
) -> Result[None, DomainError]:
    """After a failure: the batch voided (Success: its commit stood after all, an answer lost on the way) or a
    Failure saying what became of it; its records and words are taken out once it is void."""

    def settled(void: bool) -> Result[None, DomainError]:
        if not void:
            return referee.forget(batch).lash(lambda _: Success(None))
        store.remove(list(batch.created)).bind(lambda _: ctx.unindex_keywords(batch.store, list(batch.created))).bind(
            lambda _: referee.forget(batch)
        )  # best effort: a record left is never shown (its batch is VOID)
        if error.code is ErrorCode.OUTCOME_UNKNOWN:  # known after all: not stored
            return Failure(evolve(error, code=ErrorCode.BACKEND_UNAVAILABLE, message=_TAKEN_BACK))
        return Failure(evolve(error, message=f"{error.message} Nothing was stored."))

    return referee.abandon(batch).lash(lambda _: Failure(error)).bind(settled)


def _undone(ctx: BatchContext, store: VectorStore, batch: PendingBatch, error: DomainError) -> Result[T, DomainError]:
    undone = roll_back(ctx, store, batch)
    if error.code is ErrorCode.OUTCOME_UNKNOWN and isinstance(undone, Success):  # known after all: not stored
        return Failure(evolve(error, code=ErrorCode.BACKEND_UNAVAILABLE, message=_TAKEN_BACK))
    said = undone.map(lambda _: " Nothing was stored.").value_or(_left_over(store, batch))
    return Failure(evolve(error, message=f"{error.message}{said}"))


def _left_over(store: VectorStore, batch: PendingBatch) -> str:
    """What a failed batch whose rollback failed too (a full disk, say) left in the store, read back: often nothing
    (the write failed before anything was stored), else exactly how much, which the next open takes back out."""
    replaced = {memory.id: memory for memory in batch.replaced}
    match store.get([*batch.created, *replaced]):
        case Success(found):
            now = {memory.id: memory for memory in found}
        case _:
            return " Part of the batch may be stored until the store is next opened, which takes it back out."
    created = [memory_id for memory_id in batch.created if memory_id in now]
    changed = [memory_id for memory_id, before in replaced.items() if now.get(memory_id) != before]
    if not created and not changed:
        return " Nothing was stored."
    said = []
    if created:
        shown = ", ".join(created[:5]) + (", …" if len(created) > 5 else "")
        said.append(f"{len(created)} of its {len(batch.created)} new memories ({shown}) are stored")
    if changed:
        said.append(f"{len(changed)} of the {len(replaced)} memories it replaces are changed")
    return f" {' and '.join(said)} until the store is next opened, which takes the batch back out."


def roll_back(ctx: BatchContext, store: VectorStore, batch: PendingBatch) -> Result[None, DomainError]:
    """Take a batch back out: its new ids removed, the memories it replaced put back as they were (re-embedded),
    the keyword index in step; then the journal forgets it (or, when that fails, keeps it for the next open)."""
    replaced = list(batch.replaced)
    ids = [*batch.created, *(memory.id for memory in replaced)]
    undone = (
        store.remove(ids)
        .bind(lambda _: _restored(ctx, store, replaced))
        .bind(lambda _: _words_back(ctx, batch.store, ids, replaced))
    )
    return undone.bind(lambda _: ctx.journal.drop(batch)).lash(
        lambda error: ctx.journal.release(batch).bind(lambda _: Failure(error))
    )


def _restored(ctx: BatchContext, store: VectorStore, memories: list[Memory]) -> Result[None, DomainError]:
    if not memories:
        return Success(None)
    return ctx.embedder.embed_documents([m.content for m in memories]).bind(
        lambda vectors: store.add(memories, vectors)
    )


def _words_back(ctx: BatchContext, store: str, ids: list[str], replaced: list[Memory]) -> Result[None, DomainError]:
    """The keyword index in step with a rolled-back batch; an index that refuses (damaged, say) is left for
    `status` to report and `reindex` to repair: the store's records are what the rollback must settle."""
    return (
        ctx.unindex_keywords(store, ids)
        .bind(lambda _: ctx.index_keywords(store, replaced))
        .lash(lambda _: Success(None))
    )


def recover(ctx: BatchContext, store_name: str) -> Result[tuple[PendingBatch, ...], DomainError]:
    """Roll back every batch of the store whose writer died mid-write (under its write lock); the batches
    rolled back. Without such a batch this only looks (a read creates nothing)."""

    def settle() -> Result[tuple[PendingBatch, ...], DomainError]:
        return ctx.journal.interrupted(store_name).bind(lambda found: _rolled_back(ctx, store_name, found))

    return ctx.journal.interrupted(store_name).bind(
        lambda found: ctx.locks.exclusive(store_name, settle) if found else Success(())
    )


def _rolled_back(
    ctx: BatchContext, store_name: str, found: tuple[PendingBatch, ...]
) -> Result[tuple[PendingBatch, ...], DomainError]:
    if not found:
        return Success(())
    opened = ctx.catalog.open(store_name, create=False)
    return (
        opened.bind(lambda store: in_turn(found, lambda batch: roll_back(ctx, store, batch)))
        .lash(  # no store: the batch was never written (its store is made before the journal is begun)
            lambda error: (
                in_turn(found, ctx.journal.drop) if error.code is ErrorCode.STORE_NOT_FOUND else Failure(error)
            )
        )
        .map(lambda _: found)
    )
