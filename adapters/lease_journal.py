"""The BatchJournal port held in the storage engine: one Ledger record per running batch, tied to its writer's lease."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.adapters.batch_journal import plain_batch
from agent_memory.adapters.commit_outcomes import KEPT, VOID, CommitOutcomes
from agent_memory.adapters.lease_locks import LeaseWriteLocks
from agent_memory.adapters.lease_tickets import released
from agent_memory.adapters.path_claims import FREE, PathClaims, taken_by
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.adapters.shared.plain import memory_from_plain
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import PendingBatch

KIND = "batch"
REFEREED = "refereed"  # a batch record's field: its writer holds no lease (refereed_batches.py), never "interrupted"
UNREADABLE = (ValueError, KeyError, TypeError)  # a record that is not a batch: left alone, never rolled back


def _always() -> bool:
    return True


class LeaseBatchJournal:
    """Ledger records of kind "batch": the pending batch as JSON text (FileBatchJournal's shape), seq = the epoch of
    the store's lease its writer held when it began.

    A batch is running while that lease is: `interrupted(store)` answers the batches whose lease was released or
    has expired, and those released by their writer. Under the store's write lock (as the port asks) this is exact:
    the caller holds epoch E, so a batch of an earlier epoch has no writer, and one of epoch E is this process's;
    once it found none to roll back it does not list them again while this process holds epoch E (the lease is
    handed between its threads and kept between its writes).
    Outside it (a store being opened: is there anything to roll back?) it answers from the ledger alone: the batches
    whose ticket is gone (pruned), released by its holder, or marked expired by the waiter that passed it over once
    it went a ttl unrenewed; no clock is read, so a writer whose wall clock is off never makes a reader take the
    lease. The rollback itself runs under the lock and asks again.
    A batch commits by claiming its outcome record (`commit/<store>/<key>`, inserted only if absent; CommitOutcomes)
    as KEPT; a node that rolls it back claims the same record as VOID first, and rolls back only if VOID is what was
    stored; until KEPT, every reader leaves the batch's records out (they carry its key).
    So of a writer that stalled past its lease and the node that took the lease over, exactly one decides: the
    writer is told "stored" only if its records were not rolled back, and they are not rolled back once it was.
    `commit` also refuses, as a courtesy, when the writer's lease may have been taken over (not renewed for 2/3 of
    its ttl): the caller rolls the batch back rather than acknowledge writes a later holder may have raced.
    Outcome records stay (one small record per batch).
    """

    # every read of a server's store leaves a batch's records out until its outcome is KEPT (ClaimedStore, by the
    # marks CommitOutcomes gives them): a reader rolls back nothing and takes no lease; its writers recover it
    hides_unfinished = True

    def __init__(self, leases: LeaseWriteLocks, *, still_wanted: Callable[[], bool] = _always) -> None:
        self.leases = leases
        self.ledger = leases.ledger
        self.outcomes = CommitOutcomes.of(leases.ledger)
        self.still_wanted = still_wanted
        self._begun: dict[str, LedgerRecord] = {}  # key → the record of a batch this process runs
        self._clean: dict[str, int] = {}  # store → the epoch under which this process found nothing to roll back

    def begin(self, batch: PendingBatch) -> Result[PendingBatch, DomainError]:
        lease = self.leases.held(batch.store)
        if lease is None:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"A batch of writes to store '{batch.store}' was begun without its write lock. Nothing was written.",
                    path=batch.store,
                )
            )
        begun = evolve(batch, key=uuid.uuid4().hex)
        record = LedgerRecord(
            key=_key(batch.store, begun.key),
            store=batch.store,
            kind=KIND,
            seq=lease.epoch,
            fields={"released": False},
            text=json.dumps(plain_batch(begun)),
        )
        self._begun[record.key] = record
        return self.ledger.put(record).map(lambda _: self.outcomes.begun(begun)).map(lambda _: begun)

    def commit(self, batch: PendingBatch) -> Result[None, DomainError]:
        if not self.still_wanted():
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    "The caller went away before the batch could be acknowledged, so it was not kept.",
                    path=batch.store,
                )
            )
        lease = self.leases.held(batch.store)
        if lease is None or not lease.live():
            lapsed = DomainError(
                ErrorCode.STORAGE_ERROR,
                f"The write lock of store '{batch.store}' could not be renewed in time (the storage server was "
                "slow or unreachable), so another writer may have taken it: the batch was not kept. Try again.",
                path=batch.store,
            )
            # voided meanwhile by the writer that took it over: say what that writer did instead
            decided = self.outcomes.decided(batch.store, batch.key).value_or("")
            return Failure(self.lost(batch) if decided == VOID else lapsed)
        outcome = self.outcomes.claim(batch.store, batch.key, KEPT)
        return outcome.bind(lambda kept: self.drop(batch) if kept else Failure(self.lost(batch)))

    def lost(self, batch: PendingBatch) -> DomainError:
        """Why a voided batch was not kept: a path of it another writer took meanwhile (DESTINATION_EXISTS naming
        the memory there), else a rollback by the node that took the store over."""
        claims = PathClaims(self.ledger)
        for place, holder in self.outcomes.places(batch.key):
            match claims.newest(place):
                case Success((_, winner)) if winner not in (holder, FREE):
                    return taken_by(place, winner, "was put there by another writer while this write was stalled")
                case _:
                    continue
        return _voided(batch.store)

    def drop(self, batch: PendingBatch) -> Result[None, DomainError]:
        self.outcomes.ended(batch)
        key = _key(batch.store, batch.key)
        return self.ledger.remove([key]).map(lambda _: self._begun.pop(key, None)).map(lambda _: None)

    def release(self, batch: PendingBatch) -> Result[None, DomainError]:
        self._clean.pop(batch.store, None)  # a batch left for the next open: look again
        self.outcomes.ended(batch)
        record = self._begun.pop(_key(batch.store, batch.key), None)
        if record is None:
            return Success(None)
        return self.ledger.put(evolve(record, fields={**record.fields, "released": True}))

    def interrupted(self, store: str) -> Result[tuple[PendingBatch, ...], DomainError]:
        held = self.leases.held(store)
        if held is not None and self._clean.get(store) == held.epoch:
            return Success(())  # looked already under this lease: since then only this process has written

        def dead(found: list[LedgerRecord]) -> Result[tuple[PendingBatch, ...], DomainError]:
            found = [r for r in found if not r.fields.get(REFEREED, False)]  # no lease says whether its writer lives
            if held is not None:
                batches = _batches(r for r in found if released(r) or r.seq < held.epoch)
                if not batches:
                    self._clean[store] = held.epoch
                return self._voided(batches)
            if not found:
                return Success(())
            return self.leases.tickets(store).map(
                lambda tickets: _batches(r for r in found if released(r) or _lease_over(r.seq, tickets))
            )

        return self.ledger.listed(store, KIND).bind(dead)

    def _voided(self, batches: tuple[PendingBatch, ...]) -> Result[tuple[PendingBatch, ...], DomainError]:
        """Of the batches to roll back, those voided now (or before): one whose writer claimed KEPT first was
        committed (its writer stopped before forgetting it), so it is forgotten instead of rolled back."""
        to_undo: list[PendingBatch] = []
        for batch in batches:
            match self.outcomes.claim(batch.store, batch.key, VOID):
                case Success(True):
                    to_undo.append(batch)
                case Success(False):
                    self.drop(batch)
                case failed:
                    return Failure(failed.failure())
        return Success(tuple(to_undo))


def _voided(store: str) -> DomainError:
    return DomainError(
        ErrorCode.STORAGE_ERROR,
        f"While this write to store '{store}' was stalled, another writer took the store over and voided it (rolled "
        "it back, or took a path it had claimed): nothing was kept. Try again.",
        path=store,
    )


def pending(ledger: Ledger, store: str) -> Result[tuple[PendingBatch, ...], DomainError]:
    """A store's batches begun and not yet forgotten (running, stopped, or committed and not forgotten yet), as the
    ledger alone lists them: one read."""
    return ledger.listed(store, KIND).map(_batches)


def _key(store: str, key: str) -> str:
    return f"{KIND}/{store}/{key}"


def _lease_over(epoch: int, tickets: list[LedgerRecord]) -> bool:
    """Whether the lease of `epoch` is over, judged without holding the lock and by the ledger alone: its ticket is
    gone (below the floor, pruned), or released (by its holder, or marked expired by a waiter that passed it over).
    No wall clock is compared: a ticket merely old by its "at" stamp may be a skewed clock's. A later ticket says
    nothing: it may be a writer still waiting behind this one."""
    ticket = next((record for record in tickets if record.seq == epoch), None)
    return ticket is None or released(ticket)


def _batches(records: Any) -> tuple[PendingBatch, ...]:
    found: list[PendingBatch] = []
    for record in records:
        try:
            raw = json.loads(record.text)
            found.append(
                PendingBatch(
                    str(raw["store"]),
                    tuple(str(memory_id) for memory_id in raw["created"]),
                    tuple(memory_from_plain(plain) for plain in raw["replaced"]),
                    key=record.key.rsplit("/", 1)[-1],
                )
            )
        except UNREADABLE:
            continue
    return tuple(found)
