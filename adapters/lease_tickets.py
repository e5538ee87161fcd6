"""The records of the storage engine's lease (adapters/lease_locks.py): the keys of a store's tickets and its floor,
and what one process keeps of them: the lease it holds, a waiter's sightings, its threads' turns and queues."""

from __future__ import annotations

import threading
import time
from collections import deque

from attrs import define, field

from agent_memory.adapters.shared.ledger import LedgerRecord

GIVE_UP_SHARE = 2 / 3  # a ticket not renewed for this share of the ttl counts itself fenced out


def lease_key(store: str, epoch: int) -> str:
    return f"lease/{store}/{epoch:012d}"


def floor_key(store: str) -> str:
    """The record (kind "lease", seq 0) saying below which epoch every ticket is finished and may be gone."""
    return f"lease/{store}/floor"


@define(eq=False)
class Lease:
    """A ticket this process holds: its store, its epoch (the fencing token), its record as last written, and the
    monotonic time at which its last acknowledged write (claim or renewal) was sent."""

    record: LedgerRecord
    ttl: float
    renewed: float
    stop: threading.Event = field(factory=threading.Event)
    contended: bool = False  # other tickets were waiting ahead of it when it was claimed

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
    """A waiter's view of a ticket ahead of it: which record state it saw, since when on its monotonic clock."""

    beat: int
    since: float


@define(eq=False)
class Turn:
    """A thread of this process waiting for a store: woken with the lease handed over, or told to take a ticket."""

    woken: threading.Event = field(factory=threading.Event)
    lease: Lease | None = None
    gone: bool = False  # it stopped waiting (timed out): skip it


@define(eq=False)
class Queue:
    """This process's threads for one store: whether one of them holds the lease or is getting it, those waiting in
    order, and how many of them the holder may still hand the lease to (those queued when it got it)."""

    busy: bool = False
    waiting: deque[Turn] = field(factory=deque)
    budget: int = 0
    idle: Lease | None = None  # a lease kept a moment after the last write (LINGER_S), none waiting for it


def released(record: LedgerRecord) -> bool:
    return bool(record.fields.get("released", False))


def floor_of(records: list[LedgerRecord]) -> int:
    return max((int(r.fields.get("floor", 0)) for r in records if r.seq == 0), default=0)
