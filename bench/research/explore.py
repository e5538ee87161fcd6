"""Second-round experiments on top of locomo_eval (sensitivity, depth, session cut, extra signals).

python explore.py SUITE [--models l6]
"""

from __future__ import annotations

import argparse
import json
import pickle
import time

import locomo_eval as E
from common import CACHE, log

EXTRA_KW = (
    [("porter", "stop", w, 0.0, "ctx", False) for w in (0.25, 0.5, 0.75, 1.0)]
    + [("porter", "stop", wp, wn, "pn", True) for wp in (0.25, 0.5, 0.75) for wn in (0.25, 0.5, 0.75)]
    + [
        ("porter", "all", 0.5, 0.5, "pn", False),
        ("u61", "stop", 0.25, 0.25, "pn", False),
        ("u61", "stop", 0.75, 0.5, "pn", False),
        ("u61", "stop", 0.5, 0.25, "pn", False),
    ]
)


def get_queries(models: list[str]):
    E.KW_SIGNALS = tuple(E.KW_SIGNALS) + tuple(EXTRA_KW)
    path = CACHE / f"queries-{'-'.join(models)}-{len(E.KW_SIGNALS)}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    t0 = time.time()
    qs, rates = E.build_queries(models)
    log(f"built in {time.time() - t0:.1f}s")
    path.write_bytes(pickle.dumps((qs, rates)))
    return qs, rates


W = [0.0, 0.25, 0.5, 0.75, 1.0]
Method, m_hybrid, BIG = E.Method, E.m_hybrid, E.BIG


def suite_sens(m: str) -> list:
    d = f"{m}:plain"
    M = []
    base = {"alpha": 0.5, "kwp": 0.5, "kwn": 0.5, "dwp": 0.25, "dwn": 0.25}
    M.append(Method(f"[{m}] fixed {base}", m_hybrid(d, fixed=base), {}))
    for k, vals in {
        "alpha": [0.3, 0.4, 0.5, 0.6, 0.7],
        "kwp": [0.25, 0.5, 0.75, 1.0],
        "kwn": [0.0, 0.25, 0.5, 0.75, 1.0],
        "dwp": [0.0, 0.25, 0.5],
        "dwn": [0.0, 0.25, 0.5],
    }.items():
        for v in vals:
            p = {**base, k: v}
            M.append(Method(f"[{m}] fixed, {k}={v}", m_hybrid(d, fixed=p), {}))
    # depth per side
    for depth in (10, 20, 30, 50, 100, 200):
        M.append(Method(f"[{m}] fixed, depth={depth}", m_hybrid(d, fixed={**base, "depth": depth}), {}))
    # session cut (neighbours only within the same session): only if this helps or is neutral is it safe
    M.append(Method(f"[{m}] fixed, neighbours cut at session boundary", m_hybrid(d, fixed={**base, "cut": True}), {}))
    # single context column (prev+next) instead of two
    for w in (0.25, 0.5, 0.75, 1.0):
        M.append(
            Method(
                f"[{m}] fixed, one ctx column w={w}",
                m_hybrid(d, fixed={**base, "kwp": w, "kwn": 0.0, "layout": "ctx"}),
                {},
            )
        )
    # fused boost on top
    for g in (0.1, 0.2, 0.3):
        M.append(Method(f"[{m}] fixed + fused neighbour boost gamma={g}", m_hybrid(d, fixed={**base, "gamma": g}), {}))
    # other normalisations / rrf with the same neighbour signals
    for how in ("z", "max"):
        M.append(
            Method(
                f"[{m}] fixed, norm={how} (alpha tuned)", m_hybrid(d, how, fixed=base), {"alpha": [0.4, 0.5, 0.6, 0.7]}
            )
        )
    M.append(
        Method(
            f"[{m}] rrf with the same neighbour signals (k tuned)",
            m_hybrid(d, "rrf", fixed=base),
            {"k": [5, 10, 20, 30, 60]},
        )
    )
    # query construction / tokenizer with the neighbour columns
    M.append(Method(f"[{m}] fixed, query all terms (no stop list)", m_hybrid(d, qmode="all", fixed=base), {}))
    M.append(Method(f"[{m}] fixed, unicode61 (no stemming)", m_hybrid(d, tok="u61", fixed=base), {}))
    return M


