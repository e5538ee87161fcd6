"""Measures the matched part a search hit shows (issue 48) and prints JSON: for 50 alike ~700-word shipping logs, how
many the default hybrid (and its first stage alone) finds in the top 10 by its own last sentence and how many of those
show that sentence as their matched part, and what showing parts costs a search of ten such hits, cold (spans not
kept yet) and warm, as medians and ratios to the same search without it, measured in turn in one run.

PYTHONPATH=. python bench/matched_parts.py [--rounds 3] [--output bench/results/matched-parts-DATE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
from returns.result import Success

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.search import searching
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_embedder
from tests.e2e.test_long_memories import GOODS, PLACES, opened, settings_for, shipping_note

LASTS = [
    f"In the end the shipment of {goods} reached {place} {days} days late."
    for (place, goods), days in zip(((p, g) for p in PLACES for g in GOODS), range(3, 53), strict=True)
]


def found_by_last(service: MemoryService, ids: list[str]) -> dict[str, int]:
    """How many notes are in the top 10 for their last sentence, and how many of those show it as matched part."""
    found = shown = 0
    for memory_id, last in zip(ids, LASTS, strict=True):
        hits = service.search(SearchMemories(query=last, limit=10, mode="hybrid")).unwrap().results
        hit = next((hit for hit in hits if hit.memory.id == memory_id), None)
        found += hit is not None
        shown += hit is not None and hit.part is not None and hit.part.text == last
    return {"found_in_top_10": found, "of": len(ids), "matched_part_is_the_last_sentence": shown}


def cost(service: MemoryService, embedder: Any, rounds: int, *, cold: bool) -> dict[str, float]:
    shown = searching.Searching._parts_shown
    times: dict[str, list[float]] = {"with": [], "without": []}
    try:
        for _ in range(rounds):
            for label in ("with", "without", "without", "with"):
                searching.Searching._parts_shown = (  # type: ignore[method-assign]
                    shown if label == "with" else (lambda _self, _plan, _vector, found: Success(found))
                )
                for query in LASTS[:20]:
                    if cold:
                        embedder._token_windows().unwrap()._spans.clear()
                    start = time.perf_counter()
                    service.search(SearchMemories(query=query, limit=10)).unwrap()
                    times[label].append((time.perf_counter() - start) * 1000)
    finally:
        searching.Searching._parts_shown = shown  # type: ignore[method-assign]
    with_parts, without = statistics.median(times["with"]), statistics.median(times["without"])
    return {
        "with_ms": round(with_parts, 2),
        "without_ms": round(without, 2),
        "ratio": round(with_parts / without, 3),
        "searches": len(times["with"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    embedder = build_embedder(settings_for(tmp / "unused", "chroma")).unwrap()
    with opened(tmp / "data", "chroma", embedder) as service:
        notes = [shipping_note(last, seed=100 + n) for n, last in enumerate(LASTS)]
        ids = [view.memory.id for view in service.create_many([CreateMemory(content=t) for t in notes]).unwrap()]
        first_stage = attrs.evolve(service, policy=attrs.evolve(service.policy, rerank=False))
        report = {
            "hybrid": found_by_last(service, ids),
            "hybrid_first_stage": found_by_last(first_stage, ids),
            "cost_cold": cost(service, embedder, args.rounds, cold=True),
            "cost_warm": cost(service, embedder, args.rounds, cold=False),
        }
    text = json.dumps(report, indent=1)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
