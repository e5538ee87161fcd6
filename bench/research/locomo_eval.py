"""Fast research harness for hybrid retrieval on LoCoMo (protocol of shared/BENCHMARK.md).

Each conversation is its own space; one memory per turn ("{speaker}: {text}" [+ " [image: caption]"]);
queries = qa items of category 1-4 with evidence; recall@k = |evidence ∩ top-k| / |evidence|
(evidence ids that match no turn stay in the denominator); MRR of the first evidence hit (top 100).

Dense side: numpy brute force over cached embeddings (embed_all.py fills /tmp/research-cache).
Keyword side: SQLite FTS5 bm25, one in-memory table per conversation.
Every method with a tuned parameter is also scored leave-one-conversation-out (LOCO): the parameters
are chosen on four conversations (best pooled recall@10) and evaluated on the fifth; the LOCO column
is the honest estimate, the other columns are for the best point on all five (in-sample).

    python locomo_eval.py [--models l6,l3,e5] [--suite final|base,ctx,fusion] [--only SUBSTR] [--json F]

Prints a table on stdout (then the per-fold LOCO choices, a paired bootstrap of the recipe against the
other rows, and one JSON object in the shape of BENCHMARK.md for the recipe with its semantic and
keyword modes) and writes all numbers as JSON (default results/<suite>.json).
The recommended recipe is RECIPE below; recipe.py is the same method as an incremental index class.

Neighbours: "prev"/"next" of a memory are the memories added just before/after it in the same space
(insertion order), which is all the product can know. On the dense side a neighbour's cosine is
cheap (its vector is stored); on the keyword side the neighbours' texts are extra FTS5 columns.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from common import embed_cached, embed_rate, load, log
from kwsearch import FtsIndex, query_terms
from variants import doc_texts

NEG = -np.inf
BIG = 10**9

DENSE_VARIANTS = {"l6": ["plain", "prev1"], "l3": ["plain", "prev1", "prev2", "next1", "nospk"], "e5": ["plain"]}
CTX_W = (0.0, 0.25, 0.5, 0.75, 1.0)


def kw_key(tok: str, qmode: str, wp: float = 0.0, wn: float = 0.0, layout: str = "pn", cut: bool = False) -> str:
    if not (wp or wn):
        layout, cut = "plain", False
    return f"{tok}:{qmode}:p{wp}:n{wn}" + ("" if layout == "pn" else f":{layout}") + (":cut" if cut else "")


# (tokenizer, query mode, w_prev, w_next, layout, cut neighbours at session boundaries)
KW_SIGNALS = (
    [(tok, qm, 0.0, 0.0, "plain", False) for tok in ("u61", "u61d", "porter") for qm in ("all", "stop")]
    + [("porter", f"df{t}", 0.0, 0.0, "plain", False) for t in ("0.05", "0.1", "0.2", "0.3")]
    + [("porter", "stop", wp, wn, "pn", False) for wp in CTX_W for wn in CTX_W if wp or wn]
    + [("u61", "stop", 0.5, wn, "pn", False) for wn in (0.0, 0.5)]
    + [("porter", f"dfany{t}", 0.5, 0.5, "pn", False) for t in ("0.1", "0.2", "0.3", "0.5")]
)


# --------------------------------------------------------------------------- per-query signals


@dataclass
class Q:
    conv: int
    cat: int
    question: str
    evidence: list[str]
    dia: list[str]  # dia_id per memory of the conversation
    dense: dict[str, np.ndarray]  # "model:variant" -> cosine per memory
    kw: dict[str, tuple[np.ndarray, np.ndarray]]  # kw_key -> (score per memory, matched mask)
    qvec: dict[str, np.ndarray]
    dvec: dict[str, np.ndarray]  # doc vectors (shared per conversation)
    sess: np.ndarray  # session number per memory (analysis of session-cut neighbours)


def build_queries(models: list[str]) -> tuple[list[Q], dict]:
    convs = load()
    qtexts = [q.question for c in convs for q in c.queries]
    qv = {m: embed_cached(m, qtexts, "query") for m in models}
    dv: dict[str, list[np.ndarray]] = {}
    rates = {}
    for m in models:
        rates[f"{m}:query"] = embed_rate(m, qtexts, "query")
        for v in DENSE_VARIANTS.get(m, ["plain"]):
            texts = [t for c in convs for t in doc_texts(c, v)]
            allv = embed_cached(m, texts, "passage")
            rates[f"{m}:{v}"] = embed_rate(m, texts, "passage")
            parts, off = [], 0
            for c in convs:
                parts.append(allv[off : off + len(c.memories)])
                off += len(c.memories)
            dv[f"{m}:{v}"] = parts
    out: list[Q] = []
    qi = 0
    for ci, c in enumerate(convs):
        texts = [m.text for m in c.memories]
        sess = np.array([m.session for m in c.memories])
        prev = [""] + texts[:-1]
        nxt = texts[1:] + [""]
        prev_cut = [p if i and sess[i - 1] == sess[i] else "" for i, p in enumerate(prev)]
        nxt_cut = [x if i + 1 < len(texts) and sess[i + 1] == sess[i] else "" for i, x in enumerate(nxt)]
        idx: dict[tuple, FtsIndex] = {}
        for tok, _, wp, wn, layout, cut in KW_SIGNALS:
            key = (tok, layout if (wp or wn) else "plain", cut)
            if key not in idx:
                idx[key] = FtsIndex(texts, tok, key[1], prev=prev_cut if cut else prev, nxt=nxt_cut if cut else nxt)
        dia = [m.dia_id for m in c.memories]
        for q in c.queries:
            dense, qvec = {}, {}
            for key, parts in dv.items():
                m = key.split(":")[0]
                qvec[m] = qv[m][qi]
                dense[key] = parts[ci] @ qv[m][qi]
            kw = {}
            for tok, qmode, wp, wn, layout, cut in KW_SIGNALS:
                fi = idx[(tok, layout if (wp or wn) else "plain", cut)]
                terms = query_terms(q.question, stop=(qmode != "all"))
                if qmode.startswith("dfany"):
                    # drop terms found in more than a fraction of rows (any column); keep the rarest if none left
                    lim = float(qmode[5:])
                    kept = [t for t in terms if fi.doc_freq_any(t) <= lim * fi.n]
                    terms = kept or sorted(terms, key=fi.doc_freq_any)[:1]
                elif qmode.startswith("df"):
                    lim = float(qmode[2:])
                    terms = [t for t in terms if fi.doc_freq(t) <= lim * fi.n] or terms
                kw[kw_key(tok, qmode, wp, wn, layout, cut)] = fi.scores(terms, w_prev=wp, w_next=wn)
            out.append(
                Q(ci, q.category, q.question, q.evidence, dia, dense, kw, qvec, {k: v[ci] for k, v in dv.items()}, sess)
            )
            qi += 1
    return out, rates


# --------------------------------------------------------------------------- metrics


def metrics(q: Q, scores: np.ndarray) -> tuple[float, float, float]:
    """recall@5, recall@10, reciprocal rank of the first evidence hit within the top 100."""
    s = np.where(np.isfinite(scores), scores, -1e300)
    n = len(s)
    k = min(100, n)
    top = np.argpartition(-s, k - 1)[:k] if k < n else np.arange(n)
    top = top[np.argsort(-s[top], kind="stable")]
    top = top[s[top] > -1e300]
    ranked = [q.dia[i] for i in top]
    ev = set(q.evidence)
    r5 = len(ev & set(ranked[:5])) / len(q.evidence)
    r10 = len(ev & set(ranked[:10])) / len(q.evidence)
    rr = next((1.0 / (p + 1) for p, d in enumerate(ranked) if d in ev), 0.0)
    return r5, r10, rr


# --------------------------------------------------------------------------- building blocks


def top_ranks(scores: np.ndarray, depth: int, valid: np.ndarray | None = None) -> np.ndarray:
    """1-based rank of each memory among the top `depth` by score (0 = not a candidate)."""
    s = scores if valid is None else np.where(valid, scores, -np.inf)
    n = len(s)
    avail = n if valid is None else int(valid.sum())
    d = min(depth, avail)
    ranks = np.zeros(n, dtype=np.int64)
    if d <= 0:
        return ranks
    top = np.argpartition(-s, d - 1)[:d] if d < n else np.arange(n)
    top = top[np.argsort(-s[top], kind="stable")]
    ranks[top] = np.arange(1, len(top) + 1)
    return ranks


def shift_prev(x: np.ndarray) -> np.ndarray:
    """value of the previous memory (0 for the first)."""
    return np.concatenate([[0.0], x[:-1]])


def shift_next(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x[1:], [0.0]])


def rrf(rank_lists: list[np.ndarray], k: float, weights: list[float]) -> np.ndarray:
    out = np.zeros(len(rank_lists[0]))
    any_c = np.zeros(len(rank_lists[0]), dtype=bool)
    for r, w in zip(rank_lists, weights):
        c = r > 0
        out[c] += w / (k + r[c])
        any_c |= c
    return np.where(any_c, out, NEG)


def norm(scores: np.ndarray, cand: np.ndarray, how: str) -> np.ndarray:
    """Normalise over the candidate set; non-candidates get the floor (0 for min-max / max)."""
    out = np.zeros(len(scores))
    if not cand.any():
        return out
    s = scores[cand]
    if how == "minmax":
        lo, hi = s.min(), s.max()
        out[cand] = (s - lo) / (hi - lo) if hi > lo else 1.0
    elif how == "z":
        sd = s.std()
        z = (s - s.mean()) / sd if sd > 0 else np.zeros_like(s)
        out[cand] = z
        out[~cand] = z.min()
    elif how == "max":
        hi = s.max()
        out[cand] = s / hi if hi > 0 else 0.0
    elif how == "raw":
        out[cand] = s
    return out


def dense_signal(
    q: Q, d: str, wp: float = 0.0, wn: float = 0.0, mix: str | None = None, wmix: float = 0.0, cut: bool = False
) -> np.ndarray:
    """cos(q, turn) [+ wmix * cos(q, context-embedding)] + wp * cos(q, prev turn) + wn * cos(q, next turn)."""
    x = q.dense[d]
    if mix:
        x = x + wmix * q.dense[mix]
    if wp or wn:
        base = q.dense[d]
        p, n = shift_prev(base), shift_next(base)
        if cut:
            p = np.where(shift_prev(q.sess.astype(float)) == q.sess, p, 0.0)
            n = np.where(shift_next(q.sess.astype(float)) == q.sess, n, 0.0)
        x = x + wp * p + wn * n
    return x


# --------------------------------------------------------------------------- methods


@dataclass
class Method:
    name: str
    fn: Callable[..., np.ndarray]
    grid: dict[str, list]
    note: str = ""


def m_kw(key: str) -> Callable[..., np.ndarray]:
    def fn(q: Q) -> np.ndarray:
        s, hit = q.kw[key]
        return np.where(hit, s, NEG)

    return fn


def m_kw_ctx(tok: str = "porter") -> Callable[..., np.ndarray]:
    def fn(q: Q, wp: float, wn: float) -> np.ndarray:
        s, hit = q.kw[kw_key(tok, "stop", wp, wn)]
        return np.where(hit, s, NEG)

    return fn


def m_dense(d: str, mix: str | None = None) -> Callable[..., np.ndarray]:
    def fn(q: Q, wp: float = 0.0, wn: float = 0.0, wmix: float = 0.0) -> np.ndarray:
        return dense_signal(q, d, wp, wn, mix, wmix)

    return fn


def m_hybrid(
    d: str,
    fusion: str = "minmax",
    tok: str = "porter",
    qmode: str = "stop",
    mix: str | None = None,
    fixed: dict | None = None,
) -> Callable[..., np.ndarray]:
    """Hybrid of a dense signal and an FTS5 signal.

    fusion: "rrf" (k, wd) | "minmax" / "z" / "max" (alpha: dense weight; dnorm/knorm override per side,
    "raw" = no normalisation) ; depth = candidates per side.
    dwp/dwn: neighbour-cosine weights (dense); kwp/kwn: neighbour-column weights (FTS5);
    gamma: neighbour boost on the fused score.
    real=True: dense candidates are the top `depth` by the turn's own cosine (what a vector store returns),
    then rescored with the neighbour cosines (the product fetches the neighbours' stored vectors);
    real=False: top `depth` by the neighbour-augmented score (only the same at depth = all).
    """
    fixed = fixed or {}

    def fn(q: Q, **p) -> np.ndarray:
        p = {**fixed, **p}
        depth = p.get("depth", BIG)
        cut = p.get("cut", False)
        dsc = dense_signal(q, d, p.get("dwp", 0.0), p.get("dwn", 0.0), mix, p.get("wmix", 0.0), cut)
        s, hit = q.kw[kw_key(tok, qmode, p.get("kwp", 0.0), p.get("kwn", 0.0), p.get("layout", "pn"), cut)]
        if p.get("real", True) and depth < len(dsc):
            dc = top_ranks(q.dense[d], depth) > 0
            dr = np.zeros(len(dsc), dtype=np.int64)
            order = np.flatnonzero(dc)
            order = order[np.argsort(-dsc[order], kind="stable")]
            dr[order] = np.arange(1, len(order) + 1)
        else:
            dr = top_ranks(dsc, depth)
        kr = top_ranks(s, depth, hit)
        if p.get("expand"):
            # neighbours of the dense candidates become candidates too (their own neighbour-augmented cosine)
            c = dr > 0
            extra = (shift_prev(c.astype(float)) > 0) | (shift_next(c.astype(float)) > 0)
            extra &= ~c
            if extra.any():
                dr = dr.copy()
                dr[extra] = dr.max() + 1
        if p.get("fill") and fusion != "rrf":
            # every candidate of either side is scored on both sides (what a brute-force store can do)
            cand = (dr > 0) | (kr > 0)
            a = p.get("alpha", 0.5)
            kcand = (cand & hit) if p["fill"] != "dense" else (kr > 0)
            f = a * norm(dsc, cand, p.get("dnorm", fusion)) + (1 - a) * norm(s, kcand, p.get("knorm", fusion))
        elif fusion == "rrf":
            f = rrf([dr, kr], p.get("k", 60), [p.get("wd", 1.0), 1.0])
            f = np.where(np.isfinite(f), f, 0.0)
        else:
            a = p.get("alpha", 0.5)
            f = a * norm(dsc, dr > 0, p.get("dnorm", fusion)) + (1 - a) * norm(s, kr > 0, p.get("knorm", fusion))
            if fusion == "z":
                f = f - f.min()
        cand = (dr > 0) | (kr > 0)
        g = p.get("gamma", 0.0)
        if g:
            f0 = np.where(cand, f, 0.0)
            f = f0 + g * np.maximum(shift_prev(f0), shift_next(f0))
            cand = cand | (shift_prev(cand.astype(float)) > 0) | (shift_next(cand.astype(float)) > 0)
        return np.where(cand, f, NEG)

    return fn


def m_prf(d: str, fixed: dict) -> Callable[..., np.ndarray]:
    """Hybrid, then dense pseudo-relevance feedback (Rocchio): q' = q + beta * mean(vectors of the top m
    fused results), re-run the same hybrid with q'."""
    base = m_hybrid(d, fixed=fixed)
    model = d.split(":")[0]

    def fn(q: Q, beta: float, m: int = 3) -> np.ndarray:
        f = base(q)
        top = np.argsort(-f)[:m]
        qv = q.qvec[model] + beta * q.dvec[d][top].mean(0)
        qv = qv / np.linalg.norm(qv)
        q2 = Q(
            q.conv, q.cat, q.question, q.evidence, q.dia, {**q.dense, d: q.dvec[d] @ qv}, q.kw, q.qvec, q.dvec, q.sess
        )
        return base(q2)

    return fn