def suite_gamma(m: str) -> list:
    d = f"{m}:plain"
    return [
        Method(
            f"[{m}] lin-minmax + fused neighbour boost only (alpha, gamma)",
            m_hybrid(d),
            {"alpha": [0.4, 0.5, 0.6, 0.7], "gamma": [0.3, 0.5, 0.75, 1.0, 1.5]},
        ),
        Method(
            f"[{m}] lin-minmax nbr + boost (alpha, kwp, kwn, dwn, gamma)",
            m_hybrid(d, fixed={"dwp": 0.0}),
            {
                "alpha": [0.4, 0.5, 0.6],
                "kwp": [0.5, 0.75],
                "kwn": [0.25, 0.5],
                "dwn": [0.0, 0.25],
                "gamma": [0.0, 0.1, 0.2, 0.3],
            },
        ),
    ]


def suite_mix(m: str) -> list:
    d = f"{m}:plain"
    base = {"alpha": 0.5, "kwp": 0.5, "kwn": 0.5, "dwp": 0.25, "dwn": 0.25}
    return [
        Method(
            f"[{m}] fixed + wmix*cos(prev+turn embedding) wmix={w}",
            m_hybrid(d, mix=f"{m}:prev1", fixed={**base, "wmix": w}),
            {},
        )
        for w in (0.25, 0.5, 1.0)
    ]


def suite_norm(m: str) -> list:
    """Normalisation x candidate depth, with the neighbour signals fixed (alpha tuned, LOCO)."""
    d = f"{m}:plain"
    base = {"kwp": 0.5, "kwn": 0.5, "dwp": 0.25, "dwn": 0.25}
    M = []
    schemes = {
        "minmax": ("minmax", "minmax"),
        "z": ("z", "z"),
        "max": ("max", "max"),
        "raw-cos + bm25/max": ("raw", "max"),
        "raw-cos + bm25 minmax": ("raw", "minmax"),
        "cos/max + bm25 minmax": ("max", "minmax"),
    }
    for depth in (20, 50, 100, 200, BIG):
        for name, (dn, kn) in schemes.items():
            M.append(
                Method(
                    f"[{m}] {name} depth={'all' if depth == BIG else depth}",
                    m_hybrid(
                        d, "z" if dn == "z" else "minmax", fixed={**base, "depth": depth, "dnorm": dn, "knorm": kn}
                    ),
                    {"alpha": [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]},
                )
            )
        M.append(
            Method(
                f"[{m}] rrf depth={'all' if depth == BIG else depth}",
                m_hybrid(d, "rrf", fixed={**base, "depth": depth}),
                {"k": [5, 10, 20, 30, 60]},
            )
        )
    return M


def suite_joint(m: str) -> list:
    """Joint LOCO grids of the depth-invariant scheme (raw cosine + bm25 / best bm25), both-neighbour and
    prev-only (causal: nothing already stored changes when a memory is added)."""
    d = f"{m}:plain"
    M = []
    for depth in (50, 100):
        rb = {"depth": depth, "dnorm": "raw", "knorm": "max"}
        M.append(
            Method(
                f"[{m}] raw-cos + bm25/max, prev+next, depth={depth} (alpha,kwp,kwn,dwp,dwn)",
                m_hybrid(d, fixed=rb),
                {
                    "alpha": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4],
                    "kwp": [0.25, 0.5, 0.75],
                    "kwn": [0.25, 0.5, 0.75],
                    "dwp": [0.0, 0.25, 0.5],
                    "dwn": [0.0, 0.25, 0.5],
                },
            )
        )
        M.append(
            Method(
                f"[{m}] raw-cos + bm25/max, prev only, depth={depth} (alpha,kwp,dwp)",
                m_hybrid(d, fixed={**rb, "kwn": 0.0, "dwn": 0.0}),
                {"alpha": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4], "kwp": [0.25, 0.5, 0.75, 1.0], "dwp": [0.0, 0.25, 0.5]},
            )
        )
        M.append(
            Method(
                f"[{m}] raw-cos + bm25/max, no neighbours, depth={depth} (alpha)",
                m_hybrid(d, fixed=rb),
                {"alpha": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]},
            )
        )
        M.append(
            Method(
                f"[{m}] minmax, prev+next, depth={depth} (alpha,kwp,kwn,dwp,dwn)",
                m_hybrid(d, fixed={"depth": depth}),
                {
                    "alpha": [0.2, 0.3, 0.4, 0.5],
                    "kwp": [0.25, 0.5, 0.75],
                    "kwn": [0.25, 0.5, 0.75],
                    "dwp": [0.0, 0.25, 0.5],
                    "dwn": [0.0, 0.25, 0.5],
                },
            )
        )
        M.append(
            Method(
                f"[{m}] rrf, prev+next, depth={depth} (k,kwp,kwn,dwp,dwn)",
                m_hybrid(d, "rrf", fixed={"depth": depth}),
                {
                    "k": [5, 10, 20, 60],
                    "kwp": [0.25, 0.5, 0.75],
                    "kwn": [0.25, 0.5, 0.75],
                    "dwp": [0.0, 0.25, 0.5],
                    "dwn": [0.0, 0.25, 0.5],
                },
            )
        )
    return M


