"""A batch is one unit (issue 31): a failure, a refused commit or a writer killed part-way leaves none of it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from attrs import define, evolve
from returns.result import Failure, Result, Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import (
    HashingEmbedder,
    InMemoryCatalog,
    InMemoryKeywordIndex,
    InMemoryVectorStore,
    KillableJournal,
)
from agent_memory.domain.batch_units import recover
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import KeywordEntry, PendingBatch, Vector
from agent_memory.domain.service import MemoryService
from tests.unit.conftest import T0


class Killed(BaseException):
    """The process dies here: nothing after this line of the writer runs (no rollback, no commit)."""


@define
class Words(InMemoryKeywordIndex):
    """The fake keyword index, which can be told to fail a write or to have its writer killed in it."""

    then: str = "index"  # "index", "fail" or "die"

    def upsert(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        if self.then == "die":
            raise Killed
        if self.then == "fail":
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "The keyword index failed."))
        return super().upsert(store, entries)


@define
class FullDisk(InMemoryVectorStore):
    """The fake store on a full disk: removing fails, and so does adding unless `adds` says it still works."""

    adds: bool = False
    full: bool = True

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        if self.full and not self.adds:
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "The disk is full."))
        return super().add(memories, embeddings)

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        if self.full:
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "The disk is full."))
        return super().remove(ids)


class RefusingJournal(KillableJournal):
    def commit(self, batch: PendingBatch) -> Result[None, DomainError]:
        return Failure(DomainError(ErrorCode.STORAGE_ERROR, "The caller went away."))


@pytest.fixture
def words() -> Words:
    return Words()


@pytest.fixture
def journal() -> KillableJournal:
    return KillableJournal()


@pytest.fixture
def service(catalog: InMemoryCatalog, clock: FixedClock, words: Words, journal: KillableJournal) -> MemoryService:
    return MemoryService(catalog=catalog, embedder=HashingEmbedder(), clock=clock, keywords=words, journal=journal)


BATCH = [CreateMemory(content=f"fact number {n}") for n in range(5)]


def stored(service: MemoryService) -> list[Memory]:
    return service.catalog.open("default", create=False).bind(lambda s: s.scan(MemoryFilter())).value_or([])


def contents(service: MemoryService) -> list[str]:
    return sorted(m.content for m in stored(service))


def test_a_batch_that_fails_part_way_is_taken_back_out_at_once(service: MemoryService, words: Words) -> None:
    words.then = "fail"
    error = service.create_many(BATCH).failure()
    assert "Nothing was stored" in error.message
    assert stored(service) == [] and words.count("default").unwrap() == 0
    assert service.journal.interrupted("default").unwrap() == ()


def test_a_batch_the_full_disk_refused_whole_says_nothing_was_stored_though_its_rollback_failed(
    service: MemoryService, catalog: InMemoryCatalog
) -> None:
    catalog.stores["default"] = FullDisk(model=catalog.embedder_name)
    error = service.create_many(BATCH).failure()
    assert error.message == "The disk is full. Nothing was stored.", error.message
    assert stored(service) == []


def test_a_batch_left_in_the_store_by_a_failed_rollback_says_exactly_what_is_stored(
    service: MemoryService, catalog: InMemoryCatalog, words: Words
) -> None:
    disk = catalog.stores["default"] = FullDisk(model=catalog.embedder_name, adds=True)
    words.then = "fail"  # the store took the batch, the keyword index did not, and taking it back out fails
    error = service.create_many(BATCH).failure()
    ids = sorted(m.id for m in stored(service))
    assert len(ids) == 5 and "5 of its 5 new memories" in error.message, error.message
    assert all(memory_id in error.message for memory_id in ids) and "until the store is next opened" in error.message
    disk.full = False  # room again: the next open takes the batch back out, as the message said
    words.then = "index"
    assert service.list(None).unwrap().total == 0
    assert stored(service) == []


def test_a_killed_batch_is_rolled_back_at_the_next_open_and_a_retry_stores_each_once(
    service: MemoryService, words: Words, journal: KillableJournal
) -> None:
    service.create(CreateMemory(content="kept from before")).unwrap()
    words.then = "die"
    with pytest.raises(Killed):
        service.create_many(BATCH)
    assert len(stored(service)) == 6  # half-stored: in the vector store, not in the keyword index
    journal.writer_died()
    words.then = "index"
    status = service.status().unwrap()  # the next open rolls it back, and status says so
    assert status.memory_count == 1 and "A batch of 5 memories was interrupted" in status.warnings[0]
    assert service.status().unwrap().problems == ()
    service.create_many(BATCH).unwrap()
    assert contents(service) == sorted(["kept from before", *(c.content for c in BATCH)])
    assert words.count("default").unwrap() == 6


def test_any_read_rolls_back_a_killed_batch(service: MemoryService, words: Words, journal: KillableJournal) -> None:
    words.then = "die"
    with pytest.raises(Killed):
        service.create_many(BATCH)
    journal.writer_died()
    assert service.list(None).unwrap().total == 0


def test_a_killed_import_puts_back_what_it_replaced(
    service: MemoryService, words: Words, journal: KillableJournal
) -> None:
    old = [service.create(c).unwrap().memory for c in BATCH[:2]]
    before = {m.id: m for m in stored(service)}
    changed = [evolve(m, content=m.content + " (changed)", updated_at=T0.replace(year=2027)) for m in old]
    new = evolve(old[0], id="00000000-0000-4000-8000-0000000000ff", path=None)
    words.then = "die"
    with pytest.raises(Killed):
        service.import_memories([*changed, new])
    journal.writer_died()
    words.then = "index"
    report = service.reindex().unwrap()
    assert report.rolled_back and "A batch of 3 memories" in report.rolled_back[0]
    assert {m.id: m for m in stored(service)} == before  # every field as it was
    service.import_memories([*changed, new]).unwrap()
    assert sorted(m.content for m in stored(service)) == sorted([*(m.content for m in changed), new.content])


def test_a_refused_commit_rolls_the_batch_back(catalog: InMemoryCatalog, clock: FixedClock) -> None:
    service = MemoryService(catalog=catalog, embedder=HashingEmbedder(), clock=clock, journal=RefusingJournal())
    error = service.create_many(BATCH).failure()
    assert error.message == "The caller went away. Nothing was stored."
    assert stored(service) == []


def test_a_store_never_made_drops_its_interrupted_batch(service: MemoryService, journal: KillableJournal) -> None:
    batch = journal.begin(PendingBatch("elsewhere", ("00000000-0000-4000-8000-000000000001",))).unwrap()
    journal.release(batch)
    assert recover(service.context, "elsewhere") == Success((batch,))
    assert journal.interrupted("elsewhere").unwrap() == ()
