"""The storage contract against embedded ChromaDB (PersistentClient), plus Chroma-specific checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import attrs
import chromadb
import pytest
from chromadb.config import Settings

import agent_memory.adapters.chroma.layout as chroma_store
from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.layout import NEXT_SUFFIX, PREV_SUFFIX, REBUILDING
from agent_memory.adapters.chroma.records import memory_metadata, to_where
from agent_memory.adapters.chroma.store import ChromaVectorStore
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import CategoryPath, MemoryPath
from agent_memory.domain.ports import StoreCatalog
from tests.contract.vector_store_contract import (
    DIM,
    MODEL,
    NOW,
    VectorStoreContract,
    assert_passing_matches,
    assert_query_matches,
    assert_scan_matches,
    axis,
    failed_with,
    full_memory,
    named_filters,
    ok,
    probes,
    sample,
)


def embedded(path: Path) -> ChromaCatalog:
    return ChromaCatalog(path=path, embedder_name=MODEL, dimension=DIM)


class TestChromaEmbedded(VectorStoreContract):
    @pytest.fixture
    def catalog(self, tmp_path: Path) -> StoreCatalog:
        return embedded(tmp_path / "chroma")

    def reopen(self, catalog: StoreCatalog) -> StoreCatalog:
        assert isinstance(catalog, ChromaCatalog)
        return attrs.evolve(catalog)


@pytest.mark.variant
class TestChromaEmbeddedWithoutMirror(TestChromaEmbedded):
    """Every search answered by Chroma's own filtered query."""

    @pytest.fixture
    def catalog(self, tmp_path: Path) -> StoreCatalog:
        return attrs.evolve(embedded(tmp_path / "chroma"), mirror_limit=0)


@pytest.mark.variant
class TestChromaEmbeddedMirrored(TestChromaEmbedded):
    """Every search answered by the in-process mirror (adapters.chroma.vector_mirror), built at the first search."""

    @pytest.fixture
    def catalog(self, tmp_path: Path) -> StoreCatalog:
        return attrs.evolve(embedded(tmp_path / "chroma"), mirror_eagerly=True)

    def test_passing_answers_from_the_mirror(
        self, loaded: ChromaVectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        ok(loaded.query(axis(0), MemoryFilter(), 1))
        assert loaded.session.mirrors
        for where in named_filters(pairs).values():
            assert_passing_matches(loaded, pairs, where)


def raw_client(path: Path) -> chromadb.api.ClientAPI:
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def test_client_is_created_lazily(tmp_path: Path) -> None:
    catalog = embedded(tmp_path / "not-yet")
    assert not (tmp_path / "not-yet").exists()
    assert ok(catalog.health()) == {"chromadb_host": str(tmp_path / "not-yet"), "collection": "memories"}


def test_backend_is_chroma(tmp_path: Path) -> None:
    assert embedded(tmp_path).backend == "chroma"


def test_a_catalog_needs_a_path_or_a_host() -> None:
    with pytest.raises(ValueError, match="path"):
        ChromaCatalog(embedder_name=MODEL, dimension=DIM)


def test_store_names_map_to_collection_names(tmp_path: Path) -> None:
    catalog = ChromaCatalog(path=tmp_path, collection="mem", embedder_name=MODEL, dimension=DIM)
    for name in ("default", "work-notes"):
        ok(catalog.open(name, create=True))
    raw = raw_client(tmp_path)
    raw.create_collection("unrelated")
    assert sorted(c.name for c in raw.list_collections()) == ["mem", "mem--work-notes", "unrelated"]
    assert ok(catalog.names()) == ["default", "work-notes"]
    collection = raw.get_collection("mem--work-notes")
    assert collection.metadata == {"embedding_model": MODEL, "dimension": DIM}
    assert collection.configuration_json["hnsw"]["space"] == "cosine"


def test_missing_store_message_says_how_to_create_it(tmp_path: Path) -> None:
    failure = embedded(tmp_path).open("work", create=False).failure()
    assert failure.code is ErrorCode.STORE_NOT_FOUND
    assert (
        failure.message
        == "Store 'work' does not exist. Create it with `memory store create work` or add a memory to it."
    )


def test_invalid_store_name_is_invalid_input(tmp_path: Path) -> None:
    failed_with(embedded(tmp_path).open("Bad--Name", create=True), ErrorCode.INVALID_INPUT)


def test_unset_timestamps_are_stored_as_empty_strings(tmp_path: Path) -> None:
    """Spec 001: last_reinforced_at is "" until the first reinforcement; created_at is ISO 8601."""
    catalog = embedded(tmp_path)
    store = ok(catalog.open("default", create=True))
    memory = full_memory(last_reinforced_at=None, expires_at=None, deleted=False, deleted_at=None)
    ok(store.add([memory], [axis(0)]))
    meta = (raw_client(tmp_path).get_collection("memories").get(ids=[memory.id])["metadatas"] or [{}])[0]
    record = json.loads(str(meta["record"]))
    assert record["last_reinforced_at"] == "" and record["expires_at"] == "" and record["deleted_at"] == ""
    assert record["created_at"] == "2024-05-06T07:08:09.123456+00:00"
    assert meta["deleted"] is False and meta["global"] is True


def test_metadata_has_no_none_and_no_empty_list() -> None:
    memory = full_memory(tags=(), path=None, namespace=())
    meta = memory_metadata(memory)
    assert meta["tags"] is None and meta["path_prefixes"] is None  # None removes a stale key on update/upsert
    assert meta["namespace_prefixes"] == [""]
    assert all(value != [] for value in meta.values())


def test_where_uses_and_only_for_two_clauses_or_more() -> None:
    assert to_where(MemoryFilter(include_deleted=True)) is None
    assert to_where(MemoryFilter()) == {"deleted": {"$eq": False}}
    assert set(to_where(MemoryFilter(agent="a")) or {}) == {"$and"}


def test_scan_pages_through_large_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chroma_store, "SCAN_PAGE", 7)
    store = ok(embedded(tmp_path).open("default", create=True))
    pairs = sample()
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    assert_scan_matches(store, pairs, MemoryFilter(include_deleted=True))
    assert_scan_matches(store, pairs, MemoryFilter(namespace=("user",)))


