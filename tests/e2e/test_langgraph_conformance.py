"""Issue 30: `MemoryStore` behaves as LangGraph's own stores do where LangGraph documents it — the `index`
configuration (embeddings, fields, `index=False`, cosine scores), TTL mapped onto the memories' expiry, and the
namespace rules (only `put()` refuses the root label "langgraph"; every label LangGraph takes, a '/' or a trailing
newline included, is kept and read back exactly) and filter keys taken as data — on every backend."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")

from langchain_core.embeddings import Embeddings
from langgraph.store.base import InvalidNamespaceError, PutOp

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.langgraph.store import MemoryStore
from agent_memory.entrypoints.settings import load_settings
from tests.unit.conftest import T0

BACKENDS = ["chroma", "files", "qdrant"]
NS = ("docs", "u1")


class Letters(Embeddings):
    """A tiny embedding: how often each letter a–z occurs (so cosines are easy to compute by hand)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(text.lower().count(chr(ord("a") + n))) for n in range(26)]


def cos(left: str, right: str) -> float:
    a, b = Letters().embed_query(left), Letters().embed_query(right)
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


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


# --- index: the configured embeddings score a query by cosine -------------------------------------------------


def test_a_configured_index_scores_by_the_cosine_of_its_embeddings(service: MemoryService) -> None:
    store = MemoryStore(service, index={"dims": 26, "embed": Letters(), "fields": ["title"]})
    assert store.index_config is not None and store.index_config["dims"] == 26
    store.put(NS, "a", {"title": "zebra", "body": "quiet"})
    store.put(NS, "b", {"title": "quiet", "body": "zebra"})  # only title is indexed
    store.put(NS, "c", {"title": "zebra"}, index=False)  # kept, found, never scored
    store.put(NS, "d", {"title": "x", "body": "zebra"}, index=["body"])  # this item's own fields
    hits = store.search(NS, query="zebra")
    assert [hit.key for hit in hits] == ["a", "d", "b", "c"]  # a tie of scores goes by key
    assert hits[0].score == pytest.approx(1.0) and hits[1].score == pytest.approx(1.0)
    assert hits[2].score == pytest.approx(cos("zebra", "quiet"))
    assert hits[3].score is None
    assert [hit.key for hit in store.search(NS, query="zebra", limit=1, offset=1)] == ["d"]
    assert [hit.key for hit in store.search(NS, query="zebra", filter={"body": "quiet"})] == ["a"]


def test_a_put_over_an_item_re_embeds_it(service: MemoryService) -> None:
    store = MemoryStore(service, index={"dims": 26, "embed": Letters(), "fields": ["text"]})
    store.put(NS, "k", {"text": "zzz"})
    before = store.search(NS, query="zzz")[0].score
    store.put(NS, "k", {"text": "abc"})
    after = store.search(NS, query="zzz")[0].score
    assert before == pytest.approx(1.0) and after is not None and after < before


def test_embed_may_be_a_function_or_the_products_own_embedder(service: MemoryService) -> None:
    def letters(texts: list[str]) -> list[list[float]]:
        return Letters().embed_documents(texts)

    by_function = MemoryStore(service, index={"dims": 26, "embed": letters, "fields": ["text"]})
    by_function.put(NS, "k", {"text": "hello"})
    assert by_function.search(NS, query="hello")[0].score == pytest.approx(1.0)
    own = MemoryStore(
        service, index={"embed": "agent-memory", "fields": ["text"]}
    )  # resolved offline: the service's embedder
    assert own.search(NS, query="hello")[0].score == pytest.approx(1.0)


def test_without_an_index_a_query_is_the_products_hybrid_search(service: MemoryService) -> None:
    store = MemoryStore(service)
    store.put(NS, "k", {"text": "ramen in Osaka"})
    (hit,) = store.search(NS, query="ramen")
    assert hit.key == "k" and hit.score is not None and 0 < hit.score <= 1


# --- TTL: an item's TTL is its memory's expiry -------------------------------------------------------------------


