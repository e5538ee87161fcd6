"""Measures what status's check of long memories' parts costs (issue 43) and prints JSON: `memory status` in process
on 2,000 memories of embedded Chroma, with the check and without it (the service without a parts index: status as
before), for three stores: short memories only, memories of about 100 words (every one tokenised, none long), and
100 notes of 1,500 words among short memories (their parts looked up); plus the tokenizer's load in a fresh process.

python bench/status_parts.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from agent_memory.adapters.onnx_embedder import OnnxEmbedder
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.ports import Embedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.test_long_memories import FACT, OBJECTS, SUBJECTS, VERBS, WHEN, WHY, note

TOTAL = 2_000


def medians_ms(works: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Each work's median, the works taking turns in every round (a busy moment of the machine hits both)."""
    times: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(rounds):
        for name, work in works.items():
            start = time.perf_counter()
            work()
            times[name].append((time.perf_counter() - start) * 1000)
    return {name: round(statistics.median(found), 1) for name, found in times.items()}


def sentence(chosen: random.Random) -> str:
    return " ".join(chosen.choice(group) for group in (SUBJECTS, VERBS, OBJECTS, WHEN, WHY)) + "."


def contents(kind: str) -> list[str]:
    chosen = random.Random(3)
    if kind == "short":  # one sentence, about 80 characters: within the byte bound, never tokenised
        return [sentence(chosen) for _ in range(TOTAL)]
    if kind == "medium":  # about 100 words: over the byte bound, so tokenised, and within the window
        return [" ".join(sentence(chosen) for _ in range(7)) for _ in range(TOTAL)]
    longs = [note(FACT, seed=n) for n in range(100)]
    return longs + [sentence(chosen) for _ in range(TOTAL - len(longs))]


def measured(kind: str, embedder: Embedder, rounds: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        settings = load_settings({"data_dir": folder, "backend": "chroma"}, {"HOME": folder}).unwrap()
        service = build_service(settings, embedder=embedder).unwrap()
        texts = contents(kind)
        for start in range(0, len(texts), 200):
            service.create_many([CreateMemory(content=text) for text in texts[start : start + 200]]).unwrap()
        before = attrs.evolve(service, parts=None)  # status without the check, as before issue 43
        status = service.status().unwrap()
        assert status.memory_count == TOTAL and not status.warnings, status
        works = {"status_without_check_ms": before.status, "status_with_check_ms": service.status}
        return dict(medians_ms(works, rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    embedder = OnnxEmbedder()
    report: dict[str, object] = {"memories": TOTAL}
    for kind in ("short", "medium", "long"):
        report[kind] = measured(kind, embedder, args.rounds)
    start = time.perf_counter()
    OnnxEmbedder().needs_parts([note(FACT)]).unwrap()  # a fresh process's first status that meets a long text
    report["tokenizer_load_and_one_note_ms"] = round((time.perf_counter() - start) * 1000, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
