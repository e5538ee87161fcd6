"""What embedding a batch a slice at a time (for its progress bar) costs against one call, and prints JSON.

python bench/progress_slices.py [--count 1024] [--rounds 3] [--slices 64 256]

Batch create and reindex embed 64 memories at a time (domain/progress.EMBED_SLICE) so that the bar moves; the
embedder sorts each call's texts by length into batches of 16, so a smaller slice pads a little more. Texts are
LoCoMo's questions and long turns, shuffled; CPU seconds of this process (they barely move when others load the
CPU), the settings taking turns within each round.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence

from bench.embedder import DEFAULT_DATA, load_texts, timed_load


def cpu_seconds(embed: object, texts: Sequence[str], slice_size: int | None, by_length: bool = False) -> float:
    start = time.process_time()
    if by_length:  # what domain/progress.embedded does: slices of texts of like length
        texts = sorted(texts, key=len)
    size = slice_size or len(texts)
    for begin in range(0, len(texts), size):
        embed.embed_documents(texts[begin : begin + size]).unwrap()  # type: ignore[attr-defined]
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slices", type=int, nargs="+", default=[64, 256])
    args = parser.parse_args()
    questions, turns = load_texts(DEFAULT_DATA)
    mixed = [*questions, *turns]
    random.Random(7).shuffle(mixed)
    texts = mixed[: args.count]
    embedder, _ = timed_load()
    settings: dict[str, tuple[int | None, bool]] = {"one call": (None, False)}
    for n in args.slices:
        settings |= {f"slices of {n}": (n, False), f"slices of {n}, by length": (n, True)}
    seen: dict[str, list[float]] = {label: [] for label in settings}
    for _round in range(args.rounds):
        for label, (size, by_length) in settings.items():
            seen[label].append(cpu_seconds(embedder, texts, size, by_length))
    base = statistics.median(seen["one call"])
    report = {
        label: {"cpu_s_median": round(statistics.median(s), 2), "vs_one_call": round(statistics.median(s) / base, 3)}
        for label, s in seen.items()
    }
    print(json.dumps({"texts": len(texts), "rounds": args.rounds, "settings": report}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
