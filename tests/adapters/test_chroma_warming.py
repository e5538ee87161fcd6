"""Mirrors built in the background (adapters.chroma.warming): searches never wait, raced writes are never lost."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

import agent_memory.adapters.chroma.warming as warming
from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.session import close_embedded_sessions
from agent_memory.adapters.chroma.store import ChromaVectorStore
from agent_memory.adapters.chroma.warming import Warmer
from agent_memory.domain.filters import MemoryFilter
from tests.adapters.test_chroma_multiprocess import other_process
from tests.contract.vector_store_contract import DIM, MODEL, ok, sample

EVERYTHING = MemoryFilter(include_deleted=True)
BOUND_S = 120  # the longest a test waits for the background thread (a bound, never a timing assertion)


class Gate:
    """The warmer's `paused` hook: counts the pages it reads and, when shut before page `at`, holds it there."""

    def __init__(self) -> None:
        self.pages = 0
        self.at: int | None = None
        self.reached = threading.Event()
        self.opened = threading.Event()
        self.opened.set()

    def shut_at(self, page: int) -> None:
        self.at, self.pages = page, 0
        self.reached.clear()
        self.opened.clear()

    def __call__(self) -> None:
        self.pages += 1
        if self.at is not None and self.pages >= self.at and not self.opened.is_set():
            self.reached.set()
            assert self.opened.wait(BOUND_S)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(warming, "WARM_PAGE", 4)
    yield
    close_embedded_sessions()


def warm_catalog(path: Path, gate: Gate) -> tuple[ChromaCatalog, ChromaVectorStore]:
    catalog = ChromaCatalog(path=path, embedder_name=MODEL, dimension=DIM, warmer=Warmer(paused=gate))
    return catalog, ok(catalog.open("default", create=True))


def settled(catalog: ChromaCatalog) -> None:
    assert catalog.warmer.wait_idle(BOUND_S)


def test_searches_during_the_build_are_answered_by_chroma_and_the_mirror_is_installed_after(tmp_path: Path) -> None:
    gate = Gate()
    catalog, store = warm_catalog(tmp_path, gate)
    pairs = sample(20, seed=21)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    gate.shut_at(2)
    catalog.keep_warm()
    assert gate.reached.wait(BOUND_S)  # the build has read one page and waits

    for memory, vector in pairs[:5]:
        (best, _), *_ = ok(store.query(vector, EVERYTHING, 1))
        assert best == memory
    assert catalog.session.mirrors == {}  # answered by Chroma: no search built the mirror

    gate.opened.set()
    settled(catalog)
    mirror = catalog.session.mirrors[store.collection.id]
    assert len(mirror) == 20
    (best, _), *_ = ok(store.query(pairs[9][1], EVERYTHING, 1))
    assert best == pairs[9][0] and catalog.session.mirrors[store.collection.id] is mirror


def test_this_process_s_writes_during_the_build_are_in_the_mirror_installed(tmp_path: Path) -> None:
    gate = Gate()
    catalog, store = warm_catalog(tmp_path, gate)
    pairs, later = sample(20, seed=22), sample(3, seed=23)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    gate.shut_at(3)
    catalog.keep_warm()
    assert gate.reached.wait(BOUND_S)  # two pages (the first 8 memories) read

    renamed = attrs.evolve(pairs[0][0], agent="renamed")  # a memory the build has read already
    ok(store.update_metadata([renamed]))
    ok(store.add([m for m, _ in later], [v for _, v in later]))
    gate.opened.set()
    settled(catalog)

    mirror = catalog.session.mirrors[store.collection.id]
    assert len(mirror) == 23
    assert mirror.get([renamed.id]) == [renamed]
    hits = ok(store.query(pairs[0][1], MemoryFilter(include_deleted=True, agent="renamed"), 3))
    assert [m.id for m, _ in hits] == [renamed.id]
    (best, _), *_ = ok(store.query(later[1][1], EVERYTHING, 1))
    assert best == later[1][0]


def test_a_removal_during_the_build_makes_it_read_again_and_nothing_is_missed(tmp_path: Path) -> None:
    gate = Gate()
    catalog, store = warm_catalog(tmp_path, gate)
    pairs = sample(20, seed=24)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    gate.shut_at(3)
    catalog.keep_warm()
    assert gate.reached.wait(BOUND_S)

    gone = [pairs[0][0].id, pairs[1][0].id]  # read already: the records after them move back two places
    ok(store.remove(gone))
    gate.opened.set()
    settled(catalog)

    mirror = catalog.session.mirrors[store.collection.id]
    kept = [m for m, _ in pairs[2:]]
    assert len(mirror) == 18 and mirror.get([m.id for m in kept]) == kept
    assert mirror.get(gone) == []


def test_another_process_s_write_drops_the_mirror_and_it_is_built_again_in_the_background(tmp_path: Path) -> None:
    gate = Gate()
    catalog, store = warm_catalog(tmp_path, gate)
    pairs = sample(20, seed=1)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    catalog.keep_warm()
    settled(catalog)
    first = catalog.session.mirrors[store.collection.id]

    other_process("add", str(tmp_path), "2", "5")
    theirs = sample(5, seed=2)
    gate.shut_at(1)
    (best, _), *_ = ok(store.query(theirs[3][1], EVERYTHING, 1))  # sees the write; asks for a new mirror
    assert best == theirs[3][0]
    assert gate.reached.wait(BOUND_S)
    assert catalog.session.mirrors == {}  # that search did not build it

    gate.opened.set()
    settled(catalog)
    again = catalog.session.mirrors[store.collection.id]
    assert again is not first and len(again) == 25


def test_a_catalog_not_kept_warm_never_builds_in_the_background(tmp_path: Path) -> None:
    gate = Gate()
    _catalog, store = warm_catalog(tmp_path, gate)
    pairs = sample(8, seed=25)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    for memory, vector in pairs[:3]:
        (best, _), *_ = ok(store.query(vector, EVERYTHING, 1))
        assert best == memory
    assert gate.pages == 0  # (the ski-rental rule may still build one inside a search: not tested here)
