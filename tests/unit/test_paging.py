"""Paging as a use-case rule: list pages with a total, search pages with has_more, bounds refused the same way."""

from __future__ import annotations

import pytest

from agent_memory.adapters.clock import FixedClock
from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.service import MemoryService
from tests.unit.test_hierarchical import add, code_of


def paths_of(views: object) -> list[str]:
    return [str(view.memory.path) for view in views]  # type: ignore[attr-defined]


def test_list_answers_the_page_and_the_total(service: MemoryService, clock: FixedClock) -> None:
    for n in range(5):
        add(service, f"notes/n{n}")
        clock.advance(hours=0.1)
    whole = service.list("notes").unwrap()
    assert whole.total == 5 and paths_of(whole.memories) == [f"notes/n{n}" for n in (4, 3, 2, 1, 0)]
    page = service.list("notes", limit=2, offset=1).unwrap()
    assert page.total == 5 and paths_of(page.memories) == ["notes/n3", "notes/n2"]
    assert service.list("notes", limit=3, offset=4).unwrap().memories == whole.memories[4:]
    beyond = service.list("notes", limit=3, offset=7).unwrap()
    assert beyond.memories == () and beyond.total == 5


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (1001, 0), (True, 0), (2, -1), (2, 1.5)])
def test_a_listing_page_out_of_bounds_is_invalid_input(service: MemoryService, limit: object, offset: object) -> None:
    add(service, "notes/a")
    refused = service.list("notes", limit=limit, offset=offset)  # type: ignore[arg-type]
    assert code_of(refused) is ErrorCode.INVALID_INPUT


def test_search_pages_are_slices_of_one_ranking(service: MemoryService) -> None:
    for n in range(6):
        add(service, f"animals/walrus-{n}", f"walrus number {n} has tusks" + " ice" * n)
    ranked = service.search(SearchMemories(query="walrus tusks", limit=6, mode="semantic")).unwrap()
    assert len(ranked.results) == 6 and not ranked.has_more
    page = service.search(SearchMemories(query="walrus tusks", limit=2, offset=3, mode="semantic")).unwrap()
    assert [hit.memory.id for hit in page.results] == [hit.memory.id for hit in ranked.results[3:5]]
    assert page.has_more
    last = service.search(SearchMemories(query="walrus tusks", limit=2, offset=5, mode="semantic")).unwrap()
    assert [hit.memory.id for hit in last.results] == [ranked.results[5].memory.id] and not last.has_more


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (1001, 0), (10, -1), (1000, 1), (2, True)])
def test_a_search_page_out_of_bounds_is_invalid_input(service: MemoryService, limit: int, offset: int) -> None:
    add(service, "animals/walrus")
    refused = service.search(SearchMemories(query="walrus", limit=limit, offset=offset))
    assert code_of(refused) is ErrorCode.INVALID_INPUT
