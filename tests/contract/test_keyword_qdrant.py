"""The KeywordIndex contract against Qdrant's local mode (sparse vectors with IDF), plus its own promises."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.keywords import QdrantKeywordIndex, keyword_index_for
from agent_memory.domain.ports import KeywordIndex
from tests.contract.keyword_index_contract import (
    STORE,
    RankingKeywordIndexContract,
    chain,
    entry,
    found,
)
from tests.contract.vector_store_contract import DIM, MODEL, ok


def local(path: Path) -> QdrantCatalog:
    return QdrantCatalog(path=path, embedder_name=MODEL, dimension=DIM)


class TestQdrantKeywords(RankingKeywordIndexContract):
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

    def test_a_memory_of_stop_words_only_is_still_a_neighbour(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("q", "banana"), entry("s", "it is what it is"), entry("z", "x")]))
        assert ok(index.neighbours(STORE, ["q", "s", "z"])) == chain(["q", "s", "z"])
        assert found(index, "banana") == {"q", "s"}
