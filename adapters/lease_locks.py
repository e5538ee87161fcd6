"""The WriteLocks port held in the storage engine: a lease per store, as Ledger records with epochs, for many machines."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from attrs import define, evolve, field
from returns.result import Failure, Result

from agent_memory.adapters.shared.boundary import Abort, as_result, value_of
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.adapters.write_locks import DEFAULT_TIMEOUT_S
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import check_store_name
from agent_memory.domain.ports import WriteLocks

T = TypeVar("T")
KIND = "lease"
DEFAULT_TTL_S = 30.0  # a dead holder's lease is taken over this long after a waiter last saw it change
RENEWALS_PER_TTL = 3  # the holder renews every ttl/3
GIVE_UP_SHARE = 2 / 3  # a holder not renewed for this share of the ttl counts itself fenced out
PRUNE_AFTER = 8  # older epochs are removed once this many have piled up
MAX_POLL_S = 0.1  # a waiter polls the engine at most this often apart (after a short backoff)


def lease_key(store: str, epoch: int) -> str:
    return f"lease/{store}/{epoch:012d}"


@define(eq=False)
class Lease:
    """A lease this process holds: its store, its epoch (the fencing token), its record as last written, and the
    monotonic time of its last renewal the engine acknowledged."""

    record: LedgerRecord
    ttl: float
    renewed: float
    stop: threading.Event = field(factory=threading.Event)

    @property
    def store(self) -> str:
        return self.record.store

    @property
    def epoch(self) -> int:
        return self.record.seq

    def live(self) -> bool:
        """Whether the holder may still write: renewed within GIVE_UP_SHARE of the ttl, on its own clock."""
        return time.monotonic() - self.renewed < self.ttl * GIVE_UP_SHARE


@define(eq=False)
class Sighting:
    """A waiter's view of a store's latest lease: which record state it saw, since when on its monotonic clock."""

    key: str
    beat: int
    since: float


def released(record: LedgerRecord) -> bool:
    return bool(record.fields.get("released", False))


class LeaseWriteLocks:
    """`exclusive(store, work)` under a lease held in the engine, after the local lock (`local`, when given).

    The store's current lease is its ledger record of kind "lease" with the highest epoch (seq). To take it, a
    writer waits until that record is released or expired, then claims epoch + 1; of several claimants exactly
    one wins (Ledger.claim). Expiry is judged on the waiter's monotonic clock: a lease whose record has not changed
    (no renewal) for its ttl since the waiter first saw it in that state is dead, so wall clocks never need to
    agree. The holder renews every ttl/3 from a background thread and releases by writing its record released.
    The local lock is taken first, so one machine's processes queue on it and never poll the engine against each
    other. Reentrant per thread. Waiting longer than `timeout` is the same "store is busy" STORAGE_ERROR as
    FileWriteLocks.
    """

    def __init__(
        self,
        ledger: Ledger,
        *,
        local: WriteLocks | None = None,
        ttl: float = DEFAULT_TTL_S,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.ledger = ledger
        self.local = local
        self.ttl = ttl
        self.timeout = timeout
        self._guard = threading.Lock()
        self._leases: dict[str, Lease] = {}  # the leases this process holds, by store
        self._owner: dict[str, int] = {}  # the thread holding each (reentrancy)
        self._seen: dict[str, Sighting] = {}  # per store: the latest lease as this process last saw it

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
        if self.local is not None:
            return self.local.exclusive(store, lambda: self._leased(store, work))
        return self._leased(store, work)

    # --- what the engine-held batch journal asks

    def held(self, store: str) -> Lease | None:
        """The lease this process holds on `store`, if it holds one."""
        with self._guard:
            return self._leases.get(store)

    def latest(self, store: str) -> Result[LedgerRecord | None, DomainError]:
        """The store's current lease record (the highest epoch), None before the first."""
        return self.ledger.listed(store, KIND).map(lambda found: found[-1] if found else None)

    # --- taking, keeping and giving back a lease

    def _leased(self, store: str, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        return self._acquire(store).bind(lambda lease: self._holding(store, lease, work))

    def _holding(self, store: str, lease: Lease, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        """Run `work` under a lease just taken, renewing it meanwhile, and give it back after."""
        with self._guard:
            self._leases[store] = lease
            self._owner[store] = threading.get_ident()
        beater = threading.Thread(target=self._renew, args=(lease,), name=f"lease-{store}", daemon=True)
        beater.start()
        try:
            return work()
        finally:
            lease.stop.set()
            beater.join()
            with self._guard:
                self._leases.pop(store, None)
                self._owner.pop(store, None)
            # a release that fails leaves the lease to expire: the next writer waits one ttl, nothing is lost
            self.ledger.put(evolve(lease.record, fields={**lease.record.fields, "released": True}))

    def _acquire(self, store: str) -> Result[Lease, DomainError]:
        return as_result(lambda: self._acquired(store))

    def _acquired(self, store: str) -> Lease:
        """Wait for the store's lease to be free and claim its next epoch (a ledger failure aborts with its error)."""
        deadline = time.monotonic() + self.timeout
        pause = 0.02
        token = uuid.uuid4().hex
        newest: LedgerRecord | None = None  # the highest epoch seen since this call began
        while True:
            found = value_of(self.ledger.listed(store, KIND))
            latest = max([*found[-1:], *([newest] if newest else [])], key=lambda record: record.seq, default=None)
            if latest is None or released(latest) or self._expired(latest):
                epoch = (latest.seq if latest else 0) + 1
                mine = LedgerRecord(
                    key=lease_key(store, epoch),
                    store=store,
                    kind=KIND,
                    seq=epoch,
                    fields={"holder": token, "beat": 0, "ttl": self.ttl, "at": time.time(), "released": False},
                )
                began = time.monotonic()
                if value_of(self.ledger.claim(mine)).fields.get("holder") != token:
                    continue  # another writer took this epoch first: wait for it like for any holder
                later = self.ledger.listed(store, KIND, after=epoch)
                if later.map(bool).value_or(True):
                    # a claim from a stale view: its epoch had been pruned and a later one is live; step back
                    self.ledger.put(evolve(mine, fields={**mine.fields, "released": True}))
                    newest = value_of(later)[-1]
                    continue
                self._prune(found)
                return Lease(record=mine, ttl=self.ttl, renewed=began)
            if time.monotonic() >= deadline:
                raise Abort(self._busy(store))
            time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
            pause = min(pause * 1.5, MAX_POLL_S, self.ttl / 10)

    def _expired(self, latest: LedgerRecord) -> bool:
        """Whether the latest lease stayed unchanged for its ttl since this process first saw it so."""
        beat = int(latest.fields.get("beat", 0))
        ttl = float(latest.fields.get("ttl", self.ttl))
        now = time.monotonic()
        with self._guard:
            seen = self._seen.get(latest.store)
            if seen is None or (seen.key, seen.beat) != (latest.key, beat):
                self._seen[latest.store] = Sighting(latest.key, beat, now)
                return False
            return now - seen.since >= ttl

    def _renew(self, lease: Lease) -> None:
        """The heartbeat: the lease's record rewritten (beat + 1) every ttl/3 until the holder lets go."""
        while not lease.stop.wait(lease.ttl / RENEWALS_PER_TTL):
            beat = int(lease.record.fields.get("beat", 0)) + 1
            sent = time.monotonic()
            renewed = evolve(lease.record, fields={**lease.record.fields, "beat": beat, "at": time.time()})
            if self.ledger.put(renewed).map(lambda _: True).value_or(False):
                lease.record, lease.renewed = renewed, sent

    def _prune(self, found: list[LedgerRecord]) -> None:
        """Forget old epochs once a few have piled up (the one just claimed is newer than all of them)."""
        if len(found) >= PRUNE_AFTER:
            self.ledger.remove([record.key for record in found])

    def _busy(self, store: str) -> DomainError:
        return DomainError(
            ErrorCode.STORAGE_ERROR,
            f"The store '{store}' is busy: another process has been writing to it (or reindexing it) "
            f"for {self.timeout:g} s. Try again when it is done.",
            path=store,
        )
