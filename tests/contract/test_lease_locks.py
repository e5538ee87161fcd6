"""The WriteLocks contract on leases held in the engine (in memory, embedded Chroma, a `chroma run` server), and
what only leases do: expiry of a dead holder's lease, epochs as fencing tokens, pruning, a busy store."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from returns.result import Failure, Result, Success

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.lease_locks import KIND, PRUNE_AFTER, LeaseWriteLocks
from agent_memory.adapters.shared.ledger import InMemoryLedger, LedgerRecord
from agent_memory.adapters.write_locks import FileWriteLocks
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import WriteLocks
from tests.chroma_server import ChromaServer
from tests.contract.vector_store_contract import DIM, MODEL
from tests.contract.write_locks_contract import WriteLocksContract


class TestLeaseLocksInMemory(WriteLocksContract):
    @pytest.fixture
    def locks(self) -> WriteLocks:
        return LeaseWriteLocks(InMemoryLedger(), ttl=5)


class TestLeaseLocksOverFileLocks(WriteLocksContract):
    @pytest.fixture
    def locks(self, tmp_path: Path) -> WriteLocks:
        return LeaseWriteLocks(InMemoryLedger(), local=FileWriteLocks(tmp_path / "locks"), ttl=5)


@pytest.mark.server
class TestLeaseLocksChromaServer(WriteLocksContract):
    """Two "machines": each thread's writes alternate between two lock objects with their own clients."""

    @pytest.fixture
    def locks(self, chroma_server: ChromaServer) -> WriteLocks:
        collection = f"t{uuid.uuid4().hex}"

        def node() -> LeaseWriteLocks:
            catalog = ChromaCatalog(
                host=chroma_server.host,
                port=chroma_server.port,
                collection=collection,
                embedder_name=MODEL,
                dimension=DIM,
            )
            return LeaseWriteLocks(ChromaLedger.of(catalog), ttl=5)

        return TwoNodes(node(), node())


class TwoNodes:
    """WriteLocks that sends each thread to one of two nodes (a thread keeps its node: reentrancy is per node)."""

    def __init__(self, first: LeaseWriteLocks, second: LeaseWriteLocks) -> None:
        self.nodes = (first, second)
        self.turn = 0
        self.chosen = threading.local()

    def exclusive(self, store, work):  # type: ignore[no-untyped-def]
        if not hasattr(self.chosen, "node"):
            self.chosen.node = self.nodes[self.turn % 2]
            self.turn += 1
        return self.chosen.node.exclusive(store, work)


def _die_holding(locks: LeaseWriteLocks, store: str) -> None:
    """A holder that stops renewing and never releases (its machine died): its lease stays in the ledger."""
    taken = locks._acquire(store).unwrap()
    assert taken.epoch >= 1


def test_a_dead_holders_lease_expires_after_its_ttl_and_the_next_writer_takes_the_next_epoch() -> None:
    ledger = InMemoryLedger()
    _die_holding(LeaseWriteLocks(ledger, ttl=0.3), "default")
    survivor = LeaseWriteLocks(ledger, ttl=0.3, timeout=30)
    assert survivor.exclusive("default", lambda: Success(survivor.held("default").epoch)) == Success(2)  # type: ignore[union-attr]
    (record,) = [r for r in ledger.records.values() if r.seq == 2]
    assert record.fields["released"] is True


def test_a_dead_holder_costs_the_survivors_one_ttl_once_not_one_per_write() -> None:
    ledger = InMemoryLedger()
    _die_holding(LeaseWriteLocks(ledger, ttl=0.3), "default")
    survivor = LeaseWriteLocks(ledger, ttl=0.3, timeout=30)
    for _ in range(5):  # five writes, each with a ticket of its own (the lease given back between them)
        survivor.exclusive("default", lambda: Success(None)).unwrap()
        survivor.let_go()
    assert survivor.expiries == 1  # the dead ticket was waited out once, then known dead
    (dead,) = [r for r in ledger.records.values() if r.seq == 1]
    assert dead.fields["released"] is True and dead.fields["expired"] is True
    # a machine arriving later needs no wait at all: the ledger says the ticket is over
    newcomer = LeaseWriteLocks(ledger, ttl=60, timeout=5)
    assert newcomer.exclusive("default", lambda: Success("in")) == Success("in")
    assert newcomer.expiries == 0


class EngineAway(InMemoryLedger):
    """The ledger of an engine that goes away and comes back: while `away`, every write fails as a dead server's."""

    def __init__(self) -> None:
        super().__init__()
        self.away = False

    def put(self, record: LedgerRecord) -> Result[None, DomainError]:
        if self.away:
            return Failure(DomainError(ErrorCode.BACKEND_UNAVAILABLE, "the engine is away"))
        return super().put(record)


def test_a_release_lost_while_the_engine_was_away_lands_once_it_is_back_without_anyone_waiting_a_ttl() -> None:
    ledger = EngineAway()
    holder = LeaseWriteLocks(ledger, ttl=600)

    def engine_dies() -> Success[None]:
        ledger.away = True
        return Success(None)

    holder.exclusive("default", engine_dies).unwrap()
    holder.let_go()  # its release is not taken: the engine is away
    (ticket,) = [r for r in ledger.records.values() if r.kind == KIND]
    assert not ticket.fields["released"]
    ledger.away = False  # back: the release is sent again within RETRY_S, not a tenth of the ttl (60 s) later
    other = LeaseWriteLocks(ledger, ttl=600, timeout=20)
    assert other.exclusive("default", lambda: Success("in")) == Success("in")  # a 60 s wait would be a busy error
    assert other.expiries == 0 and ledger.records[ticket.key].fields["released"] is True
    assert not ledger.records[ticket.key].fields.get("expired")  # given back by its holder, not passed over


