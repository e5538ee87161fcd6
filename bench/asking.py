"""How people ask: precision, recall and answer length on short questions over small stores (issue 40).

    python bench/asking.py [--data bench/asking_set.json] [--backend chroma] [--modes hybrid,semantic,keyword]
                           [--k 5] [--embedder minilm|MODEL_DIRECTORY]

Each store of the set goes into its own namespace of one store, batch created, every memory citing its key. Each
question is asked with the product's search (limit k) in each mode. For the questions that something answers
(kinds specific and topic): precision@k (the share of returned hits that answer it, over answers with a hit),
recall@k (the share of its answers returned), and the share of answers padded with a hit that does not answer it.
For the unrelated questions: the share answered with nothing. For the open ones (no subject of their own, any
memory answers): the share answered with something. Prints one JSON object on stdout, progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

DEFAULT_SET = Path(__file__).with_name("asking_set.json")


def ingest(service: MemoryService, stores: list[dict[str, Any]]) -> None:
    """Every store of the set in its own namespace, one batch each."""
    for store in stores:
        commands = [
            CreateMemory(content=memory["content"], citations=(memory["key"],), namespace=("asking", store["name"]))
            for memory in store["memories"]
        ]
        service.create_many(commands).unwrap()
        print(f"ingested {store['name']}: {len(commands)} memories", file=sys.stderr)


def answer(service: MemoryService, store: dict[str, Any], question: str, mode: str, k: int) -> list[str]:
    """The keys of the memories the search returns, in its order."""
    found = service.search(
        SearchMemories(query=question, limit=k, min_confidence=0.0, mode=mode, namespace=("asking", store["name"]))
    ).unwrap()
    return [hit.memory.citations[0] for hit in found.results]


def mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def evaluate(service: MemoryService, stores: list[dict[str, Any]], mode: str, k: int) -> dict[str, Any]:
    precision: list[float] = []
    recall: list[float] = []
    padded: list[float] = []
    lengths: list[float] = []
    unrelated_empty: list[float] = []
    open_answered: list[float] = []
    for store in stores:
        for item in store["questions"]:
            got = answer(service, store, item["question"], mode, k)
            lengths.append(len(got))
            if item["kind"] == "unrelated":
                unrelated_empty.append(float(not got))
            elif item["kind"] == "open":
                open_answered.append(float(bool(got)))
            else:
                wanted = set(item["answers"])
                right = [key for key in got if key in wanted]
                recall.append(len(right) / len(wanted))
                if got:
                    precision.append(len(right) / len(got))
                    padded.append(float(len(right) < len(got)))
                else:
                    padded.append(0.0)
        print(f"{mode}: {store['name']} done", file=sys.stderr)
    return {
        f"precision@{k}": mean(precision),
        f"recall@{k}": mean(recall),
        "padded": mean(padded),
        "unrelated_empty": mean(unrelated_empty),
        "open_answered": mean(open_answered),
        "mean_hits": mean(lengths),
        "answerable": len(recall),
        "unrelated": len(unrelated_empty),
        "open": len(open_answered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_SET)
    parser.add_argument("--backend", default="chroma")
    parser.add_argument("--modes", default="hybrid,semantic,keyword")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--embedder", default=None, help="the `embedder` setting: minilm or a model directory")
    args = parser.parse_args()
    stores = json.loads(args.data.read_text(encoding="utf-8"))["stores"]
    with tempfile.TemporaryDirectory() as home:
        chosen: dict[str, Any] = {"data_dir": home, "backend": args.backend}
        if args.embedder is not None:
            chosen["embedder"] = args.embedder
        service = build_service(load_settings(chosen, {"HOME": home}).unwrap()).unwrap()
        ingest(service, stores)
        modes = {mode: evaluate(service, stores, mode, args.k) for mode in args.modes.split(",")}
    print(
        json.dumps({"k": args.k, "backend": args.backend, "embedder": service.embedder.name, "modes": modes}, indent=1)
    )


if __name__ == "__main__":
    main()
