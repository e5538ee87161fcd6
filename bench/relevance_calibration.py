"""Calibrates a model's relevance rule on recorded rankings and writes it into the model directory (issue 40).

    python bench/relevance_calibration.py RECORDED.json [RECORDED.json ...] [--write MODEL_DIRECTORY]
                                          [--max-loss 0.005] [--today-floor 0.2] [--hold-out STORE]

Each RECORDED file comes from bench/research/relevance_record.py (the asking set and both LoCoMo protocols, asked
with the model being calibrated; each hit with its text). The rule (domain/search/relevance.py, replayed here
through the domain's own `RelevanceRule.related_hits`) is this model's similarities and a share of words: `floor`
(an answer whose best hit is under it is empty), `keep` (a hit under it leaves the answer), `spread` (so does a hit
more than this under the best), then the evidence a hit over those lines needs: `cover` of the question's subject
words, or a similarity of `alone` on its own, or one within `close` of the best (and an answer with no hit that has
words or `alone` is empty); and the scale of the figure a hit shows: `unrelated` (the median best similarity of
questions nothing answers: relevance 0) and `related` (the median similarity of a hit that answers its question:
relevance 1). A chat turn counts as related when a neighbouring turn of its session that the ranking holds is, as
the search does with thread neighbours. The replay tries every rule of a small grid and takes, among the rules that
cost at most --max-loss of recall@10 on every LoCoMo file and lose no recall@5 on the asking set against the rule
before per-hit relevance (an answer emptied when its best hit is under --today-floor, nothing thinned: an agent
that is told nothing concludes it knows nothing, so thinning may not hide what it found before), the one with the
fewest errors on the asking set, where a missed answer (recall@5) weighs twice an answer padded with an unrelated
hit or an unrelated question answered: an answer that hides what is known is worse than one that says too much.
--hold-out STORE leaves that store of the asking set out of the choice and reports its figures apart (the rule is
then judged on questions it was not chosen on). --write puts the rule in the model directory's relevance.json,
which the embedder adapter reads (docs/configuration.md, "Your own embedding model").
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
from pathlib import Path
from typing import Any

from agent_memory.domain.search.relevance import RelevanceRule, coverage, subject_words

FILE = "relevance.json"  # in a model directory, beside embedding.json (adapters/model_directory.py)
FLOORS = [0.2, 0.25, 0.3]
KEEPS = [0.1, 0.15, 0.2, 0.25]
SPREADS: list[float | None] = [None, 0.35, 0.3, 0.25]
ALONE: list[float | None] = [None, 0.25, 0.3, 0.35, 0.4, 0.45]  # None: no evidence asked (the rule before words)
COVERS = [0.3, 0.4, 0.5]
CLOSES = [0.0, 0.1, 0.15, 0.2]
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


def prepared(sets: list[dict[str, Any]]) -> None:
    """Each hit's judged similarity and the share of its question's subject words it has, computed once."""
    for recorded in sets:
        unit = recorded["unit"] if recorded["set"] == "locomo" else None
        for question in recorded["questions"]:
            asked = subject_words(question["question"])
            question["near"] = judged(question["hits"], unit)
            question["words"] = [coverage(asked, hit[4]) for hit in question["hits"]]


def kept(question: dict[str, Any], rule: RelevanceRule, today: float) -> list[list[Any]]:
    """The hits a rule keeps, in their order, as the search keeps them (an empty list: nothing related)."""
    hits = range(len(question["hits"]))
    if not hits or max(question["near"]) < max(today, rule.floor, rule.keep):
        return []
    related = rule.related_hits(hits, lambda n: question["near"][n], lambda n: question["words"][n])
    return [question["hits"][n] for n in related or ()]


def locomo_recall(questions: list[dict[str, Any]], rule: RelevanceRule, today: float) -> float:
    recall = []
    for question in questions:
        found = {key for hit in kept(question, rule, today)[:10] for key in hit[0]}
        wanted = set(question["answers"])
        recall.append(len(wanted & found) / len(wanted))
    return statistics.fmean(recall)


def asking(questions: list[dict[str, Any]], rule: RelevanceRule, today: float, k: int = 5) -> dict[str, float]:
    """The asking set's figures under a rule, as bench/asking.py computes them (the broad answer aside)."""
    recall, padded, unrelated = [], [], []
    for question in questions:
        got = [hit[0][0] for hit in kept(question, rule, today)[:k]]
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


