"""Speed of the product beside references measured in the same run (protocol: shared BENCHMARK.md).

    python bench/perf.py [--backends chroma,files,qdrant] [--sizes 1000,10000] [--repeat 5] [--skip ingest,search,cold]
                         [--embedders minilm,DIR]

Measures: ingest (Python API batch, embedding included, beside the embedder alone); warm search p50/p95
in-process per backend and size, with and without filters, hybrid and semantic, beside query embedding
+ brute-force numpy cosine over the same vectors (and, for Chroma, the first search of the process, the
second one that builds the in-process mirror, and the filtered search with the mirror off); CLI cold
start of `memory get` / `memory search` at 1,000 memories beside `python -c pass` and
`python -c "import chromadb"`, with peak RSS. Prints JSON.

`--embedders` takes the `embedder` setting's values (the shipped `minilm`, or a model directory such as the
fast profile's or nomic's, made by bench/models/model_dir.py); ingest and search run for each in turn in the
same process, so the figures compare on one machine state. The cold start uses the shipped model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.context import keyword_entry
from agent_memory.domain.model import Memory
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
MEMORY = Path(sys.executable).parent / "memory"
QUERIES = [
    "When did Caroline go to the support group?",
    "What does Melanie like to paint?",
    "which programming language does the user like",
    "Where did they travel last summer?",
    "What did the team decide about the deployment?",
]


def corpus(n: int, seed: int = 7) -> list[str]:
    """n realistic memory texts: LoCoMo turns, cycled with a numbered suffix past the file's size."""
    turns: list[str] = []
    for conversation in json.loads(DATA.read_text(encoding="utf-8")):
        for key, value in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(f"{t['speaker']}: {t['text']}" for t in value)
    rng = random.Random(seed)
    return [turns[i % len(turns)] + ("" if i < len(turns) else f" (note {i})") for i in rng.sample(range(n), n)]


def service_for(backend: str, home: str, embedder: str = "minilm") -> Any:
    settings = load_settings({"data_dir": home, "backend": backend, "embedder": embedder}, {"HOME": home}).unwrap()
    return build_service(settings).unwrap()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * (len(ordered) - 1) + 0.5))]


def bench_ingest(backend: str, n: int, repeat: int, embedder: str = "minilm") -> dict[str, Any]:
    """Batches into an existing store (its one-time creation is not per-memory cost), alternating with the
    embedder alone on the same texts; medians of `repeat` rounds."""
    texts = corpus(n)
    with tempfile.TemporaryDirectory() as home:
        service = service_for(backend, home, embedder)
        model = service.embedder
        model.embed_documents(texts[:8]).unwrap()  # load the model outside the timings
        service.create(CreateMemory(content="the store exists before the batch", project="bench")).unwrap()
        embed_s: list[float] = []
        create_s: list[float] = []
        for _ in range(repeat):
            started = time.perf_counter()
            model.embed_documents(texts).unwrap()
            embed_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            service.create_many([CreateMemory(content=t, project="bench") for t in texts]).unwrap()
            create_s.append(time.perf_counter() - started)
    embed_only, full = statistics.median(embed_s), statistics.median(create_s)
    return {
        "backend": backend,
        "embedder": model.name,
        "memories": n,
        "rounds": repeat,
        "embedder_only_per_s": round(n / embed_only, 1),
        "batch_create_per_s": round(n / full, 1),
        "storage_overhead": round(full / embed_only - 1.0, 3),
    }


