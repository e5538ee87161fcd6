"""Cosine similarity of one query against stored vectors, in numpy (the adapters' shared arithmetic)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def unit_rows(vectors: Sequence[Sequence[float] | np.ndarray] | Sequence[float] | np.ndarray) -> np.ndarray:
    """The vectors (or one vector) as float32 rows scaled to unit length (zero rows stay zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


def row_dots(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each row of `matrix` dotted with `vector`, by numpy's own einsum loop, single-threaded, not BLAS's matmul.

    Right after an embedding (a create's duplicate check, a search's brute force) onnxruntime's threads have just
    left the cores, and a multithreaded BLAS matvec waited milliseconds for its own threads: 8.4 ms for 2,000 rows
    against 0.16 ms this way, and 57 against 26 ms at 100,000 (a 2-core machine under load, bench/row_dots.py).
    """
    scores: np.ndarray = np.einsum("ij,j->i", matrix, vector)
    return scores


def cosines(query: Sequence[float], vectors: Mapping[str, Sequence[float] | np.ndarray]) -> dict[str, float]:
    """1 − cosine distance between `query` and each vector, by id."""
    if not vectors:
        return {}
    ids = list(vectors)
    scores = row_dots(unit_rows([vectors[i] for i in ids]), unit_rows(query)[0])
    return {memory_id: float(score) for memory_id, score in zip(ids, scores, strict=True)}
