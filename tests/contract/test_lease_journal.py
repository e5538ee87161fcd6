"""The BatchJournal contract on batches held in the engine (in memory and on a `chroma run` server), tied to leases."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from returns.result import Success

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.clock import SkewedClock
from agent_memory.adapters.lease_journal import LeaseBatchJournal
from agent_memory.adapters.lease_locks import LeaseWriteLocks
from agent_memory.adapters.shared.ledger import InMemoryLedger, Ledger
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.ports import BatchJournal
from tests.chroma_server import ChromaServer
from tests.contract.batch_journal_contract import BATCH, BatchJournalContract
from tests.contract.vector_store_contract import DIM, MODEL

TTL = 1.0


def _holder_died(journal: BatchJournal) -> None:
    """Its machine stops: no more renewals, no release; the lease is over once the next writer (another node) has
    waited a ttl for it and passed it over, which marks it expired in the ledger for everyone."""
    assert isinstance(journal, LeaseBatchJournal)
    lease = journal.leases.held("default")
    assert lease is not None
    lease.stop.set()
    next_writer = LeaseWriteLocks(journal.ledger, ttl=TTL)
    assert next_writer.exclusive("default", lambda: Success(None)) == Success(None)
    assert next_writer.expiries == 1


class LeasedJournals(BatchJournalContract):
    """`journal` writes while a thread of its process holds the store's lease; `another` is a second node."""

    crash = staticmethod(_holder_died)

    @pytest.fixture
    def journal(self, ledger: Ledger) -> Iterator[BatchJournal]:
        locks = LeaseWriteLocks(ledger, ttl=TTL)
        holding, done = threading.Event(), threading.Event()

        def hold() -> Success[None]:
            holding.set()
            done.wait(timeout=60)
            return Success(None)

        holder = threading.Thread(target=lambda: locks.exclusive("default", hold))
        holder.start()
        assert holding.wait(timeout=30)
        yield LeaseBatchJournal(locks)
        done.set()
        holder.join(timeout=30)

    @pytest.fixture
    def another(self, ledger: Ledger) -> BatchJournal:
        return LeaseBatchJournal(LeaseWriteLocks(ledger, ttl=TTL))


class TestLeaseJournalInMemory(LeasedJournals):
    @pytest.fixture
    def ledger(self) -> Ledger:
        return InMemoryLedger()


@pytest.mark.server
class TestLeaseJournalChromaServer(LeasedJournals):
    @pytest.fixture
    def ledger(self, chroma_server: ChromaServer) -> Ledger:
        catalog = ChromaCatalog(
            host=chroma_server.host,
            port=chroma_server.port,
            collection=f"t{uuid.uuid4().hex}",
            embedder_name=MODEL,
            dimension=DIM,
        )
        return ChromaLedger.of(catalog)


def test_the_next_holder_sees_a_dead_writers_batch_as_interrupted_and_a_live_one_never() -> None:
    ledger = InMemoryLedger()
    first, second = LeaseWriteLocks(ledger, ttl=TTL), LeaseWriteLocks(ledger, ttl=TTL)
    journal = LeaseBatchJournal(first)
    lease = first._acquire("default").unwrap()  # a node that begins a batch and dies holding the lease
    first._leases["default"] = lease
    begun = journal.begin(BATCH).unwrap()
    assert LeaseBatchJournal(second).interrupted("default").unwrap() == ()  # its lease was just written: live
    found = second.exclusive("default", lambda: LeaseBatchJournal(second).interrupted("default"))
    assert found.unwrap() == (begun,)  # the next holder took epoch 2 once epoch 1 expired


def test_a_batch_begun_without_the_lock_or_committed_after_the_lease_lapsed_is_refused() -> None:
    locks = LeaseWriteLocks(InMemoryLedger(), ttl=TTL)
    journal = LeaseBatchJournal(locks)
    assert journal.begin(BATCH).failure().code is ErrorCode.STORAGE_ERROR

    def lapsed() -> Success[str]:
        begun = journal.begin(BATCH).unwrap()
        lease = locks.held("default")
        assert lease is not None
        lease.renewed -= TTL  # its renewals failed for a whole ttl (a stalled node, an unreachable server)
        error = journal.commit(begun).failure()
        assert error.code is ErrorCode.STORAGE_ERROR and "not kept" in error.message
        journal.release(begun).unwrap()
        return Success("ok")

    assert locks.exclusive("default", lapsed) == Success("ok")
    assert len(LeaseBatchJournal(LeaseWriteLocks(locks.ledger)).interrupted("default").unwrap()) == 1


def test_a_stalled_writers_batch_rolled_back_by_the_next_holder_can_no_longer_commit_and_a_kept_one_stays() -> None:
    ledger = InMemoryLedger()
    first, second = LeaseWriteLocks(ledger, ttl=TTL), LeaseWriteLocks(ledger, ttl=TTL)
    stalled, kept = LeaseBatchJournal(first), LeaseBatchJournal(first)
    lease = first._acquire("default").unwrap()  # a node that begins two batches, then stalls past its lease
    first._leases["default"] = lease
    rolled_back = stalled.begin(BATCH).unwrap()
    committed = kept.begin(BATCH).unwrap()
    assert kept.outcomes.claim("default", committed.key, "kept") == Success(True)  # it committed, then stalled
    found = second.exclusive("default", lambda: LeaseBatchJournal(second).interrupted("default"))
    assert found.unwrap() == (rolled_back,)  # voided, to roll back; the kept one is forgotten instead
    lease.renewed = time.monotonic()  # the stalled node resumes and its heartbeat renews the lease at once
    error = stalled.commit(rolled_back).failure()
    assert error.code is ErrorCode.STORAGE_ERROR and "rolled it back" in error.message
    assert LeaseBatchJournal(LeaseWriteLocks(ledger)).interrupted("default").unwrap() == (rolled_back,)


@pytest.mark.parametrize("skew_s", [-60.0, 60.0])
def test_a_writer_whose_wall_clock_is_off_never_makes_a_reader_take_its_lease(skew_s: float) -> None:
    ledger = InMemoryLedger()
    writer = LeaseWriteLocks(ledger, ttl=TTL, clock=SkewedClock(timedelta(seconds=skew_s)))
    reader = LeaseWriteLocks(ledger, ttl=TTL)
    holding, done = threading.Event(), threading.Event()
    journal = LeaseBatchJournal(writer)

    def write_a_batch() -> Success[None]:
        journal.begin(BATCH).unwrap()
        holding.set()
        done.wait(timeout=30)
        return Success(None)

    thread = threading.Thread(target=lambda: writer.exclusive("default", write_a_batch))
    thread.start()
    try:
        assert holding.wait(timeout=30)
        # a reader opening the store meanwhile: a running batch, whatever the writer's clock says of its ticket
        assert LeaseBatchJournal(reader).interrupted("default").unwrap() == ()
        tickets = [r for r in ledger.records.values() if r.kind == "lease"]
        assert [r.fields["node"] for r in tickets] == [writer.node]  # the reader claimed nothing
    finally:
        done.set()
        thread.join(timeout=30)
