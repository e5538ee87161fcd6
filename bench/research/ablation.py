"""Stage ablation of the hybrid pipeline on both LoCoMo protocols by leave-one-conversation-out, per embedder.

    python bench/research/ablation.py --data PATH --embedder minilm|nomic [--nomic-model FILE] [--cache DIR]
        [--only TEXT,…] [--out FILE]
    python bench/research/ablation.py --table RESULTS.json …     # markdown table, one column pair per embedder

Research code (issue 28, "a stage earns its place on both protocols"; not imported by the product). The
candidates, keyword index, embedder and the learnt second stage's features are the product's, through
fusion.py's `build` and ltr.py's fitting code. Each configuration is the product's pipeline with one stage
removed or re-chosen:

- keyword side (bm25 over the memory and its thread neighbours' words; without it the candidates are the
  dense top 50 alone),
- keyword feedback for independent memories (facts; turns are threaded and never get it): the product dropped it
  on 2026-11-27 (it earned nothing here); `+ keyword feedback` puts it back in the first stage (fusion.expanded_keyword),
- thread neighbours (the neighbours' keyword columns and cosine; without them the turns are indexed with no
  thread, facts are unchanged: they have none),
- fusion: today's linear α 0.5 with the neighbours' cosine at 0.25, the same re-tuned (α, share), or RRF
  (k, dense weight, share),
- the learnt second stage (ltr.py's logistic model over domain.search.reranking's 20 features and their products,
  L2 100, dominance cap 0.2), refitted per fold.

Every figure is leave-one-conversation-out: a configuration's free parameters (fusion weights) are chosen on
four conversations by the first stage's mean recall@10 over both protocols, the ranker is fitted on the same
four with them, and the fifth is scored; the five held-out folds are pooled. Gains are paired bootstrap
intervals (fusion.bootstrap, 2,000 resamples) against the full pipeline of today. `--embedder minilm` is the
shipped model through the product's embedder; `nomic` the int8 graph of bench/models/build_nomic.py (its path on
the command line or in NOMIC_MODEL, never in the repository). Vectors are cached in --cache (FUSION_CACHE).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fusion
import ltr
from fusion import bootstrap, build, dense_with_links, expanded_keyword, expansion_terms, log, per_category, ranked
from locomo import memories as protocol_memories

from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.domain.search import reranking
from agent_memory.domain.context import keyword_entry
from agent_memory.domain.model import Memory, new_memory_id

Query = dict[str, Any]
Data = dict[str, list[list[Query]]]  # protocol -> conversation -> queries

LINEAR_GRID = [{"alpha": a, "share": s} for a in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8) for s in (0.0, 0.1, 0.25)]
RRF_GRID = [
    {"k": k, "w": w, "share": s} for k in (2, 5, 10, 20, 60) for w in (1.0, 1.25, 1.5, 2.0) for s in (0.0, 0.1, 0.25)
]
TODAY = {"alpha": 0.5, "share": 0.25}


# --- data -------------------------------------------------------------------------------------------------------


def index_conversation(conversation: dict[str, Any], unit: str, threaded: bool, index: SqliteKeywordIndex) -> list[Memory]:
    """fusion.index_conversation, with the turns' session threads optional (False: no thread neighbours)."""
    records = [
        Memory(
            id=new_memory_id(),
            content=text,
            created_at=when or fusion.NOW,
            updated_at=when or fusion.NOW,
            namespace=("locomo", str(conversation["sample_id"])),
            thread=f"session-{fusion.session_of(dia_ids[0])}" if unit == "turns" and threaded else "",
        )
        for text, dia_ids, when in protocol_memories(conversation, unit)
    ]
    index.upsert("default", [keyword_entry(m) for m in records]).unwrap()
    return records


