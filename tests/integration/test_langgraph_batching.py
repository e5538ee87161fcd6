"""Issue 39 item 3: the LangGraph store's async calls run on a bounded pool of threads, single calls made together
run as one batch (deduplicated as LangGraph's own async stores do), and puts of new items are embedded together."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, Op, PutOp
from returns.result import Failure, Result

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.batch_writes import UpdateMemories
from agent_memory.domain.dispatch import IN_PROCESS
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import Vector
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.langgraph.batcher import Outcome, deduplicated
from agent_memory.entrypoints.langgraph.store import MemoryStore
from agent_memory.entrypoints.settings import load_settings
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError

NS = ("users", "u1")
CONCURRENCY = 2


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting its calls for documents (one call embeds a batch)."""

    calls = 0

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        CountingEmbedder.calls += 1
        return super().embed_documents(texts)


class WatchedStore(MemoryStore):
    """A MemoryStore that records how many of its runs overlap, and on which threads they run."""

    def __init__(self, service: MemoryService, **options: object) -> None:
        super().__init__(service, **options)  # type: ignore[arg-type]
        self.guard = threading.Lock()
        self.active = self.most = self.runs = 0
        self.threads: set[int] = set()

    def _outcomes(self, ops: list[Op], *, stop: bool = False) -> list[Outcome]:
        with self.guard:
            self.active += 1
            self.runs += 1
            self.most = max(self.most, self.active)
            self.threads.add(threading.get_ident())
        try:
            time.sleep(0.01)  # hold the thread a moment, so that runs which may overlap do
            return super()._outcomes(ops, stop=stop)
        finally:
            with self.guard:
                self.active -= 1


@pytest.fixture
def service(tmp_path: Path) -> MemoryService:
    settings = load_settings({"data_dir": str(tmp_path / "data"), "backend": "files"}, {"HOME": str(tmp_path)})
    return build_service(settings.unwrap(), embedder=CountingEmbedder()).unwrap()


def test_many_concurrent_calls_never_run_more_than_max_concurrency_at_once(service: MemoryService) -> None:
    store = WatchedStore(service, max_concurrency=CONCURRENCY)

    async def burst() -> None:
        calls = [store.aput(NS, f"k{n}", {"n": n}) for n in range(60)]
        calls += [store.abatch([PutOp(NS, f"pair{n}", {"n": n}), GetOp(NS, f"pair{n}")]) for n in range(8)]
        calls += [store.aget(NS, f"k{n}") for n in range(0, 60, 7)]
        await asyncio.gather(*calls)
        for n in range(20):  # calls that arrive one after another while the threads are busy
            await asyncio.gather(store.aput(NS, f"late{n}", {"n": n}), asyncio.sleep(0))

    asyncio.run(burst())
    assert store.most <= CONCURRENCY and len(store.threads) <= CONCURRENCY, (store.most, store.threads)
    calls = 60 + 8 + len(range(0, 60, 7)) + 20
    assert store.runs < calls / 2  # single calls made together ran as batches, not one run each
    keys = {item.key for item in store.search(NS, limit=1000)}
    assert keys == {f"k{n}" for n in range(60)} | {f"pair{n}" for n in range(8)} | {f"late{n}" for n in range(20)}


def test_puts_of_new_items_made_together_are_embedded_together(service: MemoryService) -> None:
    store = MemoryStore(service)
    CountingEmbedder.calls = 0

    async def puts() -> None:
        await asyncio.gather(*(store.aput(NS, f"new{n}", {"text": f"fact number {n}"}) for n in range(50)))

    asyncio.run(puts())
    assert CountingEmbedder.calls < 10, CountingEmbedder.calls  # was one call per put (50)
    assert [store.get(NS, f"new{n}").value for n in range(50)] == [{"text": f"fact number {n}"} for n in range(50)]  # type: ignore[union-attr]


def test_concurrent_calls_on_one_key_answer_as_one_order_of_them(service: MemoryService) -> None:
    store = MemoryStore(service)

    async def race() -> tuple[object, ...]:
        return tuple(
            await asyncio.gather(
                store.aput(NS, "k", {"v": 1}), store.aput(NS, "k", {"v": 2}), store.aget(NS, "k"), store.aget(NS, "k")
            )
        )

    _, _, first, second = asyncio.run(race())
    assert first is not None and second is not None
    assert first.value == second.value == {"v": 2}  # type: ignore[attr-defined]
    assert store.get(NS, "k").value == {"v": 2}  # type: ignore[union-attr]


class FailingStore(MemoryStore):
    """A MemoryStore whose runs of the key "bad" fail, as a backend's error would."""

    def _run(self, op: Op) -> object:
        if isinstance(op, PutOp) and op.key == "bad":
            raise MemoryToolError(ErrorCode.STORAGE_ERROR, "the backend refused it")
        return super()._run(op)


def refusing(_ctx: object, _command: UpdateMemories) -> Result[object, DomainError]:
    """UpdateMemories as a backend that refuses the write would answer it."""
    return Failure(DomainError(ErrorCode.STORAGE_ERROR, "the backend refused it"))


def test_a_failing_call_fails_alone_and_a_bad_setting_is_refused(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    MemoryStore(service).put(NS, "bad", {"v": 0})  # an update: written with the batch's other updates, if any
    monkeypatch.setitem(IN_PROCESS, UpdateMemories, refusing)  # the batch's update refused: each put on its own
    store = FailingStore(service)

    async def mixed() -> list[object]:
        return await asyncio.gather(
            store.aput(NS, "fine", {"v": 1}),
            store.aget(NS, "fine"),
            store.aput(NS, "bad", {"v": 2}),
            return_exceptions=True,
        )

    fine, read, bad = asyncio.run(mixed())
    assert fine is None and isinstance(bad, MemoryToolError) and "refused" in str(bad)
    assert read is not None and read.value == {"v": 1}  # type: ignore[attr-defined]
    with pytest.raises(MemoryToolError, match="max_concurrency"):
        MemoryStore(service, max_concurrency=0)


def test_deduplication_keeps_the_last_put_of_a_key_and_runs_the_puts_first() -> None:
    ops: list[Op] = [GetOp(NS, "b"), PutOp(NS, "a", {"v": 1}), GetOp(NS, "a"), PutOp(NS, "a", None), GetOp(NS, "a")]
    listen, runs = deduplicated([*ops, PutOp(NS, "b", {"v": 2})])
    assert runs == [PutOp(NS, "a", None), PutOp(NS, "b", {"v": 2}), GetOp(NS, "b"), GetOp(NS, "a")]
    assert listen == [2, 0, 3, 0, 3, 1]
