"""One engine read for every change feed of a store: a reader's probe, shared by the side caches it catches up."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar

from attrs import define, field
from returns.result import Result, Success

from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.domain.errors import DomainError

Wanted = Callable[[str], list[str]]  # store → the keys a feed reads to know whether it has more (its probe)
_READING = threading.local()


@contextmanager
def reading() -> Iterator[None]:
    """A use case's read of records, vectors or filters (ClaimedStore's `get`, `similarities`, `passing`): a node
    mirror caught up in the round may answer it. The reads a write makes for its own checks (the stored memory, a
    path's holder, a revision) are not inside one: they always ask the engine, which referees writers."""
    depth = getattr(_READING, "depth", 0)
    _READING.depth = depth + 1
    try:
        yield
    finally:
        _READING.depth = depth


def is_reading() -> bool:
    """Whether this thread is inside `reading()`."""
    return getattr(_READING, "depth", 0) > 0


@define(eq=False)
class _Round:
    """One reader's use of a store on one thread, with this process's writes to the store when it began."""

    writes: int


@define(eq=False)
class _Answer:
    """One probe of a store: its round, this process's writes to the store before it, what it asked and found."""

    round: _Round
    writes: int
    asked: frozenset[str]
    found: dict[str, LedgerRecord]
    used: set[str] = field(factory=set)  # the feeds that caught up from it


class FeedProbe:
    """The probes of this process's change feeds over one Ledger (`of`): every feed of a store that a reader
    catches up (the node mirror's vectors, the keyword index, the parts) asks for the keys after its watermark;
    the first to ask in a *round* reads every feed's keys in one engine `read`, and the others (or the same feed
    again: a keyword side asked deeper) catch up from that answer instead of reading their own.

    A round is one reader's use of a store: `begin(store)` on the reader's thread (the catalog calls it as a use
    case opens the store) starts it, so an answer is never older than the use case that reads it: a write
    acknowledged before the search began is in it. Threads that never called `begin` (background builds) probe
    on their own. A write of this process to the store (`wrote`) ends every round's answer of it, and a feed whose
    watermark moved since the probe (another thread replayed) does not use it either: it reads on its own.
    `fresh(store, feed)` tells whether a feed caught up from this round's answer (the node mirror then answers
    the hits' records and vectors itself: they are the engine's as of that probe).
    """

    _each: ClassVar[weakref.WeakValueDictionary[int, FeedProbe]] = weakref.WeakValueDictionary()
    _each_guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._guard = threading.Lock()
        self._feeds: dict[str, Wanted] = {}
        self._writes: dict[str, int] = {}  # store → this process's writes to its feeds so far
        self._local = threading.local()

    @classmethod
    def of(cls, ledger: Ledger) -> FeedProbe:
        """This process's probe over `ledger` (one per Ledger object)."""
        with cls._each_guard:
            probe = cls._each.get(id(ledger))
            if probe is None or probe.ledger is not ledger:
                probe = cls._each[id(ledger)] = cls(ledger)
            return probe

    def join(self, feed: str, wanted: Wanted) -> None:
        """A feed of this process: `wanted(store)` gives the keys it reads to know whether it has more."""
        with self._guard:
            self._feeds[feed] = wanted

    # --- rounds

    def begin(self, store: str) -> None:
        """A reader on this thread starts using `store`: what its feeds read from now on is probed afresh."""
        with self._guard:
            writes = self._writes.get(store, 0)
        self._rounds()[store] = _Round(writes)
        self._answers().pop(store, None)

    def wrote(self, store: str) -> None:
        """This process wrote a change record of `store`: no answer probed before it is used again."""
        with self._guard:
            self._writes[store] = self._writes.get(store, 0) + 1

    def within(self, store: str) -> bool:
        """Whether this thread reads `store` in a round (`begin` was called for it) in which this process wrote
        nothing to it yet (a writer's use case reads its own writes from the engine)."""
        round_ = self._rounds().get(store)
        with self._guard:
            return round_ is not None and round_.writes == self._writes.get(store, 0)

    def fresh(self, store: str, feed: str) -> bool:
        """Whether `feed` caught up on `store` from this thread's round's probe, with no write of this process since."""
        answer = self._current(store)
        return answer is not None and feed in answer.used

    # --- reading

    def read(self, store: str, feed: str, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]:
        """The records among `keys` (a feed's probe): from this round's answer when it asked for them all, else read
        now together with every other feed's keys of the store (which becomes the round's answer)."""
        wanted = frozenset(keys)
        answer = self._current(store)
        if answer is not None and wanted <= answer.asked:
            answer.used.add(feed)
            return Success({key: record for key, record in answer.found.items() if key in wanted})
        with self._guard:
            others = [(name, ask) for name, ask in self._feeds.items() if name != feed]
            writes = self._writes.get(store, 0)
        asked = set(wanted)
        for _, ask in others:
            asked.update(ask(store))
        round_ = self._rounds().get(store)

        def kept(found: dict[str, LedgerRecord]) -> dict[str, LedgerRecord]:
            if round_ is not None:
                self._answers()[store] = _Answer(round_, writes, frozenset(asked), found, {feed})
            return {key: record for key, record in found.items() if key in wanted}

        return self.ledger.read(sorted(asked)).map(kept)

    # --- helpers

    def _current(self, store: str) -> _Answer | None:
        answer = self._answers().get(store)
        if answer is None or answer.round is not self._rounds().get(store):
            return None
        with self._guard:
            return answer if answer.writes == self._writes.get(store, 0) else None

    def _rounds(self) -> dict[str, _Round]:
        rounds: dict[str, _Round] | None = getattr(self._local, "rounds", None)
        if rounds is None:
            rounds = self._local.rounds = {}
        return rounds

    def _answers(self) -> dict[str, _Answer]:
        answers: dict[str, _Answer] | None = getattr(self._local, "answers", None)
        if answers is None:
            answers = self._local.answers = {}
        return answers