def load(conversations: list[dict[str, Any]], work: str) -> Data:
    """turns (threaded by session), turns without threads, facts; one index each, bm25 over the whole store."""
    data: Data = {}
    for name, unit, threaded in (("turns", "turns", True), ("turns-unthreaded", "turns", False), ("facts", "facts", False)):
        index = SqliteKeywordIndex(Path(work) / f"{name}.sqlite3")
        saved = [index_conversation(c, unit, threaded, index) for c in conversations]
        data[name] = [build(c, unit, index, "default", r) for c, r in zip(conversations, saved, strict=True)]
        log(name, "built", sum(len(c) for c in data[name]), "queries")
    return data


# --- the pipeline, stage by stage --------------------------------------------------------------------------------


def fused(q: Query, kw: dict[int, float], fusion_kind: str, params: dict[str, float], keyword: bool) -> dict[int, float]:
    """The first stage's score per candidate (dense top 50 ∪ keyword top 50) for one fusion."""
    top = [int(i) for i in np.argsort(-q["sims"])[: fusion.DEPTH]]
    cands = list(dict.fromkeys([*top, *(kw if keyword else [])]))
    share = params.get("share", 0.25)
    if not keyword:
        return {i: dense_with_links(q, i, share) for i in cands}
    if fusion_kind == "linear":
        alpha = params["alpha"]
        return {i: alpha * dense_with_links(q, i, share) + (1 - alpha) * kw.get(i, 0.0) for i in cands}
    k, w = params["k"], params["w"]
    score = {i: w / (k + r + 1) for r, i in enumerate(ranked({i: dense_with_links(q, i, share) for i in cands}))}
    for r, i in enumerate(ranked(dict(kw))):
        score[i] = score.get(i, 0.0) + 1 / (k + r + 1)
    return score


def first_stage(q: Query, cfg: dict[str, Any], params: dict[str, float]) -> tuple[list[int], dict[int, float], dict[int, float]]:
    """(order, first-stage scores, keyword side after feedback) as the product would give them for `cfg`."""
    keyword = cfg["keyword"]
    kw = dict(q["kw"]) if keyword else {}
    scores = fused(q, kw, cfg["fusion"], params, keyword)
    order = ranked(scores)
    if keyword and cfg["feedback"] and q["unit"] == "facts":
        alone = [i for i in order[:5] if q["links"][i] == (-1, -1)]
        if alone:
            cands = list(scores)
            df: dict[str, int] = {}
            for i in cands:
                for term in set(q["words"][i]):
                    df[term] = df.get(term, 0) + 1
            terms = expansion_terms(dict(q, df=df, texts=cands), alone, 10)
            started = time.perf_counter()
            extra = q["search"](" ".join(terms)) if terms else {}
            TIMES.setdefault("feedback search", []).append(time.perf_counter() - started)
            independent = {i for i in cands if q["links"][i] == (-1, -1)}
            kw = expanded_keyword(kw, extra, independent)
            scores = fused(q, kw, cfg["fusion"], params, keyword)
            order = ranked(scores)
    return order, scores, kw


def features(q: Query, cfg: dict[str, Any], params: dict[str, float]) -> tuple[list[int], np.ndarray]:
    """The product's feature rows (domain.reranking.features) over this configuration's first stage."""
    order, scores, _ = first_stage(q, cfg, params)
    around = {n for i in order for n in q["links"][i] if n >= 0}
    every = set(order) | around
    found = reranking.Candidates(
        query=q["question"],
        first=[(str(i), scores[i]) for i in order],
        texts={str(i): q["texts"][i] for i in every},
        similarity={str(i): float(q["sims"][i]) for i in every},
        keyword={str(i): v for i, v in q["kw"].items()} if cfg["keyword"] else {},
        links={str(i): tuple(str(n) if n >= 0 else None for n in q["links"][i]) for i in order},  # type: ignore[misc]
    )
    started = time.perf_counter()
    rows = np.array(reranking.features(found), dtype=np.float64)
    TIMES.setdefault("ranker features", []).append(time.perf_counter() - started)
    return order, rows