class SlowEngine(InMemoryLedger):
    """The ledger of a loaded server: each write is acknowledged `delay` seconds after it was sent."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def put(self, record: LedgerRecord) -> Result[None, DomainError]:
        time.sleep(self.delay)
        return super().put(record)


def test_a_lease_got_a_third_of_a_ttl_after_its_last_renewal_is_renewed_at_once_and_stays_live() -> None:
    ttl = 1.5  # renewed every 0.5 s; a holder not renewed for 1.0 s (2/3 of it) counts itself fenced out
    locks = LeaseWriteLocks(SlowEngine(delay=0.45), ttl=ttl)
    locks.exclusive("default", lambda: Success(None)).unwrap()  # a first write: the process's queue of the store
    locks.let_go()
    lease = locks._acquire("default").unwrap()
    lease.renewed -= ttl / 3  # a waiter's ticket, last renewed a third of a ttl before its turn came

    def work() -> Success[bool]:
        time.sleep(0.5 * ttl)  # the write's work; a heartbeat starting ttl/3 from now renews at 0.95 s (too late)
        return Success(lease.live())

    assert locks._started("default", lease, work) == Success(True)


def test_a_holder_that_stalled_past_its_ttl_does_not_bring_its_passed_over_ticket_back_to_life() -> None:
    ledger = InMemoryLedger()
    stalled = LeaseWriteLocks(ledger, ttl=0.3)
    lease = stalled._acquire("default").unwrap()
    lease.stop.set()  # its heartbeat is not running: the process is paused
    survivor = LeaseWriteLocks(ledger, ttl=0.3, timeout=30)
    survivor.exclusive("default", lambda: Success(None)).unwrap()
    assert survivor.expiries == 1
    stalled._beat(lease)  # it resumes and its heartbeat fires late
    (passed_over,) = [r for r in ledger.records.values() if r.seq == lease.epoch]
    assert passed_over.fields["expired"] is True and not lease.live()


def test_a_live_holder_renews_its_lease_so_a_waiter_does_not_take_it_past_the_ttl() -> None:
    ledger = InMemoryLedger()
    holder, waiter = LeaseWriteLocks(ledger, ttl=0.3), LeaseWriteLocks(ledger, ttl=0.3, timeout=30)
    holding, done = threading.Event(), threading.Event()
    order: list[str] = []

    def hold() -> Success[None]:
        holding.set()
        done.wait(timeout=1.5)  # five ttls: only renewals keep the lease
        order.append("holder done")
        return Success(None)

    thread = threading.Thread(target=lambda: holder.exclusive("default", hold))
    thread.start()
    assert holding.wait(timeout=30)
    waiter.exclusive("default", lambda: Success(order.append("waiter in")))
    thread.join(timeout=30)
    assert order == ["holder done", "waiter in"]
    beats = [r.fields["beat"] for r in ledger.records.values() if r.seq == 1]
    assert beats and int(beats[0]) >= 2


def test_a_lease_not_had_in_time_is_a_busy_error() -> None:
    ledger = InMemoryLedger()
    _die_holding(LeaseWriteLocks(ledger, ttl=60), "default")
    error = LeaseWriteLocks(ledger, ttl=60, timeout=0.2).exclusive("default", lambda: Success(1)).failure()
    assert error.code is ErrorCode.STORAGE_ERROR and "busy" in error.message


def test_old_epochs_are_pruned_and_a_claim_from_a_stale_view_steps_back() -> None:
    ledger = InMemoryLedger()
    for _ in range(PRUNE_AFTER + 2):  # each a process of its own, giving its lease back as it exits
        locks = LeaseWriteLocks(ledger, ttl=5)
        locks.exclusive("default", lambda: Success(None)).unwrap()
        locks.let_go()
    epochs = sorted(r.seq for r in ledger.records.values() if r.kind == KIND)
    assert len(epochs) < PRUNE_AFTER and epochs[-1] == PRUNE_AFTER + 2
    # a writer whose listing was taken before the pruning claims a pruned epoch: the floor sends it back
    stale = LeaseWriteLocks(ledger, ttl=5)
    real_listed = ledger.listed
    ledger.listed = lambda store, kind, after=-1: (  # type: ignore[method-assign]
        real_listed(store, kind, after=after)
        if after >= 0
        else Success([r for r in real_listed(store, kind).unwrap() if 0 < r.seq < 2])  # nor the floor record
    )
    taken = stale._acquire("default")
    ledger.listed = real_listed  # type: ignore[method-assign]
    assert taken.unwrap().epoch == PRUNE_AFTER + 3


def test_an_invalid_store_name_is_refused() -> None:
    failed = LeaseWriteLocks(InMemoryLedger()).exclusive("../escape", lambda: Success(1))
    assert failed.failure().code is ErrorCode.INVALID_INPUT
