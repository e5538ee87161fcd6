"""Issue 47: a batch's changed texts on embedded Chroma are written as a delete then an upsert (cheaper than an
upsert over existing records) under one hold of the directory's lock and the batch's journal: the same memories as
a `replace` would leave, never seen missing by a reader, and put back whole when the write fails between the two."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure

from agent_memory.adapters.chroma import record_writes
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.domain.batch_writes import UpdateMemories
from agent_memory.domain.commands import CreateMemory, GetMemory, SearchMemories, UpdateMemory
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import SplitRewrites
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

TEXTS = ("the user drinks green tea", "the user cycles to work", "the user keeps two cats")
NEW = ("the user drinks black coffee", "the user takes the train", "the user keeps a parrot")


@pytest.fixture
def service(tmp_path: Path) -> MemoryService:
    settings = load_settings({"data_dir": str(tmp_path / "data"), "backend": "chroma"}, {"HOME": str(tmp_path)})
    return build_service(settings.unwrap(), embedder=HashingEmbedder()).unwrap()


def made(service: MemoryService) -> list[Memory]:
    return [
        service.create(CreateMemory(content=text, path=f"notes/n{n}", on_duplicate="keep")).unwrap().memory
        for n, text in enumerate(TEXTS)
    ]


def updates(memories: list[Memory]) -> UpdateMemories:
    return UpdateMemories(updates=tuple(UpdateMemory(ref=m.id, content=t) for m, t in zip(memories, NEW, strict=True)))


def contents(service: MemoryService, memories: list[Memory]) -> list[str]:
    return [dispatch(service, GetMemory(ref=m.id)).unwrap().memory.content for m in memories]


def top(service: MemoryService, query: str) -> str:
    found = service.search(SearchMemories(query=query, limit=1, mode="semantic")).unwrap()
    return found.results[0].memory.content


def spied(monkeypatch: pytest.MonkeyPatch, during: Callable[[], None] | None = None) -> list[str]:
    """Each Chroma delete and upsert the writes make, in order; `during` runs right after the rewrite's delete."""
    made_calls: list[str] = []
    real_upsert, real_rewritten = record_writes.upsert, record_writes.rewritten

    def upsert(*args: Any, **kwargs: Any) -> None:
        made_calls.append("upsert")
        real_upsert(*args, **kwargs)

    def rewritten(session: Any, boundary: Any, collection: Any, pairs: Any, batch: int) -> None:
        real_delete = collection.delete

        def delete(**kwargs: Any) -> None:
            made_calls.append("delete")
            real_delete(**kwargs)
            if during is not None:
                during()

        monkeypatch.setattr(collection, "delete", delete)
        try:
            real_rewritten(session, boundary, collection, pairs, batch)
        finally:
            monkeypatch.setattr(collection, "delete", real_delete)

    monkeypatch.setattr(record_writes, "upsert", upsert)
    monkeypatch.setattr(record_writes, "rewritten", rewritten)
    return made_calls


def test_embedded_chroma_rewrites_a_batch_as_a_delete_then_an_upsert(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = made(service)
    assert isinstance(service.context.open("default", create=False).unwrap(), SplitRewrites)
    calls = spied(monkeypatch)
    views = dispatch(service, updates(memories)).unwrap()
    assert calls == ["delete", "upsert"]
    assert [v.memory.content for v in views] == contents(service, memories) == list(NEW)
    assert [dispatch(service, GetMemory(ref=m.id)).unwrap().memory.created_at for m in memories] == [
        m.created_at for m in memories
    ]
    assert top(service, "black coffee") == NEW[0]  # searched by its new vector
    assert service.status().unwrap().memory_count == 3


def test_a_single_update_is_one_upsert(service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    memories = made(service)
    calls = spied(monkeypatch)
    dispatch(service, UpdateMemories(updates=(UpdateMemory(ref=memories[0].id, content=NEW[0]),))).unwrap()
    assert calls == ["upsert"]  # unjournaled: a kill between two writes would lose it, so one write
    assert contents(service, memories) == [NEW[0], *TEXTS[1:]]


def test_a_reader_never_sees_the_rewritten_memories_missing(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = made(service)
    seen: list[list[str]] = []

    def read() -> None:
        seen.append(contents(service, memories))

    def between() -> None:  # a reader on another thread, started while the records are deleted
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(timeout=1.0)  # it waits for the directory's lock: it has read nothing yet
        readers.append(reader)

    readers: list[threading.Thread] = []
    spied(monkeypatch, between)
    dispatch(service, updates(memories)).unwrap()
    for reader in readers:
        reader.join()
    assert seen == [list(NEW)]


def test_a_rewrite_failing_after_its_delete_puts_every_memory_back(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = made(service)
    spied(monkeypatch)
    real = record_writes.upsert
    refusals = [Abort(DomainError(ErrorCode.STORAGE_ERROR, "the disk refused the write"))]

    def refused_once(*args: Any, **kwargs: Any) -> None:  # the rewrite's upsert; the roll back's add succeeds
        if refusals:
            raise refusals.pop()
        real(*args, **kwargs)

    monkeypatch.setattr(record_writes, "upsert", refused_once)
    failed = dispatch(service, updates(memories))
    assert isinstance(failed, Failure) and failed.failure().code is ErrorCode.STORAGE_ERROR
    assert "Nothing was stored." in failed.failure().message
    assert contents(service, memories) == list(TEXTS)
    assert top(service, "green tea") == TEXTS[0]
    assert service.status().unwrap().memory_count == 3
