"""Render result JSON files of locomo_eval.py / explore.py as markdown tables.

python make_table.py results-final.json [more.json ...]
"""

from __future__ import annotations

import json
import sys

BIG = 10**9


def rows(path: str) -> list[dict]:
    data = json.load(open(path))
    return data["results"] if isinstance(data, dict) else data


def fmt_params(p: dict) -> str:
    p = {k: ("all" if v == BIG else v) for k, v in p.items()}
    return ", ".join(f"{k}={v}" for k, v in p.items())


def main() -> None:
    print(
        "| method | R@5 | R@10 | MRR | c1 multi-hop | c2 temporal | c3 open | c4 single-hop | LOCO R@10 | params (best on all five) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in sys.argv[1:]:
        for r in rows(path):
            pc = {str(k): v for k, v in r["per_category_r10"].items()}
            loco = f"{r['loco']['recall@10']:.3f}" if "loco" in r else "–"
            print(
                f"| {r['name']} | {r['recall@5']:.3f} | {r['recall@10']:.3f} | {r['mrr']:.3f} | "
                f"{pc.get('1', 0):.3f} | {pc.get('2', 0):.3f} | {pc.get('3', 0):.3f} | {pc.get('4', 0):.3f} | "
                f"{loco} | {fmt_params(r['params'])} |"
            )


if __name__ == "__main__":
    main()
