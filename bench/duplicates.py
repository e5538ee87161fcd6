"""Calibrates the near-duplicate threshold on the labelled pair set and measures the rule's cost per create (issue 41).

    python bench/duplicates.py [--pairs bench/duplicate_pairs.json] [--min-precision 0.9] [--write MODEL_DIRECTORY]
                               [--cost 300] [--store-size 2000]

The pair set holds pairs that say the same thing in other words (duplicate: true) and pairs about the same subject
that say different things (duplicate: false), hand-written as agents write memories (source "agent"); --locomo N
adds, at run time, N LoCoMo observations against the turn that states them and N against another turn of the same
speaker and session (source "locomo", drawn with a fixed seed from the shared data, whose licence keeps its text
out of this repository). Each pair's similarity is the model's cosine of the two
texts embedded as documents (as a create embeds them). The threshold is the lowest similarity, on a 0.005 grid,
at which precision on the agent pairs (what a create meets) is at least --min-precision: a false duplicate under the update policy
overwrites a memory that said something else, so precision comes first; recall is what is left. --write puts it in
the model directory's duplicates.json, which the embedder adapter reads.

The cost: one create's extra work is one nearest-neighbour query of its store (the vector the create computes
anyway) and the comparisons in its batch; measured as that work alone beside one embedding of the same text, and
as whole creates with the rule on and off taken in turn (embedded Chroma holding --store-size memories); each check
is asked again without its early stop (domain.duplicates.nearest's `counts`), and the answers compared
(`answers_as_the_deep_check` of `creates`). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_memory.adapters.model_directory import DUPLICATES_FILE, read_model_directory, shipped_spec
from agent_memory.adapters.onnx_embedder import OnnxMiniLMEmbedder

HERE = Path(__file__).resolve().parent
PAIRS = HERE / "duplicate_pairs.json"
LOCOMO = HERE.parents[1] / "shared" / "data" / "locomo-dev.json"
GRID = [round(0.3 + step * 0.005, 3) for step in range(140)]


def scored(pairs: list[dict[str, Any]], embedder: OnnxMiniLMEmbedder) -> list[tuple[float, bool, str]]:
    texts = sorted({text for pair in pairs for text in (pair["a"], pair["b"])})
    vectors = dict(zip(texts, embedder.embed_documents(texts).unwrap(), strict=True))
    return [
        (sum(x * y for x, y in zip(vectors[p["a"]], vectors[p["b"]], strict=True)), p["duplicate"], p["source"])
        for p in pairs
    ]


def precision_recall(rows: list[tuple[float, bool, str]], threshold: float) -> dict[str, float | int]:
    caught = sum(1 for s, dup, _ in rows if s >= threshold and dup)
    wrong = sum(1 for s, dup, _ in rows if s >= threshold and not dup)
    missed = sum(1 for s, dup, _ in rows if s < threshold and dup)
    return {
        "pairs": len(rows),
        "precision": round(caught / (caught + wrong), 3) if caught + wrong else 1.0,
        "recall": round(caught / (caught + missed), 3) if caught + missed else 0.0,
        "false_duplicates": wrong,
    }


def chosen(rows: list[tuple[float, bool, str]], min_precision: float) -> float:
    """The lowest grid similarity whose precision (and every higher one's) is at least min_precision."""
    best = GRID[-1]
    for threshold in reversed(GRID):
        if precision_recall(rows, threshold)["precision"] < min_precision:
            break
        best = threshold
    return best


def locomo_pairs(path: Path, each: int, seed: int = 41) -> list[dict[str, Any]]:
    """Observations against the one turn they cite (duplicates) and another turn of the same speaker and session
    (not), `each` of both, drawn with a fixed seed."""
    rng = random.Random(seed)
    positives, negatives = [], []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        turns = {
            turn["dia_id"]: turn
            for key, session in conversation["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for turn in session
        }
        for key, observed in conversation["observation"].items():
            number = key.split("_")[1]
            for speaker, items in observed.items():
                own = [
                    t
                    for d, t in turns.items()
                    if d.startswith(f"D{number}:") and t["speaker"] == speaker and len(t["text"].split()) >= 6
                ]
                for text, cited in items:
                    cited = [c for c in (cited if isinstance(cited, list) else [cited]) if isinstance(c, str)]
                    if len(cited) != 1 or cited[0] not in turns or turns[cited[0]]["speaker"] != speaker:
                        continue
                    where = conversation["sample_id"]
                    positives.append(
                        {"a": text, "b": turns[cited[0]]["text"], "duplicate": True, "source": "locomo",
                         "evidence": f"{where}:{cited[0]}"}
                    )  # fmt: skip
                    others = [t for t in own if t["dia_id"] != cited[0]]
                    if others:
                        other = rng.choice(others)
                        negatives.append(
                            {"a": text, "b": other["text"], "duplicate": False, "source": "locomo",
                             "evidence": f"{where}:{other['dia_id']}"}
                        )  # fmt: skip
    rng.shuffle(positives)
    rng.shuffle(negatives)
    return positives[:each] + negatives[:each]


def create_cost(embedder: OnnxMiniLMEmbedder, threshold: float, creates: int, store_size: int) -> dict[str, Any]:
    """The rule's own work per create (its nearest-neighbour query and the settling, on the vector the create has)
    beside one embedding of the same text, and whole creates with the rule on and off, taken in turn (one service
    each over embedded Chroma holding `store_size` memories), all as medians in ms."""
    from attrs import evolve

    from agent_memory.domain import commands as c
    from agent_memory.domain.duplicates import DuplicatePolicy, Fresh, nearest, plan_batch, same_scope
    from agent_memory.domain.filters import MemoryFilter
    from agent_memory.domain.model import Memory, new_memory_id
    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.settings import Settings

    def _scope(memory: Memory) -> MemoryFilter:
        return evolve(same_scope(memory), alive_at=memory.updated_at)

    texts = [f"Note {n}: the user mentioned item {n * 7919 % 104729} during session {n % 97}." for n in range(creates)]
    seed = [
        c.CreateMemory(content=f"Memory {n} about topic {n % 211}, detail {n * 31 % 1009}.") for n in range(store_size)
    ]
    spent: dict[str, list[float]] = {"embedding": [], "rule": [], "create_rule_on": [], "create_rule_off": []}
    with tempfile.TemporaryDirectory() as folder:
        services = {}
        for label, similarity in (("create_rule_off", None), ("create_rule_on", threshold)):
            built = build_service(Settings(data_dir=Path(folder) / label, server="off"), embedder=embedder).unwrap()
            services[label] = evolve(built, policy=evolve(built.policy, duplicate_similarity=similarity))
            services[label].create_many(seed).unwrap()
        ctx = services["create_rule_on"].context
        store = ctx.open(None, create=False).unwrap()
        named = same = 0
        for text in texts:
            started = time.perf_counter()
            vector = embedder.embed_documents([text]).unwrap()[0]
            spent["embedding"].append(time.perf_counter() - started)
            now = ctx.clock.now()
            memory = Memory(id=new_memory_id(), content=text, created_at=now, updated_at=now)
            started = time.perf_counter()
            plan = plan_batch(
                [Fresh(memory, DuplicatePolicy.KEEP)],
                [vector],
                lambda m, v, counts: nearest(lambda limit: store.query(v, _scope(m), limit), threshold, counts=counts),
                threshold,
            ).unwrap()
            spent["rule"].append(time.perf_counter() - started)
            # the same check asking as deep as the threshold lets it (no early stop): the answer must not change
            deep = plan_batch(
                [Fresh(memory, DuplicatePolicy.KEEP)],
                [vector],
                lambda m, v, _: nearest(lambda limit: store.query(v, _scope(m), limit), threshold),
                threshold,
            ).unwrap()
            named += len(plan.answers[0].duplicates)
            same += plan.answers[0].duplicates == deep.answers[0].duplicates
            for label, service in services.items():
                started = time.perf_counter()
                service.create(c.CreateMemory(content=text, on_duplicate="keep")).unwrap()
                spent[label].append(time.perf_counter() - started)
    figures: dict[str, Any] = {label: round(statistics.median(times) * 1000, 2) for label, times in spent.items()}
    figures["rule_over_embedding"] = round(figures["rule"] / figures["embedding"], 3)
    figures["creates"], figures["store_size"] = creates, store_size
    figures["duplicates_named"], figures["answers_as_the_deep_check"] = named, same
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--model", type=Path, help="a model directory (default: the shipped MiniLM)")
    parser.add_argument("--min-precision", type=float, default=0.9)
    parser.add_argument("--write", type=Path, help="the model directory to write duplicates.json into")
    parser.add_argument("--cost", type=int, default=0, help="creates to time (0: no cost measurement)")
    parser.add_argument("--store-size", type=int, default=2000)
    parser.add_argument("--locomo", type=int, default=150, help="LoCoMo pairs of each kind to add (0: none)")
    parser.add_argument("--data", type=Path, default=LOCOMO, help="the LoCoMo file (shared/data/locomo-dev.json)")
    args = parser.parse_args(argv)
    data = json.loads(args.pairs.read_text(encoding="utf-8"))
    if args.locomo and args.data.is_file():
        data["pairs"] = data["pairs"] + locomo_pairs(args.data, args.locomo)
    spec = shipped_spec() if args.model is None else read_model_directory(args.model).unwrap()
    embedder = OnnxMiniLMEmbedder(spec)
    rows = scored(data["pairs"], embedder)
    threshold = chosen([row for row in rows if row[2] == "agent"], args.min_precision)
    report: dict[str, Any] = {
        "model": spec.name,
        "threshold": threshold,
        "min_precision": args.min_precision,
        "all": precision_recall(rows, threshold),
    }
    for source in sorted({row[2] for row in rows}):
        report[source] = precision_recall([row for row in rows if row[2] == source], threshold)
    report["by_threshold"] = {
        str(t): precision_recall(rows, t) for t in (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9) if t != threshold
    }
    if args.write:
        about = "this model's near-duplicate threshold, written by bench/duplicates.py"
        (args.write / DUPLICATES_FILE).write_text(
            json.dumps({"similarity": threshold, "precision": report["agent"]["precision"],
                        "recall": report["agent"]["recall"], "about": about}, indent=1) + "\n",
            encoding="utf-8",
        )  # fmt: skip
    if args.cost:
        report["cost_ms"] = create_cost(embedder, threshold, args.cost, args.store_size)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
