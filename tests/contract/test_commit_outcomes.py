"""No dirty reads, and no path held forever by a create that never landed (adapters/commit_outcomes.py), over the
in-memory store, embedded Chroma and Qdrant local mode: a batch's records carry its key through the engine's record,
and another node's reads leave them out until the batch's outcome, claimed in the Ledger, is KEPT."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.claimed_store import ClaimedStore
from agent_memory.adapters.commit_outcomes import KEPT, VOID, CommitOutcomes
from agent_memory.adapters.in_memory import InMemoryVectorStore
from agent_memory.adapters.lease_journal import LeaseBatchJournal
from agent_memory.adapters.lease_locks import LeaseWriteLocks
from agent_memory.adapters.path_claims import PathClaims
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.ledger import QdrantLedger
from agent_memory.adapters.shared.commit_mark import marked
from agent_memory.adapters.shared.ledger import InMemoryLedger, Ledger
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.ports import PendingBatch, VectorStore
from tests.chroma_server import ChromaServer
from tests.contract.vector_store_contract import DIM, MODEL, axis, full_memory

PLAN = MemoryPath(("notes", "plan"))
EVERYTHING = MemoryFilter(include_deleted=True)


def uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def memory(name: str, path: MemoryPath | None = None) -> Memory:
    return full_memory(id=uid(name), namespace=(), path=path, deleted=False, deleted_at=None, expires_at=None)


@pytest.fixture(params=["memory", "chroma", "qdrant"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[VectorStore, Ledger]]:
    """One store and the Ledger beside it, as every node of one engine sees them."""
    if request.param == "memory":
        yield InMemoryVectorStore(), InMemoryLedger()
    elif request.param == "chroma":
        catalog: Any = ChromaCatalog(path=tmp_path / "chroma", embedder_name=MODEL, dimension=DIM)
        yield catalog.open("default", create=True).unwrap(), ChromaLedger.of(catalog)
    else:
        catalog = QdrantCatalog(path=tmp_path / "qdrant", embedder_name=MODEL, dimension=DIM)
        yield catalog.open("default", create=True).unwrap(), QdrantLedger.of(catalog)
        catalog.close()


def node(engine: tuple[VectorStore, Ledger]) -> tuple[ClaimedStore, CommitOutcomes]:
    """A node over the engine: its own claims and outcomes (nothing cached from another node)."""
    store, ledger = engine
    outcomes = CommitOutcomes(ledger)
    return ClaimedStore(store, PathClaims(ledger), outcomes), outcomes


def elsewhere(read: Callable[[], Any]) -> Any:
    """What another thread of the writer's own process reads."""
    answer: list[Any] = []
    thread = threading.Thread(target=lambda: answer.append(read()))
    thread.start()
    thread.join()
    return answer[0]


def ids(result: Any) -> set[str]:
    found = result.unwrap()
    return {(item[0] if isinstance(item, tuple) else item).id for item in found}


def reads(store: ClaimedStore) -> tuple[set[str], set[str], set[str]]:
    """What get, query and scan answer of the two memories the tests write."""
    wanted = [uid("a"), uid("b")]
    return ids(store.get(wanted)), ids(store.query(axis(0), EVERYTHING, 10)), ids(store.scan(EVERYTHING))


def test_a_running_batch_is_read_only_by_itself_and_by_everyone_once_kept(engine: tuple[VectorStore, Ledger]) -> None:
    writer, outcomes = node(engine)
    reader, _ = node(engine)
    batch = PendingBatch("default", (uid("a"), uid("b")), key="k-kept")
    outcomes.begun(batch)
    writer.add([memory("a"), memory("b", PLAN)], [axis(0), axis(1)]).unwrap()
    everything = {uid("a"), uid("b")}
    assert reads(writer) == (everything, everything, everything)  # a batch sees its own writes
    assert elsewhere(lambda: reads(writer)) == (set(), set(), set())  # not another request of its process
    assert reads(reader) == (set(), set(), set())  # nor another node
    assert outcomes.claim("default", "k-kept", KEPT) == Success(True)
    outcomes.ended(batch)
    assert reads(reader) == (everything, everything, everything)
    assert all(type(m) is Memory for m in reader.get([uid("a"), uid("b")]).unwrap())  # answered unmarked
    assert elsewhere(lambda: reads(writer)) == (everything, everything, everything)