@pytest.mark.parametrize("reach", [0, 4])
def test_passing_without_the_mirror_is_exact_whether_or_not_the_tags_and_path_narrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reach: int
) -> None:
    """SELECTIVE_REACH 0: every filter's tags and path are too common to list, so each id's record is checked."""
    monkeypatch.setattr(chroma_store, "SELECTIVE_REACH", reach)
    store = ok(attrs.evolve(embedded(tmp_path), mirror_limit=0).open("default", create=True))
    store.batch_size = 6
    pairs = sample()
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    for where in named_filters(pairs).values():
        assert_passing_matches(store, pairs, where)
    assert not store.session.mirrors


def test_add_splits_into_client_sized_batches(tmp_path: Path) -> None:
    store = ok(embedded(tmp_path).open("default", create=True))
    store.batch_size = 6
    pairs = sample()
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    ok(store.update_metadata([attrs.evolve(m, agent="z") for m, _ in pairs]))
    assert ok(store.count()) == len(pairs)
    assert {m.agent for m in ok(store.get([m.id for m, _ in pairs]))} == {"z"}
    ok(store.remove([m.id for m, _ in pairs]))
    assert ok(store.count()) == 0


def test_wrong_dimension_is_an_embedding_mismatch(tmp_path: Path) -> None:
    store = ok(embedded(tmp_path).open("default", create=True))
    failed_with(store.add([full_memory()], [[1.0, 0.0]]), ErrorCode.EMBEDDING_MISMATCH)
    failed_with(store.query([1.0, 0.0], MemoryFilter(), 3), ErrorCode.EMBEDDING_MISMATCH)


def test_a_legacy_l2_collection_still_reports_cosine_similarity(tmp_path: Path) -> None:
    """Collections made by the original tool use Chroma's default l2 space; unit vectors convert exactly."""
    raw_client(tmp_path).create_collection("memories", embedding_function=None)
    store = ok(embedded(tmp_path).open("default", create=False))
    assert store.space == "l2" and ok(store.embedding_model()) is None
    pairs = sample()
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    assert_query_matches(store, pairs, probes()[0], MemoryFilter(alive_at=NOW), 10)


def test_a_foreign_record_is_a_storage_error_not_an_exception(tmp_path: Path) -> None:
    store = ok(embedded(tmp_path).open("default", create=True))
    raw = raw_client(tmp_path).get_collection("memories")
    raw.add(ids=["not-a-uuid"], embeddings=cast(Any, [axis(0)]), documents=["hello"], metadatas=[{"deleted": False}])
    failed_with(store.get(["not-a-uuid"]), ErrorCode.STORAGE_ERROR)
    failed_with(store.query(axis(0), MemoryFilter(), 5), ErrorCode.STORAGE_ERROR)


