"""The KeywordIndex contract against the in-memory fake, plus the fake's own scoring."""

from __future__ import annotations

import pytest

from agent_memory.adapters.in_memory import InMemoryKeywordIndex
from agent_memory.domain.ports import KeywordIndex
from tests.contract.keyword_index_contract import STORE, KeywordIndexContract, entry, filler, ids_of, search
from tests.contract.vector_store_contract import ok


class TestInMemoryKeywords(KeywordIndexContract):
    """The fake keeps no file (no durability tests); it neither stems, drops stop words nor folds diacritics."""

    durable = False

    @pytest.fixture
    def index(self, tmp_path: object) -> KeywordIndex:
        return InMemoryKeywordIndex()

    def test_a_neighbour_only_match_scores_exactly_half(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("own", "banana"), entry("next", "cherry"), *filler()]))
        assert search(index, "banana") == [("own", 1.0), ("next", 0.5)]

    def test_words_with_diacritics_match_as_spelled(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("cafe", "un café noir", "t1"), entry("other", "thé vert", "t2")]))
        assert ids_of(search(index, "CAFÉ")) == ["cafe"]
        assert ids_of(search(index, "thé")) == ["other"]
