"""Local mode writes a batch in one SQLite commit: taken with the installed qdrant-client, durable, all or nothing."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from qdrant_client import QdrantClient
from qdrant_client.local.persistence import CollectionPersistence

import agent_memory.adapters.qdrant.layout as qdrant_layout
import agent_memory.adapters.qdrant.local_commit as local_commit
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.keywords import keyword_index_for
from agent_memory.adapters.qdrant.local_commit import local_target, one_commit
from agent_memory.adapters.qdrant.store import QdrantVectorStore
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.filters import MemoryFilter
from tests.contract.keyword_index_contract import entry
from tests.contract.vector_store_contract import DIM, MODEL, failed_with, ok, sample


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[QdrantCatalog]:
    opened = QdrantCatalog(path=tmp_path / "qdrant", embedder_name=MODEL, dimension=DIM)
    yield opened
    opened.close()


@pytest.fixture
def store(catalog: QdrantCatalog, monkeypatch: pytest.MonkeyPatch) -> QdrantVectorStore:
    monkeypatch.setattr(qdrant_layout, "MAX_BATCH_POINTS", 6)  # several requests per write
    return ok(catalog.open("default", create=True))


def commits_during(client: QdrantClient, collection: str, write: Callable[[], object]) -> int:
    """How many COMMITs the collection's SQLite connection runs during `write`."""
    target = local_target(client, collection)
    assert target is not None
    statements: list[str] = []
    target.connection.set_trace_callback(statements.append)
    try:
        write()
    finally:
        target.connection.set_trace_callback(None)
    return sum(1 for statement in statements if statement.strip().upper() == "COMMIT")


def rows_on_disk(client: QdrantClient, collection: str) -> int:
    """The points committed to the collection's file, as another connection sees them."""
    target = local_target(client, collection)
    assert target is not None
    with sqlite3.connect(target.persistence.location) as reader:
        count: int = reader.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    return count


def failing_after(calls: int, original: Callable[..., Any], *, once: bool = True) -> Callable[..., Any]:
    """`original`, except that call number `calls` + 1 fails like a full disk (once, or every call from then on)."""
    seen = [0]

    def wrapped(self: CollectionPersistence, *args: Any) -> Any:
        seen[0] += 1
        if seen[0] == calls + 1 or (not once and seen[0] > calls):
            raise sqlite3.OperationalError("database or disk is full")
        return original(self, *args)

    return wrapped


# --- the fast path is the one taken -----------------------------------------------------------


def test_the_installed_qdrant_client_has_the_internals_the_one_commit_path_needs(store: QdrantVectorStore) -> None:
    """If an upgrade of qdrant-client changes local mode's internals, this fails instead of ingest slowing down."""
    assert local_target(store.client, store.collection) is not None
    assert local_target(store.client, store.name) is not None  # through the alias too (the keyword index's way)


def test_an_add_of_several_requests_commits_once(store: QdrantVectorStore) -> None:
    pairs = sample(20)
    commits = commits_during(
        store.client, store.collection, lambda: ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    )
    assert commits == 1


def test_updates_and_removals_commit_once(store: QdrantVectorStore) -> None:
    pairs = sample(20)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    updated = [attrs.evolve(m, agent="z") for m, _ in pairs]
    assert commits_during(store.client, store.collection, lambda: ok(store.update_metadata(updated))) == 1
    assert commits_during(store.client, store.collection, lambda: ok(store.remove([m.id for m, _ in pairs]))) == 1


def test_a_keyword_write_commits_once(catalog: QdrantCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qdrant_layout, "MAX_BATCH_POINTS", 6)
    index = keyword_index_for(catalog)
    entries = [entry(f"m{i}", f"word{i} shared text") for i in range(20)]
    ok(index.upsert("default", entries[:1]))  # the collection exists
    alias = index.alias_of("default")
    assert commits_during(catalog.client(), alias, lambda: ok(index.upsert("default", entries[1:]))) == 1
    assert ok(index.count("default")) == 20


# --- durability: acknowledged means committed, a failure leaves nothing -------------------------


def test_an_acknowledged_add_is_committed_when_it_returns(store: QdrantVectorStore) -> None:
    pairs = sample(20)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    assert rows_on_disk(store.client, store.collection) == 20


def test_an_add_failing_midway_leaves_nothing_on_disk_or_in_memory(
    catalog: QdrantCatalog, store: QdrantVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = sample(5, seed=1)
    ok(store.add([m for m, _ in before], [v for _, v in before]))
    pairs = sample(20)
    monkeypatch.setattr(CollectionPersistence, "persist", failing_after(9, CollectionPersistence.persist))
    failed_with(store.add([m for m, _ in pairs], [v for _, v in pairs]), ErrorCode.STORAGE_ERROR)
    assert rows_on_disk(store.client, store.collection) == 5
    assert ok(store.count()) == 5  # the points local mode had applied in memory are gone too
    assert ok(store.get([m.id for m, _ in pairs])) == []
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))  # the store still works
    catalog.close()
    reopened = ok(catalog.open("default", create=False))
    assert len(ok(reopened.scan(MemoryFilter(include_deleted=True)))) == 25


def test_a_removal_failing_midway_removes_nothing(store: QdrantVectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = sample(20)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    # a delete on a full disk is tried again once the folder's reserve is given back: this disk stays full
    monkeypatch.setattr(CollectionPersistence, "delete", failing_after(8, CollectionPersistence.delete, once=False))
    failed_with(store.remove([m.id for m, _ in pairs]), ErrorCode.STORAGE_ERROR)
    assert rows_on_disk(store.client, store.collection) == 20
    assert ok(store.count()) == 20


def test_a_failed_commit_leaves_nothing_in_memory_either(
    store: QdrantVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(connection: sqlite3.Connection) -> None:
        connection.rollback()  # as SQLite does itself when COMMIT meets a full disk
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(local_commit, "commit", full_disk)
    pairs = sample(20)
    failed_with(store.add([m for m, _ in pairs], [v for _, v in pairs]), ErrorCode.STORAGE_ERROR)
    assert rows_on_disk(store.client, store.collection) == 0
    assert ok(store.count()) == 0


def test_a_failure_before_any_write_keeps_the_collection_object(store: QdrantVectorStore) -> None:
    target = local_target(store.client, store.collection)
    assert target is not None
    with pytest.raises(KeyError), one_commit(store.client, store.collection):
        raise KeyError("nothing written yet")
    again = local_target(store.client, store.collection)
    assert again is not None and again.collection is target.collection


# --- elsewhere: the library's own path --------------------------------------------------------


def test_other_clients_and_shapes_are_not_touched(store: QdrantVectorStore, monkeypatch: pytest.MonkeyPatch) -> None:
    in_memory = QdrantClient(":memory:")
    in_memory.create_collection("c", vectors_config={})
    assert local_target(in_memory, "c") is None  # no SQLite behind it
    server = QdrantClient(url="http://127.0.0.1:9", check_compatibility=False)  # never contacted
    assert local_target(server, "c") is None
    assert local_target(store.client, "no-such-collection") is None
    target = local_target(store.client, store.collection)
    assert target is not None
    monkeypatch.setattr(target.persistence, "storage", object())  # internals of another shape
    assert local_target(store.client, store.collection) is None


def test_without_the_fast_path_writes_still_work_and_last(
    catalog: QdrantCatalog, store: QdrantVectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_commit, "local_target", lambda client, collection: None)
    pairs = sample(20)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    ok(store.remove([pairs[0][0].id]))
    catalog.close()
    reopened = ok(catalog.open("default", create=False))
    assert ok(reopened.count()) == 19
