"""The RefereedCommits port over a server engine: a batch of new memories commits by its outcome's claim, no lease."""

from __future__ import annotations

import json
import uuid

from attrs import evolve
from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.adapters.batch_journal import plain_batch
from agent_memory.adapters.commit_outcomes import KEPT, VOID
from agent_memory.adapters.lease_journal import KIND, REFEREED, LeaseBatchJournal
from agent_memory.adapters.shared.ledger import LedgerRecord
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import PendingBatch

FENCE = "fence"  # the kind and key prefix of a reindex's fence: `fence/<store>`


class RefereedBatches:
    """Batches of new memories committed without the store's lease, beside the lease journal (its ledger, its
    outcomes, its `still_wanted` gate):

    - `begin`: a batch record (`batch/<store>/<key>`, kind "batch", field `refereed`) so a count leaves its records
      out while it runs, and the key its records and path claims carry (CommitOutcomes.begun); no lease is taken,
      and the lease journal never reads such a record as an interrupted batch (no lease says whether its writer
      lives: only a contender for one of its paths voids it, ClaimedStore);
    - `commit`: the outcome `commit/<store>/<key>` claimed KEPT (inserted only if absent): refused when a contender
      claimed it VOID first, naming the memory that took the path (LeaseBatchJournal's rule);
    - `abandon`: the outcome claimed VOID (whether VOID is what stood); `forget`: the batch record removed;
    - `fence` (a reindex, under the lease): a record `fence/<store>` put, then every refereed batch listed claimed
      VOID (one that claimed KEPT first stands: its records were written before, so the reindex reads them);
      `begin` reads the fence after putting its record and, fenced, answers None (the create takes the lease).
      A reindex killed before `unfence` leaves the store's creates under the lease until the next reindex ends.
    A record of a writer that died before `forget` stays until a contender for one of its paths voids the batch and
    takes its records and that record out (ClaimedStore); meanwhile its batch is left out of counts as its records
    are of reads (no outcome, or VOID): the engine's decision, with no timer.
    """

    def __init__(self, journal: LeaseBatchJournal) -> None:
        self.journal = journal
        self.ledger = journal.ledger
        self.outcomes = journal.outcomes

    def begin(self, batch: PendingBatch) -> Result[PendingBatch | None, DomainError]:
        begun = evolve(batch, key=uuid.uuid4().hex)
        record = LedgerRecord(
            key=_key(batch.store, begun.key),
            store=batch.store,
            kind=KIND,
            seq=0,
            fields={"released": False, REFEREED: True},
            text=json.dumps(plain_batch(begun)),
        )

        def unfenced(found: dict[str, LedgerRecord]) -> Result[PendingBatch | None, DomainError]:
            if _fence_key(batch.store) in found:  # a reindex runs: this batch goes under the lock instead
                return self.ledger.remove([record.key]).map(lambda _: None)
            self.outcomes.begun(begun, fresh=True)
            return Success(begun)

        # the record first, the fence read after: a reindex that fenced after this read lists the record, and voids it
        return self.ledger.put(record).bind(lambda _: self.ledger.read([_fence_key(batch.store)])).bind(unfenced)

    def fence(self, store: str) -> Result[None, DomainError]:
        """The fence put first, then every refereed batch listed decided (VOID claimed; KEPT stands): a batch that
        begins later reads the fence and goes under the lock (sequential at the engine: its record was put after
        this listing, so its read comes after the fence's put)."""
        mark = LedgerRecord(key=_fence_key(store), store=store, kind=FENCE, seq=0, fields={"fenced": True})

        def decided(found: list[LedgerRecord]) -> Result[None, DomainError]:
            keys = [record.key.rsplit("/", 1)[-1] for record in found if record.fields.get(REFEREED, False)]
            return Fold.collect([self.outcomes.claim(store, key, VOID) for key in keys], Success(())).map(
                lambda _: None
            )

        return self.ledger.put(mark).bind(lambda _: self.ledger.listed(store, KIND)).bind(decided)

    def unfence(self, store: str) -> Result[None, DomainError]:
        return self.ledger.remove([_fence_key(store)]).map(lambda _: None)

    def commit(self, batch: PendingBatch) -> Result[None, DomainError]:
        if not self.journal.still_wanted():
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    "The caller went away before the batch could be acknowledged, so it was not kept.",
                    path=batch.store,
                )
            )
        return self.outcomes.claim(batch.store, batch.key, KEPT).bind(
            # a record left (the engine failed meanwhile) hides nothing: its batch's records are KEPT, so shown
            lambda kept: self.forget(batch).lash(lambda _: Success(None)) if kept else Failure(self.journal.lost(batch))
        )

    def abandon(self, batch: PendingBatch) -> Result[bool, DomainError]:
        return self.outcomes.claim(batch.store, batch.key, VOID)

    def forget(self, batch: PendingBatch) -> Result[None, DomainError]:
        self.outcomes.ended(batch)
        return self.ledger.remove([_key(batch.store, batch.key)]).map(lambda _: None)


def _fence_key(store: str) -> str:
    return f"{FENCE}/{store}"


def _key(store: str, key: str) -> str:
    return f"{KIND}/{store}/{key}"
