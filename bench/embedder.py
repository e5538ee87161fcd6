"""Measures the product's ONNX embedder (load, throughput by batching and threads, query latency) and prints JSON.

python bench/embedder.py [--rounds 3] ...                       the shipped MiniLM, batching and threads
python bench/embedder.py --models minilm DIR [DIR ...]          models side by side (the `embedder` setting's
                                                                 values), default batching and threads
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_memory.adapters.model_directory import ModelSpec, read_model_directory, shipped_spec
from agent_memory.adapters.onnx_embedder import DEFAULT_BATCH_SIZE, OnnxMiniLMEmbedder

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
LONG_MIN_WORDS = 35


def load_texts(path: Path) -> tuple[list[str], list[str]]:
    """Short texts (LoCoMo questions, ~14 tokens) and long ones (turns of 35+ words, ~59 tokens)."""
    conversations = json.loads(path.read_text(encoding="utf-8"))
    questions = [qa["question"] for conv in conversations for qa in conv["qa"]]
    turns = [
        f"{turn['speaker']}: {turn['text']}"
        for conv in conversations
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    return questions, [turn for turn in turns if len(turn.split()) >= LONG_MIN_WORDS]


def take(texts: Sequence[str], count: int) -> list[str]:
    """The first `count` texts, cycling if there are fewer."""
    return [texts[i % len(texts)] for i in range(count)]


def mean_tokens(embedder: OnnxMiniLMEmbedder, texts: Sequence[str]) -> float:
    """Average token count after truncation (the embedder's own tokenizer)."""
    model = embedder._model().unwrap()
    return round(statistics.mean(len(ids) for ids in model.token_ids(texts)), 1)


def timed_load(**options: Any) -> tuple[OnnxMiniLMEmbedder, float]:
    embedder = OnnxMiniLMEmbedder(**options)
    start = time.perf_counter()
    embedder.load().unwrap()
    return embedder, time.perf_counter() - start


def seconds_to_embed(embedder: OnnxMiniLMEmbedder, texts: Sequence[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds of this process (the latter barely moves when others load the CPU)."""
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed_documents(texts).unwrap()
    return time.perf_counter() - wall, time.process_time() - cpu


def query_latencies_ms(embedder: OnnxMiniLMEmbedder, queries: Sequence[str]) -> list[float]:
    samples = []
    for query in queries:
        start = time.perf_counter()
        embedder.embed_query(query).unwrap()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def spec_of(setting: str) -> ModelSpec:
    """The model an `embedder` setting names: the shipped MiniLM, or a model directory."""
    return shipped_spec() if setting == "minilm" else read_model_directory(Path(setting)).unwrap()


def latency_summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median": round(statistics.median(ordered), 2), "p95": round(ordered[int(0.95 * len(ordered))], 2)}


def race(
    settings: dict[str, dict[str, Any]], corpora: dict[str, list[str]], queries: Sequence[str], rounds: int
) -> dict[str, dict[str, Any]]:
    """texts/s and texts per CPU-second (best round) per corpus, query latency (rounds pooled), per setting.

    Settings take turns within each round, so load from other processes falls on all of them alike.
    """
    embedders = {label: timed_load(**options)[0] for label, options in settings.items()}
    best = {label: {name: float("inf") for name in corpora} for label in settings}
    best_cpu = {label: {name: float("inf") for name in corpora} for label in settings}
    latencies: dict[str, list[float]] = {label: [] for label in settings}
    for embedder in embedders.values():
        embedder.embed_documents(corpora["short"][:8]).unwrap()
    for _ in range(rounds):
        for label, embedder in embedders.items():
            for name, texts in corpora.items():
                wall, cpu = seconds_to_embed(embedder, texts)
                best[label][name] = min(best[label][name], wall)
                best_cpu[label][name] = min(best_cpu[label][name], cpu)
            latencies[label].extend(query_latencies_ms(embedder, queries))
    return {
        label: {
            **{f"{name}_texts_per_s": round(len(corpora[name]) / best[label][name], 1) for name in corpora},
            **{f"{name}_texts_per_cpu_s": round(len(corpora[name]) / best_cpu[label][name], 1) for name in corpora},
            "query_latency_ms": latency_summary(latencies[label]),
        }
        for label in settings
    }


def batching_settings(batch_sizes: Sequence[int]) -> dict[str, dict[str, Any]]:
    return {
        f"batch{size}_{'sorted' if sort else 'unsorted'}": {"batch_size": size, "sort_by_length": sort}
        for size in batch_sizes
        for sort in (True, False)
    }


def thread_settings(thread_options: Sequence[int], batch_size: int) -> dict[str, dict[str, Any]]:
    return {
        f"threads{threads}_spin{'on' if spin else 'off'}": {
            "batch_size": batch_size,
            "intra_op_num_threads": threads,
            "allow_spinning": spin,
        }
        for threads in thread_options
        for spin in (False, True)
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--short", type=int, default=1000, help="number of short texts")
    parser.add_argument("--long", type=int, default=500, help="number of long texts")
    parser.add_argument("--queries", type=int, default=50, help="single queries per setting and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every setting; the best round counts")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--models", nargs="+", help="compare models: minilm and/or model directories")
    args = parser.parse_args(argv)

    questions, pairs = load_texts(args.data)
    corpora = {"short": take(questions, args.short), "long": take(pairs, args.long)}
    queries = take(questions[::-1], args.queries)

    started = time.perf_counter()
    if args.models:
        specs = {model: spec_of(model) for model in args.models}
        loads = {model: round(timed_load(spec=spec)[1], 3) for model, spec in specs.items()}
        compared = race({model: {"spec": spec} for model, spec in specs.items()}, corpora, queries, args.rounds)
        rows = {model: {"name": specs[model].name, "load_seconds": loads[model], **compared[model]} for model in specs}
        loadavg = [round(x, 2) for x in os.getloadavg()]
        json.dump({"cpus": os.cpu_count(), "loadavg_at_end": loadavg, "models": rows}, sys.stdout, indent=2)
        print()
        return 0
    embedder, cold_load = timed_load()  # first load in this process: includes importing numpy/onnxruntime/tokenizers
    _, warm_load = timed_load()  # libraries already imported: the model file and tokenizer only
    report: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "model_load_seconds": {"cold_with_imports": round(cold_load, 3), "warm": round(warm_load, 3)},
        "mean_tokens": {name: mean_tokens(embedder, texts) for name, texts in corpora.items()},
        "counts": {name: len(texts) for name, texts in corpora.items()},
        "batching_at_default_threads": race(batching_settings(args.batch_sizes), corpora, queries, args.rounds),
        "threads_at_default_batch_sorted": race(
            thread_settings(args.threads, DEFAULT_BATCH_SIZE), corpora, queries, args.rounds
        ),
    }
    report["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["bench_seconds"] = round(time.perf_counter() - started, 1)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
