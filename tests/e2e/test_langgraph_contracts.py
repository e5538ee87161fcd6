"""Issue 50 item 4 and issue 47 item 4: the LangGraph store's contracts a port from LangGraph's own stores relies on
(a coroutine TTL sweep and sweeper as AsyncSqliteStore's, a read that renews a TTL leaving `updated_at`, `close()`
and context managers on every backend, nothing printed at exit), and concurrent puts and deletes written together
with each item's result as if written alone — on every backend."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, PutOp

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from agent_memory.langgraph import AsyncMemoryStore, MemoryStore
from tests.unit.conftest import T0

BACKENDS = ["chroma", "files", "qdrant"]
NS = ("docs", "u1")


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture(params=BACKENDS)
def service(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Iterator[MemoryService]:
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client")
    flags = {"data_dir": str(tmp_path / "data"), "backend": request.param}
    settings = load_settings(flags, {"HOME": str(tmp_path)}).unwrap()
    yield build_service(settings, embedder=HashingEmbedder(), clock=clock).unwrap()


def expiry(service: MemoryService, key: str) -> object:
    (memory,) = [
        view.memory
        for view in service.list("langgraph", include_expired=True).unwrap().memories
        if str(view.memory.path).startswith(f"langgraph/{key}-")
    ]
    return memory.expires_at


# --- TTL: a read renews the expiry, not updated_at ------------------------------------------------------------------


def test_a_read_that_renews_a_ttl_leaves_updated_at(service: MemoryService, clock: FixedClock) -> None:
    store = MemoryStore(service, ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(NS, "read", {"v": 1})
    store.put(NS, "searched", {"v": 2})
    store.put(NS, "still", {"v": 3}, ttl=None)
    put_at = {key: store.get(NS, key, refresh_ttl=False).updated_at for key in ("read", "searched", "still")}  # type: ignore[union-attr]
    clock.advance(hours=5 / 60)
    item = store.get(NS, "read")  # renewed to 5 + 10 minutes, as SqliteStore renews it: the item is not edited
    assert item is not None and item.updated_at == put_at["read"]
    assert expiry(service, "read") == T0 + timedelta(minutes=15)
    hits = store.search(NS, filter={"v": 2}, refresh_ttl=True)
    assert [(hit.key, hit.updated_at) for hit in hits] == [("searched", put_at["searched"])]
    assert expiry(service, "searched") == T0 + timedelta(minutes=15)
    assert store.get(NS, "searched", refresh_ttl=False).updated_at == put_at["searched"]  # type: ignore[union-attr]
    assert store.get(NS, "still").updated_at == put_at["still"] and expiry(service, "still") is None  # type: ignore[union-attr]
    clock.advance(hours=1 / 60)
    store.put(NS, "read", {"v": 10})  # a put is an edit: updated_at moves
    assert store.get(NS, "read", refresh_ttl=False).updated_at == T0 + timedelta(minutes=6)  # type: ignore[union-attr]


# --- the async store: AsyncSqliteStore's coroutine TTL methods ------------------------------------------------------


def test_the_async_store_awaits_its_sweep_and_sweeper(service: MemoryService, clock: FixedClock) -> None:
    async def scenario() -> None:
        async with AsyncMemoryStore(service, ttl={"default_ttl": 1, "sweep_interval_minutes": 0.001}) as store:
            await store.aput(NS, "short", {"v": 1})
            await store.aput(NS, "forever", {"v": 2}, ttl=None)
            clock.advance(hours=2 / 60)
            assert await store.sweep_ttl() == 1  # ported from AsyncSqliteStore: `await store.sweep_ttl()`
            assert await store.aget(NS, "short") is None and await store.aget(NS, "forever") is not None
            await store.aput(NS, "later", {"v": 3})
            task = await store.start_ttl_sweeper()
            assert isinstance(task, asyncio.Task) and await store.start_ttl_sweeper() is task
            clock.advance(hours=2 / 60)
            for _ in range(400):  # the sweeper runs every 0.06 s: wait for it to have swept "later"
                if await store.aget(NS, "later") is None and not expiry_listed(service, "later"):
                    break
                await asyncio.sleep(0.05)
            assert not expiry_listed(service, "later")
            assert await store.stop_ttl_sweeper() is True and task.done()
            assert await store.stop_ttl_sweeper() is True
        plain = MemoryStore(service, ttl={"default_ttl": 1})
        await plain.aput(NS, "again", {"v": 4})
        clock.advance(hours=2 / 60)
        assert await plain.asweep_ttl() == 1 and plain.sweep_ttl() == 0

    asyncio.run(scenario())


def expiry_listed(service: MemoryService, key: str) -> bool:
    listed = service.list("langgraph", include_expired=True).unwrap().memories
    return any(str(view.memory.path).startswith(f"langgraph/{key}-") for view in listed)


def test_an_async_store_without_a_ttl_config_starts_no_sweeper(service: MemoryService) -> None:
    async def scenario() -> None:
        store = AsyncMemoryStore(service)
        task = await store.start_ttl_sweeper()
        await task
        assert await store.stop_ttl_sweeper() is True
        await store.aclose()

    asyncio.run(scenario())


# --- close() and context managers -----------------------------------------------------------------------------------


def test_close_and_the_context_managers_release_and_a_later_call_reopens(service: MemoryService) -> None:
    with MemoryStore(service, ttl={"default_ttl": 5, "sweep_interval_minutes": 60}) as store:
        store.put(NS, "k", {"v": 1})
        assert store.start_ttl_sweeper() is not None
    assert store.stop_ttl_sweeper() is True  # close stopped it
    assert store.get(NS, "k").value == {"v": 1}  # type: ignore[union-attr]

    async def scenario() -> None:
        async with AsyncMemoryStore(service) as async_store:
            await async_store.aput(NS, "a", {"v": 2})
        assert (await async_store.aget(NS, "a")).value == {"v": 2}  # type: ignore[union-attr]
        async with MemoryStore(service) as plain:
            assert (await plain.aget(NS, "k")).value == {"v": 1}  # type: ignore[union-attr]

    asyncio.run(scenario())
    store.close()
    store.close()  # twice is harmless


EXIT_SCRIPT = """
import sys
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from agent_memory.langgraph import MemoryStore

