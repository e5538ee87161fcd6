"""Issue 47: many updates or removals as one write per store (UpdateMemories, RemoveMemories), as single ones do."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest
from returns.result import Failure, Result

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryVectorStore
from agent_memory.domain.batch_writes import RemoveMemories, UpdateMemories
from agent_memory.domain.commands import CreateMemory, GetMemory, SearchMemories, UpdateMemory
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector
from agent_memory.domain.service import MemoryService
from tests.unit.conftest import T0


class CountingEmbedder(HashingEmbedder):
    """Counts its calls and the texts it embeds."""

    calls: int = 0
    texts: int = 0

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        self.calls, self.texts = self.calls + 1, self.texts + len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def counted(catalog: InMemoryCatalog, clock: FixedClock, embedder: CountingEmbedder) -> MemoryService:
    return MemoryService(catalog=catalog, embedder=embedder, clock=clock)


def made(service: MemoryService, n: int, **fields: object) -> list[Memory]:
    return [
        service.create(CreateMemory(content=f"note {i} about tea", path=f"notes/n{i}", **fields)).unwrap().memory  # type: ignore[arg-type]
        for i in range(n)
    ]


def test_updates_are_written_together_with_changed_texts_embedded_in_one_call(
    counted: MemoryService, embedder: CountingEmbedder, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = made(counted, 4)
    replaced: list[int] = []
    real = InMemoryVectorStore.replace

    def replace(
        store: InMemoryVectorStore, memories: Sequence[Memory], vectors: Sequence[Vector]
    ) -> Result[list[Memory], DomainError]:
        replaced.append(len(memories))
        return real(store, memories, vectors)

    monkeypatch.setattr(InMemoryVectorStore, "replace", replace)
    embedder.calls = embedder.texts = 0
    clock.advance(hours=1)
    updates = (
        UpdateMemory(ref=before[0].id, content="now about coffee"),
        UpdateMemory(ref="notes/n1", content="now about cocoa", tags=("drinks",)),
        UpdateMemory(ref=before[2].id, tags=("kept",)),  # metadata only: not embedded again
    )
    views = dispatch(counted, UpdateMemories(updates=updates)).unwrap()
    assert [v.memory.id for v in views] == [m.id for m in before[:3]]
    assert (embedder.calls, embedder.texts, replaced) == (1, 2, [2])
    got = [counted.get(m.id).unwrap().memory for m in before]
    assert [m.content for m in got] == ["now about coffee", "now about cocoa", "note 2 about tea", "note 3 about tea"]
    assert got[1].tags == ("drinks",) and got[2].tags == ("kept",)
    assert [m.updated_at for m in got[:3]] == [T0 + timedelta(hours=1)] * 3 and got[3].updated_at == T0
    assert all(g.created_at == b.created_at for g, b in zip(got, before, strict=True))
    found = counted.search(SearchMemories(query="coffee", limit=1)).unwrap()
    assert [hit.memory.id for hit in found.results] == [before[0].id]  # searched by its new vector


def test_one_refused_update_changes_nothing(counted: MemoryService) -> None:
    before = made(counted, 2)
    updates = (UpdateMemory(ref=before[0].id, content="changed"), UpdateMemory(ref="notes/missing", content="x"))
    refused = dispatch(counted, UpdateMemories(updates=updates))
    assert isinstance(refused, Failure) and refused.failure().code is ErrorCode.MEMORY_NOT_FOUND
    assert counted.get(before[0].id).unwrap().memory.content == "note 0 about tea"
    nothing = dispatch(counted, UpdateMemories(updates=(UpdateMemory(ref=before[1].id),)))
    assert isinstance(nothing, Failure) and nothing.failure().code is ErrorCode.INVALID_INPUT


def test_updates_of_one_memory_apply_in_their_order(counted: MemoryService) -> None:
    (memory,) = made(counted, 1)
    updates = (UpdateMemory(ref=memory.id, content="first"), UpdateMemory(ref=memory.id, tags=("second",)))
    views = dispatch(counted, UpdateMemories(updates=updates)).unwrap()
    assert [(v.memory.content, v.memory.tags) for v in views] == [("first", ("second",))] * 2
    stored = counted.get(memory.id).unwrap().memory
    assert (stored.content, stored.tags) == ("first", ("second",))


def test_an_update_that_does_not_touch_keeps_updated_at(counted: MemoryService, clock: FixedClock) -> None:
    (memory,) = made(counted, 1)
    clock.advance(hours=2)
    later = T0 + timedelta(days=1)
    (view,) = dispatch(
        counted, UpdateMemories(updates=(UpdateMemory(ref=memory.id, expires_at=later),), touch=False)
    ).unwrap()
    stored = counted.get(memory.id).unwrap().memory
    assert (view.memory.updated_at, stored.updated_at, stored.expires_at) == (T0, T0, later)


def test_updates_keep_to_the_callers_namespace(counted: MemoryService) -> None:
    (mine,) = made(counted, 1, namespace=("user", "a"))
    outside = dispatch(
        counted, UpdateMemories(updates=(UpdateMemory(ref=mine.id, namespace=("user", "b"), content="x"),))
    )
    assert isinstance(outside, Failure) and outside.failure().code is ErrorCode.MEMORY_NOT_FOUND
    assert counted.get(mine.id).unwrap().memory.content == "note 0 about tea"


def test_removals_are_one_write_and_skip_what_is_gone(counted: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    memories = made(counted, 4)
    removed_calls: list[list[str]] = []
    real = InMemoryVectorStore.remove

    def remove(store: InMemoryVectorStore, ids: Sequence[str]) -> Result[None, DomainError]:
        removed_calls.append(list(ids))
        return real(store, ids)

    monkeypatch.setattr(InMemoryVectorStore, "remove", remove)
    refs = (memories[0].id, "notes/n1", memories[2].id.upper(), "notes/never", "0b0e7a52-4a57-4b0f-8a7b-2f7d5c7e9f10")
    gone = dispatch(counted, RemoveMemories(refs=refs)).unwrap()
    assert sorted(m.id for m in gone) == sorted(m.id for m in memories[:3])
    assert len(removed_calls) == 1 and sorted(removed_calls[0]) == sorted(m.id for m in memories[:3])
    for memory in memories[:3]:
        assert dispatch(counted, GetMemory(ref=memory.id)).failure().code is ErrorCode.MEMORY_NOT_FOUND  # type: ignore[union-attr]
    assert counted.get(memories[3].id).unwrap().memory.content == "note 3 about tea"
    assert dispatch(counted, RemoveMemories(refs=(memories[0].id,))).unwrap() == []


def test_removals_keep_to_the_callers_namespace(counted: MemoryService) -> None:
    (theirs,) = made(counted, 1, namespace=("user", "b"))
    assert dispatch(counted, RemoveMemories(refs=(theirs.id,), namespace=("user", "a"))).unwrap() == []
    assert counted.get(theirs.id).unwrap().memory.id == theirs.id
    bad = dispatch(counted, RemoveMemories(refs=(theirs.id, "  ")))  # a mistake in the call: nothing removed
    assert isinstance(bad, Failure) and bad.failure().code is ErrorCode.INVALID_INPUT
    assert counted.get(theirs.id).unwrap().memory.id == theirs.id


def test_a_write_failing_part_way_puts_every_memory_back(
    counted: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = made(counted, 2)

    def refused(_store: InMemoryVectorStore, _memories: object, _vectors: object) -> Result[None, DomainError]:
        return Failure(DomainError(ErrorCode.STORAGE_ERROR, "disk full"))

    monkeypatch.setattr(InMemoryVectorStore, "replace", refused)  # the metadata-only one is written before it
    updates = (UpdateMemory(ref=before[0].id, tags=("changed",)), UpdateMemory(ref=before[1].id, content="new text"))
    failed = dispatch(counted, UpdateMemories(updates=updates))
    assert isinstance(failed, Failure) and failed.failure().code is ErrorCode.STORAGE_ERROR
    monkeypatch.undo()
    after = [counted.get(m.id).unwrap().memory for m in before]
    assert [(m.content, m.tags) for m in after] == [(m.content, m.tags) for m in before]
