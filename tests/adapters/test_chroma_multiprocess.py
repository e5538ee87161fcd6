"""Embedded Chroma shared by several processes: each sees the others' writes and never erases them.

The other process is this module run as a script (`python -m tests.adapters.test_chroma_multiprocess …`),
using the adapter directly, as a `memory` CLI call does beside a long-lived MCP server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import attrs
import filelock
import pytest

import agent_memory.adapters.chroma.session as chroma_store
from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.session import GENERATION_FILE, LOCK_FILE
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.paths import CategoryPath
from tests.contract.vector_store_contract import DIM, MODEL, failed_with, ok, sample

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = MemoryFilter(include_deleted=True)


def embedded(path: Path) -> ChromaCatalog:
    return ChromaCatalog(path=path, embedder_name=MODEL, dimension=DIM)


def other_process(*args: str) -> str:
    """Run one command of `main` below in a new process; its standard output."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.adapters.test_chroma_multiprocess", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def generation(path: Path) -> int:
    return int((path / GENERATION_FILE).read_text())


def test_a_long_lived_catalog_sees_another_process_s_writes_without_reopening(tmp_path: Path) -> None:
    catalog = embedded(tmp_path)
    store = ok(catalog.open("default", create=True))
    categories = ok(catalog.categories("default"))
    mine, theirs = sample(5, seed=1), sample(5, seed=2)
    ok(store.add([m for m, _ in mine], [v for _, v in mine]))
    assert ok(store.count()) == 5  # the client has read the collection before the other process writes

    other_process("add", str(tmp_path), "2", "5")
    other_process("category", str(tmp_path), "projects/alpha", "written elsewhere")

    assert ok(store.count()) == 10
    assert ok(store.get([m.id for m, _ in theirs])) == [m for m, _ in theirs]
    assert {m.id for m in ok(store.scan(EVERYTHING))} == {m.id for m, _ in mine + theirs}
    probe_memory, probe = theirs[0]
    (best, similarity), *_ = ok(store.query(probe, EVERYTHING, 1))
    assert best == probe_memory and similarity == pytest.approx(1.0, abs=1e-5)  # the vector index too
    assert ok(categories.describe_all()) == {"projects/alpha": "written elsewhere"}


def test_a_mirrored_store_sees_its_own_writes_and_drops_its_mirror_on_another_process_s(tmp_path: Path) -> None:
    catalog = attrs.evolve(embedded(tmp_path), mirror_eagerly=True)
    store = ok(catalog.open("default", create=True))
    mine, theirs, later = sample(5, seed=1), sample(5, seed=2), sample(5, seed=3)
    ok(store.add([m for m, _ in mine], [v for _, v in mine]))
    renamed = MemoryFilter(include_deleted=True, agent="renamed")
    assert ok(store.query(mine[0][1], renamed, 3)) == []  # builds the mirror and its mask for this agent
    mirror = catalog.session.mirrors[store.collection.id]
    assert len(mirror) == 5

    ok(store.add([m for m, _ in later], [v for _, v in later]))  # applied to the mirror, not re-read
    ok(store.update_metadata([attrs.evolve(mine[0][0], agent="renamed")]))
    ok(store.remove([mine[1][0].id]))
    assert catalog.session.mirrors[store.collection.id] is mirror and len(mirror) == 9
    (best, _), *_ = ok(store.query(later[2][1], EVERYTHING, 1))
    assert best == later[2][0]
    assert [m.agent for m in ok(store.get([mine[0][0].id]))] == ["renamed"]
    assert [m.id for m, _ in ok(store.query(mine[0][1], renamed, 3))] == [mine[0][0].id]
    assert mine[1][0].id not in {m.id for m, _ in ok(store.query(mine[1][1], EVERYTHING, 20))}

    other_process("add", str(tmp_path), "2", "5")
    (best, similarity), *_ = ok(store.query(theirs[0][1], EVERYTHING, 1))
    assert best == theirs[0][0] and similarity == pytest.approx(1.0, abs=1e-5)
    assert catalog.session.mirrors[store.collection.id] is not mirror  # read again from disk
    assert len(catalog.session.mirrors[store.collection.id]) == 14


