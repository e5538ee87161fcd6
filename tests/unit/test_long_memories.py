"""Long memories are searchable throughout (issue 28): a memory longer than the embedder's window is embedded in
parts, a dense hit on any part finds it once, and every write keeps its parts in step (the fakes: a window of 12
words; the real model: tests/e2e/test_long_memories.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import attrs
import pytest
from returns.result import Failure, Result

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryKeywordIndex, InMemoryPartVectors
from agent_memory.domain.batches import InProcessJournal
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import PendingBatch
from agent_memory.domain.service import MemoryService
from tests.unit.conftest import T0

WINDOW = 12
# 44 words: the fact is in the last of its windows, far beyond the first (the only one `embed_documents` reads)
LONG = " ".join(f"filler{n}" for n in range(40)) + " the platypus lays eggs"
QUERY = "platypus eggs"
FLOOR = 0.3  # the relevance floor these searches use: the query's cosine to the last part is about 0.5


def make(clock: FixedClock, *, parts: InMemoryPartVectors | None, **kwargs: object) -> MemoryService:
    return MemoryService(
        catalog=InMemoryCatalog(embedder_name="hashing-bow"),
        embedder=HashingEmbedder(window=WINDOW),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
        parts=parts,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture
def parts() -> InMemoryPartVectors:
    return InMemoryPartVectors()


@pytest.fixture
def service(clock: FixedClock, parts: InMemoryPartVectors) -> MemoryService:
    return make(clock, parts=parts)


def found(service: MemoryService, query: str = QUERY, mode: str = "semantic", **kwargs: object) -> list[str]:
    """The best hit's content, or nothing when no memory reaches the relevance floor (the floor empties an answer:
    it never thins one)."""
    search = SearchMemories(query=query, mode=mode, min_similarity=FLOOR, **kwargs)  # type: ignore[arg-type]
    return [hit.memory.content for hit in service.search(search).unwrap().results][:1]


def held(parts: InMemoryPartVectors, store: str = "default") -> set[str]:
    return set(parts.parts.get(store, {}))


def add_long(service: MemoryService, content: str = LONG, **kwargs: object) -> str:
    for short in ("the kettle is blue", "a walk in the park"):
        service.create(CreateMemory(content=short, **kwargs)).unwrap()  # type: ignore[arg-type]
    return service.create(CreateMemory(content=content, **kwargs)).unwrap().memory.id  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_long_memory_is_found_once_by_its_last_part(service: MemoryService, mode: str) -> None:
    add_long(service)
    hits = service.search(SearchMemories(query=QUERY, mode=mode, min_similarity=FLOOR)).unwrap().results
    assert [h.memory.content for h in hits].count(LONG) == 1
    assert hits[0].memory.content == LONG
    embedder = HashingEmbedder(window=WINDOW)
    query = embedder.embed_query(QUERY).unwrap()
    best = max(
        sum(a * b for a, b in zip(query, part, strict=True)) for part in embedder.embed_parts([LONG]).unwrap()[0]
    )
    assert hits[0].similarity == pytest.approx(best, abs=1e-4)  # the best part's, not the first window's (≈ 0)


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_hit_found_by_a_part_shows_that_part_and_where_it_lies(service: MemoryService, mode: str) -> None:
    """Issue 48: the hit says which part answered: its text and its offsets in the content; a hit its own vector
    answered (a short memory, or a long one by its opening) shows none, and neither does a keyword search."""
    add_long(service)
    hits = service.search(SearchMemories(query=QUERY, mode=mode, min_similarity=FLOOR)).unwrap().results
    part = hits[0].part
    assert part is not None and hits[0].memory.content == LONG
    assert LONG[part.start : part.end] == part.text and part.text.endswith("the platypus lays eggs")
    assert part.end == len(LONG) and part.start > 0  # the last window, not the opening one
    assert all(hit.part is None for hit in hits[1:])  # the short memories answered with their own vectors
    opening = service.search(SearchMemories(query="filler0 filler1 filler2", mode=mode)).unwrap().results
    assert opening[0].memory.content == LONG and opening[0].part is None
    by_words = service.search(SearchMemories(query=QUERY, mode="keyword")).unwrap().results
    assert by_words[0].memory.content == LONG and by_words[0].part is None


def test_a_matched_part_is_bounded_and_cut_at_a_word() -> None:
    from agent_memory.domain.model import MAX_PART_CHARS, MatchedPart

    content = "intro. " + "word " * 200
    part = MatchedPart.of(content, 7, len(content))
    assert len(part.text) <= MAX_PART_CHARS and part.text.endswith("word…") and part.end == len(content)
    assert MatchedPart.of("one two", 4, 7).text == "two"


def test_without_parts_the_end_of_a_long_memory_is_invisible_to_the_dense_side(clock: FixedClock) -> None:
    add_long(make(clock, parts=None))
    assert found(make(clock, parts=None)) == []
    service = make(clock, parts=None)
    add_long(service)
    assert found(service) == []


def test_short_memories_have_no_parts_and_rank_as_before(service: MemoryService, parts: InMemoryPartVectors) -> None:
    service.create(CreateMemory(content="the platypus lays eggs")).unwrap()
    assert held(parts) == set()
    assert found(service) == ["the platypus lays eggs"]


def test_an_update_of_content_replaces_the_parts(service: MemoryService, parts: InMemoryPartVectors) -> None:
    memory_id = add_long(service)
    assert held(parts) == {memory_id}
    service.update(UpdateMemory(ref=memory_id, content="now short")).unwrap()
    assert held(parts) == set()
    assert found(service) == []
    other = " ".join(f"pad{n}" for n in range(40)) + " echidnas lay eggs too"
    service.update(UpdateMemory(ref=memory_id, content=other)).unwrap()
    assert found(service, "echidnas eggs") == [other]
    assert found(service) == []


def test_a_tag_change_or_a_move_keeps_the_parts(service: MemoryService, parts: InMemoryPartVectors) -> None:
    memory_id = add_long(service)
    before = parts.parts["default"][memory_id]
    service.update(UpdateMemory(ref=memory_id, tags=("zoo",))).unwrap()
    service.move(memory_id, "animals/platypus").unwrap()
    assert parts.parts["default"][memory_id] is before  # not embedded again: the content did not change
    assert found(service) == [LONG]


def test_soft_delete_hides_a_long_memory_and_remove_forgets_its_parts(
    service: MemoryService, parts: InMemoryPartVectors
) -> None:
    memory_id = add_long(service)
    service.delete(memory_id).unwrap()
    assert found(service) == []
    service.remove(memory_id).unwrap()
    assert held(parts) == set()


def test_prune_forgets_the_parts_of_expired_memories(
    service: MemoryService, parts: InMemoryPartVectors, clock: FixedClock
) -> None:
    add_long(service, expires_at=T0 + timedelta(hours=1))
    clock.advance(hours=2)
    assert found(service) == []  # expired: never surfaces through a part either
    service.prune().unwrap()
    assert held(parts) == set()


def test_export_then_import_brings_the_parts(service: MemoryService, clock: FixedClock) -> None:
    add_long(service)
    target_parts = InMemoryPartVectors()
    target = make(clock, parts=target_parts)
    target.import_memories(service.export().unwrap()).unwrap()
    assert found(target) == [LONG]
    assert len(held(target_parts)) == 1


def test_reindex_rebuilds_the_parts(service: MemoryService, parts: InMemoryPartVectors) -> None:
    memory_id = add_long(service)
    parts.parts.clear()  # written before parts existed, or with another model
    parts.put("default", {"gone": [[1.0] + [0.0] * 63]})
    assert found(service) == []
    service.reindex().unwrap()
    assert held(parts) == {memory_id}
    assert found(service) == [LONG]


def test_a_part_of_another_namespaces_memory_never_surfaces(service: MemoryService) -> None:
    add_long(service, namespace=("alice",))
    service.create(CreateMemory(content="bob keeps bees", namespace=("bob",))).unwrap()
    assert found(service, namespace=("bob",)) == []
    assert found(service, namespace=("bob",), mode="hybrid") == []
    assert found(service, namespace=("alice",)) == [LONG]
    assert bob_pinned_sees_nothing(service)


def bob_pinned_sees_nothing(service: MemoryService) -> bool:
    pinned = service.within(("bob",)).unwrap()
    return found(pinned) == [] and found(pinned, mode="hybrid") == []


class RefusingJournal(InProcessJournal):
    """The caller went away before the acknowledgement: the batch is rolled back after every write was made."""

    def commit(self, batch: PendingBatch) -> Result[None, DomainError]:
        return Failure(DomainError(ErrorCode.STORAGE_ERROR, "The caller went away."))


def test_a_rolled_back_batch_takes_its_parts_back_out(clock: FixedClock, parts: InMemoryPartVectors) -> None:
    service = make(clock, parts=parts, journal=RefusingJournal())
    failed = service.create_many([CreateMemory(content=LONG), CreateMemory(content="short")])
    assert failed.failure().code is ErrorCode.STORAGE_ERROR
    assert held(parts) == set()
    assert found(service) == []


def test_a_rolled_back_import_puts_back_the_parts_of_what_it_replaced(
    clock: FixedClock, parts: InMemoryPartVectors
) -> None:
    service = make(clock, parts=parts)
    memory_id = add_long(service)
    before = parts.parts["default"][memory_id]
    shortened = attrs.evolve(service.get(memory_id).unwrap().memory, content="now short")
    refusing = attrs.evolve(service, journal=RefusingJournal())
    assert refusing.import_memories([shortened]).failure().code is ErrorCode.STORAGE_ERROR
    assert parts.parts["default"][memory_id] == before
    assert found(service) == [LONG]


def unparted(service: MemoryService, store: str | None = None) -> list[str]:
    """Status's warnings about long memories without parts (the store stays healthy: no problem)."""
    status = service.status(store=store).unwrap()
    assert status.problems == ()
    return [warning for warning in status.warnings if "long memor" in warning]


