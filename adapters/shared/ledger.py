"""The Ledger port: small records kept in the storage engine itself, on which writers of many machines coordinate."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Protocol

from attrs import frozen
from returns.result import Result, Success

from agent_memory.domain.errors import DomainError

Field = str | int | float | bool


@frozen
class LedgerRecord:
    """One record: a unique key, the store it concerns, its kind ("lease", "batch", "change", …), an order number
    within (store, kind) where the kind uses one (0 otherwise), flat fields an engine can filter on, and an opaque
    text (JSON, say) it never reads."""

    key: str
    store: str
    kind: str
    seq: int = 0
    fields: Mapping[str, Field] = {}
    text: str = ""


class Ledger(Protocol):
    """Records held by the engine (a Chroma or Qdrant server, or the embedded engine), shared by every process and
    machine that uses it: the truth that write locks, batch journals and the side indexes' change feeds rest on.

    Promises:
    - `claim(record)` stores the record only if no record has its key, atomically in the engine: of any number of
      concurrent claims of one key, from any machines, exactly one is stored; it answers the record stored under
      the key afterwards (the caller's when it won, the winner's otherwise);
    - `read(keys)` answers the stored records of these keys (unknown keys left out), as of after every write
      that was acknowledged before the call (read-your-writes, across machines);
    - `put(record)` writes a record whatever is stored under its key (creating it): meant for a record only its
      writer changes once claimed (a lease its holder renews or gives up, a batch its writer finishes);
    - `remove(keys)` forgets records (unknown keys are fine);
    - `listed(store, kind, after=n)` answers that store's records of that kind whose seq is > n, by seq;
    - every failure is a BACKEND_UNAVAILABLE (engine unreachable) or STORAGE_ERROR failure, never an exception.
    Leaves out: compare-and-set on a stored record (Chroma has none: a new state is claimed under a new key, e.g.
    a lease's next epoch), clocks (the fields carry whatever times a caller writes), expiry (nothing is forgotten unless
    removed), and size limits beyond the engine's own (a caller keeps `text` to what one record may hold).
    """

    def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]: ...

    def read(self, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]: ...

    def put(self, record: LedgerRecord) -> Result[None, DomainError]: ...

    def remove(self, keys: Sequence[str]) -> Result[None, DomainError]: ...

    def listed(self, store: str, kind: str, *, after: int = -1) -> Result[list[LedgerRecord], DomainError]: ...


class InMemoryLedger:
    """The Ledger in a dict behind one lock: the reference semantics, for unit tests and one-process apps."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.records: dict[str, LedgerRecord] = {}

    def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]:
        with self._guard:
            return Success(self.records.setdefault(record.key, record))

    def read(self, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]:
        with self._guard:
            return Success({key: self.records[key] for key in keys if key in self.records})

    def put(self, record: LedgerRecord) -> Result[None, DomainError]:
        with self._guard:
            self.records[record.key] = record
            return Success(None)

    def remove(self, keys: Sequence[str]) -> Result[None, DomainError]:
        with self._guard:
            for key in keys:
                self.records.pop(key, None)
            return Success(None)

    def listed(self, store: str, kind: str, *, after: int = -1) -> Result[list[LedgerRecord], DomainError]:
        with self._guard:
            found = [r for r in self.records.values() if r.store == store and r.kind == kind and r.seq > after]
        return Success(sorted(found, key=lambda record: record.seq))
