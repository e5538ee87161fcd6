"""The RefereedCommits port over a server engine: a batch of new memories commits by its outcome's claim, no lease."""

from __future__ import annotations

import json
import uuid

from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.adapters.batch_journal import plain_batch
from agent_memory.adapters.commit_outcomes import KEPT, VOID
from agent_memory.adapters.lease_journal import KIND, REFEREED, LeaseBatchJournal
from agent_memory.adapters.shared.ledger import LedgerRecord
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import PendingBatch


class RefereedBatches:
    """Batches of new memories committed without the store's lease, beside the lease journal (its ledger, its
    outcomes, its `still_wanted` gate):

    - `begin`: a batch record (`batch/<store>/<key>`, kind "batch", field `refereed`) so a count leaves its records
      out while it runs, and the key its records and path claims carry (CommitOutcomes.begun); no lease is taken,
      and the lease journal never reads such a record as an interrupted batch (no lease says whether its writer
      lives: only a contender for one of its paths voids it, ClaimedStore);
    - `commit`: the outcome `commit/<store>/<key>` claimed KEPT (inserted only if absent): refused when a contender
      claimed it VOID first, naming the memory that took the path (LeaseBatchJournal's rule);
    - `abandon`: the outcome claimed VOID (whether VOID is what stood); `forget`: the batch record removed.
    A record of a writer that died before `forget` stays: its batch is left out of counts as its records are of
    reads (no outcome, or VOID), the engine's decision, with no timer.
    """

    def __init__(self, journal: LeaseBatchJournal) -> None:
        self.journal = journal
        self.ledger = journal.ledger
        self.outcomes = journal.outcomes

    def begin(self, batch: PendingBatch) -> Result[PendingBatch, DomainError]:
        begun = evolve(batch, key=uuid.uuid4().hex)
        record = LedgerRecord(
            key=_key(batch.store, begun.key),
            store=batch.store,
            kind=KIND,
            seq=0,
            fields={"released": False, REFEREED: True},
            text=json.dumps(plain_batch(begun)),
        )
        return self.ledger.put(record).map(lambda _: self.outcomes.begun(begun, fresh=True)).map(lambda _: begun)

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


def _key(store: str, key: str) -> str:
    return f"{KIND}/{store}/{key}"
