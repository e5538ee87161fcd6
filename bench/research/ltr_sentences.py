"""Does the best-matching sentence of a memory say more than the whole memory's vector? Judged by LOCO.

    python bench/research/ltr_sentences.py --data PATH [--out FILE]

Research code (not imported by the product). A chatty conversation turn ("Hey Mel! Good to see you! I went
to a pottery class yesterday, it was great.") is embedded as one mean-pooled vector, in which the greeting
dilutes the sentence that answers a question. Here every candidate of the second stage's pool is split into
sentences, each sentence embedded by the product's embedder, and the best sentence's cosine to the question
(and its gap to the pool's best) added to the product's 21 features; the product's logistic model is refitted
with them and scored by leave-one-conversation-out on both protocols (ltr_gbdt.py's table and loop). The
product would need a vector per sentence at ingest (more vectors per memory) to use it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion import embed, log
from ltr_gbdt import Table, finish, load_table, loco, logistic, row

SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    parts = [p.strip() for p in SENTENCE.split(text) if len(p.split()) >= 2]
    return parts or [text]


def with_sentence_columns(table: Table, whole_cosine: bool) -> Table:
    texts = sorted(
        {
            s
            for t in table.values()
            for rows in t.values()
            for o, _, _, q in rows
            for i in o
            for s in sentences(q["texts"][i])
        }
    )
    questions = sorted({q["question"] for t in table.values() for rows in t.values() for _, _, _, q in rows})
    log(f"{len(texts)} sentences, {len(questions)} questions")
    vector = dict(zip(texts, embed(texts, "passage"), strict=True))
    asked = dict(zip(questions, embed(questions, "query"), strict=True))

    def columns(order: list[int], x: np.ndarray, q: dict[str, Any]) -> np.ndarray:
        v = asked[q["question"]]
        best = np.array([max(float(vector[s] @ v) for s in sentences(q["texts"][i])) for i in order])
        extra = [best, best - best.max()]
        if whole_cosine:
            extra.append(best - x[:, 0])  # column 0: the memory's own cosine
        return np.hstack([x, np.stack(extra, axis=1)])

    return {
        u: {c: [(o, columns(o, x, q), y, q) for o, x, y, q in rows] for c, rows in t.items()} for u, t in table.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    table = load_table(args.data)
    split = [len(sentences(q["texts"][i])) for rows in table["turns"].values() for o, _, _, q in rows for i in o]
    log("turn candidates with more than one sentence:", round(sum(n > 1 for n in split) / len(split), 3))
    report: dict[str, Any] = {}
    reference = loco(table, logistic)
    for name, variant in (
        ("logistic (the product's)", table),
        ("+ best sentence's cosine, its gap to the best", with_sentence_columns(table, whole_cosine=False)),
        ("+ the same and its lead over the whole memory's cosine", with_sentence_columns(table, whole_cosine=True)),
    ):
        report[name] = row(name, reference if variant is table else loco(variant, logistic), reference)
    finish(report, args.out)


if __name__ == "__main__":
    main()
