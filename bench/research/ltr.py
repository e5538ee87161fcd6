"""A learnt second-stage ranker over the fused candidates, judged by leave-one-conversation-out on both protocols.

    python bench/research/ltr.py --data PATH [--l2 100] [--loco 3,10,30] [--write | --vectors] [--depth 50,100]
        [--out FILE]

Research code (not imported by the product). No cross-encoder installs offline from a package (BENCHMARKS.md,
"Stronger dense side and cross-encoders"), so the second stage is a logistic model over the product's own
features (domain/search/reranking.py: both sides' scores and ranks, thread neighbours, question coverage, …)
and their pairwise products. Candidates and the first stage are the product's (fusion.py's `build`, the linear
fusion; keyword feedback left the product on 2026-11-27, bench/research/JOURNAL.md). The model is fitted on four conversations of both protocols
at once and scored on the fifth (LOCO), so one model must serve turns and facts; `--write` fits it on
all five and writes domain/search/ranker_weights.json, the package data the product reads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusion
from fusion import (
    bootstrap,
    build,
    candidates,
    dense_with_links,
    index_conversation,
    log,
    per_category,
    recall,
    v_current,
)

from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.domain.search import hybrid, ranker_weights, reranking


# research: LTR_FIRST=rrf makes the first stage the fusion re-chosen for nomic (RRF k 10, dense weight 1.5, no
# neighbours' cosine, no feedback); the features stay the product's, with RRF's score as the first-stage score
FIRST = os.environ.get("LTR_FIRST", "product")
RRF = {"k": 10.0, "w": 1.5, "share": 0.0}


def today(q: dict[str, Any]) -> list[int]:
    """The product's first stage: the linear fusion of domain.search.hybrid."""
    if FIRST == "rrf":
        return fusion.v_rrf(q, **RRF)
    return v_current(q)


VECTOR_FEATURES: list[bool] = []  # --vectors: add cosine to the best memory and to the best five's mean


def first_scores(q: dict[str, Any]) -> dict[int, float]:
    """The first stage's fused score per candidate, as the product's fuse gives it."""
    if FIRST == "rrf":
        order = fusion.v_rrf(q, **RRF)
        return {i: 1.0 / (1 + r) for r, i in enumerate(order)}  # rank-based, like RRF's own score
    return {i: 0.5 * dense_with_links(q, i) + 0.5 * q["kw"].get(i, 0.0) for i in candidates(q)}


def features(q: dict[str, Any]) -> tuple[list[int], np.ndarray]:
    """The candidates in the first stage's order and the product's feature rows for them."""
    order = today(q)
    first = first_scores(q)
    around = {n for i in order for n in q["links"][i] if n >= 0}
    every = set(order) | around
    found = reranking.Candidates(
        query=q["question"],
        first=[(str(i), first[i]) for i in order],
        texts={str(i): q["texts"][i] for i in every},
        similarity={str(i): float(q["sims"][i]) for i in every},
        keyword={str(i): v for i, v in q["kw"].items()},
        links={str(i): tuple(str(n) if n >= 0 else None for n in q["links"][i]) for i in order},  # type: ignore[misc]
    )
    rows = np.array(reranking.features(found), dtype=np.float64)
    if not VECTOR_FEATURES:
        return order, rows
    vectors = q["vectors"]  # research only: the product's ranker has no candidate vectors (no port gives them)
    best, top5 = vectors[order[0]], vectors[order[:5]].mean(axis=0)
    extra = np.array([[float(vectors[i] @ best), float(vectors[i] @ top5)] for i in order])
    return order, np.hstack([rows, extra])


def labels(q: dict[str, Any], order: list[int]) -> np.ndarray:
    return np.array([1.0 if q["cited"][i] & q["evidence"] else 0.0 for i in order])


