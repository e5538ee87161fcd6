"""A server engine's stores with every write that puts a memory at a path committed by a path claim (PathClaims)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.adapters.commit_outcomes import VOID, CommitOutcomes
from agent_memory.adapters.lease_journal import KIND as BATCH
from agent_memory.adapters.lease_journal import REFEREED, pending
from agent_memory.adapters.path_claims import PathClaims, Place
from agent_memory.adapters.revision_claims import RevisionClaims
from agent_memory.adapters.shared.commit_mark import mark_of, marked
from agent_memory.adapters.shared.feed_probe import reading
from agent_memory.domain.errors import DomainError
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DEFAULT_STORE, Memory
from agent_memory.domain.ports import CategoryRegistry, PendingBatch, StoreCatalog, Vector, VectorStore

Courtesy = Callable[[str], bool]
Judgement = Result[str | None, DomainError]
# run a judgement under the store's write lease (WriteLocks.exclusive): how a contender takes a path from a batch
Contend = Callable[[str, Callable[[], Judgement]], Judgement]


def _always(_: str) -> bool:
    return True


_ON_ITS_WAY = "is being written there by another writer (or its writer stopped before the write landed)"


def place_of(memory: Memory) -> Place | None:
    """Where a memory is live: (store, namespace, path), or None (no path, or soft-deleted)."""
    if memory.path is None or memory.deleted:
        return None
    return (memory.store, memory.namespace, str(memory.path))


class ClaimingCatalog:
    """A StoreCatalog whose stores claim paths before writing (ClaimedStore); everything else is the inner one's."""

    def __init__(
        self, inner: StoreCatalog, claims: PathClaims, *, may_void: Courtesy = _always, contend: Contend | None = None
    ) -> None:
        self.inner = inner
        self.claims = claims
        self.outcomes = CommitOutcomes.of(claims.ledger)
        self.may_void = may_void
        self.contend = contend

    @property
    def backend(self) -> str:
        return self.inner.backend

    def open(self, name: str, *, create: bool) -> Result[VectorStore, DomainError]:
        return self.inner.open(name, create=create).map(
            lambda store: ClaimedStore(
                store, self.claims, self.outcomes, may_void=self.may_void, contend=self.contend, name=name
            )
        )

    def categories(self, name: str) -> Result[CategoryRegistry, DomainError]:
        return self.inner.categories(name)

    def names(self) -> Result[list[str], DomainError]:
        return self.inner.names()

    def health(self) -> Result[Mapping[str, str], DomainError]:
        return self.inner.health()

    def keep_warm(self) -> None:
        self.inner.keep_warm()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class ClaimedStore:
    """The VectorStore over a server engine, where writers of many machines meet: the engine decides who may put a
    memory at a path, by the path's claims, not the write lock.

    - `add` (create, batch, import): claims the path of each memory first, then writes; a memory whose path is
      claimed by another live, or still arriving, memory is refused (DESTINATION_EXISTS) and nothing is written;
    - `update_metadata`, `replace` (update, move, delete, restore, reinforce, category changes): claim the path a
      memory moves to (or is restored at) before writing, and free the path it left after; inside that, claim each
      stored memory's next revision (RevisionClaims: a writer that read an older revision is refused, CONFLICT),
      and answer the memories at the revisions they claimed;
    - `remove` (remove for good, a batch rolled back): frees the paths of the memories removed, after, and claims
      their next revision as a removal (an id added back later is not rolled forward to its state before).
    A writer that pauses, for any time, between its checks and its write either holds its claim (nobody else can
    take the path meanwhile) or loses it when it resumes (refused, nothing written). On a failed write the claims
    just taken are freed again.
    What a running batch adds carries its key (CommitOutcomes.mark_for), and so does its path claim: `get`, `query`
    and `scan` answer a batch's records only once it committed (CommitOutcomes.shown), on every node; a path whose
    holder was never written is freed by claiming that batch's outcome VOID (`_occupied`). Call every write under
    the store's write lock (the WriteLocks port's rule): holding it is what lets a contender void another's batch
    (`may_void(store)`: whether this process holds the store's lease; the lease orders, the claim decides).
    """

    def __init__(
        self,
        inner: VectorStore,
        claims: PathClaims,
        outcomes: CommitOutcomes | None = None,
        *,
        may_void: Courtesy = _always,
        contend: Contend | None = None,
        name: str = DEFAULT_STORE,
    ) -> None:
        self.inner = inner
        self.name = name  # the store's, whose running batches `count` leaves out
        self.claims = claims
        self.revisions = RevisionClaims(claims.ledger)  # who may change an existing memory (revision_claims.py)
        self.outcomes = CommitOutcomes.of(claims.ledger) if outcomes is None else outcomes
        self.may_void = may_void  # store → whether this process holds its write lease (the courtesy that orders)
        self.contend = contend  # takes the lease to void another's batch (None: only a holder of it voids)

    # --- writes

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        memories = [marked(memory, self.outcomes.mark_for(memory.id)) for memory in memories]
        placed = [memory for memory in memories if place_of(memory) is not None]
        if not placed:  # nothing to claim (no read either: a store without paths pays nothing)
            return self.inner.add(memories, embeddings)
        if all(self.outcomes.fresh(mark_of(memory)) for memory in memories):  # new ids only: none stored anywhere
            return self._claimed([(None, memory) for memory in memories], lambda: self.inner.add(memories, embeddings))
        # an id stored already (an import, a batch rolled back) may be at another path: read it, to free that one
        return self._before(memories).bind(
            lambda pairs: self._claimed(pairs, lambda: self.inner.add(memories, embeddings))
        )

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        return self._before(memories).bind(lambda pairs: self.revisions.write(self.inner, pairs, None, self._revised))

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        return self._before(memories).bind(
            lambda pairs: self.revisions.write(self.inner, pairs, embeddings, self._revised)
        )

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        return self.inner.get(ids).bind(
            lambda gone: (
                self.inner.remove(ids)
                .bind(lambda _: self._release([(place, m.id) for m in gone if (place := place_of(m)) is not None]))
                .bind(lambda _: self.revisions.removed(gone))
            )
        )

    # --- reads and the rest: the inner store's

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        with reading():  # a caught-up node mirror may answer it (adapters/shared/feed_probe.py); a write's checks never
            found = self.inner.get(ids)
        return found.bind(self.outcomes.shown)

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        def sifted(pairs: list[tuple[Memory, float]]) -> Result[list[tuple[Memory, float]], DomainError]:
            score = {memory.id: similarity for memory, similarity in pairs}
            return self.outcomes.shown([memory for memory, _ in pairs]).map(
                lambda shown: [(memory, score[memory.id]) for memory in shown]
            )

        return self.inner.query(embedding, where, limit).bind(sifted)

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        return self.inner.scan(where).bind(self.outcomes.shown)

    def count(self) -> Result[int, DomainError]:
        """The records reads answer: the engine's count less those of batches begun and not committed (listed
        first, so one that commits meanwhile is counted, as a read a moment later would answer it)."""

        def hidden(batches: Sequence[PendingBatch]) -> Result[int, DomainError]:
            ids = [memory_id for batch in batches for memory_id in batch.created]
            if not ids:
                return Success(0)
            return self.inner.get(ids).bind(
                lambda found: self.outcomes.shown(found).map(lambda shown: len(found) - len(shown))
            )

        return pending(self.claims.ledger, self.name).bind(
            lambda batches: self.inner.count().bind(
                lambda total: hidden(batches).map(lambda left_out: total - left_out)
            )
        )

    def embedding_model(self) -> Result[str | None, DomainError]:
        return self.inner.embedding_model()

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        return self.inner.problems()

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        return self.inner.advisories()

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        with reading():
            return self.inner.passing(ids, where)

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        with reading():
            return self.inner.similarities(embedding, ids)

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        return self.inner.rebuild(memories, embeddings, embedding_model)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # --- helpers

    def _before(self, memories: Sequence[Memory]) -> Result[list[tuple[Memory | None, Memory]], DomainError]:
        """Each memory to write with its stored self (None when not stored)."""
        return self.inner.get([m.id for m in memories]).map(
            lambda found: [(next((f for f in found if f.id == m.id), None), m) for m in memories]
        )

    def _revised(
        self, pairs: Sequence[tuple[Memory | None, Memory]], write: Callable[[], Result[None, DomainError]]
    ) -> Result[None, DomainError]:
        """`_claimed` for a change of stored memories: each claim names the revision its memory's write claims."""
        return self._claimed(pairs, write, revised=True)

    def _claimed(
        self,
        pairs: Sequence[tuple[Memory | None, Memory]],
        write: Callable[[], Result[None, DomainError]],
        *,
        revised: bool = False,
    ) -> Result[None, DomainError]:
        """Claim each new place, write, then free each place left; on a failure free what was claimed. `revised`:
        the pairs' stored memories are written at their revision (RevisionClaims), which each claim names."""
        wanted = [
            (place, after.id, after.revision if revised and before is not None else 0)
            for before, after in pairs
            if (place := place_of(after)) is not None and (before is None or place_of(before) != place)
        ]
        left = [
            (place, before.id)
            for before, after in pairs
            if before is not None and (place := place_of(before)) is not None and place_of(after) != place
        ]
        taken: list[tuple[Place, str]] = []
        for place, holder, revision in wanted:
            commit = self.outcomes.mark_for(holder)
            occupied = partial(self._occupied, place, own=commit)
            match self.claims.claim(place, holder, occupied, commit=commit, revision=revision):
                case Success(_):
                    taken.append((place, holder))
                    if commit:
                        self.outcomes.placed(commit, place, holder)
                case Failure(error):
                    self._release(taken)
                    return Failure(error)

        def undo(error: DomainError) -> Result[None, DomainError]:
            self._release(taken)  # best effort: a path left claimed reads as held by a memory on its way there
            return Failure(error)

        return write().lash(undo).map(lambda _: self._release(left)).map(lambda _: None)

    def _occupied(self, place: Place, holder: str, *, own: str = "") -> Result[str | None, DomainError]:
        """How a path's newest holder holds it while it is, or may yet be, live there; None once it is stored there
        and expired, or its batch is VOID. A holder not stored yet, stored at another path or soft-deleted is a write
        still on its way (a create, a move, a restore), since a move away and a delete free the path after their
        write; or one whose writer stopped before its write landed. A create's claim names its batch: this writer
        holds the store's write lock, so that batch's writer lost it (stopped, or stalled past its lease), and the
        path is freed by claiming the batch VOID (refused when it committed meanwhile: judged again). A move's or a
        restore's claim names the revision its write claims: the path is freed, likewise, by claiming that revision
        first with the memory as it is (RevisionClaims.void), unless the move's revision was claimed already (the
        move stands: its record is brought up to it, and the memory holds the path). Either way a holder found
        elsewhere after its write stood has moved away since, its writer dead before freeing the path: free too.
        Claims that name neither (older ones) keep the path taken until that memory is moved there and away. `own`:
        the batch of the claiming write, which voids no other once it is VOID itself (_voided)."""
        now = datetime.now(UTC)
        commit = self.claims.commit_of(place, holder)
        revision = self.claims.revision_of(place, holder)

        def judged(found: list[Memory]) -> Result[str | None, DomainError]:
            memory = found[0] if found else None
            if memory is None or place_of(memory) != place:  # not there (yet): a write on its way, or given up
                if (
                    commit
                    and not self.outcomes.runs(commit)
                    and (voided := self._contended(place, holder, commit, own))
                ):
                    return voided
                if (
                    memory is not None
                    and revision
                    and (voided := self._courteously(place[0], partial(self._unmoved, place, memory, revision, now)))
                ):
                    return voided
                if memory is None:
                    return Success(_ON_ITS_WAY)
                return Success(
                    "is being moved or restored there by another writer (or its writer stopped before it landed)"
                )
            if key := mark_of(memory):  # written by a batch: gone with it if it was voided
                return self.outcomes.decided(memory.store, key).bind(
                    lambda outcome: (
                        Success(None if outcome == VOID or memory.is_expired(now) else "holds it")
                        if outcome or self.outcomes.runs(key)
                        else self._contended(place, holder, key, own) or Success("holds it")
                    )
                )
            return Success(None if memory.is_expired(now) else "holds it")

        return self.inner.get([holder]).bind(judged)

    def _contended(self, place: Place, holder: str, commit: str, own: str = "") -> Judgement | None:
        """The judgement of a path held by batch `commit`, of another process and undecided, once this writer voided
        it (or found it KEPT meanwhile): at once when this process holds the store's lease, else after taking it
        (`contend`: a batch of a lease's holder is never voided while it holds it; a batch that holds none, a
        refereed create, is voided by the first contender, whether its writer died or is still on its way);
        None when this writer may not void it (no lease, no `contend`): the path stays taken."""
        return self._courteously(place[0], partial(self._voided, place, holder, commit, own))

    def _courteously(self, store: str, void: Callable[[], Judgement]) -> Judgement | None:
        """`void` run by a holder of the store's lease: at once when this process holds it, else after taking it
        (`contend`); None when this writer may not (no lease, no `contend`)."""
        if self.may_void(store):
            return void()
        if self.contend is None:
            return None
        return self.contend(store, void)

    def _unmoved(self, place: Place, memory: Memory, revision: int, now: datetime) -> Judgement:
        """A move's or restore's write onto `place` made void (its revision claimed first with the memory as it is);
        the path is still the memory's if that revision was claimed already (the move stands)."""
        return self.revisions.void(self.inner, memory, revision).map(
            lambda now_is: "holds it" if now_is and self._lives_at(now_is, place, now) else None
        )

    @staticmethod
    def _lives_at(memory: Memory, place: Place, now: datetime) -> bool:
        return place_of(memory) == place and not memory.is_expired(now)

    def _voided(self, place: Place, holder: str, commit: str, own: str = "") -> Result[str | None, DomainError]:
        """A holder never written, of batch `commit`: None (the path is free) once that batch is VOID, by this claim
        or an earlier one; KEPT means it was written after the read, or written and removed since: read again.
        Unless this writer's own batch (`own`) is VOID already, read under the lease before voiding: two batches
        crossing on two paths would otherwise void each other, and neither path be kept; the lease orders the two
        voids, so the second finds its batch voided by the first and gives the path up."""

        def unless_voided(outcome: str) -> Result[str | None, DomainError]:
            if outcome == VOID:
                return Success("holds it: its batch voided this write's batch first, over another path of both")
            return self.outcomes.claim(place[0], commit, VOID).bind(after)

        def after(void: bool) -> Result[str | None, DomainError]:
            if void:
                self._swept(place[0], commit)
                return Success(None)
            return self.inner.get([holder]).map(
                lambda found: "holds it" if found and place_of(found[0]) == place else None
            )

        if not own:
            return self.outcomes.claim(place[0], commit, VOID).bind(after)
        return self.outcomes.decided(place[0], own).bind(unless_voided)

    def _swept(self, store: str, commit: str) -> None:
        """A voided lease-free batch's records taken out of the engine, with its batch record (best effort: what is
        left is never shown, its batch being VOID). A batch of a lease's holder is left to the journal's rollback
        (it may have replaced memories, which that puts back)."""
        key = f"{BATCH}/{store}/{commit}"
        match self.claims.ledger.read([key]):
            case Success(found) if key in found and found[key].fields.get(REFEREED, False):
                try:
                    ids = [str(memory_id) for memory_id in json.loads(found[key].text)["created"]]
                except (ValueError, KeyError, TypeError):
                    return
                self.inner.remove(ids).bind(lambda _: self.claims.ledger.remove([key]))
            case _:
                return

    def _release(self, places: Sequence[tuple[Place, str]]) -> Result[None, DomainError]:
        return Fold.collect([self.claims.release(place, holder) for place, holder in places], Success(())).map(
            lambda _: None
        )
