"""What a stage of hybrid search (the second-stage ranker, the keyword side's deeper reach under filters, the
keyword index's scope narrowing, or reading the keyword hits a tag filter rejects) costs a warm search, A/B in
one process.

    python bench/feedback_latency.py [--stage rerank|reach|scope|tags] [--size 10000] [--queries 100]
        [--rounds 3] [--share 0.03] [--no-mirror] [--oracle]

The store is bench/perf.py's (LoCoMo turns saved without a thread). (Named for its first stage, keyword
feedback, which the product dropped on 2026-11-27: bench/research/JOURNAL.md.)
Each question is searched with the stage on and off back to back, alternating which goes first, so the
load of a shared machine weighs on both alike; the floor (query embedding + numpy brute-force cosine
over the same vectors) is timed in the same loop. Filters as bench/perf.py's filtered search, except for
`--stage tags`: there a `--share` of the memories carry the tag "rare" (the rest "common") and each search
asks for that tag under the namespace ("user",), which the keyword index does not narrow; on: the search as
it is (the store says which keyword hits pass, `VectorStore.passing`, and only those are read), off: every
hit is read and checked in the domain, as before `passing` (with `--oracle`, off is instead the store's
`get` handed only the hits that pass, which the bench knows: the least the keyword side could read).
The records read per search are counted on both sides. `--no-mirror` keeps embedded Chroma from
mirroring the store in process, so every read goes to Chroma (a one-shot CLI search). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from attrs import evolve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf import DATA, corpus, fill_store, service_for

from agent_memory.adapters.chroma.store import ChromaVectorStore
from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.search import searching
from agent_memory.domain.thread_keys import KeywordScope, keyword_scope

SCOPE = {"project": "p3", "namespace": ("user",)}
TAGGED = {"tags": ["rare"], "namespace": ("user",)}


def no_scope(where: MemoryFilter) -> KeywordScope | None:
    return None


def never(where: MemoryFilter, reach: Any) -> bool:
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("rerank", "reach", "scope", "tags"), default="rerank")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--share", type=float, default=0.03, help="--stage tags: the share of memories tagged rare")
    parser.add_argument("--no-mirror", action="store_true", help="embedded Chroma answers every read itself")
    parser.add_argument("--oracle", action="store_true", help="--stage tags: off reads only the hits that pass")
    args = parser.parse_args()
    questions = [qa["question"] for c in json.loads(DATA.read_text(encoding="utf-8")) for qa in c["qa"]]
    questions = questions[:: max(1, len(questions) // args.queries)][: args.queries]
    times: dict[str, list[float]] = {"on": [], "off": [], "embed": [], "brute": []}
    every = max(1, round(1 / args.share))
    filters = TAGGED if args.stage == "tags" else SCOPE
    reads = {"on": 0, "off": 0}
    get = ChromaVectorStore.get
    sifts = searching.sifts
    with tempfile.TemporaryDirectory() as home:
        service = service_for("chroma", home)
        tagged = args.stage == "tags"
        store, vectors = fill_store(
            service, corpus(args.size), lambda i: (("rare",) if i % every == 0 else ("common",)) if tagged else ()
        )
        if args.no_mirror:
            store.mirror_limit = 0
            store.session.mirrors.clear()
        rare = {m.id for m in store.scan(MemoryFilter(tags=("rare",))).unwrap()}

        def counted(side: str, only_rare: bool) -> Any:
            def reading(self: ChromaVectorStore, ids: Sequence[str]) -> Any:
                asked = [i for i in ids if i in rare] if only_rare else list(ids)
                reads[side] += len(asked)
                return get(self, asked)

            return reading

        first_stage = evolve(service, policy=evolve(service.policy, rerank=False))  # --stage rerank's off side
        for question in questions[:30]:  # warm: the mirror, the page cache, the model
            service.search(SearchMemories(query=question, **filters)).unwrap()
        for round_ in range(args.rounds):
            for number, question in enumerate(questions):
                results: dict[str, list[tuple[str, float]]] = {}
                order = ("on", "off") if (number + round_) % 2 == 0 else ("off", "on")
                for side in order:
                    searcher = service
                    if args.stage == "rerank":
                        searcher = service if side == "on" else first_stage
                    elif args.stage == "reach":  # off: the keyword index is asked DEPTH deep once, as before
                        searching.FILTERED_REACH = 16 if side == "on" else 1
                    elif args.stage == "scope":  # off: the index ranks the whole namespace, the search drops the rest
                        searching.keyword_scope = keyword_scope if side == "on" else no_scope
                    else:  # off: every keyword hit is read (or, --oracle, only those that pass)
                        searching.sifts = sifts if side == "on" or args.oracle else never
                        ChromaVectorStore.get = counted(side, args.oracle and side == "off")  # type: ignore[method-assign]
                    started = time.perf_counter()
                    found = searcher.search(SearchMemories(query=question, **filters)).unwrap()
                    times[side].append((time.perf_counter() - started) * 1000)
                    if args.stage == "tags":
                        ChromaVectorStore.get = get  # type: ignore[method-assign]
                        searching.sifts = sifts
                        results[side] = [(h.memory.id, h.score) for h in found.results]
                if args.stage == "tags" and results["on"] != results["off"]:
                    raise SystemExit(f"the two sides ranked {question!r} differently")
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
        "stage": args.stage + (" (oracle)" if args.oracle else ""),
        f"hybrid_filtered_{args.stage}_on_ms_p50": round(statistics.median(times["on"]), 2),
        f"hybrid_filtered_{args.stage}_off_ms_p50": round(statistics.median(times["off"]), 2),
        "on_ratio_to_floor": round(statistics.median(times["on"]) / floor, 2),
        "off_ratio_to_floor": round(statistics.median(times["off"]) / floor, 2),
        "paired_extra_ms_p50": round(statistics.median(extra), 2),
        "mirrored": bool(store.session.mirrors),
    }
    if args.stage == "tags":
        report |= {
            "tagged_share": round(len(rare) / args.size, 4),
            "records_read_per_search_on": round(reads["on"] / len(times["on"]), 1),
            "records_read_per_search_off": round(reads["off"] / len(times["off"]), 1),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
