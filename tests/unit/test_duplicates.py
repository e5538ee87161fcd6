"""Near-duplicates at the door (issue 41): each policy, batches with duplicates inside them, scope, bad values."""

from __future__ import annotations

from datetime import timedelta

import pytest
from returns.result import Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import InMemoryCatalog, InMemoryKeywordIndex, TableEmbedder
from agent_memory.domain.commands import CreateMemory, FindDuplicates, SearchMemories
from agent_memory.domain.context import SearchPolicy
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.duplicates import MAX_NEIGHBOURS, MOST_NAMED, NEIGHBOURS, DuplicatePolicy, nearest
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector
from agent_memory.domain.service import MemoryService

DARK = "User prefers dark mode"
DARK_AGAIN = "The user likes dark themes in their editor"  # cosine 0.96 to DARK
LIGHT = "User switched to light mode for presentations"  # cosine 0.6 to DARK: same subject, another fact
TEA = "User drinks green tea"  # cosine 0 to the rest
MEANINGS: dict[str, Vector] = {
    DARK: [1.0, 0.0, 0.0],
    DARK_AGAIN: [0.96, 0.28, 0.0],
    LIGHT: [0.6, -0.8, 0.0],
    TEA: [0.0, 0.0, 1.0],
}
THRESHOLD = 0.9


def service_with(
    clock: FixedClock, policy: DuplicatePolicy = DuplicatePolicy.KEEP, threshold: float | None = THRESHOLD
) -> MemoryService:
    return MemoryService(
        catalog=InMemoryCatalog(embedder_name="meanings"),
        embedder=TableEmbedder(MEANINGS),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
        policy=SearchPolicy(duplicate_similarity=threshold, on_duplicate=policy),
    )


def contents(service: MemoryService) -> list[str]:
    return sorted(view.memory.content for view in service.list().unwrap().memories)


def test_keep_stores_both_and_names_the_duplicate(clock: FixedClock) -> None:
    service = service_with(clock)
    first = service.create(CreateMemory(content=DARK, path="preferences/theme")).unwrap()
    second = service.create(CreateMemory(content=DARK_AGAIN)).unwrap()
    assert second.memory.id != first.memory.id
    assert second.on_duplicate == "kept"
    assert [(d.id, d.path) for d in second.duplicates] == [(first.memory.id, "preferences/theme")]
    assert second.duplicates[0].similarity == pytest.approx(0.96)
    assert contents(service) == sorted([DARK, DARK_AGAIN])


def test_a_memory_about_the_same_subject_saying_another_thing_is_no_duplicate(clock: FixedClock) -> None:
    service = service_with(clock, DuplicatePolicy.UPDATE)
    service.create(CreateMemory(content=DARK)).unwrap()
    light = service.create(CreateMemory(content=LIGHT)).unwrap()
    assert (light.duplicates, light.on_duplicate) == ((), "")
    assert contents(service) == sorted([DARK, LIGHT])


def test_skip_stores_nothing_and_answers_with_the_existing_memory(clock: FixedClock) -> None:
    service = service_with(clock)
    first = service.create(CreateMemory(content=DARK)).unwrap()
    answer = service.create(CreateMemory(content=DARK_AGAIN, on_duplicate="skip")).unwrap()
    assert (answer.memory.id, answer.memory.content, answer.on_duplicate) == (first.memory.id, DARK, "skipped")
    assert contents(service) == [DARK]


def test_update_puts_the_new_text_in_the_existing_memory(clock: FixedClock) -> None:
    service = service_with(clock, DuplicatePolicy.UPDATE)  # the setting's policy, no per-call choice
    first = service.create(CreateMemory(content=DARK)).unwrap()
    answer = service.create(CreateMemory(content=DARK_AGAIN)).unwrap()
    assert (answer.memory.id, answer.memory.content, answer.on_duplicate) == (first.memory.id, DARK_AGAIN, "updated")
    assert contents(service) == [DARK_AGAIN]
    # re-embedded and re-indexed: the new words find it, by meaning and by keyword
    hits = service.search(SearchMemories(query=DARK_AGAIN, mode="keyword")).unwrap().results
    assert [hit.memory.id for hit in hits] == [first.memory.id]


