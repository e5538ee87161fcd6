"""The in-process mirror answers like the reference filter through growth, rewrites, removals and compaction."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from returns.result import Result, Success

from agent_memory.adapters.chroma.vector_mirror import VectorMirror
from agent_memory.domain.errors import DomainError
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from tests.contract.vector_store_contract import DIM, assert_query_matches, filters_strategy, probes, sample

PAIRS = sample(150, seed=5)  # more than the first allocation (64 rows): the mirror grows twice


@attrs.define
class AsStore:
    """Just enough of a VectorStore for the contract's query check."""

    mirror: VectorMirror

    def query(
        self, embedding: Sequence[float], where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        return Success(self.mirror.query(embedding, where, limit))


def mirror_of(pairs: Sequence[tuple[Memory, list[float]]]) -> VectorMirror:
    return VectorMirror.of(DIM, [m for m, _ in pairs], [v for _, v in pairs])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=filters_strategy(PAIRS))
def test_query_is_the_reference_filter_and_cosine_ranking(where: MemoryFilter) -> None:
    store = AsStore(mirror_of(PAIRS))
    for probe in probes()[:2]:
        assert_query_matches(store, PAIRS, probe, where, 7)
        assert_query_matches(store, PAIRS, probe, where, 200)


def test_rewrites_keep_cached_masks_true() -> None:
    mirror = mirror_of(PAIRS)
    store = AsStore(mirror)
    by_project = MemoryFilter(project="renamed", include_deleted=True)
    assert mirror.query(probes()[0], by_project, 10) == []  # caches the mask of this condition
    changed = [(attrs.evolve(m, project="renamed"), v) for m, v in PAIRS[:30]]
    assert mirror.update([m for m, _ in changed])
    assert_query_matches(store, changed + PAIRS[30:], probes()[0], by_project, 100)
    moved = [(m, probes()[1]) for m, _ in changed[:3]]  # new vectors for known ids
    mirror.upsert([m for m, _ in moved], [v for _, v in moved])
    assert_query_matches(store, moved + changed[3:] + PAIRS[30:], probes()[1], by_project, 5)


def test_removed_rows_never_surface_and_compaction_keeps_the_rest() -> None:
    mirror = mirror_of(PAIRS)
    gone = {m.id for m, _ in PAIRS[:100]}
    mirror.remove(gone)  # more than half: the rows are compacted
    kept = PAIRS[100:]
    assert len(mirror) == len(kept)
    assert mirror.get([m.id for m, _ in PAIRS]) == [m for m, _ in kept]
    for where in (MemoryFilter(include_deleted=True), MemoryFilter(namespace=("user",))):
        assert_query_matches(AsStore(mirror), kept, probes()[2], where, 20)
    mirror.upsert([m for m, _ in PAIRS[:2]], [v for _, v in PAIRS[:2]])
    assert_query_matches(AsStore(mirror), kept + PAIRS[:2], probes()[2], MemoryFilter(include_deleted=True), 60)


def test_update_of_an_unknown_id_changes_nothing_and_says_so() -> None:
    mirror = mirror_of(PAIRS[:3])
    assert not mirror.update([attrs.evolve(PAIRS[0][0], agent="x"), PAIRS[5][0]])
    assert mirror.get([PAIRS[0][0].id]) == [PAIRS[0][0]]


def test_similarities_are_cosines_and_skip_unknown_ids() -> None:
    mirror = mirror_of(PAIRS[:5])
    probe = probes()[0]
    found = mirror.similarities(probe, [m.id for m, _ in PAIRS[:6]])
    assert set(found) == {m.id for m, _ in PAIRS[:5]}
    for memory, vector in PAIRS[:5]:
        expected = sum(a * b for a, b in zip(probe, vector, strict=True))
        assert found[memory.id] == pytest.approx(expected, abs=1e-5)


def test_an_empty_mirror_answers_nothing() -> None:
    mirror = VectorMirror(DIM)
    assert mirror.query(probes()[0], MemoryFilter(), 5) == []
    assert mirror.get(["x"]) == [] and mirror.similarities(probes()[0], ["x"]) == {}
