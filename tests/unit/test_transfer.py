"""Export and import over fakes: every field survives, import is idempotent by id, bad input writes nothing."""

from collections.abc import Sequence
from datetime import timedelta

import pytest
from attrs import evolve
from returns.result import Result

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryVectorStore
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector
from agent_memory.domain.service import MemoryService
from tests.unit.conftest import T0


def fresh_service(clock: FixedClock) -> MemoryService:
    return MemoryService(catalog=InMemoryCatalog(embedder_name="hashing-bow"), embedder=HashingEmbedder(), clock=clock)


def fill(service: MemoryService, clock: FixedClock) -> None:
    service.add(
        CreateMemory(
            content="full memory",
            path="a/b/c",
            store="work",
            namespace=("user", "u1"),
            agent="claude",
            personality="engineer",
            project="p",
            type="fact",
            global_=True,
            tags=("t1", "t2"),
            source="chat",
            citations=("x.py:1",),
            thread="chat-42",
            decay_policy="reinforceable",
            expires_at=T0 + timedelta(days=3),
        )
    ).unwrap()
    service.create(CreateMemory(content="expired", expires_at=T0 + timedelta(minutes=1))).unwrap()  # an hour later
    clock.advance(hours=1)
    service.reinforce("a/b/c", store="work").unwrap()
    gone = service.create(CreateMemory(content="soft deleted")).unwrap().memory.id
    service.delete(gone).unwrap()
    service.update(UpdateMemory(ref="a/b/c", store="work", content="full memory, edited")).unwrap()


def test_export_then_import_into_another_backend_keeps_every_field(clock: FixedClock) -> None:
    source = fresh_service(clock)
    fill(source, clock)
    exported = source.export().unwrap()
    assert len(exported) == 3
    target = fresh_service(clock)
    report = target.import_memories(exported).unwrap()
    assert (report.created, report.replaced) == (3, 0)
    assert sorted(target.export().unwrap(), key=lambda m: m.id) == sorted(exported, key=lambda m: m.id)
    assert target.search(SearchMemories(query="edited", store="work", namespace=("user",))).unwrap().count == 1


def test_import_is_idempotent_by_id(clock: FixedClock) -> None:
    source = fresh_service(clock)
    fill(source, clock)
    exported = source.export().unwrap()
    target = fresh_service(clock)
    target.import_memories(exported).unwrap()
    again = target.import_memories(exported).unwrap()
    assert (again.created, again.replaced) == (0, 3)
    assert len(target.export().unwrap()) == 3


def test_import_reports_progress_and_refuses_duplicate_ids(clock: FixedClock) -> None:
    source = fresh_service(clock)
    for i in range(5):
        source.create(CreateMemory(content=f"m{i}")).unwrap()
    exported = source.export().unwrap()
    seen: list[tuple[int, int]] = []
    fresh_service(clock).import_memories(exported, progress=lambda done, total: seen.append((done, total))).unwrap()
    assert seen[-1] == (5, 5)
    result = fresh_service(clock).import_memories([exported[0], exported[0]])
    assert result.failure().code is ErrorCode.INVALID_INPUT


def test_export_of_chosen_stores_and_of_a_missing_store(clock: FixedClock) -> None:
    service = fresh_service(clock)
    service.create(CreateMemory(content="home", store="home")).unwrap()
    service.create(CreateMemory(content="work", store="work")).unwrap()
    assert [m.content for m in service.export(stores=["work"]).unwrap()] == ["work"]
    assert service.export(stores=["nope"]).failure().code is ErrorCode.STORE_NOT_FOUND


class CountingEmbedder(HashingEmbedder):
    """Counts the texts it embeds."""

    embedded: int = 0

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        self.embedded += len(texts)
        return super().embed_documents(texts)


def test_a_re_import_embeds_and_writes_only_what_changed(clock: FixedClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: re-importing 200 memories cost 4-6x creating them (every one re-embedded and replaced alone)."""
    source = fresh_service(clock)
    for i in range(4):
        source.create(CreateMemory(content=f"memory {i}", tags=("t",))).unwrap()
    exported = source.export().unwrap()
    embedder = CountingEmbedder()
    target = MemoryService(catalog=InMemoryCatalog(embedder_name="hashing-bow"), embedder=embedder, clock=clock)
    target.import_memories(exported).unwrap()
    assert embedder.embedded == 4
    replaced: list[str] = []
    real_replace = InMemoryVectorStore.replace

    def replace(
        store: InMemoryVectorStore, memories: Sequence[Memory], vectors: Sequence[Vector]
    ) -> Result[list[Memory], DomainError]:
        replaced.extend(memory.id for memory in memories)
        return real_replace(store, memories, vectors)

    monkeypatch.setattr(InMemoryVectorStore, "replace", replace)
    again = target.import_memories(exported).unwrap()  # the same memories: nothing to embed or write
    assert (again.created, again.replaced, embedder.embedded, replaced) == (0, 4, 4, [])
    retagged = [evolve(m, tags=("new",)) for m in exported[:2]]  # the same text: its vector is kept
    target.import_memories(retagged).unwrap()
    assert (embedder.embedded, replaced) == (4, [])
    rewritten = evolve(exported[3], content="memory three, rewritten")
    target.import_memories([rewritten]).unwrap()
    assert (embedder.embedded, replaced) == (5, [rewritten.id])
    found = {m.id: m for m in target.export().unwrap()}
    assert [found[m.id] for m in [*retagged, rewritten]] == [*retagged, rewritten]
    assert found[exported[2].id] == exported[2]
    hits = target.search(SearchMemories(query="rewritten", min_confidence=0, mode="keyword")).unwrap()
    assert hits.results[0].memory.id == rewritten.id  # the keyword index has the new text