def test_only_the_same_namespace_and_scope_count(clock: FixedClock) -> None:
    service = service_with(clock, DuplicatePolicy.SKIP)
    service.create(CreateMemory(content=DARK, namespace=("user", "a"))).unwrap()
    other_user = service.create(CreateMemory(content=DARK_AGAIN, namespace=("user", "b"))).unwrap()
    other_agent = service.create(CreateMemory(content=DARK_AGAIN, namespace=("user", "a"), agent="coder")).unwrap()
    below = service.create(CreateMemory(content=DARK_AGAIN, namespace=("user", "a", "x"))).unwrap()
    assert [view.on_duplicate for view in (other_user, other_agent, below)] == ["", "", ""]
    assert len(contents(service)) == 4


def test_a_deleted_memory_is_no_duplicate(clock: FixedClock) -> None:
    service = service_with(clock, DuplicatePolicy.SKIP)
    first = service.create(CreateMemory(content=DARK)).unwrap()
    service.delete(first.memory.id).unwrap()
    again = service.create(CreateMemory(content=DARK_AGAIN)).unwrap()
    assert again.memory.id != first.memory.id and again.on_duplicate == ""


@pytest.mark.parametrize(
    ("policy", "stored", "answers"),
    [
        ("keep", [DARK, DARK_AGAIN, TEA], ["", "kept", ""]),
        ("skip", [DARK, TEA], ["", "skipped", ""]),
        ("update", [DARK_AGAIN, TEA], ["", "updated", ""]),
    ],
)
def test_a_batch_applies_the_policy_per_item_duplicates_within_it_too(
    clock: FixedClock, policy: str, stored: list[str], answers: list[str]
) -> None:
    service = service_with(clock)
    batch = tuple(CreateMemory(content=text, on_duplicate=policy) for text in (DARK, DARK_AGAIN, TEA))
    views = service.create_many(batch).unwrap()
    assert [view.on_duplicate for view in views] == answers
    assert contents(service) == sorted(stored)
    if policy != "keep":  # the duplicate's answer is the batch's first memory, as the batch left it
        assert views[1].memory.id == views[0].memory.id
        assert views[1].memory.content == (DARK_AGAIN if policy == "update" else DARK)


def test_a_batch_updating_a_stored_memory_is_one_unit_with_the_new_ones(clock: FixedClock) -> None:
    service = service_with(clock, DuplicatePolicy.UPDATE)
    first = service.create(CreateMemory(content=DARK)).unwrap()
    views = service.create_many((CreateMemory(content=TEA), CreateMemory(content=DARK_AGAIN))).unwrap()
    assert views[1].memory.id == first.memory.id and views[1].on_duplicate == "updated"
    assert contents(service) == sorted([DARK_AGAIN, TEA])


def test_without_a_threshold_nothing_is_a_duplicate(clock: FixedClock) -> None:
    service = service_with(clock, DuplicatePolicy.SKIP, threshold=None)
    service.create(CreateMemory(content=DARK)).unwrap()
    again = service.create(CreateMemory(content=DARK)).unwrap()
    assert again.on_duplicate == "" and len(contents(service)) == 2


@pytest.mark.parametrize("bad", ["merge", "", "KEEP!"])
def test_an_unknown_policy_is_invalid_input_naming_the_three(clock: FixedClock, bad: str) -> None:
    service = service_with(clock)
    error = service.create(CreateMemory(content=DARK, on_duplicate=bad)).failure()
    assert error.code is ErrorCode.INVALID_INPUT
    assert all(word in error.message for word in ("keep", "skip", "update"))
    assert contents(service) == []