def fill_store(
    service: Any, texts: list[str], tags: Callable[[int], tuple[str, ...]] = lambda i: ()
) -> tuple[Any, Any]:
    """Write `texts` into the default store through the adapter and the keyword index, with real embeddings of
    the first 2,000 reused with a little noise past that (embedding 100k texts would take an hour); returns the
    store and the vectors written. `tags(i)` gives the i-th memory's tags (none by default)."""
    n = len(texts)
    base = np.array(service.embedder.embed_documents(texts[: min(n, 2000)]).unwrap(), dtype=np.float32)
    rng = np.random.default_rng(3)
    vectors = base[np.arange(n) % len(base)] + rng.normal(0, 0.02, (n, base.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(UTC)
    memories = [
        Memory(
            id=str(uuid.uuid4()),
            content=t,
            created_at=now,
            updated_at=now,
            project=f"p{i % 10}",
            namespace=("user", f"u{i % 20}"),
            tags=tags(i),
        )
        for i, t in enumerate(texts)
    ]
    store = service.catalog.open("default", create=True).unwrap()
    for start in range(0, n, 1000):
        store.add(memories[start : start + 1000], vectors[start : start + 1000].tolist()).unwrap()
        service.keywords.upsert("default", [keyword_entry(m) for m in memories[start : start + 1000]]).unwrap()
    return store, vectors


def bench_search(backend: str, n: int, repeat: int, embedder: str = "minilm") -> dict[str, Any]:
    """Warm in-process search; vectors are real embeddings of a few thousand texts, reused with noise past that."""
    texts = corpus(n)
    with tempfile.TemporaryDirectory() as home:
        service = service_for(backend, home, embedder)
        store, vectors = fill_store(service, texts)
        figures: dict[str, Any] = {"backend": backend, "embedder": service.embedder.name, "memories": n}
        if backend == "chroma":  # a fresh process: Chroma answers until renting it has cost as much as a mirror
            searches, elapsed = 0, 0.0
            while not store.session.mirrors and searches < 500:
                started = time.perf_counter()
                service.search(SearchMemories(query=QUERIES[searches % 5], project="p3", namespace=("user",))).unwrap()
                elapsed = round((time.perf_counter() - started) * 1000, 1)
                figures.setdefault("first_search_ms", elapsed)
                searches += 1
            figures["searches_until_mirrored"] = searches
            figures["search_that_built_the_mirror_ms"] = elapsed
        embed_ms: list[float] = []
        brute_ms: list[float] = []
        for _ in range(repeat):
            for query in QUERIES:
                started = time.perf_counter()
                q = np.array(service.embedder.embed_query(query).unwrap(), dtype=np.float32)
                embed_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                scores = vectors @ q
                np.argpartition(-scores, 10)[:10]
                brute_ms.append((time.perf_counter() - started) * 1000)
        floor = statistics.median(embed_ms) + statistics.median(brute_ms)
        figures["query_embedding_ms_p50"] = round(statistics.median(embed_ms), 2)
        figures["brute_force_ms_p50"] = round(statistics.median(brute_ms), 3)
        for mode in ("hybrid", "semantic"):
            for filtered in (False, True):
                times: list[float] = []
                scope = {"project": "p3", "namespace": ("user",)} if filtered else {}
                service.search(SearchMemories(query=QUERIES[0], mode=mode, **scope)).unwrap()  # warm
                for _ in range(repeat):
                    for query in QUERIES:
                        started = time.perf_counter()
                        service.search(SearchMemories(query=query, mode=mode, **scope)).unwrap()
                        times.append((time.perf_counter() - started) * 1000)
                key = f"{mode}_{'filtered' if filtered else 'unfiltered'}"
                figures[f"{key}_ms_p50"] = round(statistics.median(times), 2)
                figures[f"{key}_ms_p95"] = round(percentile(times, 0.95), 2)
                figures[f"{key}_ratio_to_floor"] = round(statistics.median(times) / floor, 2)
        if backend == "chroma":  # the same searches answered by Chroma's own filtered query, for comparison
            store.mirror_limit = 0
            store.session.mirrors.clear()
            times = []
            for _ in range(repeat):
                for query in QUERIES:
                    started = time.perf_counter()
                    service.search(SearchMemories(query=query, project="p3", namespace=("user",))).unwrap()
                    times.append((time.perf_counter() - started) * 1000)
            figures["hybrid_filtered_without_mirror_ms_p50"] = round(statistics.median(times), 2)
    return figures


# Runs argv[1:] and prints its wall seconds and peak RSS. A child's peak RSS counts what it inherited at fork
# (Linux keeps the high-water mark across exec), so the command is started from this small process rather
# than from the benchmark, whose own resident set is hundreds of MiB. Its floor is this launcher's ~10 MiB.
LAUNCHER = """
import os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(time.perf_counter() - started, usage.ru_maxrss, status)
"""


def run_measured(command: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one process."""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *command], env=env, capture_output=True, text=True, check=True
    )
    elapsed, peak, status = done.stdout.split()
    if int(status) != 0:
        raise RuntimeError(f"{command} exited with {status}")
    return float(elapsed), int(peak)


def bench_cold_start(repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        config = Path(home) / "empty-config.toml"  # MEMORY_CONFIG must name a file that exists
        config.touch()
        env = {**os.environ, "HOME": home, "MEMORY_DATA_DIR": home, "MEMORY_CONFIG": str(config)}
        service = service_for("chroma", home)
        views = service.create_many([CreateMemory(content=t) for t in corpus(1000)]).unwrap()
        del service
        some_id = views[500].memory.id
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import chromadb'": [sys.executable, "-c", "import chromadb"],
            "memory get": [str(MEMORY), "get", some_id],
            "memory search": [str(MEMORY), "search", "what does she like to paint?"],
            "memory status": [str(MEMORY), "status"],
        }
        figures: dict[str, Any] = {"memories": 1000}
        for name, command in commands.items():
            runs = [run_measured(command, env) for _ in range(repeat)]
            figures[name] = {
                "wall_s_median": round(statistics.median(r[0] for r in runs), 3),
                "peak_rss_mib": round(max(r[1] for r in runs) / 1024, 1),
            }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="chroma,files,qdrant")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--ingest", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip", default="", help="comma-separated: ingest,search,cold")
    parser.add_argument("--embedders", default="minilm", help="comma-separated `embedder` settings (model directories)")
    args = parser.parse_args()
    embedders = args.embedders.split(",")
    skip = set(args.skip.split(","))
    report: dict[str, Any] = {"date": datetime.now(UTC).date().isoformat(), "cpus": os.cpu_count()}
    backends = args.backends.split(",")
    if "ingest" not in skip:
        report["ingest"] = [bench_ingest(b, args.ingest, args.repeat, e) for e in embedders for b in backends]
        print("ingest done", file=sys.stderr)
    if "search" not in skip:
        report["search"] = []
        for embedder in embedders:
            for backend in backends:
                for size in (int(s) for s in args.sizes.split(",")):
                    report["search"].append(bench_search(backend, size, args.repeat, embedder))
                    print(f"search {backend} {size} done", file=sys.stderr)
    if "cold" not in skip:
        report["cold_start"] = bench_cold_start(args.repeat)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
