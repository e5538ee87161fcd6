"""A mirror's file (adapters.chroma.mirror_file): restored only at its own generation, whole, and never when damaged."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from agent_memory.adapters.chroma import mirror_file
from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.session import close_embedded_sessions
from agent_memory.adapters.chroma.vector_mirror import VectorMirror
from agent_memory.adapters.chroma.warming import Warmer
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import CategoryPath
from tests.adapters.test_chroma_multiprocess import other_process
from tests.contract.vector_store_contract import DIM, MODEL, NOW, ok, sample

BOUND_S = 120  # the longest a test waits for the background thread (a bound, never a timing assertion)
FILTERS = [
    MemoryFilter(include_deleted=True),
    MemoryFilter(),
    MemoryFilter(alive_at=NOW),
    MemoryFilter(project="p1"),
    MemoryFilter(namespace=("user",), global_=True),
    MemoryFilter(tags=("a",)),
    MemoryFilter(path_prefix=CategoryPath(("notes",))),
]


@pytest.fixture(autouse=True)
def closed() -> Iterator[None]:
    yield
    close_embedded_sessions()


def mirror_of(count: int, seed: int) -> tuple[VectorMirror, list[list[float]]]:
    pairs = sample(count, seed=seed)
    return VectorMirror.of(DIM, [m for m, _ in pairs], [v for _, v in pairs]), [v for _, v in pairs]


def same(hits: list[tuple[Memory, float]], expected: list[tuple[Memory, float]]) -> bool:
    """The same memories in the same order with the same scores (to float32 rounding: the matrices differ in shape)."""
    return [m for m, _ in hits] == [m for m, _ in expected] and [s for _, s in hits] == pytest.approx(
        [s for _, s in expected], abs=1e-6
    )


def test_a_restored_mirror_answers_every_filter_as_the_one_saved(tmp_path: Path) -> None:
    original, vectors = mirror_of(40, seed=31)
    original.remove([original.columns().ids[3]])  # a dead row is not saved
    mirror_file.save(tmp_path, "c1", 7, DIM, original.columns())

    restored = mirror_file.load(tmp_path, "c1", 7, DIM)
    assert len(restored) == len(original) == 39
    for where in FILTERS:
        for vector in vectors[:6]:
            assert same(restored.query(vector, where, 10), original.query(vector, where, 10))
        assert restored.passing(original.columns().ids, where) == original.passing(original.columns().ids, where)
    ids = original.columns().ids
    assert restored.get(ids) == original.get(ids)
    assert restored.similarities(vectors[0], ids[:5]) == pytest.approx(original.similarities(vectors[0], ids[:5]))


def test_a_restored_mirror_takes_writes_like_any_other(tmp_path: Path) -> None:
    original, _ = mirror_of(30, seed=32)
    mirror_file.save(tmp_path, "c1", 1, DIM, original.columns())
    restored = mirror_file.load(tmp_path, "c1", 1, DIM)
    more = sample(70, seed=33)  # enough to grow the matrix and, after the removal, to compact it
    restored.upsert([m for m, _ in more], [v for _, v in more])
    ids = original.columns().ids
    restored.remove(ids)
    assert len(restored) == 70 and restored.get(ids) == []
    (best, _), *_ = restored.query(more[41][1], MemoryFilter(include_deleted=True), 1)
    assert best == more[41][0]


def test_the_file_is_replaced_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    first, _ = mirror_of(10, seed=34)
    second, _ = mirror_of(12, seed=35)
    mirror_file.save(tmp_path, "c1", 1, DIM, first.columns())
    target = mirror_file.save(tmp_path, "c1", 2, DIM, second.columns())
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]
    assert len(mirror_file.load(tmp_path, "c1", 2, DIM)) == 12
    with pytest.raises(mirror_file.Unusable, match="generation 2"):
        mirror_file.load(tmp_path, "c1", 1, DIM)  # the old generation is gone with the old file


@pytest.mark.parametrize("cut", [0.0, 0.1, 0.5, 0.999])
def test_a_truncated_file_is_not_used(tmp_path: Path, cut: float) -> None:
    mirror, _ = mirror_of(20, seed=36)
    target = mirror_file.save(tmp_path, "c1", 3, DIM, mirror.columns())
    data = target.read_bytes()
    target.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(mirror_file.Unusable):
        mirror_file.load(tmp_path, "c1", 3, DIM)


@pytest.mark.parametrize("at", [0.05, 0.5, 0.95])
def test_a_damaged_file_is_not_used(tmp_path: Path, at: float) -> None:
    mirror, _ = mirror_of(20, seed=37)
    target = mirror_file.save(tmp_path, "c1", 3, DIM, mirror.columns())
    data = bytearray(target.read_bytes())
    data[int(len(data) * at)] ^= 0x5A
    target.write_bytes(bytes(data))
    with pytest.raises(mirror_file.Unusable):
        mirror_file.load(tmp_path, "c1", 3, DIM)


def test_a_file_of_another_collection_or_dimension_is_not_used(tmp_path: Path) -> None:
    mirror, _ = mirror_of(5, seed=38)
    mirror_file.save(tmp_path, "c1", 3, DIM, mirror.columns())
    mirror_file.path_of(tmp_path, "c1").rename(mirror_file.path_of(tmp_path, "c2"))
    with pytest.raises(mirror_file.Unusable, match="collection"):
        mirror_file.load(tmp_path, "c2", 3, DIM)
    mirror_file.save(tmp_path, "c1", 3, DIM, mirror.columns())
    with pytest.raises(mirror_file.Unusable, match="dimension"):
        mirror_file.load(tmp_path, "c1", 3, DIM + 1)


# --- the warmer with the file, over embedded Chroma


def warmed(path: Path) -> tuple[ChromaCatalog, VectorMirror]:
    catalog = ChromaCatalog(path=path, embedder_name=MODEL, dimension=DIM, warmer=Warmer())
    store = ok(catalog.open("default", create=True))
    catalog.keep_warm()
    assert catalog.warmer.wait_idle(BOUND_S)
    return catalog, catalog.session.mirrors[store.collection.id]


def restarted(path: Path) -> tuple[ChromaCatalog, VectorMirror]:
    """A new process, as far as the mirror goes: every session closed, a new catalog kept warm."""
    close_embedded_sessions()
    return warmed(path)


def test_a_new_process_restores_the_mirror_from_its_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    catalog = ChromaCatalog(path=tmp_path, embedder_name=MODEL, dimension=DIM)
    pairs = sample(30, seed=39)
    ok(ok(catalog.open("default", create=True)).add([m for m, _ in pairs], [v for _, v in pairs]))
    _, built = warmed(tmp_path)
    files = list((tmp_path / mirror_file.FOLDER).iterdir())
    assert len(files) == 1

    caplog.set_level(logging.INFO, logger="agent_memory.adapters.chroma.warming")
    _, restored = restarted(tmp_path)
    assert "from its file" in caplog.text
    assert restored is not built and len(restored) == 30
    for where in FILTERS:
        assert same(restored.query(pairs[4][1], where, 8), built.query(pairs[4][1], where, 8))


def test_another_process_s_write_makes_the_file_stale_and_it_is_read_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = ChromaCatalog(path=tmp_path, embedder_name=MODEL, dimension=DIM)
    pairs = sample(20, seed=1)
    ok(ok(catalog.open("default", create=True)).add([m for m, _ in pairs], [v for _, v in pairs]))
    warmed(tmp_path)
    close_embedded_sessions()

    other_process("add", str(tmp_path), "2", "5")  # the file now lags the data by one generation
    caplog.set_level(logging.INFO, logger="agent_memory.adapters.chroma.warming")
    _, mirror = restarted(tmp_path)
    assert "not used: a mirror file of generation" in caplog.text
    theirs = sample(5, seed=2)
    assert len(mirror) == 25
    (best, _), *_ = mirror.query(theirs[3][1], MemoryFilter(include_deleted=True), 1)
    assert best == theirs[3][0]

    caplog.clear()
    _, again = restarted(tmp_path)  # the build wrote the file at the new generation
    assert "from its file" in caplog.text and len(again) == 25


def test_a_damaged_file_is_ignored_and_written_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    catalog = ChromaCatalog(path=tmp_path, embedder_name=MODEL, dimension=DIM)
    pairs = sample(20, seed=40)
    ok(ok(catalog.open("default", create=True)).add([m for m, _ in pairs], [v for _, v in pairs]))
    warmed(tmp_path)
    (target,) = (tmp_path / mirror_file.FOLDER).iterdir()
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))

    caplog.set_level(logging.INFO, logger="agent_memory.adapters.chroma.warming")
    _, mirror = restarted(tmp_path)
    assert "damaged" in caplog.text and len(mirror) == 20
    (best, _), *_ = mirror.query(pairs[7][1], MemoryFilter(include_deleted=True), 1)
    assert best == pairs[7][0]
    assert len(mirror_file.load(tmp_path, target.stem, generation_of(tmp_path), DIM)) == 20


def generation_of(path: Path) -> int:
    return int((path / ".agent-memory.generation").read_text())


def test_this_process_s_writes_are_kept_in_the_file_when_it_closes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = ChromaCatalog(path=tmp_path, embedder_name=MODEL, dimension=DIM)
    pairs, later = sample(20, seed=41), sample(4, seed=42)
    ok(ok(catalog.open("default", create=True)).add([m for m, _ in pairs], [v for _, v in pairs]))
    catalog, _ = warmed(tmp_path)
    store = ok(catalog.open("default", create=False))
    ok(store.add([m for m, _ in later], [v for _, v in later]))
    ok(store.remove([pairs[0][0].id]))
    moved = attrs.evolve(pairs[1][0], agent="moved")
    ok(store.update_metadata([moved]))

    caplog.set_level(logging.INFO, logger="agent_memory.adapters.chroma.warming")
    _, mirror = restarted(tmp_path)  # closing wrote the file at the generation of the last write
    assert "from its file" in caplog.text
    assert len(mirror) == 23 and mirror.get([pairs[0][0].id]) == []
    assert mirror.get([moved.id]) == [moved]
    (best, _), *_ = mirror.query(later[2][1], MemoryFilter(include_deleted=True), 1)
    assert best == later[2][0]