def test_a_store_is_mirrored_once_chroma_s_searches_cost_as_much_as_reading_it(tmp_path: Path) -> None:
    catalog = embedded(tmp_path)
    store = ok(catalog.open("default", create=True))
    pairs = sample(20, seed=4)
    ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    catalog.session.build_s_per_record = 1e9  # reading the store would cost more than any number of searches
    for memory, vector in pairs[:5]:
        (best, _), *_ = ok(store.query(vector, EVERYTHING, 1))
        assert best == memory
    assert catalog.session.mirrors == {}
    assert catalog.session.search_seconds[store.collection.id] > 0
    catalog.session.build_s_per_record = 0.0  # now the searches so far have cost more than a build
    (best, _), *_ = ok(store.query(pairs[7][1], EVERYTHING, 1))
    assert best == pairs[7][0] and len(catalog.session.mirrors[store.collection.id]) == 20
    assert catalog.session.build_s_per_record > 0  # learnt from that build


def test_a_write_after_another_process_s_writes_keeps_them(tmp_path: Path) -> None:
    catalog = embedded(tmp_path)
    store = ok(catalog.open("default", create=True))
    first, theirs, later = sample(6, seed=11), sample(6, seed=12), sample(6, seed=13)
    ok(store.add([m for m, _ in first], [v for _, v in first]))
    assert ok(store.count()) == 6

    touched = first[0][0]
    other_process("add", str(tmp_path), "12", "6")
    other_process("set-agent", str(tmp_path), touched.id, "theirs")

    ok(store.add([m for m, _ in later], [v for _, v in later]))  # from the long-lived catalog, not reopened
    ok(store.update_metadata([attrs.evolve(first[1][0], agent="mine")]))

    seen = json.loads(other_process("dump", str(tmp_path)))  # what is on disk, read by a fresh process
    expected = {m.id for m, _ in first + theirs + later}
    assert set(seen["agents"]) == expected
    assert set(seen["nearest"]) == expected  # every vector is in the index a fresh process loads
    assert seen["count"] == len(expected)
    assert seen["agents"][touched.id] == "theirs"
    assert seen["agents"][first[1][0].id] == "mine"


def churn(catalog: ChromaCatalog, seed: int, count: int) -> None:
    """Search, add a memory, register a category, rewrite the content of every other memory: one at a time."""
    store = ok(catalog.open("default", create=True))
    categories = ok(catalog.categories("default"))
    for index, (memory, vector) in enumerate(sample(count, seed=seed)):
        ok(store.query(vector, EVERYTHING, 3))  # as `memory add` does, looking for duplicates
        ok(store.add([memory], [vector]))
        ok(categories.put(CategoryPath((f"s{seed}", f"m{index}")), "made by churn"))
        if index % 2:
            ok(store.update_metadata([attrs.evolve(memory, content=memory.content + " updated")]))


def test_writes_at_the_same_time_as_another_process_s_are_all_kept(tmp_path: Path) -> None:
    catalog = embedded(tmp_path)
    ok(ok(catalog.open("default", create=True)).count())
    others = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.adapters.test_chroma_multiprocess", "churn", str(tmp_path), seed, "40"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in ("42", "43")
    ]
    churn(catalog, 41, 40)
    for other in others:
        _, errors = other.communicate(timeout=300)
        assert other.returncode == 0, errors

    seen = json.loads(other_process("dump", str(tmp_path)))
    expected = {
        m.id: m.content + " updated" if index % 2 else m.content
        for seed in (41, 42, 43)
        for index, (m, _) in enumerate(sample(40, seed=seed))
    }
    assert seen["contents"] == expected
    assert sorted(seen["nearest"]) == sorted(expected)
    assert seen["count"] == len(expected)