def test_library_errors_become_storage_errors(tmp_path: Path) -> None:
    store = ok(embedded(tmp_path).open("default", create=True))
    store.dimension = None  # let the bad vector reach Chroma
    ok(store.add([full_memory()], [axis(0)]))
    failure = store.replace([full_memory()], [[1.0, 0.0]])
    failed_with(failure, ErrorCode.STORAGE_ERROR)
    assert failure.failure().cause


def test_unwritable_data_path_is_a_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    catalog = embedded(blocker / "chroma")
    failed_with(catalog.health(), ErrorCode.BACKEND_UNAVAILABLE)
    failed_with(catalog.open("default", create=True), ErrorCode.BACKEND_UNAVAILABLE)


def test_memory_type_is_unchanged_by_storage(tmp_path: Path) -> None:
    store = ok(embedded(tmp_path).open("default", create=True))
    memory = full_memory()
    ok(store.add([memory], [axis(1)]))
    (got,) = ok(store.get([memory.id]))
    assert type(got) is Memory and got.created_at.tzinfo is not None


# --- rebuild: a crash at any step leaves the old or the new contents readable -------------------


def _stage_new_contents(store: ChromaVectorStore) -> list[Memory]:
    """Write a complete `.next` collection (what a rebuild does before its renames)."""
    fresh = sample(4, seed=31)
    ok(store._stage([m for m, _ in fresh], [v for _, v in fresh], "next-model", DIM))
    return [m for m, _ in fresh]


def _filled(tmp_path: Path) -> tuple[ChromaVectorStore, list[Memory]]:
    store = ok(embedded(tmp_path).open("default", create=True))
    pairs = sample(6)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    return store, [m for m, _ in pairs]


def _contents(path: Path) -> tuple[str | None, list[str]]:
    store = ok(embedded(path).open("default", create=False))
    return ok(store.embedding_model()), sorted(m.id for m in ok(store.scan(MemoryFilter(include_deleted=True))))


def test_crash_while_filling_keeps_the_old_contents(tmp_path: Path) -> None:
    store, old = _filled(tmp_path)
    raw = raw_client(tmp_path)
    raw.create_collection("memories" + NEXT_SUFFIX, metadata={"embedding_model": "half", REBUILDING: True})
    assert _contents(tmp_path) == (MODEL, sorted(m.id for m in old))
    ok(store.rebuild(old[:2], [axis(0), axis(1)], "later"))  # a later rebuild drops the stale half
    assert _contents(tmp_path) == ("later", sorted(m.id for m in old[:2]))


def test_crash_between_the_renames_finishes_the_rebuild(tmp_path: Path) -> None:
    store, _ = _filled(tmp_path)
    new = _stage_new_contents(store)
    store.collection.modify(name="memories" + PREV_SUFFIX)  # the first rename, then the "crash"
    assert _contents(tmp_path) == ("next-model", sorted(m.id for m in new))
    assert ok(embedded(tmp_path).names()) == ["default"]


def test_crash_between_the_renames_of_an_unfinished_fill_restores_the_old(tmp_path: Path) -> None:
    store, old = _filled(tmp_path)
    raw = raw_client(tmp_path)
    raw.create_collection("memories" + NEXT_SUFFIX, metadata={"embedding_model": "half", REBUILDING: True})
    store.collection.modify(name="memories" + PREV_SUFFIX)
    assert _contents(tmp_path) == (MODEL, sorted(m.id for m in old))


def test_internal_collections_are_not_stores(tmp_path: Path) -> None:
    catalog = embedded(tmp_path)
    ok(catalog.open("default", create=True))
    ok(catalog.open("work", create=True))
    ok(ok(catalog.categories("work")).put(CategoryPath(("a",)), "d"))
    ok(ok(catalog.categories("default")).put(CategoryPath(("a",)), "d"))
    raw_client(tmp_path).create_collection("memories--work" + NEXT_SUFFIX)
    names = sorted(c.name for c in raw_client(tmp_path).list_collections())
    assert names == [
        "memories",
        "memories--work",
        "memories--work.categories",
        "memories--work.next",
        "memories.categories",
    ]
    assert ok(catalog.names()) == ["default", "work"]


def test_path_filter_is_exact(tmp_path: Path) -> None:
    assert to_where(MemoryFilter(path=MemoryPath(("a", "b")), include_deleted=True)) == {"path": {"$eq": "a/b"}}