def test_find_duplicates_names_the_memories_a_create_of_its_text_would_find(clock: FixedClock) -> None:
    service = service_with(clock)
    first = service.create(CreateMemory(content=DARK, path="preferences/theme")).unwrap()
    second = service.create(CreateMemory(content=DARK_AGAIN)).unwrap()
    service.create(CreateMemory(content=LIGHT)).unwrap()
    service.create(CreateMemory(content=DARK_AGAIN, namespace=("user", "b"))).unwrap()  # another namespace
    found = dispatch(service, FindDuplicates(ref="preferences/theme")).unwrap()
    assert [(d.id, round(d.similarity, 2)) for d in found] == [(second.memory.id, 0.96)]
    back = dispatch(service, FindDuplicates(ref=second.memory.id)).unwrap()
    assert [(d.id, d.path) for d in back] == [(first.memory.id, "preferences/theme")]


def test_a_namespace_crowded_by_copies_below_it_still_finds_its_own_duplicate(clock: FixedClock) -> None:
    service = service_with(clock, DuplicatePolicy.SKIP)
    below = tuple(CreateMemory(content=DARK, namespace=("team", f"u{n}")) for n in range(12))
    service.create_many(below).unwrap()  # more near-copies than one query reads, all in namespaces below
    mine = service.create(CreateMemory(content=DARK_AGAIN, namespace=("team",))).unwrap()
    skipped = service.create(CreateMemory(content=DARK, namespace=("team",))).unwrap()
    assert (skipped.memory.id, skipped.on_duplicate) == (mine.memory.id, "skipped")


def test_an_expired_memory_is_no_duplicate(clock: FixedClock) -> None:
    """A memory expired when the new one is made is never named, skipped to or updated (issue 41's scope rule)."""
    service = service_with(clock, DuplicatePolicy.SKIP)
    expiring = service.create(CreateMemory(content=DARK, expires_at=clock.now() + timedelta(hours=1))).unwrap()
    clock.advance(hours=2)
    again = service.create(CreateMemory(content=DARK_AGAIN)).unwrap()
    assert again.memory.id != expiring.memory.id and again.duplicates == () and again.on_duplicate == ""
    live = service.create(CreateMemory(content=DARK)).unwrap()
    assert live.memory.id == again.memory.id and live.on_duplicate == "skipped"


def test_nearest_stops_deepening_once_the_answer_is_among_what_it_found(clock: FixedClock) -> None:
    """A scope crowded by near-copies of its own: the first query already holds the MOST_NAMED most similar that
    count, so no deeper one is asked; copies that do not count (another namespace) still send it deeper."""
    now = clock.now()
    copies = [
        Memory(id=f"00000000-0000-4000-8000-{n:012}", content=DARK, created_at=now, updated_at=now, namespace=("team",))
        for n in range(600)
    ]
    asked: list[int] = []

    def query(limit: int) -> Success[list[tuple[Memory, float]]]:
        asked.append(limit)
        return Success([(memory, 0.99 - n * 1e-4) for n, memory in enumerate(copies[:limit])])

    found = nearest(query, THRESHOLD, counts=lambda memory: True).unwrap()
    assert asked == [NEIGHBOURS] and len(found) == NEIGHBOURS
    asked.clear()
    counted = {copies[n].id for n in range(100, 100 + MOST_NAMED)}  # only deeper copies count: it must go on
    found = nearest(query, THRESHOLD, counts=lambda memory: memory.id in counted).unwrap()
    assert asked == [NEIGHBOURS, NEIGHBOURS * 4, NEIGHBOURS * 16] and counted <= {m.id for m, _ in found}
    asked.clear()
    nearest(query, THRESHOLD).unwrap()  # without `counts`: as deep as the threshold lets it (MAX_NEIGHBOURS)
    assert asked == [NEIGHBOURS, NEIGHBOURS * 4, NEIGHBOURS * 16, NEIGHBOURS * 64, MAX_NEIGHBOURS]
