"""What a stage of hybrid search (keyword feedback, the second-stage ranker, the keyword side's deeper reach
under filters, or the keyword index's scope narrowing) costs a warm search, A/B in one process.

    python bench/feedback_latency.py [--stage feedback|rerank|reach|scope] [--size 10000] [--queries 100] [--rounds 3]

The store is bench/perf.py's (LoCoMo turns saved without a thread, so feedback runs on every search).
Each question is searched with the stage on and off back to back, alternating which goes first, so the
load of a shared machine weighs on both alike; the floor (query embedding + numpy brute-force cosine
over the same vectors) is timed in the same loop. Filters as bench/perf.py's filtered search. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf import DATA, corpus, fill_store, service_for

from agent_memory.domain import feedback, reranking, searching
from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.ports import KeywordScope, keyword_scope

SCOPE = {"project": "p3", "namespace": ("user",)}


def no_scope(where: MemoryFilter) -> KeywordScope | None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("feedback", "rerank", "reach", "scope"), default="feedback")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    questions = [qa["question"] for c in json.loads(DATA.read_text(encoding="utf-8")) for qa in c["qa"]]
    questions = questions[:: max(1, len(questions) // args.queries)][: args.queries]
    times: dict[str, list[float]] = {"on": [], "off": [], "embed": [], "brute": []}
    with tempfile.TemporaryDirectory() as home:
        service = service_for("chroma", home)
        _, vectors = fill_store(service, corpus(args.size))
        for question in questions[:30]:  # warm: the mirror, the page cache, the model
            service.search(SearchMemories(query=question, **SCOPE)).unwrap()
        for round_ in range(args.rounds):
            for number, question in enumerate(questions):
                order = ("on", "off") if (number + round_) % 2 == 0 else ("off", "on")
                for side in order:
                    if args.stage == "feedback":
                        feedback.FEEDBACK_MEMORIES = 5 if side == "on" else 0
                    elif args.stage == "rerank":
                        reranking.ENABLED = side == "on"
                    elif args.stage == "reach":  # off: the keyword index is asked DEPTH deep once, as before
                        searching.FILTERED_REACH = 16 if side == "on" else 1
                    else:  # off: the index ranks the whole namespace, the search drops other projects' hits
                        searching.keyword_scope = keyword_scope if side == "on" else no_scope
                    started = time.perf_counter()
                    service.search(SearchMemories(query=question, **SCOPE)).unwrap()
                    times[side].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                q = np.array(service.embedder.embed_query(question).unwrap(), dtype=np.float32)
                times["embed"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                np.argpartition(-(vectors @ q), 10)[:10]
                times["brute"].append((time.perf_counter() - started) * 1000)
    floor = statistics.median(times["embed"]) + statistics.median(times["brute"])
    extra = [on - off for on, off in zip(times["on"], times["off"], strict=True)]
    report = {
        "memories": args.size,
        "searches_per_side": len(times["on"]),
        "floor_ms": round(floor, 2),
        "query_embedding_ms_p50": round(statistics.median(times["embed"]), 2),
        "brute_force_ms_p50": round(statistics.median(times["brute"]), 3),
        "stage": args.stage,
        f"hybrid_filtered_{args.stage}_on_ms_p50": round(statistics.median(times["on"]), 2),
        f"hybrid_filtered_{args.stage}_off_ms_p50": round(statistics.median(times["off"]), 2),
        "on_ratio_to_floor": round(statistics.median(times["on"]) / floor, 2),
        "off_ratio_to_floor": round(statistics.median(times["off"]) / floor, 2),
        "paired_extra_ms_p50": round(statistics.median(extra), 2),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
