"""Latency of the recommended hybrid search at N memories (default 10k), warm, in-process, 2 cores.

Timed per query: query embedding (MiniLM-L6 int8, onnxruntime); the recommended search without the
embedding (recipe.HybridSpace: numpy brute force with neighbour cosines + FTS5 bm25 with prev/next
columns in a file-backed SQLite, warm page cache, + fusion); the floor (numpy cosine + top 50); and a
plain RRF(60) hybrid over a one-column FTS5 table for reference.
Also times ingest: embedding texts/s (length-sorted batches of 64) and FTS5 inserts (plain vs with
neighbour columns, batch and one-at-a-time with the UPDATE of the previous row's `next` column).

    python latency.py [--n 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time

import numpy as np
from common import embed_cached, get_model, load
from kwsearch import match_expr, query_terms

DEPTH = 50


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def build_fts(path: str, texts: list[str], neighbours: bool) -> sqlite3.Connection:
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    tok = "porter unicode61 remove_diacritics 2"
    if neighbours:
        db.execute(f'CREATE VIRTUAL TABLE m USING fts5(content, prev, next, tokenize="{tok}")')
        prev = [""] + texts[:-1]
        nxt = texts[1:] + [""]
        db.executemany(
            "INSERT INTO m(rowid, content, prev, next) VALUES (?,?,?,?)",
            ((i + 1, t, p, x) for i, (t, p, x) in enumerate(zip(texts, prev, nxt))),
        )
    else:
        db.execute(f'CREATE VIRTUAL TABLE m USING fts5(content, tokenize="{tok}")')
        db.executemany("INSERT INTO m(rowid, content) VALUES (?,?)", enumerate(texts, 1))
    db.commit()
    return db


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    convs = load()
    base_texts = [m.text for c in convs for m in c.memories]
    base_vecs = embed_cached("l6", base_texts, "passage")
    reps = -(-args.n // len(base_texts))
    texts = (base_texts * reps)[: args.n]
    vecs = np.ascontiguousarray(np.tile(base_vecs, (reps, 1))[: args.n])
    questions = [q.question for c in convs for q in c.queries][: args.queries]
    model = get_model("l6")
    out: dict = {"n": args.n, "queries": len(questions)}

    tmp = tempfile.mkdtemp(prefix="lat-")
    # ---- ingest: FTS5
    for nb in (False, True):
        t0 = time.perf_counter()
        db = build_fts(os.path.join(tmp, f"fts{int(nb)}.db"), texts, nb)
        out[f"fts_batch_insert_per_s_{'nbr' if nb else 'plain'}"] = args.n / (time.perf_counter() - t0)
        db.close()
    # one at a time, a transaction each (what a single add costs): plain table vs neighbour columns with the
    # UPDATE of the previous row's `next` column
    for nb in (False, True):
        db = sqlite3.connect(os.path.join(tmp, f"single{int(nb)}.db"))
        cols = "content, prev, next" if nb else "content"
        db.execute(f'CREATE VIRTUAL TABLE m USING fts5({cols}, tokenize="porter unicode61 remove_diacritics 2")')
        t0 = time.perf_counter()
        for i, t in enumerate(texts[:1000]):
            with db:
                if nb:
                    p = texts[i - 1] if i else ""
                    db.execute("INSERT INTO m(rowid, content, prev, next) VALUES (?,?,?,'')", (i + 1, t, p))
                    if i:
                        db.execute("UPDATE m SET next = ? WHERE rowid = ?", (t, i))
                else:
                    db.execute("INSERT INTO m(rowid, content) VALUES (?,?)", (i + 1, t))
        out[f"fts_single_add_per_s_{'nbr' if nb else 'plain'}"] = 1000 / (time.perf_counter() - t0)
        db.close()
    # ---- ingest: embedding throughput (plain turns vs prev+turn windows), 400 texts each
    sample = base_texts[:400]
    win = [base_texts[i - 1] + "\n" + base_texts[i] if i else base_texts[i] for i in range(400)]
    model.embed(sample[:64])  # warm
    for name, tx in (("plain", sample), ("prev+turn window", win)):
        t0 = time.perf_counter()
        model.embed(tx)
        out[f"embed_per_s_{name}"] = len(tx) / (time.perf_counter() - t0)

    # ---- query: the recommended search (recipe.HybridSpace) vs the floor and a plain RRF(60) hybrid
    from recipe import HybridSpace

    space = HybridSpace(model, path=os.path.join(tmp, "space.db"))
    t0 = time.perf_counter()
    space.add_many(texts, [str(i) for i in range(args.n)], vecs)
    out["space_batch_add_per_s_excluding_embedding"] = args.n / (time.perf_counter() - t0)
    db_plain = build_fts(os.path.join(tmp, "q0.db"), texts, False)
    sql_plain = f"SELECT rowid, bm25(m) AS s FROM m WHERE m MATCH ? ORDER BY s LIMIT {DEPTH}"
    times: dict[str, list[float]] = {
        k: [] for k in ("embed", "floor_numpy_top50", "recommended_search", "rrf60_plain_search", "total_recommended")
    }
    cpu: dict[str, list[float]] = {k: [] for k in times}
    clock = time.process_time
    for qtext in questions[:30]:  # warm-up
        space.search(qtext, 10, qvec=model.embed([qtext])[0])
        db_plain.execute(sql_plain, (match_expr(query_terms(qtext)),)).fetchall()
    for _ in range(args.runs):
        for qtext in questions:
            c0 = clock()
            t0 = time.perf_counter()
            qv = model.embed([qtext])[0]
            t1 = time.perf_counter()
            c1 = clock()
            s = vecs @ qv
            top = np.argpartition(-s, DEPTH)[:DEPTH]
            top = top[np.argsort(-s[top])]
            t2 = time.perf_counter()
            c2 = clock()
            space.search(qtext, 10, qvec=qv)
            t3 = time.perf_counter()
            c3 = clock()
            s = vecs @ qv
            top = np.argpartition(-s, DEPTH)[:DEPTH]
            top = top[np.argsort(-s[top])]
            terms = query_terms(qtext)
            rows = db_plain.execute(sql_plain, (match_expr(terms),)).fetchall() if terms else []
            rrf: dict[int, float] = {}
            for r, i in enumerate(top.tolist()):
                rrf[i] = 1 / (61 + r)
            for r, (rowid, _) in enumerate(rows):
                rrf[rowid - 1] = rrf.get(rowid - 1, 0.0) + 1 / (61 + r)
            sorted(rrf.items(), key=lambda kv: -kv[1])[:10]
            t4 = time.perf_counter()
            c4 = clock()
            cpu["embed"].append(c1 - c0)
            cpu["floor_numpy_top50"].append(c2 - c1)
            cpu["recommended_search"].append(c3 - c2)
            cpu["rrf60_plain_search"].append(c4 - c3)
            cpu["total_recommended"].append((c1 - c0) + (c3 - c2))
            times["embed"].append(t1 - t0)
            times["floor_numpy_top50"].append(t2 - t1)
            times["recommended_search"].append(t3 - t2)
            times["rrf60_plain_search"].append(t4 - t3)
            times["total_recommended"].append((t1 - t0) + (t3 - t2))
    out["ms"] = {
        k: {"p50": round(statistics.median(v) * 1e3, 2), "p95": round(pct(v, 95) * 1e3, 2)} for k, v in times.items()
    }
    out["cpu_ms"] = {
        k: {"p50": round(statistics.median(v) * 1e3, 2), "p95": round(pct(v, 95) * 1e3, 2)} for k, v in cpu.items()
    }
    out["threads"] = {
        "RESEARCH_ORT_THREADS": os.environ.get("RESEARCH_ORT_THREADS", "0 (auto)"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "auto"),
        "loadavg_at_end": os.getloadavg(),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