def expand(x: np.ndarray) -> np.ndarray:
    """The features and every pair's product (a ≤ b, in row order), as domain.search.reranking.model_score reads them."""
    n = x.shape[1]
    pairs = [x[:, a] * x[:, b] for a in range(n) for b in range(a, n)]
    return np.hstack([x, np.stack(pairs, axis=1)])


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """Logistic regression by Newton steps on standardised rows: (weights, bias); the bias is not penalised."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    penalty = l2 * np.eye(len(w))
    penalty[-1, -1] = 0.0
    for _ in range(25):
        p = 1 / (1 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + penalty @ w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + penalty
        w -= np.linalg.solve(hess, grad)
    return w[:-1], float(w[-1])


Rows = list[tuple[list[int], np.ndarray, np.ndarray, dict[str, Any]]]


def table_of(conversations: list[dict[str, Any]]) -> dict[str, dict[int, Rows]]:
    """Per protocol and conversation, each query's first-stage order, feature rows, labels and query data."""
    table: dict[str, dict[int, Rows]] = {}
    work = tempfile.mkdtemp()
    for unit in ("turns", "facts"):
        index = SqliteKeywordIndex(Path(work) / f"{unit}.sqlite3")
        saved = [index_conversation(c, unit, index, "default") for c in conversations]
        per_conv = [build(c, unit, index, "default", r) for c, r in zip(conversations, saved, strict=True)]
        table[unit] = {}
        for c, queries in enumerate(per_conv):
            table[unit][c] = []
            for q in queries:
                order, x = features(q)
                table[unit][c].append((order, x, labels(q, order), q))
        log(unit, "features done")
    return table


def train(table: dict[str, dict[int, Rows]], convs: list[int], l2: float) -> dict[str, Any]:
    """A model fitted on some conversations of both protocols: standardisation, weights, bias."""
    raw = np.vstack([x for u in table for c in convs for _, x, _, _ in table[u][c]])
    y = np.concatenate([lab for u in table for c in convs for _, _, lab, _ in table[u][c]])
    mean, spread = raw.mean(axis=0), raw.std(axis=0) + 1e-9
    weights, bias = fit(expand((raw - mean) / spread), y, l2)
    return {
        "mean": mean,
        "spread": spread,
        "weights": weights,
        "bias": bias,
        "low": raw.min(axis=0),
        "high": raw.max(axis=0),
    }


def probabilities(model: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """The product's model_score for each row as a probability: features held to the fitted range first."""
    inside = np.clip(x, model["low"], model["high"])  # as model_score: never extrapolate past what was fitted
    logits = expand((inside - model["mean"]) / model["spread"]) @ model["weights"] + model["bias"]
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(logits, -50.0, 50.0))))


def ranked(
    model: dict[str, Any], order: list[int], x: np.ndarray, margin: float | None = reranking.DOMINANCE_MARGIN
) -> list[int]:
    """The product's second stage: probabilities, capped by dominance on both sides (margin None: no cap), ties
    in first-stage order."""
    scores = probabilities(model, x).tolist()
    if margin is not None:
        scores = reranking.dominance_capped(scores, [reranking.signals(row) for row in x.tolist()], margin)
    return [order[j] for j in sorted(range(len(order)), key=lambda j: (-scores[j], j))]


def write_model(model: dict[str, Any], l2: float, figures: dict[str, Any]) -> None:
    """domain/search/ranker_weights.json: the fitted numbers as the package data the product reads
    (domain.search.ranker_weights.fitted_model); floats written by repr, so they read back exactly."""
    data = {
        "generated_by": "bench/research/ltr.py --write; do not edit",
        "model": "logistic regression over domain.search.reranking.FEATURES and their pairwise products; weights: "
        "the linear ones, then x[a]*x[b] for a <= b in row order",
        "fitted_on": "the 5 conversations of the dev LoCoMo file, turns and facts together",
        "l2": float(l2),
        "in_sample_recall_at_10": figures,
        # the names fitted, in order (tests/unit/test_reranking.py compares them with reranking.FEATURES)
        "features": list(reranking.FEATURES),
        **{key: [float(v) for v in model[key]] for key in ("low", "high", "mean", "spread", "weights")},
        "bias": float(model["bias"]),
    }
    path = Path(__file__).resolve().parents[2] / "domain" / "search" / ranker_weights.WEIGHTS_FILE
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    ranker_weights.fitted_model.cache_clear()


