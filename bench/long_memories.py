"""Measures what long memories' parts cost (issue 28) and prints JSON: the brute-force ranking of a store's parts
(SqlitePartVectors.nearest) by how many parts it holds, the lookup a write of short memories pays, and embedding a
1,500-word note with and without its parts.

python bench/long_memories.py [--rounds 20] [--embed-rounds 5]
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

from agent_memory.adapters.onnx_embedder import OnnxEmbedder
from agent_memory.adapters.sqlite_parts import SqlitePartVectors

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.test_long_memories import FACT, note

DIMENSION = 384


def median_ms(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 3)


def unit(chosen: random.Random) -> list[float]:
    vector = [chosen.gauss(0, 1) for _ in range(DIMENSION)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--embed-rounds", type=int, default=5, help="rounds of each parts scheme, taking turns")
    args = parser.parse_args()
    chosen = random.Random(1)
    query = unit(chosen)
    report: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as folder:
        parts = SqlitePartVectors(Path(folder) / "parts.sqlite3")
        nearest: dict[int, float] = {}
        held = 0
        for total in (0, 170, 1_700, 17_000):  # 0, 10, 100, 1,000 notes of 1,500 words (17 parts each)
            while held < total:
                parts.put("default", {f"m{held // 17}-{k}": [unit(chosen)] for k in range(17)}).value_or(None)
                held += 17
            nearest[total] = median_ms(lambda: parts.nearest("default", query, 40), args.rounds)
        report["nearest_ms_by_parts"] = nearest
        shorts = {f"short-{i}": [] for i in range(100)}
        report["put_100_short_memories_ms"] = median_ms(lambda: parts.put("default", shorts), args.rounds)
    embedder = OnnxEmbedder()
    text = note(FACT)
    embedder.embed_documents([text])  # load the model
    report["note_words"] = len(text.split())
    report["note_parts"] = len(embedder.embed_parts([text]).value_or([[]])[0])
    report["embed_note_first_window_ms"] = median_ms(lambda: embedder.embed_documents([text]), 3)
    report["embed_note_parts_ms"] = median_ms(lambda: embedder.embed_parts([text]), 3)
    # issue 48: the parts of scheme 1 (128-token windows after the first) beside scheme 2's (those and every
    # sentence), each with the first window, as a create embeds them: taking turns, so load falls on both alike
    assert embedder._loaded is not None
    windows = embedder._loaded.windows.later_windows([text])[0]
    report["note_parts_scheme_1"] = len(windows)
    old: list[float] = []
    new: list[float] = []
    for _ in range(args.embed_rounds):
        old.append(median_ms(lambda: (embedder.embed_documents([text]), embedder.embed_documents(windows)), 1))
        new.append(median_ms(lambda: (embedder.embed_documents([text]), embedder.embed_parts([text])), 1))
    report["create_embedding_ms_scheme_1"] = round(statistics.median(old), 1)
    report["create_embedding_ms_scheme_2"] = round(statistics.median(new), 1)
    report["scheme_2_over_1"] = round(statistics.median(new) / statistics.median(old), 2)
    report["parts_of_100_short_texts_ms"] = median_ms(lambda: embedder.embed_parts(["a short note"] * 100), 5)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