# --------------------------------------------------------------------------- evaluation


def grid_points(grid: dict[str, list]) -> list[dict]:
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def summary(m: np.ndarray, cats: np.ndarray) -> dict:
    return {
        "recall@5": round(float(m[:, 0].mean()), 4),
        "recall@10": round(float(m[:, 1].mean()), 4),
        "mrr": round(float(m[:, 2].mean()), 4),
        "per_category_r10": {int(c): round(float(m[cats == c, 1].mean()), 4) for c in sorted(np.unique(cats))},
        "queries": len(m),
    }


def evaluate(method: Method, qs: list[Q], keep_per_query: bool = False) -> dict:
    points = grid_points(method.grid)
    m = np.zeros((len(points), len(qs), 3))
    for pi, p in enumerate(points):
        for qi, q in enumerate(qs):
            m[pi, qi] = metrics(q, method.fn(q, **p))
    conv = np.array([q.conv for q in qs])
    cats = np.array([q.cat for q in qs])
    best = int(np.argmax(m[:, :, 1].mean(1)))
    res: dict = {"name": method.name, "note": method.note, "params": points[best]}
    res.update(summary(m[best], cats))
    res["per_conv_r10"] = [round(float(m[best, conv == c, 1].mean()), 4) for c in np.unique(conv)]
    if len(points) > 1:
        loco = np.zeros((len(qs), 3))
        chosen = {}
        for c in np.unique(conv):
            train = conv != c
            b = int(np.argmax(m[:, train, 1].mean(1)))
            loco[conv == c] = m[b, conv == c]
            chosen[int(c)] = points[b]
        res["loco"] = summary(loco, cats)
        res["loco_params"] = chosen
        res["n_points"] = len(points)
        if keep_per_query:
            res["_loco_r10"] = loco[:, 1]
    if keep_per_query:
        res["_r10"] = m[best, :, 1]
    return res


