"""Random operations, reindexes included, through the service on every backend, checked against a model after each step."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from returns.result import Failure, Success

from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryKeywordIndex
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

pytestmark = pytest.mark.slow
PATHS = ("notes/alpha", "notes/beta", "work/gamma", "work/deep/delta")
WORDS = ("river", "apple", "violin", "granite", "harbour", "pepper", "saddle", "lantern")


class ModelMemory:
    """What the model expects of one memory."""

    def __init__(self, content: str, path: str | None, tags: tuple[str, ...]) -> None:
        self.content, self.path, self.tags, self.deleted = content, path, tags, False


class StoreMachine(RuleBasedStateMachine):
    backend: ClassVar[str] = "memory"
    root: ClassVar[Path]

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, ModelMemory] = {}
        self.removed: set[str] = set()
        self.serial = 0
        self.service = self._service()

    def _service(self) -> MemoryService:
        if self.backend == "memory":
            return MemoryService(
                catalog=InMemoryCatalog(), embedder=HashingEmbedder(), clock=_clock(), keywords=InMemoryKeywordIndex()
            )
        data = self.root / uuid.uuid4().hex
        loaded = load_settings({"data_dir": str(data), "backend": self.backend}, {"HOME": str(self.root)}).unwrap()
        return build_service(loaded, embedder=HashingEmbedder()).unwrap()

    # --- helpers --------------------------------------------------------------------------

    def _live_at(self, path: str) -> str | None:
        return next((i for i, m in self.model.items() if m.path == path and not m.deleted), None)

    def _pick(self, data: st.DataObject) -> str:
        """A memory of the model, by its place in creation order (ids are random: drawing them would make
        hypothesis's replays draw differently)."""
        ids = list(self.model)  # dicts keep insertion order
        return ids[data.draw(st.integers(min_value=0, max_value=10_000)) % len(ids)]

    @initialize()
    def start(self) -> None:
        assert self.service.status().unwrap().memory_count == 0

    # --- rules ----------------------------------------------------------------------------

    @rule(
        path=st.one_of(st.none(), st.sampled_from(PATHS)),
        word=st.sampled_from(WORDS),
        tag=st.sampled_from(("", "x", "y")),
    )
    def create(self, path: str | None, word: str, tag: str) -> None:
        self.serial += 1
        content = f"memory token{self.serial} about the {word}"
        tags = (tag,) if tag else ()
        outcome = self.service.create(CreateMemory(content=content, path=path, tags=tags))
        if path is not None and self._live_at(path) is not None:
            assert outcome.failure().code is ErrorCode.DESTINATION_EXISTS
            return
        view = outcome.unwrap()
        self.model[view.memory.id] = ModelMemory(content, path, tags)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), word=st.sampled_from(WORDS), change=st.sampled_from(("content", "tags")))
    def update(self, data: st.DataObject, word: str, change: str) -> None:
        memory_id = self._pick(data)
        expected = self.model[memory_id]
        command = (
            UpdateMemory(ref=memory_id, content=f"{expected.content} and a {word}")
            if change == "content"
            else UpdateMemory(ref=memory_id, tags=(word,))
        )
        outcome = self.service.update(command)
        if expected.deleted:
            assert outcome.failure().code is ErrorCode.MEMORY_NOT_FOUND
            return
        outcome.unwrap()
        if change == "content":
            expected.content = f"{expected.content} and a {word}"
        else:
            expected.tags = (word,)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), destination=st.sampled_from(PATHS))
    def move(self, data: st.DataObject, destination: str) -> None:
        memory_id = self._pick(data)
        expected = self.model[memory_id]
        outcome = self.service.move(memory_id, destination)
        holder = self._live_at(destination)
        if expected.deleted:
            assert outcome.failure().code is ErrorCode.MEMORY_NOT_FOUND
        elif holder is not None and holder != memory_id:
            assert outcome.failure().code is ErrorCode.DESTINATION_EXISTS
        else:
            outcome.unwrap()
            expected.path = destination

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def soft_delete(self, data: st.DataObject) -> None:
        memory_id = self._pick(data)
        outcome = self.service.delete(memory_id)
        if self.model[memory_id].deleted:
            assert outcome.failure().code is ErrorCode.INVALID_OPERATION
        else:
            outcome.unwrap()
            self.model[memory_id].deleted = True

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        memory_id = self._pick(data)
        self.service.remove(memory_id).unwrap()
        del self.model[memory_id]
        self.removed.add(memory_id)

    @rule()
    def reindex(self) -> None:
        match self.service.reindex():
            case Success(report):
                assert report.memory_count == len(self.model)
            case Failure(error):  # the built-in store before its first write: nothing to reindex
                assert error.code is ErrorCode.STORE_NOT_FOUND and not self.model and not self.removed

    # --- invariants -----------------------------------------------------------------------

    @invariant()
    def get_agrees(self) -> None:
        for memory_id, expected in self.model.items():
            got = self.service.get(memory_id)
            if expected.deleted:
                assert got.failure().code is ErrorCode.MEMORY_NOT_FOUND
                continue
            memory = got.unwrap().memory
            assert (memory.content, memory.tags) == (expected.content, expected.tags)
            assert (str(memory.path) if memory.path else None) == expected.path
        for memory_id in self.removed:
            assert self.service.get(memory_id).failure().code is ErrorCode.MEMORY_NOT_FOUND

    @invariant()
    def list_and_count_agree(self) -> None:
        listed = {view.memory.id for view in self.service.list().unwrap().memories}
        assert listed == {i for i, m in self.model.items() if not m.deleted}  # the root lists unfiled ones too
        status = self.service.status().unwrap()
        deleted = sum(1 for m in self.model.values() if m.deleted)
        assert (status.memory_count, status.deleted_count) == (len(self.model) - deleted, deleted)

    @invariant()
    def keyword_search_finds_the_live_and_never_the_deleted(self) -> None:
        for memory_id, expected in self.model.items():
            token = expected.content.split()[1]  # token<n>: in this memory's content only
            found = self.service.search(SearchMemories(query=token, mode="keyword", limit=5, min_confidence=0.0))
            ids = [hit.memory.id for hit in found.unwrap().results]
            assert (memory_id in ids) is not expected.deleted, (token, ids)


def _clock():  # type: ignore[no-untyped-def]
    from agent_memory.adapters.clock import SystemClock

    return SystemClock()


@pytest.mark.parametrize("backend", ["memory", "chroma", "files", "qdrant"])
def test_the_service_agrees_with_its_model(backend: str, tmp_path: Path) -> None:
    machine = type(f"StoreMachine_{backend}", (StoreMachine,), {"backend": backend, "root": tmp_path})
    runner = machine.TestCase
    runner.settings = settings(
        max_examples=8 if backend != "memory" else 40,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    runner().runTest()
