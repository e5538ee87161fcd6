"""A learnt linear query adapter for the dense side, judged by leave-one-conversation-out on both protocols.

    python bench/research/adapter.py --data PATH [--stage 1|2] [--setting RANK,L2] [--grid R:L2,…] [--out FILE]

Research code (not imported by the product). Only the query is transformed: q' = normalise(q + A q), A a
384x384 matrix or a low-rank U V^T, with an L2 penalty pulling A toward 0 (the identity map); memory vectors
are unchanged, so no store would need a reindex. A is fitted with numpy by a softmax loss: each training
question's evidence memories (positives) against every other memory of its conversation, temperature TAU,
loss -log(sum of the positives' probabilities), Adam for STEPS steps. Training questions are both protocols
(turns and facts) of the training conversations.

Stage 1: semantic-only recall@10 by LOCO (fit on four conversations, score the fifth) for every setting of a
fixed small grid (all reported), plus a nested choice: for each held-out conversation the setting is chosen
by LOCO among the four training ones (fit on three, score the fourth), mean of both protocols.

Stage 2 (--stage 2, with --setting): the whole pipeline (ltr.py's first stage and second-stage features over
the adapted cosines). For a held-out conversation c, each training conversation j gets cosines from an
adapter fitted without c and j (out-of-fold), c gets those of the adapter fitted on the four others; the
second stage is fitted on the four training conversations and scored on c. In sample: adapter and second
stage fitted on all five, scored on all five.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion import CACHE, bootstrap, build, index_conversation, log, recall
from ltr import features, labels, ranked, today, train

from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex

TAU = 0.05
STEPS = 200
RATE = 0.005
# rank 0: the full 384x384 matrix. On low-rank factors the penalty acts like a nuclear norm, hence smaller l2.
GRID = [(16, 0.003), (16, 0.03), (64, 0.01), (0, 0.01), (0, 0.1), (0, 1.0)]

Data = dict[str, list[list[dict[str, Any]]]]


def load(conversations: list[dict[str, Any]]) -> Data:
    """Per protocol and conversation, fusion.build's query dicts (the keyword index stays open for feedback)."""
    data: Data = {}
    work = tempfile.mkdtemp()
    for unit in ("turns", "facts"):
        index = SqliteKeywordIndex(Path(work) / f"{unit}.sqlite3")
        saved = [index_conversation(c, unit, index, "default") for c in conversations]
        data[unit] = [build(c, unit, index, "default", r) for c, r in zip(conversations, saved, strict=True)]
    return data