def print_table(results: list[dict]) -> None:
    hdr = (
        f"{'method':64s} {'R@5':>6s} {'R@10':>6s} {'MRR':>6s} {'c1':>6s} {'c2':>6s} {'c3':>6s} {'c4':>6s}"
        f" {'LOCO@10':>8s}  params (best on all five)"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        pc = r["per_category_r10"]
        loco = f"{r['loco']['recall@10']:.4f}" if "loco" in r else "   -"
        params = {k: v for k, v in r["params"].items()}
        if params.get("depth") == BIG:
            params["depth"] = "all"
        print(
            f"{r['name'][:64]:64s} {r['recall@5']:.4f} {r['recall@10']:.4f} {r['mrr']:.4f} "
            f"{pc.get(1, 0):.4f} {pc.get(2, 0):.4f} {pc.get(3, 0):.4f} {pc.get(4, 0):.4f} {loco:>8s}  {params}"
        )
    sys.stdout.flush()


# --------------------------------------------------------------------------- experiment suites

W = [0.0, 0.25, 0.5, 0.75, 1.0]


def suite_base(models: list[str]) -> list[Method]:
    M = []
    for tok in ("u61", "u61d", "porter"):
        for qm in ("all", "stop"):
            M.append(Method(f"kw fts5 {tok} q={qm}", m_kw(kw_key(tok, qm)), {}))
    for t in ("0.05", "0.1", "0.2", "0.3"):
        M.append(Method(f"kw fts5 porter q=stop, drop terms df>{t}N", m_kw(kw_key("porter", f"df{t}")), {}))
    for m in models:
        for v in DENSE_VARIANTS[m]:
            M.append(Method(f"dense {m} {v}", m_dense(f"{m}:{v}"), {}))
        M.append(
            Method(
                f"rrf60 {m}:plain + fts5 u61 all-terms (field-notes baseline)",
                m_hybrid(f"{m}:plain", "rrf", tok="u61", qmode="all"),
                {},
            )
        )
        M.append(Method(f"rrf60 {m}:plain + fts5 porter stop", m_hybrid(f"{m}:plain", "rrf"), {}))
    return M


def suite_ctx(models: list[str]) -> list[Method]:
    M = []
    for wp in (0.25, 0.5, 1.0):
        M.append(Method(f"kw fts5 porter + prev column w={wp}", m_kw(kw_key("porter", "stop", wp, 0.0)), {}))
    for wn in (0.25, 0.5, 1.0):
        M.append(Method(f"kw fts5 porter + next column w={wn}", m_kw(kw_key("porter", "stop", 0.0, wn)), {}))
    M.append(Method("kw fts5 porter + prev,next columns w=0.5,0.5", m_kw(kw_key("porter", "stop", 0.5, 0.5)), {}))
    M.append(Method("kw fts5 u61 + prev,next columns w=0.5,0.5", m_kw(kw_key("u61", "stop", 0.5, 0.5)), {}))
    M.append(Method("kw fts5 porter + prev/next columns (wp,wn tuned)", m_kw_ctx(), {"wp": W, "wn": W}))
    for m in models:
        d = f"{m}:plain"
        M.append(Method(f"dense {m} + prev/next neighbour cosine (wp,wn tuned)", m_dense(d), {"wp": W, "wn": W}))
        if "prev1" in DENSE_VARIANTS[m]:
            M.append(
                Method(
                    f"dense {m} plain + w*cos(prev+turn embedding)",
                    m_dense(d, mix=f"{m}:prev1"),
                    {"wmix": [0.25, 0.5, 0.75, 1.0]},
                )
            )
    return M


def suite_fusion(models: list[str]) -> list[Method]:
    M = []
    for m in models:
        d = f"{m}:plain"
        M.append(
            Method(
                f"rrf {m} + porter (k, depth, wd)",
                m_hybrid(d, "rrf"),
                {"k": [5, 10, 20, 30, 60], "depth": [20, 50, 100, BIG], "wd": [0.8, 1.0, 1.25]},
            )
        )
        for how in ("minmax", "z", "max"):
            M.append(
                Method(
                    f"lin-{how} {m} + porter (alpha, depth)",
                    m_hybrid(d, how),
                    {"alpha": [0.4, 0.5, 0.6, 0.7], "depth": [20, 50, 100, BIG]},
                )
            )
        # neighbours on both sides
        M.append(
            Method(
                f"rrf {m} + porter, nbr cols/cos (k, kwp, kwn, dwp, dwn)",
                m_hybrid(d, "rrf"),
                {
                    "k": [10, 30, 60],
                    "kwp": [0.25, 0.5],
                    "kwn": [0.25, 0.5],
                    "dwp": [0.0, 0.25, 0.5],
                    "dwn": [0.0, 0.25, 0.5],
                },
            )
        )
        M.append(
            Method(
                f"lin-minmax {m} + porter, nbr cols/cos (alpha, kwp, kwn, dwp, dwn)",
                m_hybrid(d, "minmax"),
                {
                    "alpha": [0.4, 0.5, 0.6],
                    "kwp": [0.25, 0.5, 0.75],
                    "kwn": [0.25, 0.5, 0.75],
                    "dwp": [0.0, 0.25, 0.5],
                    "dwn": [0.0, 0.25, 0.5],
                },
            )
        )
        M.append(
            Method(
                f"lin-minmax {m} + porter, fused-score neighbour boost (alpha, gamma)",
                m_hybrid(d, "minmax"),
                {"alpha": [0.4, 0.5, 0.6, 0.7], "gamma": [0.0, 0.1, 0.2, 0.3, 0.5]},
            )
        )
    return M


# The recommended default hybrid (see FINDINGS.md): FTS5 porter with prev/next columns weighted 0.5,
# top 50 per side, dense score = cos(turn) + 0.25 cos(prev) + 0.25 cos(next) for every candidate,
# fused = 0.5 * dense + 0.5 * bm25 / best bm25 (bm25 0 outside the keyword top 50).
RECIPE = {
    "depth": 50,
    "fill": "dense",
    "dnorm": "raw",
    "knorm": "max",
    "alpha": 0.5,
    "kwp": 0.5,
    "kwn": 0.5,
    "dwp": 0.25,
    "dwn": 0.25,
}
NO_NBR = {"kwp": 0.0, "kwn": 0.0, "dwp": 0.0, "dwn": 0.0}


def suite_final(models: list[str]) -> list[Method]:
    M = [
        Method("kw fts5 unicode61, all query terms", m_kw(kw_key("u61", "all")), {}),
        Method("kw fts5 porter, stop words dropped", m_kw(kw_key("porter", "stop")), {}),
        Method("kw fts5 porter + prev/next columns (0.5, 0.5)", m_kw(kw_key("porter", "stop", 0.5, 0.5)), {}),
    ]
    for m in models:
        d = f"{m}:plain"
        M += [
            Method(f"dense {m}", m_dense(d), {}),
            Method(f"dense {m} + 0.25 cos(prev) + 0.25 cos(next)", m_dense(d), {"wp": [0.25], "wn": [0.25]}),
            Method(
                f"rrf60 {m} + fts5 unicode61 all terms (field-notes baseline)",
                m_hybrid(d, "rrf", tok="u61", qmode="all"),
                {},
            ),
            Method(f"rrf60 {m} + fts5 porter stop", m_hybrid(d, "rrf"), {}),
            Method(
                f"linear {m} + porter, no neighbours (alpha LOCO)",
                m_hybrid(d, fixed={**RECIPE, **NO_NBR}),
                {"alpha": [0.3, 0.4, 0.5, 0.6, 0.7]},
            ),
            Method(f"RECIPE {m} (fixed)", m_hybrid(d, fixed=RECIPE), {}),
            Method(f"RECIPE {m}, alpha LOCO", m_hybrid(d, fixed=RECIPE), {"alpha": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]}),
            Method(
                f"RECIPE {m}, all five weights LOCO",
                m_hybrid(d, fixed=RECIPE),
                {
                    "alpha": [0.3, 0.4, 0.5, 0.6],
                    "kwp": [0.25, 0.5, 0.75],
                    "kwn": [0.25, 0.5, 0.75],
                    "dwp": [0.0, 0.25, 0.5],
                    "dwn": [0.0, 0.25, 0.5],
                },
            ),
            *[
                Method(
                    f"RECIPE {m}, query terms in >{t} of rows dropped", m_hybrid(d, qmode=f"dfany{t}", fixed=RECIPE), {}
                )
                for t in ("0.1", "0.2", "0.3", "0.5")
            ],
            Method(
                f"RECIPE {m}, prev only (kwn=dwn=0), alpha/kwp/dwp LOCO",
                m_hybrid(d, fixed={**RECIPE, "kwn": 0.0, "dwn": 0.0}),
                {"alpha": [0.4, 0.5, 0.6], "kwp": [0.25, 0.5, 0.75, 1.0], "dwp": [0.0, 0.25, 0.5]},
            ),
        ]
    return M


