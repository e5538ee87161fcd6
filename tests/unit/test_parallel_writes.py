"""Writes to one store embed in parallel: a create's, a batch's and a content update's text is embedded before the
store's write lock is taken, so two writers' embeddings overlap (issue 46, item 4)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from returns.result import Result, Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain.commands import CreateMemory, UpdateMemory
from agent_memory.domain.errors import DomainError
from agent_memory.domain.ports import Vector
from agent_memory.domain.service import MemoryService
from tests.unit.conftest import T0

MEET = "rendezvous"  # a text with this word waits in the embedder for another writer's to arrive


class Rendezvous(HashingEmbedder):
    """HashingEmbedder, but a call with a text that says MEET waits until another thread's such call has begun:
    two writers of one store whose embedding ran under the store's lock would never meet (the barrier breaks)."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(2, timeout=20)

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        if any(MEET in text for text in texts):
            self.barrier.wait()
        return super().embed_documents(texts)


def both(first: Callable[[], Result[Any, DomainError]], second: Callable[[], Result[Any, DomainError]]) -> list[Any]:
    """Run two writes at once in two threads; what each answered (or the exception it raised)."""
    answers: list[Any] = [None, None]

    def run(at: int, write: Callable[[], Result[Any, DomainError]]) -> None:
        try:
            answers[at] = write()
        except threading.BrokenBarrierError as error:
            answers[at] = error

    threads = [threading.Thread(target=run, args=(at, write)) for at, write in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def fresh() -> tuple[MemoryService, Rendezvous]:
    embedder = Rendezvous()
    catalog = InMemoryCatalog(embedder_name=embedder.name)
    return MemoryService(catalog=catalog, embedder=embedder, clock=FixedClock(T0)), embedder


def test_two_creates_of_one_store_embed_at_once_with_a_path_or_without() -> None:
    service, _ = fresh()
    answers = both(
        lambda: service.create(CreateMemory(content=f"{MEET} one")),
        lambda: service.add(CreateMemory(content=f"{MEET} two", path="notes/two")),
    )
    assert all(isinstance(answer, Success) for answer in answers), answers
    assert sorted(m.memory.content for m in service.list().unwrap().memories) == [f"{MEET} one", f"{MEET} two"]


def test_two_keyed_creates_embed_at_once_and_a_retry_still_answers_the_first() -> None:
    service, embedder = fresh()
    first = CreateMemory(content=f"{MEET} keyed", idempotency_key="k-1")
    answers = both(
        lambda: service.create(first),
        lambda: service.create(CreateMemory(content=f"{MEET} other", idempotency_key="k-2")),
    )
    assert all(isinstance(answer, Success) for answer in answers), answers
    embedder.barrier = threading.Barrier(1)  # a retry alone: nobody to meet
    assert service.create(first).unwrap().memory.id == answers[0].unwrap().memory.id
    assert len(service.list().unwrap().memories) == 2


def test_two_batches_of_one_store_embed_at_once() -> None:
    service, _ = fresh()
    answers = both(
        lambda: service.create_many([CreateMemory(content=f"{MEET} a{i}") for i in range(3)]),
        lambda: service.create_many([CreateMemory(content=f"{MEET} b{i}") for i in range(3)]),
    )
    assert all(isinstance(answer, Success) for answer in answers), answers
    assert len(service.list().unwrap().memories) == 6


def test_two_content_updates_of_one_store_embed_at_once() -> None:
    service, _ = fresh()
    ids = [service.create(CreateMemory(content=f"plain {i}")).unwrap().memory.id for i in range(2)]
    answers = both(
        lambda: service.update(UpdateMemory(ref=ids[0], content=f"{MEET} changed 0")),
        lambda: service.update(UpdateMemory(ref=ids[1], content=f"{MEET} changed 1")),
    )
    assert all(isinstance(answer, Success) for answer in answers), answers
    assert sorted(service.get(i).unwrap().memory.content for i in ids) == [f"{MEET} changed 0", f"{MEET} changed 1"]
