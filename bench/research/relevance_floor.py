"""Calibrates the relevance floor on LoCoMo (issue 28): what each similarity floor costs in recall@10.

    python bench/research/relevance_floor.py --data PATH --unit turns|facts [--floors 0,0.05,0.1,...]
    python bench/research/relevance_floor.py --data PATH --probes  # short questions in small stores

Ingests like bench/locomo.py, then asks each question once with the floor off (hybrid, 40 deep) and once in
keyword mode (which memories share a word with it), and replays the floors on those rankings under five rules.
Three judge each hit: it stays when its similarity reaches the floor, or when it shares a word with the question
(whatever its similarity, or with half the floor). Two judge the answer (the product's rule since the floor is on
by default): the whole ranking stays when its best hit passes, and nothing stays when none does. Prints, per floor
and rule, recall@10 and how many questions got no result, and the quantiles of each question's best similarity.
The same replay runs for questions about things no conversation holds (UNRELATED, asked of every conversation):
the share of them that come back empty is what the floor is for. --dump keeps the rankings for other rules.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from attrs import evolve

from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

_spec = importlib.util.spec_from_file_location("locomo", Path(__file__).resolve().parents[1] / "locomo.py")
assert _spec is not None and _spec.loader is not None
locomo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(locomo)


UNRELATED = (
    "nonexistent topic",
    "How do I configure Kubernetes pod eviction thresholds?",
    "What is the derivative of arctangent?",
    "Which compiler flags enable link-time optimisation in clang?",
    "What was the tax law of medieval Flanders?",
    "How does photosynthesis work in C4 plants?",
    "What is the boiling point of liquid nitrogen?",
    "Explain quantum chromodynamics",
    "What port does PostgreSQL listen on by default?",
    "Who won the 1966 football world cup?",
)


PROBES = (  # small stores and short questions, where LoCoMo's long questions say nothing about the floor
    (("User prefers Python 🐍",), ("which language?", "nonexistent topic")),
    (
        ("User prefers Python for scripting", "The office coffee machine is broken again"),
        ("which language?", "which programming language does the user like?", "nonexistent topic"),
    ),
    (
        (
            "The user drinks oat milk flat whites, no sugar.",
            *(f"Daily note {n}: reviewed the inbox." for n in range(20)),
        ),
        ("how does the user take coffee?", "what do you know about me?", "nonexistent topic"),
    ),
)


def probes() -> dict[str, float]:
    """Each probe question's best similarity in its small store (--probes)."""
    best = {}
    for number, (memories, questions) in enumerate(PROBES):
        with tempfile.TemporaryDirectory() as home:
            service = build_service(load_settings({"data_dir": home}, {"HOME": home}).unwrap()).unwrap()
            service.create_many([CreateMemory(content=text) for text in memories]).unwrap()
            for question in questions:
                hits = service.search(SearchMemories(query=question, limit=1, min_similarity=0.0)).unwrap().results
                best[f"store {number + 1}: {question}"] = round(max((h.similarity for h in hits), default=0.0), 3)
    return best