TIMES: dict[str, list[float]] = {}
FIRST: dict[tuple[Any, ...], list[tuple[float, float, float]]] = {}  # first-stage metrics per (unit, stages, params)


WARM: dict[int, np.ndarray] = {}  # the last fit's weights per width: folds share three quarters of their rows


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """ltr.fit (logistic regression by Newton steps, bias not penalised), started from the previous fit of the same
    width and stopped once no weight moves by 1e-4 (the rankings it gives no longer change); float32 products."""
    xb = np.hstack([x, np.ones((len(x), 1))]).astype(np.float32)
    w = WARM.get(xb.shape[1], np.zeros(xb.shape[1]))
    penalty = l2 * np.eye(len(w))
    penalty[-1, -1] = 1e-9  # (ltr.fit: 0; this keeps the step defined when every row is certain)
    for _ in range(25):
        p = 1 / (1 + np.exp(-np.clip((xb @ w.astype(np.float32)).astype(np.float64), -50.0, 50.0)))
        grad = (xb.T @ (p - y).astype(np.float32)).astype(np.float64) + penalty @ w
        hess = ((xb * (p * (1 - p)).astype(np.float32)[:, None]).T @ xb).astype(np.float64) + penalty
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.abs(step).max()) < 1e-4:
            break
    WARM[xb.shape[1]] = w
    return w[:-1], float(w[-1])


ltr.fit = fit  # ltr.train calls the module's fit


# --- scoring -----------------------------------------------------------------------------------------------------


def metrics(q: Query, order: list[int]) -> tuple[float, float, float]:
    """recall@10, recall@5, reciprocal rank of the first memory citing evidence (0 when none in the list)."""
    rr = next((1.0 / (r + 1) for r, i in enumerate(order) if q["cited"][i] & q["evidence"]), 0.0)
    return fusion.recall(q, order, 10), fusion.recall(q, order, 5), rr


def protocols(cfg: dict[str, Any]) -> tuple[str, str]:
    return ("turns" if cfg["neighbours"] else "turns-unthreaded", "facts")


def evaluate(data: Data, cfg: dict[str, Any], folds: list[int], l2: float) -> dict[str, Any]:
    """LOCO per-query metrics of one configuration, and the per-fold parameter choices."""
    units = protocols(cfg)
    grid = {"today": [TODAY], "linear": LINEAR_GRID, "rrf": RRF_GRID}[cfg["grid"]] if cfg["keyword"] else [TODAY]
    first: dict[str, dict[str, list[tuple[float, float, float]]]] = {}  # params -> unit -> per query (all folds)
    for p in grid:
        key = json.dumps(p)
        first[key] = {}
        for u in units:
            memo = (u, cfg["fusion"], cfg["feedback"], cfg["keyword"], key)
            if memo not in FIRST:
                FIRST[memo] = [metrics(q, first_stage(q, cfg, p)[0]) for c in folds for q in data[u][c]]
            first[key][u] = FIRST[memo]
    starts = {u: np.cumsum([0] + [len(data[u][c]) for c in folds]) for u in units}

    def part(values: list[Any], u: str, convs: list[int]) -> list[Any]:
        return [v for c in convs for v in values[starts[u][c] : starts[u][c + 1]]]

    out: dict[str, list[tuple[float, float, float]]] = {u: [] for u in units}
    choices = []
    WARM.clear()  # warm starts only between the folds of one configuration (its features mean the same)
    tables: dict[str, dict[str, dict[int, ltr.Rows]]] = {}
    for held in folds:
        train = [c for c in folds if c != held]
        best = max(
            grid, key=lambda p: statistics.fmean(statistics.fmean(m[0] for m in part(first[json.dumps(p)][u], u, train)) for u in units)
        )
        choices.append(best)
        key = json.dumps(best)
        if not cfg["ranker"]:
            for u in units:
                out[u].extend(part(first[key][u], u, [held]))
            continue
        if key not in tables:
            tables[key] = {
                u: {
                    c: [(o, x, ltr.labels(q, o), q) for q in data[u][c] for o, x in [features(q, cfg, best)]] for c in folds
                }
                for u in units
            }
            log(cfg["name"], "features", key)
        model = ltr.train(tables[key], train, l2)
        for u in units:
            for o, x, _, q in tables[key][u][held]:
                out[u].append(metrics(q, ltr.ranked(model, o, x)))
    return {"per_query": out, "choices": choices}


