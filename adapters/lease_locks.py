"""The WriteLocks port held in the storage engine: a fair lease per store (a ticket queue of Ledger records with
epochs), for many machines."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.lease_tickets import (
    Lease,
    Queue,
    Sighting,
    Turn,
    floor_key,
    floor_of,
    lease_key,
    released,
)
from agent_memory.adapters.shared.boundary import Abort, as_result, value_of
from agent_memory.adapters.shared.ledger import Field, Ledger, LedgerRecord
from agent_memory.adapters.write_locks import DEFAULT_TIMEOUT_S
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import check_store_name
from agent_memory.domain.ports import Clock, WriteLocks

T = TypeVar("T")
KIND = "lease"
DEFAULT_TTL_S = 30.0  # a dead holder's (or waiter's) ticket is passed over this long after a waiter last saw it change
RENEWALS_PER_TTL = 3  # the holder (and every waiter) renews its ticket every ttl/3
PRUNE_AFTER = 8  # older epochs are removed once this many have piled up below the holder
FIRST_POLL_S = 0.005  # a waiter looks at the tickets ahead of it this soon, then backs off (with jitter) ...
MAX_POLL_S = 0.05  # ... to at most this far apart
LINGER_S = 0.15  # a lease got with nobody ahead is kept this long after the process's last write, for its next one
# (whose embedding, done before it asks, takes tens of ms: 30 ms let the lease go between two creates of one client)
REMEMBERED = 4096  # tickets known finished (passed over, or this process's own given back) kept in mind, newest
RETRY_S = 0.5  # a ticket's release the engine did not take is sent again this often (ttl/10 when shorter) ...
RETRY_TTLS = 10  # ... for up to this many ttls (by then a waiter passed the ticket over)


class LeaseWriteLocks:
    """`exclusive(store, work)` under a lease held in the engine, first come first served across every process and
    machine (after the local lock `local`, when given).

    The lease is a ticket queue in the Ledger: a writer lists the store's tickets (records of kind "lease") and
    claims the next epoch at once (of several claimants of one epoch exactly one wins, Ledger.claim; the others take
    the next); it holds the lease once every ticket below its own (down to the floor record) is released, or has
    expired: not renewed for its ttl since this process first saw it in that state, on this process's monotonic
    clock, so wall clocks never need to agree. Every ticket, waiting or holding, is renewed every ttl/3; a holder
    releases by writing its ticket released, and a waiter that gives up does the same. So waiters are served in
    ticket order and a writer that releases and asks again goes behind them.

    Within one process the threads of a store queue in order (one of them holds a ticket in the engine), and the
    holder hands the lease on to the threads that were queued when it got it before releasing it (group commit:
    one ticket for a burst of local writes, never more than one queue's worth ahead of other machines), and to
    those queued since for as long as one read shows no ticket claimed behind it. A lease got
    with nobody ahead is kept `linger` seconds after the process's last write: its next write checks with one read
    that no ticket was claimed behind it and goes on under it, else it gives the lease back and takes a new ticket
    (a store written by one process at a time pays one round trip per write, not five). Reentrant per thread. Waiting longer than `timeout` is the same "store is busy" STORAGE_ERROR as FileWriteLocks.
    """

    def __init__(
        self,
        ledger: Ledger,
        *,
        local: WriteLocks | None = None,
        ttl: float = DEFAULT_TTL_S,
        timeout: float = DEFAULT_TIMEOUT_S,
        linger: float = LINGER_S,
        clock: Clock | None = None,
    ) -> None:
        self.ledger = ledger
        self.local = local
        self.ttl = ttl
        self.timeout = timeout
        self.linger = linger
        self.clock = clock or SystemClock()  # stamps a ticket's "at" for people reading the ledger; decides nothing
        self.node = uuid.uuid4().hex  # this process: a ticket it claimed and no longer uses is finished, it knows
        self.expiries = 0  # how many times a ticket ahead was passed over after a ttl unchanged (a dead holder)
        self.claims = 0  # how many tickets this process has won (each a turn at the lease it asked for)
        self._guard = threading.Lock()
        self._leases: dict[str, Lease] = {}  # the leases this process holds, by store
        self._owner: dict[str, int] = {}  # the thread holding each (reentrancy)
        self._queues: dict[str, Queue] = {}  # this process's threads per store
        self._seen: dict[str, Sighting] = {}  # per ticket key: its state as this process last saw it
        self._mine: set[str] = set()  # the keys of the tickets this process claimed and still uses
        self._over: dict[str, None] = {}  # tickets known finished (passed over once, or this process's given back)

    # --- WriteLocks

    def exclusive(self, store: str, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        with self._guard:
            reentered = self._owner.get(store) == threading.get_ident()
        if reentered:
            return work()
        try:
            check_store_name(store)
        except InvalidValue as error:
            return Failure(error.to_error())
        return self._in_turn(store, work)

    # --- what the engine-held batch journal asks

    def held(self, store: str) -> Lease | None:
        """The lease this process holds on `store`, if it holds one."""
        with self._guard:
            return self._leases.get(store)

    def tickets(self, store: str) -> Result[list[LedgerRecord], DomainError]:
        """The store's tickets (its floor record first, seq 0, when there is one), by epoch."""
        return self.ledger.listed(store, KIND)

    # --- this process's threads, in turn

    def _in_turn(self, store: str, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        deadline = time.monotonic() + self.timeout
        with self._guard:
            queue = self._queues.setdefault(store, Queue())
            turn = None if not queue.busy else Turn()
            queue.busy = True
            if turn is not None:
                queue.waiting.append(turn)
            idle, queue.idle = (queue.idle, None) if turn is None else (None, queue.idle)
            if idle is not None:
                queue.budget = 0  # a kept lease serves this write only: threads queued meanwhile take a new ticket
        if idle is not None:
            if self._nobody_behind(idle):
                return self._holding(store, idle, work)
            self._release(idle)
        if turn is not None:
            turn.woken.wait(max(deadline - time.monotonic(), 0.0))
            with self._guard:
                if not turn.woken.is_set():
                    turn.gone = True
                    return Failure(self._busy(store))
            if turn.lease is not None:
                return self._holding(store, turn.lease, work)
        return self._leased(store, work, deadline)

    def _leased(
        self, store: str, work: Callable[[], Result[T, DomainError]], deadline: float
    ) -> Result[T, DomainError]:
        """Take a ticket (after the local lock, when given) and run `work` under the lease it brings."""

        def taken() -> Result[T, DomainError]:
            match self._acquire(store, deadline):
                case Success(lease):
                    return self._started(store, lease, work)
                case failed:
                    self._next(store)
                    return Failure(failed.failure())

        if self.local is not None:
            return self.local.exclusive(store, taken)
        return taken()

    def _started(self, store: str, lease: Lease, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        """The lease just got: the threads queued now may have it after this one; renew it until it is given back."""
        with self._guard:
            queue = self._queues[store]
            queue.budget = len(queue.waiting)
        beater = threading.Thread(target=self._renew, args=(lease,), name=f"lease-{store}", daemon=True)
        beater.start()
        return self._holding(store, lease, work)

    def _holding(self, store: str, lease: Lease, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        """Run `work` under the lease, then hand it to the next queued thread or give it back."""
        with self._guard:
            self._leases[store] = lease
            self._owner[store] = threading.get_ident()
        try:
            return work()
        finally:
            self._hand_on(store, lease)

    def _hand_on(self, store: str, lease: Lease) -> None:
        """After a write: the lease to the next queued thread within the budget (or, the budget spent, for another
        round when one read shows no ticket behind it), kept a moment when nobody waits, else given back."""
        with self._guard:
            self._leases.pop(store, None)
            self._owner.pop(store, None)
            if self._handed(store, lease):
                return
            queue = self._queues[store]
            if not queue.waiting and not lease.contended and self.local is None and lease.live():
                # nobody was ahead of it: keep it a moment for this process's next write (a non-daemon timer, so
                # a process that exits gives it back first)
                queue.idle, queue.busy = lease, False
                threading.Timer(self.linger, self._linger_over, (store, lease)).start()
                return
            another_round = bool(queue.waiting) and self.local is None
        if another_round and self._nobody_behind(lease):
            with self._guard:
                queue.budget = len(queue.waiting)
                if self._handed(store, lease):
                    return
        self._release(lease)
        self._next(store)

    def _handed(self, store: str, lease: Lease) -> bool:
        """Under the guard: hand the lease to the next queued thread if the budget allows (True when handed)."""
        queue = self._queues[store]
        while queue.waiting and queue.waiting[0].gone:
            queue.waiting.popleft()
        if not (queue.waiting and queue.budget > 0 and lease.live()):
            return False
        queue.budget -= 1
        turn = queue.waiting.popleft()
        turn.lease = lease
        turn.woken.set()
        return True

    def _release(self, lease: Lease) -> None:
        lease.stop.set()
        self._finish(lease.record)

    def let_go(self) -> None:
        """Give back every lease kept after its last write now (a process about to exit, a test)."""
        with self._guard:
            kept = [(store, queue.idle) for store, queue in self._queues.items() if queue.idle is not None]
        for store, lease in kept:
            self._linger_over(store, lease)

    def _linger_over(self, store: str, lease: Lease) -> None:
        """The kept lease is given back unless a write of this process took it meanwhile."""
        with self._guard:
            queue = self._queues[store]
            if queue.idle is not lease:
                return
            queue.idle = None
        self._release(lease)

    def _nobody_behind(self, lease: Lease) -> bool:
        """Whether a kept lease may serve one more write: still live, and no ticket claimed behind it (one read)."""
        following = lease_key(lease.store, lease.epoch + 1)
        found = self.ledger.read([following]).map(lambda records: following in records).value_or(True)
        return lease.live() and not found

    def _next(self, store: str) -> None:
        """The lease is given back: the next queued thread takes a ticket of its own (none waiting: the store is free)."""
        with self._guard:
            queue = self._queues[store]
            while queue.waiting:
                turn = queue.waiting.popleft()
                if not turn.gone:
                    turn.woken.set()
                    return
            queue.busy = False

    # --- taking a ticket and waiting for those ahead of it

    def _acquire(self, store: str, deadline: float | None = None) -> Result[Lease, DomainError]:
        until = time.monotonic() + self.timeout if deadline is None else deadline
        return as_result(lambda: self._acquired(store, until))

    def _acquired(self, store: str, deadline: float) -> Lease:
        """Claim the next ticket and wait until every ticket ahead of it is finished (a ledger failure aborts with
        its error; a stale claim, below the floor, is given back and a new one taken)."""
        while True:
            found = value_of(self.tickets(store))
            floor = floor_of(found)
            epoch = max([floor, *(r.seq for r in found)])
            token = uuid.uuid4().hex
            fresh: dict[str, Field] = {"holder": token, "node": self.node, "beat": 0, "ttl": self.ttl}
            fresh |= {"released": False, "at": self.clock.now().timestamp()}  # "at": for people; nothing reads it
            while True:
                epoch += 1
                mine = LedgerRecord(
                    key=lease_key(store, epoch),
                    store=store,
                    kind=KIND,
                    seq=epoch,
                    fields=fresh,
                )
                sent = time.monotonic()
                with self._guard:
                    self._mine.add(mine.key)
                claimed = self.ledger.claim(mine)
                if not isinstance(claimed, Success):
                    self._claim_lost(mine)  # its answer was lost: the claim may have landed all the same
                    raise Abort(claimed.failure())
                if claimed.unwrap().fields.get("holder") == token:
                    self.claims += 1
                    break
                with self._guard:
                    self._mine.discard(mine.key)
            ahead = {r.seq for r in found if 0 < r.seq < epoch and r.seq >= floor}
            ahead |= set(range(max(floor, 1), epoch)) - {r.seq for r in found}  # claimed since the listing
            known = {r.seq: r for r in found}
            contended = any(seq not in known or not released(known[seq]) for seq in ahead)
            lease = Lease(record=mine, ttl=self.ttl, renewed=sent, contended=contended)
            try:
                waited = self._waited(store, lease, ahead, deadline)
            except Abort:
                self._give_back(lease)  # the engine failed meanwhile: the ticket is given back (when it is back)
                raise
            if waited:
                self._prune(store, lease, found)
                return lease

    def _claim_lost(self, mine: LedgerRecord) -> None:
        """A claim whose answer never came: this process no longer wants the ticket, and gives it back in the ledger
        if the claim did land there (read first: the key may be another claimant's)."""
        with self._guard:
            self._mine.discard(mine.key)
            self._over[mine.key] = None

        def settled() -> bool:
            found = self.ledger.read([mine.key]).value_or(None)
            landed = (found or {}).get(mine.key)
            if landed is not None and landed.fields.get("holder") == mine.fields["holder"]:
                self._finish(landed)
            return found is not None

        self._in_background(settled)

    def _waited(self, store: str, lease: Lease, ahead: set[int], deadline: float) -> bool:
        """Poll the tickets `ahead` (and the floor) until each is finished: True when the lease is this ticket's,
        False when the ticket was a stale one (below the floor, or not renewed in time) and was given back."""
        pause = FIRST_POLL_S
        while True:
            keys = [floor_key(store), *(lease_key(store, seq) for seq in sorted(ahead))]
            now = value_of(self.ledger.read(keys))
            floor = now.get(floor_key(store))
            if floor is not None and int(floor.fields.get("floor", 0)) >= lease.epoch:
                self._give_back(lease)
                return False
            ahead = {seq for seq in ahead if not self._finished(now.get(lease_key(store, seq)))}
            if not ahead:
                if lease.live():
                    return True
                self._give_back(lease)  # its renewals failed meanwhile: a waiter behind may have passed it over
                return False
            if time.monotonic() >= deadline:
                raise Abort(self._busy(store))  # the ticket is given back by the caller
            if time.monotonic() - lease.renewed >= lease.ttl / RENEWALS_PER_TTL:
                self._beat(lease)
            time.sleep(min(pause * random.uniform(0.5, 1.5), max(deadline - time.monotonic(), 0.0)))
            pause = min(pause * 1.5, MAX_POLL_S, self.ttl / 10)

    def _finished(self, record: LedgerRecord | None) -> bool:
        """A ticket ahead is finished when gone (pruned), released, known finished to this process (passed over
        before, or its own and no longer used), or unchanged for its ttl since first seen so: then it is passed over
        once and for all, remembered here and written released (expired) in the ledger for every other machine."""
        if record is None or released(record):
            return True
        beat = int(record.fields.get("beat", 0))
        ttl = float(record.fields.get("ttl", self.ttl))
        now = time.monotonic()
        with self._guard:
            if record.key in self._over:
                return True
            if record.fields.get("node") == self.node and record.key not in self._mine:
                return True  # a ticket of this process that it gave back (or whose claim went unanswered)
            seen = self._seen.get(record.key)
            if seen is None or seen.beat != beat:
                self._seen[record.key] = Sighting(beat, now)
                return False
            if now - seen.since < ttl:
                return False
            del self._seen[record.key]
            self.expiries += 1
        self._finish(record, expired=True)
        return True

    def _give_back(self, lease: Lease) -> None:
        self._finish(lease.record)

    def _finish(self, record: LedgerRecord, **marks: bool) -> None:
        """Mark a ticket finished: known so to this process at once, and written released in the ledger; a write that
        fails (the engine is down) is retried in the background until it lands, so no writer of any machine waits
        out a ttl for a ticket whose holder gave it back while the engine was away."""
        with self._guard:
            self._mine.discard(record.key)
            self._over[record.key] = None
            while len(self._over) > REMEMBERED:
                del self._over[next(iter(self._over))]
        done = evolve(record, fields={**record.fields, "released": True, **marks})
        if not self._put(done):
            self._in_background(lambda: self._put(done))

    def _put(self, record: LedgerRecord) -> bool:
        return self.ledger.put(record).map(lambda _: True).value_or(False)

    def _in_background(self, attempt: Callable[[], bool]) -> None:
        """Retry `attempt` (a ledger write) until it succeeds, every RETRY_S (ttl/10 when shorter) for up to
        RETRY_TTLS ttls: a release lost while the engine was away lands within RETRY_S of its return, so the other
        machines' first writes wait that long for it, not a tenth of a ttl (3 s of the default 30)."""
        pause = min(RETRY_S, self.ttl / 10)

        def retried() -> None:
            until = time.monotonic() + RETRY_TTLS * self.ttl
            while time.monotonic() < until:
                time.sleep(pause)
                if attempt():
                    return

        threading.Thread(target=retried, name="lease-retry", daemon=True).start()

    def _beat(self, lease: Lease) -> None:
        """One renewal: the ticket's record rewritten with beat + 1 (a failure leaves `renewed` as it was). None once
        a whole ttl went by unrenewed (a stalled process): a waiter may have passed the ticket over and marked it
        expired, and a late renewal would bring it back to life for every other machine; the lease stays lost."""
        sent = time.monotonic()
        if sent - lease.renewed >= lease.ttl:
            return
        beat = int(lease.record.fields.get("beat", 0)) + 1
        renewed = evolve(lease.record, fields={**lease.record.fields, "beat": beat, "at": self.clock.now().timestamp()})
        if self._put(renewed):
            lease.record, lease.renewed = renewed, sent

    def _renew(self, lease: Lease) -> None:
        """The heartbeat while the lease is held, until it is given back: a renewal whenever its last one is ttl/3
        old. The first may be due at once: a ticket that waited for its turn was last renewed up to ttl/3 before it
        got the lease, and a heartbeat starting a whole ttl/3 later let it go 2/3 of a ttl unrenewed, the share at
        which the holder counts itself fenced out (a loaded node's batch was then refused for a lapsed lease). A
        renewal that failed is tried again after ttl/30."""
        pause = 0.0
        while not lease.stop.wait(max(lease.renewed + lease.ttl / RENEWALS_PER_TTL - time.monotonic(), pause)):
            before = lease.renewed
            self._beat(lease)
            pause = 0.0 if lease.renewed != before else lease.ttl / 30

    def _prune(self, store: str, lease: Lease, found: list[LedgerRecord]) -> None:
        """Once a few finished tickets have piled up below the holder's: raise the floor to its epoch first (so a
        claim from a stale listing sees it is below), then remove them (best effort: leftovers cost a longer read)."""
        below = [r.key for r in found if 0 < r.seq < lease.epoch]
        if len(below) < PRUNE_AFTER:
            return
        mark = LedgerRecord(key=floor_key(store), store=store, kind=KIND, seq=0, fields={"floor": lease.epoch})
        if self._put(mark):
            self.ledger.remove(below)

    def _busy(self, store: str) -> DomainError:
        return DomainError(
            ErrorCode.STORAGE_ERROR,
            f"The store '{store}' is busy: another process has been writing to it (or reindexing it) "
            f"for {self.timeout:g} s. Try again when it is done.",
            path=store,
        )