def unrelated(service: Any, conversations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (conversation, off-topic question): the floor-free ranking, as rankings() records it."""
    asked = []
    for conversation in conversations:
        where = locomo.space(conversation, "namespace")
        for question in UNRELATED:
            search = SearchMemories(query=question, limit=40, min_confidence=0.0, min_similarity=0.0, **where)
            hybrid = service.search(search).unwrap().results
            keyword = service.search(evolve(search, mode="keyword", limit=1000)).unwrap()
            worded = {hit.memory.id for hit in keyword.results}
            asked.append(
                {
                    "question": question,
                    "evidence": set(),
                    "ranked": [(h.memory.citations, h.similarity, h.memory.id in worded) for h in hybrid],
                }
            )
    return asked


def rankings(service: Any, conversations: list[dict[str, Any]], unit: str) -> list[dict[str, Any]]:
    """Per question: its evidence and the floor-free hybrid ranking as (citations, similarity, shares a word)."""
    asked = []
    for conversation in conversations:
        where = locomo.space(conversation, "namespace")
        for qa, evidence in locomo.questions(conversation, unit):
            search = SearchMemories(query=qa["question"], limit=40, min_confidence=0.0, min_similarity=0.0, **where)
            hybrid = service.search(search).unwrap().results
            keyword = service.search(evolve(search, mode="keyword", limit=1000)).unwrap()
            worded = {hit.memory.id for hit in keyword.results}
            ranked = [(hit.memory.citations, hit.similarity, hit.memory.id in worded) for hit in hybrid]
            asked.append({"question": qa["question"], "evidence": evidence, "ranked": ranked})
        print(f"searched {conversation['sample_id']}", file=sys.stderr)
    return asked


def replay(
    asked: list[dict[str, Any]], floor: float, worded_floor: float | None, best_decides: bool = False
) -> dict[str, Any]:
    """Recall@10 and empty answers when a hit needs `floor`, or `worded_floor` if it shares a word with the
    question (None: sharing a word does not help). With `best_decides`, the floor judges the answer, not each
    hit: the whole ranking stays when one hit passes, and nothing when none does."""
    recall, empty = [], 0
    for question in asked:
        passes = [
            similarity >= floor or (worded_floor is not None and worded and similarity >= worded_floor)
            for _, similarity, worded in question["ranked"]
        ]
        if best_decides:
            passes = [any(passes)] * len(passes)
        kept = [ids for (ids, _, _), ok in zip(question["ranked"], passes, strict=True) if ok]
        empty += not kept
        found = {d for ids in kept[:10] for d in ids}
        if question["evidence"]:
            recall.append(len(question["evidence"] & found) / len(question["evidence"]))
    return {"recall@10": round(statistics.fmean(recall), 4) if recall else None, "no_result": empty}


RULES = {  # name: (the similarity a hit that shares a word with the question needs, given the floor; best decides)
    "words rescue": (lambda floor: 0.0, False),
    "words halve the floor": (lambda floor: floor / 2, False),
    "similarity alone": (lambda floor: None, False),
    "best hit decides, words halve the floor": (lambda floor: floor / 2, True),
    "best hit decides, similarity alone": (lambda floor: None, True),
}


def best(asked: list[dict[str, Any]]) -> list[float]:
    """Quantiles (10 %, 25 %, 50 %, 75 %, 90 %) of each question's best similarity among its hits."""
    tops = [max((s for _, s, _ in q["ranked"]), default=0.0) for q in asked]
    return [round(q, 3) for q in statistics.quantiles(tops, n=10)[::2]] if len(tops) > 1 else tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--unit", default="turns", choices=("turns", "facts"))
    parser.add_argument("--floors", default="0,0.05,0.1,0.15,0.2,0.25,0.3")
    parser.add_argument(
        "--dump", type=Path, help="also write the floor-free rankings here (JSON), to replay other rules"
    )
    parser.add_argument("--probes", action="store_true", help="only print the small stores' best similarities")
    args = parser.parse_args()
    if args.probes:
        print(json.dumps(probes(), indent=1, ensure_ascii=False))
        return
    conversations = json.loads(args.data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as home:
        service = build_service(load_settings({"data_dir": home}, {"HOME": home}).unwrap()).unwrap()
        locomo.ingest(service, conversations, "namespace", args.unit, "session")
        asked = rankings(service, conversations, args.unit)
        off_topic = unrelated(service, conversations)
    if args.dump:
        rows = {"questions": asked, "off-topic": off_topic}
        args.dump.write_text(json.dumps(rows, default=sorted), encoding="utf-8")
    floors = [float(f) for f in args.floors.split(",")]
    report = {
        "unit": args.unit,
        "questions": len(asked),
        "floors": {
            str(f): {
                name: {
                    **replay(asked, f, rule(f), decides),
                    "off-topic empty": f"{replay(off_topic, f, rule(f), decides)['no_result']}/{len(off_topic)}",
                }
                for name, (rule, decides) in RULES.items()
            }
            for f in floors
        },
        "best similarity quantiles 10/30/50/70/90 %": {"questions": best(asked), "off-topic": best(off_topic)},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