def measure(
    conversations: list[dict[str, Any]], args: argparse.Namespace
) -> tuple[dict[str, Any], dict[str, dict[str, list[float]]], dict[str, Any]]:
    """At fusion.DEPTH: the report, each LOCO row's recall@10 per query and protocol, and the in-sample model."""
    folds = list(range(len(conversations)))
    table = table_of(conversations)
    report: dict[str, Any] = {}
    reference = {u: [recall(q, today(q), 10) for c in folds for _, _, _, q in table[u][c]] for u in table}
    pool = {u: [recall(q, o, len(o)) for c in folds for o, _, _, q in table[u][c]] for u in table}
    report["first stage (today)"] = {u: round(statistics.fmean(v), 4) for u, v in reference.items()}
    report["candidate pool recall"] = {u: round(statistics.fmean(v), 4) for u, v in pool.items()}
    log(report)

    def summary(values: dict[str, list[float]]) -> dict[str, Any]:
        return {
            u: {
                "recall@10": round(statistics.fmean(values[u]), 4),
                "gain": bootstrap(values[u], reference[u]),
                "per_category": per_category({u: [[q for _, _, _, q in table[u][c]] for c in folds]}, u, values[u]),
            }
            for u in table
        }

    per_query: dict[str, dict[str, list[float]]] = {}
    for l2 in sorted({*(float(v) for v in args.loco.split(",")), args.l2}):
        fitted = {held: train(table, [c for c in folds if c != held], l2) for held in folds}
        product = reranking.DOMINANCE_MARGIN
        margins = [None if m == "none" else float(m) for m in args.margins.split(",") if m]
        for margin in dict.fromkeys([product, *margins]):
            loco: dict[str, list[float]] = {u: [] for u in table}
            for held in folds:
                for u in table:
                    loco[u].extend(recall(q, ranked(fitted[held], o, x, margin), 10) for o, x, _, q in table[u][held])
            key = f"LOCO, l2 {l2}" + ("" if margin == product else f", dominance margin {margin}")
            report[key] = summary(loco)
            per_query[key] = loco
            log(key, json.dumps(report[key]))
    model = train(table, folds, args.l2)
    whole = {u: [recall(q, ranked(model, o, x), 10) for c in folds for o, x, _, q in table[u][c]] for u in table}
    report[f"in sample, l2 {args.l2}"] = summary(whole)
    log(f"in sample, l2 {args.l2}", json.dumps(report[f"in sample, l2 {args.l2}"]))
    return report, per_query, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--l2", type=float, default=100.0, help="the penalty the product's model is fitted with")
    parser.add_argument("--loco", default="3,10,30", help="the penalties scored by leave-one-conversation-out")
    parser.add_argument("--margins", default="", help="research: LOCO for these dominance margins too ('none': no cap)")
    parser.add_argument("--vectors", action="store_true", help="research: two features from the candidates' vectors")
    parser.add_argument(
        "--depth",
        default=str(hybrid.DEPTH),
        help="research: each side's top N in the candidate pool (the product's: %(default)s); several, comma-"
        "separated: the model is refitted at each, and each LOCO row gets a paired gain over the first depth",
    )
    parser.add_argument(
        "--write", action="store_true", help="fit on every conversation and write domain/search/ranker_weights.json"
    )
    args = parser.parse_args()
    depths = [int(d) for d in args.depth.split(",")]
    if args.write and depths != [hybrid.DEPTH]:
        parser.error(f"--write fits the product's model, whose pool is {hybrid.DEPTH} deep on each side")
    if args.vectors:
        VECTOR_FEATURES.append(True)
        args.write = False  # the product cannot compute them
    conversations = json.loads(args.data.read_text(encoding="utf-8"))
    reports: dict[int, dict[str, Any]] = {}
    loco: dict[int, dict[str, dict[str, list[float]]]] = {}
    for depth in depths:
        fusion.DEPTH = depth  # fusion's candidates and keyword searches read it at call time
        log(f"depth {depth}")
        reports[depth], loco[depth], model = measure(conversations, args)
    if len(depths) == 1:
        report = reports[depths[0]]
    else:
        base = depths[0]
        for depth in depths[1:]:
            for key, values in loco[depth].items():
                gains = {u: bootstrap(v, loco[base][key][u]) for u, v in values.items()}
                reports[depth][f"{key}: gain over depth {base}"] = gains
                log(depth, key, f"gain over depth {base}", json.dumps(gains))
        report = {f"depth {d}": reports[d] for d in depths}
    if args.write:
        write_model(model, args.l2, {u: v["recall@10"] for u, v in report[f"in sample, l2 {args.l2}"].items()})
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
