"""The BatchJournal contract: one suite, run against every adapter of the port."""

from __future__ import annotations

from collections.abc import Callable

from agent_memory.domain.model import Memory
from agent_memory.domain.ports import BatchJournal, PendingBatch
from tests.unit.conftest import T0

ID_A, ID_B = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
BEFORE = Memory(id=ID_B, content='as it was: ünïcode, "quotes"\nand lines', created_at=T0, updated_at=T0, tags=("x",))
BATCH = PendingBatch("default", (ID_A,), (BEFORE,))


class BatchJournalContract:
    """Subclasses provide `journal` and `another` (the same journal as another process would see it, or the same
    one where there is no other process) fixtures, and `crash(journal)`: its writer dies with its batches running."""

    crash: Callable[[BatchJournal], None]

    def test_a_running_batch_is_never_interrupted(self, journal: BatchJournal, another: BatchJournal) -> None:
        begun = journal.begin(BATCH).unwrap()
        assert begun.key and (begun.store, begun.created, begun.replaced) == (
            BATCH.store,
            BATCH.created,
            BATCH.replaced,
        )
        assert another.interrupted("default").unwrap() == ()

    def test_a_committed_or_dropped_batch_is_forgotten(self, journal: BatchJournal, another: BatchJournal) -> None:
        journal.commit(journal.begin(BATCH).unwrap()).unwrap()
        journal.drop(journal.begin(BATCH).unwrap()).unwrap()
        type(self).crash(journal)
        assert another.interrupted("default").unwrap() == ()

    def test_a_batch_whose_writer_died_is_interrupted_with_all_it_recorded(
        self, journal: BatchJournal, another: BatchJournal
    ) -> None:
        begun = journal.begin(BATCH).unwrap()
        type(self).crash(journal)
        assert another.interrupted("default").unwrap() == (begun,)  # the pre-image round-trips exactly
        assert another.interrupted("other").unwrap() == ()
        another.drop(begun).unwrap()
        assert another.interrupted("default").unwrap() == ()

    def test_a_released_batch_is_interrupted(self, journal: BatchJournal, another: BatchJournal) -> None:
        begun = journal.begin(BATCH).unwrap()
        journal.release(begun).unwrap()
        assert another.interrupted("default").unwrap() == (begun,)
