"""The storage contract against a real Chroma server (`chroma run`), and what happens when none answers."""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from pathlib import Path

import attrs
import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.ports import StoreCatalog
from tests.chroma_server import ChromaServer, free_port, running_chroma
from tests.contract.vector_store_contract import DIM, MODEL, VectorStoreContract, axis, full_memory, ok, sample


def on_server(server: ChromaServer, *, collection: str | None = None) -> ChromaCatalog:
    """A catalog whose collections no other test uses (one server serves the whole session)."""
    return ChromaCatalog(
        host=server.host,
        port=server.port,
        collection=collection or f"t{uuid.uuid4().hex}",
        embedder_name=MODEL,
        dimension=DIM,
    )


@pytest.mark.server
class TestChromaServer(VectorStoreContract):
    @pytest.fixture
    def catalog(self, chroma_server: ChromaServer) -> StoreCatalog:
        return on_server(chroma_server)

    def reopen(self, catalog: StoreCatalog) -> StoreCatalog:
        assert isinstance(catalog, ChromaCatalog)
        return attrs.evolve(catalog)


@pytest.mark.server
def test_health_names_the_server_and_collection(chroma_server: ChromaServer) -> None:
    catalog = on_server(chroma_server, collection="health-check")
    assert ok(catalog.health()) == {
        "chromadb_host": f"{chroma_server.host}:{chroma_server.port}",
        "collection": "health-check",
    }


def assert_unavailable(result: object, host: str, port: int) -> None:
    failure = result.failure()  # type: ignore[attr-defined]
    assert failure.code is ErrorCode.BACKEND_UNAVAILABLE
    assert failure.message == f"Cannot connect to ChromaDB at {host}:{port}. Is Docker running?"


def test_an_unreachable_server_is_backend_unavailable_quickly() -> None:
    port = free_port()
    catalog = ChromaCatalog(host="127.0.0.1", port=port, embedder_name=MODEL, dimension=DIM)
    started = time.monotonic()
    assert_unavailable(catalog.health(), "127.0.0.1", port)
    assert_unavailable(catalog.open("default", create=True), "127.0.0.1", port)
    assert_unavailable(catalog.open("default", create=False), "127.0.0.1", port)
    assert_unavailable(catalog.names(), "127.0.0.1", port)
    assert time.monotonic() - started < 10


@pytest.mark.server
def test_a_server_that_goes_away_gives_backend_unavailable_on_every_call(tmp_path: Path) -> None:
    with running_chroma(tmp_path) as server:
        catalog = on_server(server)
        store = ok(catalog.open("default", create=True))
        pairs = sample(5)
        ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    host, port = server.host, server.port
    started = time.monotonic()
    memory = pairs[0][0]
    assert_unavailable(store.query(axis(0), MemoryFilter(), 5), host, port)
    assert_unavailable(store.add([full_memory()], [axis(0)]), host, port)
    assert_unavailable(store.get([memory.id]), host, port)
    assert_unavailable(store.scan(MemoryFilter()), host, port)
    assert_unavailable(store.update_metadata([memory]), host, port)
    assert_unavailable(store.replace([memory], [axis(1)]), host, port)
    assert_unavailable(store.remove([memory.id]), host, port)
    assert_unavailable(store.count(), host, port)
    assert_unavailable(catalog.health(), host, port)
    assert_unavailable(catalog.names(), host, port)
    assert_unavailable(catalog.open("other", create=True), host, port)
    assert time.monotonic() - started < 10


@pytest.mark.server
def test_a_rebuild_by_another_client_leaves_every_operation_of_this_one_working(chroma_server: ChromaServer) -> None:
    """Another client's reindex renames the collection away and drops it: this client's handle is stale then, and
    each of its operations looks the store up again (it failed with a bare STORAGE_ERROR, every call after)."""
    collection = f"t{uuid.uuid4().hex}"
    ours = ok(on_server(chroma_server, collection=collection).open("default", create=True))
    pairs = sample(6)
    ok(ours.add([m for m, _ in pairs], [v for _, v in pairs]))
    assert len(ok(ours.get([pairs[0][0].id]))) == 1  # the collection is looked up, and its handle kept
    theirs = ok(on_server(chroma_server, collection=collection).open("default", create=False))
    ok(theirs.rebuild([m for m, _ in pairs], [v for _, v in pairs], MODEL))
    assert [m.id for m in ok(ours.get([pairs[0][0].id]))] == [pairs[0][0].id]
    assert len(ok(ours.query(axis(0), MemoryFilter(include_deleted=True), 3))) == 3
    assert len(ok(ours.scan(MemoryFilter(include_deleted=True)))) == len(pairs)
    ok(ours.add([full_memory()], [axis(1)]))
    assert ok(theirs.count()) == len(pairs) + 1  # written once, into the rebuilt collection


@pytest.mark.server
def test_an_operation_waits_for_a_swap_in_progress(
    chroma_server: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between a rebuild's two renames the store's name means nothing: a client opening the store meanwhile waits
    for the second rename (it settled the rebuild itself, racing the rebuilder, or found no store)."""
    waiting = threading.Event()

    def sleep(seconds: float) -> None:
        waiting.set()
        time.sleep(seconds)

    monkeypatch.setattr("agent_memory.adapters.chroma.catalog._wait_for_swap", sleep)
    collection = f"t{uuid.uuid4().hex}"
    rebuilding = ok(on_server(chroma_server, collection=collection).open("default", create=True))
    pairs = sample(4)
    ok(rebuilding.add([m for m, _ in pairs], [v for _, v in pairs]))
    staged = ok(rebuilding._stage([m for m, _ in pairs], [v for _, v in pairs], MODEL, DIM))  # type: ignore[attr-defined]
    rebuilding.collection.modify(name=rebuilding.name + ".prev")  # type: ignore[attr-defined]  # the first rename
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(
            lambda: ok(ok(on_server(chroma_server, collection=collection).open("default", create=False)).count())
        )
        assert waiting.wait(timeout=30), "the reader did not wait for the swap"
        staged.collection.modify(name=rebuilding.name)  # the second rename, while the reader waits
        assert answer.result() == len(pairs)