def test_a_store_handle_follows_a_rebuild_by_another_process(tmp_path: Path) -> None:
    store = ok(embedded(tmp_path).open("default", create=True))
    old = sample(4, seed=21)
    ok(store.add([m for m, _ in old], [v for _, v in old]))

    other_process("rebuild", str(tmp_path), "22", "3", "other-model")

    new = sample(3, seed=22)
    assert ok(store.embedding_model()) == "other-model"
    assert {m.id for m in ok(store.scan(EVERYTHING))} == {m.id for m, _ in new}
    ok(store.add([old[0][0]], [old[0][1]]))  # writes go to the new collection
    assert ok(store.count()) == 4


def test_a_single_process_keeps_its_client_and_counts_its_writes(tmp_path: Path) -> None:
    catalog = embedded(tmp_path)
    store = ok(catalog.open("default", create=True))
    pairs = sample(3, seed=31)
    ok(store.add([m for m, _ in pairs[:1]], [v for _, v in pairs[:1]]))
    client, before = catalog.session._client, generation(tmp_path)
    assert client is not None and (tmp_path / LOCK_FILE).exists()

    ok(store.add([m for m, _ in pairs[1:]], [v for _, v in pairs[1:]]))
    ok(store.get([pairs[0][0].id]))
    ok(store.scan(EVERYTHING))
    assert generation(tmp_path) == before + 1  # one write, reads do not count
    assert catalog.session._client is client  # its own writes never make a process reload
    assert ok(attrs.evolve(catalog).open("default", create=False)).session is catalog.session


def test_a_lock_held_too_long_is_backend_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.adapters.test_chroma_multiprocess", "hold", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(chroma_store, "LOCK_TIMEOUT_S", 0.2)
        failure = failed_with(embedded(tmp_path).open("default", create=True), ErrorCode.BACKEND_UNAVAILABLE)
        assert "another process" in failure.message and str(tmp_path / LOCK_FILE) in failure.message
    finally:
        holder.kill()
        holder.wait(timeout=30)
    monkeypatch.setattr(chroma_store, "LOCK_TIMEOUT_S", 60.0)
    ok(embedded(tmp_path).open("default", create=True))  # the lock dies with its process


# --- the other process ------------------------------------------------------------------------


def main(command: str, path: str, *args: str) -> None:
    catalog = embedded(Path(path))
    if command == "add":
        pairs = sample(int(args[1]), seed=int(args[0]))
        store = ok(catalog.open("default", create=True))
        ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
    elif command == "churn":
        churn(catalog, int(args[0]), int(args[1]))
    elif command == "set-agent":
        store = ok(catalog.open("default", create=False))
        (memory,) = ok(store.get([args[0]]))
        ok(store.update_metadata([attrs.evolve(memory, agent=args[1])]))
    elif command == "category":
        ok(ok(catalog.categories("default")).put(CategoryPath(tuple(args[0].split("/"))), args[1]))
    elif command == "rebuild":
        pairs = sample(int(args[1]), seed=int(args[0]))
        store = ok(catalog.open("default", create=False))
        ok(store.rebuild([m for m, _ in pairs], [v for _, v in pairs], args[2]))
    elif command == "dump":
        store = ok(catalog.open("default", create=False))
        memories = ok(store.scan(EVERYTHING))
        stored = store.collection.get(ids=[m.id for m in memories], include=["embeddings"])
        vectors = dict(zip(stored["ids"], [list(v) for v in stored["embeddings"]], strict=True))
        nearest = [hit.id for m in memories for hit, _ in ok(store.query(vectors[m.id], EVERYTHING, 1))]
        agents = {m.id: m.agent for m in memories}
        contents = {m.id: m.content for m in memories}
        print(json.dumps({"agents": agents, "contents": contents, "nearest": nearest, "count": ok(store.count())}))
    elif command == "hold":  # until killed
        Path(path).mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(Path(path) / LOCK_FILE)):
            print("held", flush=True)
            time.sleep(300)
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *sys.argv[3:])