def suite_alpha(m: str) -> list:
    """The recipe's alpha curve (everything else fixed)."""
    d = f"{m}:plain"
    return [
        Method(f"[{m}] RECIPE, alpha={a}", m_hybrid(d, fixed={**E.RECIPE, "alpha": a}), {})
        for a in (0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8)
    ]


REC = {"depth": 50, "dnorm": "raw", "knorm": "max", "alpha": 0.25, "kwp": 0.5, "kwn": 0.5, "dwp": 0.25, "dwn": 0.25}


def suite_more(m: str) -> list:
    """Add-ons and variants of the recommended recipe (locomo_eval.RECIPE), each against it."""
    d = f"{m}:plain"
    R = E.RECIPE
    A = {"alpha": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]}
    M = [
        Method(f"[{m}] RECIPE (fixed)", m_hybrid(d, fixed=R), {}),
        Method(f"[{m}] RECIPE, alpha tuned", m_hybrid(d, fixed=R), A),
        Method(
            f"[{m}] RECIPE, keyword-only candidates get dense 0 (no fill)", m_hybrid(d, fixed={**R, "fill": False}), A
        ),
        Method(
            f"[{m}] RECIPE + neighbours of dense candidates as candidates", m_hybrid(d, fixed={**R, "expand": True}), {}
        ),
        Method(f"[{m}] RECIPE + fused neighbour boost (gamma)", m_hybrid(d, fixed=R), {"gamma": [0.0, 0.1, 0.2, 0.3]}),
        Method(f"[{m}] RECIPE + dense PRF (beta, m)", E.m_prf(d, R), {"beta": [0.25, 0.5, 1.0], "m": [1, 3, 5]}),
    ]
    if m in ("l6", "l3"):
        M.append(
            Method(
                f"[{m}] RECIPE + wmix*cos(prev+turn window embedding) (wmix, alpha)",
                m_hybrid(d, mix=f"{m}:prev1", fixed=R),
                {"wmix": [0.25, 0.5], "alpha": [0.4, 0.5, 0.6]},
            )
        )
    M += [
        Method(f"[{m}] RECIPE, neighbours cut at session boundary", m_hybrid(d, fixed={**R, "cut": True}), {}),
        Method(f"[{m}] RECIPE, query all terms", m_hybrid(d, qmode="all", fixed=R), {}),
        Method(f"[{m}] RECIPE, unicode61 no stemming", m_hybrid(d, tok="u61", fixed=R), {}),
        Method(
            f"[{m}] RECIPE, one ctx column (prev+next) w=0.5", m_hybrid(d, fixed={**R, "layout": "ctx", "kwn": 0.0}), {}
        ),
        Method(f"[{m}] RECIPE, keyword neighbours only", m_hybrid(d, fixed={**R, "dwp": 0.0, "dwn": 0.0}), A),
        Method(f"[{m}] RECIPE, neighbour cosines only", m_hybrid(d, fixed={**R, "kwp": 0.0, "kwn": 0.0}), A),
        Method(f"[{m}] RECIPE, no neighbours", m_hybrid(d, fixed={**R, **E.NO_NBR}), A),
    ]
    for depth in (20, 100, BIG):
        M.append(
            Method(
                f"[{m}] RECIPE, depth={depth if depth < BIG else 'all'}", m_hybrid(d, fixed={**R, "depth": depth}), {}
            )
        )
    return M


FILL = {**REC, "fill": "dense", "alpha": 0.4}