def test_a_voided_or_abandoned_batch_stays_unread_and_one_read_serves_a_page(
    engine: tuple[VectorStore, Ledger],
) -> None:
    writer, outcomes = node(engine)
    _, ledger = engine
    outcomes.begun(PendingBatch("default", (uid("a"),), key="k-void"))
    outcomes.begun(PendingBatch("default", (uid("b"),), key="k-dead"))
    writer.add([memory("a"), memory("b")], [axis(0), axis(1)]).unwrap()  # "k-dead": its writer stops here
    reader, theirs = node(engine)
    assert theirs.claim("default", "k-void", VOID) == Success(True)  # a node rolling it back
    assert outcomes.claim("default", "k-void", KEPT) == Success(False)  # its writer's commit is refused
    assert reads(reader) == (set(), set(), set())
    counted = CountingLedger(ledger)
    fresh = ClaimedStore(engine[0], PathClaims(counted), CommitOutcomes(counted))
    assert reads(fresh) == (set(), set(), set())
    assert counted.reads == 3  # one per read of a page (undecided batches are asked again, decided ones never)


def test_a_create_that_died_after_its_path_claim_is_voided_by_the_next_writer_and_its_late_write_stays_unread(
    engine: tuple[VectorStore, Ledger],
) -> None:
    dead, dead_outcomes = node(engine)
    dead_outcomes.begun(PendingBatch("default", (uid("a"),), key="k-late"))
    place = ("default", (), str(PLAN))
    dead.claims.claim(place, uid("a"), lambda _: Success(None), commit="k-late").unwrap()  # then it stopped
    survivor, outcomes = node(engine)
    outcomes.begun(PendingBatch("default", (uid("b"),), key="k-next"))
    assert survivor.add([memory("b", PLAN)], [axis(1)]) == Success(None)  # the dead create's batch voided
    assert outcomes.decided("default", "k-late") == Success(VOID)
    assert outcomes.claim("default", "k-next", KEPT) == Success(True)
    # the stalled creator resumes: its write lands, unread by anyone, and its commit is refused
    dead.inner.add([marked(memory("a", PLAN), "k-late")], [axis(0)]).unwrap()  # past its claim already
    assert dead_outcomes.claim("default", "k-late", KEPT) == Success(False)
    reader, _ = node(engine)
    assert ids(reader.scan(MemoryFilter(path=PLAN))) == {uid("b")}  # one memory at the path: the late one unread
    assert uid("a") not in ids(reader.get([uid("a"), uid("b")]))


def test_a_create_that_died_is_still_refused_when_its_batch_committed_and_its_memory_is_there(
    engine: tuple[VectorStore, Ledger],
) -> None:
    first, outcomes = node(engine)
    outcomes.begun(PendingBatch("default", (uid("a"),), key="k-first"))
    first.add([memory("a", PLAN)], [axis(0)]).unwrap()
    outcomes.claim("default", "k-first", KEPT).unwrap()
    second, theirs = node(engine)
    theirs.begun(PendingBatch("default", (uid("b"),), key="k-second"))
    refused = second.add([memory("b", PLAN)], [axis(1)])
    assert isinstance(refused, Failure)
    assert refused.failure().code is ErrorCode.DESTINATION_EXISTS
    assert theirs.decided("default", "k-first") == Success(KEPT)


class CountingLedger:
    """A Ledger that counts its reads."""

    def __init__(self, inner: Ledger) -> None:
        self.inner = inner
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read(self, keys: list[str]) -> Any:
        self.reads += 1
        return self.inner.read(keys)