def rules(unrelated: float, related: float) -> list[RelevanceRule]:
    """Every rule of the grid: the similarity lines, then with each kind of evidence a hit may need."""
    grid = []
    for floor, keep, spread in itertools.product(FLOORS, KEEPS, SPREADS):
        if keep > floor:
            continue
        for alone, cover, close in itertools.product(ALONE, COVERS, CLOSES):
            if alone is None and (cover, close) != (COVERS[0], CLOSES[0]):
                continue  # without evidence asked, cover and close change nothing
            if alone is not None and alone < keep:
                continue
            grid.append(
                RelevanceRule(
                    unrelated=unrelated,
                    related=related,
                    floor=floor,
                    keep=keep,
                    spread=spread,
                    alone=alone,
                    cover=cover,
                    close=close,
                )
            )
    return grid


def numbers(rule: RelevanceRule) -> dict[str, float | None]:
    return {
        "floor": rule.floor,
        "keep": rule.keep,
        "spread": rule.spread,
        "alone": rule.alone,
        "cover": rule.cover,
        "close": rule.close,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recorded", nargs="+", type=Path)
    parser.add_argument("--max-loss", type=float, default=0.005)
    parser.add_argument(
        "--today-floor", type=float, default=0.2, help="the floor before per-hit relevance (decision 21)"
    )
    parser.add_argument("--hold-out", help="a store of the asking set left out of the choice, reported apart")
    parser.add_argument("--write", type=Path, help="a model directory: write its relevance.json there")
    args = parser.parse_args()
    sets = [json.loads(path.read_text(encoding="utf-8")) for path in args.recorded]
    prepared(sets)
    locomo = {s["unit"]: s["questions"] for s in sets if s["set"] == "locomo"}
    everything = [q for s in sets if s["set"] == "asking" for q in s["questions"]]
    asked = [q for q in everything if q.get("store") != args.hold_out]
    held = [q for q in everything if q.get("store") == args.hold_out]
    unrelated, related = scale(sets)
    off = RelevanceRule(unrelated, 0.0, related)
    floor_only = RelevanceRule(unrelated, args.today_floor, related, floor=args.today_floor)
    base = {unit: locomo_recall(questions, off, 0.0) for unit, questions in locomo.items()}
    today = asking(asked, floor_only, args.today_floor)["recall@5"]
    rows = []
    for rule in rules(unrelated, related):
        row: dict[str, Any] = {**numbers(rule), **asking(asked, rule, args.today_floor)}
        if row["recall@5"] >= today:  # the LoCoMo replay only for the rules that may be chosen
            row["locomo_loss"] = {
                unit: round(base[unit] - locomo_recall(q, rule, args.today_floor), 4) for unit, q in locomo.items()
            }
        rows.append(row)
    allowed = [r for r in rows if "locomo_loss" in r and max(r["locomo_loss"].values()) <= args.max_loss]
    chosen = min(allowed, key=errors)
    rule = RelevanceRule(unrelated=unrelated, related=related, **{key: chosen[key] for key in numbers(off)})
    report: dict[str, Any] = {
        "before": {"locomo_recall@10": base, **asking(asked, off, 0.0), "today": asking(asked, floor_only, 0.2)},
        "chosen": chosen,
        "all_asking": asking(everything, rule, args.today_floor),
    }
    if held:
        report["held_out"] = {
            "store": args.hold_out,
            "today": asking(held, floor_only, args.today_floor),
            "chosen": asking(held, rule, args.today_floor),
        }
    written = {"unrelated": unrelated, **numbers(rule), "related": related}
    print(json.dumps({**report, "rule": written, "curve": rows}, indent=1))
    if args.write is not None:
        about = "this model's relevance rule, written by bench/relevance_calibration.py"
        (args.write / FILE).write_text(json.dumps({**written, "about": about}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
