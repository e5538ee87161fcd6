"""QdrantKeywordIndex's own promises: its collections, points and weights, sharing the catalog, and its errors."""

from __future__ import annotations

import hashlib
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient, models

import agent_memory.adapters.qdrant.layout as qdrant_layout
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.keyword_threads import (
    KEYWORD_PAYLOAD_FIELDS,
    TERMS,
    point_id,
    scope_terms,
    thread_prefixes,
)
from agent_memory.adapters.qdrant.keywords import QdrantKeywordIndex, keyword_index_for, normalised
from agent_memory.adapters.qdrant.keywords import create_collection as _create_collection
from agent_memory.adapters.qdrant.terms import (
    AVERAGE_LENGTH,
    K1,
    NEIGHBOUR_WEIGHT,
    document_terms,
    memory_weights,
    query_vector,
    term_index,
    term_of,
)
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.ports import KeywordEntry
from agent_memory.domain.search.tokens import content_words, query_terms
from tests.contract.keyword_index_contract import chain, entry, filler
from tests.contract.vector_store_contract import DIM, MODEL, failed_with, ok, sample

STORE = "default"


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[QdrantCatalog]:
    opened = QdrantCatalog(path=tmp_path / "qdrant", embedder_name=MODEL, dimension=DIM)
    yield opened
    opened.close()


@pytest.fixture
def index(catalog: QdrantCatalog) -> QdrantKeywordIndex:
    return keyword_index_for(catalog)


def client_of(catalog: QdrantCatalog) -> QdrantClient:
    return ok(catalog.connect())


def collection_names(catalog: QdrantCatalog) -> list[str]:
    return sorted(c.name for c in client_of(catalog).get_collections().collections)


def aliases(catalog: QdrantCatalog) -> dict[str, str]:
    return {a.alias_name: a.collection_name for a in client_of(catalog).get_aliases().aliases}


def stored(catalog: QdrantCatalog, alias: str) -> dict[str, models.Record]:
    points, _ = client_of(catalog).scroll(alias, limit=1000, with_payload=True, with_vectors=True)
    return {str((point.payload or {})["id"]): point for point in points}


# --- terms and weights ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60))
def test_documents_and_queries_keep_the_same_words(text: str) -> None:
    """The document side counts exactly the words `query_terms` keeps, repeats included."""
    words = content_words(text)
    assert list(dict.fromkeys(words)) == query_terms(text)
    assert document_terms(text) == [t for w in words if (t := term_of(w))]


def test_terms_are_folded_and_stemmed() -> None:
    assert [term_of(w) for w in ["running", "runs", "run"]] == ["run"] * 3
    assert term_of("café") == term_of("cafe") == "cafe"
    assert term_of("zürich") == "zurich"
    assert document_terms("The cats and the CATS!") == ["cat", "cat"]


def test_term_indices_are_stable_31_bit_numbers() -> None:
    """blake2b, not hash(): the same word maps to the same index in every process and on every machine."""
    digest = hashlib.blake2b(b"run", digest_size=4).digest()
    assert term_index("run") == int.from_bytes(digest, "big") & (2**31 - 1)
    assert all(0 <= term_index(w) < 2**31 for w in ["a", "zürich", "東京", "x" * 1000])


def test_a_query_vector_has_each_term_once_at_weight_one() -> None:
    vector = query_vector("Running runs, RUN! and the cat")
    assert vector is not None
    assert vector.indices == sorted({term_index("run"), term_index("cat")})
    assert vector.values == [1.0, 1.0]
    assert query_vector("the and of ?") is None
    assert query_vector("") is None


def test_own_words_outweigh_a_neighbours_and_both_add_up() -> None:
    banana = term_index("banana")
    own = memory_weights("banana bread", None, None)[banana]
    lent = memory_weights("toast jam", "banana bread", None)[banana]
    both = memory_weights("banana bread", "banana split", None)[banana]
    assert 0 < lent < own < both
    assert set(memory_weights("toast jam", "banana bread", "plum")) == {
        term_index(t) for t in ["toast", "jam", "banana", "bread", "plum"]
    }


