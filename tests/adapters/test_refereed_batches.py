"""Lease-free creates (adapters/refereed_batches.py): committed by their outcome's claim, voided by a contender for
their path or by a reindex's fence, never read as interrupted by the lease journal, left out of counts while running."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from returns.result import Result, Success

from agent_memory.adapters.claimed_store import ClaimedStore
from agent_memory.adapters.commit_outcomes import KEPT, VOID, CommitOutcomes
from agent_memory.adapters.in_memory import InMemoryVectorStore
from agent_memory.adapters.lease_journal import LeaseBatchJournal
from agent_memory.adapters.lease_locks import LeaseWriteLocks
from agent_memory.adapters.path_claims import PathClaims
from agent_memory.adapters.refereed_batches import RefereedBatches
from agent_memory.adapters.shared.ledger import InMemoryLedger, LedgerRecord
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.ports import PendingBatch
from tests.contract.vector_store_contract import axis, full_memory

PLAN = MemoryPath(("notes", "plan"))
FIRST, LAST = MemoryPath(("notes", "p0")), MemoryPath(("notes", "p9"))


class Interleaved(InMemoryLedger):
    """The shared ledger, running another writer's step once: just before one chosen claim is stored, or just after."""

    def __init__(self) -> None:
        super().__init__()
        self.chosen: Callable[[LedgerRecord], bool] = lambda record: False
        self.step: Callable[[], None] = lambda: None
        self.after = False

    def around(self, chosen: Callable[[LedgerRecord], bool], step: Callable[[], None], *, after: bool = False) -> None:
        self.chosen, self.step, self.after = chosen, step, after

    def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]:
        if not self.chosen(record):
            return super().claim(record)
        step, self.chosen = self.step, lambda record: False
        if not self.after:
            step()
        stored = super().claim(record)
        if self.after:
            step()
        return stored


def uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def memory(name: str, path: MemoryPath | None = PLAN) -> Memory:
    return full_memory(id=uid(name), namespace=(), path=path, deleted=False, deleted_at=None, expires_at=None)


def machine(ledger: InMemoryLedger, store: InMemoryVectorStore) -> tuple[RefereedBatches, ClaimedStore]:
    """One node: its lease, journal and referee over the shared ledger, its store taking the lease to contend."""
    leases = LeaseWriteLocks(ledger, ttl=30.0)
    journal = LeaseBatchJournal(leases)
    journal.outcomes = CommitOutcomes(ledger)  # its own, as another process's (one per ledger in a process otherwise)
    referee = RefereedBatches(journal)
    claimed = ClaimedStore(
        store,
        PathClaims(ledger),
        referee.outcomes,
        may_void=lambda name: leases.held(name) is not None,
        contend=leases.exclusive,
    )
    return referee, claimed


def test_a_refereed_create_takes_no_lease_and_is_shown_only_once_committed() -> None:
    ledger, store = InMemoryLedger(), InMemoryVectorStore()
    referee, writer = machine(ledger, store)
    _, reader = machine(ledger, store)
    begun = referee.begin(PendingBatch("default", (uid("a"),))).unwrap()
    assert begun is not None
    writer.add([memory("a")], [axis(0)]).unwrap()
    assert reader.scan(MemoryFilter()).unwrap() == [] and reader.count() == Success(0)
    assert LeaseBatchJournal(LeaseWriteLocks(ledger)).interrupted("default") == Success(())  # never "interrupted"
    assert referee.commit(begun) == Success(None)
    assert [m.id for m in reader.scan(MemoryFilter()).unwrap()] == [uid("a")] and reader.count() == Success(1)
    assert ledger.listed("default", "lease").unwrap() == [] and ledger.listed("default", "batch").unwrap() == []


