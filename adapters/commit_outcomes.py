"""Batch outcomes in the Ledger: a server engine's readers show a batch's records only once the batch committed."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import ClassVar

from returns.result import Result, Success

from agent_memory.adapters.path_claims import Place
from agent_memory.adapters.shared.commit_mark import mark_of, unmarked
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import PendingBatch

COMMIT = "commit"  # the kind and key prefix of outcome records: `commit/<store>/<batch key>`
KEPT, VOID = "kept", "void"
MAX_DECIDED = 200_000  # outcomes kept per process (about 200 bytes each)


def outcome_key(store: str, key: str) -> str:
    return f"{COMMIT}/{store}/{key}"


class CommitOutcomes:
    """The outcomes of a store's batches, one Ledger record each (`commit/<store>/<key>`), claimed once (insert if
    absent): KEPT by the batch's writer after its last write, or VOID by whoever rolls it back or takes a path it
    claimed but never wrote. Whoever's claim is stored decides, whatever either writer's lease or clock says.

    - `begun(batch)` / `ended(batch)`: the batches this process runs; `mark_for(id)` is the key a record it adds
      carries (adapters/shared/commit_mark.py), so every reader on every node knows which batch wrote it;
    - `shown(memories)`: the memories a reader may see, unmarked: those without a mark, those of a batch this thread
      runs (a batch sees its own writes), and those whose batch is KEPT; a record of a batch VOID, still running
      or with no outcome (its writer stopped) is left out. Outcomes never change once claimed, so each is read from
      the engine once (one read per page of hits, for its unseen keys) and kept for the life of the process.
    One per Ledger in a process (`of`): the batch journal and the stores share it.
    """

    # by id of their ledger, while something holds them (each holds its ledger, so an id is never another's meanwhile)
    _each: ClassVar[weakref.WeakValueDictionary[int, CommitOutcomes]] = weakref.WeakValueDictionary()
    _each_guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._guard = threading.Lock()
        self._decided: dict[tuple[str, str], str] = {}  # (store, key) → KEPT or VOID, never changed once claimed
        self._running: dict[str, tuple[str, int]] = {}  # memory id → (key, thread) of a batch this process runs
        self._places: dict[str, list[tuple[Place, str]]] = {}  # key → the paths its batch claimed, with their holder
        self._fresh: set[str] = set()  # keys of running batches whose ids are all new (refereed creates)

    @classmethod
    def of(cls, ledger: Ledger) -> CommitOutcomes:
        """This process's outcomes over `ledger` (one per Ledger object)."""
        with cls._each_guard:
            outcomes = cls._each.get(id(ledger))
            if outcomes is None or outcomes.ledger is not ledger:
                outcomes = cls._each[id(ledger)] = cls(ledger)
            return outcomes

    # --- writers

    def claim(self, store: str, key: str, outcome: str) -> Result[bool, DomainError]:
        """Claim a batch's outcome: whether the outcome stored (by this claim, or an earlier one) is `outcome`."""
        record = LedgerRecord(key=outcome_key(store, key), store=store, kind=COMMIT, fields={"outcome": outcome})

        def settled(stored: LedgerRecord) -> bool:
            decided = str(stored.fields.get("outcome", ""))
            if decided in (KEPT, VOID):
                with self._guard:
                    self._decided[(store, key)] = decided
            return decided == outcome

        return self.ledger.claim(record).map(settled)

    def begun(self, batch: PendingBatch, *, fresh: bool = False) -> None:
        """A batch this process runs from now; `fresh`: every id it creates is new (never stored: nothing to read)."""
        thread = threading.get_ident()
        with self._guard:
            self._running.update(dict.fromkeys(batch.created, (batch.key, thread)))
            if fresh:
                self._fresh.add(batch.key)

    def placed(self, key: str, place: Place, holder: str) -> None:
        """Note a path a running batch claimed (to name who took it, should the batch be voided)."""
        with self._guard:
            self._places.setdefault(key, []).append((place, holder))

    def places(self, key: str) -> list[tuple[Place, str]]:
        with self._guard:
            return list(self._places.get(key, ()))

    def ended(self, batch: PendingBatch) -> None:
        with self._guard:
            self._places.pop(batch.key, None)
            self._fresh.discard(batch.key)
            for memory_id in batch.created:
                if self._running.get(memory_id, ("", 0))[0] == batch.key:
                    del self._running[memory_id]

    def mark_for(self, memory_id: str) -> str:
        """The key of the running batch of this process that creates `memory_id` ("" when none does)."""
        with self._guard:
            return self._running.get(memory_id, ("", 0))[0]

    def fresh(self, key: str) -> bool:
        """Whether a running batch of this process creates only new ids (begun `fresh`)."""
        with self._guard:
            return key in self._fresh

    def runs(self, key: str) -> bool:
        """Whether a batch of this process runs under `key` (begun, not ended)."""
        with self._guard:
            return any(running == key for running, _ in self._running.values())

    # --- readers

    def decided(self, store: str, key: str) -> Result[str, DomainError]:
        """A batch's outcome: KEPT, VOID, or "" (running, or its writer stopped before claiming either)."""
        return self._outcomes([(store, key)], even_running=True).map(lambda found: found.get((store, key), ""))

    def shown(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        """The memories a reader may see, in order, unmarked (see the class)."""
        marked = {(m.store, key) for m in memories if (key := mark_of(m))}
        if not marked:
            return Success(list(memories))
        thread = threading.get_ident()
        with self._guard:
            own = {key for key, runner in self._running.values() if runner == thread}
        wanted = [(store, key) for store, key in marked if key not in own]
        return self._outcomes(wanted).map(
            lambda found: [
                unmarked(m)
                for m in memories
                if not (key := mark_of(m)) or key in own or found.get((m.store, key)) == KEPT
            ]
        )

    def _outcomes(
        self, batches: Sequence[tuple[str, str]], *, even_running: bool = False
    ) -> Result[dict[tuple[str, str], str], DomainError]:
        """The decided outcomes of these batches: the known ones, and the rest read in one round trip (but those
        this process runs, undecided as far as a reader cares, unless `even_running`: voided meanwhile?)."""
        with self._guard:
            known = {batch: self._decided[batch] for batch in batches if batch in self._decided}
            running = set() if even_running else {key for key, _ in self._running.values()}
        unseen = [(store, key) for store, key in batches if (store, key) not in known and key not in running]
        if not unseen:
            return Success(known)

        def learnt(found: dict[str, LedgerRecord]) -> dict[tuple[str, str], str]:
            for store, key in unseen:
                record = found.get(outcome_key(store, key))
                outcome = "" if record is None else str(record.fields.get("outcome", ""))
                if outcome in (KEPT, VOID):
                    known[(store, key)] = outcome
            with self._guard:
                if len(self._decided) >= MAX_DECIDED:  # a bound: a forgotten outcome is read again, once
                    self._decided.clear()
                self._decided.update(known)
            return known

        return self.ledger.read([outcome_key(store, key) for store, key in unseen]).map(learnt)
