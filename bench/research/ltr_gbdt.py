"""Gradient-boosted trees (LightGBM) as the second stage, against the product's logistic model, by LOCO.

    python bench/research/ltr_gbdt.py --data PATH [--grid small|wide] [--out FILE]

Research code (not imported by the product; needs `pip install lightgbm`). It builds ltr.py's table (the
product's 21 features over fusion.py's candidates, both protocols) and scores, by leave-one-conversation-out
(fitted on four conversations of both protocols, scored on the fifth), the product's model (logistic
regression over the features and their pairwise products, L2 100) and boosted trees over the plain 21
features, pointwise (binary log loss) and pairwise-listwise (LambdaRank, one group per question). Every
variant goes through the product's dominance cap, so only what the two signals leave open is reordered.
Gains are paired bootstraps against the product's model, per question.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ltr
from fusion import bootstrap, log, recall

from agent_memory.domain.search import reranking

L2 = 100.0
Table = dict[str, dict[int, ltr.Rows]]
Scorer = Callable[[np.ndarray], np.ndarray]


def capped_order(order: list[int], x: np.ndarray, scores: np.ndarray) -> list[int]:
    """The product's second stage with any scores: dominance cap, then ties in first-stage order."""
    sides = [reranking.signals(row) for row in x.tolist()]
    capped = reranking.dominance_capped(scores.tolist(), sides, reranking.DOMINANCE_MARGIN)
    return [order[j] for j in sorted(range(len(order)), key=lambda j: (-capped[j], j))]


def logistic(table: Table, convs: list[int]) -> Scorer:
    model = ltr.train(table, convs, L2)
    return lambda x: ltr.probabilities(model, x)


def boosted(objective: str, params: dict[str, Any]) -> Callable[[Table, list[int]], Scorer]:
    def fitter(table: Table, convs: list[int]) -> Scorer:
        rows = [(x, y) for u in table for c in convs for _, x, y, _ in table[u][c]]
        if objective == "lambdarank":
            rows = [(x, y) for x, y in rows if 0 < y.sum() < len(y)]  # a group without both labels teaches nothing
        x = np.vstack([r[0] for r in rows])
        y = np.concatenate([r[1] for r in rows])
        settings = {
            "objective": objective,
            "learning_rate": 0.05,
            "min_child_samples": 100,
            "subsample": 0.8,
            "subsample_freq": 1,
            "colsample_bytree": 0.8,
            "reg_lambda": 1.0,
            "n_jobs": 2,
            "verbose": -1,
            "seed": 7,
            **params,
        }
        trees = settings.pop("n_estimators")
        group = [len(r[1]) for r in rows] if objective == "lambdarank" else None
        booster = lgb.train(settings, lgb.Dataset(x, y, group=group), num_boost_round=trees)
        return lambda rows_: np.asarray(booster.predict(rows_))

    return fitter


Fitter = Callable[[Table, list[int]], Scorer]


def blended(first: Fitter, second: Fitter, w: float) -> Fitter:
    """Mean of the two models' per-question rank-normalised scores (w: the second's share)."""

    def fitter(table: Table, convs: list[int]) -> Scorer:
        a, b = first(table, convs), second(table, convs)

        def score(x: np.ndarray) -> np.ndarray:
            ra = np.argsort(np.argsort(-a(x))).astype(float)
            rb = np.argsort(np.argsort(-b(x))).astype(float)
            return -((1 - w) * ra + w * rb)

        return score

    return fitter


def loco(table: Table, fitter: Callable[[Table, list[int]], Scorer]) -> dict[str, list[float]]:
    folds = sorted(table["turns"])
    values: dict[str, list[float]] = {u: [] for u in table}
    for held in folds:
        score = fitter(table, [c for c in folds if c != held])
        for u in table:
            values[u].extend(recall(q, capped_order(o, x, score(x)), 10) for o, x, _, q in table[u][held])
    return values


def kept(q: dict[str, Any]) -> dict[str, Any]:
    """What recall and extra features need of a query: its evidence, what each memory cites, the texts."""
    return {key: q[key] for key in ("evidence", "cited", "question", "texts")}


def load_table(data: Path) -> Table:
    """ltr.py's table, pickled under bench/results once built (the features take minutes)."""
    cache = Path(__file__).resolve().parents[1] / "results" / f"ltr-table-{data.stem}.pickle"
    if cache.exists():
        table: Table = pickle.loads(cache.read_bytes())
        return table
    built = ltr.table_of(json.loads(data.read_text(encoding="utf-8")))
    table = {u: {c: [(o, x, y, kept(q)) for o, x, y, q in rows] for c, rows in t.items()} for u, t in built.items()}
    cache.write_bytes(pickle.dumps(table))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--grid", choices=("small", "wide"), default="small")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    table = load_table(args.data)
    shapes = [(7, 150), (15, 300)] if args.grid == "small" else [(3, 300), (7, 150), (7, 400), (15, 300), (31, 300)]
    variants: list[tuple[str, Callable[[Table, list[int]], Scorer]]] = [("logistic (the product's)", logistic)]
    for objective in ("lambdarank", "binary"):
        for leaves, trees in shapes:
            name = f"{objective}, {leaves} leaves, {trees} trees"
            variants.append((name, boosted(objective, {"num_leaves": leaves, "n_estimators": trees})))
    variants.append(
        (
            "logistic + lambdarank 7×150, rank mean",
            blended(logistic, boosted("lambdarank", {"num_leaves": 7, "n_estimators": 150}), 0.5),
        )
    )
    report: dict[str, Any] = {}
    reference: dict[str, list[float]] = {}
    for name, fitter in variants:
        values = loco(table, fitter)
        reference = reference or values
        report[name] = row(name, values, reference)
    finish(report, args.out)


def row(name: str, values: dict[str, list[float]], reference: dict[str, list[float]]) -> dict[str, Any]:
    """A variant's LOCO recall@10 per protocol and its paired gain over the reference, logged as it comes."""
    found = {
        u: {"recall@10": round(statistics.fmean(v), 4), "gain": bootstrap(v, reference[u])} for u, v in values.items()
    }
    log(name, json.dumps(found))
    return found


def finish(report: dict[str, Any], out: Path | None) -> None:
    print(json.dumps(report, indent=1))
    if out:
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
