"""The second stage's own time per hybrid search, beside another version of it, on the same candidates (issue 47).

    git show REV:domain/search/reranking.py > OLD.py
    python bench/rerank_cost.py --old OLD.py [--size 10000] [--queries 200] [--rounds 3]

Fills an embedded Chroma store as bench/perf.py does, runs hybrid searches (each of --queries questions drawn from
the stored texts, unfiltered and filtered, plus perf's five), keeps the candidates each search handed the reranker,
then reranks every one of them with both versions: whether the answers are the same bit for bit, and the median
milliseconds per search of the old one, the new one with its per-text word cache cleared before each search, and
the new one with the words already read (the three taken in turn on each search). Prints JSON; compare within one run (the machine is shared).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perf
from perf import corpus, fill_store

import agent_memory.domain.search.searching as searching
from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.search import reranking


def interleaved_ms(candidates: list[Any], old: Callable[[Any], Any], new: Callable[[Any], Any]) -> dict[str, float]:
    """Median ms per search of each way, the three taken in turn on each search's candidates (load hits all alike)."""
    times: dict[str, list[float]] = {"old_ms": [], "new_words_unread_ms": [], "new_words_read_ms": []}
    for found in candidates:
        for name, rerank in (("old_ms", old), ("new_words_unread_ms", new), ("new_words_read_ms", new)):
            if name == "new_words_unread_ms":
                reranking._kept_words.cache_clear()
            started = time.perf_counter()
            rerank(found)
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: round(statistics.median(values), 3) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True, help="another version of domain/search/reranking.py")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("old_reranking", args.old)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)

    captured: list[Any] = []
    new_rerank = reranking.rerank

    def kept(found: Any) -> Any:
        captured.append(found)
        return new_rerank(found)

    searching.rerank = kept  # type: ignore[attr-defined]
    texts = corpus(args.size)
    rng = random.Random(5)
    queries = [" ".join(t.split()[: rng.randint(3, 9)]) for t in rng.sample(texts, args.queries)] + perf.QUERIES
    with tempfile.TemporaryDirectory() as home:
        service = perf.service_for("chroma", home)
        fill_store(service, texts)
        for query in queries:
            for scope in ({}, {"project": "p3", "namespace": ("user",)}):
                service.search(SearchMemories(query=query, mode="hybrid", **scope)).unwrap()
    searching.rerank = new_rerank  # type: ignore[attr-defined]
    report: dict[str, Any] = {
        "searches": len(captured),
        "candidates_p50": statistics.median(len(found.first) for found in captured),
        "answers_identical": sum(1 for found in captured if old.rerank(found) == new_rerank(found)),
        "rounds": [],
    }
    for _ in range(args.rounds):
        report["rounds"].append(interleaved_ms(captured, old.rerank, new_rerank))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
