"""Ad-hoc probe: FTS5 query time, one column vs content/prev/next columns, at 10k memories (file-backed).

python fts_probe.py
"""

import statistics
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import latency as L
from common import load
from kwsearch import match_expr, query_terms

convs = load()
base = [m.text for c in convs for m in c.memories]
texts = (base * 4)[:10000]
db0 = L.build_fts("/tmp/research-cache/p0.db", texts, False)
db1 = L.build_fts("/tmp/research-cache/p1.db", texts, True)
db1.execute("CREATE VIRTUAL TABLE v USING fts5vocab(m, 'row')")
qs = [q.question for c in convs for q in c.queries][:300]
N = 10000


def df(db, t):
    return db.execute("SELECT count(*) FROM m WHERE m MATCH ?", (match_expr([t]),)).fetchone()[0]


def run(db, sql, prune):
    ts = []
    for q in qs:
        terms = query_terms(q)
        t0 = time.perf_counter()
        if prune:
            terms = [t for t in terms if df(db, t) <= N / 2] or terms[:1]
        if terms:
            db.execute(sql, (match_expr(terms),)).fetchall()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3, sorted(ts)[int(0.95 * len(ts))] * 1e3


s0 = "SELECT rowid, bm25(m) s FROM m WHERE m MATCH ? ORDER BY s LIMIT 50"
s1 = "SELECT rowid, bm25(m,1.0,0.5,0.5) s FROM m WHERE m MATCH ? ORDER BY s LIMIT 50"
for rep in range(2):
    print("plain", run(db0, s0, False), "nbr", run(db1, s1, False), "nbr+prune(count)", run(db1, s1, True))
# how many terms are > N/2 ?
hi = [(t, df(db1, t)) for q in qs for t in query_terms(q)]
print(
    "terms", len(hi), "over half", sum(1 for t, d in hi if d > N / 2), "over 0.2", sum(1 for t, d in hi if d > 0.2 * N)
)
print(sorted(set((t, d) for t, d in hi), key=lambda x: -x[1])[:15])
