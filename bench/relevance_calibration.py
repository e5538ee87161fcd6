"""Calibrates a model's relevance rule on recorded rankings and writes it into the model directory (issue 40).

    python bench/relevance_calibration.py RECORDED.json [RECORDED.json ...] [--write MODEL_DIRECTORY]
                                          [--max-loss 0.003] [--today-floor 0.2] [--evidence]

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

Folds (issue 48): every number is chosen by cross-validation with whole LoCoMo conversations (and whole stores of the
asking set) held out. The bound is per conversation: a rule may be chosen only if it costs at most --max-loss of
recall@10 on every conversation it is chosen on, on both protocols. Fold k holds out conversation k and asking
store k mod 3, chooses on the rest, and reports the chosen rule's recall@10 on the held-out conversation against no
rule (both protocols) and its asking figures on the held-out store. Then the rule chosen on everything, and the rule
shipped before (keep 0.2, spread 0.3), are replayed per conversation against no rule: a rule ships only if it costs
at most --max-loss on every fold, on both protocols ("ships" in the output). Beside `spread`, the grid tries what
spares a hit that cut (`gap`: joined to the best by the answer's own run of similarities; `spared`: a share of the
question's subject words). --evidence adds the evidence options (`alone`, `cover`, `close`) to the grid (not
shipped: decision 24). --write puts the chosen rule in the model directory's relevance.json only when it ships;
the embedder adapter reads it (docs/configuration.md, "Your own embedding model").
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from agent_memory.domain.search.relevance import RelevanceRule, coverage, subject_words

FILE = "relevance.json"  # in a model directory, beside embedding.json (adapters/model_directory.py)
FLOORS = [0.2, 0.25, 0.3]
GAPS: list[float | None] = [None, 0.01, 0.02, 0.03, 0.05]  # what spares a hit the spread cut (issue 48)
SPARED: list[float | None] = [None, 0.3, 0.5, 1.0]
KEEPS = [0.1, 0.15, 0.2, 0.25]
SPREADS: list[float | None] = [None, 0.35, 0.3, 0.25]
ALONE: list[float | None] = [None, 0.25, 0.3, 0.35, 0.4, 0.45]  # None: no evidence asked (the rule before words)
COVERS = [0.3, 0.4, 0.5]
CLOSES = [0.0, 0.1, 0.15, 0.2]
EVIDENCE = ("cover", "close")  # read only with `alone`
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


def locomo_recalls(questions: list[dict[str, Any]], rule: RelevanceRule, today: float) -> list[float]:
    """Each question's recall@10 under a rule."""
    recall = []
    for question in questions:
        found = {key for hit in kept(question, rule, today)[:10] for key in hit[0]}
        wanted = set(question["answers"])
        recall.append(len(wanted & found) / len(wanted))
    return recall


def asking_outcomes(questions: list[dict[str, Any]], rule: RelevanceRule, today: float, k: int = 5) -> list[Any]:
    """Each asking question's outcome under a rule: (recall@5, padded) for one that has answers, the answer's
    emptiness for an unrelated one, None for an open one (answered by the broad rule)."""
    outcomes: list[Any] = []
    for question in questions:
        got = [hit[0][0] for hit in kept(question, rule, today)[:k]]
        if question["kind"] == "unrelated":
            outcomes.append(float(not got))
        elif question["kind"] != "open":
            wanted = set(question["answers"])
            right = [key for key in got if key in wanted]
            outcomes.append((len(right) / len(wanted), float(len(right) < len(got))))
        else:
            outcomes.append(None)
    return outcomes


def asking_figures(outcomes: list[Any]) -> dict[str, float]:
    """The asking set's figures over some questions' outcomes, as bench/asking.py computes them."""
    answered = [o for o in outcomes if isinstance(o, tuple)]
    unrelated = [o for o in outcomes if isinstance(o, float)]
    return {
        "recall@5": round(statistics.fmean(o[0] for o in answered), 4) if answered else 1.0,
        "padded": round(statistics.fmean(o[1] for o in answered), 4) if answered else 0.0,
        "unrelated_empty": round(statistics.fmean(unrelated), 4) if unrelated else 1.0,
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


def rules(unrelated: float, related: float, evidence: bool) -> list[RelevanceRule]:
    """Every rule of the grid: the similarity lines, what spares a hit the spread cut, then (with `evidence`) each
    kind of evidence a hit may need."""
    grid = []
    for floor, keep, spread, gap, spared in itertools.product(FLOORS, KEEPS, SPREADS, GAPS, SPARED):
        if keep > floor or (spread is None and (gap, spared) != (None, None)):
            continue
        for alone, cover, close in itertools.product(ALONE if evidence else [None], COVERS, CLOSES):
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
                    gap=gap,
                    spared=spared,
                )
            )
    return grid