def test_status_warns_of_long_memories_without_parts_until_a_reindex(
    service: MemoryService, parts: InMemoryPartVectors
) -> None:
    first, second = add_long(service), add_long(service, LONG + " again")
    assert unparted(service) == []
    parts.remove("default", [first, second])  # stored before parts existed, or the parts were lost
    assert unparted(service) == [
        "2 long memories have no parts: their text past the first window is not searchable; "
        "run `memory reindex` to add them."
    ]
    parts.put("default", {first: [[1.0] + [0.0] * 63]})
    assert unparted(service)[0].startswith("1 long memory has no parts")
    service.reindex().unwrap()
    assert unparted(service) == []


def test_status_says_which_store_to_reindex_and_leaves_out_short_deleted_and_other_stores_memories(
    service: MemoryService, parts: InMemoryPartVectors
) -> None:
    service.create(CreateMemory(content="a short note", store="work")).unwrap()
    kept = service.create(CreateMemory(content=LONG, store="work")).unwrap().memory.id
    gone = service.create(CreateMemory(content=LONG + " gone", store="work")).unwrap().memory.id
    service.delete(gone, store="work").unwrap()
    parts.remove("work", [kept, gone])
    assert unparted(service, "work") == [
        "1 long memory has no parts: its text past the first window is not searchable; "
        "run `memory reindex --store work` to add it."
    ]
    service.create(CreateMemory(content=LONG)).unwrap()
    assert unparted(service) == []  # the default store's long memory has its parts


def test_a_long_memory_with_its_parts_is_never_tokenised_and_a_failed_lookup_is_a_warning(
    clock: FixedClock, parts: InMemoryPartVectors
) -> None:
    asked: list[str] = []

    @attrs.define
    class Counting(HashingEmbedder):
        def needs_parts(self, texts: Sequence[str]) -> Result[list[bool], DomainError]:
            asked.extend(texts)
            return super().needs_parts(texts)

    @attrs.define
    class Failing(InMemoryPartVectors):
        def holding(self, store: str, ids: Sequence[str]) -> Result[set[str], DomainError]:
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "The parts index is unreadable."))

    service = attrs.evolve(make(clock, parts=parts), embedder=Counting(window=WINDOW))
    service.create(CreateMemory(content="one")).unwrap()
    long_id = service.create(CreateMemory(content=LONG)).unwrap().memory.id
    asked.clear()
    assert unparted(service) == [] and asked == ["one"]
    asked.clear()
    parts.remove("default", [long_id])
    assert unparted(service)[0].startswith("1 long memory has no parts") and sorted(asked) == sorted([LONG, "one"])
    assert unparted(attrs.evolve(service, parts=Failing())) == [
        "Whether long memories have their parts could not be checked: The parts index is unreadable."
    ]
