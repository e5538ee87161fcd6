"""Reference implementation of the recommended default hybrid search (see FINDINGS.md), stand-alone.

One `HybridSpace` per namespace/store. Memories are added in order; each memory's neighbours are the
memory added just before it and just after it in the same space.

Ingest (per memory): embed the memory's own content once (MiniLM-L6 int8; no context window is
embedded); insert an FTS5 row (content, prev = previous memory's content, next = ''); set the previous
row's `next` column to this memory's content.

Search (query q, k results):
  1. terms  = lower-cased word tokens of q ([^\\W_]+), minus English stop words and 1-letter tokens,
              de-duplicated; each double-quoted, joined with OR.
  2. kw     = FTS5 rows matching {content prev next} : (terms), ranked by bm25(m, 1.0, 0.5, 0.5), top 50;
              kwscore = -bm25 / (-bm25 of the best row)   (in (0, 1]; 0 for rows not in this top 50)
  3. dense  = cos(q, v_i) for every memory (brute force; a vector store returns the top 50 instead);
              candidates = top 50 by cos(q, v_i)  ∪  the keyword top 50;
              dscore(i) = cos(q, v_i) + 0.25 cos(q, v_prev(i)) + 0.25 cos(q, v_next(i))  (missing neighbour: 0)
  4. score  = 0.5 * dscore + 0.5 * kwscore over the candidates; return the top k.

    python recipe.py            # runs the BENCHMARK.md protocol through this class; prints JSON
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time

import numpy as np
from kwsearch import match_expr, query_terms

DEPTH = 50  # candidates per side
ALPHA = 0.5  # weight of the dense score
KW_PREV = 0.5  # bm25 weight of the previous memory's text
KW_NEXT = 0.5  # bm25 weight of the next memory's text
COS_PREV = 0.25  # weight of the previous memory's cosine
COS_NEXT = 0.25  # weight of the next memory's cosine
TOKENIZE = "porter unicode61 remove_diacritics 2"


class HybridSpace:
    def __init__(self, embedder, path: str = ":memory:") -> None:
        self.embedder = embedder  # .embed(list[str]) -> (n, 384) unit vectors
        self.db = sqlite3.connect(path)
        self.db.execute(f'CREATE VIRTUAL TABLE m USING fts5(content, prev, next, tokenize="{TOKENIZE}")')
        self.vecs = np.zeros((0, 384), dtype=np.float32)
        self.tags: list[str] = []
        self.texts: list[str] = []

    def add_many(self, texts: list[str], tags: list[str], vectors: np.ndarray | None = None) -> None:
        if vectors is None:
            vectors = self.embedder.embed(texts)
        start = len(self.texts)
        with self.db:
            for j, text in enumerate(texts):
                i = start + j
                prev = self.texts[i - 1] if i else ""
                self.db.execute("INSERT INTO m(rowid, content, prev, next) VALUES (?, ?, ?, '')", (i + 1, text, prev))
                if i:
                    self.db.execute("UPDATE m SET next = ? WHERE rowid = ?", (text, i))
                self.texts.append(text)
        self.tags.extend(tags)
        self.vecs = np.concatenate([self.vecs, vectors.astype(np.float32)])

    def search(self, query: str, k: int = 10, qvec: np.ndarray | None = None) -> list[tuple[str, float]]:
        n = len(self.texts)
        if n == 0:
            return []
        if qvec is None:
            qvec = self.embedder.embed([query])[0]
        # keyword side
        kw: dict[int, float] = {}
        terms = query_terms(query)
        if terms:
            rows = self.db.execute(
                f"SELECT rowid, bm25(m, 1.0, {KW_PREV}, {KW_NEXT}) AS s FROM m "
                f"WHERE m MATCH ? ORDER BY s LIMIT {DEPTH}",
                ("{content prev next} : (" + match_expr(terms) + ")",),
            ).fetchall()
            if rows:
                best = -rows[0][1]
                for rowid, s in rows:
                    kw[rowid - 1] = (-s / best) if best > 0 else 0.0
        # dense side
        cos = self.vecs @ qvec
        d = min(DEPTH, n)
        top = np.argpartition(-cos, d - 1)[:d] if d < n else np.arange(n)
        cand = set(top.tolist()) | kw.keys()
        scored = []
        for i in cand:
            ds = cos[i]
            if i > 0:
                ds += COS_PREV * cos[i - 1]
            if i + 1 < n:
                ds += COS_NEXT * cos[i + 1]
            scored.append((ALPHA * float(ds) + (1 - ALPHA) * kw.get(i, 0.0), i))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [(self.tags[i], s) for s, i in scored[:k]]


def main() -> None:
    from common import embed_cached, get_model, load

    convs = load()
    model = get_model("l6")
    all_texts = [m.text for c in convs for m in c.memories]
    all_vecs = embed_cached("l6", all_texts, "passage")  # cached vectors of the same texts (same model)
    qv = embed_cached("l6", [q.question for c in convs for q in c.queries], "query")
    r5, r10, rr, per_cat, lat = [], [], [], {}, []
    off = qi = 0
    for c in convs:
        space = HybridSpace(model)
        n = len(c.memories)
        space.add_many([m.text for m in c.memories], [m.dia_id for m in c.memories], all_vecs[off : off + n])
        off += n
        for q in c.queries:
            t0 = time.perf_counter()
            res = space.search(q.question, 10, qvec=qv[qi])
            lat.append(time.perf_counter() - t0)
            qi += 1
            got = [t for t, _ in res]
            ev = set(q.evidence)
            r5.append(len(ev & set(got[:5])) / len(q.evidence))
            r10.append(len(ev & set(got)) / len(q.evidence))
            rr.append(next((1 / (p + 1) for p, t in enumerate(got) if t in ev), 0.0))
            per_cat.setdefault(q.category, []).append(r10[-1])
    print(
        json.dumps(
            {
                "recall@5": round(float(np.mean(r5)), 4),
                "recall@10": round(float(np.mean(r10)), 4),
                "mrr@10": round(float(np.mean(rr)), 4),
                "queries": len(r10),
                "per_category": {k: round(float(np.mean(v)), 4) for k, v in sorted(per_cat.items())},
                "search_ms_p50_excluding_query_embedding": round(float(np.median(lat)) * 1e3, 3),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
