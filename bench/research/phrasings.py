"""A second phrasing of the question for the dense side, as second-stage features or in the first stage (issue 13).

Research code (not imported by the product), used by ltr_variants.py. MiniLM embeds a question ("What video
games does Nate play?") away from the statements that answer it ("Nate plays Xenoblade Chronicles"); a second
query text, embedded by the product's embedder (fusion.embed, cached under bench/results/cache), may sit nearer:
- content words: the question's content words (domain.search.tokens.query_terms: question words, auxiliaries and stop
  words gone), e.g. "video games nate play";
- feedback terms: the question plus the keyword feedback's expansion terms (the RM3 words the product's feedback
  searched until 2026-11-27: independent memories among the first stage's top five, pool document frequencies, ten terms); where
  no feedback runs (memories with thread neighbours, or no independent memory in the top five) the fallback text:
  the question itself, or the content words.
`columns` gives each candidate's cosine to the second phrasing and its gap to the best candidate's such cosine
(two more features); `with_max_cosine` makes max(cosine to the question, cosine to the phrasing) the dense side
of the first stage itself (candidates, fusion, feedback and the ranker's similarity features), then rebuilds the
table's rows. Run on its own, it prints the dense side alone (recall@10 of the top ten by cosine over every
memory) for each phrasing:

    python bench/research/phrasings.py --data PATH [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ltr
from fusion import bootstrap, build, candidates, embed, expansion_terms, index_conversation, recall, v_current

from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.domain.search.tokens import query_terms

Table = dict[str, dict[int, ltr.Rows]]
Phrasing = Callable[[dict[str, Any]], str]


def content_text(q: dict[str, Any]) -> str:
    """The question's content words in order (the question itself if it has none)."""
    return " ".join(query_terms(q["question"])) or q["question"]


def feedback_terms(q: dict[str, Any]) -> list[str]:
    """The expansion terms the product's keyword feedback searches for this question (none if it does not run)."""
    first = v_current(q)
    alone = [i for i in first[:5] if q["links"][i] == (-1, -1)] if q.get("unit") == "facts" else []
    if not alone:
        return []
    cands = candidates(q)
    df: dict[str, int] = {}
    for i in cands:
        for term in set(q["words"][i]):
            df[term] = df.get(term, 0) + 1
    return expansion_terms(dict(q, df=df, texts=cands), alone, 10)


def with_feedback(fallback: Phrasing) -> Phrasing:
    """The question plus its feedback terms; `fallback`'s text where no feedback runs."""

    def text(q: dict[str, Any]) -> str:
        terms = feedback_terms(q)
        return f"{q['question']} {' '.join(terms)}" if terms else fallback(q)

    return text


def question_text(q: dict[str, Any]) -> str:
    return str(q["question"])


def _queries(table: Table) -> list[dict[str, Any]]:
    return [q for u in table for c in sorted(table[u]) for _, _, _, q in table[u][c]]


def phrasing_sims(table: Table, phrasing: Phrasing) -> dict[int, np.ndarray]:
    """Per query (by id), the cosine of every memory of its conversation to the phrasing's embedding."""
    queries = _queries(table)
    texts = [phrasing(q) for q in queries]
    vectors = embed(sorted(set(texts)), "query")
    by_text = dict(zip(sorted(set(texts)), vectors, strict=True))
    return {id(q): q["vectors"] @ by_text[t] for q, t in zip(queries, texts, strict=True)}


def columns(table: Table, phrasing: Phrasing) -> Callable[[list[int], dict[str, Any]], np.ndarray]:
    """For ltr_variants.with_columns: each candidate's cosine to the phrasing and its gap to the best candidate's."""
    sims = phrasing_sims(table, phrasing)

    def extra(order: list[int], q: dict[str, Any]) -> np.ndarray:
        cos = sims[id(q)][order].astype(np.float64)
        return np.stack([cos, cos - cos.max()], axis=1)

    return extra


def with_max_cosine(table: Table, phrasing: Phrasing) -> Table:
    """The table rebuilt with max(cosine to the question, cosine to the phrasing) as every memory's cosine."""
    sims = phrasing_sims(table, phrasing)
    out: Table = {}
    for u, per_conv in table.items():
        out[u] = {}
        for c, rows in per_conv.items():
            out[u][c] = []
            for _, _, _, q in rows:
                moved = dict(q, sims=np.maximum(q["sims"], sims[id(q)]))
                order, x = ltr.features(moved)
                out[u][c].append((order, x, ltr.labels(moved, order), moved))
    return out


def dense_alone(conversations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per protocol, recall@10 of the top ten memories by cosine for each phrasing and for the max with the question,
    and of the first stage (fused, feedback for independent memories) with that max as its cosine; each with its
    paired gain over the question alone (dense) or today's first stage (fused) and a 95% bootstrap interval."""
    table: Table = {}
    with tempfile.TemporaryDirectory() as work:
        for unit in ("turns", "facts"):
            index = SqliteKeywordIndex(Path(work) / f"{unit}.sqlite3")
            saved = [index_conversation(c, unit, index, "default") for c in conversations]
            built = [build(c, unit, index, "default", r) for c, r in zip(conversations, saved, strict=True)]
            table[unit] = {c: [([], np.zeros(0), np.zeros(0), q) for q in qs] for c, qs in enumerate(built)}
        kinds = {
            "content words": content_text,
            "question + feedback terms (else question)": with_feedback(question_text),
            "question + feedback terms (else content words)": with_feedback(content_text),
        }
        sims = {name: phrasing_sims(table, phrasing) for name, phrasing in kinds.items()}
    report: dict[str, dict[str, Any]] = {}
    for unit, per_conv in table.items():
        queries = [q for c in sorted(per_conv) for _, _, _, q in per_conv[c]]

        def top(scores: np.ndarray) -> list[int]:
            return [int(i) for i in np.argsort(-scores, kind="stable")[:10]]

        dense = [recall(q, top(q["sims"]), 10) for q in queries]
        fused = [recall(q, ltr.today(q), 10) for q in queries]
        rows: dict[str, Any] = {"dense, question": round(statistics.fmean(dense), 4)}
        rows["fused first stage, today"] = round(statistics.fmean(fused), 4)
        for name, by_query in sims.items():
            for label, values, base in [
                (f"dense, {name}", [recall(q, top(by_query[id(q)]), 10) for q in queries], dense),
                (
                    f"dense, max(question, {name})",
                    [recall(q, top(np.maximum(q["sims"], by_query[id(q)])), 10) for q in queries],
                    dense,
                ),
                (
                    f"fused first stage, max(question, {name})",
                    [recall(q, ltr.today(dict(q, sims=np.maximum(q["sims"], by_query[id(q)]))), 10) for q in queries],
                    fused,
                ),
            ]:
                rows[label] = {"recall@10": round(statistics.fmean(values), 4), "gain": bootstrap(values, base)}
        report[unit] = rows
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = dense_alone(json.loads(args.data.read_text(encoding="utf-8")))
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
