"""Toward a million memories on embedded Chroma, step by step, every step's figures written as it ends (issue 47).

    python bench/million.py [--size 1000000] [--step 100000] [--repeat 2] [--out FILE]

Fills one store as bench/perf.py does (LoCoMo turns cycled with a numbered suffix; real embeddings of the first
2,000, reused with a little noise past that; namespace user/u{i % 20}, project p{i % 10}), `--step` memories at a
time, and after each step measures: the fill's own rate; a fresh process's time to open the service and its first
hybrid filtered search, with its peak RSS; then in this process the warm hybrid filtered p50/p95 (perf.py's five
questions and filter) beside the floor (query embedding + numpy brute force over the same vectors); and Chroma's own
HNSW (the mirror off) against exact search: recall@10 and its p50. Each step's row is appended to `--out` (JSON
lines) at once, so a run stopped by a timeout keeps every size it reached. Progress on stderr.
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
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf import QUERIES, corpus, percentile, service_for

from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.context import keyword_entry
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory

FILTER: dict[str, Any] = {"project": "p3", "namespace": ("user",)}
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
started = time.perf_counter()
service.search(SearchMemories(query=sys.argv[2], project="p3", namespace=("user",))).unwrap()
searched = (time.perf_counter() - started) * 1000
print(json.dumps({"open_s": round(opened, 2), "first_search_ms": round(searched, 1),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def rss_mib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return -1


def timed(work: Any) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--step", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", default="million.jsonl")
    args = parser.parse_args()
    texts = corpus(args.size)
    home = tempfile.mkdtemp(prefix="million-")
    service = service_for("chroma", home)
    base = np.array(service.embedder.embed_documents(texts[:2000]).unwrap(), dtype=np.float32)
    rng = np.random.default_rng(3)
    vectors = np.empty((args.size, base.shape[1]), dtype=np.float32)
    store = service.catalog.open("default", create=True).unwrap()
    filled = 0
    row_of: dict[str, int] = {}  # memory id → its row in `vectors`
    while filled < args.size:
        started = time.perf_counter()
        end = min(args.size, filled + args.step)
        for start in range(filled, end, 1000):
            stop = min(end, start + 1000)
            chunk = base[np.arange(start, stop) % len(base)] + rng.normal(0, 0.02, (stop - start, base.shape[1]))
            chunk /= np.linalg.norm(chunk, axis=1, keepdims=True)
            vectors[start:stop] = chunk
            now = datetime.now(UTC)
            memories = [
                Memory(
                    id=str(uuid.uuid4()),
                    content=texts[i],
                    created_at=now,
                    updated_at=now,
                    project=f"p{i % 10}",
                    namespace=("user", f"u{i % 20}"),
                )
                for i in range(start, stop)
            ]
            row_of.update((m.id, i) for i, m in zip(range(start, stop), memories, strict=True))
            store.add(memories, chunk.tolist()).unwrap()
            service.keywords.upsert("default", [keyword_entry(m) for m in memories]).unwrap()
        fill_s = time.perf_counter() - started
        row: dict[str, Any] = {
            "memories": end,
            "fill_step_s": round(fill_s, 1),
            "fill_per_s": round((end - filled) / fill_s),
        }
        filled = end
        fresh = subprocess.run(
            [sys.executable, "-c", FRESH, home, QUERIES[0]], capture_output=True, text=True, check=False, timeout=3600
        )
        row["fresh_process"] = json.loads(fresh.stdout) if fresh.returncode == 0 else fresh.stderr[-400:]
        # the first search of this process after the step: Tantivy commits the step's rows, the mirror catches up
        row["first_search_after_step_ms"] = round(
            timed(lambda: service.search(SearchMemories(query=QUERIES[1], **FILTER)).unwrap()), 1
        )
        for _ in range(3):  # warm: past the searches that build or refresh the mirror
            service.search(SearchMemories(query=QUERIES[2], **FILTER)).unwrap()
        embed_ms, brute_ms, hybrid_ms, exact = [], [], [], {}
        for _ in range(args.repeat):
            for query in QUERIES:
                started = time.perf_counter()
                q = np.array(service.embedder.embed_query(query).unwrap(), dtype=np.float32)
                embed_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                scores = vectors[:filled] @ q
                best = np.argpartition(-scores, 10)[:10]
                brute_ms.append((time.perf_counter() - started) * 1000)
                exact[query] = (q, set(best.tolist()))
                hybrid_ms.append(timed(lambda q=query: service.search(SearchMemories(query=q, **FILTER)).unwrap()))
        floor = statistics.median(embed_ms) + statistics.median(brute_ms)
        row |= {
            "query_embedding_ms_p50": round(statistics.median(embed_ms), 2),
            "brute_force_ms_p50": round(statistics.median(brute_ms), 2),
            "hybrid_filtered_ms_p50": round(statistics.median(hybrid_ms), 2),
            "hybrid_filtered_ms_p95": round(percentile(hybrid_ms, 0.95), 2),
            "hybrid_ratio_to_floor": round(statistics.median(hybrid_ms) / floor, 2),
            "rss_mib": rss_mib(),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        }
        # Chroma's HNSW (the mirror off) against exact search over the same vectors, unfiltered
        mirror_limit, store.mirror_limit = store.mirror_limit, 0
        store.session.mirrors.clear()
        hnsw_ms, recalls = [], []
        for q, best in exact.values():
            started = time.perf_counter()
            hits = store.query(q.tolist(), MemoryFilter(), 10).unwrap()
            hnsw_ms.append((time.perf_counter() - started) * 1000)
            found = {row_of[m.id] for m, _ in hits}
            recalls.append(len(found & best) / 10)
        store.mirror_limit = mirror_limit
        row["chroma_hnsw_ms_p50"] = round(statistics.median(hnsw_ms), 2)
        row["chroma_hnsw_recall_at_10"] = round(statistics.mean(recalls), 3)
        with open(args.out, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
        print(json.dumps(row), file=sys.stderr)
    print(f"home {home} ({os.cpu_count()} cpus)", file=sys.stderr)


if __name__ == "__main__":
    main()