def suite_fill(m: str) -> list:
    d = f"{m}:plain"
    A = [0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6]
    M = []
    for fill in ("dense", True):
        for depth in (20, 50, 100, BIG):
            M.append(
                Method(
                    f"[{m}] fill={fill} depth={depth if depth < BIG else 'all'} (alpha)",
                    m_hybrid(d, fixed={**REC, "fill": fill, "depth": depth}),
                    {"alpha": A},
                )
            )
    M.append(
        Method(
            f"[{m}] fill=dense depth=50 joint (alpha,kwp,kwn,dwp,dwn)",
            m_hybrid(d, fixed={**REC, "fill": "dense"}),
            {
                "alpha": [0.3, 0.4, 0.5],
                "kwp": [0.25, 0.5, 0.75],
                "kwn": [0.25, 0.5, 0.75],
                "dwp": [0.0, 0.25, 0.5],
                "dwn": [0.0, 0.25, 0.5],
            },
        )
    )
    M.append(
        Method(
            f"[{m}] fill=dense depth=50 prev-only (alpha,kwp,dwp)",
            m_hybrid(d, fixed={**REC, "fill": "dense", "kwn": 0.0, "dwn": 0.0}),
            {"alpha": [0.3, 0.4, 0.5], "kwp": [0.25, 0.5, 0.75, 1.0], "dwp": [0.0, 0.25, 0.5]},
        )
    )
    M.append(
        Method(
            f"[{m}] fill=dense depth=50 no neighbours (alpha)",
            m_hybrid(d, fixed={**REC, "fill": "dense", "kwp": 0.0, "kwn": 0.0, "dwp": 0.0, "dwn": 0.0}),
            {"alpha": A},
        )
    )
    M.append(
        Method(
            f"[{m}] fill=dense depth=50, keyword neighbours only (alpha)",
            m_hybrid(d, fixed={**REC, "fill": "dense", "dwp": 0.0, "dwn": 0.0}),
            {"alpha": A},
        )
    )
    M.append(
        Method(
            f"[{m}] fill=dense depth=50, dense neighbours only (alpha)",
            m_hybrid(d, fixed={**REC, "fill": "dense", "kwp": 0.0, "kwn": 0.0}),
            {"alpha": A},
        )
    )
    for g in (0.1, 0.2):
        M.append(Method(f"[{m}] FILL + fused boost gamma={g}", m_hybrid(d, fixed={**FILL, "gamma": g}), {}))
    M.append(Method(f"[{m}] FILL, neighbours cut at session boundary", m_hybrid(d, fixed={**FILL, "cut": True}), {}))
    M.append(Method(f"[{m}] FILL + dense PRF (beta, m)", E.m_prf(d, FILL), {"beta": [0.25, 0.5], "m": [1, 3]}))
    return M


def suite_rsens(m: str) -> list:
    """One-at-a-time sensitivity of the recipe's weights."""
    d = f"{m}:plain"
    M = [Method(f"[{m}] RECIPE (fixed)", m_hybrid(d, fixed=E.RECIPE), {})]
    for k, vals in {
        "kwp": [0.25, 0.75, 1.0],
        "kwn": [0.0, 0.25, 0.75, 1.0],
        "dwp": [0.0, 0.5],
        "dwn": [0.0, 0.5],
    }.items():
        for v in vals:
            M.append(Method(f"[{m}] RECIPE, {k}={v}", m_hybrid(d, fixed={**E.RECIPE, k: v}), {}))
    return M


SUITES = {
    "rsens": suite_rsens,
    "fill": suite_fill,
    "more": suite_more,
    "joint": suite_joint,
    "alpha": suite_alpha,
    "norm": suite_norm,
    "sens": suite_sens,
    "gamma": suite_gamma,
    "mix": suite_mix,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("suite")
    ap.add_argument("--models", default="l6")
    ap.add_argument("--loadmodels", default="l6,l3,e5")
    args = ap.parse_args()
    qs, rates = get_queries(args.loadmodels.split(","))
    results = []
    for m in args.models.split(","):
        for s in args.suite.split(","):
            for meth in SUITES[s](m):
                results.append(E.evaluate(meth, qs))
    E.print_table(results)
    for r in results:
        if "loco_params" in r:
            print(r["name"], "LOCO choices:", r["loco_params"])
    from pathlib import Path

    out = Path(__file__).resolve().parent / "results" / f"explore-{args.suite}-{args.models.replace(',', '-')}.json"
    out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