def numbers(rule: RelevanceRule) -> dict[str, float | None]:
    return {
        "floor": rule.floor,
        "keep": rule.keep,
        "spread": rule.spread,
        "gap": rule.gap,
        "spared": rule.spared,
        "alone": rule.alone,
        "cover": rule.cover,
        "close": rule.close,
    }


class Replay:
    """Every question's outcome under a rule, replayed once; figures over any subset of conversations or stores."""

    def __init__(self, sets: list[dict[str, Any]], today: float) -> None:
        self.today = today
        self.locomo = {s["unit"]: s["questions"] for s in sets if s["set"] == "locomo"}
        self.asking = [q for s in sets if s["set"] == "asking" for q in s["questions"]]
        self.conversations = sorted({q["conversation"] for qs in self.locomo.values() for q in qs})
        self.stores = sorted({q["store"] for q in self.asking}, key=[q["store"] for q in self.asking].index)
        self._cache: dict[RelevanceRule, dict[str, list[Any]]] = {}

    def outcomes(self, rule: RelevanceRule, today: float | None = None) -> dict[str, list[Any]]:
        if rule not in self._cache:
            floor = self.today if today is None else today
            replayed = {unit: locomo_recalls(q, rule, floor) for unit, q in self.locomo.items()}
            replayed["asking"] = asking_outcomes(self.asking, rule, floor)
            self._cache[rule] = replayed
        return self._cache[rule]

    def recall(self, rule: RelevanceRule, unit: str, conversations: set[str], today: float | None = None) -> float:
        values = [
            r
            for q, r in zip(self.locomo[unit], self.outcomes(rule, today)[unit], strict=True)
            if q["conversation"] in conversations
        ]
        return statistics.fmean(values)

    def asked(self, rule: RelevanceRule, stores: set[str], today: float | None = None) -> dict[str, float]:
        picked = [
            o for q, o in zip(self.asking, self.outcomes(rule, today)["asking"], strict=True) if q["store"] in stores
        ]
        return asking_figures(picked)

    def losses(self, rule: RelevanceRule, off: RelevanceRule, conversations: list[str]) -> dict[str, dict[str, float]]:
        """Per conversation and protocol, the points of recall@10 the rule costs against no rule."""
        return {
            unit: {
                c: round(100 * (self.recall(off, unit, {c}, 0.0) - self.recall(rule, unit, {c})), 2)
                for c in conversations
            }
            for unit in self.locomo
        }


def choose(
    replay: Replay,
    grid: list[RelevanceRule],
    off: RelevanceRule,
    today_rule: RelevanceRule,
    conversations: list[str],
    stores: set[str],
    max_loss: float,
) -> tuple[RelevanceRule, dict[str, Any]]:
    """Among the rules that cost at most max_loss of recall@10 on every one of these conversations (both
    protocols) and lose no asking recall@5 on these stores against the floor alone, the fewest asking errors."""
    today = replay.asked(today_rule, stores)["recall@5"]
    best: tuple[float, RelevanceRule, dict[str, Any]] | None = None
    for rule in grid:
        row: dict[str, Any] = replay.asked(rule, stores)
        if row["recall@5"] < today:
            continue
        worst = max(max(per.values()) for per in replay.losses(rule, off, conversations).values())
        if worst > 100 * max_loss:
            continue
        row["worst_loss_points"] = worst
        if best is None or errors(row) < best[0]:
            best = (errors(row), rule, row)
    if best is None:  # nothing but the floor alone: it thins no answer
        return today_rule, replay.asked(today_rule, stores)
    return best[1], best[2]


