"""Retrieval with the real model and the embedded default: why hybrid is the default, and what no mode may show."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

pytestmark = pytest.mark.slow

FILLER = [
    "The weekly team meeting moved to Thursday afternoon",
    "The office coffee machine is broken again",
    "Deployment to production requires two approvals",
    "The cat's vet appointment is next month",
    "Quarterly planning starts after the holidays",
    "The new laptop arrived with a US keyboard",
    "Lunch on Friday is at the Thai place downstairs",
    "Backups run every night at two in the morning",
    "The design review was postponed by a week",
    "Parking permits must be renewed in January",
]


def expired(service: MemoryService, content: str, expires_at: datetime, **fields: Any) -> None:
    """A memory whose expiry has passed, imported as an export holds it (creating one is refused)."""
    made = expires_at - timedelta(hours=1)
    memory = Memory(
        id=str(uuid.uuid4()), content=content, created_at=made, updated_at=made, expires_at=expires_at, **fields
    )
    service.import_memories([memory]).unwrap()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryService]:
    home = tmp_path_factory.mktemp("retrieval")
    settings = load_settings({"data_dir": str(home)}, {"HOME": str(home)}).unwrap()
    built = build_service(settings).unwrap()
    built.create_many([CreateMemory(content=text, project="filler") for text in FILLER]).unwrap()
    yield built


def top(service: MemoryService, query: str, mode: str, **scope: object) -> list[str]:
    results = service.search(SearchMemories(query=query, mode=mode, limit=3, **scope)).unwrap()  # type: ignore[arg-type]
    return [hit.memory.content for hit in results.results]


def test_hybrid_finds_an_exact_rare_token_that_dense_search_misses(service: MemoryService) -> None:
    target = "Booked the train to Lyon for the offsite, seats 41 and 42 in coach 7, booking reference QK7PLM"
    generic = [
        "Error codes from the payment provider are listed in the troubleshooting guide",
        "The booking system shows a reference number after each reservation",
        "Reference numbers for hotel bookings are stored in the travel folder",
        "Always keep the booking reference until the trip is over",
        "A booking reference is six letters and digits long",
    ]
    service.create_many([CreateMemory(content=t, project="travel") for t in [*generic, target]]).unwrap()
    query = "booking reference QK7PLM"
    assert target not in top(service, query, "semantic", project="travel")  # meaning alone ranks the generic ones
    assert top(service, query, "keyword", project="travel")[0] == target
    assert top(service, query, "hybrid", project="travel")[0] == target


def test_dense_finds_a_paraphrase_that_keyword_search_misses(service: MemoryService) -> None:
    target = "Alice is allergic to peanuts"
    service.create(CreateMemory(content=target, project="food")).unwrap()
    service.create_many([CreateMemory(content=text, project="food") for text in FILLER[:5]]).unwrap()
    query = "which nuts make her sick?"
    assert target not in top(service, query, "keyword", project="food")
    assert top(service, query, "semantic", project="food")[0] == target
    assert top(service, query, "hybrid", project="food")[0] == target


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_filters_namespaces_deletion_and_expiry_hold_on_both_sides(service: MemoryService, mode: str) -> None:
    now = datetime.now(UTC)
    tag = f"iso-{mode}"
    kept = service.create(
        CreateMemory(content="The tenant's favourite colour is teal", namespace=("t", "a"), tags=(tag,))
    ).unwrap()
    service.create(
        CreateMemory(content="The tenant's favourite colour is teal", namespace=("t", "b"), tags=(tag,))
    ).unwrap()
    service.create(CreateMemory(content="The tenant's favourite colour is teal", namespace=("t", "a"))).unwrap()
    gone = service.create(
        CreateMemory(content="The tenant's favourite colour is teal", namespace=("t", "a"), tags=(tag,))
    ).unwrap()
    service.delete(gone.memory.id).unwrap()
    expired(
        service,
        "The tenant's favourite colour is teal",
        now - timedelta(seconds=1) + timedelta(microseconds=1),
        namespace=("t", "a"),
        tags=(tag,),
    )
    results = service.search(
        SearchMemories(query="favourite colour teal", mode=mode, namespace=("t", "a"), tags=(tag,))
    ).unwrap()
    assert [hit.memory.id for hit in results.results] == [kept.memory.id]


def test_the_keyword_index_lives_beside_the_data(tmp_path: Path) -> None:
    settings = load_settings({"data_dir": str(tmp_path)}, {"HOME": str(tmp_path)}).unwrap()
    service = build_service(settings).unwrap()
    service.create(CreateMemory(content="kept beside the vectors")).unwrap()
    assert (tmp_path / "chroma-keywords.sqlite3").is_file()


def test_reranking_never_surfaces_a_filtered_deleted_or_expired_memory(service: MemoryService) -> None:
    """The best matches of the question are out of scope, deleted or expired; the learnt ranker reorders
    only what passed the filters, on every page, and returns the same memories as the first stage."""
    now = datetime.now(UTC)
    question = "Where does Priya keep the spare key for the garden shed?"
    exact = "Priya keeps the spare key for the garden shed under the blue flowerpot"
    scope = {"namespace": ("rr", "mine"), "project": "home"}
    shown = [
        service.create(CreateMemory(content=text, **scope)).unwrap().memory.id  # type: ignore[arg-type]
        for text in [
            "Priya painted the garden shed green last spring",
            "The spare bedroom key hangs by the front door",
            "Priya's garden has tomatoes, beans and a small pond",
            *FILLER[:4],
        ]
    ]
    service.create(CreateMemory(content=exact, namespace=("rr", "theirs"), project="home")).unwrap()
    service.create(CreateMemory(content=exact, namespace=("rr", "mine"), project="work")).unwrap()
    gone = service.create(CreateMemory(content=exact, **scope)).unwrap()  # type: ignore[arg-type]
    service.delete(gone.memory.id).unwrap()
    expired(service, exact, now - timedelta(seconds=1), **scope)

    def ids(limit: int, offset: int = 0, searcher: MemoryService = service) -> list[str]:
        # relevance judging off (decision 24): every candidate that passes the filters, related or not
        query = SearchMemories(
            query=question, limit=limit, offset=offset, min_confidence=0.0, min_similarity=0.0, **scope
        )  # type: ignore[arg-type]
        return [hit.memory.id for hit in searcher.search(query).unwrap().results]

    everything = ids(20)
    assert sorted(everything) == sorted(shown)
    assert ids(3) + ids(3, offset=3) + ids(3, offset=6) == everything[:9]
    first_stage = evolve(service, policy=evolve(service.policy, rerank=False))
    assert sorted(ids(20, searcher=first_stage)) == sorted(shown)
