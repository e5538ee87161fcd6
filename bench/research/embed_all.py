"""Fill the embedding cache: python embed_all.py MODEL VARIANT [VARIANT ...]  (MODEL: l6, l3, e5)."""

from __future__ import annotations

import sys

from common import embed_cached, embed_rate, load, log
from variants import doc_texts


def main() -> None:
    model, variants = sys.argv[1], sys.argv[2:] or ["plain"]
    convs = load()
    queries = [q.question for c in convs for q in c.queries]
    embed_cached(model, queries, "query")
    for v in variants:
        texts = [t for c in convs for t in doc_texts(c, v)]
        embed_cached(model, texts, "passage")
        log(model, v, f"{embed_rate(model, texts):.1f} texts/s")


if __name__ == "__main__":
    main()
