"""The lease's ticket queue is fair: writers of several processes get a store in the order they asked (ticket order),
and one that gives the lease back and asks again goes behind those already waiting; a process hands its lease on only
to the threads queued when it got it, or keeps it for its next write while nobody waits. Ordered by events and by
the tickets in the ledger, never by timings."""

from __future__ import annotations

import threading
from collections.abc import Callable

from returns.result import Success

from agent_memory.adapters.lease_locks import KIND, LeaseWriteLocks
from agent_memory.adapters.shared.ledger import InMemoryLedger

WAIT_S = 60.0  # how long a step may take on a loaded machine before the test fails (never reached when it passes)


def _tickets(ledger: InMemoryLedger) -> int:
    return sum(1 for record in ledger.records.values() if record.kind == KIND and record.seq > 0)


def _until(condition: Callable[[], bool]) -> None:
    """Wait for `condition` (a ticket claimed, a thread queued), failing the test if it never holds."""
    done = threading.Event()
    for _ in range(int(WAIT_S / 0.005)):
        if condition():
            return
        done.wait(0.005)
    raise AssertionError("the expected state was never reached")


def _writer(locks: LeaseWriteLocks, name: str, order: list[str]) -> threading.Thread:
    def write() -> None:
        locks.exclusive("default", lambda: Success(order.append(name))).unwrap()

    thread = threading.Thread(target=write, name=name)
    thread.start()
    return thread


def test_waiters_of_several_processes_get_the_lease_in_ticket_order_and_a_holder_asking_again_goes_last() -> None:
    ledger = InMemoryLedger()
    holder = LeaseWriteLocks(ledger, ttl=60)
    holding, let_go = threading.Event(), threading.Event()
    order: list[str] = []

    def hold_then_ask_again() -> None:
        def first() -> Success[None]:
            holding.set()
            let_go.wait(WAIT_S)
            order.append("holder")
            return Success(None)

        holder.exclusive("default", first).unwrap()
        holder.exclusive("default", lambda: Success(order.append("holder again"))).unwrap()

    holder_thread = threading.Thread(target=hold_then_ask_again)
    holder_thread.start()
    assert holding.wait(WAIT_S)
    waiters = []
    for n in range(5):  # five "processes", each asking once the one before holds its ticket
        waiters.append(_writer(LeaseWriteLocks(ledger, ttl=60), f"waiter {n}", order))
        _until(lambda n=n: _tickets(ledger) == n + 2)
    let_go.set()
    for thread in [holder_thread, *waiters]:
        thread.join(WAIT_S)
    assert order == ["holder", *(f"waiter {n}" for n in range(5)), "holder again"]


def test_a_process_hands_its_lease_on_only_to_threads_queued_before_it_got_it() -> None:
    ledger = InMemoryLedger()
    first_process, other_process = LeaseWriteLocks(ledger, ttl=60), LeaseWriteLocks(ledger, ttl=60)
    holding, let_go = threading.Event(), threading.Event()
    order: list[str] = []

    def hold() -> Success[None]:
        holding.set()
        let_go.wait(WAIT_S)
        order.append("first")
        return Success(None)

    threads = [threading.Thread(target=lambda: first_process.exclusive("default", hold).unwrap())]
    threads[0].start()
    assert holding.wait(WAIT_S)
    threads.append(_writer(other_process, "other process", order))
    _until(lambda: _tickets(ledger) == 2)
    # a thread of the holding process that asks after it got the lease waits behind the other process's ticket
    threads.append(_writer(first_process, "first, later thread", order))
    _until(lambda: len(first_process._queues["default"].waiting) == 1)
    let_go.set()
    for thread in threads:
        thread.join(WAIT_S)
    assert order == ["first", "other process", "first, later thread"]


def test_threads_queued_when_a_process_gets_the_lease_share_it_one_ticket() -> None:
    ledger = InMemoryLedger()
    other_process, process = LeaseWriteLocks(ledger, ttl=60), LeaseWriteLocks(ledger, ttl=60)
    holding, let_go = threading.Event(), threading.Event()
    order: list[str] = []

    def hold() -> Success[None]:
        holding.set()
        let_go.wait(WAIT_S)
        order.append("other process")
        return Success(None)

    threads = [threading.Thread(target=lambda: other_process.exclusive("default", hold).unwrap())]
    threads[0].start()
    assert holding.wait(WAIT_S)
    threads.append(_writer(process, "thread 0", order))  # takes the process's ticket and waits in the engine
    _until(lambda: _tickets(ledger) == 2)
    for n in range(1, 4):  # three more threads of that process queue behind it, in the process
        threads.append(_writer(process, f"thread {n}", order))
        _until(lambda n=n: len(process._queues["default"].waiting) == n)
    let_go.set()
    for thread in threads:
        thread.join(WAIT_S)
    assert order == ["other process", *(f"thread {n}" for n in range(4))]
    assert _tickets(ledger) == 2  # the four writes of the process went under one ticket


def test_a_process_writing_alone_keeps_its_lease_for_its_next_write_until_another_asks() -> None:
    ledger = InMemoryLedger()
    alone = LeaseWriteLocks(ledger, ttl=60, linger=WAIT_S)  # kept for the whole test: no timing involved
    for n in range(3):
        alone.exclusive("default", lambda n=n: Success(n)).unwrap()
    assert _tickets(ledger) == 1  # three writes, one ticket: the next ones each read that nobody is behind
    order: list[str] = []
    other = _writer(LeaseWriteLocks(ledger, ttl=60), "other process", order)
    _until(lambda: _tickets(ledger) == 2)  # it claimed the ticket behind the kept lease
    alone.exclusive("default", lambda: Success(order.append("alone again"))).unwrap()
    other.join(WAIT_S)
    assert order == ["other process", "alone again"]  # it saw the ticket behind it, gave the lease back, queued
    assert _tickets(ledger) == 3
    alone.let_go()


def test_threads_queued_after_the_lease_was_got_keep_it_while_no_ticket_is_behind() -> None:
    ledger = InMemoryLedger()
    process = LeaseWriteLocks(ledger, ttl=60, linger=0)
    holding, let_go = threading.Event(), threading.Event()
    order: list[str] = []

    def hold() -> Success[None]:
        holding.set()
        let_go.wait(WAIT_S)
        order.append("first")
        return Success(None)

    threads = [threading.Thread(target=lambda: process.exclusive("default", hold).unwrap())]
    threads[0].start()
    assert holding.wait(WAIT_S)
    threads.append(_writer(process, "queued later", order))
    _until(lambda: len(process._queues["default"].waiting) == 1)
    let_go.set()
    for thread in threads:
        thread.join(WAIT_S)
    assert order == ["first", "queued later"] and _tickets(ledger) == 1  # one read, not a new ticket
