"""The PartVectors contract: one base class of tests that every adapter of long memories' parts subclasses.

A subclass provides a `parts` fixture (a fresh, empty PartVectors) and, when its data outlives the object
(`durable = True`), `reopen`, which opens the same data afresh as a new process would.
"""

from __future__ import annotations

import math
from typing import ClassVar

import pytest

from agent_memory.domain.ports import PartVectors, Vector
from tests.contract.vector_store_contract import ok

STORE = "default"


def unit(*values: float) -> Vector:
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


X, Y, Z = unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)
XY = unit(1, 1, 0)


class PartVectorsContract:
    durable: ClassVar[bool] = True

    def reopen(self, parts: PartVectors) -> PartVectors:
        raise NotImplementedError

    def test_an_empty_index_finds_nothing(self, parts: PartVectors) -> None:
        assert ok(parts.nearest(STORE, X, 5)) == []
        assert ok(parts.similarities(STORE, X, ["a"])) == {}

    def test_each_memory_comes_once_with_its_best_part_best_first(self, parts: PartVectors) -> None:
        ok(parts.put(STORE, {"a": [Y, X], "b": [XY], "c": [Z]}))
        found = ok(parts.nearest(STORE, X, 5))
        assert [i for i, _ in found] == ["a", "b", "c"]
        assert found[0][1] == pytest.approx(1.0, abs=1e-6)
        assert found[1][1] == pytest.approx(math.sqrt(0.5), abs=1e-6)
        assert found[2][1] == pytest.approx(0.0, abs=1e-6)
        assert [i for i, _ in ok(parts.nearest(STORE, X, 2))] == ["a", "b"]

    def test_similarities_give_the_best_part_of_the_given_ids_that_have_parts(self, parts: PartVectors) -> None:
        ok(parts.put(STORE, {"a": [Y, X], "b": [Z]}))
        scores = ok(parts.similarities(STORE, X, ["a", "b", "unknown"]))
        assert scores.keys() == {"a", "b"}
        assert scores["a"] == pytest.approx(1.0, abs=1e-6)
        assert ok(parts.similarities(STORE, X, [])) == {}

    def test_nearest_parts_say_which_part_of_each_given_id_is_nearest(self, parts: PartVectors) -> None:
        """Issue 48: the number of the nearest part (1 for the first vector put) shows which part answered."""
        ok(parts.put(STORE, {"a": [Y, Z, X], "b": [XY, Y], "c": [Z]}))
        nearest = ok(parts.nearest_parts(STORE, X, ["a", "b", "unknown"]))
        assert nearest.keys() == {"a", "b"}
        assert nearest["a"][0] == 3 and nearest["a"][1] == pytest.approx(1.0, abs=1e-6)
        assert nearest["b"][0] == 1 and nearest["b"][1] == pytest.approx(math.sqrt(0.5), abs=1e-6)
        assert ok(parts.nearest_parts(STORE, X, [])) == {} and ok(parts.nearest_parts("other", X, ["a"])) == {}
        ok(parts.put(STORE, {"a": [X, Y]}))
        assert ok(parts.nearest_parts(STORE, Y, ["a"]))["a"][0] == 2

    def test_put_replaces_a_memorys_parts_and_an_empty_list_forgets_them(self, parts: PartVectors) -> None:
        ok(parts.put(STORE, {"a": [X, Y], "b": [Z]}))
        ok(parts.put(STORE, {"a": [Z]}))
        assert ok(parts.similarities(STORE, X, ["a"]))["a"] == pytest.approx(0.0, abs=1e-6)
        ok(parts.put(STORE, {"a": [], "b": [Z]}))
        assert [i for i, _ in ok(parts.nearest(STORE, X, 5))] == ["b"]

    def test_remove_forgets_ids_and_ignores_unknown_ones(self, parts: PartVectors) -> None:
        ok(parts.put(STORE, {"a": [X], "b": [Y]}))
        ok(parts.remove(STORE, ["a", "unknown"]))
        ok(parts.remove(STORE, []))
        assert [i for i, _ in ok(parts.nearest(STORE, X, 5))] == ["b"]

    def test_holding_says_which_ids_have_parts(self, parts: PartVectors) -> None:
        assert ok(parts.holding(STORE, ["a"])) == set()  # nothing written yet: nothing held, no failure
        ok(parts.put(STORE, {"a": [X, Y], "b": [Z], "c": []}))
        ok(parts.put("other", {"d": [X]}))
        assert ok(parts.holding(STORE, ["a", "b", "c", "d", "unknown"])) == {"a", "b"}
        assert ok(parts.holding(STORE, [])) == set()
        ok(parts.remove(STORE, ["a"]))
        assert ok(parts.holding(STORE, ["a", "b"])) == {"b"}

    def test_rebuild_replaces_the_whole_store(self, parts: PartVectors) -> None:
        ok(parts.put(STORE, {"a": [X], "b": [Y]}))
        ok(parts.rebuild(STORE, {"c": [X], "d": []}))
        assert [i for i, _ in ok(parts.nearest(STORE, X, 5))] == ["c"]

    def test_stores_are_separate(self, parts: PartVectors) -> None:
        ok(parts.put(STORE, {"a": [X]}))
        ok(parts.put("other", {"b": [X]}))
        assert [i for i, _ in ok(parts.nearest("other", X, 5))] == ["b"]
        ok(parts.rebuild("other", {}))
        assert [i for i, _ in ok(parts.nearest(STORE, X, 5))] == ["a"]
        assert ok(parts.nearest("never-written", X, 5)) == []

    def test_writes_outlive_the_object(self, parts: PartVectors) -> None:
        if not self.durable:
            pytest.skip("kept in memory only")
        ok(parts.put(STORE, {"a": [X], "b": [Y]}))
        again = self.reopen(parts)
        assert [i for i, _ in ok(again.nearest(STORE, Y, 1))] == ["b"]
        ok(again.remove(STORE, ["b"]))
        assert [i for i, _ in ok(parts.nearest(STORE, Y, 5))] == ["a"]
