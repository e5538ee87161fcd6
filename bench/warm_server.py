"""Warm search in a process that keeps its storage open (like the memory server) while the mirror builds in the background.

    python bench/warm_server.py [--sizes 20000,100000] [--after-s 60] [--out FILE]

For each size: fills an embedded Chroma store as bench/perf.py does (real embeddings of 2,000 LoCoMo turns,
reused with noise past that, written through the adapter with the keyword index beside it), closes it, then
opens it again as a fresh server would, calls `catalog.keep_warm()` and at once issues hybrid searches one
after another (alternately unscoped and scoped to a project and namespace) until `--after-s` seconds after the
mirror is installed. Reports p50/p95/p99/max of every search, of those answered before the mirror was ready
and after, the build's duration, and the query-embedding floor measured in the same process. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf import QUERIES, corpus, fill_store, percentile, service_for

from agent_memory.adapters.chroma.session import close_embedded_sessions
from agent_memory.domain.commands import SearchMemories


def fill(home: str, n: int) -> None:
    """n memories with realistic texts and near-real vectors, written through the adapter (as bench/perf.py)."""
    fill_store(service_for("chroma", home), corpus(n))


def summary(times: list[float]) -> dict[str, Any]:
    if not times:
        return {"searches": 0}
    return {
        "searches": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(percentile(times, 0.95), 1),
        "p99_ms": round(percentile(times, 0.99), 1),
        "max_ms": round(max(times), 1),
    }


def bench_warm(n: int, after_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        started = time.perf_counter()
        fill(home, n)
        close_embedded_sessions()  # what follows sees the store as a newly started server does
        fill_s = time.perf_counter() - started
        service = service_for("chroma", home)
        embed_ms: list[float] = []
        for _ in range(5):
            for query in QUERIES:  # loads the model, then the floor: embedding the query alone
                began = time.perf_counter()
                service.embedder.embed_query(query).unwrap()
                embed_ms.append((time.perf_counter() - began) * 1000)
        store = service.catalog.open("default", create=False).unwrap()
        searches: list[tuple[float, bool]] = []  # (ms, answered with the mirror installed)
        warm_from = time.perf_counter()
        service.catalog.keep_warm()
        ready_at: float | None = None
        while ready_at is None or time.perf_counter() - ready_at < after_s:
            i = len(searches)
            scope: dict[str, Any] = {"project": "p3", "namespace": ("user",)} if i % 2 else {}
            mirrored = bool(store.session.mirrors)
            began = time.perf_counter()
            service.search(SearchMemories(query=QUERIES[i % len(QUERIES)], mode="hybrid", **scope)).unwrap()
            searches.append(((time.perf_counter() - began) * 1000, mirrored))
            if ready_at is None and store.session.mirrors:
                ready_at = time.perf_counter()
            if ready_at is None and time.perf_counter() - warm_from > 1800:
                raise RuntimeError("no mirror after 30 minutes")
        assert ready_at is not None
        everything = [ms for ms, _ in searches]
        floor = statistics.median(embed_ms[5:])
        all_searches = summary(everything)
        return {
            "memories": n,
            "fill_s": round(fill_s, 1),
            "build_s_until_installed": round(ready_at - warm_from, 2),
            "searches_before_ready": sum(1 for _, mirrored in searches if not mirrored),
            "query_embedding_ms_p50": round(floor, 2),
            "all": all_searches,
            "before_ready": summary([ms for ms, mirrored in searches if not mirrored]),
            "after_ready": summary([ms for ms, mirrored in searches if mirrored]),
            "p99_over_p50": round(all_searches["p99_ms"] / all_searches["p50_ms"], 2),
            "p50_over_floor": round(all_searches["p50_ms"] / floor, 2),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--after-s", type=float, default=60.0, help="seconds of searches after the mirror is ready")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"date": datetime.now(UTC).date().isoformat(), "cpus": os.cpu_count(), "runs": []}
    for size in (int(s) for s in args.sizes.split(",")):
        report["runs"].append(bench_warm(size, args.after_s))
        print(f"warm {size} done", file=sys.stderr)
    text = json.dumps(report, indent=1)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