def test_a_create_not_written_yet_is_never_voided_by_a_writer_without_the_lease_nor_by_its_own_process(
    engine: tuple[VectorStore, Ledger],
) -> None:
    store, ledger = engine
    creator, outcomes = node(engine)
    outcomes.begun(PendingBatch("default", (uid("a"),), key="k-alive"))
    creator.claims.claim(("default", (), str(PLAN)), uid("a"), lambda _: Success(None), commit="k-alive").unwrap()
    without_lease = ClaimedStore(store, PathClaims(ledger), CommitOutcomes(ledger), may_void=lambda _: False)
    same_process = ClaimedStore(store, PathClaims(ledger), outcomes)  # its batch still runs here
    for contender in (without_lease, same_process):
        refused = contender.add([memory("b", PLAN)], [axis(1)])
        assert isinstance(refused, Failure) and "being written there" in refused.failure().message
    assert outcomes.decided("default", "k-alive") == Success("")  # undecided: the creator may still commit
    creator.add([memory("a", PLAN)], [axis(0)]).unwrap()
    assert outcomes.claim("default", "k-alive", KEPT) == Success(True)


def test_a_stalled_creates_commit_is_refused_naming_the_memory_that_took_its_path() -> None:
    ledger = InMemoryLedger()
    store = InMemoryVectorStore()
    stalled = LeaseWriteLocks(ledger, ttl=1.0)
    journal = LeaseBatchJournal(stalled)
    lease = stalled._acquire("default").unwrap()
    stalled._leases["default"] = lease
    begun = journal.begin(PendingBatch("default", (uid("a"),))).unwrap()
    creator = ClaimedStore(store, PathClaims(ledger), journal.outcomes)
    creator.claims.claim(("default", (), str(PLAN)), uid("a"), lambda _: Success(None), commit=begun.key).unwrap()
    journal.outcomes.placed(begun.key, ("default", (), str(PLAN)), uid("a"))  # as ClaimedStore.add notes it
    taker = ClaimedStore(store, PathClaims(ledger), CommitOutcomes(ledger))
    assert taker.add([memory("b", PLAN)], [axis(1)]) == Success(None)  # it holds the lease the creator lost
    store.add([marked(memory("a", PLAN), begun.key)], [axis(0)]).unwrap()  # the creator resumes: its write lands
    error = journal.commit(begun).failure()
    assert error.code is ErrorCode.DESTINATION_EXISTS and uid("b") in error.message
    reader = ClaimedStore(store, PathClaims(ledger), CommitOutcomes(ledger))
    assert {m.id for m in reader.scan(EVERYTHING).unwrap()} == {uid("b")}  # the late record: read by nobody


def test_a_count_leaves_out_a_running_batch_until_it_commits(engine: tuple[VectorStore, Ledger]) -> None:
    counts_a_batch_once_committed(engine)


@pytest.mark.server
def test_a_count_over_a_chroma_server_leaves_out_a_running_batch_until_it_commits(
    chroma_server: ChromaServer,
) -> None:
    host, port, collection = chroma_server.host, chroma_server.port, f"t{uuid.uuid4().hex}"
    catalog = ChromaCatalog(host=host, port=port, collection=collection, embedder_name=MODEL, dimension=DIM)
    counts_a_batch_once_committed((catalog.open("default", create=True).unwrap(), ChromaLedger.of(catalog)))


def counts_a_batch_once_committed(engine: tuple[VectorStore, Ledger]) -> None:
    _, ledger = engine
    journal = LeaseBatchJournal(LeaseWriteLocks(ledger, ttl=30.0))
    writer = ClaimedStore(engine[0], PathClaims(ledger), journal.outcomes)
    reader, _ = node(engine)
    writer.add([memory("c")], [axis(2)]).unwrap()  # written alone: counted at once
    counted: list[int] = []

    def batch() -> Any:
        begun = journal.begin(PendingBatch("default", (uid("a"), uid("b")))).unwrap()
        writer.add([memory("a"), memory("b", PLAN)], [axis(0), axis(1)]).unwrap()
        counted.extend([reader.count().unwrap(), elsewhere(lambda: writer.count().unwrap()), writer.count().unwrap()])
        return journal.commit(begun)

    assert journal.leases.exclusive("default", batch) == Success(None)
    assert counted == [1, 1, 3]  # another node, another request: not yet; the batch itself sees its writes
    assert reader.count() == Success(3)
