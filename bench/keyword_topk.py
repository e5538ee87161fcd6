"""The keyword side's own cost, side by side: today's SQLite FTS5 index against top-k BM25 libraries (issue 47).

    python bench/keyword_topk.py [--sizes 10000,100000] [--repeat 3] [--limit 50] [--engines fts5,tantivy,bm25s]
                                 [--hybrid-sizes 10000]

Each engine indexes the same texts (bench/perf.py's corpus: LoCoMo turns, cycled with a numbered suffix) with the
same threads (perf.py's fill: namespace user/u{i % 20}, project p{i % 10}), then answers the same questions (perf.py's
five and the dev file's first 45) for their best `--limit` hits (the hybrid search's DEPTH), unfiltered and under
perf.py's filter (namespace "user", project "p3": a thread prefix every memory holds and a scope a tenth of them
holds). Reports the first search after the writes (where Tantivy commits them), p50/p95 per engine, size and
filter, and how many of FTS5's hits each engine finds too (overlap@10 of the unfiltered ranking). bm25s has no
filters and no incremental writes: it is measured unfiltered only. `--hybrid-sizes`: the whole hybrid filtered
search on embedded Chroma with today's FTS5 index injected and with the default (Tantivy), beside the floor.
Prints JSON; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf import DATA, QUERIES, corpus, percentile

from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.domain.context import keyword_entry
from agent_memory.domain.model import Memory
from agent_memory.domain.search.tokens import query_terms

Search = Callable[[str, bool], list[str]]


def questions() -> list[str]:
    asked = list(QUERIES)
    for conversation in json.loads(DATA.read_text(encoding="utf-8")):
        asked.extend(str(qa["question"]) for qa in conversation["qa"])
    return asked[:50]


def entries(texts: list[str]) -> list[Any]:
    now = datetime.now(UTC)
    return [
        keyword_entry(
            Memory(
                id=str(uuid.uuid4()),
                content=t,
                created_at=now,
                updated_at=now,
                project=f"p{i % 10}",
                namespace=("user", f"u{i % 20}"),
            )
        )
        for i, t in enumerate(texts)
    ]


def fts5(folder: Path, indexed: list[Any], limit: int) -> Search:
    index = SqliteKeywordIndex(folder / "keywords.sqlite3")
    for start in range(0, len(indexed), 1000):
        index.upsert("default", indexed[start : start + 1000]).unwrap()
    scope = (None, None, "p3", None, None)

    def search(query: str, filtered: bool) -> list[str]:
        if filtered:
            hits = index.search("default", query, limit, thread_prefix="user", scope=scope).unwrap()
        else:
            hits = index.search("default", query, limit).unwrap()
        return [memory_id for memory_id, _ in hits]

    return search


def tantivy_engine(folder: Path, indexed: list[Any], limit: int) -> Search:
    from agent_memory.adapters.tantivy_keywords import TantivyKeywordIndex

    index = TantivyKeywordIndex(folder / "keywords.sqlite3")
    for start in range(0, len(indexed), 1000):
        index.upsert("default", indexed[start : start + 1000]).unwrap()
    scope = (None, None, "p3", None, None)

    def search(query: str, filtered: bool) -> list[str]:
        if filtered:
            hits = index.search("default", query, limit, thread_prefix="user", scope=scope).unwrap()
        else:
            hits = index.search("default", query, limit).unwrap()
        return [memory_id for memory_id, _ in hits]

    return search


def bm25s_engine(folder: Path, indexed: list[Any], limit: int) -> Search:
    import bm25s  # type: ignore[import-not-found]

    ids = [e.id for e in indexed]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([e.text for e in indexed], stopwords="en", show_progress=False), show_progress=False)

    def search(query: str, filtered: bool) -> list[str]:
        terms = " ".join(query_terms(query))
        if not terms:
            return []
        found, _ = retriever.retrieve(bm25s.tokenize([terms], show_progress=False), k=limit, show_progress=False)
        return [ids[int(i)] for i in found[0]]

    return search


def hybrid_rows(size: int, repeat: int) -> list[dict[str, Any]]:
    """The whole hybrid search (embedded Chroma, perf.py's fill, questions and filter) with each keyword index,
    beside the floor (query embedding + numpy brute force over the same vectors), the two services taking turns."""
    from perf import fill_store, service_for

    from agent_memory.domain.commands import SearchMemories
    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.settings import load_settings

    texts = corpus(size)
    services: dict[str, Any] = {}
    stores: dict[str, Any] = {}
    homes = {name: tempfile.mkdtemp(prefix=f"topk-{name}-") for name in ("fts5", "tantivy")}
    for name, home in homes.items():
        if name == "fts5":
            settings = load_settings({"data_dir": home, "backend": "chroma"}, {"HOME": home}).unwrap()
            keywords = SqliteKeywordIndex(Path(home) / "chroma-keywords.sqlite3")
            services[name] = build_service(settings, keywords=keywords).unwrap()
        else:
            services[name] = service_for("chroma", home)
        stores[name], vectors = fill_store(services[name], texts)
    scope: dict[str, Any] = {"project": "p3", "namespace": ("user",)}
    times: dict[str, list[float]] = {name: [] for name in services}
    embed_ms, brute_ms = [], []
    for name, service in services.items():  # past the searches that build the mirror and bring Tantivy up to date
        for searches in range(500):
            service.search(SearchMemories(query=QUERIES[searches % 5], **scope)).unwrap()
            if stores[name].session.mirrors:
                break
    for _ in range(repeat):
        for query in QUERIES:
            for name, service in services.items():
                started = time.perf_counter()
                service.search(SearchMemories(query=query, **scope)).unwrap()
                times[name].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            q = services["tantivy"].embedder.embed_query(query).unwrap()
            embed_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            scores = vectors @ np.array(q, dtype=np.float32)
            np.argpartition(-scores, 10)[:10]
            brute_ms.append((time.perf_counter() - started) * 1000)
    floor = statistics.median(embed_ms) + statistics.median(brute_ms)
    for home in homes.values():
        shutil.rmtree(home, ignore_errors=True)
    return [
        {
            "hybrid_filtered_with": name,
            "memories": size,
            "ms_p50": round(statistics.median(spent), 2),
            "ms_p95": round(percentile(spent, 0.95), 2),
            "floor_ms": round(floor, 2),
            "ratio_to_floor": round(statistics.median(spent) / floor, 2),
        }
        for name, spent in times.items()
    ]


ENGINES: dict[str, Callable[[Path, list[Any], int], Search]] = {
    "fts5": fts5,
    "tantivy": tantivy_engine,
    "bm25s": bm25s_engine,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--engines", default="fts5,tantivy,bm25s")
    parser.add_argument("--hybrid-sizes", default="", help="sizes at which to time the whole hybrid search too")
    args = parser.parse_args()
    asked = questions()
    report: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "rows": []}
    for size in (int(s) for s in args.sizes.split(",") if s):
        indexed = entries(corpus(size))
        reference: dict[str, list[str]] = {}
        for name in args.engines.split(","):
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                search = ENGINES[name](Path(folder), indexed, args.limit)
                build_s = time.perf_counter() - started
                print(f"{name} {size}: indexed in {build_s:.1f} s", file=sys.stderr)
                row: dict[str, Any] = {"engine": name, "memories": size, "index_s": round(build_s, 1)}
                started = time.perf_counter()
                search(asked[0], False)  # the first search: Tantivy's catches up with the writes before it
                row["first_search_ms"] = round((time.perf_counter() - started) * 1000, 1)
                for filtered in (False, True) if name != "bm25s" else (False,):
                    search(asked[0], filtered)  # warm
                    times: list[float] = []
                    for _ in range(args.repeat):
                        for query in asked:
                            started = time.perf_counter()
                            search(query, filtered)
                            times.append((time.perf_counter() - started) * 1000)
                    key = "filtered" if filtered else "unfiltered"
                    row[f"{key}_ms_p50"] = round(statistics.median(times), 3)
                    row[f"{key}_ms_p95"] = round(percentile(times, 0.95), 3)
                tops = {query: search(query, False)[:10] for query in asked}
                if name == "fts5":
                    reference = tops
                elif reference:
                    shared = [len(set(tops[q]) & set(reference[q])) / max(1, len(reference[q])) for q in asked]
                    row["overlap_at_10_with_fts5"] = round(statistics.mean(shared), 3)
                report["rows"].append(row)
                print(json.dumps(row), file=sys.stderr)
    for size in (int(s) for s in args.hybrid_sizes.split(",") if s):
        for row in hybrid_rows(size, args.repeat):
            report["rows"].append(row)
            print(json.dumps(row), file=sys.stderr)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
