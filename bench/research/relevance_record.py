"""Records each question's candidates with their signals once, so per-hit relevance rules replay offline (issue 40).

    python bench/research/relevance_record.py --set locomo --data PATH --unit turns|facts --out FILE.json
    python bench/research/relevance_record.py --set asking --out FILE.json [--embedder minilm|MODEL_DIRECTORY]

Ingests like bench/locomo.py (or bench/asking.py), then asks each question once in hybrid mode with every relevance
rule off (40 deep) and once in keyword mode, and writes per question its kind, the keys that answer it, and per hit
in the hybrid order: the keys it cites, its similarity, its second-stage score, its keyword score (bm25 / the best,
0 when it shares no word with the question) and its text. bench/relevance_calibration.py replays rules on these files.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from attrs import evolve

from agent_memory.domain.commands import SearchMemories
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

BENCH = Path(__file__).resolve().parents[1]


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ranked(service: Any, search: SearchMemories) -> list[list[Any]]:
    """The hybrid ranking with every relevance rule off, as [keys, similarity, score, keyword score, text] per hit."""
    off = evolve(search, limit=40, min_confidence=0.0, min_similarity=0.0)
    hybrid = service.search(off).unwrap().results
    keyword = service.search(evolve(off, mode="keyword", limit=1000)).unwrap()
    worded = {hit.memory.id: hit.score for hit in keyword.results}
    return [
        [
            list(hit.memory.citations),
            hit.similarity,
            hit.score,
            round(worded.get(hit.memory.id, 0.0), 4),
            hit.memory.content,
        ]
        for hit in hybrid
    ]


def locomo_set(service: Any, data: Path, unit: str) -> list[dict[str, Any]]:
    locomo = _module("locomo")
    conversations = json.loads(data.read_text(encoding="utf-8"))
    locomo.ingest(service, conversations, "namespace", unit, "session")
    asked = []
    for conversation in conversations:
        where = locomo.space(conversation, "namespace")
        for qa, evidence in locomo.questions(conversation, unit):
            search = SearchMemories(query=qa["question"], **where)
            asked.append(
                {
                    "question": qa["question"],
                    "kind": "specific",
                    "answers": sorted(evidence),
                    "conversation": str(conversation["sample_id"]),  # the fold it falls in (issue 48)
                    "hits": ranked(service, search),
                }
            )
        print(f"searched {conversation['sample_id']}", file=sys.stderr)
    return asked


def asking_set(service: Any) -> list[dict[str, Any]]:
    asking = _module("asking")
    stores = json.loads(asking.DEFAULT_SET.read_text(encoding="utf-8"))["stores"]
    asking.ingest(service, stores)
    asked = []
    for store in stores:
        for item in store["questions"]:
            search = SearchMemories(query=item["question"], namespace=("asking", store["name"]))
            asked.append({**item, "store": store["name"], "hits": ranked(service, search)})
    return asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("locomo", "asking"), required=True)
    parser.add_argument("--data", type=Path)
    parser.add_argument("--unit", default="turns", choices=("turns", "facts"))
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        chosen: dict[str, Any] = {"data_dir": home}
        if args.embedder is not None:
            chosen["embedder"] = args.embedder
        service = build_service(load_settings(chosen, {"HOME": home}).unwrap()).unwrap()
        asked = locomo_set(service, args.data, args.unit) if args.set == "locomo" else asking_set(service)
    args.out.write_text(json.dumps({"set": args.set, "unit": args.unit, "questions": asked}), encoding="utf-8")


if __name__ == "__main__":
    main()