def configurations(embedder: str) -> list[dict[str, Any]]:
    """The product's pipeline, each stage removed in turn (keyword feedback put back), and the fusions re-chosen."""
    full = {"keyword": True, "feedback": False, "neighbours": True, "fusion": "linear", "grid": "today", "ranker": True}

    def c(name: str, **change: Any) -> dict[str, Any]:
        return dict(full, name=name, **change)

    return [
        c("full pipeline (linear α 0.5, neighbours' cos 0.25, ranker; no feedback)"),
        c("semantic alone (own cosine)", keyword=False, neighbours=False, ranker=False, dense_only=True),
        c("keyword alone (bm25 with neighbour columns)", keyword_only=True, ranker=False),
        c("− ranker (the first stage)", ranker=False),
        c("+ keyword feedback (first stage)", feedback=True),
        c("− thread neighbours", neighbours=False),
        c("− keyword side (dense + neighbours' cos, ranker)", keyword=False),
        c("fusion: linear re-tuned (α, share)", grid="linear"),
        c("fusion: RRF tuned (k, w, share)", fusion="rrf", grid="rrf"),
        c("linear re-tuned − ranker", grid="linear", ranker=False),
        c("RRF tuned − ranker", fusion="rrf", grid="rrf", ranker=False),
        c("RRF tuned − ranker − neighbours", fusion="rrf", grid="rrf", ranker=False, neighbours=False),
        c("RRF tuned − neighbours (ranker)", fusion="rrf", grid="rrf", neighbours=False),
    ]


def single_mode(data: Data, cfg: dict[str, Any], folds: list[int]) -> dict[str, Any]:
    """semantic or keyword alone: nothing tuned."""
    units = protocols(dict(cfg, neighbours=not cfg.get("dense_only")))
    out = {}
    for u in units:
        if cfg.get("dense_only"):
            out[u] = [metrics(q, [int(i) for i in np.argsort(-q["sims"])[:100]]) for c in folds for q in data[u][c]]
        else:
            out[u] = [metrics(q, ranked(dict(q["kw"]))) for c in folds for q in data[u][c]]
    return {"per_query": out, "choices": []}