def groups(data: Data, convs: list[int]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per protocol and conversation: query vectors, memory vectors, positives (query x memory, cites evidence)."""
    out = []
    for unit in data:
        for c in convs:
            queries = data[unit][c]
            if not queries:
                continue
            memories = np.asarray(queries[0]["vectors"], dtype=np.float32)
            cited = queries[0]["cited"]
            positive = np.array([[bool(cited[i] & q["evidence"]) for i in range(len(cited))] for q in queries])
            keep = positive.any(axis=1)
            vectors = np.array([q["query"] for q in queries], dtype=np.float32)
            out.append((vectors[keep], memories, positive[keep]))
    return out


def adapt(vectors: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """q' = normalise(q + A q) for each row."""
    z = vectors + vectors @ matrix.T
    return np.asarray(z / np.linalg.norm(z, axis=1, keepdims=True))


def fit_adapter(data: Data, convs: list[int], rank: int, l2: float, seed: int = 13) -> np.ndarray:
    """A (384x384) fitted on the training conversations of both protocols: softmax loss + l2 * ||A||², Adam."""
    parts = groups(data, convs)
    total = sum(len(v) for v, _, _ in parts)
    dim = parts[0][0].shape[1]
    rng = np.random.default_rng(seed)
    if rank:  # U zero, V small: A starts at 0 and both factors get a gradient
        params = [np.zeros((dim, rank), np.float32), rng.normal(0.0, 0.01, (dim, rank)).astype(np.float32)]
    else:
        params = [np.zeros((dim, dim), np.float32)]
    first = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    for step in range(1, STEPS + 1):
        matrix = params[0] @ params[1].T if rank else params[0]
        grad_a = np.zeros((dim, dim), np.float32)
        for vectors, memories, positive in parts:
            z = vectors + vectors @ matrix.T
            norm = np.linalg.norm(z, axis=1, keepdims=True)
            unit = z / norm
            s = unit @ memories.T / TAU
            s -= s.max(axis=1, keepdims=True)
            e = np.exp(s)
            p = e / e.sum(axis=1, keepdims=True)
            ep = e * positive
            t = ep / ep.sum(axis=1, keepdims=True)
            d_unit = ((p - t) / total) @ memories / TAU
            d_z = (d_unit - unit * (d_unit * unit).sum(axis=1, keepdims=True)) / norm
            grad_a += d_z.T @ vectors
        if rank:
            grads = [grad_a @ params[1] + 2 * l2 * params[0], grad_a.T @ params[0] + 2 * l2 * params[1]]
        else:
            grads = [grad_a + 2 * l2 * params[0]]
        for p, g, m, v in zip(params, grads, first, second, strict=True):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            p -= RATE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return params[0] @ params[1].T if rank else params[0]


def adapted_sims(data: Data, unit: str, c: int, matrix: np.ndarray | None) -> list[np.ndarray]:
    """The cosines of every memory for each query of one conversation, the query adapted (None: as embedded)."""
    queries = data[unit][c]
    if not queries:
        return []
    vectors = np.array([q["query"] for q in queries], dtype=np.float64)
    if matrix is not None:
        vectors = adapt(vectors, matrix)
    sims = vectors @ np.asarray(queries[0]["vectors"], dtype=np.float64).T
    return [row.astype(np.float32) for row in sims]


def semantic(data: Data, unit: str, c: int, matrix: np.ndarray | None) -> list[float]:
    """Semantic-only recall@10 per query of one conversation."""
    out = []
    for q, sims in zip(data[unit][c], adapted_sims(data, unit, c, matrix), strict=True):
        order = [int(i) for i in np.argsort(-sims, kind="stable")[:10]]
        out.append(recall(q, order, 10))
    return out


def adapters(data: Data, folds: list[int], rank: int, l2: float) -> dict[frozenset[int], np.ndarray]:
    """Adapters fitted without each conversation and without each pair (keyed by what was left out), and on all."""
    left_out = [frozenset()] + [frozenset([c]) for c in folds] + [frozenset(p) for p in combinations(folds, 2)]
    out = {}
    for out_set in left_out:
        path = CACHE / f"adapter-r{rank}-l{l2}-t{TAU}-s{STEPS}-without{''.join(map(str, sorted(out_set)))}.npy"
        if path.exists():
            out[out_set] = np.load(path)
            continue
        start = time.perf_counter()
        out[out_set] = fit_adapter(data, [c for c in folds if c not in out_set], rank, l2)
        FIT_SECONDS.append(time.perf_counter() - start)
        np.save(path, out[out_set])
    return out


FIT_SECONDS: list[float] = []


def stage_one(data: Data, folds: list[int], grid: list[tuple[int, float]]) -> dict[str, Any]:
    """Every grid setting by LOCO, the nested choice per held-out conversation, and the baseline.

    Nested: for held-out c, a setting's inner score is the recall on each training conversation j of the
    adapter fitted without c and j (both protocols' mean); the best inner score picks c's setting.
    """
    report: dict[str, Any] = {
        "grid": [{"rank": r or "full", "l2": l2} for r, l2 in grid],
        "tau": TAU,
        "steps": STEPS,
        "adam rate": RATE,
    }
    base = {u: [v for c in folds for v in semantic(data, u, c, None)] for u in data}
    report["baseline semantic"] = {u: round(statistics.fmean(v), 4) for u, v in base.items()}
    log(report["baseline semantic"])
    held_scores: dict[tuple[int, float], dict[int, dict[str, list[float]]]] = {}
    inner: dict[tuple[int, float], dict[int, float]] = {}
    for rank, l2 in grid:
        fitted = adapters(data, folds, rank, l2)
        held_scores[(rank, l2)] = {c: {u: semantic(data, u, c, fitted[frozenset([c])]) for u in data} for c in folds}
        inner[(rank, l2)] = {}
        for c in folds:
            pooled: dict[str, list[float]] = {u: [] for u in data}
            for j in folds:
                if j != c:
                    for u in data:
                        pooled[u].extend(semantic(data, u, j, fitted[frozenset((c, j))]))
            inner[(rank, l2)][c] = statistics.fmean(statistics.fmean(v) for v in pooled.values())
        values = {u: [v for c in folds for v in held_scores[(rank, l2)][c][u]] for u in data}
        key = f"LOCO, rank {rank or 'full'}, l2 {l2}"
        report[key] = {
            u: {"recall@10": round(statistics.fmean(values[u]), 4), "gain": bootstrap(values[u], base[u])} for u in data
        }
        inside = {
            u: statistics.fmean(v for c in folds for v in semantic(data, u, c, fitted[frozenset()])) for u in data
        }
        report[key]["in sample"] = {u: round(v, 4) for u, v in inside.items()}
        report[key]["norm of A (all five)"] = round(float(np.linalg.norm(fitted[frozenset()])), 3)
        report[key]["inner score per held-out"] = [round(inner[(rank, l2)][c], 4) for c in folds]
        log(key, json.dumps(report[key]))
    if FIT_SECONDS:
        report["fit seconds (mean per adapter, one thread)"] = round(statistics.fmean(FIT_SECONDS), 2)
    nested: dict[str, list[float]] = {u: [] for u in data}
    choices = []
    for c in folds:
        best = max(grid, key=lambda s: inner[s][c])
        choices.append({"held": c, "rank": best[0] or "full", "l2": best[1]})
        for u in data:
            nested[u].extend(held_scores[best][c][u])
    report["LOCO, nested choice"] = {
        u: {"recall@10": round(statistics.fmean(nested[u]), 4), "gain": bootstrap(nested[u], base[u])} for u in data
    }
    report["nested choices"] = choices
    log("nested", json.dumps(report["LOCO, nested choice"]), choices)
    return report


def rows_with(data: Data, unit: str, c: int, matrix: np.ndarray | None) -> list[tuple[Any, ...]]:
    """ltr.py's rows (first-stage order, features, labels, query) for one conversation under adapted cosines."""
    out = []
    for q, sims in zip(data[unit][c], adapted_sims(data, unit, c, matrix), strict=True):
        adapted = dict(q, sims=sims)
        order, x = features(adapted)
        out.append((order, x, labels(adapted, order), adapted))
    return out


def stage_two(data: Data, folds: list[int], rank: int, l2: float, margins: list[float | None]) -> dict[str, Any]:
    """The whole pipeline with adapted cosines: out-of-fold LOCO and in sample, against today's (no adapter)."""
    fitted = adapters(data, folds, rank, l2)
    without_one = {c: fitted[frozenset([c])] for c in folds}
    without_two = {pair: fitted[pair] for pair in fitted if len(pair) == 2}
    everything = fitted[frozenset()]
    plain = {u: {c: rows_with(data, u, c, None) for c in folds} for u in data}
    log("plain features done")
    report: dict[str, Any] = {"setting": {"rank": rank or "full", "l2": l2, "tau": TAU, "steps": STEPS}}
    reference = {u: [recall(q, today(q), 10) for c in folds for *_, q in plain[u][c]] for u in data}
    report["first stage (today)"] = {u: round(statistics.fmean(v), 4) for u, v in reference.items()}
    loco: dict[float | None, dict[str, list[float]]] = {m: {u: [] for u in data} for m in margins}
    base_loco: dict[float | None, dict[str, list[float]]] = {m: {u: [] for u in data} for m in margins}
    first_stage: dict[str, list[float]] = {u: [] for u in data}
    for held in folds:
        training = [c for c in folds if c != held]
        table = {u: {j: rows_with(data, u, j, without_two[frozenset((held, j))]) for j in training} for u in data}
        for u in data:
            table[u][held] = rows_with(data, u, held, without_one[held])
        model = train(table, training, 100.0)
        base_model = train(plain, training, 100.0)
        for u in data:
            first_stage[u].extend(recall(q, today(q), 10) for *_, q in table[u][held])
            for m in margins:
                loco[m][u].extend(recall(q, ranked(model, o, x, m), 10) for o, x, _, q in table[u][held])
                base_loco[m][u].extend(recall(q, ranked(base_model, o, x, m), 10) for o, x, _, q in plain[u][held])
        log("held", held, "done")
    report["LOCO first stage, adapted"] = {
        u: {"recall@10": round(statistics.fmean(v), 4), "gain": bootstrap(v, reference[u])}
        for u, v in first_stage.items()
    }
    for m in margins:
        report[f"LOCO, margin {m}"] = {
            u: {
                "recall@10": round(statistics.fmean(loco[m][u]), 4),
                "reference (no adapter)": round(statistics.fmean(base_loco[m][u]), 4),
                "gain": bootstrap(loco[m][u], base_loco[m][u]),
            }
            for u in data
        }
        log(f"LOCO, margin {m}", json.dumps(report[f"LOCO, margin {m}"]))
    whole = {u: {c: rows_with(data, u, c, everything) for c in folds} for u in data}
    model = train(whole, folds, 100.0)
    base_model = train(plain, folds, 100.0)
    for m in margins:
        got = {u: [recall(q, ranked(model, o, x, m), 10) for c in folds for o, x, _, q in whole[u][c]] for u in data}
        ref = {
            u: [recall(q, ranked(base_model, o, x, m), 10) for c in folds for o, x, _, q in plain[u][c]] for u in data
        }
        report[f"in sample, margin {m}"] = {
            u: {
                "recall@10": round(statistics.fmean(got[u]), 4),
                "reference (no adapter)": round(statistics.fmean(ref[u]), 4),
                "gain": bootstrap(got[u], ref[u]),
            }
            for u in data
        }
        log(f"in sample, margin {m}", json.dumps(report[f"in sample, margin {m}"]))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--stage", type=int, default=1, choices=(1, 2))
    parser.add_argument("--setting", default="", help="stage 2: RANK,L2 (rank 0: full matrix)")
    parser.add_argument("--grid", default="", help="stage 1: RANK:L2,… instead of GRID (e.g. to fit in two processes)")
    parser.add_argument("--margins", default="0.2,none", help="stage 2: dominance margins ('none': no cap)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    conversations = json.loads(args.data.read_text(encoding="utf-8"))
    folds = list(range(len(conversations)))
    data = load(conversations)
    log("loaded")
    if args.stage == 1:
        grid = [(int(p.split(":")[0]), float(p.split(":")[1])) for p in args.grid.split(",")] if args.grid else GRID
        key, report = "stage 1", stage_one(data, folds, grid)
    else:
        rank, l2 = args.setting.split(",")
        margins = [None if m == "none" else float(m) for m in args.margins.split(",")]
        key = f"stage 2, rank {int(rank) or 'full'}, l2 {float(l2)}"
        report = stage_two(data, folds, int(rank), float(l2), margins)
    print(json.dumps(report, indent=1))
    if args.out:  # one file for every run: each stage or setting under its own key
        kept = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
        args.out.write_text(json.dumps(dict(kept, **{key: report}), indent=1))


if __name__ == "__main__":
    main()
