"""Progress of batch create, import and reindex over fakes (monotone, ending at the total; a raising callback writes
nothing). The CLI's bar is a door's: tests/doors/test_cli_progress_bar.py."""

from __future__ import annotations

import pytest

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.progress import EMBED_SLICE, Count, embedded
from agent_memory.domain.service import MemoryService


class Seen:
    """A Progress that keeps every report."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, done: int, total: int) -> None:
        self.calls.append((done, total))


class Stop(Exception):
    """What a Progress that must not be trusted raises."""


def stop(_done: int, _total: int) -> None:
    raise Stop


def fresh(clock: FixedClock, embedder: HashingEmbedder | None = None) -> MemoryService:
    catalog = InMemoryCatalog(embedder_name=(embedder or HashingEmbedder()).name)
    return MemoryService(catalog=catalog, embedder=embedder or HashingEmbedder(), clock=clock)


def assert_reported(calls: list[tuple[int, int]], done: list[int]) -> None:
    """Reported as it went (the counts grow to the total), every time against the same total."""
    assert calls == [(count, done[-1]) for count in done]


def batch(count: int) -> list[CreateMemory]:
    """`count` memories over two stores (the second one smaller), so a report crosses from one store to the next."""
    return [CreateMemory(content=f"memory {i}", store="a" if i < count * 2 // 3 else "b") for i in range(count)]


def test_batch_create_reports_each_slice_up_to_the_total(clock: FixedClock) -> None:
    seen, count = Seen(), 2 * EMBED_SLICE + 10
    fresh(clock).create_many(batch(count), progress=seen).unwrap()
    first_store = count * 2 // 3  # a slice of the first store, its rest, then the second store whole
    assert_reported(seen.calls, [EMBED_SLICE, first_store, count])


def test_import_reports_each_batch_up_to_the_total(clock: FixedClock) -> None:
    source = fresh(clock)
    source.create_many(batch(300)).unwrap()
    seen = Seen()
    fresh(clock).import_memories(source.export().unwrap(), progress=seen).unwrap()
    assert_reported(seen.calls, [200, 300])  # each store's part is one batch of at most 256


def test_reindex_reports_each_embedded_slice_up_to_the_total(clock: FixedClock) -> None:
    service, seen, count = fresh(clock), Seen(), 2 * EMBED_SLICE + 3
    service.create_many([CreateMemory(content=f"m {i}") for i in range(count)]).unwrap()
    service.reindex(progress=seen).unwrap()
    assert_reported(seen.calls, [EMBED_SLICE, 2 * EMBED_SLICE, count])


def test_a_progress_that_raises_leaves_nothing_written(clock: FixedClock) -> None:
    service = fresh(clock)
    with pytest.raises(Stop):
        service.create_many([CreateMemory(content=f"m {i}") for i in range(3)], progress=stop)
    assert service.export().unwrap() == []
    kept = service.create(CreateMemory(content="kept")).unwrap().memory  # the store's write lock was let go
    with pytest.raises(Stop):
        service.reindex(progress=stop)
    assert [m.id for m in service.export().unwrap()] == [kept.id]


def test_slices_of_like_length_give_each_text_its_own_vector() -> None:
    embedder, seen = HashingEmbedder(), Seen()
    texts = [("word " * (i * 7 % 13)) + f"text {i}" for i in range(EMBED_SLICE + 40)]
    assert embedded(embedder, texts, Count(len(texts), seen)).unwrap() == embedder.embed_documents(texts).unwrap()
    assert_reported(seen.calls, [EMBED_SLICE, len(texts)])
