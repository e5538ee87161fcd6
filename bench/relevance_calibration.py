"""Calibrates a model's relevance rule on recorded rankings and writes it into the model directory (issue 40).

    python bench/relevance_calibration.py RECORDED.json [RECORDED.json ...] [--write MODEL_DIRECTORY]
                                          [--max-loss 0.005] [--today-floor 0.2]

Each RECORDED file comes from bench/research/relevance_record.py (the asking set and both LoCoMo protocols, asked
with the model being calibrated). The rule (domain/search/relevance.py) is four similarities of this model and a
spread: `floor` (an answer whose best hit is under it is empty), `keep` (a hit under it leaves the answer), `spread`
(so does a hit more than this under the best), and the scale of the figure a hit shows: `unrelated` (the median
best similarity of questions nothing answers: relevance 0) and `related` (the median similarity of a hit that
answers its question: relevance 1). A chat turn counts as related when a neighbouring turn of its session that
the ranking holds is, as the search does with thread neighbours. The replay tries every floor, keep and spread of
a small grid and takes, among the rules that cost at most --max-loss of recall@10 on every LoCoMo file and lose no
recall@5 on the asking set against the rule before per-hit relevance (an answer emptied when its best hit is under
--today-floor, nothing thinned: an agent that is told nothing concludes it knows nothing, so thinning may not hide
what it found before), the one with the fewest errors on the asking set, where a missed answer (recall@5) weighs twice an answer padded with an
unrelated hit or an unrelated question answered: an answer that hides what is known is worse than one that says
too much. --write puts the rule in the model directory's relevance.json, which the embedder adapter reads
(docs/configuration.md, "Your own embedding model").
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any

FILE = "relevance.json"  # in a model directory, beside embedding.json (adapters/model_directory.py)
FLOORS = [0.2, 0.25, 0.3, 0.32, 0.35, 0.38, 0.4, 0.45]
KEEPS = [0.15, 0.2, 0.23, 0.25, 0.28, 0.3, 0.35]
SPREADS: list[float | None] = [None, 0.4, 0.3, 0.25, 0.2]
TURN = re.compile(r"(D\d+):(\d+)$")  # a LoCoMo turn's dia_id: session and number


def judged(hits: list[list[Any]], unit: str | None) -> list[float]:
    """Each hit's similarity, or for chat turns the best of its own and its neighbouring turns' in the ranking."""
    if unit != "turns":
        return [hit[1] for hit in hits]
    similarity = {key: hit[1] for hit in hits for key in hit[0]}
    near = []
    for hit in hits:
        best = hit[1]
        for key in hit[0]:
            if match := TURN.match(key):
                for step in (-1, 1):
                    best = max(best, similarity.get(f"{match[1]}:{int(match[2]) + step}", 0.0))
        near.append(best)
    return near


def kept(hits: list[list[Any]], rule: tuple[float, float, float | None], unit: str | None = None) -> list[list[Any]]:
    """The hits a rule (floor, keep, spread) keeps, in their order (hits: [keys, similarity, score, keyword] each)."""
    floor, keep, spread = rule
    near = judged(hits, unit)
    best = max(near, default=0.0)
    if best < max(floor, keep):
        return []
    line = keep if spread is None else max(keep, best - spread)
    return [hit for hit, similarity in zip(hits, near, strict=True) if similarity >= line]


def locomo_recall(questions: list[dict[str, Any]], unit: str, rule: tuple[float, float, float | None]) -> float:
    recall = []
    for question in questions:
        found = {key for hit in kept(question["hits"], rule, unit)[:10] for key in hit[0]}
        wanted = set(question["answers"])
        recall.append(len(wanted & found) / len(wanted))
    return statistics.fmean(recall)


def asking(questions: list[dict[str, Any]], rule: tuple[float, float, float | None], k: int = 5) -> dict[str, float]:
    """The asking set's figures under a rule, as bench/asking.py computes them (the broad answer aside)."""
    recall, padded, unrelated = [], [], []
    for question in questions:
        got = [hit[0][0] for hit in kept(question["hits"], rule)[:k]]
        if question["kind"] == "unrelated":
            unrelated.append(float(not got))
        elif question["kind"] != "open":
            wanted = set(question["answers"])
            right = [key for key in got if key in wanted]
            recall.append(len(right) / len(wanted))
            padded.append(float(len(right) < len(got)))
    return {
        "recall@5": round(statistics.fmean(recall), 4),
        "padded": round(statistics.fmean(padded), 4),
        "unrelated_empty": round(statistics.fmean(unrelated), 4),
    }


def scale(sets: list[dict[str, Any]]) -> tuple[float, float]:
    """unrelated: the median best similarity of unrelated questions; related: the median similarity of answers."""
    off = [
        max((h[1] for h in q["hits"]), default=0.0) for s in sets for q in s["questions"] if q["kind"] == "unrelated"
    ]
    on = [
        h[1]
        for s in sets
        for q in s["questions"]
        if q["kind"] in ("specific", "topic")
        for h in q["hits"]
        if set(h[0]) & set(q["answers"])
    ]
    return round(statistics.median(off), 3), round(statistics.median(on), 3)


def errors(row: dict[str, Any]) -> float:
    """The asking set's weighted errors: a missed answer twice, a padded answer and an unrelated one answered once."""
    return row["padded"] + (1 - row["unrelated_empty"]) + 2 * (1 - row["recall@5"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recorded", nargs="+", type=Path)
    parser.add_argument("--max-loss", type=float, default=0.005)
    parser.add_argument(
        "--today-floor", type=float, default=0.2, help="the floor before per-hit relevance (decision 21)"
    )
    parser.add_argument("--write", type=Path, help="a model directory: write its relevance.json there")
    args = parser.parse_args()
    sets = [json.loads(path.read_text(encoding="utf-8")) for path in args.recorded]
    locomo = {s["unit"]: s["questions"] for s in sets if s["set"] == "locomo"}
    asked = [q for s in sets if s["set"] == "asking" for q in s["questions"]]
    base = {unit: locomo_recall(questions, unit, (0.0, 0.0, None)) for unit, questions in locomo.items()}
    rows = []
    for floor in FLOORS:
        for keep in (k for k in KEEPS if k <= floor):
            for spread in SPREADS:
                rule = (floor, keep, spread)
                losses = {unit: round(base[unit] - locomo_recall(q, unit, rule), 4) for unit, q in locomo.items()}
                rows.append(
                    {"floor": floor, "keep": keep, "spread": spread, "locomo_loss": losses, **asking(asked, rule)}
                )
    today = asking(asked, (args.today_floor, args.today_floor, None))["recall@5"]
    allowed = [
        r for r in rows if all(loss <= args.max_loss for loss in r["locomo_loss"].values()) and r["recall@5"] >= today
    ]
    chosen = min(allowed, key=errors)
    unrelated, related = scale(sets)
    rule = {"unrelated": unrelated, "floor": chosen["floor"], "keep": chosen["keep"], "spread": chosen["spread"]}
    rule["related"] = related
    before = {"locomo_recall@10": base, **asking(asked, (0.0, 0.0, None)), "today_recall@5": today}
    print(json.dumps({"before": before, "chosen": chosen, "rule": rule, "curve": rows}, indent=1))
    if args.write is not None:
        written = {**rule, "about": "this model's relevance rule, written by bench/relevance_calibration.py"}
        (args.write / FILE).write_text(json.dumps(written, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