def dominating(
    replay: Replay,
    grid: list[RelevanceRule],
    off: RelevanceRule,
    before: RelevanceRule,
    every: list[str],
    stores: set[str],
) -> dict[str, Any]:
    """The rule that costs no more than the rule shipped before on any conversation and protocol, with asking figures
    no worse, of the smallest worst loss (then fewest asking errors): what the gap and spared options win back."""
    old, shown = replay.losses(before, off, every), replay.asked(before, stores)
    found: list[tuple[float, float, RelevanceRule, dict[str, Any]]] = []
    for rule in grid:
        losses, row = replay.losses(rule, off, every), replay.asked(rule, stores)
        worse = row["recall@5"] < shown["recall@5"] or errors(row) > errors(shown)
        if worse or any(losses[u][c] > old[u][c] for u in old for c in every):
            continue
        found.append((max(max(per.values()) for per in losses.values()), errors(row), rule, losses))
    worst, _, rule, losses = min(found, key=lambda item: item[:2])
    return {**numbers(rule), **replay.asked(rule, stores), "worst_loss_points": worst, "loss_points": losses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recorded", nargs="+", type=Path)
    parser.add_argument("--max-loss", type=float, default=0.003, help="recall@10 a rule may cost on any conversation")
    parser.add_argument(
        "--today-floor", type=float, default=0.2, help="the floor before per-hit relevance (decision 21)"
    )
    parser.add_argument("--evidence", action="store_true", help="also try the evidence options (alone, cover, close)")
    parser.add_argument("--write", type=Path, help="a model directory: write its relevance.json there if it ships")
    args = parser.parse_args()
    sets = [json.loads(path.read_text(encoding="utf-8")) for path in args.recorded]
    prepared(sets)
    replay = Replay(sets, args.today_floor)
    unrelated, related = scale(sets)
    off = RelevanceRule(unrelated, 0.0, related)
    today_rule = RelevanceRule(unrelated, args.today_floor, related, floor=args.today_floor)
    before = RelevanceRule(unrelated, 0.2, related, spread=0.3, floor=0.2)  # shipped before issue 48
    grid = rules(unrelated, related, args.evidence)
    every, stores = replay.conversations, replay.stores
    folds = []
    for k, held in enumerate(every):
        store = stores[k % len(stores)]
        rest = [c for c in every if c != held]
        rule, row = choose(replay, grid, off, today_rule, rest, set(stores) - {store}, args.max_loss)
        folds.append(
            {
                "held_out": held,
                "held_out_store": store,
                "chosen": numbers(rule),
                "chosen_on_the_rest": row,
                "recall@10": {
                    unit: {
                        "no_rule": round(replay.recall(off, unit, {held}, 0.0), 4),
                        "chosen": round(replay.recall(rule, unit, {held}), 4),
                        "before": round(replay.recall(before, unit, {held}), 4),
                    }
                    for unit in replay.locomo
                },
                "held_out_asking": {
                    "floor_only": replay.asked(today_rule, {store}),
                    "chosen": replay.asked(rule, {store}),
                    "before": replay.asked(before, {store}),
                },
            }
        )
        print(f"fold {held}: {numbers(rule)}", file=sys.stderr)
    rule, row = choose(replay, grid, off, today_rule, every, set(stores), args.max_loss)
    losses = replay.losses(rule, off, every)
    ships = all(value <= 100 * args.max_loss for per in losses.values() for value in per.values())
    report: dict[str, Any] = {
        "rules_tried": len(grid),
        "max_loss_points": 100 * args.max_loss,
        "folds": folds,
        "chosen": {**numbers(rule), **row},
        "chosen_loss_points": losses,
        "ships": ships,
        "before_loss_points": replay.losses(before, off, every),
        "recall@10": {
            unit: {
                "no_rule": round(replay.recall(off, unit, set(every), 0.0), 4),
                "chosen": round(replay.recall(rule, unit, set(every)), 4),
                "before": round(replay.recall(before, unit, set(every)), 4),
            }
            for unit in replay.locomo
        },
        "asking": {
            "no_rule": replay.asked(off, set(stores), 0.0),
            "floor_only": replay.asked(today_rule, set(stores)),
            "chosen": replay.asked(rule, set(stores)),
            "before": replay.asked(before, set(stores)),
        },
    }
    shown = {k: v for k, v in numbers(rule).items() if v is not None and (rule.alone is not None or k not in EVIDENCE)}
    written = {"unrelated": unrelated, **shown, "related": related}
    report["dominating"] = dominating(replay, grid, off, before, every, set(stores))
    print(json.dumps({**report, "rule": written}, indent=1))
    if args.write is not None and ships:
        about = "this model's relevance rule, written by bench/relevance_calibration.py"
        (args.write / FILE).write_text(json.dumps({**written, "about": about}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
