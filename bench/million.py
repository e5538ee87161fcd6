"""A million memories on embedded Chroma: bulk fill, time to open, warm hybrid search, the floor, RSS, and an
approximate index's recall@10 against exact search (issue 47).

    python bench/million.py --data locomo-dev.json --size 1000000 [--home DIR] [--repeat 3] [--out FILE]
                            [--ann chroma,usearch]

1. The fill: bench/bulk_fill.py in a process of its own (skipped when `--home` holds a filled store; its figures
   are then read from `--fill-figures`). Synthetic texts from the dev file's turns, real embeddings of 2,000 of
   them reused with noise, namespace user/u{i % 20}, project p{i % 10}, written in the product's stored format.
2. Time to open: a fresh process opens the service and answers one hybrid filtered search (project p3, namespace
   user: a tenth of the store), with its peak RSS; twice (the second with the files in the page cache).
3. Warm hybrid filtered p50 / p95 in this process (perf.py's five questions, `--repeat` rounds), as shipped: past
   the mirror's limit (adapters.chroma.mirror_policy.MIRROR_LIMIT) the dense side is Chroma's own HNSW with the
   filter; then with the mirror restored from its file (the limit raised to the store's size), the dense side
   exact in numpy.
4. The floor: query embedding + numpy brute force (top-10) over every vector.
5. Approximate indexes against exact search over the same vectors, unfiltered and with the filter: Chroma's HNSW
   (the store's own collection, the mirror off) and, when `usearch` is installed (a bench-only extra:
   `pip install usearch`), a usearch HNSW built here (its build time printed; the filter by over-fetching).
   recall@10 = the share of exact search's top 10 the index returns.
Prints one JSON object and writes it to `--out`; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bulk_fill import service_at

from agent_memory.adapters.chroma import warming
from agent_memory.adapters.shared.vector_math import row_dots
from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.filters import MemoryFilter

QUERIES = [  # bench/perf.py's five
    "When did Caroline go to the support group?",
    "What does Melanie like to paint?",
    "which programming language does the user like",
    "Where did they travel last summer?",
    "What did the team decide about the deployment?",
]
SCOPE: dict[str, Any] = {"project": "p3", "namespace": ("user",)}
# a fresh process: open the service, one hybrid filtered search; prints seconds to open, ms of the search, peak RSS
FRESH = """
import json, resource, sys, time
started = time.perf_counter()
from agent_memory.domain.commands import SearchMemories
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
home = sys.argv[1]
service = build_service(load_settings({"data_dir": home, "backend": "chroma"}, {"HOME": home}).unwrap()).unwrap()
service.catalog.open("default", create=False).unwrap().count().unwrap()
opened = time.perf_counter() - started
service.search(SearchMemories(query=sys.argv[2], project="p3", namespace=("user",))).unwrap()
answered = time.perf_counter() - started
print(json.dumps({"open_s": round(opened, 2), "first_answer_s": round(answered, 2),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def log(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def kept(out: str, figures: dict[str, Any]) -> None:
    """The figures so far, written at once (a run stopped part-way keeps every phase it finished)."""
    Path(out).write_text(json.dumps(figures, indent=1, default=str) + "\n", encoding="utf-8")


def rss_mib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return -1


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * (len(ordered) - 1) + 0.5))]


def timed_searches(service: Any, repeat: int) -> dict[str, float]:
    service.search(SearchMemories(query=QUERIES[0], **SCOPE)).unwrap()  # warm
    times: list[float] = []
    for _ in range(repeat):
        for query in QUERIES:
            started = time.perf_counter()
            service.search(SearchMemories(query=query, **SCOPE)).unwrap()
            times.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(percentile(times, 0.95), 1)}


def recall(found: list[list[int]], exact: list[np.ndarray]) -> float:
    return round(statistics.mean(len(set(f) & set(e.tolist())) / len(e) for f, e in zip(found, exact, strict=True)), 3)