settings = load_settings({{"data_dir": sys.argv[1], "backend": "qdrant"}}, {{"HOME": sys.argv[2]}}).unwrap()
store = MemoryStore(build_service(settings, embedder=HashingEmbedder()).unwrap())
{body}
"""


@pytest.mark.parametrize(
    "body",
    [
        'store.put(("u",), "k", {"v": 1})',  # never closed: the store closes itself at exit
        'with store:\n    store.put(("u",), "k", {"v": 1})',
        'store.put(("u",), "k", {"v": 1})\nstore.close()',
    ],
    ids=["left-open", "with", "closed"],
)
def test_a_qdrant_backed_store_prints_nothing_at_exit(tmp_path: Path, body: str) -> None:
    pytest.importorskip("qdrant_client")
    script = EXIT_SCRIPT.format(body=textwrap.indent(textwrap.dedent(body), ""))
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# --- concurrent puts and deletes, written together -------------------------------------------------------------------


def test_concurrent_updates_and_deletes_each_answer_as_alone(service: MemoryService, clock: FixedClock) -> None:
    store = MemoryStore(service)
    keys = [f"k{n}" for n in range(24)]
    by_id = service.create(CreateMemory(content="a memory keyed by its id", namespace=NS)).unwrap().memory

    async def scenario() -> None:
        await asyncio.gather(*(store.aput(NS, key, {"content": f"first {key}"}) for key in keys))
        first = {item.key: item for item in await asyncio.gather(*(store.aget(NS, key) for key in keys))}  # type: ignore[union-attr]
        clock.advance(hours=1)
        await asyncio.gather(
            *(store.aput(NS, key, {"content": f"second {key}", "n": n}) for n, key in enumerate(keys)),
            store.aput(NS, by_id.id, {"content": "rewritten by id"}),
            store.aput(NS, "absent", None),  # a delete of nothing
        )
        for n, key in enumerate(keys):
            item = await store.aget(NS, key)
            assert item is not None and item.value == {"content": f"second {key}", "n": n}
            assert item.created_at == first[key].created_at and item.updated_at == T0 + timedelta(hours=1)
        assert (await store.aget(NS, by_id.id)).value == {"content": "rewritten by id"}  # type: ignore[union-attr]
        await asyncio.gather(*(store.adelete(NS, key) for key in keys[:20]))
        assert [await store.aget(NS, key) for key in keys[:20]] == [None] * 20
        assert all(await asyncio.gather(*(store.aget(NS, key) for key in keys[20:])))

    asyncio.run(scenario())
    kept = {hit.key for hit in store.search(NS, limit=100)}
    assert kept == {*keys[20:], by_id.id}


def test_a_batch_of_creates_updates_and_deletes_together(service: MemoryService) -> None:
    store = MemoryStore(service)
    for n in range(10):
        store.put(NS, f"old{n}", {"v": n})
    ops = [
        *(PutOp(NS, f"old{n}", {"v": n * 10}) for n in range(5)),
        *(PutOp(NS, f"old{n}", None) for n in range(5, 10)),
        *(PutOp(NS, f"new{n}", {"v": -n}) for n in range(5)),
        PutOp(("other",), "x", {"v": "elsewhere"}),
    ]
    assert store.batch(ops) == [None] * len(ops)
    got = store.batch([GetOp(NS, f"old{n}") for n in range(10)] + [GetOp(NS, f"new{n}") for n in range(5)])
    assert [None if item is None else item.value["v"] for item in got] == [  # type: ignore[union-attr]
        *(n * 10 for n in range(5)),
        *([None] * 5),
        *(-n for n in range(5)),
    ]
    assert store.get(("other",), "x").value == {"v": "elsewhere"}  # type: ignore[union-attr]
