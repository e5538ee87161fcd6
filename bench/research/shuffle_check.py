"""Downside check: what the neighbour signals cost when neighbours are unrelated.

Memories of each conversation are inserted in a random order (seeded), so "prev"/"next" are random
other memories of the same space (as for a store of unrelated facts); compares the recommended recipe
with the same fusion without neighbour signals.  python shuffle_check.py [seeds]
"""

from __future__ import annotations

import random
import sys

import common
import locomo_eval as E

_orig_load = common.load


def main() -> None:
    seeds = [int(s) for s in sys.argv[1:]] or [1, 2]
    E.KW_SIGNALS = [
        s for s in E.KW_SIGNALS if s[0] == "porter" and s[1] == "stop" and (s[2], s[3]) in ((0.0, 0.0), (0.5, 0.5))
    ]
    rows = []
    for seed in seeds:

        def load_shuffled(path=common.DATA, seed=seed):
            convs = _orig_load(path)
            rng = random.Random(seed)
            for c in convs:
                rng.shuffle(c.memories)
            return convs

        E.load = load_shuffled
        qs, _ = E.build_queries(["l6"])
        for name, fixed in (
            ("recipe (neighbours on)", E.RECIPE),
            ("same fusion, no neighbours", {**E.RECIPE, **E.NO_NBR}),
            ("no neighbours, alpha 0.6", {**E.RECIPE, **E.NO_NBR, "alpha": 0.6}),
        ):
            r = E.evaluate(E.Method(f"shuffled seed={seed}: {name}", E.m_hybrid("l6:plain", fixed=fixed), {}), qs)
            rows.append(r)
    E.print_table(rows)


if __name__ == "__main__":
    main()