def stage_times(data: Data, sample: int = 150) -> dict[str, float]:
    """Median ms per query of each stage in this harness (dev-sized conversations, ~300–700 memories)."""
    out: dict[str, float] = {}
    qs = [q for u in ("turns", "facts") for c in data[u] for q in c][:: max(1, sum(len(c) for c in data["turns"]) * 2 // sample)]
    if True:
        timed: dict[str, list[float]] = {"dense brute force": [], "fusion (linear)": [], "fusion (RRF)": [], "ranker": []}
        for q in qs:
            started = time.perf_counter()
            np.argsort(-(q["vectors"] @ q["query"]))[: fusion.DEPTH]
            timed["dense brute force"].append(time.perf_counter() - started)
            cfg = {"keyword": True, "feedback": False, "fusion": "linear"}
            started = time.perf_counter()
            first_stage(q, cfg, TODAY)
            timed["fusion (linear)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            first_stage(q, dict(cfg, fusion="rrf"), {"k": 10, "w": 1.5, "share": 0.0})
            timed["fusion (RRF)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            order, x = features(q, cfg, TODAY)
            rows = x.tolist()
            scores = [reranking.model_score(r) for r in rows]
            reranking.dominance_capped(scores, [reranking.signals(r) for r in rows], 0.2)
            timed["ranker"].append(time.perf_counter() - started)
    for name, values in {**timed, **TIMES}.items():
        if values and name != "feedback search":  # memoised here: keyword_times measures a fresh one
            out[name + " ms p50"] = round(1000 * statistics.median(values), 3)
    return out


def keyword_times(conversations: list[dict[str, Any]], sample: int = 100) -> dict[str, float]:
    """Median ms of one keyword search (the product's SqliteKeywordIndex, one conversation's namespace) with and
    without the neighbour columns, and of a feedback-like search (10 words of the best five hits OR'd)."""
    from agent_memory.domain.search.tokens import content_words
    from agent_memory.domain.thread_keys import thread_of

    out = {}
    with tempfile.TemporaryDirectory() as work:
        for name, threaded in (("keyword search, neighbour columns", True), ("keyword search, no threads", False)):
            index = SqliteKeywordIndex(Path(work) / f"{threaded}.sqlite3")
            texts: dict[str, str] = {}
            for c in conversations:
                texts.update((m.id, m.content) for m in index_conversation(c, "turns", threaded, index))
            asked = [(qa["question"], thread_of(("locomo", str(c["sample_id"])))) for c in conversations for qa in c["qa"]]
            times, expansion = [], []
            for question, prefix in asked[:: max(1, len(asked) // sample)]:
                started = time.perf_counter()
                hits = index.search("default", question, fusion.DEPTH, thread_prefix=prefix).unwrap()
                times.append(time.perf_counter() - started)
                words = [w for i, _ in hits[:5] for w in content_words(texts[i]) if w not in set(content_words(question))]
                terms = " ".join(list(dict.fromkeys(words))[:10])
                if terms:
                    started = time.perf_counter()
                    index.search("default", terms, fusion.DEPTH, thread_prefix=prefix).unwrap()
                    expansion.append(time.perf_counter() - started)
            out[name + " ms p50"] = round(1000 * statistics.median(times), 3)
            out[name + ", a 10-word feedback query ms p50"] = round(1000 * statistics.median(expansion), 3)
    return out


def table(paths: list[Path]) -> str:
    """A markdown table of recall@10 (LOCO) per configuration: one column pair per results file (embedder)."""
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    names = list(dict.fromkeys(n for r in reports for n in r["configurations"]))
    head = " | ".join(f"{r['embedder']} turns | facts" for r in reports)
    lines = [f"| configuration (LOCO recall@10; gain vs the first row, 95% CI) | {head} |", "|---" * (1 + 2 * len(reports)) + "|"]
    for name in names:
        cells = []
        for r in reports:
            c = r["configurations"].get(name)
            for u in ("turns", "facts"):
                if c is None:
                    cells.append("–")
                    continue
                g = c[u]["gain R@10 vs first row"]
                gain = "" if name == next(iter(r["configurations"])) else f" ({100 * g[0]:+.1f} [{100 * g[1]:+.1f}, {100 * g[2]:+.1f}])"
                cells.append(f"{c[u]['R@10']:.3f}{gain}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", nargs="+", type=Path, help="print a markdown table of these results files, then stop")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--embedder", choices=("minilm", "nomic"), default="minilm")
    parser.add_argument("--nomic-model", help="the int8 graph bench/models/build_nomic.py builds (or NOMIC_MODEL)")
    parser.add_argument("--cache", type=Path, help="vector cache directory (or FUSION_CACHE)")
    parser.add_argument("--only", help="comma-separated texts: only the configurations whose name holds one")
    parser.add_argument("--skip", help="';'-separated names: leave out these configurations")
    parser.add_argument("--l2", type=float, default=100.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return
    if args.data is None:
        parser.error("--data is required")
    if args.embedder == "nomic":
        if args.nomic_model:
            os.environ["NOMIC_MODEL"] = args.nomic_model
        if "NOMIC_MODEL" not in os.environ:
            parser.error("--embedder nomic needs --nomic-model FILE or NOMIC_MODEL")
        fusion.MODEL = "nomic"
    else:
        fusion.MODEL = "default"
    if args.cache:
        fusion.CACHE = args.cache
    conversations = json.loads(args.data.read_text(encoding="utf-8"))
    folds = list(range(len(conversations)))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:  # open while scoring: feedback searches again
        data = load(conversations, work)
        results: dict[str, dict[str, Any]] = {}
        for cfg in configurations(args.embedder):
            if args.only and not any(p in cfg["name"] for p in args.only.split(",")) and not cfg["name"].startswith("full"):
                continue
            if args.skip and cfg["name"] in args.skip.split(";"):
                continue
            t0 = time.perf_counter()
            single = cfg.get("dense_only") or cfg.get("keyword_only")
            results[cfg["name"]] = single_mode(data, cfg, folds) if single else evaluate(data, cfg, folds, args.l2)
            results[cfg["name"]]["cfg"] = cfg
            log(cfg["name"], summary(results[cfg["name"]], None)["turns"]["R@10"], f"{time.perf_counter() - t0:.0f} s")
        TIMES.clear()
        times = stage_times(data)
    times.update(keyword_times(conversations))
    reference = results[next(iter(results))]
    report = {
        "embedder": args.embedder,
        "data": args.data.name,
        "protocol": "LOCO: fusion weights chosen on 4 conversations by first-stage recall@10 (mean of both protocols), "
        "ranker fitted on the same 4 (L2 %g, dominance cap 0.2), scored on the 5th; gain = paired bootstrap vs the "
        "first row, mean [95%% CI]" % args.l2,
        "stage_ms_p50_in_harness": times,
        "configurations": {name: summary(r, reference, data, folds) for name, r in results.items()},
        "gain_vs_best": versus_best(results),
        "per_query_recall@10": {
            name: {u: [round(v[0], 4) for v in values] for u, values in r["per_query"].items()} for name, r in results.items()
        },
        "seconds": round(time.perf_counter() - started),
    }
    text = json.dumps(report, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


def versus_best(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per protocol: the configuration with the best LOCO recall@10, and every other's paired gain against it."""
    out: dict[str, Any] = {}
    for name in ("turns", "facts"):

        def values(r: dict[str, Any], name: str = name) -> list[float]:
            return [v[0] for u, vs in r["per_query"].items() if u.startswith(name) for v in vs]

        best = max(results, key=lambda n: statistics.fmean(values(results[n])))
        out[name] = {"best": best, "gain R@10 vs best": {n: bootstrap(values(r), values(results[best])) for n, r in results.items()}}
    return out


def summary(result: dict[str, Any], reference: dict[str, Any] | None, data: Data | None = None, folds: list[int] | None = None) -> dict[str, Any]:
    """Means of recall@10, recall@5 and MRR per protocol, the paired gain in recall@10 over the reference."""
    out: dict[str, Any] = {"choices": result.get("choices", [])}
    for u, values in result["per_query"].items():
        name = "turns" if u.startswith("turns") else u
        entry = {
            "R@10": round(statistics.fmean(v[0] for v in values), 4),
            "R@5": round(statistics.fmean(v[1] for v in values), 4),
            "MRR": round(statistics.fmean(v[2] for v in values), 4),
        }
        if reference is not None:
            ref_u = next(r for r in reference["per_query"] if r.startswith(name))
            entry["gain R@10 vs first row"] = bootstrap([v[0] for v in values], [v[0] for v in reference["per_query"][ref_u]])
            if data is not None and folds is not None:
                entry["per_category R@10"] = per_category({u: [data[u][c] for c in folds]}, u, [v[0] for v in values])
        out[name] = entry
    return out


if __name__ == "__main__":
    main()