def bootstrap(a: np.ndarray, b: np.ndarray, qs: list[Q], n: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Paired bootstrap over queries (resampled within conversations): mean diff a-b and 95% interval."""
    rng = np.random.default_rng(seed)
    conv = np.array([q.conv for q in qs])
    groups = [np.flatnonzero(conv == c) for c in np.unique(conv)]
    diffs = []
    for _ in range(n):
        idx = np.concatenate([rng.choice(g, len(g)) for g in groups])
        diffs.append((a[idx] - b[idx]).mean())
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return float((a - b).mean()), float(lo), float(hi)


SUITES = {"base": suite_base, "ctx": suite_ctx, "fusion": suite_fusion, "final": suite_final}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="l6,l3,e5")
    ap.add_argument("--suite", default="final")
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    if not args.json:
        from pathlib import Path

        args.json = str(Path(__file__).resolve().parent / "results" / f"{args.suite.replace(',', '-')}.json")
    t0 = time.time()
    qs, rates = build_queries(models)
    log(f"{len(qs)} queries built in {time.time() - t0:.1f}s")
    results = []
    for s in args.suite.split(","):
        for meth in SUITES[s](models):
            if args.only and args.only not in meth.name:
                continue
            t1 = time.time()
            results.append(evaluate(meth, qs, keep_per_query=True))
            log(f"  {meth.name}: {time.time() - t1:.1f}s")
    print_table(results)
    # paired bootstrap: each RECIPE (fixed) against the other rows of the same model
    comparisons = []
    for r in results:
        if r["name"].startswith("RECIPE") and r["name"].endswith("(fixed)"):
            model = r["name"].split()[1]
            for o in results:
                if o is r or o["name"].startswith("RECIPE"):
                    continue
                if not (o["name"].startswith("kw ") or f" {model}" in o["name"]):
                    continue
                d, lo, hi = bootstrap(r["_r10"], o["_r10"], qs)
                comparisons.append(
                    {"a": r["name"], "b": o["name"], "diff_r10": round(d, 4), "ci95": [round(lo, 4), round(hi, 4)]}
                )
    if comparisons:
        print("\npaired bootstrap of recall@10 (2000 resamples within conversations), a - b [95% CI]:")
        for c in comparisons:
            print(f"  {c['a']}  vs  {c['b']}: {c['diff_r10']:+.4f} [{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}]")
    for r in results:
        if "loco_params" in r:
            print(f"LOCO choices, {r['name']}: {r['loco_params']}")
    for r in results:
        r.pop("_r10", None)
        r.pop("_loco_r10", None)
    with open(args.json, "w") as f:
        json.dump({"results": results, "comparisons": comparisons, "embed_texts_per_s": rates}, f, indent=1)
    by_name = {r["name"]: r for r in results}
    for m in models:
        rec = by_name.get(f"RECIPE {m} (fixed)")
        if rec is None:
            continue
        modes = {}
        for mode, name in (
            ("semantic", f"dense {m} + 0.25 cos(prev) + 0.25 cos(next)"),
            ("keyword", "kw fts5 porter + prev/next columns (0.5, 0.5)"),
        ):
            if name in by_name:
                o = by_name[name]
                modes[mode] = {"recall@5": o["recall@5"], "recall@10": o["recall@10"], "mrr": o["mrr"]}
        print(
            json.dumps(
                {
                    "method": rec["name"],
                    "recall@5": rec["recall@5"],
                    "recall@10": rec["recall@10"],
                    "mrr": rec["mrr"],
                    "per_category": rec["per_category_r10"],
                    "queries": rec["queries"],
                    "per_conversation_r10": rec["per_conv_r10"],
                    "modes": modes,
                }
            )
        )
    log(f"json -> {args.json}")


if __name__ == "__main__":
    main()