def test_a_ttl_is_the_memorys_expiry_renewed_on_read_and_swept(service: MemoryService, clock: FixedClock) -> None:
    store = MemoryStore(service, ttl={"default_ttl": 10, "refresh_on_read": True})
    assert store.supports_ttl
    store.put(NS, "default", {"v": 1})
    store.put(NS, "short", {"v": 2}, ttl=1)
    store.put(NS, "forever", {"v": 3}, ttl=None)
    by_key = {m.memory.path.segments[-1][:5]: m.memory for m in service.list("langgraph").unwrap().memories}  # type: ignore[union-attr]
    assert by_key["defau"].expires_at == T0 + timedelta(minutes=10)
    assert by_key["short"].expires_at == T0 + timedelta(minutes=1)
    assert by_key["forev"].expires_at is None
    clock.advance(hours=5 / 60)
    assert store.get(NS, "default") is not None  # read: renewed to 5 + 10 minutes
    assert store.get(NS, "short") is None  # expired: hidden, as LangGraph's omit_expired
    clock.advance(hours=9 / 60)
    assert store.get(NS, "default", refresh_ttl=False) is not None
    assert sorted(hit.key for hit in store.search(NS)) == ["default", "forever"]
    assert store.sweep_ttl() == 1  # "short" is deleted for good; the others live on
    assert len(service.list("langgraph", include_expired=True).unwrap().memories) == 2


# --- namespaces: only put() refuses the root label "langgraph" ---------------------------------------------------


def test_only_put_refuses_the_root_label_langgraph(service: MemoryService) -> None:
    store = MemoryStore(service)
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    store.batch([PutOp(("langgraph", "x"), "k", {"v": 1})])  # below the public put, as LangGraph's stores allow
    assert store.get(("langgraph", "x"), "k").value == {"v": 1}  # type: ignore[union-attr]
    store.put(("a", "langgraph"), "k", {"v": 2})
    assert store.get(("a", "langgraph"), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_a_dotted_filter_key_reads_a_nested_field(service: MemoryService) -> None:
    store = MemoryStore(service)
    store.put(NS, "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(NS, "dotted", {"user.access-level": "literal"})
    assert [hit.key for hit in store.search(NS, filter={"user.access-level": "nested"})] == ["hyphen"]
    assert [hit.key for hit in store.search(NS, filter={"user.access-level": "literal"})] == ["dotted"]


# --- namespaces: every label LangGraph takes is kept, exactly, though the domain refuses some ---------------------

ODD_LABELS = ("line\n", "tab\there", "a/b", " ", "100%", "%2F", "bell\x07", "ü\x7f")


def test_labels_langgraph_takes_round_trip_exactly(service: MemoryService) -> None:
    store = MemoryStore(service)
    for n, label in enumerate(ODD_LABELS):
        store.put(("odd", label), f"k{n}", {"n": n})
    store.put(("odd", "plain"), "p", {"n": -1})
    for n, label in enumerate(ODD_LABELS):
        got = store.get(("odd", label), f"k{n}")
        assert got is not None and got.value == {"n": n} and got.namespace == ("odd", label)
        hits = store.search(("odd", label))
        assert [(hit.namespace, hit.key) for hit in hits] == [(("odd", label), f"k{n}")]
    assert store.get(("odd", "%2F"), "k2") is None  # the escaped form of 'a/b' is a label of its own
    listed = store.list_namespaces(prefix=("odd",))
    assert listed == sorted([("odd", label) for label in ODD_LABELS] + [("odd", "plain")])
    assert store.list_namespaces(suffix=("line\n",)) == [("odd", "line\n")]
    queried = store.search(("odd",), query="anything", limit=20)
    assert {hit.namespace for hit in queried} == set(listed)
    # a label the domain takes as it is reads the same through the product's own door
    views = service.list("langgraph", namespace=("odd", "plain")).unwrap().memories
    assert [view.memory.namespace for view in views] == [("odd", "plain")]


@pytest.mark.parametrize("namespace", [(), ("",), ("a.b",), ("ok", 3)])
def test_labels_langgraph_refuses_are_refused(service: MemoryService, namespace: tuple[object, ...]) -> None:
    store = MemoryStore(service)
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(namespace, "k", {"v": 1})])  # type: ignore[arg-type]


def test_a_filter_key_is_data_never_code(service: MemoryService) -> None:
    """LangGraph's sqlite store refuses odd filter keys to guard its SQL; its in-memory and postgres stores take
    them as field names, and so does this store, which builds no SQL: a key shaped like an injection matches
    only a field of that very name."""
    store = MemoryStore(service)
    store.put(NS, "public", {"access": "public"})
    store.put(NS, "private", {"access": "private", "password": "123"})
    injection = "access') = 'public' OR '1'='1' OR json_extract(value, '$."
    assert store.search(NS, filter={injection: "dummy"}) == []
    store.put(NS, "odd", {injection: "dummy"})
    assert [hit.key for hit in store.search(NS, filter={injection: "dummy"})] == ["odd"]
