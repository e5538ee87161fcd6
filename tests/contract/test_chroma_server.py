"""The storage contract against a real Chroma server (`chroma run`), and what happens when none answers."""

from __future__ import annotations

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
    assert_unavailable(store.replace(memory, axis(1)), host, port)
    assert_unavailable(store.remove([memory.id]), host, port)
    assert_unavailable(store.count(), host, port)
    assert_unavailable(catalog.health(), host, port)
    assert_unavailable(catalog.names(), host, port)
    assert_unavailable(catalog.open("other", create=True), host, port)
    assert time.monotonic() - started < 10
