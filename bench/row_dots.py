"""The mirror's brute-force scores right after an embedding: BLAS's matmul against numpy's einsum (issue 47).

    PYTHONPATH=. python bench/row_dots.py [--rows 2000 20000 100000] [--repeat 15]

Each measurement embeds one short text with the shipped model first (as a create's duplicate check and a search do
before they score the mirror), then times `matrix @ vector` or adapters.shared.vector_math.row_dots (einsum) over
that many random float32 rows of the model's dimension; also each with no embedding before it. Prints JSON:
medians in ms by row count.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from agent_memory.adapters.model_directory import shipped_spec
from agent_memory.adapters.onnx_embedder import OnnxEmbedder
from agent_memory.adapters.shared.vector_math import row_dots


def median_ms(score: Callable[[], object], before: Callable[[int], object], repeat: int) -> float:
    spent = []
    for n in range(repeat):
        before(n)
        began = time.perf_counter()
        score()
        spent.append(time.perf_counter() - began)
    return round(statistics.median(spent) * 1000, 3)


def timings(matrix: np.ndarray, vector: np.ndarray, embed: Callable[[int], object], repeat: int) -> dict[str, float]:
    """Medians in ms of the two ways, with and without an embedding just before, and of the embedding."""
    return {
        "matmul_after_embedding": median_ms(lambda: matrix @ vector, embed, repeat),
        "row_dots_after_embedding": median_ms(lambda: row_dots(matrix, vector), embed, repeat),
        "matmul_alone": median_ms(lambda: matrix @ vector, lambda _: None, repeat),
        "row_dots_alone": median_ms(lambda: row_dots(matrix, vector), lambda _: None, repeat),
        "embedding": median_ms(lambda: embed(0), lambda _: None, repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[2000, 20000, 100000])
    parser.add_argument("--repeat", type=int, default=15)
    arguments = parser.parse_args()
    spec = shipped_spec()
    embedder = OnnxEmbedder(spec)
    embedder.load().unwrap()
    rng = np.random.default_rng(47)

    def embed(n: int) -> object:
        return embedder.embed_documents([f"Note {n}: the user mentioned item {n * 7919} during session {n % 97}."])

    report: dict[str, object] = {"repeat": arguments.repeat, "load_average": os.getloadavg()[0]}
    for rows in arguments.rows:
        report[str(rows)] = timings(
            rng.random((rows, spec.dimension), dtype=np.float32),
            rng.random(spec.dimension, dtype=np.float32),
            embed,
            arguments.repeat,
        )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
