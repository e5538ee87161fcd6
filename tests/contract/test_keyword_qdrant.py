"""The KeywordIndex contract against Qdrant's local mode (sparse vectors with IDF), plus its own promises."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from adapters.qdrant_keywords import QdrantKeywordIndex, keyword_index_for
from adapters.qdrant_store import QdrantCatalog
from domain.ports import KeywordIndex
from tests.contract.keyword_index_contract import (
    STORE,
    KeywordIndexContract,
    chain,
    entry,
    filler,
    found,
    ids_of,
    search,
)
from tests.contract.vector_store_contract import DIM, MODEL, ok


def local(path: Path) -> QdrantCatalog:
    return QdrantCatalog(path=path, embedder_name=MODEL, dimension=DIM)


class TestQdrantKeywords(KeywordIndexContract):
    """Local mode admits one client per folder, so `reopen` closes every catalog opened on it before."""

    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[KeywordIndex]:
        first = local(tmp_path / "qdrant")
        self.opened = [first]
        yield keyword_index_for(first)
        for catalog in self.opened:
            catalog.close()

    def reopen(self, index: KeywordIndex) -> KeywordIndex:
        assert isinstance(index, QdrantKeywordIndex)
        for opened in self.opened:
            opened.close()
        fresh = attrs.evolve(index.catalog)
        self.opened.append(fresh)
        return keyword_index_for(fresh)

    # --- the tokenizer: query_terms' words, folded and stemmed (Snowball English)

    def test_words_are_stemmed(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("run", "she was running late", "t1"), entry("x", "nothing here", "t2")]))
        ok(index.upsert(STORE, filler()))
        for query in ["run", "runs", "running", "RUNNING"]:
            assert ids_of(search(index, query)) == ["run"], query

    def test_diacritics_are_folded_both_ways(self, index: KeywordIndex) -> None:
        ok(
            index.upsert(
                STORE,
                [
                    entry("cafe-accent", "un café noir", "t1"),
                    entry("cafe-plain", "the cafe round the corner", "t2"),
                    entry("angstrom", "Ångström units", "t3"),
                    entry("zurich", "Zurich office", "t4"),
                    entry("vn", "Việt Nam trip", "t5"),
                    *filler(),
                ],
            )
        )
        for query in ["cafe", "café", "CAFÉ", "cafè"]:
            assert found(index, query) == {"cafe-accent", "cafe-plain"}, query
        assert ids_of(search(index, "ÅNGSTRÖM")) == ["angstrom"]
        assert ids_of(search(index, "zürich")) == ["zurich"]
        assert ids_of(search(index, "viet")) == ["vn"]

    def test_repeated_words_rank_higher(self, index: KeywordIndex) -> None:
        """bm25 counts occurrences (the in-memory fake does not)."""
        ok(
            index.upsert(
                STORE,
                [
                    entry("once", "banana cake word word", "t1"),
                    entry("thrice", "banana banana banana cake", "t2"),
                    entry("twice", "banana banana cake word", "t3"),
                    *filler(),
                ],
            )
        )
        hits = search(index, "banana")
        assert ids_of(hits) == ["thrice", "twice", "once"]
        assert hits[1][1] < 1.0 and hits[2][1] < hits[1][1]

    def test_a_query_of_stop_words_finds_nothing(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "what is the name of the cat and where is it"), *filler()]))
        for query in ["the", "what is the", "And, OR; not!", "where is it", "a b c x y z", "I", "the ?"]:
            assert search(index, query) == [], query

    def test_stop_words_do_not_change_the_ranking(self, index: KeywordIndex) -> None:
        ok(
            index.upsert(
                STORE,
                [entry("cat", "the cat sat on the mat", "t1"), entry("dog", "a dog on a log", "t2"), *filler()],
            )
        )
        assert search(index, "where is the cat and the dog?") == search(index, "cat dog")
        assert ids_of(search(index, "the cat")) == ["cat"]

    def test_a_memory_of_stop_words_only_is_still_a_neighbour(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("q", "banana"), entry("s", "it is what it is"), entry("z", "x")]))
        assert ok(index.neighbours(STORE, ["q", "s", "z"])) == chain(["q", "s", "z"])
        assert found(index, "banana") == {"q", "s"}
