"""What a reader over a real `chroma run` asks of the engine, counted where chromadb's HttpClient sends (httpx): a
warm hybrid search with the node mirror is one request, the store's feeds' shared probe (it was seven); a reader
over a store holding a dead writer's batch takes no lease ticket and shows none of the batch."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from returns.result import Result

from agent_memory.adapters.claimed_store import ClaimingCatalog
from agent_memory.adapters.lease_locks import LeaseWriteLocks
from agent_memory.domain.commands import CreateMemory, ListMemories, SearchMemories
from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import Memory, ScoredMemory
from agent_memory.domain.ports import PendingBatch
from agent_memory.domain.service import MemoryService
from tests.chroma_server import ChromaServer, chroma_server
from tests.integration.test_node_mirror_two_nodes import mirrors, node

__all__ = ["chroma_server"]
pytestmark = [pytest.mark.server]
BOUND_S = 120  # the longest the test waits for the background build (a bound, never a timing assertion)
TOPICS = ["budget", "design", "hiring", "launch", "security", "roadmap", "support", "pricing", "travel", "review"]
PLACES = ["room", "hall", "office", "lab", "studio", "garden", "library", "kitchen", "attic", "cellar", "deck", "porch"]
TEXTS = [f"Note {n}: the {TOPICS[n % 10]} talk moved to the {PLACES[n % 12]} on floor {n % 7}" for n in range(180)]
QUERIES = ["budget talk in the kitchen", "which floor is the hiring talk on", "pricing", "the attic on floor 3"]


class Requests:
    """The requests this process sends to one server, counted where httpx sends them."""

    def __init__(self, server: ChromaServer) -> None:
        self.port = server.port
        self.sent: list[str] = []
        self.counting = False
        self._guard = threading.Lock()

    def seen(self, request: httpx.Request) -> None:
        if self.counting and request.url.port == self.port:
            with self._guard:
                self.sent.append(f"{request.method} {request.url.path}")

    def during(self, work: Callable[[], object]) -> list[str]:
        self.sent, self.counting = [], True
        try:
            work()
        finally:
            self.counting = False
        return list(self.sent)


@pytest.fixture
def requests(chroma_server: ChromaServer, monkeypatch: pytest.MonkeyPatch) -> Requests:
    counted = Requests(chroma_server)
    send = httpx.Client.send

    def counting_send(client: httpx.Client, request: httpx.Request, **kwargs: object) -> httpx.Response:
        counted.seen(request)
        return send(client, request, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.Client, "send", counting_send)
    return counted


def search(service: MemoryService, query: str, mode: str = "hybrid", **scope: object) -> list[str]:
    found = service.search(SearchMemories(query=query, mode=mode, limit=8, **scope))  # type: ignore[arg-type]
    return [hit.memory.content for hit in found.unwrap().results]


def hits(service: MemoryService, query: str, mode: str = "hybrid", **scope: object) -> list[ScoredMemory]:
    found = service.search(SearchMemories(query=query, mode=mode, limit=8, **scope))  # type: ignore[arg-type]
    return list(found.unwrap().results)


def warmed(service: MemoryService) -> None:
    """Search until the node mirror is installed, then once more so every side cache has caught up."""
    deadline = time.monotonic() + BOUND_S
    while not mirrors(service)._mirrors:  # the test checks the searches below go to the mirror
        assert time.monotonic() < deadline, "the node mirror was never installed"
        search(service, TEXTS[0])
        time.sleep(0.2)
    search(service, TEXTS[0])


@pytest.fixture
def collection() -> str:
    return "trips" + uuid.uuid4().hex[:8]


def test_a_warm_hybrid_search_over_a_server_sends_one_request_and_answers_as_the_engine(
    tmp_path: Path, chroma_server: ChromaServer, requests: Requests, collection: str
) -> None:
    writer, reader = node(tmp_path / "a", chroma_server, collection), node(tmp_path / "b", chroma_server, collection)
    one_shot = node(tmp_path / "c", chroma_server, collection)  # never kept warm: every read is the engine's
    writer.create_many(
        [CreateMemory(content=text, path=f"notes/{n % 3}/n{n}") for n, text in enumerate(TEXTS)]
    ).unwrap()
    reader.catalog.keep_warm()
    warmed(reader)

    for query in QUERIES:
        for mode, scope in (("hybrid", {}), ("semantic", {}), ("keyword", {}), ("hybrid", {"path_prefix": "notes/1"})):
            answers: list[list[ScoredMemory]] = []
            sent = requests.during(lambda q=query, m=mode, s=scope, a=answers: a.append(hits(reader, q, m, **s)))
            assert len(sent) == 1, sent  # the store's feeds' one probe (was 7 for hybrid, 4 semantic)
            assert answers[0]
            for hit in answers[0]:  # the mirror's records and vectors are the engine's
                assert hit.memory == one_shot.get(hit.memory.id).unwrap().memory
            if mode == "semantic":  # ties among these notes may come in either order, and HNSW is approximate
                near = hits(one_shot, query, mode, **scope)
                assert [round(h.similarity, 2) for h in answers[0]] == [round(h.similarity, 2) for h in near]

    # the probe still sees another node's writes at once: a new memory, then it deleted
    new = "The ferry to Hvar leaves at seven from pier four"
    made = writer.create(CreateMemory(content=new, path="travel/ferry")).unwrap()
    assert search(reader, "ferry Hvar pier")[:1] == [new]
    writer.delete(made.memory.id).unwrap()
    for mode in ("hybrid", "semantic", "keyword"):
        assert new not in search(reader, "ferry Hvar pier", mode)


def test_a_reader_over_a_dead_writers_batch_takes_no_lease_and_shows_none_of_it(
    tmp_path: Path, chroma_server: ChromaServer, requests: Requests, collection: str
) -> None:
    writer, reader = node(tmp_path / "a", chroma_server, collection), node(tmp_path / "b", chroma_server, collection)
    writer.create_many([CreateMemory(content=text) for text in TEXTS[:20]]).unwrap()
    half = [f"Half batch {n}: the lighthouse keeper logs the fog horn at dawn" for n in range(3)]
    now = datetime.now(UTC)
    memories = [Memory(id=str(uuid.uuid4()), content=text, created_at=now, updated_at=now) for text in half]
    ctx = writer.context

    def left_unfinished() -> Result[None, DomainError]:
        """A batch written whole and never committed: its writer stopped (the ledger lists it as interrupted)."""
        store = ctx.open("default", create=False).unwrap()
        begun = ctx.journal.begin(PendingBatch("default", tuple(m.id for m in memories))).unwrap()
        vectors = writer.embedder.embed_documents(half).unwrap()
        store.add(memories, vectors).unwrap()
        ctx.index_keywords("default", memories).unwrap()
        return ctx.journal.release(begun)

    writer.locks.exclusive("default", left_unfinished).unwrap()
    assert len(writer.journal.interrupted("default").unwrap()) == 1
    catalog = writer.catalog
    assert isinstance(catalog, ClaimingCatalog)
    raw = catalog.inner.open("default", create=False).unwrap()
    assert len(raw.get([m.id for m in memories]).unwrap()) == 3  # in the engine, marked with the batch's key
    reader.catalog.keep_warm()
    warmed(reader)

    sent = requests.during(
        lambda: [
            *(search(reader, "lighthouse keeper fog horn", mode) for mode in ("hybrid", "semantic", "keyword")),
            reader.dispatch(ListMemories()).unwrap(),
            *(reader.get(m.id) for m in memories),
        ]
    )
    for mode in ("hybrid", "semantic", "keyword"):
        assert not set(half) & set(search(reader, "lighthouse keeper fog horn", mode))
    assert all(reader.get(m.id).value_or(None) is None for m in memories)
    listed = reader.dispatch(ListMemories()).unwrap()
    assert not set(half) & {view.memory.content for view in listed.memories}
    locks = reader.locks
    assert isinstance(locks, LeaseWriteLocks)
    tickets = locks.tickets("default").unwrap()
    assert not [t for t in tickets if t.fields.get("node") == locks.node], tickets  # the reader took no ticket
    assert not [s for s in sent if "/api/v2/tenants" in s and s.endswith("/delete")], sent  # nor rolled back
    assert len(writer.journal.interrupted("default").unwrap()) == 1  # the batch is still there, for a writer
    assert len(raw.get([m.id for m in memories]).unwrap()) == 3

    writer.create(CreateMemory(content="A later write of the store")).unwrap()  # a writer recovers it first
    assert writer.journal.interrupted("default").unwrap() == ()
    assert raw.get([m.id for m in memories]).unwrap() == []  # rolled back by the writer