def test_weights_follow_bm25_saturation() -> None:
    """A lone memory of average length: tf·(k1+1)/(tf+k1) per term (b's length part cancels out)."""
    words = [f"word{i}" for i in range(int(3 * AVERAGE_LENGTH) - 1)]
    weights = memory_weights(" ".join(["banana", *words]), None, None)
    assert weights[term_index("banana")] == pytest.approx((K1 + 1) / (1 + K1))
    repeated = memory_weights(" ".join(["banana", "banana", *words[1:]]), None, None)
    assert repeated[term_index("banana")] == pytest.approx(2 * (K1 + 1) / (2 + K1))


def test_a_neighbours_words_count_at_the_neighbour_weight() -> None:
    words = " ".join(f"word{i}" for i in range(int(3 * AVERAGE_LENGTH) - 1))
    lent = memory_weights(words, "banana", None)[term_index("banana")]
    assert lent == pytest.approx(NEIGHBOUR_WEIGHT * (K1 + 1) / (NEIGHBOUR_WEIGHT + K1))


def test_scores_are_normalised_by_the_best() -> None:
    assert normalised([("b", 2.0), ("a", 4.0), ("c", 2.0), ("z", 0.0)]) == [("a", 1.0), ("b", 0.5), ("c", 0.5)]
    assert normalised([]) == []


def test_point_ids_are_memory_ids_or_their_uuid5() -> None:
    memory_id = str(uuid.uuid4())
    assert point_id(memory_id) == memory_id
    assert point_id("note-1") == point_id("note-1") != point_id("note-2")
    assert str(uuid.UUID(point_id("note-1"))) == point_id("note-1")
    assert point_id(memory_id.upper()) != memory_id  # only the canonical spelling is a memory id


def test_scope_terms_name_each_label_by_its_place() -> None:
    thread = "user/a/\x1fbot\x1f\x1fp3\x1fnote\x1fglobal\x1fthread\x1fs1"
    assert scope_terms(thread) == ["0:bot", "1:", "2:p3", "3:note", "4:global"]
    assert scope_terms("user/a") == []


def test_a_point_written_before_scope_terms_is_in_every_scope(
    catalog: QdrantCatalog, index: QdrantKeywordIndex
) -> None:
    thread = "user/\x1fbot\x1f\x1fp3\x1f\x1f\x1fmemory\x1fm1"
    ok(index.upsert(STORE, [entry("old", "banana", thread), entry("new", "banana", thread.replace("p3", "p1"))]))
    client_of(catalog).delete_payload(
        "memories.keywords", keys=["scope"], points=[stored(catalog, "memories.keywords")["old"].id]
    )
    assert "scope" not in (stored(catalog, "memories.keywords")["old"].payload or {})
    found = ok(index.search(STORE, "banana", 10, thread_prefix="user", scope=(None, None, "p2", None, None)))
    assert [memory_id for memory_id, _ in found] == ["old"]


def test_thread_prefixes() -> None:
    assert thread_prefixes("user/a/b") == ["user", "user/a", "user/a/b"]
    assert thread_prefixes("user") == ["user"]
    assert thread_prefixes("") == [""]


# --- collections and points -------------------------------------------------------------------