def usearch_figures(
    matrix: np.ndarray, scope: np.ndarray, queries: np.ndarray, exact: dict[str, list[np.ndarray]]
) -> dict[str, Any]:
    from usearch.index import Index

    started = time.perf_counter()
    index = Index(
        ndim=matrix.shape[1], metric="ip", dtype="f32", connectivity=16, expansion_add=128, expansion_search=64
    )
    index.add(np.arange(len(matrix)), matrix, threads=2)
    built = time.perf_counter() - started
    log(f"usearch built in {built:.0f} s")
    figures: dict[str, Any] = {"build_s": round(built, 1), "connectivity": 16, "expansion_search": 64}
    for name, over in (("unfiltered", 10), ("filtered", 200)):  # the filter keeps a tenth: over-fetch 20x
        times, found = [], []
        for q in queries:
            started = time.perf_counter()
            keys = index.search(q, over).keys
            if name == "filtered":
                keys = keys[scope[keys]]
            times.append((time.perf_counter() - started) * 1000)
            found.append(keys[:10].tolist())
        figures[name] = {"p50_ms": round(statistics.median(times), 2), "recall_at_10": recall(found, exact[name])}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="the dev file (LoCoMo JSON) the texts are drawn from")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--home", help="a data directory bench/bulk_fill.py filled (default: fill a new one)")
    parser.add_argument("--fill-figures", help="bulk_fill.py's JSON output for a --home filled beforehand")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ann", default="chroma,usearch")
    parser.add_argument("--fresh", type=int, default=2, help="fresh processes timed (the first meets a cold cache)")
    parser.add_argument("--skip", default="", help="phases to leave out: shipped (the searches as shipped)")
    parser.add_argument("--out", default="million.json")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    figures: dict[str, Any] = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
    if args.home is None:
        home = tempfile.mkdtemp(prefix="million-")
        log(f"bulk fill of {args.size} into {home}")
        done = subprocess.run(
            [sys.executable, str(here / "bulk_fill.py"), "--data", args.data, "--size", str(args.size), "--home", home],
            capture_output=True,
            text=True,
            check=True,
        )
        figures["fill"] = json.loads(done.stdout)
    else:
        home = args.home
        figures["fill"] = json.loads(Path(args.fill_figures).read_text()) if args.fill_figures else None
    log(f"fill: {figures['fill']}")

    figures["fresh_process"] = []
    for _ in range(args.fresh):
        done = subprocess.run(
            [sys.executable, "-c", FRESH, home, QUERIES[0]], capture_output=True, text=True, check=False
        )
        figures["fresh_process"].append(json.loads(done.stdout) if done.returncode == 0 else done.stderr[-600:])
        log(f"fresh process: {figures['fresh_process'][-1]}")
        kept(args.out, figures)

    service = service_at(home)
    store = service.catalog.open("default", create=False).unwrap()
    size = store.count().unwrap()
    figures["memories"] = size
    figures["mirror_limit"] = store.mirror_limit
    mirrored_as_shipped = size <= store.mirror_limit
    if "shipped" not in args.skip:
        figures["as_shipped"] = timed_searches(service, args.repeat) | {
            "dense_side": "Chroma until the mirror policy mirrors it"
            if mirrored_as_shipped
            else "Chroma's HNSW with the filter",
            "rss_mib": rss_mib(),
        }
        log(f"as shipped: {figures['as_shipped']}")
        kept(args.out, figures)
    store.mirror_limit = max(store.mirror_limit, size)
    started = time.perf_counter()
    mirror = warming.warm(store)
    figures["mirror_ready_s"] = round(time.perf_counter() - started, 1)
    assert mirror is not None, "the store could not be mirrored"
    figures["with_mirror"] = timed_searches(service, args.repeat) | {
        "dense_side": "mirror (exact)",
        "rss_mib": rss_mib(),
    }
    log(f"with the mirror (ready in {figures['mirror_ready_s']} s): {figures['with_mirror']}")
    kept(args.out, figures)

    columns = mirror.columns()
    matrix, ids = columns.matrix, columns.ids
    row_of = {memory_id: row for row, memory_id in enumerate(ids)}
    scope = np.array([k.project == "p3" and k.namespace[:1] == ("user",) for k in columns.keys]) & ~columns.deleted
    embed_ms, brute_ms, queries = [], [], []
    for _ in range(args.repeat):
        for query in QUERIES:
            started = time.perf_counter()
            q = np.array(service.embedder.embed_query(query).unwrap(), dtype=np.float32)
            embed_ms.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            scores = row_dots(matrix, q)
            np.argpartition(-scores, 10)[:10]
            brute_ms.append((time.perf_counter() - started) * 1000)
            queries.append(q)
    queries = queries[: len(QUERIES)]
    floor = statistics.median(embed_ms) + statistics.median(brute_ms)
    figures["floor"] = {
        "query_embedding_ms_p50": round(statistics.median(embed_ms), 2),
        "brute_force_ms_p50": round(statistics.median(brute_ms), 2),
        "floor_ms": round(floor, 2),
    }
    for key in ("as_shipped", "with_mirror"):
        if key in figures:
            figures[key]["ratio_to_floor"] = round(figures[key]["p50_ms"] / floor, 2)
    exact: dict[str, list[np.ndarray]] = {"unfiltered": [], "filtered": []}
    for q in queries:
        scores = row_dots(matrix, q)
        exact["unfiltered"].append(np.argsort(-scores)[:10])
        exact["filtered"].append(np.argsort(-np.where(scope, scores, -np.inf))[:10])
    log(f"floor: {figures['floor']}")
    kept(args.out, figures)

    figures["ann"] = {}
    if "chroma" in args.ann:
        store.mirror_limit = 0
        store.session.mirrors.clear()
        chroma: dict[str, Any] = {}
        for name, where in (("unfiltered", MemoryFilter()), ("filtered", MemoryFilter(**SCOPE))):
            times, found = [], []
            for q in queries:
                started = time.perf_counter()
                hits = store.query(q.tolist(), where, 10).unwrap()
                times.append((time.perf_counter() - started) * 1000)
                found.append([row_of[m.id] for m, _ in hits])
            chroma[name] = {"p50_ms": round(statistics.median(times), 2), "recall_at_10": recall(found, exact[name])}
        figures["ann"]["chroma_hnsw"] = chroma
        log(f"chroma hnsw: {chroma}")
        kept(args.out, figures)
    if "usearch" in args.ann:
        try:
            figures["ann"]["usearch"] = usearch_figures(matrix, scope, np.array(queries), exact)
        except ImportError:
            figures["ann"]["usearch"] = "not installed (pip install usearch)"
        log(f"usearch: {figures['ann']['usearch']}")
    figures["rss_mib_end"] = rss_mib()
    figures["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    figures["load_after"] = os.getloadavg()[0]
    kept(args.out, figures)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
