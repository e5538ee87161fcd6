"""Hybrid, semantic and keyword search over fakes: filters on both sides, neighbour context, bad modes."""

from datetime import timedelta

import pytest

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryKeywordIndex
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.hybrid import dense_score, fuse
from agent_memory.domain.service import MemoryService
from tests.unit.conftest import T0


@pytest.fixture
def hybrid(clock: FixedClock) -> MemoryService:
    return MemoryService(
        catalog=InMemoryCatalog(embedder_name="hashing-bow"),
        embedder=HashingEmbedder(),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
    )


def contents(service: MemoryService, **search: object) -> list[str]:
    results = service.search(SearchMemories(**search)).unwrap()  # type: ignore[arg-type]
    return [hit.memory.content for hit in results.results]


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_every_mode_honours_filters_namespaces_deletion_and_expiry(
    hybrid: MemoryService, clock: FixedClock, mode: str
) -> None:
    hybrid.create(CreateMemory(content="kiwi plan alpha", namespace=("user", "a"), project="p")).unwrap()
    hybrid.create(CreateMemory(content="kiwi plan sibling", namespace=("user", "b"), project="p")).unwrap()
    hybrid.create(CreateMemory(content="kiwi plan other project", namespace=("user", "a"), project="q")).unwrap()
    gone = hybrid.create(CreateMemory(content="kiwi plan deleted", namespace=("user", "a"), project="p")).unwrap()
    hybrid.delete(gone.memory.id).unwrap()
    hybrid.create(
        CreateMemory(
            content="kiwi plan expired", namespace=("user", "a"), project="p", expires_at=T0 + timedelta(hours=1)
        )
    ).unwrap()
    clock.advance(hours=2)
    found = contents(hybrid, query="kiwi plan", namespace=("user", "a"), project="p", mode=mode)
    assert found == ["kiwi plan alpha"]


def test_keyword_mode_ranks_by_words_and_reports_similarity(hybrid: MemoryService) -> None:
    hybrid.create(CreateMemory(content="the invoice number is INV-88231")).unwrap()
    hybrid.create(CreateMemory(content="a note about invoices in general")).unwrap()
    results = hybrid.search(SearchMemories(query="INV-88231", mode="keyword")).unwrap()
    assert results.results[0].memory.content == "the invoice number is INV-88231"
    assert results.results[0].score == 1.0 and results.results[0].similarity > 0


def test_hybrid_search_fills_the_limit_when_filters_drop_keyword_hits(hybrid: MemoryService) -> None:
    for i in range(120):
        hybrid.create(CreateMemory(content=f"mango report {i}", project="noise")).unwrap()
    for i in range(3):
        hybrid.create(CreateMemory(content=f"mango summary {i}", project="target")).unwrap()
    found = contents(hybrid, query="mango report", project="target", limit=3)
    assert sorted(found) == [f"mango summary {i}" for i in range(3)]


def test_updated_and_removed_memories_leave_the_keyword_index(hybrid: MemoryService) -> None:
    hybrid.add(CreateMemory(content="old word zeppelin", path="notes/a")).unwrap()
    hybrid.update(UpdateMemory(ref="notes/a", content="new word dirigible")).unwrap()
    assert contents(hybrid, query="zeppelin", mode="keyword") == []
    assert contents(hybrid, query="dirigible", mode="keyword") == ["new word dirigible"]
    hybrid.remove("notes/a").unwrap()
    assert contents(hybrid, query="dirigible", mode="keyword") == []


def test_new_tags_and_a_new_path_are_found_by_keyword(hybrid: MemoryService) -> None:
    hybrid.add(CreateMemory(content="the launch checklist", path="notes/plain")).unwrap()
    hybrid.update(UpdateMemory(ref="notes/plain", tags=["rocketry"])).unwrap()
    assert contents(hybrid, query="rocketry", mode="keyword") == ["the launch checklist"]
    hybrid.move("notes/plain", "aerospace/checklist").unwrap()
    assert contents(hybrid, query="aerospace", mode="keyword") == ["the launch checklist"]
    assert contents(hybrid, query="plain", mode="keyword") == []


def test_reindex_rebuilds_the_keyword_index(hybrid: MemoryService) -> None:
    hybrid.create(CreateMemory(content="walrus facts")).unwrap()
    assert hybrid.keywords is not None
    hybrid.keywords.rebuild("default", []).unwrap()
    assert contents(hybrid, query="walrus", mode="keyword") == []
    hybrid.reindex().unwrap()
    assert contents(hybrid, query="walrus", mode="keyword") == ["walrus facts"]


def test_an_unknown_mode_is_invalid_input(hybrid: MemoryService) -> None:
    result = hybrid.search(SearchMemories(query="x", mode="fuzzy"))
    assert result.failure().code is ErrorCode.INVALID_INPUT
    assert "hybrid, semantic, keyword" in result.failure().message


def test_neighbours_lend_context_to_a_memory() -> None:
    similarity = {"a": 0.2, "b": 0.9, "c": 0.1}
    links = {"a": (None, "b"), "b": ("a", "c"), "c": ("b", None)}
    assert dense_score("a", similarity, links) == pytest.approx(0.2 + 0.25 * 0.9)
    ranked = fuse(["a", "c"], similarity, {"c": 1.0}, links)
    assert [memory_id for memory_id, _ in ranked] == ["c", "a"]