def test_a_contender_voids_an_undecided_refereed_create_and_its_commit_is_refused_naming_the_winner() -> None:
    ledger, store = InMemoryLedger(), InMemoryVectorStore()
    referee, stalled = machine(ledger, store)
    _, contender = machine(ledger, store)
    begun = referee.begin(PendingBatch("default", (uid("a"),))).unwrap()
    assert begun is not None
    stalled.add([memory("a")], [axis(0)]).unwrap()  # its records and path claim landed; it stalls before its outcome
    assert contender.add([memory("b")], [axis(1)]) == Success(None)  # took the lease, voided it, took the path
    error = referee.commit(begun).failure()
    assert error.code is ErrorCode.DESTINATION_EXISTS and uid("b") in error.message
    assert [m.id for m in contender.scan(MemoryFilter()).unwrap()] == [uid("b")]
    assert CommitOutcomes(ledger).decided("default", begun.key) == Success(VOID)


def test_a_fence_decides_the_refereed_creates_begun_before_it_and_sends_later_ones_under_the_lock() -> None:
    ledger, store = InMemoryLedger(), InMemoryVectorStore()
    referee, writer = machine(ledger, store)
    reindexer, _ = machine(ledger, store)
    running = referee.begin(PendingBatch("default", (uid("a"),))).unwrap()
    committed = referee.begin(PendingBatch("default", (uid("c"),))).unwrap()
    assert running is not None and committed is not None
    writer.add([memory("c", None)], [axis(2)]).unwrap()
    referee.commit(committed).unwrap()
    assert reindexer.fence("default") == Success(None)
    assert referee.begin(PendingBatch("default", (uid("b"),))) == Success(None)  # fenced: under the lock instead
    assert referee.commit(running).failure().code is ErrorCode.STORAGE_ERROR  # voided by the fence
    assert CommitOutcomes(ledger).decided("default", committed.key) == Success(KEPT)  # what committed stands
    reindexer.unfence("default").unwrap()
    assert referee.begin(PendingBatch("default", (uid("b"),))).unwrap() is not None


def test_a_voided_create_rolled_back_while_its_contender_claims_the_path_leaves_the_path_to_the_contender() -> None:
    ledger, store = Interleaved(), InMemoryVectorStore()
    referee, stalled = machine(ledger, store)
    _, contender = machine(ledger, store)
    begun = referee.begin(PendingBatch("default", (uid("a"),))).unwrap()
    assert begun is not None
    stalled.add([memory("a")], [axis(0)]).unwrap()  # its path claimed; it stalls before its outcome

    def rolled_back() -> None:  # the stalled writer, its commit refused, takes its records out (_refereed_undone)
        assert referee.commit(begun).failure().code is ErrorCode.STORAGE_ERROR  # voided; the path is nobody's yet
        stalled.remove([uid("a")]).unwrap()  # frees the path it held, at the version the contender is claiming

    # the contender has just voided the stalled batch, before it takes its records out and claims the path
    ledger.around(lambda record: record.fields.get("outcome") == VOID, rolled_back, after=True)
    assert contender.add([memory("b")], [axis(1)]) == Success(None)
    assert [m.id for m in contender.scan(MemoryFilter()).unwrap()] == [uid("b")]


def test_two_refereed_batches_crossing_on_two_paths_leave_both_paths_to_one_of_them() -> None:
    ledger, store = Interleaved(), InMemoryVectorStore()
    first_referee, first = machine(ledger, store)
    second_referee, second = machine(ledger, store)
    one = first_referee.begin(PendingBatch("default", (uid("a0"), uid("a9")))).unwrap()
    other = second_referee.begin(PendingBatch("default", (uid("b9"), uid("b0")))).unwrap()
    assert one is not None and other is not None

    def crossing() -> None:  # the second batch claims both paths while the first holds one: it voids the first
        assert second.add([memory("b9", LAST), memory("b0", FIRST)], [axis(2), axis(3)]) == Success(None)

    ledger.around(lambda record: record.fields.get("holder") == uid("a9"), crossing)
    refused = first.add([memory("a0", FIRST), memory("a9", LAST)], [axis(0), axis(1)]).failure()
    assert refused.code is ErrorCode.DESTINATION_EXISTS  # its own batch voided: it voids no other
    assert second_referee.commit(other) == Success(None)
    assert first_referee.commit(one).failure().code is ErrorCode.DESTINATION_EXISTS
    assert sorted(m.id for m in second.scan(MemoryFilter()).unwrap()) == sorted([uid("b0"), uid("b9")])
