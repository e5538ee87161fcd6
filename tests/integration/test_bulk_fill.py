"""A store filled by bench/bulk_fill.py (the size benchmarks' fill, issue 47) is one the normal service reads and
writes as its own: the records, the keyword index and the mirror file are all in the product's stored format."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from agent_memory.adapters.chroma import mirror_file
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bulk_fill.py"
SIZE = 2000
WORDS = ["river", "garden", "violin", "market", "winter", "lantern", "harbour", "pepper", "meadow", "copper"]


def bulk_fill_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_bulk_fill", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def texts() -> list[str]:
    """SIZE texts of a small vocabulary; text 7 alone says 'zeppelin', text 11 alone 'saxophone'."""
    made = [f"{WORDS[i % 10]} {WORDS[(i // 10) % 10]} {WORDS[(i // 100) % 10]} number {i}" for i in range(SIZE)]
    made[7] = "The zeppelin hangar by the lake holds an old airship museum"
    made[11] = "Priya practises the saxophone every evening after dinner"
    return made


def test_a_bulk_filled_store_is_searched_counted_and_written_by_the_normal_service(tmp_path: Path) -> None:
    bulk = bulk_fill_module()
    home = str(tmp_path)
    filler = bulk.service_at(home)
    memories, vectors = bulk.synthetic(filler, texts(), real=100)
    figures = bulk.bulk_fill(filler, memories, vectors, batch=700)  # batches of 700: the last one is short
    assert figures["chroma_count"] == SIZE
    ids = [m.id for m in memories]

    service = bulk.service_at(home)  # another process's service, as a door builds it
    status = service.status().unwrap()
    assert (status.memory_count, status.deleted_count, status.problems) == (SIZE, 0, ())

    by_word = service.search(SearchMemories(query="zeppelin", mode="keyword")).unwrap().results
    assert [hit.memory.id for hit in by_word] == [ids[7]]
    assert by_word[0].memory == memories[7]  # every field read back as written
    scoped = service.search(SearchMemories(query="saxophone", mode="keyword", project="p1", namespace=("user",)))
    assert [hit.memory.id for hit in scoped.unwrap().results] == [ids[11]]
    assert not service.search(SearchMemories(query="saxophone", mode="keyword", project="p2")).unwrap().results

    # by meaning: rows 7, 107, 207… share text 7's embedding (plus noise); the nearest is one of them
    meant = service.search(SearchMemories(query="an airship hangar museum", mode="semantic", limit=5)).unwrap()
    assert meant.results and all(ids.index(hit.memory.id) % 100 == 7 for hit in meant.results)
    hybrid = service.search(SearchMemories(query="zeppelin airship", project="p7", namespace=("user", "u7")))
    found = [hit.memory.id for hit in hybrid.unwrap().results]
    assert ids[7] in found and all(ids.index(i) % 100 == 7 and ids.index(i) % 20 == 7 for i in found[:3])

    # the mirror file holds the store at the generation the data directory is at now
    store = service.catalog.open("default", create=False).unwrap()
    store.count().unwrap()
    session = store.session
    restored = mirror_file.load(session.directory, str(store.collection.id), session.generation, 384)
    assert len(restored) == SIZE
    assert restored.get([ids[7]]) == [memories[7]]

    # the normal writes work on it afterwards
    made = service.create(CreateMemory(content="A kestrel nests on the clock tower", project="p1")).unwrap()
    assert [h.memory.id for h in service.search(SearchMemories(query="kestrel", mode="keyword")).unwrap().results] == [
        made.memory.id
    ]
    service.update(UpdateMemory(ref=ids[11], content="Priya now plays the clarinet")).unwrap()
    assert not service.search(SearchMemories(query="saxophone", mode="keyword")).unwrap().results
    clarinet = service.search(SearchMemories(query="clarinet", mode="keyword")).unwrap().results
    assert [hit.memory.id for hit in clarinet] == [ids[11]]
    service.delete(ids[7]).unwrap()
    assert not service.search(SearchMemories(query="zeppelin", mode="keyword")).unwrap().results
    status = service.status().unwrap()
    assert (status.memory_count, status.deleted_count, status.problems) == (SIZE, 1, ())