def test_nothing_is_created_until_the_first_write(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    assert ok(index.search(STORE, "banana", 5)) == []
    assert ok(index.neighbours(STORE, ["a"])) == {}
    ok(index.remove(STORE, ["a"]))
    assert collection_names(catalog) == []
    ok(index.upsert(STORE, [entry("a", "banana")]))
    assert collection_names(catalog) == ["memories.keywords.gen-0"]
    assert aliases(catalog) == {"memories.keywords": "memories.keywords.gen-0"}


def test_a_store_keeps_its_keywords_beside_its_alias(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    ok(index.upsert("work-notes", [entry("a", "banana")]))
    assert index.alias_of("work-notes") == "memories--work-notes.keywords"
    assert "memories--work-notes.keywords" in aliases(catalog)
    assert ok(catalog.names()) == []  # a keyword alias is never taken for a store


def test_the_collection_is_sparse_only_with_idf(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    ok(index.upsert(STORE, [entry("a", "banana")]))
    params = client_of(catalog).get_collection("memories.keywords").config.params
    assert not params.vectors
    assert params.sparse_vectors is not None
    assert params.sparse_vectors[TERMS].modifier is models.Modifier.IDF


def test_a_point_per_memory_with_its_place_and_text(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    ok(index.upsert(STORE, [entry(first, "Banana bread", "user/a"), entry(second, "the end", "user/a")]))
    ok(index.upsert(STORE, [entry("other", "plum", "org")]))
    points = stored(catalog, "memories.keywords")
    assert str(points[first].id) == first  # a memory's point id is its own id
    assert points[first].payload == {
        "id": first,
        "thread": "user/a",
        "thread_prefixes": ["user", "user/a"],
        "scope": [],  # a thread without scope labels: every scoped search keeps it
        "seq": 0,
        "prev_id": None,
        "next_id": second,
        "content": "Banana bread",
    }
    assert (points[second].payload or {})["seq"] == 1
    assert str(points["other"].id) == point_id("other")
    vector = points[first].vector
    assert isinstance(vector, dict)
    sparse = vector[TERMS]
    assert isinstance(sparse, models.SparseVector)
    expected = memory_weights("Banana bread", None, "the end")
    assert dict(zip(sparse.indices, sparse.values, strict=True)) == pytest.approx(expected)


def test_a_memory_without_content_words_has_no_vector(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    ok(index.upsert(STORE, [entry("s", "it is what it is", "t1")]))
    assert stored(catalog, "memories.keywords")["s"].vector in ({}, None)
    assert ok(index.neighbours(STORE, ["s"])) == {"s": (None, None)}


def test_rebuild_switches_to_a_new_generation(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    ok(index.upsert(STORE, [entry("old", "banana")]))
    ok(index.rebuild(STORE, [entry("b", "cherry"), entry("a", "apple")]))
    (generation,) = collection_names(catalog)
    assert generation.startswith("memories.keywords.gen-") and generation != "memories.keywords.gen-0"
    assert aliases(catalog) == {"memories.keywords": generation}
    assert set(stored(catalog, "memories.keywords")) == {"a", "b"}


def test_a_rebuild_with_repeated_ids_keeps_the_first_place_and_the_last_text(index: QdrantKeywordIndex) -> None:
    ok(index.rebuild(STORE, [entry("a", "apple"), entry("b", "banana"), entry("a", "apricot"), *filler()]))
    assert ok(index.neighbours(STORE, ["a", "b"])) == chain(["a", "b"])
    assert ok(index.search(STORE, "apple", 5)) == []
    assert [i for i, _ in ok(index.search(STORE, "apricot", 5))] == ["a", "b"]


def test_a_crashed_rebuild_keeps_the_old_index_and_the_next_one_tidies(
    catalog: QdrantCatalog, index: QdrantKeywordIndex
) -> None:
    ok(index.upsert(STORE, [entry("a", "banana")]))
    half = "memories.keywords.gen-half"
    _create_collection(client_of(catalog), half, server=False)  # then the "crash", before the alias switch
    assert [i for i, _ in ok(index.search(STORE, "banana", 5))] == ["a"]
    ok(index.rebuild(STORE, [entry("b", "banana")]))
    assert half not in collection_names(catalog) and len(collection_names(catalog)) == 1
    assert [i for i, _ in ok(index.search(STORE, "banana", 5))] == ["b"]


def test_writes_page_through_small_requests(
    catalog: QdrantCatalog, index: QdrantKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(qdrant_layout, "SCAN_PAGE", 3)
    monkeypatch.setattr(qdrant_layout, "MAX_BATCH_POINTS", 2)
    ids = [f"m{i}" for i in range(9)]
    ok(index.upsert(STORE, [entry(i, f"word{n} banana") for n, i in enumerate(ids)]))
    ok(index.upsert(STORE, [entry(i, f"word{n} cherry") for n, i in enumerate(ids)]))
    assert ok(index.neighbours(STORE, ids)) == chain(ids)
    ok(index.remove(STORE, ids[::2]))
    assert ok(index.neighbours(STORE, ids)) == chain(ids[1::2])
    ok(index.rebuild(STORE, [entry(i, "plum") for i in reversed(ids)]))
    assert ok(index.neighbours(STORE, ids)) == chain(list(reversed(ids)))


def test_payload_indexes_on_a_server() -> None:
    @attrs.define
    class Recorder:
        calls: list[tuple[str, str, Any]] = attrs.field(factory=list)

        def collection_exists(self, name: str) -> bool:
            return True

        def create_payload_index(self, name: str, *, field_name: str, field_schema: Any, wait: bool) -> None:
            self.calls.append((name, field_name, field_schema))

    recorder = Recorder()
    _create_collection(recorder, "memories.keywords.gen-0", server=True)  # type: ignore[arg-type]
    assert {field for _, field, _ in recorder.calls} == set(KEYWORD_PAYLOAD_FIELDS)
    assert {schema for _, _, schema in recorder.calls} == {models.PayloadSchemaType.KEYWORD}


# --- sharing the catalog ----------------------------------------------------------------------


def test_the_index_shares_the_catalogs_client(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    """Local mode admits one client per folder: stores and keywords work side by side on it."""
    store = ok(catalog.open(STORE, create=True))
    pairs = sample(3)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    ok(index.upsert(STORE, [KeywordEntry(m.id, m.content, "t") for m, _ in pairs]))
    assert ok(store.count()) == 3
    assert ok(index.neighbours(STORE, [m.id for m, _ in pairs])) == chain([m.id for m, _ in pairs])
    assert ok(catalog.names()) == [STORE]


def test_the_index_follows_a_reopened_catalog(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    ok(index.upsert(STORE, [entry("a", "banana")]))
    catalog.close()
    assert [i for i, _ in ok(index.search(STORE, "banana", 5))] == ["a"]


def test_threads_writing_at_once_keep_one_chain(index: QdrantKeywordIndex) -> None:
    def write(worker: int) -> None:
        for n in range(5):
            ok(index.upsert(STORE, [entry(f"w{worker}-{n}", f"note {n}")]))

    workers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    ids = [f"w{w}-{n}" for w in range(4) for n in range(5)]
    links = ok(index.neighbours(STORE, ids))
    firsts = [i for i, (before, _) in links.items() if before is None]
    assert len(links) == 20 and len(firsts) == 1
    order = [firsts[0]]
    while (after := links[order[-1]][1]) is not None:
        order.append(after)
    assert sorted(order) == sorted(ids)
    for number in range(4):
        mine = [i for i in order if i.startswith(f"w{number}-")]
        assert mine == [f"w{number}-{n}" for n in range(5)]


# --- errors -----------------------------------------------------------------------------------


def test_a_foreign_collection_at_the_alias_name_is_a_storage_error(
    catalog: QdrantCatalog, index: QdrantKeywordIndex
) -> None:
    client_of(catalog).create_collection(
        "memories.keywords", vectors_config=models.VectorParams(size=1, distance=models.Distance.DOT)
    )
    error = failed_with(index.upsert(STORE, [entry("a", "banana")]), ErrorCode.STORAGE_ERROR)
    assert error.cause


def test_a_foreign_point_is_a_storage_error(catalog: QdrantCatalog, index: QdrantKeywordIndex) -> None:
    ok(index.upsert(STORE, [entry("a", "banana")]))
    client_of(catalog).upsert(
        "memories.keywords", points=[models.PointStruct(id=point_id("b"), vector={}, payload={"id": "b"})]
    )
    failed_with(index.neighbours(STORE, ["b"]), ErrorCode.STORAGE_ERROR)
    failed_with(index.upsert(STORE, [entry("b", "cherry")]), ErrorCode.STORAGE_ERROR)


def test_unwritable_data_path_is_backend_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    index = keyword_index_for(QdrantCatalog(path=blocker / "qdrant", embedder_name=MODEL, dimension=DIM))
    failed_with(index.upsert(STORE, [entry("a", "banana")]), ErrorCode.BACKEND_UNAVAILABLE)
    failed_with(index.search(STORE, "banana", 5), ErrorCode.BACKEND_UNAVAILABLE)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_server_is_backend_unavailable() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    index = keyword_index_for(QdrantCatalog(url=url, embedder_name=MODEL, dimension=DIM))
    calls = [
        index.upsert(STORE, [entry("a", "banana")]),
        index.remove(STORE, ["a"]),
        index.search(STORE, "banana", 5, thread_prefix="user"),
        index.neighbours(STORE, ["a"]),
        index.rebuild(STORE, [entry("a", "banana")]),
    ]
    for result in calls:
        error = failed_with(result, ErrorCode.BACKEND_UNAVAILABLE)
        assert error.message == f"Cannot connect to Qdrant at {url}. Is the server running?"
