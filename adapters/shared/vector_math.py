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


def cosines(query: Sequence[float], vectors: Mapping[str, Sequence[float] | np.ndarray]) -> dict[str, float]:
    """1 − cosine distance between `query` and each vector, by id."""
    if not vectors:
        return {}
    ids = list(vectors)
    scores = unit_rows([vectors[i] for i in ids]) @ unit_rows(query)[0]
    return {memory_id: float(score) for memory_id, score in zip(ids, scores, strict=True)}
