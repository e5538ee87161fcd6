"""Batch journals and idempotency keys kept in one process: the service's defaults when none are wired in."""

from __future__ import annotations

import threading
import uuid

from attrs import evolve
from returns.result import Result, Success

from agent_memory.domain.errors import DomainError
from agent_memory.domain.ports import PendingBatch


class InProcessJournal:
    """The BatchJournal of one process: its batches die with it, and so does what they wrote to in-memory stores.

    A batch is running from `begin` until `commit`, `drop` or `release`; a released one is interrupted (a
    rollback that failed, to be retried at the next open)."""

    hides_unfinished = False  # its stores show a batch's records as written: the next open rolls a dead one back

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.running: dict[str, PendingBatch] = {}
        self.left: dict[str, PendingBatch] = {}

    def begin(self, batch: PendingBatch) -> Result[PendingBatch, DomainError]:
        begun = evolve(batch, key=uuid.uuid4().hex)
        with self._guard:
            self.running[begun.key] = begun
        return Success(begun)

    def commit(self, batch: PendingBatch) -> Result[None, DomainError]:
        return self.drop(batch)

    def drop(self, batch: PendingBatch) -> Result[None, DomainError]:
        with self._guard:
            self.running.pop(batch.key, None)
            self.left.pop(batch.key, None)
        return Success(None)

    def release(self, batch: PendingBatch) -> Result[None, DomainError]:
        with self._guard:
            held = self.running.pop(batch.key, None)
            if held is not None:
                self.left[batch.key] = held
        return Success(None)

    def interrupted(self, store: str) -> Result[tuple[PendingBatch, ...], DomainError]:
        with self._guard:
            return Success(tuple(batch for batch in self.left.values() if batch.store == store))


class InProcessKeys:
    """The IdempotencyKeys of one process (the service's default when none is wired in): a dict behind a lock."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.pairs: dict[tuple[str, str], str] = {}

    def remember(self, store: str, key: str, fingerprint: str) -> Result[str, DomainError]:
        with self._guard:
            return Success(self.pairs.setdefault((store, key), fingerprint))
